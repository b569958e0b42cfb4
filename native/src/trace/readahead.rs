//! Reading a trace file ahead of the replay on a thread of its own: the thread opens the
//! source (a `.zst` file is decompressed there, `zstd.rs`) and hands over full chunks, so
//! the worker's loop only copies bytes out. Decompressing took about 300 instructions per
//! oracleGeneral record on the worker's loop, more than its own per-op work's gap to a
//! synthetic workload (issue 23). Memory stays bounded: `CHUNKS` chunks of `CHUNK` bytes
//! circulate between the two threads, and an error (or the end) is passed on in order.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Bytes the thread reads into one chunk.
const CHUNK: usize = 1 << 20;

/// Chunks in circulation: one being read out, the others read ahead.
const CHUNKS: usize = 3;

/// What the thread hands over: a chunk (empty: the end), or the error that ended it.
type Handed = io::Result<Vec<u8>>;

pub struct ReadAhead {
    full: Option<Receiver<Handed>>,
    empty: SyncSender<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
    ended: bool,
    thread: Option<JoinHandle<()>>,
}

impl ReadAhead {
    /// Open the source with `open` on the new thread and read it ahead there; an error of
    /// `open` is returned here.
    pub fn spawn<R, F>(open: F) -> Result<ReadAhead, String>
    where
        R: Read,
        F: FnOnce() -> Result<R, String> + Send + 'static,
    {
        let (full_tx, full) = sync_channel::<Handed>(CHUNKS);
        let (empty, empty_rx) = sync_channel::<Vec<u8>>(CHUNKS);
        let (opened_tx, opened) = sync_channel::<Result<(), String>>(1);
        let thread = std::thread::Builder::new()
            .name("trace-read".into())
            .spawn(move || {
                let src = match open() {
                    Ok(src) => {
                        let _ = opened_tx.send(Ok(()));
                        src
                    }
                    Err(e) => {
                        let _ = opened_tx.send(Err(e));
                        return;
                    }
                };
                read_on(src, &full_tx, &empty_rx);
            })
            .map_err(|e| format!("cannot start the trace reader: {}", e))?;
        let result = opened
            .recv()
            .unwrap_or_else(|_| Err("the trace reader stopped".into()));
        let r = ReadAhead {
            full: Some(full),
            empty,
            chunk: Vec::new(),
            pos: 0,
            ended: false,
            thread: Some(thread),
        };
        result?;
        for _ in 1..CHUNKS {
            let _ = r.empty.send(Vec::with_capacity(CHUNK));
        }
        Ok(r)
    }
}

/// The thread's loop: fill each empty chunk it is given and hand it over, until the end,
/// an error, or the reader is dropped.
fn read_on<R: Read>(mut src: R, full: &SyncSender<Handed>, empty: &Receiver<Vec<u8>>) {
    let mut chunk = Vec::with_capacity(CHUNK);
    loop {
        chunk.clear();
        chunk.resize(CHUNK, 0);
        let mut len = 0;
        let failed = loop {
            match src.read(&mut chunk[len..]) {
                Ok(0) => break None,
                Ok(n) => {
                    len += n;
                    if len == CHUNK {
                        break None;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
        };
        chunk.truncate(len);
        let end = len == 0;
        if len > 0 && full.send(Ok(chunk)).is_err() {
            return;
        }
        if let Some(e) = failed {
            let _ = full.send(Err(e));
            return;
        }
        if end {
            let _ = full.send(Ok(Vec::new()));
            return;
        }
        chunk = match empty.recv() {
            Ok(c) => c,
            Err(_) => return,
        };
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.chunk.len() {
            if self.ended || buf.is_empty() {
                return Ok(0);
            }
            let handed = match self.full.as_ref().map(|f| f.recv()) {
                Some(Ok(h)) => h,
                _ => Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the trace reader stopped",
                )),
            };
            let next = match handed {
                Ok(c) => c,
                Err(e) => {
                    self.ended = true;
                    return Err(e);
                }
            };
            self.ended = next.is_empty();
            let used = std::mem::replace(&mut self.chunk, next);
            self.pos = 0;
            if used.capacity() > 0 {
                let _ = self.empty.try_send(used); // back to the thread to fill again
            }
        }
        let n = buf.len().min(self.chunk.len() - self.pos);
        buf[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // Dropping the receiving end stops a thread waiting to hand over; one waiting for
        // an empty chunk stops when `empty` is dropped after this, so join only if done.
        self.full = None;
        if let Some(t) = self.thread.take() {
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source of `total` bytes (i % 251) in reads of at most `step`, then an error if
    /// `fail` says so.
    struct Source {
        at: usize,
        total: usize,
        step: usize,
        fail: bool,
    }

    impl Read for Source {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.at == self.total {
                if self.fail {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "cut"));
                }
                return Ok(0);
            }
            let n = buf.len().min(self.step).min(self.total - self.at);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = ((self.at + i) % 251) as u8;
            }
            self.at += n;
            Ok(n)
        }
    }

    fn read_all(r: &mut ReadAhead, step: usize) -> (Vec<u8>, Option<io::Error>) {
        let mut out = Vec::new();
        let mut buf = vec![0u8; step];
        loop {
            match r.read(&mut buf) {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn every_byte_comes_in_order_across_chunks_then_the_end() {
        let total = 3 * CHUNK + 12_345;
        let mut r = ReadAhead::spawn(move || {
            Ok(Source {
                at: 0,
                total,
                step: 70_001,
                fail: false,
            })
        })
        .unwrap();
        let (out, err) = read_all(&mut r, 24 * 1000);
        assert!(err.is_none());
        assert_eq!(out.len(), total);
        assert!(out.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0);
    }

    #[test]
    fn an_error_comes_after_the_bytes_read_before_it_and_opening_errors_at_once() {
        let total = CHUNK + 100;
        let mut r = ReadAhead::spawn(move || {
            Ok(Source {
                at: 0,
                total,
                step: 1 << 16,
                fail: true,
            })
        })
        .unwrap();
        let (out, err) = read_all(&mut r, 4096);
        assert_eq!(out.len(), total);
        assert_eq!(err.unwrap().kind(), io::ErrorKind::InvalidData);
        let bad = ReadAhead::spawn(|| -> Result<Source, String> { Err("no such file".into()) });
        assert_eq!(bad.err().as_deref(), Some("no such file"));
    }

    #[test]
    fn a_reader_dropped_early_stops_its_thread() {
        let mut r = ReadAhead::spawn(|| {
            Ok(Source {
                at: 0,
                total: usize::MAX,
                step: 1 << 20,
                fail: false,
            })
        })
        .unwrap();
        let mut buf = [0u8; 100];
        assert_eq!(r.read(&mut buf).unwrap(), 100);
        let thread = r.thread.take().unwrap();
        drop(r);
        thread.join().unwrap(); // returns: the thread saw the reader go
    }
}

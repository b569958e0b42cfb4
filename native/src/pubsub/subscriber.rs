//! One subscriber of this worker: its own connection, subscribed with a blocking exchange
//! before the step is armed, then read on the loop; every measured message's delivery
//! latency recorded from its stamp.

use crate::pacing::now_ns;
use crate::protocols::resp::command;
use crate::protocols::wire::{first_line, parse_int, show};
use crate::record::Recorder;
use mio::net::TcpStream;
use mio::Registry;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

/// A publish's stamp before its body: its CLOCK_MONOTONIC ns, then `sequence << 1 |
/// measured`, both little-endian i64.
pub const STAMP: usize = 16;
const READ_CHUNK: usize = 64 * 1024;

/// One subscriber's connection.
pub struct Subscriber {
    channel: usize,
    sock: Option<TcpStream>,
    inb: Vec<u8>,
}

/// One element of a RESP reply: its type byte and the range of its payload.
struct Elem {
    kind: u8,
    start: usize,
    end: usize,
}

/// One element at `pos`: None while incomplete.
fn element(buf: &[u8], pos: usize) -> Result<Option<(Elem, usize)>, String> {
    let (line, used) = match first_line(&buf[pos..]) {
        Some(l) => l,
        None => return Ok(None),
    };
    let kind = *line.first().ok_or("an empty RESP line")?;
    let start = pos + used;
    if kind != b'$' {
        return Ok(Some((
            Elem {
                kind,
                start: pos + 1,
                end: pos + line.len(),
            },
            start,
        )));
    }
    let n = parse_int(&line[1..]).ok_or_else(|| format!("bad bulk length {:?}", show(line)))?;
    if n < 0 {
        return Ok(Some((
            Elem {
                kind,
                start,
                end: start,
            },
            start,
        )));
    }
    let end = start + n as usize;
    if buf.len() < end + 2 {
        return Ok(None);
    }
    Ok(Some((Elem { kind, start, end }, end + 2)))
}

/// One complete reply from `pos`: a flat array's elements, or one line as a single element.
fn reply(buf: &[u8], pos: usize) -> Result<Option<(Vec<Elem>, usize)>, String> {
    let (line, used) = match first_line(&buf[pos..]) {
        Some(l) => l,
        None => return Ok(None),
    };
    if line.first() != Some(&b'*') {
        return Ok(element(buf, pos)?.map(|(e, next)| (vec![e], next)));
    }
    let n = parse_int(&line[1..]).ok_or_else(|| format!("bad array length {:?}", show(line)))?;
    let mut next = pos + used;
    let mut elems = Vec::with_capacity(n.max(0) as usize);
    for _ in 0..n.max(0) {
        match element(buf, next)? {
            Some((e, after)) => {
                elems.push(e);
                next = after;
            }
            None => return Ok(None),
        }
    }
    Ok(Some((elems, next)))
}

/// A blocking connect, the connection's opening commands (`hello`: the bytes and how many
/// replies) and SUBSCRIBE, confirmed; the socket made non-blocking.
pub fn subscribe(
    addr: SocketAddr,
    name: &[u8],
    channel: usize,
    hello: (&[u8], usize),
    wait: Duration,
) -> Result<std::net::TcpStream, String> {
    let fail = |e: std::io::Error| format!("subscriber of wb:ch:{} at {}: {}", channel, addr, e);
    let mut sock = std::net::TcpStream::connect_timeout(&addr, wait).map_err(fail)?;
    sock.set_read_timeout(Some(wait)).map_err(fail)?;
    let _ = sock.set_nodelay(true);
    let mut out = hello.0.to_vec();
    command(&mut out, &[b"SUBSCRIBE", name]);
    sock.write_all(&out).map_err(fail)?;
    let mut inb: Vec<u8> = Vec::new();
    let mut pos = 0;
    let mut answered = 0;
    let mut chunk = [0u8; 4096];
    while answered <= hello.1 {
        match reply(&inb, pos)? {
            Some((elems, next)) => {
                if let Some(e) = elems.first().filter(|e| e.kind == b'-') {
                    return Err(format!(
                        "subscriber of wb:ch:{}: {}",
                        channel,
                        show(&inb[e.start..e.end])
                    ));
                }
                pos = next;
                answered += 1;
            }
            None => {
                let n = sock.read(&mut chunk).map_err(fail)?;
                if n == 0 {
                    return Err(format!(
                        "subscriber of wb:ch:{}: {} closed the connection",
                        channel, addr
                    ));
                }
                inb.extend_from_slice(&chunk[..n]);
            }
        }
    }
    sock.set_nonblocking(true).map_err(fail)?;
    Ok(sock)
}

impl Subscriber {
    pub fn new(channel: usize, sock: TcpStream) -> Subscriber {
        Subscriber {
            channel,
            sock: Some(sock),
            inb: Vec::with_capacity(READ_CHUNK),
        }
    }

    /// The socket is readable, or closing: read it and record its messages in `rec`.
    pub fn event(
        &mut self,
        closing: bool,
        registry: &Registry,
        rec: &mut Recorder,
        deliver: usize,
    ) {
        let mut closed = self.read(closing);
        if let Err(e) = self.deliveries(rec, deliver) {
            closed = Some(e);
        }
        if let Some(why) = closed {
            self.close(registry);
            eprintln!(
                "workbench-native: subscriber of wb:ch:{} lost: {}",
                self.channel, why
            );
        }
    }

    /// Read what the socket holds; why it closed, if it did.
    fn read(&mut self, closing: bool) -> Option<String> {
        let sock = self.sock.as_mut()?;
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            match sock.read(&mut chunk) {
                Ok(0) => return Some("the server closed the connection".into()),
                Ok(n) => {
                    self.inb.extend_from_slice(&chunk[..n]);
                    if n < chunk.len() && !closing {
                        return None;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Some(e.to_string()),
            }
        }
    }

    /// Record every complete message in the buffer (a message published during warm-up
    /// is neither counted nor recorded).
    fn deliveries(&mut self, rec: &mut Recorder, deliver: usize) -> Result<(), String> {
        let now = now_ns();
        let mut pos = 0;
        while let Some((elems, next)) = reply(&self.inb, pos)? {
            pos = next;
            // ["message", channel, data]; anything else (a confirmation) is not a delivery.
            if elems.len() != 3 || &self.inb[elems[0].start..elems[0].end] != b"message" {
                continue;
            }
            let data = &self.inb[elems[2].start..elems[2].end];
            if data.len() < STAMP {
                continue;
            }
            let mut word = [0u8; 8];
            word.copy_from_slice(&data[..8]);
            let sent = i64::from_le_bytes(word);
            word.copy_from_slice(&data[8..STAMP]);
            if i64::from_le_bytes(word) & 1 == 0 {
                continue; // published during warm-up: neither it nor its publish counts
            }
            rec.latency(deliver, (sent.max(0) as u64).min(now), now);
            rec.delivered += 1;
            rec.bytes_in += data.len() as u64;
        }
        self.inb.drain(..pos);
        Ok(())
    }

    pub fn close(&mut self, registry: &Registry) {
        if let Some(mut sock) = self.sock.take() {
            let _ = registry.deregister(&mut sock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_messages_confirmations_and_partial_replies() {
        let buf = b"*3\r\n$9\r\nsubscribe\r\n$7\r\nwb:ch:0\r\n:1\r\n";
        let (e, used) = reply(&buf[..], 0).unwrap().unwrap();
        assert_eq!(used, buf.len());
        assert_eq!(&buf[e[0].start..e[0].end], b"subscribe");
        assert_eq!(e[2].kind, b':');
        let msg = b"*3\r\n$7\r\nmessage\r\n$7\r\nwb:ch:1\r\n$3\r\nabc\r\n";
        let (e, used) = reply(&msg[..], 0).unwrap().unwrap();
        assert_eq!((used, &msg[e[2].start..e[2].end]), (msg.len(), &b"abc"[..]));
        assert!(reply(&msg[..msg.len() - 3], 0).unwrap().is_none());
        let (e, _) = reply(b"+OK\r\n", 0).unwrap().unwrap();
        assert_eq!((e[0].kind, e[0].start, e[0].end), (b'+', 1, 3));
    }
}

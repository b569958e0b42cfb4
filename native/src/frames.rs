//! The worker's side of the frames: orders in on stdin, reports out on a private stdout.
//! Each frame is a 4-byte big-endian length, then a UTF-8 JSON object (`engine/wire.py`).

use serde_json::Value;
use std::io::Write;

pub const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Frames written whole to one file descriptor.
pub struct Out {
    file: std::fs::File,
}

impl Out {
    /// Keeps the real stdout for frames and points fd 1 at stderr, so that nothing
    /// printed by accident lands among the frames.
    pub fn private_stdout() -> Out {
        use std::os::unix::io::FromRawFd;
        // SAFETY: plain descriptor calls on this process's own stdout and stderr.
        unsafe {
            let fd = libc::dup(1);
            libc::dup2(2, 1);
            Out {
                file: std::fs::File::from_raw_fd(fd),
            }
        }
    }

    /// Frames into a file of the caller's (a test reads them back).
    #[cfg(test)]
    pub fn to_file(file: std::fs::File) -> Out {
        Out { file }
    }

    pub fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("a frame is JSON");
        let mut frame = Vec::with_capacity(body.len() + 4);
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(&body);
        if self.file.write_all(&frame).is_err() {
            // The coordinator is gone: nobody is left to report to.
            std::process::exit(3);
        }
    }
}

/// Collects bytes from stdin and cuts them into frames.
#[derive(Default)]
pub struct In {
    buf: Vec<u8>,
}

impl In {
    pub fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    pub fn next(&mut self) -> Result<Option<Value>, String> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let size =
            u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
        if size > MAX_FRAME {
            return Err(format!(
                "frame of {} bytes is larger than {}",
                size, MAX_FRAME
            ));
        }
        if self.buf.len() < 4 + size {
            return Ok(None);
        }
        let value = serde_json::from_slice(&self.buf[4..4 + size])
            .map_err(|e| format!("unreadable frame: {}", e));
        self.buf.drain(..4 + size);
        value.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_from_a_byte_stream() {
        let mut input = In::default();
        let body = br#"{"type":"go","start":1.5}"#;
        let mut bytes = (body.len() as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(body);
        input.feed(&bytes[..7]);
        assert!(input.next().unwrap().is_none());
        input.feed(&bytes[7..]);
        assert_eq!(input.next().unwrap().unwrap()["start"], 1.5);
    }
}

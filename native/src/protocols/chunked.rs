//! HTTP/1.1 chunked transfer coding: a response body whose length comes in chunks.

use super::wire::line_end;

pub fn find(buf: &[u8], needle: &[u8]) -> Option<usize> {
    buf.windows(needle.len()).position(|w| w == needle)
}

pub type Dechunked = Option<(Vec<u8>, usize)>;

/// The body of a chunked response starting at `start`, and where the response ends; None
/// while it is incomplete.
pub fn dechunk(buf: &[u8], start: usize) -> Result<Dechunked, String> {
    let mut body = Vec::new();
    let mut pos = start;
    loop {
        let eol = match line_end(buf, pos) {
            Some(e) => e,
            None => return Ok(None),
        };
        let text = String::from_utf8_lossy(&buf[pos..eol]);
        let size_text = text.split(';').next().unwrap_or("").trim().to_string();
        let size = usize::from_str_radix(&size_text, 16)
            .map_err(|_| format!("a bad chunk size: {:?}", size_text))?;
        if size == 0 {
            let p = eol + 2;
            if buf.len() < p + 2 {
                return Ok(None);
            }
            if &buf[p..p + 2] == b"\r\n" {
                return Ok(Some((body, p + 2)));
            }
            return Ok(find(&buf[p..], b"\r\n\r\n").map(|e| (body, p + e + 4)));
        }
        let data = eol + 2;
        if buf.len() < data + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[data..data + size]);
        pos = data + size + 2;
    }
}

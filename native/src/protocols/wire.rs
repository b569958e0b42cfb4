//! What the protocol modules share: the request kinds and what a reply means.

pub use crate::order::{Req, REQS};

/// What a conditional write did (`workbench.sdk.ops.OUTCOMES`, in its order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Stored,
    NotStored,
    Exists,
    NotFound,
    NotNumeric,
}

/// The outcomes' names as the frames carry them (`ops.OUTCOMES`), by `Outcome as usize`.
pub const OUTCOME_NAMES: [&str; 5] = ["stored", "not_stored", "exists", "not_found", "not_numeric"];

/// What a reply says.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// A hit: the value is `buf[start..end]`, or `decoded` when it had to be decoded.
    Hit {
        start: usize,
        end: usize,
        decoded: Option<Vec<u8>>,
    },
    Miss,
    Done,
    Deleted(bool),
    /// A conditional write's outcome.
    Outcome(Outcome),
    /// An error answer (kind, message); the connection stays usable.
    Failed(String, String),
}

impl Reply {
    pub fn value_len(&self) -> usize {
        match self {
            Reply::Hit {
                decoded: Some(d), ..
            } => d.len(),
            Reply::Hit { start, end, .. } => end - start,
            _ => 0,
        }
    }
}

/// One complete reply: what it says, the bytes it took, and whether the server closes
/// the connection after it.
#[derive(Debug)]
pub struct Parsed {
    pub reply: Reply,
    pub used: usize,
    pub close: bool,
}

/// A complete reply, not yet complete (`Ok(None)`), or a stream that cannot be read on.
pub type ParseResult = Result<Option<Parsed>, String>;

pub fn parsed(reply: Reply, used: usize) -> ParseResult {
    Ok(Some(Parsed {
        reply,
        used,
        close: false,
    }))
}

/// A value of `n` bytes from `start`, followed by `tail` (CRLF, or memcached's
/// CRLF END CRLF): a hit, not yet complete, or a stream that cannot be read on (`what`
/// names the value in the error). Inlined: each protocol's constant tail is then compared
/// in place, not by a call to memcmp on every hit.
#[inline]
pub fn hit_body(buf: &[u8], start: usize, n: usize, tail: &[u8], what: &str) -> ParseResult {
    let end = start + n;
    if buf.len() < end + tail.len() {
        return Ok(None);
    }
    if &buf[end..end + tail.len()] != tail {
        return Err(format!(
            "{} not ended by {:?}; got {:?}",
            what,
            show(tail),
            show(&buf[end..end + tail.len()])
        ));
    }
    parsed(
        Reply::Hit {
            start,
            end,
            decoded: None,
        },
        end + tail.len(),
    )
}

/// The line ending at the first CRLF from `from`: its end (index of CR), if complete.
#[inline]
pub fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 1 < buf.len() {
        match buf[i + 1..].iter().position(|&b| b == b'\n') {
            Some(p) => {
                let nl = i + 1 + p;
                if buf[nl - 1] == b'\r' {
                    return Some(nl - 1);
                }
                i = nl;
            }
            None => return None,
        }
    }
    None
}

/// The first CRLF-terminated line of `buf` (without its CRLF) and the bytes it takes with
/// it, or None until the line is complete.
#[inline]
pub fn first_line(buf: &[u8]) -> Option<(&[u8], usize)> {
    line_end(buf, 0).map(|eol| (&buf[..eol], eol + 2))
}

/// A conditional write's outcome, `n` bytes used.
pub fn outcome(o: Outcome, used: usize) -> ParseResult {
    parsed(Reply::Outcome(o), used)
}

pub fn show(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(80)];
    String::from_utf8_lossy(cut).into_owned()
}

/// Inlined: every RESP reply's length goes through it (out of line it cost about 7
/// instructions per pipelined GET, callgrind).
#[inline]
pub fn parse_int(bytes: &[u8]) -> Option<i64> {
    let (neg, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut n: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (b - b'0') as i64;
    }
    Some(if neg { -n } else { n })
}

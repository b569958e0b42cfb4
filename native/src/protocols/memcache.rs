//! memcached's text protocol: get, set with exptime, delete, and the conditional writes in
//! its own commands (add, replace, cas, append, prepend, incr, decr, touch) with gets,
//! whose reply lines are the write's outcome (docs/ops.md; the Python engine's
//! `workbench_memcached.conditional` reads them the same way).

use super::wire::{
    first_line, hit_body, outcome, parse_int, parsed, show, Outcome, ParseResult, Reply, Req,
};
use crate::text::push_num;

const THIRTY_DAYS: i64 = 30 * 24 * 3600;

pub struct Memcache;

/// memcached's exptime for a TTL: 0 none, -1 already expired, past 30 days a unix time.
pub fn exptime(ttl: Option<f64>) -> i64 {
    let t = match ttl {
        None => return 0,
        Some(t) => t,
    };
    if t == 0.0 {
        return 0;
    }
    if t < 0.0 {
        return -1; // already expired
    }
    let s = t.ceil() as i64;
    if s > THIRTY_DAYS {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        now + s
    } else {
        s
    }
}

/// memcached's exptime of a TTL, as text.
fn push_exptime(out: &mut Vec<u8>, ttl: Option<f64>) {
    let e = exptime(ttl);
    if e < 0 {
        out.push(b'-');
    }
    push_num(out, e.unsigned_abs());
}

/// The value size of a VALUE line, `from_end` fields from its end (1: get's, 2: gets',
/// whose last field is the cas unique).
fn value_size(line: &[u8], from_end: usize) -> Result<usize, String> {
    line.rsplit(|&b| b == b' ')
        .nth(from_end - 1)
        .and_then(parse_int)
        .filter(|&n| n >= 0)
        .map(|n| n as usize)
        .ok_or_else(|| format!("bad VALUE line {:?}", show(line)))
}

/// incr and decr refuse a value that is no decimal number with this line.
pub const NON_NUMERIC: &[u8] = b"CLIENT_ERROR cannot increment or decrement non-numeric value";

/// The outcome a one-line reply to a conditional write says (None: not one).
fn outcome_of(req: Req, line: &[u8]) -> Option<Outcome> {
    Some(match (req, line) {
        (_, b"NOT_FOUND") => Outcome::NotFound,
        (Req::Incr | Req::Decr, l) if !l.is_empty() && l.iter().all(u8::is_ascii_digit) => {
            Outcome::Stored
        }
        (Req::Incr | Req::Decr, NON_NUMERIC) => Outcome::NotNumeric,
        (Req::Touch, b"TOUCHED") => Outcome::Stored,
        (Req::Incr | Req::Decr | Req::Touch, _) => return None,
        (_, b"STORED") => Outcome::Stored,
        (_, b"NOT_STORED") => Outcome::NotStored,
        (_, b"EXISTS") => Outcome::Exists,
        _ => return None,
    })
}

/// The cas unique of a gets hit: the last field of its VALUE line (`head`, the reply up
/// to its value).
pub fn value_line_token(head: &[u8]) -> Option<Vec<u8>> {
    let (line, _) = first_line(head)?;
    let token = line.rsplit(|&b| b == b' ').next()?;
    parse_int(token).map(|_| token.to_vec())
}

impl Memcache {
    pub fn get(&self, out: &mut Vec<u8>, key: &[u8]) {
        out.extend_from_slice(b"get ");
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn set(&self, out: &mut Vec<u8>, key: &[u8], value: &[u8], ttl: Option<f64>) {
        self.store(out, b"set ", key, value, ttl, None);
    }

    /// A storage command (`command` with its space: set, add, replace, append, prepend,
    /// cas): `<command> <key> 0 <exptime> <bytes>[ <cas unique>]` and the value. A cas
    /// without a token (no gets brought one) sends 0, which no item has while cas is on.
    #[inline]
    pub fn store(
        &self,
        out: &mut Vec<u8>,
        command: &[u8],
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        cas: Option<&[u8]>,
    ) {
        out.extend_from_slice(command);
        out.extend_from_slice(key);
        out.extend_from_slice(b" 0 ");
        push_exptime(out, ttl);
        out.push(b' ');
        push_num(out, value.len() as u64);
        if let Some(token) = cas {
            out.push(b' ');
            out.extend_from_slice(if token.is_empty() { b"0" } else { token });
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }

    /// A conditional write or a gets (`req`), `token` the cas token of a cas.
    pub fn conditional(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        token: &[u8],
    ) {
        match req {
            Req::Add => self.store(out, b"add ", key, value, ttl, None),
            Req::Replace => self.store(out, b"replace ", key, value, ttl, None),
            Req::Append => self.store(out, b"append ", key, value, None, None),
            Req::Prepend => self.store(out, b"prepend ", key, value, None, None),
            Req::Cas => self.store(out, b"cas ", key, value, ttl, Some(token)),
            Req::Incr | Req::Decr => {
                let by: &[u8] = if req == Req::Incr { b"incr " } else { b"decr " };
                out.extend_from_slice(by);
                out.extend_from_slice(key);
                out.extend_from_slice(b" 1\r\n"); // by 1: traces do not record the amount
            }
            Req::Touch => {
                out.extend_from_slice(b"touch ");
                out.extend_from_slice(key);
                out.push(b' ');
                push_exptime(out, ttl);
                out.extend_from_slice(b"\r\n");
            }
            _ => {
                out.extend_from_slice(b"gets ");
                out.extend_from_slice(key);
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    pub fn delete(&self, out: &mut Vec<u8>, key: &[u8]) {
        out.extend_from_slice(b"delete ");
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    }

    pub fn parse(&self, buf: &[u8], req: Req) -> ParseResult {
        let (line, used) = match first_line(buf) {
            Some(l) => l,
            None => return Ok(None),
        };
        if req.conditional() {
            if let Some(o) = outcome_of(req, line) {
                return outcome(o, used);
            }
        }
        if let Some(failed) = server_error(line, used) {
            return failed;
        }
        match req {
            Req::Get | Req::Gets => {
                if line == b"END" {
                    return parsed(Reply::Miss, used);
                }
                if !line.starts_with(b"VALUE ") {
                    return Err(format!("unexpected reply to get: {:?}", show(line)));
                }
                let n = value_size(line, if req == Req::Gets { 2 } else { 1 })?;
                hit_body(buf, used, n, b"\r\nEND\r\n", "a value")
            }
            Req::Set if line == b"STORED" => parsed(Reply::Done, used),
            Req::Delete if line == b"DELETED" => parsed(Reply::Deleted(true), used),
            Req::Delete if line == b"NOT_FOUND" => parsed(Reply::Deleted(false), used),
            _ => Err(format!("unexpected reply to {:?}: {:?}", req, show(line))),
        }
    }
}

/// A memcached error line (either protocol's): the op failed on the server's side.
pub fn server_error(line: &[u8], used: usize) -> Option<ParseResult> {
    let failed =
        line.starts_with(b"SERVER_ERROR") || line.starts_with(b"CLIENT_ERROR") || line == b"ERROR";
    failed.then(|| parsed(Reply::Failed("server".into(), show(line)), used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_values_and_misses() {
        let m = Memcache;
        let p = m
            .parse(b"VALUE k 0 3\r\nabc\r\nEND\r\n", Req::Get)
            .unwrap()
            .unwrap();
        assert_eq!((p.used, p.reply.value_len()), (23, 3));
        assert!(m
            .parse(b"VALUE k 0 3\r\nabc\r\nEN", Req::Get)
            .unwrap()
            .is_none());
        assert_eq!(
            m.parse(b"END\r\n", Req::Get).unwrap().unwrap().reply,
            Reply::Miss
        );
        assert_eq!(
            m.parse(b"NOT_FOUND\r\n", Req::Delete)
                .unwrap()
                .unwrap()
                .reply,
            Reply::Deleted(false)
        );
    }

    #[test]
    fn encodes_the_conditional_writes_in_memcached_commands() {
        let m = Memcache;
        let mut out = Vec::new();
        m.conditional(&mut out, Req::Add, b"k", b"ab", Some(5.0), b"");
        m.conditional(&mut out, Req::Cas, b"k", b"ab", None, b"17");
        m.conditional(&mut out, Req::Cas, b"k", b"ab", None, b"");
        m.conditional(&mut out, Req::Append, b"k", b"ab", Some(5.0), b"");
        m.conditional(&mut out, Req::Decr, b"k", b"", None, b"");
        m.conditional(&mut out, Req::Touch, b"k", b"", Some(9.0), b"");
        m.conditional(&mut out, Req::Gets, b"k", b"", None, b"");
        let want: &[u8] = b"add k 0 5 2\r\nab\r\ncas k 0 0 2 17\r\nab\r\ncas k 0 0 2 0\r\nab\r\n\
            append k 0 0 2\r\nab\r\ndecr k 1\r\ntouch k 9\r\ngets k\r\n";
        assert_eq!(show(&out), show(want));
    }

    #[test]
    fn reads_outcomes_and_gets_tokens() {
        let m = Memcache;
        let o = |line: &[u8], req| m.parse(line, req).unwrap().unwrap().reply;
        assert_eq!(
            o(b"NOT_STORED\r\n", Req::Add),
            Reply::Outcome(Outcome::NotStored)
        );
        assert_eq!(o(b"EXISTS\r\n", Req::Cas), Reply::Outcome(Outcome::Exists));
        assert_eq!(
            o(b"NOT_FOUND\r\n", Req::Incr),
            Reply::Outcome(Outcome::NotFound)
        );
        assert_eq!(o(b"10\r\n", Req::Decr), Reply::Outcome(Outcome::Stored));
        let refused = b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
        assert_eq!(o(refused, Req::Incr), Reply::Outcome(Outcome::NotNumeric));
        assert_eq!(
            o(b"TOUCHED\r\n", Req::Touch),
            Reply::Outcome(Outcome::Stored)
        );
        assert!(m.parse(b"STORED\r\n", Req::Touch).is_err());
        let reply = b"VALUE k 0 3 42\r\nabc\r\nEND\r\n";
        let p = m.parse(reply, Req::Gets).unwrap().unwrap();
        assert_eq!((p.used, p.reply.value_len()), (26, 3));
        assert_eq!(value_line_token(reply), Some(b"42".to_vec()));
    }
}

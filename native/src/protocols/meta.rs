//! memcached's meta protocol (`protocol = "meta"` of the native memcached strategy):
//! `mg <key> v` (the value; `EN` a miss), `ms <key> <bytes> T<exptime>` (`HD` stored),
//! `md <key>` (`HD` deleted, `NF` not there). The text protocol's error lines
//! (ERROR, CLIENT_ERROR, SERVER_ERROR) answer meta commands too. Keys are sent as they
//! are (the workbench's keys are printable, without spaces).
//!
//! The conditional writes: `ms` in its modes (`ME` add, `MR` replace, `MA` append, `MP`
//! prepend; `C<cas>` a cas) answers HD, NS, EX or NF; `ma` (`MD` decr) HD or NF;
//! touch is `mg <key> T<exptime>` (HD, EN); gets is `mg <key> v c` (`VA <size> c<cas>`).

use super::memcache::{exptime, server_error, NON_NUMERIC};
use super::wire::{
    first_line, hit_body, outcome, parse_int, parsed, show, Outcome, ParseResult, Reply, Req,
};
use crate::text::push_num;

pub struct Meta;

/// ` T<exptime>` of a TTL (T0: none).
fn push_ttl(out: &mut Vec<u8>, ttl: Option<f64>) {
    let e = exptime(ttl);
    out.extend_from_slice(b" T");
    if e < 0 {
        out.push(b'-');
    }
    push_num(out, e.unsigned_abs());
}

/// The outcome a meta reply to a conditional write says (None: not one).
fn outcome_of(req: Req, code: &[u8]) -> Option<Outcome> {
    Some(match (req, code) {
        (_, b"HD") => Outcome::Stored,
        (Req::Touch, b"EN") | (_, b"NF") => Outcome::NotFound,
        (Req::Touch | Req::Incr | Req::Decr, _) => return None,
        (_, b"NS") => Outcome::NotStored,
        (_, b"EX") => Outcome::Exists,
        _ => return None,
    })
}

/// The cas unique of a gets hit: the `c` flag of its VA line (`head`, the reply up to
/// its value).
pub fn va_line_token(head: &[u8]) -> Option<Vec<u8>> {
    let (line, _) = first_line(head)?;
    let flag = line
        .split(|&b| b == b' ')
        .skip(2)
        .find(|f| f.first() == Some(&b'c'))?;
    parse_int(&flag[1..]).map(|_| flag[1..].to_vec())
}

impl Meta {
    pub fn get(&self, out: &mut Vec<u8>, key: &[u8]) {
        out.extend_from_slice(b"mg ");
        out.extend_from_slice(key);
        out.extend_from_slice(b" v\r\n");
    }

    #[inline]
    pub fn set(&self, out: &mut Vec<u8>, key: &[u8], value: &[u8], ttl: Option<f64>) {
        self.store(out, key, value, ttl, b"");
    }

    /// `ms <key> <bytes>[ T<exptime>]` with `flags` (each with its leading space), then
    /// the value.
    #[inline]
    fn store(&self, out: &mut Vec<u8>, key: &[u8], value: &[u8], ttl: Option<f64>, flags: &[u8]) {
        out.extend_from_slice(b"ms ");
        out.extend_from_slice(key);
        out.push(b' ');
        push_num(out, value.len() as u64);
        if exptime(ttl) != 0 {
            push_ttl(out, ttl);
        }
        out.extend_from_slice(flags);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }

    /// A conditional write or a gets (`req`), `token` the cas token of a cas (none: 0,
    /// which no item has while cas is on).
    pub fn conditional(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        token: &[u8],
    ) {
        let mut cas = b" C".to_vec();
        let flags: &[u8] = match req {
            Req::Add => b" ME",
            Req::Replace => b" MR",
            Req::Append => b" MA",
            Req::Prepend => b" MP",
            Req::Cas => {
                cas.extend_from_slice(if token.is_empty() { b"0" } else { token });
                &cas
            }
            _ => return self.command(out, req, key, ttl),
        };
        let ttl = if matches!(req, Req::Append | Req::Prepend) {
            None // the TTL kept, as the text protocol's append and prepend keep it
        } else {
            ttl
        };
        self.store(out, key, value, ttl, flags)
    }

    /// incr, decr (`ma`), touch (`mg` with T) and gets (`mg` with v and c).
    fn command(&self, out: &mut Vec<u8>, req: Req, key: &[u8], ttl: Option<f64>) {
        out.extend_from_slice(if matches!(req, Req::Incr | Req::Decr) {
            b"ma "
        } else {
            b"mg "
        });
        out.extend_from_slice(key);
        match req {
            Req::Decr => out.extend_from_slice(b" MD"),
            Req::Touch => push_ttl(out, ttl),
            Req::Gets => out.extend_from_slice(b" v c"),
            _ => {} // incr by 1, ma's default
        }
        out.extend_from_slice(b"\r\n");
    }

    pub fn delete(&self, out: &mut Vec<u8>, key: &[u8]) {
        out.extend_from_slice(b"md ");
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    }

    pub fn parse(&self, buf: &[u8], req: Req) -> ParseResult {
        let (line, used) = match first_line(buf) {
            Some(l) => l,
            None => return Ok(None),
        };
        let code = &line[..line.len().min(2)];
        let flagged = line.len() == 2 || line.get(2) == Some(&b' ');
        if req.conditional() {
            if line == NON_NUMERIC && matches!(req, Req::Incr | Req::Decr) {
                return outcome(Outcome::NotNumeric, used);
            }
            if let Some(o) = outcome_of(req, code).filter(|_| flagged) {
                return outcome(o, used);
            }
        }
        if let Some(failed) = server_error(line, used) {
            return failed;
        }
        match (req, code) {
            (Req::Get | Req::Gets, b"EN") if flagged => parsed(Reply::Miss, used),
            (Req::Get | Req::Gets, b"VA") if flagged => {
                // VA <size> <flags>*
                let size = line[3.min(line.len())..]
                    .split(|&b| b == b' ')
                    .next()
                    .and_then(parse_int)
                    .filter(|&n| n >= 0)
                    .ok_or_else(|| format!("bad VA line {:?}", show(line)))?;
                hit_body(buf, used, size as usize, b"\r\n", "a value")
            }
            (Req::Set, b"HD") if flagged => parsed(Reply::Done, used),
            (Req::Set, b"NS") if flagged => parsed(
                Reply::Failed("server".into(), "NS (not stored)".into()),
                used,
            ),
            (Req::Delete, b"HD") if flagged => parsed(Reply::Deleted(true), used),
            (Req::Delete, b"NF") if flagged => parsed(Reply::Deleted(false), used),
            _ => Err(format!("unexpected reply to {:?}: {:?}", req, show(line))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_mg_ms_md_with_flags() {
        let mut out = Vec::new();
        Meta.get(&mut out, b"k1");
        Meta.set(&mut out, b"k1", b"abc", Some(5.0));
        Meta.set(&mut out, b"k2", b"", None);
        Meta.delete(&mut out, b"k1");
        assert_eq!(
            out,
            b"mg k1 v\r\nms k1 3 T5\r\nabc\r\nms k2 0\r\n\r\nmd k1\r\n".to_vec()
        );
    }

    #[test]
    fn parses_hits_misses_and_partial_replies() {
        let p = Meta.parse(b"VA 3 \r\nabc\r\n", Req::Get).unwrap().unwrap();
        assert_eq!((p.used, p.reply.value_len()), (12, 3));
        let p = Meta.parse(b"VA 0\r\n\r\n", Req::Get).unwrap().unwrap();
        assert_eq!((p.used, p.reply.value_len()), (8, 0));
        assert!(Meta.parse(b"VA 3\r\nab", Req::Get).unwrap().is_none());
        assert_eq!(
            Meta.parse(b"EN\r\n", Req::Get).unwrap().unwrap().reply,
            Reply::Miss
        );
        assert_eq!(
            Meta.parse(b"NF\r\n", Req::Delete).unwrap().unwrap().reply,
            Reply::Deleted(false)
        );
        assert_eq!(
            Meta.parse(b"HD\r\n", Req::Set).unwrap().unwrap().reply,
            Reply::Done
        );
        assert!(Meta.parse(b"HD\r\n", Req::Get).is_err());
    }

    #[test]
    fn encodes_and_reads_the_conditional_writes() {
        let mut out = Vec::new();
        Meta.conditional(&mut out, Req::Add, b"k", b"ab", Some(5.0), b"");
        Meta.conditional(&mut out, Req::Cas, b"k", b"ab", None, b"17");
        Meta.conditional(&mut out, Req::Prepend, b"k", b"ab", Some(5.0), b"");
        Meta.conditional(&mut out, Req::Decr, b"k", b"", None, b"");
        Meta.conditional(&mut out, Req::Touch, b"k", b"", None, b"");
        Meta.conditional(&mut out, Req::Gets, b"k", b"", None, b"");
        let want: &[u8] = b"ms k 2 T5 ME\r\nab\r\nms k 2 C17\r\nab\r\nms k 2 MP\r\nab\r\n\
            ma k MD\r\nmg k T0\r\nmg k v c\r\n";
        assert_eq!(show(&out), show(want));
        let o = |line: &[u8], req| Meta.parse(line, req).unwrap().unwrap().reply;
        assert_eq!(o(b"NS\r\n", Req::Add), Reply::Outcome(Outcome::NotStored));
        assert_eq!(o(b"EX\r\n", Req::Cas), Reply::Outcome(Outcome::Exists));
        assert_eq!(o(b"EN\r\n", Req::Touch), Reply::Outcome(Outcome::NotFound));
        let refused = b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
        assert_eq!(o(refused, Req::Incr), Reply::Outcome(Outcome::NotNumeric));
        let reply = b"VA 3 c42\r\nabc\r\n";
        assert_eq!(Meta.parse(reply, Req::Gets).unwrap().unwrap().used, 15);
        assert_eq!(va_line_token(reply), Some(b"42".to_vec()));
    }
}

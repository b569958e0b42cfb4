//! memcached's meta protocol (`protocol = "meta"` of the native memcached strategy):
//! `mg <key> v` (the value; `EN` a miss), `ms <key> <bytes> T<exptime>` (`HD` stored),
//! `md <key>` (`HD` deleted, `NF` not there). The text protocol's error lines
//! (ERROR, CLIENT_ERROR, SERVER_ERROR) answer meta commands too. Keys are sent as they
//! are (the workbench's keys are printable, without spaces).

use super::memcache::{exptime, server_error};
use super::wire::{first_line, hit_body, parse_int, parsed, show, ParseResult, Reply, Req};
use crate::text::push_num;

pub struct Meta;

impl Meta {
    pub fn get(&self, out: &mut Vec<u8>, key: &[u8]) {
        out.extend_from_slice(b"mg ");
        out.extend_from_slice(key);
        out.extend_from_slice(b" v\r\n");
    }

    pub fn set(&self, out: &mut Vec<u8>, key: &[u8], value: &[u8], ttl: Option<f64>) {
        out.extend_from_slice(b"ms ");
        out.extend_from_slice(key);
        out.push(b' ');
        push_num(out, value.len() as u64);
        let e = exptime(ttl);
        if e != 0 {
            out.extend_from_slice(b" T");
            if e < 0 {
                out.push(b'-');
            }
            push_num(out, e.unsigned_abs());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(value);
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
        if let Some(failed) = server_error(line, used) {
            return failed;
        }
        let code = &line[..line.len().min(2)];
        let flagged = line.len() == 2 || line.get(2) == Some(&b' ');
        match (req, code) {
            (Req::Get, b"EN") if flagged => parsed(Reply::Miss, used),
            (Req::Get, b"VA") if flagged => {
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
}

//! memcached's text protocol: get, set with exptime, delete.

use super::wire::{first_line, hit_body, parse_int, parsed, show, ParseResult, Reply, Req};
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

impl Memcache {
    pub fn get(&self, out: &mut Vec<u8>, key: &[u8]) {
        out.extend_from_slice(b"get ");
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    }

    pub fn set(&self, out: &mut Vec<u8>, key: &[u8], value: &[u8], ttl: Option<f64>) {
        out.extend_from_slice(b"set ");
        out.extend_from_slice(key);
        out.extend_from_slice(b" 0 ");
        let e = exptime(ttl);
        if e < 0 {
            out.push(b'-');
        }
        push_num(out, e.unsigned_abs());
        out.push(b' ');
        push_num(out, value.len() as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
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
        if let Some(failed) = server_error(line, used) {
            return failed;
        }
        match req {
            Req::Get => {
                if line == b"END" {
                    return parsed(Reply::Miss, used);
                }
                if !line.starts_with(b"VALUE ") {
                    return Err(format!("unexpected reply to get: {:?}", show(line)));
                }
                let size_at = line.iter().rposition(|&b| b == b' ').unwrap_or(0) + 1;
                let n = parse_int(&line[size_at..])
                    .ok_or_else(|| format!("bad VALUE line {:?}", show(line)))?;
                hit_body(buf, used, n as usize, b"\r\nEND\r\n", "a value")
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
}

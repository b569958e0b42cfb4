//! Redis RESP2: GET, SET with PX, DEL, and the opening AUTH/SELECT; replies parsed in place.

use super::wire::{first_line, hit_body, parse_int, parsed, show, ParseResult, Reply, Req};
use crate::text::push_num;

pub struct Resp {
    pub hello: Vec<Vec<Vec<u8>>>,
}

fn bulk(out: &mut Vec<u8>, data: &[u8]) {
    out.push(b'$');
    push_num(out, data.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

pub fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    push_num(out, args.len() as u64);
    out.extend_from_slice(b"\r\n");
    for a in args {
        bulk(out, a);
    }
}

impl Resp {
    /// AUTH (when a password is given) and SELECT (a database other than 0).
    pub fn new(username: Option<String>, password: Option<String>, db: i64) -> Resp {
        let mut hello = Vec::new();
        if let Some(p) = password {
            let mut c = vec![b"AUTH".to_vec()];
            if let Some(u) = username {
                c.push(u.into_bytes());
            }
            c.push(p.into_bytes());
            hello.push(c);
        }
        if db != 0 {
            hello.push(vec![b"SELECT".to_vec(), db.to_string().into_bytes()]);
        }
        Resp { hello }
    }

    pub fn hello(&self, out: &mut Vec<u8>) -> usize {
        for c in &self.hello {
            let args: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
            command(out, &args);
        }
        self.hello.len()
    }

    pub fn get(&self, out: &mut Vec<u8>, key: &[u8]) {
        out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
        bulk(out, key);
    }

    pub fn set(&self, out: &mut Vec<u8>, key: &[u8], value: &[u8], ttl: Option<f64>) {
        match ttl {
            Some(t) if t != 0.0 => {
                // Whole seconds go as EX, anything finer as PX (at least 1 ms).
                if t.fract() == 0.0 && t > 0.0 {
                    let s = (t as i64).to_string();
                    command(out, &[b"SET", key, value, b"EX", s.as_bytes()]);
                } else {
                    let ms = ((t * 1000.0).round() as i64).max(1).to_string();
                    command(out, &[b"SET", key, value, b"PX", ms.as_bytes()]);
                }
            }
            _ => {
                out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
                bulk(out, key);
                bulk(out, value);
            }
        }
    }

    /// PUBLISH channel message.
    pub fn publish(&self, out: &mut Vec<u8>, channel: &[u8], message: &[u8]) {
        out.extend_from_slice(b"*3\r\n$7\r\nPUBLISH\r\n");
        bulk(out, channel);
        bulk(out, message);
    }

    pub fn delete(&self, out: &mut Vec<u8>, key: &[u8]) {
        command(out, &[b"DEL", key]);
    }

    pub fn parse(&self, buf: &[u8], req: Req) -> ParseResult {
        let (line, used) = match first_line(buf) {
            Some(l) => l,
            None => return Ok(None),
        };
        match line.first() {
            Some(b'-') => {
                // An opening command refused (WRONGPASS, NOPERM) is the server's answer too:
                // the connection is dropped with it, and the step says it.
                let msg = show(&line[1..]);
                parsed(Reply::Failed("server".into(), msg), used)
            }
            Some(b'$') if req == Req::Get => {
                let n = parse_int(&line[1..])
                    .ok_or_else(|| format!("bad bulk length {:?}", show(line)))?;
                if n < 0 {
                    return parsed(Reply::Miss, used);
                }
                hit_body(buf, used, n as usize, b"\r\n", "a bulk string")
            }
            Some(b'+') if req == Req::Set || req == Req::Hello => parsed(Reply::Done, used),
            Some(b':') if req == Req::Publish => {
                parse_int(&line[1..]).ok_or_else(|| format!("bad integer {:?}", show(line)))?;
                parsed(Reply::Done, used)
            }
            Some(b':') if req == Req::Delete => {
                let n =
                    parse_int(&line[1..]).ok_or_else(|| format!("bad integer {:?}", show(line)))?;
                parsed(Reply::Deleted(n > 0), used)
            }
            _ => Err(format!("unexpected reply to {:?}: {:?}", req, show(line))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hits_misses_and_partial_replies() {
        let r = Resp::new(None, None, 0);
        let p = r.parse(b"$3\r\nabc\r\n", Req::Get).unwrap().unwrap();
        assert_eq!(p.used, 9);
        assert_eq!(p.reply.value_len(), 3);
        assert!(r.parse(b"$3\r\nab", Req::Get).unwrap().is_none());
        assert_eq!(
            r.parse(b"$-1\r\n", Req::Get).unwrap().unwrap().reply,
            Reply::Miss
        );
        assert_eq!(
            r.parse(b":1\r\n", Req::Delete).unwrap().unwrap().reply,
            Reply::Deleted(true)
        );
        assert!(r.parse(b":1\r\n", Req::Get).is_err());
    }

    #[test]
    fn set_uses_ex_or_px() {
        let r = Resp::new(None, None, 0);
        let mut out = Vec::new();
        r.set(&mut out, b"k", b"v", Some(1.5));
        assert!(out.ends_with(b"$2\r\nPX\r\n$4\r\n1500\r\n"));
        out.clear();
        r.set(&mut out, b"k", b"v", Some(2.0));
        assert!(out.ends_with(b"$2\r\nEX\r\n$1\r\n2\r\n"));
    }
}

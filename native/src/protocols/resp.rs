//! Redis RESP2: GET, SET with PX, DEL, and the opening AUTH/SELECT; replies parsed in place.
//!
//! The conditional writes in Redis's words, one round trip each, with memcached's outcomes
//! (the mapping of docs/ops.md, the Python engine's `workbench_redis.conditional`): add and
//! replace are `SET NX` / `SET XX`; append, prepend, incr, decr, touch and cas are that
//! module's scripts, sent by `EVALSHA` (and once by `EVAL` to a server that answers
//! NOSCRIPT: Redis keeps a script it was sent, by its SHA-1), each answering its outcome's
//! name. A gets is a GET whose token is
//! the value's SHA-1 in hex, which the cas script compares.

use super::wire::{
    first_line, hit_body, outcome, parse_int, parsed, show, Outcome, ParseResult, Reply, Req,
    OUTCOME_NAMES,
};
use crate::text::push_num;

pub struct Resp {
    pub hello: Vec<Vec<Vec<u8>>>,
    /// Each of `SCRIPTS`' SHA-1 in hex, the name `EVALSHA` sends it by.
    shas: Vec<Vec<u8>>,
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

// The scripts of `workbench_redis.conditional`, byte for byte (one script cache entry
// whichever engine sent it).
const APPEND: &[u8] = b"if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_stored' end
redis.call('APPEND', KEYS[1], ARGV[1]) return 'stored'";
const PREPEND: &[u8] = b"local v = redis.call('GET', KEYS[1])
if not v then return 'not_stored' end
redis.call('SET', KEYS[1], ARGV[1] .. v, 'KEEPTTL') return 'stored'";
const DELTA: &[u8] = b"local v = redis.call('GET', KEYS[1])
if not v then return 'not_found' end
if #v > 20 or not string.match(v, '^%d+$') then return 'not_numeric' end
local n = redis.pcall('INCRBY', KEYS[1], ARGV[1])
if type(n) == 'table' then return 'not_numeric' end
if n < 0 then redis.call('SET', KEYS[1], '0', 'KEEPTTL') end
return 'stored'";
const TOUCH: &[u8] = b"if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_found' end
if ARGV[1] == '0' then redis.call('PERSIST', KEYS[1])
else redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 'stored'";
const CAS: &[u8] = b"local v = redis.call('GET', KEYS[1])
if not v then return 'not_found' end
if redis.sha1hex(v) ~= ARGV[1] then return 'exists' end
if ARGV[2] == '0' then redis.call('SET', KEYS[1], ARGV[3])
else redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2]) end
return 'stored'";

/// A TTL in milliseconds as an argument; "0" for none (`conditional._ms`).
fn ms(ttl: Option<f64>) -> String {
    match ttl {
        Some(t) if t != 0.0 => ((t * 1000.0).round() as i64).max(1).to_string(),
        _ => "0".to_string(),
    }
}

/// The outcome a script answered, by its name.
fn outcome_named(name: &[u8]) -> Option<Outcome> {
    let all = [
        Outcome::Stored,
        Outcome::NotStored,
        Outcome::Exists,
        Outcome::NotFound,
        Outcome::NotNumeric,
    ];
    all.into_iter()
        .find(|&o| OUTCOME_NAMES[o as usize].as_bytes() == name)
}

/// The cas token of a gets hit: the value's SHA-1 in hex (the cas script's `sha1hex`).
pub fn value_token(value: &[u8]) -> Vec<u8> {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, value);
    let mut hex = Vec::with_capacity(40);
    for b in digest.as_ref() {
        hex.extend_from_slice(format!("{:02x}", b).as_bytes());
    }
    hex
}

/// The scripts by their place in `Resp::shas`.
const SCRIPTS: [&[u8]; 5] = [APPEND, PREPEND, DELTA, TOUCH, CAS];

/// The script a conditional write runs, by its place in `SCRIPTS` (None: add, replace and
/// gets are plain commands).
pub fn script_of(req: Req) -> Option<usize> {
    match req {
        Req::Append => Some(0),
        Req::Prepend => Some(1),
        Req::Incr | Req::Decr => Some(2),
        Req::Touch => Some(3),
        Req::Cas => Some(4),
        _ => None,
    }
}

/// SCRIPT LOAD of every script (`Conn::load_scripts_for`); how many replies they take.
pub fn load_scripts(out: &mut Vec<u8>) -> usize {
    for s in SCRIPTS {
        command(out, &[b"SCRIPT", b"LOAD", s]);
    }
    SCRIPTS.len()
}

/// Whether an error reply says the server does not hold a script sent by its SHA-1 (new,
/// restarted, or after SCRIPT FLUSH): the op is sent again by `Resp::by_eval`.
pub fn script_missing(req: Req, message: &str) -> bool {
    script_of(req).is_some() && message.starts_with("NOSCRIPT")
}

impl Resp {
    /// A conditional write or a gets (`req`), `token` the cas token of a cas. A script
    /// goes by `EVALSHA`: its text crosses the wire only when the server lacks it.
    pub fn conditional(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        token: &[u8],
    ) {
        self.request(out, req, key, value, ttl, token, false);
    }

    /// A script's op again by `EVAL` after a NOSCRIPT reply (`script_missing`): the
    /// server keeps the script, and the next ones go by `EVALSHA` again.
    pub fn by_eval(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        token: &[u8],
    ) {
        self.request(out, req, key, value, ttl, token, true);
    }

    #[allow(clippy::too_many_arguments)]
    fn request(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        token: &[u8],
        eval: bool,
    ) {
        let (ms, delta) = (ms(ttl), if req == Req::Incr { "1" } else { "-1" });
        let i = match (req, script_of(req)) {
            (_, Some(i)) => i,
            (Req::Add | Req::Replace, _) => {
                let only: &[u8] = if req == Req::Add { b"NX" } else { b"XX" };
                match ttl {
                    Some(t) if t != 0.0 => {
                        command(out, &[b"SET", key, value, only, b"PX", ms.as_bytes()])
                    }
                    _ => command(out, &[b"SET", key, value, only]),
                }
                return;
            }
            _ => return self.get(out, key), // a gets
        };
        let head: [&[u8]; 2] = if eval {
            [b"EVAL", SCRIPTS[i]]
        } else {
            [b"EVALSHA", &self.shas[i]]
        };
        let token = if token.is_empty() { b"-" } else { token };
        let mut args: [&[u8]; 7] = [head[0], head[1], b"1", key, b"", b"", b""];
        let n = match req {
            Req::Append | Req::Prepend => {
                args[4] = value;
                5
            }
            Req::Incr | Req::Decr => {
                args[4] = delta.as_bytes();
                5
            }
            Req::Touch => {
                args[4] = ms.as_bytes();
                5
            }
            _ => {
                args[4..7].copy_from_slice(&[token, ms.as_bytes(), value]);
                7
            }
        };
        command(out, &args[..n]);
    }

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
        let shas = SCRIPTS.iter().map(|s| value_token(s)).collect();
        Resp { hello, shas }
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
            Some(b'$') if req.conditional() => {
                let n = parse_int(&line[1..])
                    .ok_or_else(|| format!("bad bulk length {:?}", show(line)))?;
                if n < 0 {
                    return outcome(Outcome::NotStored, used); // SET NX / XX not done
                }
                let end = used + n as usize;
                if buf.len() < end + 2 {
                    return Ok(None);
                }
                match outcome_named(&buf[used..end]) {
                    Some(o) => outcome(o, end + 2),
                    None => Err(format!(
                        "unexpected reply to {:?}: {:?}",
                        req,
                        show(&buf[used..end])
                    )),
                }
            }
            Some(b'+') if req == Req::Add || req == Req::Replace => outcome(Outcome::Stored, used),
            Some(b'$') if req == Req::Hello => {
                // SCRIPT LOAD's answer, the script's SHA-1 (`load_scripts`): read past.
                let n = parse_int(&line[1..])
                    .filter(|&n| n >= 0)
                    .ok_or_else(|| format!("bad bulk length {:?}", show(line)))?;
                let end = used + n as usize;
                if buf.len() < end + 2 {
                    return Ok(None);
                }
                parsed(Reply::Done, end + 2)
            }
            Some(b'$') if req == Req::Get || req == Req::Gets => {
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
    fn conditional_writes_are_set_nx_xx_or_a_script_with_an_outcome() {
        let r = Resp::new(None, None, 0);
        let mut out = Vec::new();
        r.conditional(&mut out, Req::Add, b"k", b"v", Some(1.5), b"");
        assert_eq!(
            show(&out),
            "*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$4\r\n1500\r\n"
        );
        out.clear();
        r.conditional(&mut out, Req::Cas, b"k", b"v", None, b"");
        assert!(out.ends_with(b"$1\r\nk\r\n$1\r\n-\r\n$1\r\n0\r\n$1\r\nv\r\n"));
        let sha = value_token(CAS);
        assert!(out.starts_with(b"*7\r\n$7\r\nEVALSHA\r\n$40\r\n"));
        assert_eq!(&out[22..62], &sha[..]);
        out.clear();
        r.by_eval(&mut out, Req::Incr, b"k", b"", None, b"");
        assert!(out.starts_with(b"*5\r\n$4\r\nEVAL\r\n"));
        assert!(out.ends_with(b"$1\r\n1\r\n$1\r\nk\r\n$1\r\n1\r\n"));
        assert!(script_missing(Req::Cas, "NOSCRIPT No matching script."));
        out.clear();
        assert_eq!(load_scripts(&mut out), 5);
        let p = r.parse(
            b"$40\r\n0123456789012345678901234567890123456789\r\n+OK",
            Req::Hello,
        );
        assert_eq!(p.unwrap().unwrap().used, 47);
        assert!(!script_missing(Req::Add, "NOSCRIPT No matching script."));
        let o = |reply: &[u8], req| r.parse(reply, req).unwrap().unwrap();
        assert_eq!(
            o(b"$-1\r\n", Req::Add).reply,
            Reply::Outcome(Outcome::NotStored)
        );
        assert_eq!(
            o(b"+OK\r\n", Req::Replace).reply,
            Reply::Outcome(Outcome::Stored)
        );
        let p = o(b"$11\r\nnot_numeric\r\n", Req::Incr);
        assert_eq!((p.reply, p.used), (Reply::Outcome(Outcome::NotNumeric), 18));
        assert!(r.parse(b"$11\r\nnot_num", Req::Incr).unwrap().is_none());
        assert_eq!(
            show(&value_token(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
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

//! Probe mode: one request at a time through this engine's own encoders and parsers, for
//! the conformance kit (`workbench/engine/native.py`). Frames in, frames out, like a worker:
//!   {"op":"open","system":S,"options":{...}}              -> {"ok":true} or {"error":...}
//!   {"op":"get"|"set"|"delete","client":N,"key":B64,"value":B64,"ttl":T}
//!   -> {"ok":true,"value":B64|null,"deleted":bool} or {"error":{"kind":K,"message":M}}
//!   {"op":"stream","order":{step order},"client":N,"count":C}
//!   -> {"codes":[...],"keys":[...],"sizes":[...]}: the first C ops of that client's stream
//! Each client id is one blocking connection (per server), opened on first use and after
//! a loss, as the engine's clients are.

use crate::engine::{codec_for, Codec};
use crate::frames::{In, Out};
use crate::proto::{Reply, Req};
use crate::record::{base64, base64_decode};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

struct Session {
    codec: Codec,
    addrs: Vec<SocketAddr>,
    timeout: Duration,
    conns: HashMap<(u64, usize), (TcpStream, Vec<u8>)>,
}

fn fail(kind: &str, message: &str) -> Value {
    json!({"error": {"kind": kind, "message": message}})
}

impl Session {
    fn conn(&mut self, client: u64, si: usize) -> Result<&mut (TcpStream, Vec<u8>), Value> {
        if !self.conns.contains_key(&(client, si)) {
            let addr = self.addrs[si];
            let s = TcpStream::connect_timeout(&addr, self.timeout)
                .map_err(|e| fail("connection", &format!("cannot connect to {}: {}", addr, e)))?;
            let _ = s.set_nodelay(true);
            let _ = s.set_read_timeout(Some(self.timeout));
            let mut hello = Vec::new();
            let n = self.codec_hello(&mut hello);
            let mut entry = (s, Vec::new());
            if n > 0 {
                entry
                    .0
                    .write_all(&hello)
                    .map_err(|e| fail("connection", &e.to_string()))?;
                for _ in 0..n {
                    match read_reply(&self.codec, &mut entry, Req::Hello)? {
                        (Reply::Failed(k, m), _) => return Err(fail(&k, &m)),
                        _ => continue,
                    }
                }
            }
            self.conns.insert((client, si), entry);
        }
        Ok(self.conns.get_mut(&(client, si)).expect("just inserted"))
    }

    fn codec_hello(&self, out: &mut Vec<u8>) -> usize {
        crate::engine::hello(&self.codec, out)
    }

    fn request(&mut self, frame: &Value) -> Value {
        let op = frame["op"].as_str().unwrap_or("");
        let client = frame["client"].as_u64().unwrap_or(0);
        let key = base64_decode(frame["key"].as_str().unwrap_or("")).unwrap_or_default();
        let value = base64_decode(frame["value"].as_str().unwrap_or("")).unwrap_or_default();
        let ttl = frame["ttl"].as_f64();
        let req = match op {
            "get" => Req::Get,
            "set" => Req::Set,
            "delete" => Req::Delete,
            _ => return fail("protocol", &format!("unknown probe op {:?}", op)),
        };
        let si = crate::engine::server_for(&self.codec, &key);
        let mut out = Vec::new();
        if !crate::engine::encode(&self.codec, &mut out, req, &key, &value, ttl) {
            return fail(
                "unsupported",
                "no delete template: set target.options.delete, e.g. 'DELETE /?key={key}'",
            );
        }
        let result = (|| {
            let conn = self.conn(client, si)?;
            conn.0
                .write_all(&out)
                .map_err(|e| fail("connection", &e.to_string()))?;
            let codec = std::mem::replace(
                &mut self.codec,
                Codec::Memcache(
                    crate::memcache::Memcache,
                    crate::memcache::Rendezvous::new(&[]),
                ),
            );
            let conn = self.conns.get_mut(&(client, si)).expect("open");
            let r = read_reply(&codec, conn, req);
            self.codec = codec;
            r
        })();
        match result {
            Err(e) => {
                self.conns.remove(&(client, si));
                e
            }
            Ok((reply, close)) => {
                if close {
                    self.conns.remove(&(client, si));
                }
                match reply {
                    Reply::Failed(k, m) => fail(&k, &m),
                    Reply::Miss => json!({"ok": true, "value": null, "deleted": false}),
                    Reply::Deleted(d) => json!({"ok": true, "deleted": d}),
                    Reply::Done => json!({"ok": true}),
                    Reply::Hit {
                        decoded: Some(v), ..
                    } => json!({"ok": true, "value": base64(&v)}),
                    Reply::Hit { .. } => json!({"ok": true}),
                }
            }
        }
    }
}

/// Read until one whole reply is in; a hit's bytes are returned decoded.
fn read_reply(
    codec: &Codec,
    conn: &mut (TcpStream, Vec<u8>),
    req: Req,
) -> Result<(Reply, bool), Value> {
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        match crate::engine::parse(codec, &conn.1, req) {
            Ok(Some(p)) => {
                let reply = match p.reply {
                    Reply::Hit {
                        start,
                        end,
                        decoded: None,
                    } => Reply::Hit {
                        start: 0,
                        end: 0,
                        decoded: Some(conn.1[start..end].to_vec()),
                    },
                    other => other,
                };
                conn.1.drain(..p.used);
                return Ok((reply, p.close));
            }
            Ok(None) => {}
            Err(e) => return Err(fail("protocol", &e)),
        }
        match conn.0.read(&mut chunk) {
            Ok(0) => return Err(fail("connection", "the server closed the connection")),
            Ok(n) => conn.1.extend_from_slice(&chunk[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return Err(fail("timeout", "no reply in time"))
            }
            Err(e) => return Err(fail("connection", &e.to_string())),
        }
    }
}

pub fn run() -> i32 {
    let mut out = Out::private_stdout();
    let mut input = In::default();
    let mut session: Option<Session> = None;
    let mut buf = vec![0u8; 1 << 20];
    let mut stdin = std::io::stdin();
    loop {
        let frame = match input.next() {
            Ok(Some(f)) => f,
            Ok(None) => match stdin.read(&mut buf) {
                Ok(0) | Err(_) => return 0,
                Ok(n) => {
                    input.feed(&buf[..n]);
                    continue;
                }
            },
            Err(e) => {
                eprintln!("workbench-native: {}", e);
                return 2;
            }
        };
        let answer = if frame["op"] == "open" {
            open(&frame, &mut session)
        } else if frame["op"] == "stream" {
            stream(&frame)
        } else if frame["op"] == "close" {
            session = None;
            json!({"ok": true})
        } else {
            match session.as_mut() {
                Some(s) => s.request(&frame),
                None => fail("protocol", "open first"),
            }
        };
        out.send(&answer);
    }
}

/// The op sequence the engine would draw for one client of a step (tests compare the
/// distributions with the Python engine's).
fn stream(frame: &Value) -> Value {
    let order = match crate::frames::StepOrder::from_frame(&frame["order"]) {
        Ok(o) => o,
        Err(e) => return fail("spec", &e.0),
    };
    let client = frame["client"].as_i64().unwrap_or(0);
    let count = frame["count"].as_u64().unwrap_or(0);
    let mut ops = crate::engine::client_stream(&order, client as usize);
    let (mut codes, mut keys, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..count {
        let op = ops.next_op();
        codes.push(op.code);
        keys.push(op.index);
        sizes.push(op.size);
    }
    json!({"codes": codes, "keys": keys, "sizes": sizes})
}

/// The "open" order: the codec and addresses from the options, each server reachable.
fn open(frame: &Value, session: &mut Option<Session>) -> Value {
    let system = frame["system"].as_str().unwrap_or("");
    let options = &frame["options"];
    let (codec, addrs) = match codec_for(system, options) {
        Ok(x) => x,
        Err(e) => return fail("target", &e),
    };
    if let Err(message) = reachable(&addrs, options) {
        return json!({"error": {"kind": "target", "message": message, "where": where_of(system)}});
    }
    let t = options["timeout"]
        .as_f64()
        .filter(|&t| t > 0.0)
        .unwrap_or(5.0);
    *session = Some(Session {
        codec,
        addrs,
        timeout: Duration::from_secs_f64(t),
        conns: HashMap::new(),
    });
    json!({"ok": true})
}

/// Every server answers a TCP connection, or one line saying which does not.
fn reachable(addrs: &[SocketAddr], options: &Value) -> Result<(), String> {
    let t = options["connect_timeout"]
        .as_f64()
        .filter(|&t| t > 0.0)
        .unwrap_or(5.0);
    for a in addrs {
        TcpStream::connect_timeout(a, Duration::from_secs_f64(t))
            .map_err(|e| format!("cannot reach {}: {}", a, e))?;
    }
    Ok(())
}

fn where_of(system: &str) -> &'static str {
    match system {
        "redis" => "target.options.url",
        "memcached" => "target.options.servers",
        "http" => "target.options.base_url",
        _ => "target.options",
    }
}

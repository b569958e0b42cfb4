//! Probe mode: one request at a time through this engine's own encoders and parsers, for
//! the conformance kit (`workbench/engine/native.py`) and the tests that compare the two
//! engines. Frames in, frames out, like a worker:
//!   {"op":"open","target":{target},"allow_remote":B,"timeout":S,"connect_timeout":S}
//!   -> {"ok":true} or {"error":...}: `target` is a step order's (`order/target.rs`)
//!   {"op":"get"|"set"|"delete","client":N,"key":B64,"value":B64,"ttl":T}
//!   -> {"ok":true,"value":B64|null,"deleted":bool} or {"error":{"kind":K,"message":M}}
//!   {"op":"stream","order":{step order},"client":N,"count":C}
//!   -> {"codes":[...],"keys":[...],"sizes":[...],"ttls":[...]}: the first C ops of a client
//!   {"op":"map","order":{step order},"uniforms":[...]} -> {"sizes":[...],"ttls":[...]}:
//!   the value size and TTL each uniform draw stands for
//!   {"op":"schedule","order":{step order},"start_ns":S,"count":C} -> {"times":[...]}: the
//!   first C intended starts of the order's clients together, in order, from S
//!   {"op":"target","order":{step order}} -> {"servers":["host:port",...]}: the addresses
//!   the step would connect to (nothing is connected), or {"error":...}
//!   {"op":"place","order":{step order},"indexes":[...]} -> {"servers":[...]}: the server
//!   each key goes to
//! Each client id is one blocking connection (per server), opened on first use and after
//! a loss, as the engine's clients are; over TLS when the target asks for it (`tls/`). A
//! cluster target (`cluster = true`) reads the slot map first and follows MOVED and ASK
//! (`cluster/`).

use crate::frames::{In, Out};
use crate::net::placement::Rendezvous;
use crate::order::TargetOrder;
use crate::order::{Action, StepOrder};
use crate::pacing::Schedule;
use crate::protocols::wire::{Reply, Req, OUTCOME_NAMES};
use crate::protocols::Codec;
use crate::text::{base64, base64_decode};
use crate::workload::keys::format_key_into;
use crate::workload::{size_at, ttl_at, OpStream};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A blocking connection: plain TCP or TLS over it.
trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

type Conns = HashMap<(u64, usize), (Box<dyn Stream>, Vec<u8>)>;

struct Session {
    codec: Codec,
    placement: Rendezvous,
    addrs: Vec<SocketAddr>,
    timeout: Duration,
    conns: Conns,
    tls: Option<crate::tls::TlsConfig>,
    /// A cluster's slot map (node index by slot); None for one server or a placement.
    slots: Option<Vec<u16>>,
    allow_remote: bool,
}

fn fail(kind: &str, message: &str) -> Value {
    json!({"error": {"kind": kind, "message": message}})
}

/// Client `client`'s connection to server `si`, opened (with its hello) when missing.
fn connection<'c>(
    codec: &Codec,
    conns: &'c mut Conns,
    addr: SocketAddr,
    timeout: Duration,
    id: (u64, usize),
    tls: Option<&crate::tls::TlsConfig>,
) -> Result<&'c mut (Box<dyn Stream>, Vec<u8>), Value> {
    if let std::collections::hash_map::Entry::Vacant(slot) = conns.entry(id) {
        slot.insert(open_connection(codec, addr, timeout, tls)?);
    }
    Ok(conns.get_mut(&id).expect("just inserted"))
}

fn open_connection(
    codec: &Codec,
    addr: SocketAddr,
    timeout: Duration,
    tls: Option<&crate::tls::TlsConfig>,
) -> Result<(Box<dyn Stream>, Vec<u8>), Value> {
    let s = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| fail("connection", &format!("cannot connect to {}: {}", addr, e)))?;
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    let s: Box<dyn Stream> = match tls {
        Some(cfg) => {
            let conn = cfg.client().map_err(|e| fail("tls", &e))?;
            Box::new(rustls::StreamOwned::new(conn, s))
        }
        None => Box::new(s),
    };
    let mut hello = Vec::new();
    let n = codec.hello(&mut hello);
    let mut entry = (s, Vec::new());
    if n > 0 {
        entry
            .0
            .write_all(&hello)
            .map_err(|e| fail("connection", &e.to_string()))?;
        for _ in 0..n {
            if let (Reply::Failed(k, m), _, _) = read_reply(codec, &mut entry, Req::Hello)? {
                return Err(fail(&k, &m));
            }
        }
    }
    Ok(entry)
}

fn answer(reply: Reply) -> Value {
    match reply {
        Reply::Failed(k, m) => fail(&k, &m),
        Reply::Miss => json!({"ok": true, "value": null, "deleted": false}),
        Reply::Deleted(d) => json!({"ok": true, "deleted": d}),
        Reply::Done => json!({"ok": true}),
        Reply::Outcome(o) => json!({"ok": true, "outcome": OUTCOME_NAMES[o as usize]}),
        Reply::Hit {
            decoded: Some(v), ..
        } => json!({"ok": true, "value": base64(&v)}),
        Reply::Hit { .. } => json!({"ok": true}),
    }
}

impl Session {
    fn request(&mut self, frame: &Value) -> Value {
        let op = frame["op"].as_str().unwrap_or("");
        let client = frame["client"].as_u64().unwrap_or(0);
        let key = base64_decode(frame["key"].as_str().unwrap_or("")).unwrap_or_default();
        let value = base64_decode(frame["value"].as_str().unwrap_or("")).unwrap_or_default();
        let ttl = frame["ttl"].as_f64();
        // The ops a client issues on its own key: not a cache-aside, not a publish.
        let req = match Action::named(op) {
            Some(Action { req, aside: false }) if req != Req::Publish => req,
            _ => return fail("protocol", &format!("unknown probe op {:?}", op)),
        };
        // A cas's token, as a gets answered it.
        let token = base64_decode(frame["token"].as_str().unwrap_or("")).unwrap_or_default();
        let mut si = match &self.slots {
            Some(slots) => crate::cluster::slot_node(slots, &key),
            None => self.placement.index(&key),
        };
        let (mut asking, mut eval) = (false, false);
        // A cluster's redirections are followed, a few at most (as redis-py does), and a
        // script the server lacks (NOSCRIPT) is sent again by EVAL.
        for _ in 0..6 {
            let mut out = Vec::new();
            if asking {
                crate::protocols::resp::command(&mut out, &[b"ASKING"]);
            }
            if eval {
                self.codec.by_eval(&mut out, req, &key, &value, ttl, &token);
            } else if !self.codec.encode(&mut out, req, &key, &value, ttl, &token) {
                let why = if req == Req::Delete {
                    "no delete template: set target.options.delete, e.g. 'DELETE /?key={key}'"
                } else {
                    "this protocol has no conditional writes or gets"
                };
                return fail("unsupported", why);
            }
            let (reply, token) = match self.exchange((client, si), &out, asking, req) {
                Ok(x) => x,
                Err(e) => return e,
            };
            if let Reply::Failed(_, m) = &reply {
                if !eval && self.codec.script_missing(req, m) {
                    eval = true;
                    continue;
                }
            }
            if let (Reply::Failed(_, m), Some(slots)) = (&reply, self.slots.as_mut()) {
                if let Some(r) = crate::cluster::slots::redirect_of(m) {
                    match crate::cluster::follow(slots, &mut self.addrs, &r, self.allow_remote) {
                        Ok(node) => {
                            si = node;
                            asking = r.ask;
                            continue;
                        }
                        Err(e) => return fail("cluster", &e),
                    }
                }
            }
            let mut answered = answer(reply);
            if let Some(t) = token {
                answered["token"] = json!(base64(&t));
            }
            return answered;
        }
        fail("cluster", "more than 5 MOVED/ASK redirections for one key")
    }

    /// One request written on client `id`'s connection and its reply read (after the
    /// ASKING's, when `asking`): the reply and a gets hit's token. A connection that
    /// failed, or that the reply closes, is dropped.
    fn exchange(
        &mut self,
        id: (u64, usize),
        out: &[u8],
        asking: bool,
        req: Req,
    ) -> Result<(Reply, Option<Vec<u8>>), Value> {
        let result = connection(
            &self.codec,
            &mut self.conns,
            self.addrs[id.1],
            self.timeout,
            id,
            self.tls.as_ref(),
        )
        .and_then(|conn| {
            conn.0
                .write_all(out)
                .map_err(|e| fail("connection", &e.to_string()))?;
            if asking {
                read_reply(&self.codec, conn, Req::Hello)?;
            }
            read_reply(&self.codec, conn, req)
        });
        match result {
            Err(e) => {
                self.conns.remove(&id);
                Err(e)
            }
            Ok((reply, close, token)) => {
                if close {
                    self.conns.remove(&id);
                }
                Ok((reply, token))
            }
        }
    }
}

/// Read until one whole reply is in; a hit's bytes are returned decoded, with a gets
/// hit's cas token.
fn read_reply(
    codec: &Codec,
    conn: &mut (Box<dyn Stream>, Vec<u8>),
    req: Req,
) -> Result<(Reply, bool, Option<Vec<u8>>), Value> {
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        match codec.parse(&conn.1, req) {
            Ok(Some(p)) => {
                let token = match (&p.reply, req) {
                    (Reply::Hit { start, end, .. }, Req::Gets) => {
                        codec.token(&conn.1[..*start], &conn.1[*start..*end])
                    }
                    _ => None,
                };
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
                return Ok((reply, p.close, token));
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
        } else if frame["op"] == "schedule" {
            schedule(&frame)
        } else if frame["op"] == "map" {
            map(&frame)
        } else if frame["op"] == "target" {
            target(&frame)
        } else if frame["op"] == "place" {
            place(&frame)
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
/// distributions, and the draws where they are deterministic, with the Python engine's).
fn stream(frame: &Value) -> Value {
    let order = match StepOrder::from_frame(&frame["order"]) {
        Ok(o) => o,
        Err(e) => return fail("spec", &e),
    };
    let id = frame["client"].as_i64().unwrap_or(0);
    let count = frame["count"].as_u64().unwrap_or(0);
    let client = match order.clients.iter().find(|c| c.id == id) {
        Some(c) => c,
        None => return fail("spec", &format!("the order has no client {}", id)),
    };
    let mut ops = OpStream::new(&order, &client.mix, id, client.sequence_start);
    let (mut codes, mut keys, mut sizes, mut ttls) = (vec![], vec![], vec![], vec![]);
    for _ in 0..count {
        let op = ops.next_op();
        codes.push(op.code);
        keys.push(op.index);
        sizes.push(op.size);
        ttls.push(op.ttl);
    }
    json!({"codes": codes, "keys": keys, "sizes": sizes, "ttls": ttls})
}

/// The value size and TTL of each given uniform draw, under the order's distributions.
fn map(frame: &Value) -> Value {
    let order = match StepOrder::from_frame(&frame["order"]) {
        Ok(o) => o,
        Err(e) => return fail("spec", &e),
    };
    let uniforms: Vec<f64> = frame["uniforms"]
        .as_array()
        .map(|l| l.iter().filter_map(|u| u.as_f64()).collect())
        .unwrap_or_default();
    let sizes: Vec<usize> = uniforms
        .iter()
        .map(|&u| size_at(&order.value_size, u))
        .collect();
    let ttls: Vec<Option<f64>> = uniforms.iter().map(|&u| ttl_at(&order.ttl, u)).collect();
    json!({"sizes": sizes, "ttls": ttls})
}

/// The first intended starts of all the order's open-loop clients, merged in time order.
fn schedule(frame: &Value) -> Value {
    let order = match StepOrder::from_frame(&frame["order"]) {
        Ok(o) => o,
        Err(e) => return fail("spec", &e),
    };
    let start = frame["start_ns"].as_u64().unwrap_or(0);
    let count = frame["count"].as_u64().unwrap_or(0);
    let mut all: Vec<Schedule> = order
        .clients
        .iter()
        .filter_map(|c| c.timing.map(|t| Schedule::new(start, &t)))
        .collect();
    let mut times = Vec::new();
    while (times.len() as u64) < count && !all.is_empty() {
        let first = (0..all.len())
            .min_by_key(|&i| all[i].next)
            .expect("not empty");
        times.push(all[first].take());
    }
    json!({ "times": times })
}

/// The codec and addresses a step order names, without connecting.
fn order_target(frame: &Value) -> Result<(StepOrder, Codec, Vec<SocketAddr>), Value> {
    let order = StepOrder::from_frame(&frame["order"]).map_err(|e| fail("spec", &e))?;
    let codec = Codec::for_target(&order.target).map_err(|e| fail("target", &e))?;
    let addrs = crate::addr::servers(&order.target).map_err(|e| fail("target", &e))?;
    Ok((order, codec, addrs))
}

/// The servers a step would load (its remote decision applied), nothing connected.
fn target(frame: &Value) -> Value {
    match order_target(frame) {
        Ok((_, _, addrs)) => {
            let names: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
            json!({ "servers": names })
        }
        Err(e) => e,
    }
}

/// The server index each key index of `indexes` goes to.
fn place(frame: &Value) -> Value {
    let order = match order_target(frame) {
        Ok((order, _, _)) => order,
        Err(e) => return e,
    };
    let placement = Rendezvous::new(order.target.placement.as_deref().unwrap_or(&[]));
    let mut key = Vec::new();
    let servers: Vec<usize> = frame["indexes"]
        .as_array()
        .map(|l| l.iter().filter_map(|i| i.as_u64()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|i| {
            format_key_into(&mut key, &order.keys.prefix, i, order.keys.length);
            placement.index(&key)
        })
        .collect();
    json!({ "servers": servers })
}

/// Seconds from the open frame (`name`), 5 when absent or not above 0.
fn seconds(frame: &Value, name: &str) -> Duration {
    Duration::from_secs_f64(frame[name].as_f64().filter(|&t| t > 0.0).unwrap_or(5.0))
}

/// The "open" order: the codec and addresses of the target, each server reachable.
fn open(frame: &Value, session: &mut Option<Session>) -> Value {
    let allow_remote = frame["allow_remote"].as_bool().unwrap_or(false);
    let t = match TargetOrder::from_value(&frame["target"], allow_remote) {
        Ok(t) => t,
        Err(e) => return fail("target", &e),
    };
    let built = Codec::for_target(&t).and_then(|c| Ok((c, crate::addr::servers(&t)?)));
    let (codec, addrs) = match built {
        Ok(x) => x,
        Err(e) => return fail("target", &e),
    };
    if let Err(message) = reachable(&addrs, seconds(frame, "connect_timeout")) {
        return json!({"error": {"kind": "target", "message": message, "where": t.origin}});
    }
    let timeout = seconds(frame, "timeout");
    let tls = match crate::tls::config_for(t.tls.as_ref()) {
        Ok(tls) => tls,
        Err(e) => return fail("target", &e),
    };
    let (slots, addrs) = if t.cluster {
        match crate::cluster::slot_map(&codec, addrs[0], tls.as_ref(), timeout, allow_remote) {
            Ok((slots, nodes)) => (Some(slots), nodes),
            Err(e) => return fail("connection", &e),
        }
    } else {
        (None, addrs)
    };
    *session = Some(Session {
        codec,
        placement: Rendezvous::new(t.placement.as_deref().unwrap_or(&[])),
        addrs,
        timeout,
        conns: HashMap::new(),
        tls,
        slots,
        allow_remote,
    });
    json!({"ok": true})
}

/// Every server answers a TCP connection, or one line saying which does not.
fn reachable(addrs: &[SocketAddr], wait: Duration) -> Result<(), String> {
    for a in addrs {
        TcpStream::connect_timeout(a, wait).map_err(|e| format!("cannot reach {}: {}", a, e))?;
    }
    Ok(())
}

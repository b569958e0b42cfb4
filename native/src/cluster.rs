//! Redis Cluster (`target.options.cluster = true`): the slot map from CLUSTER SLOTS, CRC16
//! slots with hash tags, one connection per node per client with `pipeline` requests in
//! flight on each, -MOVED (the slot map updated, a full refresh due, the op retried) and
//! -ASK (ASKING, then the op, on the node named). Both are counted (`moved`, `ask`).
//!
//! The slot map is read with a short blocking exchange (CLUSTER SLOTS after the
//! connection's AUTH): at the step's start, and again, at most every `REFRESH_GAP`, after a
//! MOVED or a lost node. A node that serves no slot any more is no longer reconnected to.

use crate::client::Conn;
use crate::codec::{is_loopback, Codec};
use crate::io::Mode;
use crate::order::StepOrder;
use crate::pacing::now_ns;
use crate::proto::{line_end, parse_int, Req};
use crate::resp::command;
use crate::step::Run;
use crate::tls::TlsConfig;
use crate::workload::{self, Op};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

pub const SLOTS: usize = 16384;
const NONE: u16 = u16::MAX;
/// Node connections a client may have: the token stride of a cluster step's clients.
pub const MAX_NODES: usize = 64;
const REFRESH_GAP: u64 = 100_000_000; // 100 ms between two full refreshes
const FETCH_TIMEOUT: Duration = Duration::from_millis(500);

/// CRC16-CCITT (XMODEM) of each byte value: the per-byte step of the key hash.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC16-CCITT (XMODEM), Redis Cluster's key hash (a table lookup per byte).
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[((crc >> 8) as u8 ^ b) as usize]
    })
}

/// The slot of a key: of its hash tag (the text between the first `{` and the next `}`,
/// when not empty), else of the whole key.
pub fn slot_of(key: &[u8]) -> usize {
    let mut part = key;
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                part = &key[open + 1..open + 1 + len];
            }
        }
    }
    (crc16(part) as usize) % SLOTS
}

/// A redirection read from an error reply: "MOVED 3999 127.0.0.1:6381" or "ASK ...".
#[derive(Debug, PartialEq, Eq)]
pub struct Redirect {
    pub ask: bool,
    pub slot: usize,
    pub host: String,
    pub port: u16,
}

/// The redirection an error reply's message (as resp.rs words it) carries, if any.
pub fn redirect_of(message: &str) -> Option<Redirect> {
    let text = message.strip_prefix("redis: ").unwrap_or(message);
    let mut words = text.split_whitespace();
    let ask = match words.next()? {
        "MOVED" => false,
        "ASK" => true,
        _ => return None,
    };
    let slot: usize = words.next()?.parse().ok()?;
    let hostport = words.next()?;
    let i = hostport.rfind(':')?;
    let port = hostport[i + 1..].parse().ok()?;
    let host = hostport[..i].trim_start_matches('[').trim_end_matches(']');
    if slot >= SLOTS {
        return None;
    }
    Some(Redirect {
        ask,
        slot,
        host: host.to_string(),
        port,
    })
}

/// A RESP value, as CLUSTER SLOTS answers.
#[derive(Debug, PartialEq)]
enum Value {
    Int(i64),
    Text(Vec<u8>),
    Nil,
    Array(Vec<Value>),
    Error(String),
}

/// One complete RESP value at the start of `buf` and the bytes it took; None until complete.
fn value(buf: &[u8]) -> Result<Option<(Value, usize)>, String> {
    let eol = match line_end(buf, 0) {
        Some(e) => e,
        None => return Ok(None),
    };
    let line = &buf[1..eol];
    let used = eol + 2;
    let int = || parse_int(line).ok_or_else(|| "CLUSTER SLOTS: a bad number".to_string());
    match buf.first() {
        Some(b'+') => Ok(Some((Value::Text(line.to_vec()), used))),
        Some(b'-') => Ok(Some((
            Value::Error(String::from_utf8_lossy(line).into_owned()),
            used,
        ))),
        Some(b':') => Ok(Some((Value::Int(int()?), used))),
        Some(b'$') => {
            let n = int()?;
            if n < 0 {
                return Ok(Some((Value::Nil, used)));
            }
            let end = used + n as usize;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            Ok(Some((Value::Text(buf[used..end].to_vec()), end + 2)))
        }
        Some(b'*') => {
            let n = int()?;
            let mut items = Vec::new();
            let mut pos = used;
            for _ in 0..n.max(0) {
                match value(&buf[pos..])? {
                    Some((v, u)) => {
                        items.push(v);
                        pos += u;
                    }
                    None => return Ok(None),
                }
            }
            Ok(Some((Value::Array(items), pos)))
        }
        _ => Err(format!(
            "CLUSTER SLOTS: unexpected reply {:?}",
            crate::proto::show(&buf[..eol])
        )),
    }
}

/// A slot range and the address of the master that serves it (host as the node said it).
type Range = (usize, usize, String, u16);

/// The ranges of a CLUSTER SLOTS reply.
fn ranges(reply: Value) -> Result<Vec<Range>, String> {
    let bad = || "CLUSTER SLOTS: not a list of [start, end, [host, port, ...], ...]".to_string();
    let items = match reply {
        Value::Array(items) => items,
        Value::Error(e) => return Err(format!("CLUSTER SLOTS: {} (is it a cluster node?)", e)),
        _ => return Err(bad()),
    };
    let mut out = Vec::new();
    for item in items {
        let parts = match item {
            Value::Array(p) if p.len() >= 3 => p,
            _ => return Err(bad()),
        };
        let (start, end) = match (&parts[0], &parts[1]) {
            (Value::Int(a), Value::Int(b)) if *a >= 0 && *b < SLOTS as i64 && a <= b => {
                (*a as usize, *b as usize)
            }
            _ => return Err(bad()),
        };
        let (host, port) = match &parts[2] {
            Value::Array(m) if m.len() >= 2 => match (&m[0], &m[1]) {
                (Value::Text(h), Value::Int(p)) => (String::from_utf8_lossy(h).into_owned(), *p),
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        };
        out.push((start, end, host, port as u16));
    }
    Ok(out)
}

/// The address of a node as the cluster names it; an empty host is the one asked.
fn node_addr(
    host: &str,
    port: u16,
    asked: SocketAddr,
    allow_remote: bool,
) -> Result<SocketAddr, String> {
    if host.is_empty() || host == "?" {
        return Ok(SocketAddr::new(asked.ip(), port));
    }
    if !allow_remote && !is_loopback(host) {
        return Err(format!(
            "target.options.url: the cluster names node {}:{}, not a loopback address; to \
             load a remote target, set target.allow_remote = true or pass --allow-remote",
            host, port
        ));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cluster node {}:{}: {}", host, port, e))?
        .next()
        .ok_or_else(|| format!("cluster node {}:{}: no address", host, port))
}

/// Ask one node for the slot map: connect, the connection's opening commands (AUTH), then
/// CLUSTER SLOTS, blocking, each step bounded by `timeout`.
fn fetch(
    addr: SocketAddr,
    hello: &[u8],
    hellos: usize,
    tls: Option<&TlsConfig>,
    timeout: Duration,
) -> Result<Vec<Range>, String> {
    let why = |e: std::io::Error| format!("CLUSTER SLOTS from {}: {}", addr, e);
    let sock = TcpStream::connect_timeout(&addr, timeout).map_err(why)?;
    sock.set_read_timeout(Some(timeout)).map_err(why)?;
    sock.set_write_timeout(Some(timeout)).map_err(why)?;
    let mut out = hello.to_vec();
    command(&mut out, &[b"CLUSTER", b"SLOTS"]);
    match tls {
        Some(cfg) => {
            let conn = cfg.client()?;
            exchange(rustls::StreamOwned::new(conn, sock), &out, hellos, addr)
        }
        None => exchange(sock, &out, hellos, addr),
    }
}

fn exchange<S: Read + Write>(
    mut s: S,
    out: &[u8],
    hellos: usize,
    addr: SocketAddr,
) -> Result<Vec<Range>, String> {
    let why = |e: std::io::Error| format!("CLUSTER SLOTS from {}: {}", addr, e);
    s.write_all(out).map_err(why)?;
    s.flush().map_err(why)?;
    let mut inb = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let mut seen = 0;
    loop {
        while let Some((v, used)) = value(&inb)? {
            inb.drain(..used);
            seen += 1;
            if seen <= hellos {
                if let Value::Error(e) = v {
                    return Err(format!("{}: redis: {}", addr, e));
                }
                continue;
            }
            return ranges(v);
        }
        let n = s.read(&mut chunk).map_err(why)?;
        if n == 0 {
            return Err(format!(
                "CLUSTER SLOTS from {}: the connection closed",
                addr
            ));
        }
        inb.extend_from_slice(&chunk[..n]);
    }
}

/// An op drawn for a node whose connection was full or down, sent once it has room.
pub struct Parked {
    op: Op,
    t0: u64,
    due: u64,
    phase: u32,
    /// Its key's node under slot map `map`: looked up again only when the map changed.
    node: usize,
    map: u64,
}

/// A cluster step's topology and what it counts on.
pub struct Cluster {
    /// The node index of each slot (NONE: no node serves it).
    slots: Vec<u16>,
    /// The nodes' addresses: client connection `si` goes to `nodes[si]`.
    pub nodes: Vec<SocketAddr>,
    /// Requests in flight on one connection (the strategy's `pipeline`).
    pub per_conn: usize,
    /// A closed loop writes to a node in whole batches, as redis-benchmark --cluster -P
    /// does: a node's connection takes ops only while its pipeline is empty (all replies
    /// in) or the batch for it is still being gathered, never a top-up onto a batch in
    /// flight. With top-ups the client sent 0.083-0.088 segments per op where the nodes
    /// answered 0.069-0.071, each node read two of them at once and sent a pure ACK for
    /// 0.011-0.014 of its ops (`ss -ti`), and the nodes spent 1.3-1.5x the CPU per op
    /// they spend on redis-benchmark's batches of 16. An open loop sends as soon as
    /// there is room: its ops are due at their times.
    batches: bool,
    /// By client and node: ops drawn for a node whose connection was full or down, oldest
    /// first, sent as it has room (a whole batch at once when its replies come back).
    parked: Vec<Vec<VecDeque<Parked>>>,
    /// By client: its ops parked over all nodes; it draws no more once they would fill
    /// every node's pipeline again (`per_conn` x nodes).
    waiting: Vec<usize>,
    /// Counts changes of the slot map (a MOVED, a refresh).
    map: u64,
    stale: bool,
    refreshed_at: u64,
    hello: Vec<u8>,
    hellos: usize,
    allow_remote: bool,
}

impl Cluster {
    fn apply(&mut self, ranges: &[Range], asked: SocketAddr) -> Result<(), String> {
        let mut slots = vec![NONE; SLOTS];
        for (start, end, host, port) in ranges {
            let addr = node_addr(host, *port, asked, self.allow_remote)?;
            let node = match self.nodes.iter().position(|a| *a == addr) {
                Some(i) => i,
                None => {
                    if self.nodes.len() >= MAX_NODES {
                        return Err(format!("the cluster has more than {} nodes", MAX_NODES));
                    }
                    self.nodes.push(addr);
                    self.nodes.len() - 1
                }
            };
            for s in slots.iter_mut().take(end + 1).skip(*start) {
                *s = node as u16;
            }
        }
        self.slots = slots;
        self.map += 1;
        Ok(())
    }

    /// Whether node `si` serves at least one slot.
    fn serves(&self, si: usize) -> bool {
        self.slots.iter().any(|&n| n as usize == si)
    }
}

/// The connection a key goes to: its slot's node in a cluster, else the codec's choice.
#[inline]
pub fn node_for(cluster: &Option<Cluster>, codec: &Codec, key: &[u8]) -> usize {
    match cluster {
        Some(c) => match c.slots[slot_of(key)] {
            NONE => 0,
            n => n as usize,
        },
        None => codec.server_for(key),
    }
}

/// For a cluster target: its slot map, read from the node the URL names, and the nodes'
/// addresses (every client opens one connection to each). Otherwise None and `addrs`.
pub fn discover(
    order: &StepOrder,
    codec: &Codec,
    addrs: Vec<SocketAddr>,
) -> Result<(Option<Cluster>, Vec<SocketAddr>), String> {
    if !order.target["cluster"].as_bool().unwrap_or(false) {
        return Ok((None, addrs));
    }
    if order.system != "redis" {
        return Err("target.options.cluster: only redis has a cluster mode".into());
    }
    let mut hello = Vec::new();
    let hellos = codec.hello(&mut hello);
    let tls = crate::tls::config_for(&order.system, &order.target)?;
    let timeout = Duration::from_nanos(order.connect_timeout_ns.max(1_000_000));
    let asked = addrs[0];
    let ranges = fetch(asked, &hello, hellos, tls.as_ref(), timeout)?;
    let mut cluster = Cluster {
        slots: vec![NONE; SLOTS],
        nodes: Vec::new(),
        per_conn: order.pipeline,
        batches: !order.open_loop,
        parked: Vec::new(),
        waiting: Vec::new(),
        map: 0,
        stale: false,
        refreshed_at: now_ns(),
        hello,
        hellos,
        allow_remote: order.allow_remote,
    };
    cluster.apply(&ranges, asked)?;
    if cluster.nodes.is_empty() {
        return Err(format!(
            "target.options.url: the cluster at {} serves no slot yet (cluster_state not ok?)",
            asked
        ));
    }
    cluster.parked = (0..order.clients.len())
        .map(|_| (0..cluster.nodes.len()).map(|_| VecDeque::new()).collect())
        .collect();
    cluster.waiting = vec![0; order.clients.len()];
    let nodes = cluster.nodes.clone();
    Ok((Some(cluster), nodes))
}

/// The probe's slot map (probe.rs): node index by slot, and the nodes' addresses.
pub fn slot_map(
    codec: &Codec,
    addr: SocketAddr,
    tls: Option<&TlsConfig>,
    timeout: Duration,
    allow_remote: bool,
) -> Result<(Vec<u16>, Vec<SocketAddr>), String> {
    let mut hello = Vec::new();
    let hellos = codec.hello(&mut hello);
    let ranges = fetch(addr, &hello, hellos, tls, timeout)?;
    let mut cluster = Cluster {
        slots: vec![NONE; SLOTS],
        nodes: Vec::new(),
        per_conn: 1,
        batches: false,
        parked: Vec::new(),
        waiting: Vec::new(),
        map: 0,
        stale: false,
        refreshed_at: 0,
        hello,
        hellos,
        allow_remote,
    };
    cluster.apply(&ranges, addr)?;
    Ok((cluster.slots, cluster.nodes))
}

/// The node a key goes to in a probe's slot map.
pub fn slot_node(slots: &[u16], key: &[u8]) -> usize {
    match slots[slot_of(key)] {
        NONE => 0,
        n => n as usize,
    }
}

/// A redirection followed in a probe's slot map: the node to ask (added when new), the
/// slot moved to it for MOVED.
pub fn follow(
    slots: &mut [u16],
    nodes: &mut Vec<SocketAddr>,
    r: &Redirect,
    allow_remote: bool,
) -> Result<usize, String> {
    let asked = nodes[0];
    let addr = node_addr(&r.host, r.port, asked, allow_remote)?;
    let node = match nodes.iter().position(|a| *a == addr) {
        Some(i) => i,
        None => {
            nodes.push(addr);
            nodes.len() - 1
        }
    };
    if !r.ask {
        slots[r.slot] = node as u16;
    }
    Ok(node)
}

impl<'a> Run<'a> {
    /// A reply that redirects the op: counted, the slot map updated (MOVED), and the op
    /// sent again on the node named (after ASKING for ASK). Never an error, never lost.
    pub fn redirect(&mut self, ci: usize, p: crate::client::Pending, r: Redirect, now: u64) {
        let in_phase = p.phase == self.phase && self.mode != Mode::Prefill;
        if in_phase {
            if r.ask {
                self.rec.ask += 1;
            } else {
                self.rec.moved += 1;
            }
        }
        let asked = self.clients[ci].conns[0].addr;
        let allow_remote = self.order.allow_remote;
        let si = match node_addr(&r.host, r.port, asked, allow_remote)
            .and_then(|addr| self.node_index(addr))
        {
            Ok(si) => si,
            Err(e) => return self.redirect_failed(ci, &p, "cluster", &e, now),
        };
        if let Some(c) = self.cluster.as_mut() {
            if !r.ask {
                c.slots[r.slot] = si as u16;
                c.map += 1;
                c.stale = true;
            }
        }
        if self.clients[ci].conns[si].sock.is_none() {
            let m = format!("redirected to {}, which is down", self.nodes_addr(si));
            return self.redirect_failed(ci, &p, "connection", &m, now);
        }
        // Sent again under the key it was sent with: a replayed op's own bytes (replay.rs).
        let key = if p.trace > crate::replay::INDEX_KEY {
            self.replay.as_ref().expect("a replay step").key_of(p.trace)
        } else {
            let k = &self.order.keys;
            workload::key_of(&self.keys, &mut self.key, &k.prefix, p.index, k.length)
        };
        let value = if p.req == Req::Set {
            self.values.value(p.index, p.size as usize)
        } else {
            &[][..]
        };
        let conn = &mut self.clients[ci].conns[si];
        if r.ask {
            command(&mut conn.out, &[b"ASKING"]);
            conn.pending.push_back(crate::client::Pending::hello());
        }
        self.codec.encode(&mut conn.out, p.req, key, value, p.ttl);
        if conn.pending.is_empty() {
            conn.progress = now.max(conn.progress);
        }
        conn.pending.push_back(p);
    }

    fn nodes_addr(&self, si: usize) -> SocketAddr {
        self.clients[0].conns[si].addr
    }

    fn redirect_failed(
        &mut self,
        ci: usize,
        p: &crate::client::Pending,
        kind: &str,
        message: &str,
        now: u64,
    ) {
        let pipeline = self.order.pipeline;
        self.clients[ci].release(1, now, pipeline);
        if p.phase == self.phase && self.mode != Mode::Prefill {
            self.rec.error(kind, message);
        }
    }

    /// The connection index of a node, added (with a connection per client) when new.
    fn node_index(&mut self, addr: SocketAddr) -> Result<usize, String> {
        if let Some(i) = self.clients[0].conns.iter().position(|k| k.addr == addr) {
            return Ok(i);
        }
        let n = self.clients[0].conns.len();
        if n >= MAX_NODES {
            return Err(format!(
                "the cluster has more than {} nodes; {} not used",
                MAX_NODES, addr
            ));
        }
        if let Some(c) = self.cluster.as_mut() {
            if !c.nodes.contains(&addr) {
                c.nodes.push(addr);
            }
            for parked in c.parked.iter_mut() {
                parked.push(VecDeque::new());
            }
            self.order.pipeline = c.per_conn * (n + 1);
        }
        for ci in 0..self.clients.len() {
            self.clients[ci].conns.push(Conn::new(addr));
            if let Err(e) = self.open(ci, n) {
                self.drop_conn(ci, n, "connection", &e);
            }
        }
        Ok(n)
    }

    /// Whether the op may go to its node now: connected, with room in its pipeline; in a
    /// closed loop also only while that pipeline is empty or its next batch not yet
    /// written (see `Cluster::batches`).
    pub fn node_ready(&self, ci: usize, si: usize) -> bool {
        let k = &self.clients[ci].conns[si];
        match &self.cluster {
            Some(c) => {
                k.connected
                    && k.pending.len() < c.per_conn
                    && (!c.batches || k.pending.is_empty() || k.out.len() > k.out_pos)
            }
            None => k.connected,
        }
    }

    /// A closed loop over a cluster draws until its parked ops would fill every node's
    /// pipeline (`cluster_blocked`), not only until its connections are full: the ops for
    /// a node then wait in its queue for its batch to come back, and go out whole.
    pub fn cluster_draws_ahead(&self) -> bool {
        self.mode == Mode::Load
            && self.replay.is_none()
            && self.cluster.as_ref().map_or(false, |c| c.batches)
    }

    /// An op whose node is full or down waits in that node's queue, and the client draws
    /// on for its other nodes (memtier's per-shard pipelines). The queue lets a node's
    /// ops gather while its batch is in flight and go out as one write when that batch
    /// comes back: with one place per node, a client stopped drawing at the second op for
    /// a full node, and each node got writes of a few ops (at P=16 the nodes read 10-11
    /// ops per read under the native engine, 14-14.5 with the queues, redis-benchmark's
    /// 16; its clients each keep to one node, with keys tagged to one slot).
    pub fn park_on_node(&mut self, ci: usize, op: Op, t0: u64, due: u64) -> bool {
        let k = &self.order.keys;
        let key = workload::key_of(&self.keys, &mut self.key, &k.prefix, op.index, k.length);
        let si = node_for(&self.cluster, &self.codec, key);
        let phase = self.phase;
        let c = match self.cluster.as_mut() {
            Some(c) => c,
            None => return false,
        };
        let map = c.map;
        c.parked[ci][si].push_back(Parked {
            op,
            t0,
            due,
            phase,
            node: si,
            map,
        });
        c.waiting[ci] += 1;
        true
    }

    /// Whether the client's parked ops would fill every node's pipeline again: it draws no
    /// more until some are sent.
    pub fn cluster_blocked(&self, ci: usize) -> bool {
        self.cluster
            .as_ref()
            .map_or(false, |c| c.waiting[ci] >= c.per_conn * c.parked[ci].len())
    }

    /// Send the ops parked for nodes that have room again (before drawing new ones), each
    /// in the phase it was drawn in; they were taken from the budget, so they go out after
    /// the load stops too.
    pub fn unpark_nodes(&mut self, ci: usize, now: u64) {
        if self.mode == Mode::Prefill {
            return;
        }
        let map = match self.cluster.as_ref() {
            Some(c) if c.waiting[ci] > 0 => c.map,
            _ => return,
        };
        self.rehome_parked(ci, map);
        let n = self.clients[ci].conns.len();
        for si in 0..n {
            while self.node_ready(ci, si) {
                let p = match self.cluster.as_mut() {
                    Some(c) => match c.parked[ci].get_mut(si).and_then(|q| q.pop_front()) {
                        Some(p) => {
                            c.waiting[ci] -= 1;
                            p
                        }
                        None => break,
                    },
                    None => return,
                };
                self.issue_op(ci, p.op, p.t0, p.due, now, p.phase);
            }
        }
    }

    /// A slot map read again may have given a parked op's slot to another node (a
    /// failover, a MOVED): such ops move to that node's queue, in their order.
    fn rehome_parked(&mut self, ci: usize, map: u64) {
        let moved = self.cluster.as_ref().map_or(false, |c| {
            c.parked[ci].iter().flatten().any(|p| p.map != map)
        });
        if !moved {
            return;
        }
        let queues = match self.cluster.as_mut() {
            Some(c) => std::mem::take(&mut c.parked[ci]),
            None => return,
        };
        let mut fresh: Vec<VecDeque<Parked>> = queues.iter().map(|_| VecDeque::new()).collect();
        for mut p in queues.into_iter().flatten() {
            if p.map != map {
                p.node = self.node_of_index(p.op.index);
                p.map = map;
            }
            while fresh.len() <= p.node {
                fresh.push(VecDeque::new()); // a node the map names before its connections
            }
            fresh[p.node].push_back(p);
        }
        if let Some(c) = self.cluster.as_mut() {
            c.parked[ci] = fresh;
        }
    }

    fn node_of_index(&mut self, index: u64) -> usize {
        let k = &self.order.keys;
        let key = workload::key_of(&self.keys, &mut self.key, &k.prefix, index, k.length);
        node_for(&self.cluster, &self.codec, key)
    }

    /// Ops drawn (and taken from the budget) but not sent yet, of `phase` (None: of any):
    /// the end of the load waits for them as for those in flight, and counts those of its
    /// phase never sent as abandoned.
    pub fn cluster_parked(&self, phase: Option<u32>) -> usize {
        let c = match &self.cluster {
            Some(c) => c,
            None => return 0,
        };
        c.parked
            .iter()
            .flatten()
            .flatten()
            .filter(|p| phase.map_or(true, |ph| p.phase == ph))
            .count()
    }

    /// A lost connection or a MOVED makes the slot map stale.
    pub fn cluster_stale(&mut self) {
        if let Some(c) = self.cluster.as_mut() {
            c.stale = true;
        }
    }

    /// Housekeeping: a stale slot map is read again (at most every REFRESH_GAP) from the
    /// first node that answers; then every client's pipeline is refilled.
    pub fn cluster_housekeeping(&mut self, now: u64) {
        let due = match self.cluster.as_ref() {
            Some(c) => c.stale && now.saturating_sub(c.refreshed_at) >= REFRESH_GAP,
            None => false,
        };
        if !due || self.mode == Mode::Idle || self.clients.is_empty() {
            return;
        }
        let (hello, hellos) = match self.cluster.as_ref() {
            Some(c) => (c.hello.clone(), c.hellos),
            None => return,
        };
        let addrs: Vec<SocketAddr> = self.clients[0].conns.iter().map(|k| k.addr).collect();
        // Nodes whose connections are up first: a dead node only costs a refused connect.
        let mut order: Vec<usize> = (0..addrs.len()).collect();
        order.sort_by_key(|&si| !self.clients[0].conns[si].connected);
        let mut got = None;
        for si in order {
            if let Ok(r) = fetch(addrs[si], &hello, hellos, self.tls.as_ref(), FETCH_TIMEOUT) {
                got = Some((r, addrs[si]));
                break;
            }
        }
        let now = now_ns();
        if let Some(c) = self.cluster.as_mut() {
            c.refreshed_at = now;
        }
        let (ranges, asked) = match got {
            Some(g) => g,
            None => return,
        };
        let applied = match self.cluster.as_mut() {
            Some(c) => c.apply(&ranges, asked),
            None => return,
        };
        if let Err(e) = applied {
            self.rec.error("cluster", &e);
            return;
        }
        let nodes = self
            .cluster
            .as_ref()
            .map(|c| c.nodes.clone())
            .unwrap_or_default();
        for addr in nodes {
            if let Err(e) = self.node_index(addr) {
                self.rec.error("cluster", &e);
            }
        }
        // A node without slots is not reconnected to; one that serves slots again is.
        for si in 0..self.clients[0].conns.len() {
            let serves = self.cluster.as_ref().map_or(true, |c| c.serves(si));
            for ci in 0..self.clients.len() {
                let k = &mut self.clients[ci].conns[si];
                if k.sock.is_none() {
                    if !serves {
                        k.retry_at = u64::MAX;
                    } else if k.retry_at == u64::MAX {
                        k.retry_at = now;
                    }
                }
            }
        }
        if let Some(c) = self.cluster.as_mut() {
            c.stale = false;
        }
        for ci in 0..self.clients.len() {
            self.refill(ci, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_redis_clusters() {
        // The examples of the Redis Cluster specification and redis-cli's CLUSTER KEYSLOT.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"bar"), 5061);
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        assert_eq!(slot_of(b"{user1000}.followers"), slot_of(b"user1000"));
        // An empty tag hashes the whole key; only the first braces count.
        assert_eq!(
            slot_of(b"foo{}{bar}"),
            (crc16(b"foo{}{bar}") as usize) % SLOTS
        );
        assert_eq!(slot_of(b"foo{{bar}}zap"), slot_of(b"{bar"));
        assert_eq!(slot_of(b"foo{bar}{zap}"), slot_of(b"bar"));
    }

    #[test]
    fn redirects_are_read_from_error_replies() {
        assert_eq!(
            redirect_of("redis: MOVED 3999 127.0.0.1:6381"),
            Some(Redirect {
                ask: false,
                slot: 3999,
                host: "127.0.0.1".into(),
                port: 6381
            })
        );
        let ask = redirect_of("redis: ASK 12 [::1]:7000").unwrap();
        assert!(ask.ask);
        assert_eq!((ask.slot, ask.host.as_str(), ask.port), (12, "::1", 7000));
        assert_eq!(redirect_of("redis: CLUSTERDOWN The cluster is down"), None);
        assert_eq!(redirect_of("redis: MOVED 99999 127.0.0.1:1"), None);
    }

    #[test]
    fn cluster_slots_replies_are_read_whole_or_not_at_all() {
        let reply = b"*2\r\n*3\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n\
*4\r\n:8192\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n*2\r\n$9\r\n127.0.0.1\r\n:7002\r\n";
        for cut in 0..reply.len() {
            assert_eq!(value(&reply[..cut]).unwrap(), None, "cut at {}", cut);
        }
        let (v, used) = value(reply).unwrap().unwrap();
        assert_eq!(used, reply.len());
        let r = ranges(v).unwrap();
        assert_eq!(r[0], (0, 8191, "127.0.0.1".to_string(), 7000));
        assert_eq!(r[1], (8192, 16383, String::new(), 7001));
        let asked: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        assert_eq!(
            node_addr("", 7001, asked, false).unwrap().to_string(),
            "127.0.0.1:7001"
        );
        assert!(node_addr("192.0.2.1", 7001, asked, false)
            .unwrap_err()
            .contains("not a loopback address"));
        let err = ranges(
            value(b"-ERR This instance has cluster support disabled\r\n")
                .unwrap()
                .unwrap()
                .0,
        )
        .unwrap_err();
        assert!(err.contains("is it a cluster node?"), "{}", err);
    }
}

//! Redis Cluster (`target.options.cluster = true`): one connection per node per client with
//! `pipeline` requests in flight on each, -MOVED (the slot map updated, a full refresh due,
//! the op retried) and -ASK (ASKING, then the op, on the node named). Both are counted
//! (`moved`, `ask`). Slots, redirections and CLUSTER SLOTS are read in slotmap.rs.
//!
//! The slot map is read at the step's start, and again, at most every `REFRESH_GAP`, after
//! a MOVED or a lost node. A node that serves no slot any more is no longer reconnected to.

use crate::client::Conn;
use crate::codec::Codec;
use crate::io::Mode;
use crate::order::StepOrder;
use crate::pacing::now_ns;
use crate::proto::Req;
use crate::resp::command;
use crate::slotmap::{fetch, node_addr, slot_of, Range, Redirect, SLOTS};
use crate::step::Run;
use crate::tls::TlsConfig;
use crate::workload::{self, Op};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

const NONE: u16 = u16::MAX;
/// Node connections a client may have: the token stride of a cluster step's clients.
pub const MAX_NODES: usize = 64;
const REFRESH_GAP: u64 = 100_000_000; // 100 ms between two full refreshes
const FETCH_TIMEOUT: Duration = Duration::from_millis(500);
/// A closed loop's parked ops per client are at most this many times `per_conn` x nodes
/// (see `Run::fill_batches`); an open loop's at most `per_conn` x nodes.
const DRAW_DEPTH: usize = 4;

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
    /// A closed loop writes to a node in whole batches of `per_conn`, as memtier
    /// --cluster-mode and redis-benchmark --cluster -P do: every op it draws waits in its
    /// node's queue, and a node's connection is written only once all replies of its last
    /// batch are in, never as a top-up onto a batch in flight (`Run::fill_batches`). With
    /// top-ups the client sent 0.083-0.088 segments per op where the nodes answered
    /// 0.069-0.071, each node read two of them at once and sent a pure ACK for
    /// 0.011-0.014 of its ops (`ss -ti`), and the nodes spent 1.3-1.5x the CPU per op
    /// they spend on batches of 16. An open loop sends as soon as there is room: its ops
    /// are due at their times.
    batches: bool,
    /// A closed loop with more than one op in flight per connection: batches to fill
    /// (`Run::cluster_batches`). At one in flight every write is one op whatever the
    /// client draws, and the plain draw-ahead of `cluster_blocked` serves: parking every
    /// op there cost 17% of the rate (6 A/B pairs, the nodes' CPU per GET 7.0-8.6 us
    /// against 6.2-7.5).
    whole: bool,
    /// By client and node: ops drawn for a node, oldest first, sent as it has room (a
    /// whole batch at once when its replies come back).
    parked: Vec<Vec<VecDeque<Parked>>>,
    /// By client: its ops parked over all nodes; it draws no more once they would fill
    /// every node's pipeline again (`per_conn` x nodes; `DRAW_DEPTH` times that in a
    /// closed loop).
    waiting: Vec<usize>,
    /// By client: the slot map its parked ops were last checked against (`rehome_parked`).
    homed: Vec<u64>,
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

/// Whether a node connection can take its next batch: connected, all replies in.
fn idle(k: &Conn) -> bool {
    k.connected && k.pending.is_empty()
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
        whole: !order.open_loop && order.pipeline > 1,
        parked: Vec::new(),
        waiting: Vec::new(),
        homed: Vec::new(),
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
    cluster.homed = vec![0; order.clients.len()];
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
        whole: false,
        parked: Vec::new(),
        waiting: Vec::new(),
        homed: Vec::new(),
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

    /// Whether the op may go to its node now: connected, with room in its pipeline (an
    /// open loop's; a closed loop's batches are written by `fill_batches`).
    pub fn node_ready(&self, ci: usize, si: usize) -> bool {
        let k = &self.clients[ci].conns[si];
        match &self.cluster {
            Some(c) => k.connected && k.pending.len() < c.per_conn,
            None => k.connected,
        }
    }

    /// A closed loop over a cluster draws ahead, bounded by its parked ops
    /// (`cluster_blocked`), not only until its connections are full.
    pub fn cluster_draws_ahead(&self) -> bool {
        self.mode == Mode::Load
            && self.replay.is_none()
            && self.cluster.as_ref().map_or(false, |c| c.batches)
    }

    /// Whether the client fills its nodes' batches from their queues (a pipelined closed
    /// loop over a cluster, not a replay): every op it draws is parked in its node's
    /// queue, and `fill_batches` writes them.
    pub fn cluster_batches(&self) -> bool {
        self.replay.is_none() && self.cluster.as_ref().map_or(false, |c| c.whole)
    }

    /// An op waits in its node's queue (every op when the client fills batches, else only
    /// when that node's connection is full or down), and the client draws on for its
    /// other nodes (memtier's per-shard key pools). The queue lets a node's ops gather while its batch is in flight and go
    /// out as one write when that batch comes back.
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

    /// Whether the client draws no more for now. An open loop, or one op in flight per
    /// connection, stops once its parked ops would fill every node's pipeline again. A
    /// pipelined closed loop draws while one of its nodes is idle (all replies in) with
    /// less than a batch in its queue, and stops at `DRAW_DEPTH` x `per_conn` x nodes
    /// parked ops (a bound for a node down or slow).
    ///
    /// Why it draws until the idle node has a whole batch: keys are drawn uniformly, yet
    /// every node takes one batch per round trip, so the nodes' queues drift apart as a
    /// random walk. Stopped at `per_conn` x nodes parked ops, a node whose queue had
    /// drifted low sent short batches: the nodes read 12.6-14.3 GETs per read at P=16
    /// against memtier's 16, and each extra read and write cost a node about 6.5 us.
    pub fn cluster_blocked(&self, ci: usize) -> bool {
        let c = match &self.cluster {
            Some(c) => c,
            None => return false,
        };
        let nodes = c.parked[ci].len();
        if !c.whole || !self.cluster_draws_ahead() {
            return c.waiting[ci] >= c.per_conn * nodes;
        }
        if c.waiting[ci] >= DRAW_DEPTH * c.per_conn * nodes {
            return true;
        }
        let queued = |si: usize| c.parked[ci].get(si).map_or(0, |q| q.len());
        !self.clients[ci]
            .conns
            .iter()
            .enumerate()
            .any(|(si, k)| idle(k) && queued(si) < c.per_conn)
    }

    /// Closed loop: write each idle node (all replies of its last batch in) its next batch
    /// from its queue: `per_conn` ops, or on the `last` pass (after the draws) fewer when
    /// that is all there is. A short batch waits while the client is at its bound of
    /// parked ops and another of its nodes has a batch in flight: that batch's return
    /// frees room to draw the rest, and a node with a short queue sends less often, which
    /// lets its queue catch up (the random walk of `cluster_blocked`). An op's latency
    /// runs from this send, as memtier and redis-benchmark time theirs: its wait in the
    /// queue is the client's routing.
    pub fn fill_batches(&mut self, ci: usize, now: u64, last: bool) {
        let (map, per_conn) = match self.cluster.as_ref() {
            Some(c) if c.waiting[ci] > 0 => (c.map, c.per_conn),
            _ => return,
        };
        self.rehome_parked(ci, map);
        let load = self.mode == Mode::Load;
        for si in 0..self.clients[ci].conns.len() {
            let conns = &self.clients[ci].conns;
            let (queued, full) = match self.cluster.as_ref() {
                Some(c) => (
                    c.parked[ci].get(si).map_or(0, |q| q.len()),
                    c.waiting[ci] >= DRAW_DEPTH * per_conn * c.parked[ci].len(),
                ),
                None => return,
            };
            if queued == 0 || !idle(&conns[si]) || queued < per_conn && !last {
                continue;
            }
            let busy = || conns.iter().any(|k| k.connected && !k.pending.is_empty());
            if queued < per_conn && load && full && busy() {
                continue; // held: see above
            }
            for _ in 0..queued.min(per_conn) {
                let p = match self.cluster.as_mut() {
                    Some(c) => match c.parked[ci][si].pop_front() {
                        Some(p) => {
                            c.waiting[ci] -= 1;
                            p
                        }
                        None => break,
                    },
                    None => return,
                };
                self.issue_op(ci, p.op, now, p.due, now, p.phase);
            }
        }
    }

    /// Open loop, or one op in flight per connection: send the ops parked for nodes that
    /// have room again (before drawing new ones), each in the phase it was drawn in; they
    /// were taken from the budget, so they go out after the load stops too. A closed
    /// loop's op is timed from this send (see `fill_batches`), an open loop's from its
    /// intended start.
    pub fn unpark_nodes(&mut self, ci: usize, now: u64) {
        if self.mode == Mode::Prefill {
            return;
        }
        let (map, closed) = match self.cluster.as_ref() {
            Some(c) if c.waiting[ci] > 0 => (c.map, c.batches),
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
                let t0 = if closed { now } else { p.t0 };
                self.issue_op(ci, p.op, t0, p.due, now, p.phase);
            }
        }
    }

    /// A slot map read again may have given a parked op's slot to another node (a
    /// failover, a MOVED): such ops move to that node's queue, in their order.
    fn rehome_parked(&mut self, ci: usize, map: u64) {
        let moved = match self.cluster.as_mut() {
            // Looked through once per change of the map, not at every refill.
            Some(c) if c.homed[ci] != map => {
                c.homed[ci] = map;
                c.parked[ci].iter().flatten().any(|p| p.map != map)
            }
            _ => false,
        };
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

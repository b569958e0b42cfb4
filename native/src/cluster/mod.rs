//! Redis Cluster (`target.options.cluster = true`): one connection per node per client with
//! `pipeline` requests in flight on each, -MOVED (the slot map updated, a full refresh due,
//! the op retried) and -ASK (ASKING, then the op, on the node named). Both are counted
//! (`moved`, `ask`). Slots, redirections and CLUSTER SLOTS are read in `slots.rs`; the
//! step's side (sending, batches, refreshes on the loop) is `run/cluster.rs`.
//!
//! The slot map is read at the step's start, and again, at most every `REFRESH_GAP`, after
//! a MOVED or a lost node. A node that serves no slot any more is no longer reconnected to.

pub mod slots;

use crate::net::conn::Conn;
use crate::net::placement::Rendezvous;
use crate::order::{Protocol, StepOrder};
use crate::pacing::now_ns;
use crate::protocols::Codec;
use crate::tls::TlsConfig;
use crate::workload::Op;
use slots::{fetch, node_addr, slot_of, Range, Redirect, SLOTS};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

const NONE: u16 = u16::MAX;
/// Node connections a client may have: the token stride of a cluster step's clients.
pub const MAX_NODES: usize = 64;
const REFRESH_GAP: u64 = 100_000_000; // 100 ms between two full refreshes
/// How long a refresh waits for a node's CLUSTER SLOTS.
pub const FETCH_TIMEOUT: Duration = Duration::from_millis(500);
/// A closed loop's parked ops per client are at most this many times `per_conn` x nodes
/// (see `Cluster::batch_of`); an open loop's at most `per_conn` x nodes.
const DRAW_DEPTH: usize = 4;

/// An op drawn for a node whose connection was full or down, sent once it has room.
pub struct Parked {
    pub op: Op,
    pub t0: u64,
    pub due: u64,
    pub phase: u32,
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
    /// batch are in, never as a top-up onto a batch in flight (`batch_of`). With
    /// top-ups the client sent 0.083-0.088 segments per op where the nodes answered
    /// 0.069-0.071, each node read two of them at once and sent a pure ACK for
    /// 0.011-0.014 of its ops (`ss -ti`), and the nodes spent 1.3-1.5x the CPU per op
    /// they spend on batches of 16. An open loop sends as soon as there is room: its ops
    /// are due at their times.
    pub batches: bool,
    /// A closed loop with more than one op in flight per connection: batches to fill
    /// (`run/cluster.rs`). At one in flight every write is one op whatever the client
    /// draws, and the plain draw-ahead of `blocked` serves: parking every op there cost
    /// 17% of the rate (6 A/B pairs, the nodes' CPU per GET 7.0-8.6 us against 6.2-7.5).
    pub whole: bool,
    /// By client and node: ops drawn for a node, oldest first, sent as it has room (a
    /// whole batch at once when its replies come back).
    parked: Vec<Vec<VecDeque<Parked>>>,
    /// By client: its ops parked over all nodes; it draws no more once they would fill
    /// every node's pipeline again (`per_conn` x nodes; `DRAW_DEPTH` times that in a
    /// closed loop).
    waiting: Vec<usize>,
    /// By client: the slot map its parked ops were last checked against (`rehome`).
    homed: Vec<u64>,
    /// Counts changes of the slot map (a MOVED, a refresh).
    map: u64,
    stale: bool,
    refreshed_at: u64,
    hello: Vec<u8>,
    hellos: usize,
    pub allow_remote: bool,
}

impl Cluster {
    fn empty(hello: Vec<u8>, hellos: usize, allow_remote: bool) -> Cluster {
        Cluster {
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
        }
    }

    /// The slot map read again: each range's node (added when new), the map's count moved on.
    pub fn apply(&mut self, ranges: &[Range], asked: SocketAddr) -> Result<(), String> {
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
    pub fn serves(&self, si: usize) -> bool {
        self.slots.iter().any(|&n| n as usize == si)
    }

    /// The node of a key's slot (0 when no node serves it).
    #[inline]
    pub fn node_of(&self, key: &[u8]) -> usize {
        match self.slots[slot_of(key)] {
            NONE => 0,
            n => n as usize,
        }
    }

    /// A MOVED: the slot is node `si`'s now, and the whole map is read again soon.
    pub fn moved(&mut self, slot: usize, si: usize) {
        self.slots[slot] = si as u16;
        self.map += 1;
        self.stale = true;
    }

    /// A node the clients connect to from now on: a queue for each client's ops to it.
    pub fn add_node(&mut self, addr: SocketAddr) {
        if !self.nodes.contains(&addr) {
            self.nodes.push(addr);
        }
        for parked in self.parked.iter_mut() {
            parked.push(VecDeque::new());
        }
    }

    /// Whether an op may go to node connection `k` now: connected, with room in its
    /// pipeline (an open loop's; a closed loop's batches are written whole).
    #[inline]
    pub fn ready(&self, k: &Conn) -> bool {
        k.connected && k.pending.len() < self.per_conn
    }

    /// Park an op of client `ci` in node `si`'s queue.
    pub fn park(&mut self, ci: usize, si: usize, op: Op, t0: u64, due: u64, phase: u32) {
        let map = self.map;
        self.parked[ci][si].push_back(Parked {
            op,
            t0,
            due,
            phase,
            node: si,
            map,
        });
        self.waiting[ci] += 1;
    }

    /// The oldest op parked for client `ci` on node `si`.
    pub fn unpark(&mut self, ci: usize, si: usize) -> Option<Parked> {
        let p = self.parked[ci].get_mut(si)?.pop_front()?;
        self.waiting[ci] -= 1;
        Some(p)
    }

    /// Whether client `ci` has ops parked.
    pub fn has_parked(&self, ci: usize) -> bool {
        self.waiting[ci] > 0
    }

    /// Whether the client draws no more for now. An open loop, or one op in flight per
    /// connection, stops once its parked ops would fill every node's pipeline again. A
    /// pipelined closed loop (`draws_ahead`) draws while one of its nodes is idle (all
    /// replies in) with less than a batch in its queue, and stops at `DRAW_DEPTH` x
    /// `per_conn` x nodes parked ops (a bound for a node down or slow).
    ///
    /// Why it draws until the idle node has a whole batch: keys are drawn uniformly, yet
    /// every node takes one batch per round trip, so the nodes' queues drift apart as a
    /// random walk. Stopped at `per_conn` x nodes parked ops, a node whose queue had
    /// drifted low sent short batches: the nodes read 12.6-14.3 GETs per read at P=16
    /// against memtier's 16, and each extra read and write cost a node about 6.5 us.
    pub fn blocked(&self, ci: usize, conns: &[Conn], draws_ahead: bool) -> bool {
        let nodes = self.parked[ci].len();
        if !self.whole || !draws_ahead {
            return self.waiting[ci] >= self.per_conn * nodes;
        }
        if self.waiting[ci] >= DRAW_DEPTH * self.per_conn * nodes {
            return true;
        }
        let queued = |si: usize| self.parked[ci].get(si).map_or(0, |q| q.len());
        !conns
            .iter()
            .enumerate()
            .any(|(si, k)| idle(k) && queued(si) < self.per_conn)
    }

    /// Closed loop: how many of its parked ops client `ci` writes to node `si` now, as a
    /// batch: `per_conn` once the node is idle (all replies of its last batch in), or on
    /// the `last` pass (after the draws) fewer when that is all there is. A short batch
    /// waits while the client is at its bound of parked ops and another of its nodes has
    /// a batch in flight (`loading`): that batch's return frees room to draw the rest,
    /// and a node with a short queue sends less often, which lets its queue catch up (the
    /// random walk of `blocked`).
    pub fn batch_of(
        &self,
        ci: usize,
        si: usize,
        conns: &[Conn],
        last: bool,
        loading: bool,
    ) -> usize {
        let queued = self.parked[ci].get(si).map_or(0, |q| q.len());
        let per_conn = self.per_conn;
        if queued == 0 || !idle(&conns[si]) || queued < per_conn && !last {
            return 0;
        }
        let full = self.waiting[ci] >= DRAW_DEPTH * per_conn * self.parked[ci].len();
        let busy = || conns.iter().any(|k| k.connected && !k.pending.is_empty());
        if queued < per_conn && loading && full && busy() {
            return 0; // held: see above
        }
        queued.min(per_conn)
    }

    /// A slot map read again may have given a parked op's slot to another node (a
    /// failover, a MOVED): such ops move to that node's queue, in their order. `key` spells
    /// a key index (called only for the ops to move, once per change of the map).
    pub fn rehome(&mut self, ci: usize, mut key: impl FnMut(u64) -> Vec<u8>) {
        let map = self.map;
        // Looked through once per change of the map, not at every refill.
        if self.homed[ci] == map {
            return;
        }
        self.homed[ci] = map;
        if !self.parked[ci].iter().flatten().any(|p| p.map != map) {
            return;
        }
        let queues = std::mem::take(&mut self.parked[ci]);
        let mut fresh: Vec<VecDeque<Parked>> = queues.iter().map(|_| VecDeque::new()).collect();
        for mut p in queues.into_iter().flatten() {
            if p.map != map {
                p.node = self.node_of(&key(p.op.index));
                p.map = map;
            }
            while fresh.len() <= p.node {
                fresh.push(VecDeque::new()); // a node the map names before its connections
            }
            fresh[p.node].push_back(p);
        }
        self.parked[ci] = fresh;
    }

    /// Ops drawn (and taken from the budget) but not sent yet, of `phase` (None: of any):
    /// the end of the load waits for them as for those in flight, and counts those of its
    /// phase never sent as abandoned.
    pub fn parked(&self, phase: Option<u32>) -> usize {
        self.parked
            .iter()
            .flatten()
            .flatten()
            .filter(|p| phase.map_or(true, |ph| p.phase == ph))
            .count()
    }

    /// A lost connection or a MOVED makes the slot map stale.
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// Whether the slot map is to be read again now (stale, and not read for `REFRESH_GAP`).
    pub fn refresh_due(&self, now: u64) -> bool {
        self.stale && now.saturating_sub(self.refreshed_at) >= REFRESH_GAP
    }

    /// Read the slot map again from the first of `addrs` that answers (those in `order`
    /// first); whether one did. A map read is applied (`apply`) by the caller.
    pub fn refetch(
        &mut self,
        addrs: &[SocketAddr],
        tls: Option<&TlsConfig>,
    ) -> Option<(Vec<Range>, SocketAddr)> {
        let mut got = None;
        for &addr in addrs {
            if let Ok(r) = fetch(addr, &self.hello, self.hellos, tls, FETCH_TIMEOUT) {
                got = Some((r, addr));
                break;
            }
        }
        self.refreshed_at = now_ns();
        got
    }

    /// The slot map is current again.
    pub fn refreshed(&mut self) {
        self.stale = false;
    }
}

/// Whether a node connection can take its next batch: connected, all replies in.
fn idle(k: &Conn) -> bool {
    k.connected && k.pending.is_empty()
}

/// The connection a key goes to: its slot's node in a cluster, else its server by the
/// target's placement.
#[inline]
pub fn node_for(cluster: &Option<Cluster>, placement: &Rendezvous, key: &[u8]) -> usize {
    match cluster {
        Some(c) => c.node_of(key),
        None => placement.index(key),
    }
}

/// For a cluster target: its slot map, read from the node the URL names, and the nodes'
/// addresses (every client opens one connection to each). Otherwise None and `addrs`.
pub fn discover(
    order: &StepOrder,
    codec: &Codec,
    addrs: Vec<SocketAddr>,
) -> Result<(Option<Cluster>, Vec<SocketAddr>), String> {
    let target = &order.target;
    if !target.cluster {
        return Ok((None, addrs));
    }
    if target.protocol != Protocol::Resp {
        return Err(format!(
            "{}: a Redis Cluster speaks RESP; this target speaks {}",
            target.origin,
            target.protocol.name()
        ));
    }
    let mut hello = Vec::new();
    let hellos = codec.hello(&mut hello);
    let tls = crate::tls::config_for(target.tls.as_ref())?;
    let timeout = Duration::from_nanos(order.connect_timeout_ns.max(1_000_000));
    let asked = addrs[0];
    let ranges = fetch(asked, &hello, hellos, tls.as_ref(), timeout)?;
    let mut cluster = Cluster::empty(hello, hellos, target.allow_remote);
    cluster.per_conn = order.pipeline;
    cluster.batches = !order.open_loop;
    cluster.whole = !order.open_loop && order.pipeline > 1;
    cluster.refreshed_at = now_ns();
    cluster.apply(&ranges, asked)?;
    if cluster.nodes.is_empty() {
        return Err(format!(
            "{}: the cluster at {} serves no slot yet (cluster_state not ok?)",
            target.origin, asked
        ));
    }
    let clients = order.clients.len();
    cluster.parked = (0..clients)
        .map(|_| (0..cluster.nodes.len()).map(|_| VecDeque::new()).collect())
        .collect();
    cluster.waiting = vec![0; clients];
    cluster.homed = vec![0; clients];
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
    let mut cluster = Cluster::empty(hello, hellos, allow_remote);
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

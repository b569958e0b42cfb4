//! The step's side of a Redis Cluster (`cluster/`): a redirected op sent again, the node
//! connections added as the slot map names new nodes, parked ops sent as their nodes have
//! room (a closed loop's in whole batches), and the slot map read again when stale.

use super::{Mode, Run};
use crate::cluster::slots::{node_addr, Redirect};
use crate::cluster::MAX_NODES;
use crate::net::conn::{Conn, Pending};
use crate::pacing::now_ns;
use crate::workload::keys::key_of;
use crate::workload::Op;
use std::net::SocketAddr;

impl<'a> Run<'a> {
    /// A reply that redirects the op: counted, the slot map updated (MOVED), and the op
    /// sent again on the node named (after ASKING for ASK). Never an error, never lost.
    pub(super) fn redirect(&mut self, ci: usize, p: Pending, r: Redirect, now: u64) {
        let in_phase = p.phase == self.phase.index && self.phase.mode != Mode::Prefill;
        if in_phase {
            if r.ask {
                self.rec.ask += 1;
            } else {
                self.rec.moved += 1;
            }
        }
        let asked = self.net.clients[ci].conns[0].addr;
        let allow_remote = self.order.target.allow_remote;
        let si = match node_addr(&r.host, r.port, asked, allow_remote)
            .and_then(|addr| self.node_index(addr))
        {
            Ok(si) => si,
            Err(e) => return self.redirect_failed(ci, &p, "cluster", &e, now),
        };
        if let Some(c) = self.cluster.as_mut() {
            if !r.ask {
                c.moved(r.slot, si);
            }
        }
        if self.net.clients[ci].conns[si].sock.is_none() {
            let m = format!(
                "redirected to {}, which is down",
                self.net.clients[0].conns[si].addr
            );
            return self.redirect_failed(ci, &p, "connection", &m, now);
        }
        // Sent again under the key, the value and a cas's token it was sent with.
        self.resend(ci, si, p, (r.ask, false), now);
    }

    fn redirect_failed(&mut self, ci: usize, p: &Pending, kind: &str, message: &str, now: u64) {
        let pipeline = self.order.pipeline;
        self.net.clients[ci].release(1, now, pipeline);
        if p.phase == self.phase.index && self.phase.mode != Mode::Prefill {
            self.rec.error(kind, message);
        }
    }

    /// The connection index of a node, added (with a connection per client) when new.
    fn node_index(&mut self, addr: SocketAddr) -> Result<usize, String> {
        if let Some(i) = self.net.clients[0]
            .conns
            .iter()
            .position(|k| k.addr == addr)
        {
            return Ok(i);
        }
        let n = self.net.clients[0].conns.len();
        if n >= MAX_NODES {
            return Err(format!(
                "the cluster has more than {} nodes; {} not used",
                MAX_NODES, addr
            ));
        }
        if let Some(c) = self.cluster.as_mut() {
            c.add_node(addr);
            self.order.pipeline = c.per_conn * (n + 1);
        }
        for ci in 0..self.net.clients.len() {
            self.net.clients[ci].conns.push(Conn::new(addr));
            if let Err(e) = self.open(ci, n) {
                self.drop_conn(ci, n, "connection", &e);
            }
        }
        Ok(n)
    }

    /// Whether the op may go to its node now: connected, with room in its pipeline (an
    /// open loop's; a closed loop's batches are written by `fill_batches`).
    pub(super) fn node_ready(&self, ci: usize, si: usize) -> bool {
        let k = &self.net.clients[ci].conns[si];
        match &self.cluster {
            Some(c) => c.ready(k),
            None => k.connected,
        }
    }

    /// A closed loop over a cluster draws ahead, bounded by its parked ops
    /// (`cluster_blocked`), not only until its connections are full.
    pub(super) fn cluster_draws_ahead(&self) -> bool {
        self.phase.mode == Mode::Load
            && self.replay.is_none()
            && self.cluster.as_ref().map_or(false, |c| c.batches)
    }

    /// Whether the client fills its nodes' batches from their queues (a pipelined closed
    /// loop over a cluster, not a replay): every op it draws is parked in its node's
    /// queue, and `fill_batches` writes them.
    pub(super) fn cluster_batches(&self) -> bool {
        self.replay.is_none() && self.cluster.as_ref().map_or(false, |c| c.whole)
    }

    /// An op waits in its node's queue (every op when the client fills batches, else only
    /// when that node's connection is full or down), and the client draws on for its
    /// other nodes (memtier's per-shard key pools). The queue lets a node's ops gather
    /// while its batch is in flight and go out as one write when that batch comes back.
    pub(super) fn park_on_node(&mut self, ci: usize, op: Op, t0: u64, due: u64) -> bool {
        let si = self.node_of_index(op.index);
        let phase = self.phase.index;
        match self.cluster.as_mut() {
            Some(c) => {
                c.park(ci, si, op, t0, due, phase);
                true
            }
            None => false,
        }
    }

    /// Whether the client draws no more for now (`Cluster::blocked`).
    pub(super) fn cluster_blocked(&self, ci: usize) -> bool {
        match &self.cluster {
            Some(c) => c.blocked(ci, &self.net.clients[ci].conns, self.cluster_draws_ahead()),
            None => false,
        }
    }

    /// Closed loop: write each idle node its next batch from its queue
    /// (`Cluster::batch_of`). An op's latency runs from this send, as memtier and
    /// redis-benchmark time theirs: its wait in the queue is the client's routing.
    pub(super) fn fill_batches(&mut self, ci: usize, now: u64, last: bool) {
        if !self.rehome_parked(ci) {
            return;
        }
        let loading = self.phase.mode == Mode::Load;
        for si in 0..self.net.clients[ci].conns.len() {
            let n = match self.cluster.as_ref() {
                Some(c) => c.batch_of(ci, si, &self.net.clients[ci].conns, last, loading),
                None => return,
            };
            for _ in 0..n {
                let p = match self.cluster.as_mut().and_then(|c| c.unpark(ci, si)) {
                    Some(p) => p,
                    None => break,
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
    pub(super) fn unpark_nodes(&mut self, ci: usize, now: u64) {
        if self.phase.mode == Mode::Prefill || !self.rehome_parked(ci) {
            return;
        }
        let closed = self.cluster.as_ref().map_or(false, |c| c.batches);
        for si in 0..self.net.clients[ci].conns.len() {
            while self.node_ready(ci, si) {
                let p = match self.cluster.as_mut().and_then(|c| c.unpark(ci, si)) {
                    Some(p) => p,
                    None => break,
                };
                let t0 = if closed { now } else { p.t0 };
                self.issue_op(ci, p.op, t0, p.due, now, p.phase);
            }
        }
    }

    /// Whether the client has ops parked, each moved to its node under the current slot
    /// map first (`Cluster::rehome`).
    fn rehome_parked(&mut self, ci: usize) -> bool {
        let c = match self.cluster.as_mut() {
            Some(c) if c.has_parked(ci) => c,
            _ => return false,
        };
        let (keys, k) = (&mut self.keys, &self.order.keys);
        c.rehome(ci, |index| {
            key_of(&keys.table, &mut keys.buf, &k.prefix, index, k.length).to_vec()
        });
        true
    }

    /// Ops drawn (and taken from the budget) but not sent yet, of `phase` (None: of any).
    pub(super) fn cluster_parked(&self, phase: Option<u32>) -> usize {
        self.cluster.as_ref().map_or(0, |c| c.parked(phase))
    }

    /// Housekeeping: a stale slot map is read again (at most every REFRESH_GAP) from the
    /// first node that answers; then every client's pipeline is refilled.
    pub(super) fn cluster_housekeeping(&mut self, now: u64) {
        let due = self.cluster.as_ref().map_or(false, |c| c.refresh_due(now));
        if !due || self.phase.mode == Mode::Idle || self.net.clients.is_empty() {
            return;
        }
        // Nodes whose connections are up first: a dead node only costs a refused connect.
        let mut conns: Vec<&Conn> = self.net.clients[0].conns.iter().collect();
        conns.sort_by_key(|k| !k.connected);
        let addrs: Vec<SocketAddr> = conns.iter().map(|k| k.addr).collect();
        let tls = self.net.tls.as_ref();
        let got = match self.cluster.as_mut() {
            Some(c) => c.refetch(&addrs, tls),
            None => return,
        };
        let (ranges, asked) = match got {
            Some(g) => g,
            None => return,
        };
        let applied = match self.cluster.as_mut() {
            Some(c) => c.apply(&ranges, asked).map(|_| c.nodes.clone()),
            None => return,
        };
        let nodes = match applied {
            Ok(nodes) => nodes,
            Err(e) => return self.rec.error("cluster", &e),
        };
        for addr in nodes {
            if let Err(e) = self.node_index(addr) {
                self.rec.error("cluster", &e);
            }
        }
        let now = now_ns();
        self.reconnect_serving(now);
        if let Some(c) = self.cluster.as_mut() {
            c.refreshed();
        }
        for ci in 0..self.net.clients.len() {
            self.refill(ci, now);
        }
    }

    /// A node without slots is not reconnected to; one that serves slots again is.
    fn reconnect_serving(&mut self, now: u64) {
        for si in 0..self.net.clients[0].conns.len() {
            let serves = self.cluster.as_ref().map_or(true, |c| c.serves(si));
            for c in self.net.clients.iter_mut() {
                let k = &mut c.conns[si];
                if k.sock.is_none() {
                    if !serves {
                        k.retry_at = u64::MAX;
                    } else if k.retry_at == u64::MAX {
                        k.retry_at = now;
                    }
                }
            }
        }
    }
}

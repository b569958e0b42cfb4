//! What a client sends next and what a reply counts as: the pipeline refilled closed
//! loop at once or open loop as its schedule allows, each op taken from the phase budget,
//! each request queued on the connection its key goes to.

use super::{Mode, Run};
use crate::cluster::node_for;
use crate::net::conn::Pending;
use crate::order::Keys as KeysOrder;
use crate::protocols::wire::Req;
use crate::trace::replay::Replay;
use crate::trace::replay::INDEX_KEY;
use crate::workload::keys::{key_of, KeyTable};
use crate::workload::Op;

impl<'a> Run<'a> {
    /// Queue one request on the connection its key belongs to (written by `refill`).
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        ci: usize,
        req: Req,
        index: u64,
        size: usize,
        ttl: Option<f64>,
        t0: u64,
        phase: u32,
        aside: bool,
        hot: bool,
    ) {
        let trace = std::mem::take(&mut self.keys.next_trace); // a replayed op (replay.rs)
        let value = if req.carries_value() && req != Req::Publish {
            self.keys.values.value(index, size)
        } else {
            &[][..]
        };
        let (key, value, size) = if req == Req::Publish {
            // A channel and a message stamped now (pubsub/) in place of key and value.
            let (channel, message) = self.pubsub.stamped(index, crate::pacing::now_ns());
            (channel, message, message.len())
        } else {
            let k = &self.order.keys;
            let buf = &mut self.keys.buf;
            let key = op_key(&mut self.replay, &self.keys.table, buf, k, index, trace);
            (key, value, size)
        };
        // A cas sends the token its key's last gets brought (tokens.rs).
        let token = if req == Req::Cas {
            self.tokens.take(key)
        } else {
            None
        };
        let si = node_for(&self.cluster, &self.net.placement, key);
        let k = &mut self.net.clients[ci].conns[si];
        let idle = k.pending.is_empty();
        k.load_scripts_for(&self.codec, req);
        let token = token.map(Vec::into_boxed_slice);
        let sent = token.as_deref().unwrap_or(&[]);
        if !self.codec.encode(&mut k.out, req, key, value, ttl, sent) {
            // An HTTP delete without a template: counted, never sent.
            self.net.clients[ci].release(1, t0, self.order.pipeline);
            if phase == self.phase.index {
                let why = if req == Req::Delete {
                    "no delete template: set target.options.delete, e.g. 'DELETE /?key={key}'"
                } else {
                    "this protocol has no conditional writes or gets"
                };
                self.rec.error("unsupported", why);
            }
            return;
        }
        if idle {
            k.progress = t0.max(k.progress);
        }
        k.pending.push_back(Pending {
            req,
            aside,
            index,
            size: size as u32,
            ttl,
            t0,
            phase,
            hot,
            trace,
            token,
        });
    }

    /// Take one op from the phase budget; false: do not issue it.
    pub fn reserve(&mut self, now: u64) -> bool {
        match self.phase.remaining.as_mut() {
            None => true,
            Some(r) => {
                *r -= 1;
                if *r == 0 {
                    self.phase.over = true;
                    self.phase.spent_at = now;
                }
                *r >= 0 || !self.phase.budget_stops
            }
        }
    }

    /// Fill a client's pipeline: closed loop at once, open loop as the schedule allows.
    pub fn refill(&mut self, ci: usize, now: u64) {
        // A pipelined closed loop over a cluster parks every op it draws and writes its
        // nodes whole batches from their queues once drawn (cluster.rs).
        let batches = self.cluster_batches();
        if batches {
            self.fill_batches(ci, now, false);
        } else {
            self.unpark_nodes(ci, now);
        }
        let ahead = self.cluster_draws_ahead();
        // A pipelined closed loop refills once half its pipeline is free, in one write:
        // refilled after every reply, a fast client's one-request writes reached memcached
        // while it still wrote that connection's replies, and it took them in (the socket's
        // backlog) at 0.3-0.6 µs of its CPU per GET (h32's note).
        // Not over a cluster or a trace, whose ops may wait for their node or key. What is
        // queued already (a cache-aside miss's set) is written all the same below: held
        // back, a pipeline of misses waited for its own unsent sets until the phase ended.
        let depth = self.order.pipeline;
        let plain = self.cluster.is_none() && self.replay.is_none();
        let held = depth > 1
            && plain
            && !self.order.open_loop
            && self.net.clients[ci].inflight > depth / 2;
        loop {
            let c = &self.net.clients[ci];
            if held
                || c.inflight >= self.order.pipeline && !ahead
                || c.conns.iter().any(|k| !k.connected) && c.conns.len() == 1
            {
                break;
            }
            let sent = match self.phase.mode {
                Mode::Idle => false,
                Mode::Prefill => self.prefill_next(ci, now),
                Mode::Load => self.load_next(ci, now, batches),
            };
            if !sent {
                break;
            }
        }
        if batches {
            self.fill_batches(ci, now, true);
        }
        // One write per connection for everything queued (a cache-aside set included).
        for si in 0..self.net.clients[ci].conns.len() {
            let k = &self.net.clients[ci].conns[si];
            if k.out.len() > k.out_pos {
                self.flush(ci, si);
            }
        }
    }

    /// Queue the set of the next key to prefill; false when none is left.
    fn prefill_next(&mut self, ci: usize, now: u64) -> bool {
        let index = match self.prefill.queue.pop_front() {
            Some(i) => i,
            None => return false,
        };
        let size = self
            .prefill
            .sizes
            .as_mut()
            .map(|s| s.next_size())
            .unwrap_or(0);
        self.net.clients[ci].inflight += 1;
        self.send(ci, Req::Set, index, size, None, now, 0, false, false);
        true
    }

    /// Queue the client's next op when its schedule and the budget allow; false if not.
    fn load_next(&mut self, ci: usize, now: u64, batches: bool) -> bool {
        if self.cluster_blocked(ci) {
            return false; // an op waits for its cluster node's place (cluster.rs)
        }
        if self.replay.is_some() {
            return self.replay_next(ci, now); // the trace's next request (replay.rs)
        }
        let due_before = self.phase.due_before;
        let c = &mut self.net.clients[ci];
        // Open loop: the latency of an op runs from its intended start when the client was
        // busy then (coordinated omission corrected), but never before its run of
        // back-to-back ops began; else from the send, which begins a run: a late timer is
        // the generator's lateness, shown in the send lag (docs/frames.md, "Latency").
        let (t0, due) = match c.schedule.as_mut() {
            Some(s) => {
                if s.next > now || s.next >= due_before {
                    return false;
                }
                let due = s.take();
                let t0 = if c.free_at > due {
                    due.max(c.run_began)
                } else {
                    c.run_began = now;
                    now
                };
                (t0, due)
            }
            None => (now, now),
        };
        let op = match c.parked.take() {
            Some(op) => op,
            None => {
                if !self.reserve(now) {
                    self.phase.mode = Mode::Idle;
                    return false;
                }
                self.net.clients[ci].stream.next_op()
            }
        };
        if batches {
            // A pipelined closed loop over a cluster: the op waits for its node's batch.
            return self.park_on_node(ci, op, t0, due);
        }
        if self.net.clients[ci].conns.len() > 1 && !self.server_up(ci, &op) {
            if self.cluster.is_some() {
                // Its node's connection is full or down: the next op may go to another.
                return self.park_on_node(ci, op, t0, due);
            }
            self.net.clients[ci].parked = Some(op);
            return false;
        }
        // An op due before the measured phase began is the warm-up's backlog: recorded in
        // no phase, as the phase's offered count leaves it out (else "issued 103%").
        let phase = if self.phase.measuring && due < self.phase.begin {
            0
        } else {
            self.phase.index
        };
        self.issue_op(ci, op, t0, due, now, phase);
        true
    }

    /// Send a drawn op of `phase`: its send lag, its kind, its trace line.
    pub fn issue_op(&mut self, ci: usize, op: Op, t0: u64, due: u64, now: u64, phase: u32) {
        let c = &mut self.net.clients[ci];
        if c.schedule.is_some() && phase == self.phase.index {
            self.rec.lag(now - due);
        }
        let hot = op.index < c.stream.hot_end;
        c.inflight += 1;
        // A mix weighs only the codes of ops this engine runs (order/ops.rs).
        let (req, aside) = self
            .order
            .ops
            .action(op.code)
            .map_or((Req::Delete, false), |a| (a.req, a.aside));
        if matches!(req, Req::Get | Req::Set | Req::Publish) {
            if let Some(trace) = self.capture.as_mut() {
                trace.add(self.phase.measuring, now, op.index, op.size as u64);
            }
        }
        self.send(ci, req, op.index, op.size, op.ttl, t0, phase, aside, hot);
    }

    /// The key of a request sent under `index` or a replay's handle `trace`
    /// (`Pending::trace`), as `send` writes it.
    pub(super) fn key_bytes(&mut self, index: u64, trace: u32) -> Vec<u8> {
        let k = &self.order.keys;
        let buf = &mut self.keys.buf;
        op_key(&mut self.replay, &self.keys.table, buf, k, index, trace).to_vec()
    }

    /// Whether the connection the op's key goes to is up.
    fn server_up(&mut self, ci: usize, op: &Op) -> bool {
        let si = self.node_of_index(op.index);
        self.node_ready(ci, si)
    }

    /// The connection (server, or cluster node) the key of `index` goes to.
    pub(super) fn node_of_index(&mut self, index: u64) -> usize {
        let k = &self.order.keys;
        let key = key_of(
            &self.keys.table,
            &mut self.keys.buf,
            &k.prefix,
            index,
            k.length,
        );
        node_for(&self.cluster, &self.net.placement, key)
    }
}

/// The key of a request (not a publish's channel): a replayed key of its own bytes
/// (`trace` above INDEX_KEY), a replayed key under its index (formatted once per slot,
/// trace/keys.rs), or the workload's key of `index`.
pub(super) fn op_key<'a>(
    replay: &'a mut Option<Replay>,
    table: &'a Option<KeyTable>,
    buf: &'a mut Vec<u8>,
    k: &KeysOrder,
    index: u64,
    trace: u32,
) -> &'a [u8] {
    if trace > INDEX_KEY {
        replay.as_ref().expect("a replay step").key_of(trace)
    } else if trace == INDEX_KEY {
        replay.as_mut().expect("a replay step").index_key(index)
    } else {
        key_of(table, buf, &k.prefix, index, k.length)
    }
}

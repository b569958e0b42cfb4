//! What a client sends next and what a reply counts as: the pipeline refilled closed
//! loop at once or open loop as its schedule allows, each op taken from the phase budget,
//! each reply recorded under its kind, a cache-aside miss filled.

use crate::client::Pending;
use crate::io::Mode;
use crate::order::Action;
use crate::proto::{Reply, Req};
use crate::step::Run;
use crate::workload;

impl<'a> Run<'a> {
    pub fn answered(&mut self, ci: usize, p: Pending, reply: Reply, value_len: usize, now: u64) {
        if let (Reply::Failed(_, msg), Some(_)) = (&reply, &self.cluster) {
            if let Some(r) = crate::slotmap::redirect_of(msg) {
                return self.redirect(ci, p, r, now); // MOVED or ASK: sent again (cluster.rs)
            }
        }
        if p.trace != 0 {
            self.replay_reply(&p, &reply); // a replayed op (replay.rs)
        }
        let in_phase = p.phase == self.phase && self.mode != Mode::Prefill;
        let pipeline = self.order.pipeline;
        let c = &mut self.clients[ci];
        match (p.req, reply) {
            (_, Reply::Failed(kind, msg)) => {
                c.release(1, now, pipeline);
                if self.mode == Mode::Prefill {
                    self.prefill_error.get_or_insert(msg);
                } else if in_phase {
                    self.rec.error(&kind, &msg);
                }
            }
            (Req::Get, reply) => {
                let hit = matches!(reply, Reply::Hit { .. });
                self.got(ci, &p, hit, in_phase, value_len, now);
            }
            (Req::Set, _) => {
                c.release(1, now, pipeline);
                if in_phase {
                    self.rec.latency(self.kinds.set, p.t0, now);
                    self.rec.bytes_out += p.size as u64;
                }
            }
            (Req::Delete, _) => {
                c.release(1, now, pipeline);
                if in_phase {
                    self.rec.latency(self.kinds.delete, p.t0, now);
                }
            }
            (Req::Publish, _) => {
                c.inflight -= 1;
                if in_phase {
                    let expected = self.pubsub.per_channel();
                    let r = &mut self.rec;
                    r.latency(self.kinds.publish, p.t0, now);
                    r.bytes_out += p.size as u64;
                    r.published += 1;
                    r.expected += expected;
                }
            }
            (Req::Hello, _) => {}
        }
    }

    /// A get answered: counted when in the phase (hit or miss, hot or not), then a
    /// cache-aside miss filled, else the client's pipeline slot freed.
    #[inline]
    fn got(
        &mut self,
        ci: usize,
        p: &Pending,
        hit: bool,
        in_phase: bool,
        value_len: usize,
        now: u64,
    ) {
        if in_phase {
            let r = &mut self.rec;
            r.latency(self.kinds.get, p.t0, now);
            if hit {
                r.hits += 1;
                r.bytes_in += value_len as u64;
                if p.hot {
                    r.hot_hits += 1;
                }
            } else {
                r.misses += 1;
            }
            if p.hot {
                r.hot_gets += 1;
            }
        }
        if !hit && p.aside {
            // Cache-aside: the miss is filled before the client's next op, also when the
            // budget ran out meanwhile (Idle): the fill is part of the op that was taken,
            // and finish_load waits for it as for any in flight.
            self.next_key = p.trace;
            let size = p.size as usize;
            self.send(
                ci,
                Req::Set,
                p.index,
                size,
                p.ttl,
                now,
                p.phase,
                false,
                false,
            );
        } else {
            self.clients[ci].release(1, now, self.order.pipeline);
        }
    }

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
        let k = &self.order.keys;
        let trace = std::mem::take(&mut self.next_key); // a replayed op (replay.rs)
        let (key, value, size) = if req == Req::Publish {
            // A channel and a message stamped now (pubsub.rs) in place of key and value.
            let (channel, message) = self.pubsub.stamped(index, crate::pacing::now_ns());
            (channel, message, message.len())
        } else if trace > crate::replay::INDEX_KEY {
            // A replayed key of its own bytes.
            let own = self.replay.as_ref().expect("a replay step").key_of(trace);
            let value = if req == Req::Set {
                self.values.value(index, size)
            } else {
                &[][..]
            };
            (own, value, size)
        } else if trace == crate::replay::INDEX_KEY {
            // A replayed key sent under its index: formatted once per slot (replay.rs).
            let key = self
                .replay
                .as_mut()
                .expect("a replay step")
                .index_key(index);
            let value = if req == Req::Set {
                self.values.value(index, size)
            } else {
                &[][..]
            };
            (key, value, size)
        } else {
            let key = workload::key_of(&self.keys, &mut self.key, &k.prefix, index, k.length);
            let value = if req == Req::Set {
                self.values.value(index, size)
            } else {
                &[][..]
            };
            (key, value, size)
        };
        let si = crate::cluster::node_for(&self.cluster, &self.codec, key);
        let k = &mut self.clients[ci].conns[si];
        if !self.codec.encode(&mut k.out, req, key, value, ttl) {
            // An HTTP delete without a template: counted, never sent.
            self.clients[ci].release(1, t0, self.order.pipeline);
            if phase == self.phase {
                self.rec.error(
                    "unsupported",
                    "no delete template: set target.options.delete, e.g. 'DELETE /?key={key}'",
                );
            }
            return;
        }
        if k.pending.is_empty() {
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
        });
    }

    /// Take one op from the phase budget; false: do not issue it.
    pub fn reserve(&mut self, now: u64) -> bool {
        match self.remaining.as_mut() {
            None => true,
            Some(r) => {
                *r -= 1;
                if *r == 0 {
                    self.phase_over = true;
                    self.spent_at = now;
                }
                *r >= 0 || !self.budget_stops
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
        let held =
            depth > 1 && plain && !self.order.open_loop && self.clients[ci].inflight > depth / 2;
        loop {
            let c = &self.clients[ci];
            if held
                || c.inflight >= self.order.pipeline && !ahead
                || c.conns.iter().any(|k| !k.connected) && c.conns.len() == 1
            {
                break;
            }
            let sent = match self.mode {
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
        for si in 0..self.clients[ci].conns.len() {
            let k = &self.clients[ci].conns[si];
            if k.out.len() > k.out_pos {
                self.flush(ci, si);
            }
        }
    }

    /// Queue the set of the next key to prefill; false when none is left.
    fn prefill_next(&mut self, ci: usize, now: u64) -> bool {
        let index = match self.prefill.pop_front() {
            Some(i) => i,
            None => return false,
        };
        let size = self
            .prefill_sizes
            .as_mut()
            .map(|s| s.next_size())
            .unwrap_or(0);
        self.clients[ci].inflight += 1;
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
        let due_before = self.due_before;
        let c = &mut self.clients[ci];
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
                    self.mode = Mode::Idle;
                    return false;
                }
                self.clients[ci].stream.next_op()
            }
        };
        if batches {
            // A pipelined closed loop over a cluster: the op waits for its node's batch.
            return self.park_on_node(ci, op, t0, due);
        }
        if self.clients[ci].conns.len() > 1 && !self.server_up(ci, &op) {
            if self.cluster.is_some() {
                // Its node's connection is full or down: the next op may go to another.
                return self.park_on_node(ci, op, t0, due);
            }
            self.clients[ci].parked = Some(op);
            return false;
        }
        let phase = self.phase;
        self.issue_op(ci, op, t0, due, now, phase);
        true
    }

    /// Send a drawn op of `phase`: its send lag, its kind, its trace line.
    pub fn issue_op(
        &mut self,
        ci: usize,
        op: workload::Op,
        t0: u64,
        due: u64,
        now: u64,
        phase: u32,
    ) {
        let c = &mut self.clients[ci];
        if c.schedule.is_some() {
            self.rec.lag(now - due);
        }
        let hot = op.index < c.stream.hot_end;
        c.inflight += 1;
        // A cache-aside op is a get that sets on a miss.
        let (req, aside) = match self.order.actions[op.code as usize] {
            Action::Get => (Req::Get, false),
            Action::CacheAside => (Req::Get, true),
            Action::Set => (Req::Set, false),
            Action::Publish => (Req::Publish, false),
            _ => (Req::Delete, false),
        };
        if req != Req::Delete {
            if let Some(trace) = self.trace.as_mut() {
                trace.add(self.measuring, now, op.index, op.size as u64);
            }
        }
        self.send(ci, req, op.index, op.size, op.ttl, t0, phase, aside, hot);
    }

    /// Whether the connection the op's key goes to is up.
    fn server_up(&mut self, ci: usize, op: &workload::Op) -> bool {
        let k = &self.order.keys;
        let key = workload::key_of(&self.keys, &mut self.key, &k.prefix, op.index, k.length);
        let si = crate::cluster::node_for(&self.cluster, &self.codec, key);
        self.node_ready(ci, si)
    }
}

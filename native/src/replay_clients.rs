//! How a replay step's clients take the trace's requests (the `Run`'s side of replay.rs):
//! the trace opened, phases begun, replies ended, offered counted, and `replay_next`, which
//! hands a client its next request when its schedule, the warm-up, the held keys and the
//! budget allow.

use super::{in_flight, slot_of, Replay, TraceOrder, INDEX_KEY, QUEUED_MAX, UNREADABLE};
use crate::pacing::{Arrivals, Schedule, Timing};
use crate::proto::Req;
use crate::step::Run;

impl<'a> Run<'a> {
    /// Open the step's trace, when its order has one.
    pub fn open_replay(&mut self, order: Option<TraceOrder>) -> Result<(), String> {
        if let Some(o) = order {
            let ids: Vec<i64> = self.order.clients.iter().map(|c| c.id).collect();
            let keys = &self.order.keys;
            self.replay = Some(Replay::new(o, &ids, &keys.prefix, keys.length)?);
        }
        Ok(())
    }

    /// A phase began: a trace already done ends it at once; the measured phase wakes the
    /// clients that waited at the end of the warm-up by trace time.
    pub fn replay_phase_began(&mut self, measured: bool) {
        let now = crate::pacing::now_ns();
        let rp = match self.replay.as_mut() {
            Some(rp) => rp,
            None => return,
        };
        if rp.load_start == 0 && self.load_start > 0 {
            rp.start(self.load_start);
        }
        if rp.done() || rp.failure.is_some() {
            self.phase_over = true;
            self.spent_at = now;
            return;
        }
        if measured && rp.parked_count > 0 {
            rp.parked.iter_mut().for_each(|p| *p = false);
            rp.parked_count = 0;
            for ci in 0..self.clients.len() {
                self.refill(ci, now);
            }
        }
    }

    /// A reply to a replayed op came (`answered`, before it is counted). A get-set-on-miss
    /// get's key is there now, or its fill is on its way ahead of anything sent after it
    /// on the connection. The op ends here unless a fill follows, and a client waiting for
    /// room in the queues may go on.
    pub fn replay_reply(&mut self, p: &crate::client::Pending, reply: &crate::proto::Reply) {
        use crate::proto::Reply;
        let rp = match self.replay.as_mut() {
            Some(rp) if p.trace != 0 => rp,
            _ => return,
        };
        let own = p.trace > INDEX_KEY;
        let answered_get = p.req == Req::Get && !matches!(reply, Reply::Failed(..));
        if answered_get && p.aside {
            rp.present.mark(p.index, own);
        }
        if !(answered_get && p.aside && !matches!(reply, Reply::Hit { .. })) {
            rp.ended(p.index, p.trace);
        }
    }

    /// The replay's offered count in [a, b) of monotonic time (0 unless timed).
    pub fn replay_offered(&mut self, a: u64, b: u64) -> u64 {
        match self.replay.as_mut() {
            Some(rp) => {
                let before = rp.offered_before(a);
                rp.offered_before(b) - before
            }
            None => 0,
        }
    }

    /// `load_next` of a replay: queue the client's next request of the trace when its
    /// schedule, the warm-up and the budget allow; false if not. A request of a key
    /// another client holds goes to that client's queue, and the next one is looked at.
    pub fn replay_next(&mut self, ci: usize, now: u64) -> bool {
        let start = self.load_start;
        let rp = self.replay.as_mut().expect("a replay step");
        if rp.load_start == 0 {
            rp.start(start);
        }
        let timed = rp.timed();
        loop {
            let next = match self.replay_front(ci, now) {
                Some(next) => next,
                None => return false,
            };
            let (req, aside) = (next.req, next.aside);
            let rp = self.replay.as_mut().expect("a replay step");
            let due = if timed { rp.due(next.time) } else { now };
            if timed && !self.replay_due(ci, due, now) {
                return false;
            }
            if self.replay_past_warmup(ci, next.time, now) {
                return false;
            }
            let slot = slot_of(next.index, next.text);
            let rp = self.replay.as_mut().expect("a replay step");
            let (holder, held) = rp.held[slot];
            if !next.mine && held > 0 && holder as usize != ci {
                if self.replay_pass_on(ci, slot, holder as usize, due) {
                    continue;
                }
                return false;
            }
            // Get-set-on-miss: a key's next get waits for the answer to a get that may still
            // miss, so a pipelined client misses each object once, as a sequential one does.
            let rp = self.replay.as_ref().expect("a replay step");
            if aside
                && !rp.present.has(next.index, next.text)
                && in_flight(&self.clients[ci], next.index, next.text)
            {
                return false;
            }
            if !self.reserve(now) {
                self.mode = crate::io::Mode::Idle;
                return false;
            }
            let sent = Taken {
                req,
                aside,
                index: next.index,
                slot,
                held,
                mine: next.mine,
                due,
                timed,
            };
            self.replay_send(ci, now, sent);
            return true;
        }
    }

    /// The client's next request (every one read is replayed: skips are never kept), the
    /// skips read on the way counted; None when there is none: the trace failed (the step
    /// ends), or nothing is left for the client (done once its last reply is in).
    fn replay_front(&mut self, ci: usize, now: u64) -> Option<Front> {
        let rp = self.replay.as_mut().expect("a replay step");
        let next = rp.front(ci).map(|(i, mine)| Front {
            req: i.req,
            aside: i.aside,
            time: i.time,
            index: i.index,
            text: i.own.is_some(),
            mine,
        });
        if !rp.skipped.is_empty() {
            for (what, n) in rp.skipped.drain(..) {
                self.rec.skip(what, n);
            }
        }
        if let Some(e) = rp.failure.clone() {
            if !rp.reported {
                rp.reported = true;
                self.eng.error(UNREADABLE, &e);
                self.phase_over = true;
                self.spent_at = now;
                self.mode = crate::io::Mode::Idle;
            }
            return None;
        }
        if next.is_none() {
            let c = &mut self.clients[ci];
            if let Some(s) = c.schedule.as_mut() {
                s.next = u64::MAX;
            }
            if c.inflight == 0 && !rp.finished[ci] {
                rp.finished[ci] = true;
                rp.finished_count += 1;
                if rp.done() {
                    self.phase_over = true;
                    self.spent_at = now;
                }
            }
        }
        next
    }

    /// A timed replay: the client's schedule is set to the request's intended start;
    /// false while it is not yet due (or due past the phase).
    fn replay_due(&mut self, ci: usize, due: u64, now: u64) -> bool {
        let s = self.clients[ci].schedule.get_or_insert_with(|| {
            let t = Timing {
                period: 1,
                offset: 0,
                arrivals: Arrivals::Uniform,
                seed: 0,
            };
            Schedule::new(0, &t)
        });
        s.next = due;
        !(due > now || due >= self.due_before)
    }

    /// Warm-up by trace time: the client waits at the first request past it until the
    /// measured phase begins (true); when all wait (or are done), the warm-up is over.
    fn replay_past_warmup(&mut self, ci: usize, time: f64, now: u64) -> bool {
        let rp = self.replay.as_mut().expect("a replay step");
        if self.measuring || rp.order.warmup_s <= 0.0 {
            return false;
        }
        let origin = rp.origin.unwrap_or(time);
        if time - origin < rp.order.warmup_s {
            return false;
        }
        if let Some(s) = self.clients[ci].schedule.as_mut() {
            s.next = u64::MAX; // woken by the measured phase (replay_phase_began)
        }
        if !rp.parked[ci] {
            rp.parked[ci] = true;
            rp.parked_count += 1;
            if rp.parked_count + rp.finished_count >= rp.parked.len() {
                self.phase_over = true;
                self.spent_at = now;
            }
        }
        true
    }

    /// Another client holds the front request's key: the request joins that client's
    /// queue (true), unless the queues are full, where the client waits for room (false).
    fn replay_pass_on(&mut self, ci: usize, slot: usize, holder: usize, due: u64) -> bool {
        let rp = self.replay.as_mut().expect("a replay step");
        if rp.queued >= QUEUED_MAX {
            if !rp.stalled.contains(&ci) {
                rp.stalled.push(ci);
            }
            return false;
        }
        let item = rp.ahead.pop_front().expect("the front just read");
        rp.held[slot].1 += 1;
        rp.queued += 1;
        rp.own[holder].push_back(item);
        if let Some(s) = self.clients[holder].schedule.as_mut() {
            s.next = s.next.min(due); // timed: the holder sends it when it is due
        }
        true
    }

    /// Send the front request the client may take (its key now held by it), timed as
    /// `load_next` times an op, and move its schedule on to its next request.
    fn replay_send(&mut self, ci: usize, now: u64, t: Taken) {
        let rp = self.replay.as_mut().expect("a replay step");
        let mut wake = Vec::new();
        let item = if t.mine {
            rp.queued -= 1;
            if rp.queued <= QUEUED_MAX / 2 && !rp.stalled.is_empty() {
                wake = std::mem::take(&mut rp.stalled);
            }
            rp.own[ci].pop_front()
        } else {
            rp.held[t.slot] = (ci as u32, t.held + 1);
            rp.ahead.pop_front()
        };
        let item = item.expect("the front just read");
        let trace = rp.keep(item.own);
        let c = &mut self.clients[ci];
        // Open loop, as load_next: from the intended start when the client was busy then.
        let t0 = if t.timed {
            if c.free_at > t.due {
                t.due.max(c.run_began)
            } else {
                c.run_began = now;
                now
            }
        } else {
            now
        };
        if t.timed {
            self.rec.lag(now - t.due);
        }
        c.inflight += 1;
        let ttl = if item.ttl > 0 {
            Some(item.ttl as f64)
        } else {
            None
        };
        if t.req != Req::Delete {
            if let Some(trace) = self.trace.as_mut() {
                trace.add(self.measuring, now, t.index, item.value_size as u64);
            }
        }
        let phase = self.phase;
        self.next_key = trace;
        let size = item.value_size as usize;
        self.send(ci, t.req, t.index, size, ttl, t0, phase, t.aside, false);
        if t.timed {
            // The schedule moves on to the client's next request (MAX when none is left).
            let rp = self.replay.as_mut().expect("a replay step");
            let due = rp.next_due(ci);
            if let Some(s) = self.clients[ci].schedule.as_mut() {
                s.next = due;
            }
        }
        // Clients that waited for room in the queues read on (their pipelines may be empty).
        for other in wake {
            if other != ci {
                self.refill(other, now);
            }
        }
    }
}

/// The front request of a client's share, as `replay_next` weighs it.
struct Front {
    /// What it is sent as (worked out as it was read).
    req: Req,
    aside: bool,
    time: f64,
    index: u64,
    /// Sent under its own key bytes, not its index's key.
    text: bool,
    /// From the client's own queue (a key it holds), not the trace's next.
    mine: bool,
}

/// A request a client takes: what `replay_send` needs of `replay_next`'s reading.
struct Taken {
    req: Req,
    aside: bool,
    index: u64,
    slot: usize,
    /// The slot's count of requests held before this one.
    held: u32,
    mine: bool,
    due: u64,
    timed: bool,
}

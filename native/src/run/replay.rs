//! How a replay step's clients take the trace's requests (the step's side of
//! `trace/replay.rs`): phases begun, replies ended, offered counted, and `replay_next`,
//! which hands a client its next request when its schedule, the warm-up, the held keys
//! and the budget allow.

use super::{Mode, Run};
use crate::net::client::Client;
use crate::net::conn::Pending;
use crate::order::{Arrivals, Timing};
use crate::pacing::{now_ns, Schedule};
use crate::protocols::wire::{Reply, Req};
use crate::trace::replay::{slot_of, Began, Front, Warm, INDEX_KEY, UNREADABLE};

impl<'a> Run<'a> {
    /// A phase began: a trace already done ends it at once; the measured phase wakes the
    /// clients that waited at the end of the warm-up by trace time.
    pub(super) fn replay_phase_began(&mut self, measured: bool) {
        let now = now_ns();
        let began = match self.replay.as_mut() {
            Some(rp) => rp.phase_began(self.phase.load_start, measured),
            None => return,
        };
        match began {
            Began::Over => self.phase_over(now),
            Began::Woken => {
                for ci in 0..self.net.clients.len() {
                    self.refill(ci, now);
                }
            }
            Began::Going => {}
        }
    }

    fn phase_over(&mut self, now: u64) {
        self.phase.over = true;
        self.phase.spent_at = now;
    }

    /// A reply to a replayed op came (`answered`, before it is counted).
    pub(super) fn replay_reply(&mut self, p: &Pending, reply: &Reply) {
        if let Some(rp) = self.replay.as_mut() {
            let answered = !matches!(reply, Reply::Failed(..));
            let hit = matches!(reply, Reply::Hit { .. });
            let aside_get = p.req == Req::Get && p.aside;
            rp.replied(p.index, p.trace, aside_get, answered, hit);
        }
    }

    /// The replay's offered count in [a, b) of monotonic time (0 unless timed).
    pub(super) fn replay_offered(&mut self, a: u64, b: u64) -> u64 {
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
    pub(super) fn replay_next(&mut self, ci: usize, now: u64) -> bool {
        let rp = self.replay.as_mut().expect("a replay step");
        rp.started(self.phase.load_start);
        let timed = rp.timed();
        loop {
            let next = match self.replay_front(ci, now) {
                Some(next) => next,
                None => return false,
            };
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
            let (holder, held) = rp.holder(slot);
            if !next.mine && held > 0 && holder != ci {
                if !rp.pass_on(ci, slot, holder) {
                    return false; // the queues are full: the client waits for room
                }
                if let Some(s) = self.net.clients[holder].schedule.as_mut() {
                    s.next = s.next.min(due); // timed: the holder sends it when it is due
                }
                continue;
            }
            // Get-set-on-miss: a key's next get waits for the answer to a get that may still
            // miss, so a pipelined client misses each object once, as a sequential one does.
            let c = &self.net.clients[ci];
            if next.aside
                && !rp.present(next.index, next.text)
                && in_flight(c, next.index, next.text, |p| p.req == Req::Get && p.aside)
            {
                return false;
            }
            // A cas sends the token of its key's last gets: it waits for that gets' reply.
            if next.req == Req::Cas && in_flight(c, next.index, next.text, |p| p.req == Req::Gets) {
                return false;
            }
            if !self.reserve(now) {
                self.phase.mode = Mode::Idle;
                return false;
            }
            self.replay_send(ci, now, &next, slot, held, due, timed);
            return true;
        }
    }

    /// The client's next request (every one read is replayed: skips are never kept), the
    /// skips read on the way counted; None when there is none: the trace failed (the step
    /// ends), or nothing is left for the client (done once its last reply is in).
    fn replay_front(&mut self, ci: usize, now: u64) -> Option<Front> {
        let rp = self.replay.as_mut().expect("a replay step");
        let rec = &mut self.rec;
        let next = rp.front_of(ci, |what, n| rec.skip(what, n));
        if rp.failure.is_some() {
            if let Some(e) = rp.report_failure() {
                self.eng.error(UNREADABLE, &e);
                self.phase_over(now);
                self.phase.mode = Mode::Idle;
            }
            return None;
        }
        if next.is_none() {
            let c = &mut self.net.clients[ci];
            if let Some(s) = c.schedule.as_mut() {
                s.next = u64::MAX;
            }
            if c.inflight == 0 && rp.finish(ci) {
                self.phase_over(now);
            }
        }
        next
    }

    /// A timed replay: the client's schedule is set to the request's intended start;
    /// false while it is not yet due (or due past the phase).
    fn replay_due(&mut self, ci: usize, due: u64, now: u64) -> bool {
        let s = self.net.clients[ci].schedule.get_or_insert_with(|| {
            let t = Timing {
                period: 1,
                offset: 0,
                arrivals: Arrivals::Uniform,
                seed: 0,
            };
            Schedule::new(0, &t)
        });
        s.next = due;
        !(due > now || due >= self.phase.due_before)
    }

    /// Warm-up by trace time: the client waits at the first request past it until the
    /// measured phase begins (true); when all wait (or are done), the warm-up is over.
    fn replay_past_warmup(&mut self, ci: usize, time: f64, now: u64) -> bool {
        let rp = self.replay.as_mut().expect("a replay step");
        let warm = rp.past_warmup(ci, time, self.phase.measuring);
        if let Warm::Before = warm {
            return false;
        }
        if let Some(s) = self.net.clients[ci].schedule.as_mut() {
            s.next = u64::MAX; // woken by the measured phase (replay_phase_began)
        }
        if let Warm::AllWait = warm {
            self.phase_over(now);
        }
        true
    }

    /// Send the front request the client may take (its key now held by it), timed as
    /// `load_next` times an op, and move its schedule on to its next request.
    #[allow(clippy::too_many_arguments)]
    fn replay_send(
        &mut self,
        ci: usize,
        now: u64,
        next: &Front,
        slot: usize,
        held: u32,
        due: u64,
        timed: bool,
    ) {
        let rp = self.replay.as_mut().expect("a replay step");
        let taken = rp.take(ci, next.mine, slot, held);
        let c = &mut self.net.clients[ci];
        // Open loop, as load_next: from the intended start when the client was busy then.
        let t0 = if timed {
            if c.free_at > due {
                due.max(c.run_began)
            } else {
                c.run_began = now;
                now
            }
        } else {
            now
        };
        if timed {
            self.rec.lag(now - due);
        }
        c.inflight += 1;
        if matches!(next.req, Req::Get | Req::Set) {
            if let Some(trace) = self.capture.as_mut() {
                trace.add(
                    self.phase.measuring,
                    now,
                    next.index,
                    taken.value_size as u64,
                );
            }
        }
        let phase = self.phase.index;
        self.keys.next_trace = taken.handle;
        let size = taken.value_size as usize;
        let (req, aside) = (next.req, next.aside);
        self.send(
            ci, req, next.index, size, taken.ttl, t0, phase, aside, false,
        );
        if timed {
            // The schedule moves on to the client's next request (MAX when none is left).
            let rp = self.replay.as_mut().expect("a replay step");
            let due = rp.next_due(ci);
            if let Some(s) = self.net.clients[ci].schedule.as_mut() {
                s.next = due;
            }
        }
        // Clients that waited for room in the queues read on (their pipelines may be empty).
        for other in taken.wake {
            if other != ci {
                self.refill(other, now);
            }
        }
    }
}

/// Whether the client has a request `which` of this key waiting for its reply: a
/// get-set-on-miss get (until it comes, a miss and its fill may follow), or a gets (whose
/// token a cas sends).
fn in_flight(c: &Client, index: u64, own: bool, which: impl Fn(&Pending) -> bool) -> bool {
    c.conns
        .iter()
        .flat_map(|k| k.pending.iter())
        .any(|p| p.index == index && (p.trace > INDEX_KEY) == own && which(p))
}

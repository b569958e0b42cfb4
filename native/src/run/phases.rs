//! The phases of one step in a worker: connect every client, prefill, arm, wait for the
//! start, warm up, measure on the interval grid, then stop and report (docs/frames.md).

use super::{Mode, Run};
use crate::order::{Action, Req};
use crate::os::batch::Batch;
use crate::pacing::{self, now_ns, Offered, Schedule};
use crate::record::report::Interval;
use crate::record::Recorder;
use crate::workload::OpStream;
use serde_json::json;
use std::time::Duration;

/// After the load: pub/sub deliveries still on their way are awaited until none came for
/// QUIET_TURNS x QUIET_TURN, at most LATE_WAIT (the Python engine's rule).
const QUIET_TURN: u64 = 100_000_000;
const QUIET_TURNS: u32 = 3;
const LATE_WAIT: u64 = 3_000_000_000;

impl<'a> Run<'a> {
    /// The recorder of the next span, in place of the one it returns: a cleared one from
    /// the reporting thread when it has one ready (`record/report.rs`), so no mapping is made here.
    fn take_recorder(&mut self) -> Recorder {
        let fresh = self
            .eng
            .out
            .recorder(self.order.open_loop, self.order.record.len());
        std::mem::replace(&mut self.rec, fresh)
    }

    pub(super) fn execute(&mut self) -> &'static str {
        if let Some(status) = self.connect_all() {
            return status;
        }
        if self.order.prefill.is_some() {
            if let Some(status) = self.run_prefill() {
                return status;
            }
        }
        let wait = Duration::from_nanos(self.order.connect_timeout_ns.max(10_000_000_000));
        let registry = self.eng.poll.registry();
        let subscribed =
            self.pubsub
                .subscribe_all(registry, self.net.tokens_end(), &self.codec, wait);
        if let Err(e) = subscribed {
            self.eng.error("connection", &e);
            return "failed";
        }
        self.eng.out.send(&json!({"type": "armed"}));
        while self.eng.go.is_none() && !self.eng.stop {
            self.turn(0);
        }
        if self.eng.stop {
            return "interrupted";
        }
        let start = match self.eng.go.take().unwrap_or(None) {
            Some(t) => pacing::mono_of_realtime(t),
            None => now_ns(),
        };
        while now_ns() < start && !self.eng.stop {
            self.turn(start);
        }
        if self.eng.stop {
            return "interrupted";
        }
        // A closed loop does not preempt the server its replies come from (`os/batch.rs`).
        let batch = Batch::enter(!self.order.open_loop && self.pubsub.order.is_none());
        let status = self.warm_and_measure(start);
        drop(batch);
        self.phase.mode = Mode::Idle;
        if let Some(trace) = &self.capture {
            if let Err(e) = trace.write() {
                self.eng
                    .error("trace", &format!("cannot write the step's trace: {}", e));
            }
        }
        status
    }

    /// Connect every client; a server that is not there fails the step in one line.
    fn connect_all(&mut self) -> Option<&'static str> {
        for ci in 0..self.net.clients.len() {
            for si in 0..self.net.clients[ci].conns.len() {
                if let Err(e) = self.open(ci, si) {
                    self.eng.error("connection", &e);
                    return Some("failed");
                }
            }
        }
        let limit = now_ns() + self.order.connect_timeout_ns;
        while !self.net.all_connected() {
            if let Some((kind, e)) = self.net.first_dead() {
                self.eng.error(&kind, &e);
                return Some("failed");
            }
            if now_ns() >= limit && self.net.tls.is_some() {
                let secs = self.order.connect_timeout_ns as f64 / 1e9;
                let msg = format!(
                    "TLS: no handshake answer within {}s: is it a plain (non-TLS) port?",
                    secs
                );
                self.eng.error("tls", &msg);
                return Some("failed");
            }
            if now_ns() >= limit {
                self.eng
                    .error("timeout", "connecting to the server timed out");
                return Some("failed");
            }
            if self.eng.stop {
                return Some("interrupted");
            }
            self.turn(limit);
        }
        None
    }

    /// The warm-up (by ops or by time), then the measured phase (by ops or by time).
    fn warm_and_measure(&mut self, start: u64) -> &'static str {
        let p = self.order.phases.clone();
        let warm_ops = p.warmup_ops;
        let budget = p.ops;
        let warm_time = warm_ops.is_none() && p.warmup_ns > 0;
        if warm_ops.is_some() {
            self.begin_phase(warm_ops, false);
        } else if warm_time {
            self.begin_phase(None, false);
        } else {
            self.begin_phase(budget, true);
        }
        self.start_load(start);
        let mut begin = start;
        if warm_ops.is_some() {
            while !self.phase.over && !self.eng.stop {
                self.turn(0);
            }
            begin = if self.phase.over {
                self.phase.spent_at
            } else {
                now_ns()
            };
        } else if warm_time {
            begin = start + p.warmup_ns;
            while now_ns() < begin && !self.eng.stop {
                self.turn(begin);
            }
        }
        if self.eng.stop {
            return "interrupted";
        }
        if warm_ops.is_some() || warm_time {
            self.begin_phase(budget, true);
        }
        match (budget, p.duration_ns) {
            (None, Some(d)) => self.measure_for(d, begin, p.interval_ns),
            _ => self.measure_ops(begin, p.interval_ns),
        }
    }

    fn run_prefill(&mut self) -> Option<&'static str> {
        let fill = self.order.prefill.clone()?;
        self.prefill.queue = (fill.offset..fill.offset + fill.count).collect();
        let set = self.order.code_of(Action::plain(Req::Set)).unwrap_or(0);
        self.prefill.sizes = Some(OpStream::new(&self.order, &[(set, 1.0)], fill.client, 0));
        self.phase.mode = Mode::Prefill;
        self.phase.index = 0; // nothing of the prefill is recorded
        for ci in 0..self.net.clients.len() {
            self.refill(ci, now_ns());
        }
        while (!self.prefill.queue.is_empty() || self.net.clients.iter().any(|c| c.inflight > 0))
            && !self.eng.stop
        {
            if let Some(e) = self.prefill.error.take() {
                self.eng.error("prefill", &e);
                return Some("failed");
            }
            self.turn(0);
        }
        if let Some(e) = self.prefill.error.take() {
            self.eng.error("prefill", &e);
            return Some("failed");
        }
        self.phase.mode = Mode::Idle;
        self.phase.index = 1;
        if self.eng.stop {
            return Some("interrupted");
        }
        None
    }

    /// Every client starts: closed loop at once, open loop on its schedule from `start`.
    fn start_load(&mut self, start: u64) {
        self.phase.mode = Mode::Load;
        self.phase.load_start = start;
        for c in self.net.clients.iter_mut() {
            c.schedule = c.timing.map(|t| Schedule::new(start, &t));
            c.offered = c.timing.map(|t| Offered::new(start, t));
        }
        let now = now_ns();
        for ci in 0..self.net.clients.len() {
            self.refill(ci, now);
        }
    }

    fn begin_phase(&mut self, ops: Option<u64>, measured: bool) {
        self.phase.index += 1;
        self.phase.remaining = ops.map(|n| n as i64);
        self.phase.budget_stops = measured;
        self.phase.measuring = measured;
        self.phase.over = false;
        let before = self.take_recorder();
        self.eng.out.recycle(before);
        // Measured deliveries that came during this worker's warm-up open its first
        // measured interval (the Python engine's `early` buffer).
        self.pubsub.measuring = measured;
        if measured {
            let fresh = Recorder::new(self.order.open_loop, self.order.record.len());
            let early = std::mem::replace(&mut self.pubsub.early, fresh);
            self.rec.absorb(early);
        }
        self.replay_phase_began(measured);
    }

    /// A measured phase of a fixed duration on the grid of `pacing::grid`.
    fn measure_for(&mut self, duration: u64, begin: u64, interval: u64) -> &'static str {
        self.phase.begin = begin;
        self.phase.due_before = begin + duration;
        let ends = pacing::grid(duration, interval);
        let mut prev = 0u64;
        let mut cpu = pacing::cpu_seconds();
        self.wake.tuner.take_polled();
        for k in 0..ends.count() {
            let end = ends.end(k);
            let at = begin + end;
            // A replay's trace may end the phase before its time (phase_over).
            while now_ns() < at && !self.eng.stop && !self.phase.over {
                self.turn(at);
            }
            let stopped = self.eng.stop;
            let ended = stopped || self.phase.over;
            let last = ended || k + 1 == ends.count();
            let end = if ended {
                now_ns().saturating_sub(begin).min(end)
            } else {
                end
            };
            if last {
                self.finish_load(interval);
            }
            let rec = self.take_recorder();
            cpu = self.emit(k as usize, rec, prev, end, cpu);
            prev = end;
            if last {
                return if stopped { "interrupted" } else { "completed" };
            }
        }
        "completed"
    }

    /// A measured phase that ends when its op budget is spent. An interval is held for
    /// half an interval past its boundary: when the budget is spent before then, the short
    /// tail is folded into it.
    fn measure_ops(&mut self, begin: u64, interval: u64) -> &'static str {
        self.phase.begin = begin;
        let mut index = 0usize;
        let mut prev = 0u64;
        let mut boundary = interval;
        let mut cpu = pacing::cpu_seconds();
        self.wake.tuner.take_polled();
        let mut held: Option<(Recorder, u64, u64)> = None; // rec, its start, its end
        loop {
            let release = held
                .as_ref()
                .map(|h| begin + h.2 + interval / 2)
                .unwrap_or(u64::MAX);
            let wake = (begin + boundary).min(release);
            while now_ns() < wake && !self.phase.over && !self.eng.stop {
                self.turn(wake);
            }
            if self.phase.over || self.eng.stop {
                return self.end_ops_phase(begin, interval, index, prev, held, cpu);
            }
            let now = now_ns();
            if now >= release {
                if let Some((h, h_start, h_end)) = held.take() {
                    cpu = self.emit(index, h, h_start, h_end, cpu);
                    index += 1;
                }
            }
            if now >= begin + boundary {
                let rec = self.take_recorder();
                held = Some((rec, prev, boundary));
                prev = boundary;
                boundary += interval;
            }
        }
    }

    /// The last interval of a phase by ops: what was held folded in with the tail.
    fn end_ops_phase(
        &mut self,
        begin: u64,
        interval: u64,
        index: usize,
        prev: u64,
        held: Option<(Recorder, u64, u64)>,
        cpu: f64,
    ) -> &'static str {
        let stopped = self.eng.stop && !self.phase.over;
        let end = if self.phase.over {
            self.phase.spent_at
        } else {
            now_ns()
        }
        .saturating_sub(begin);
        self.finish_load(interval);
        let mut rec = self.take_recorder();
        let mut start = prev;
        if let Some((mut h, h_start, _)) = held {
            h.absorb(rec);
            rec = h;
            start = h_start;
        }
        self.emit(index, rec, start, end.max(start), cpu);
        if stopped {
            "interrupted"
        } else {
            "completed"
        }
    }

    /// Stop issuing, wait for the ops still in flight (at most 2 s or one interval);
    /// those that do not come back are counted as "abandoned". Then wait for the pub/sub
    /// deliveries still on their way: they belong to the last interval too.
    fn finish_load(&mut self, interval: u64) {
        self.phase.mode = Mode::Idle;
        let limit = now_ns() + interval.min(2_000_000_000);
        while (self.net.clients.iter().any(|c| c.inflight > 0) || self.cluster_parked(None) > 0)
            && now_ns() < limit
        {
            if self.eng.eof {
                break;
            }
            self.turn(limit);
        }
        let phase = self.phase.index;
        let abandoned: u64 = self
            .net
            .clients
            .iter()
            .flat_map(|c| c.conns.iter())
            .map(|k| k.in_phase(phase) as u64)
            .sum::<u64>()
            + self.cluster_parked(Some(phase)) as u64;
        self.rec
            .errors_n("abandoned", "no reply when the phase ended", abandoned);
        self.await_deliveries();
    }

    /// Intended starts of every client in [start, end) of the phase (ns since it began).
    fn offered(&mut self, start: u64, end: u64) -> u64 {
        let (a, b) = (self.phase.begin + start, self.phase.begin + end);
        let replayed = self.replay_offered(a, b);
        replayed
            + self
                .net
                .clients
                .iter_mut()
                .filter_map(|c| c.offered.as_mut())
                .map(|o| {
                    let before = o.before(a);
                    o.before(b) - before
                })
                .sum::<u64>()
    }

    /// Hand an interval to the reporting thread, which makes and writes its frame
    /// (`record/report.rs`); returns the CPU seconds at its end.
    fn emit(
        &mut self,
        index: usize,
        mut rec: Recorder,
        start: u64,
        end: u64,
        cpu_before: f64,
    ) -> f64 {
        let cpu = pacing::cpu_seconds();
        rec.offered = self.offered(start, end);
        self.eng.out.interval(Interval {
            index,
            end_ns: end,
            duration: (end - start) as f64 / 1e9,
            rec,
            worker: self.order.worker,
            cpu_seconds: cpu - cpu_before,
            kinds: self.order.record.clone(),
            polled: self.wake.tuner.take_polled() as f64 / 1e9,
        });
        cpu
    }

    /// After the load, before its last interval is cut: wait for deliveries still on their
    /// way, so that they land in that interval as the replies of ops in flight do, and the
    /// step's deliveries are the sum of its intervals'. What comes later is not recorded:
    /// it shows as lost.
    fn await_deliveries(&mut self) {
        if !self.pubsub.subscribed() {
            return;
        }
        let limit = now_ns() + LATE_WAIT;
        let mut quiet = 0;
        let mut last = u64::MAX;
        while now_ns() < limit && !self.eng.eof {
            let delivered = self.rec.delivered;
            quiet = if delivered == last { quiet + 1 } else { 0 };
            if quiet >= QUIET_TURNS {
                break;
            }
            last = delivered;
            let at = now_ns() + QUIET_TURN;
            while now_ns() < at && !self.eng.eof {
                self.turn(at);
            }
        }
    }
}

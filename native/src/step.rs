//! The phases of one step in a worker: connect every client, prefill, arm, wait for the
//! start, warm up, measure on the interval grid, then stop and report (docs/frames.md).

use crate::batch::Batch;
use crate::client::{Client, Conn};
use crate::codec::{codec_for, Codec, Target};
use crate::io::{Engine, Mode};
use crate::order::{Action, StepOrder};
use crate::pacing::{self, now_ns, Offered, Schedule, WakeTuner};
use crate::pubsub::{PubSub, PubSubOrder};
use crate::record::Recorder;
use crate::report::Interval;
use crate::trace::Capture;
use crate::workload::{KeyTable, OpStream, Values};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;

/// The histogram indexes of the kinds this engine records.
#[derive(Clone, Copy)]
pub struct Kinds {
    pub get: usize,
    pub set: usize,
    pub delete: usize,
    pub publish: usize,
    pub deliver: usize,
}

/// One step's state.
pub struct Run<'a> {
    pub eng: &'a mut Engine,
    pub order: StepOrder,
    pub codec: Codec,
    pub clients: Vec<Client>,
    pub values: Values,
    pub timeout: u64,
    pub mode: Mode,
    pub rec: Recorder,
    pub kinds: Kinds,
    pub phase: u32,
    pub remaining: Option<i64>,
    pub budget_stops: bool,
    pub phase_over: bool,
    pub spent_at: u64,
    pub prefill: VecDeque<u64>,
    pub prefill_sizes: Option<OpStream>,
    pub prefill_error: Option<String>,
    pub next_housekeeping: u64,
    pub down: usize,
    pub key: Vec<u8>,
    pub keys: Option<KeyTable>,
    pub ready: Vec<(usize, bool, bool, bool)>,
    pub load_start: u64,
    pub phase_begin: u64,
    /// When the measured phase ends, once known: no op is due at or after it.
    pub due_before: u64,
    pub pubsub: PubSub,
    /// In the measured phase (not warm-up): where a traced op goes.
    pub measuring: bool,
    /// The step's op trace, when the order asks for one (`trace.rs`).
    pub trace: Option<Capture>,
    /// How early the timer is armed ahead of a send (open loop).
    pub tuner: WakeTuner,
    /// The step's TLS (tls.rs); None for plain TCP.
    pub tls: Option<crate::tls::TlsConfig>,
    /// A Redis Cluster's slot map and nodes (cluster.rs); None for one server. In a
    /// cluster, `order.pipeline` is a client's depth over all its node connections.
    pub cluster: Option<crate::cluster::Cluster>,
    /// Tokens a client's connections take (its nodes may grow in a cluster).
    pub stride: usize,
    /// Replaying a trace file (`replay.rs`), and a replayed key `send` takes as it is.
    pub replay: Option<crate::replay::Replay>,
    pub next_key: u32,
}

/// Run one step order to its end; returns the step_done status.
pub fn run_step(eng: &mut Engine, frame: &Value) -> &'static str {
    let order = match StepOrder::from_frame(frame) {
        Ok(o) => o,
        Err(e) => {
            eng.error("spec", &e);
            return "failed";
        }
    };
    let target = Target {
        system: &order.system,
        options: &order.target,
        strategy: &frame["native"]["strategy_options"],
        allow_remote: order.allow_remote,
        placement: order.placement.as_deref(),
    };
    let (codec, addrs) = match codec_for(&target) {
        Ok(x) => x,
        Err(e) => {
            eng.error("target", &e);
            return "failed";
        }
    };
    let (cluster, addrs) = match crate::cluster::discover(&order, &codec, addrs) {
        Ok(x) => x,
        Err(e) => {
            eng.error("connection", &e);
            return "failed";
        }
    };
    let pubsub = match PubSubOrder::from_frame(frame) {
        Ok(p) => p,
        Err(e) => {
            eng.error("spec", &e);
            return "failed";
        }
    };
    let trace = match crate::replay::TraceOrder::from_frame(frame) {
        Ok(t) => t,
        Err(e) => {
            eng.error("spec", &e);
            return "failed";
        }
    };
    let mut run = match Run::new(eng, order, codec, &addrs, pubsub, cluster) {
        Ok(r) => r,
        Err(e) => {
            eng.error("spec", &e);
            return "failed";
        }
    };
    if let Err(e) = run.open_replay(trace) {
        run.eng.error("spec", &e);
        return "failed";
    }
    let mut status = run.execute();
    if run.replay.as_ref().map_or(false, |r| r.failure.is_some()) {
        status = "failed"; // an unreadable record, said in one line when it was met
    }
    run.close_all();
    run.close_subscribers();
    status
}

/// What a step order asks that this engine cannot do: publishing without a pubsub part or
/// to a system other than redis, more recorded op kinds than a recorder counts.
fn check_order(order: &StepOrder, has_pubsub: bool) -> Result<(), String> {
    let publish = order.code_of(Action::Publish);
    let publishes = order
        .clients
        .iter()
        .any(|c| c.mix.iter().any(|(code, _)| Some(*code) == publish));
    if publishes && !has_pubsub {
        return Err("step order: publish in the mix but no pubsub part".into());
    }
    if publishes && order.system != "redis" {
        return Err(format!(
            "workload.mix: the native engine publishes to redis only; got {:?}",
            order.system
        ));
    }
    if order.record.len() > crate::record::KINDS_MAX {
        return Err(format!(
            "step order: {} recorded op kinds; this engine counts at most {}",
            order.record.len(),
            crate::record::KINDS_MAX
        ));
    }
    Ok(())
}

/// The order's clients, each with a connection to every address, not yet connected.
fn clients_for(order: &StepOrder, addrs: &[SocketAddr]) -> Vec<Client> {
    order
        .clients
        .iter()
        .map(|c| Client {
            conns: addrs.iter().map(|a| Conn::new(*a)).collect(),
            stream: OpStream::new(order, &c.mix, c.id, c.sequence_start),
            inflight: 0,
            free_at: 0,
            run_began: 0,
            timing: c.timing,
            schedule: None,
            offered: None,
            parked: None,
        })
        .collect()
}

impl<'a> Run<'a> {
    fn new(
        eng: &'a mut Engine,
        order: StepOrder,
        codec: Codec,
        addrs: &[SocketAddr],
        pubsub: Option<PubSubOrder>,
        cluster: Option<crate::cluster::Cluster>,
    ) -> Result<Run<'a>, String> {
        let mut order = order;
        let stride = match &cluster {
            Some(c) => {
                order.pipeline = c.per_conn * addrs.len();
                crate::cluster::MAX_NODES
            }
            None => addrs.len(),
        };
        check_order(&order, pubsub.is_some())?;
        let tls = crate::tls::config_for(&order.system, &order.target)?;
        let kinds = Kinds {
            get: order.kind_index("get")?,
            set: order.kind_index("set")?,
            delete: order.kind_index("delete")?,
            publish: order.kind_index("publish")?,
            deliver: order.kind_index("deliver")?,
        };
        let early = Recorder::new(order.open_loop, order.record.len());
        let pubsub = PubSub::new(pubsub, addrs.first().copied(), early);
        let rec = eng.out.recorder(order.open_loop, order.record.len());
        let clients = clients_for(&order, addrs);
        let order_trace = order.trace_part.clone().map(Capture::new);
        Ok(Run {
            values: Values::new(order.value_bytes, order.value_spread, order.seed),
            keys: KeyTable::new(&order.keys.prefix, order.keys.length, order.keys.count),
            rec,
            timeout: order.timeout_ns.unwrap_or(u64::MAX),
            eng,
            order,
            codec,
            clients,
            mode: Mode::Idle,
            kinds,
            phase: 1,
            remaining: None,
            budget_stops: false,
            phase_over: false,
            tls,
            spent_at: 0,
            prefill: VecDeque::new(),
            prefill_sizes: None,
            prefill_error: None,
            next_housekeeping: 0,
            down: 0,
            key: Vec::with_capacity(256),
            ready: Vec::with_capacity(64),
            load_start: 0,
            phase_begin: 0,
            due_before: u64::MAX,
            pubsub,
            measuring: false,
            trace: order_trace,
            tuner: WakeTuner::for_this_process(),
            cluster,
            stride,
            replay: None,
            next_key: 0,
        })
    }

    /// The recorder of the next span, in place of the one it returns: a cleared one from
    /// the reporting thread when it has one ready (report.rs), so no mapping is made here.
    fn take_recorder(&mut self) -> Recorder {
        let fresh = self
            .eng
            .out
            .recorder(self.order.open_loop, self.order.record.len());
        std::mem::replace(&mut self.rec, fresh)
    }

    fn execute(&mut self) -> &'static str {
        if let Some(status) = self.connect_all() {
            return status;
        }
        if self.order.prefill.is_some() {
            if let Some(status) = self.run_prefill() {
                return status;
            }
        }
        if let Err(e) = self.subscribe_all() {
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
        // A closed loop does not preempt the server its replies come from (batch.rs).
        let batch = Batch::enter(!self.order.open_loop && self.pubsub.order.is_none());
        let status = self.warm_and_measure(start);
        drop(batch);
        self.mode = Mode::Idle;
        if let Some(trace) = &self.trace {
            if let Err(e) = trace.write() {
                self.eng
                    .error("trace", &format!("cannot write the step's trace: {}", e));
            }
        }
        status
    }

    /// Connect every client; a server that is not there fails the step in one line.
    fn connect_all(&mut self) -> Option<&'static str> {
        for ci in 0..self.clients.len() {
            for si in 0..self.clients[ci].conns.len() {
                if let Err(e) = self.open(ci, si) {
                    self.eng.error("connection", &e);
                    return Some("failed");
                }
            }
        }
        let limit = now_ns() + self.order.connect_timeout_ns;
        while !self.all_connected() {
            if let Some((kind, e)) = self.first_dead() {
                self.eng.error(&kind, &e);
                return Some("failed");
            }
            if now_ns() >= limit && self.tls.is_some() {
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
            while !self.phase_over && !self.eng.stop {
                self.turn(0);
            }
            begin = if self.phase_over {
                self.spent_at
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

    fn all_connected(&self) -> bool {
        self.clients
            .iter()
            .all(|c| c.conns.iter().all(|k| k.connected && k.pending.is_empty()))
    }

    /// The first connection that could not be opened: its failure (kind, message), as the
    /// server said it (a refused AUTH says WRONGPASS), else that it cannot be reached.
    fn first_dead(&self) -> Option<(String, String)> {
        let k = self
            .clients
            .iter()
            .flat_map(|c| c.conns.iter())
            .find(|k| k.sock.is_none())?;
        Some(match &k.failure {
            Some((kind, message)) if kind != "connection" => (kind.clone(), message.clone()),
            _ => ("connection".into(), format!("cannot reach {}", k.addr)),
        })
    }

    fn run_prefill(&mut self) -> Option<&'static str> {
        let fill = self.order.prefill.clone()?;
        self.prefill = (fill.offset..fill.offset + fill.count).collect();
        let set = self.order.code_of(Action::Set).unwrap_or(0);
        self.prefill_sizes = Some(OpStream::new(&self.order, &[(set, 1.0)], fill.client, 0));
        self.mode = Mode::Prefill;
        self.phase = 0; // nothing of the prefill is recorded
        for ci in 0..self.clients.len() {
            self.refill(ci, now_ns());
        }
        while (!self.prefill.is_empty() || self.clients.iter().any(|c| c.inflight > 0))
            && !self.eng.stop
        {
            if let Some(e) = self.prefill_error.take() {
                self.eng.error("prefill", &e);
                return Some("failed");
            }
            self.turn(0);
        }
        if let Some(e) = self.prefill_error.take() {
            self.eng.error("prefill", &e);
            return Some("failed");
        }
        self.mode = Mode::Idle;
        self.phase = 1;
        if self.eng.stop {
            return Some("interrupted");
        }
        None
    }

    /// Every client starts: closed loop at once, open loop on its schedule from `start`.
    fn start_load(&mut self, start: u64) {
        self.mode = Mode::Load;
        self.load_start = start;
        for c in self.clients.iter_mut() {
            c.schedule = c.timing.map(|t| Schedule::new(start, &t));
            c.offered = c.timing.map(|t| Offered::new(start, t));
        }
        let now = now_ns();
        for ci in 0..self.clients.len() {
            self.refill(ci, now);
        }
    }

    fn begin_phase(&mut self, ops: Option<u64>, measured: bool) {
        self.phase += 1;
        self.remaining = ops.map(|n| n as i64);
        self.budget_stops = measured;
        self.measuring = measured;
        self.phase_over = false;
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
        self.phase_begin = begin;
        self.due_before = begin + duration;
        let ends = pacing::grid(duration, interval);
        let mut prev = 0u64;
        let mut cpu = pacing::cpu_seconds();
        self.tuner.take_polled();
        for (k, &end) in ends.iter().enumerate() {
            let at = begin + end;
            // A replay's trace may end the phase before its time (phase_over).
            while now_ns() < at && !self.eng.stop && !self.phase_over {
                self.turn(at);
            }
            let stopped = self.eng.stop;
            let ended = stopped || self.phase_over;
            let last = ended || k + 1 == ends.len();
            let end = if ended {
                now_ns().saturating_sub(begin).min(end)
            } else {
                end
            };
            if last {
                self.finish_load(interval);
            }
            let rec = self.take_recorder();
            cpu = self.emit(k, rec, prev, end, cpu);
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
        self.phase_begin = begin;
        let mut index = 0usize;
        let mut prev = 0u64;
        let mut boundary = interval;
        let mut cpu = pacing::cpu_seconds();
        self.tuner.take_polled();
        let mut held: Option<(Recorder, u64, u64)> = None; // rec, its start, its end
        loop {
            let release = held
                .as_ref()
                .map(|h| begin + h.2 + interval / 2)
                .unwrap_or(u64::MAX);
            let wake = (begin + boundary).min(release);
            while now_ns() < wake && !self.phase_over && !self.eng.stop {
                self.turn(wake);
            }
            if self.phase_over || self.eng.stop {
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
        let stopped = self.eng.stop && !self.phase_over;
        let end = if self.phase_over {
            self.spent_at
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
        self.mode = Mode::Idle;
        let limit = now_ns() + interval.min(2_000_000_000);
        while (self.clients.iter().any(|c| c.inflight > 0) || self.cluster_parked(None) > 0)
            && now_ns() < limit
        {
            if self.eng.eof {
                break;
            }
            self.turn(limit);
        }
        let phase = self.phase;
        let abandoned: u64 = self
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
        let (a, b) = (self.phase_begin + start, self.phase_begin + end);
        let replayed = self.replay_offered(a, b);
        replayed
            + self
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
    /// (report.rs); returns the CPU seconds at its end.
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
            polled: self.tuner.take_polled() as f64 / 1e9,
        });
        cpu
    }
}

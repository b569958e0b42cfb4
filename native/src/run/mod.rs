//! The loop of one worker and the step it runs: `engine.rs` holds the mio loop's poll,
//! timer and frames; `Run` is one step's state, one part per concern, each owned by its
//! folder (the connections `net/`, the protocol `protocols/`, the recorder `record/`, a
//! cluster's slot map `cluster/`, pub/sub `pubsub/`, a trace's capture and replay `trace/`),
//! with the step's own phase and wake-up state here. The step's methods are this folder's:
//! its phases (`phases.rs`), a turn of the loop (`turn.rs`), sockets and replies
//! (`replies.rs`), what a client sends next (`issue.rs`), and the step's side of a cluster,
//! and a replay (`cluster.rs`, `replay.rs`), an op sent again (`resend.rs`). Nothing outside this
//! folder knows `Run`.

mod cas_tokens;
mod cluster;
pub mod engine;
mod issue;
mod phases;
mod replay;
mod replies;
mod resend;
mod tokens;
mod turn;

use crate::cluster::{Cluster, MAX_NODES};
use crate::net::client::Client;
use crate::net::conn::Conn;
use crate::net::placement::Rendezvous;
use crate::net::Net;
use crate::order::{Action, Protocol, StepOrder};
use crate::pacing::WakeTuner;
use crate::protocols::wire::{Req, REQS};
use crate::protocols::Codec;
use crate::pubsub::{PubSub, PubSubOrder};
use crate::record::{Recorder, KINDS_MAX};
use crate::trace::capture::Capture;
use crate::trace::replay::{Replay, TraceOrder};
use crate::workload::keys::{KeyTable, Keys, Values};
use crate::workload::OpStream;
use engine::Engine;
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;

/// What the loop does with its clients now.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Idle,
    Prefill,
    Load,
}

/// The histogram indexes of the kinds this engine records.
#[derive(Clone, Copy)]
pub struct Kinds {
    pub set: usize,
    pub delete: usize,
    pub publish: usize,
    pub deliver: usize,
    /// The histogram index of each request's kind, by `Req as usize` (a cache-aside's
    /// get is a get's; a request the order's table does not run: never sent, unused).
    pub by_req: [usize; REQS],
}

/// Where the step is: its mode, its phase and the phase's op budget and times.
pub struct Phase {
    pub mode: Mode,
    /// Counts the phases (0: the prefill); an op belongs to the phase it was sent in.
    pub index: u32,
    pub remaining: Option<i64>,
    pub budget_stops: bool,
    /// The phase's budget is spent (at `spent_at`), or a replay ended it.
    pub over: bool,
    pub spent_at: u64,
    /// In the measured phase (not warm-up): where a traced op goes.
    pub measuring: bool,
    pub load_start: u64,
    /// When the measured phase began.
    pub begin: u64,
    /// When the measured phase ends, once known: no op is due at or after it.
    pub due_before: u64,
}

/// The keys the prefill sets, their sizes, and the first failure it met.
pub struct Prefill {
    pub queue: VecDeque<u64>,
    pub sizes: Option<OpStream>,
    pub error: Option<String>,
}

/// The loop's wake-up state: sockets ready and not yet handled, how early the timer is
/// armed ahead of a send (open loop), the next housekeeping.
pub struct Wake {
    pub ready: Vec<(usize, bool, bool, bool)>,
    pub tuner: WakeTuner,
    pub next_housekeeping: u64,
}

/// One step's state, one part per concern.
pub struct Run<'a> {
    eng: &'a mut Engine,
    order: StepOrder,
    codec: Codec,
    net: Net,
    phase: Phase,
    prefill: Prefill,
    keys: Keys,
    rec: Recorder,
    kinds: Kinds,
    pubsub: PubSub,
    /// The step's op trace, when the order asks for one.
    capture: Option<Capture>,
    /// A Redis Cluster's slot map and nodes; None for one server. In a cluster,
    /// `order.pipeline` is a client's depth over all its node connections.
    cluster: Option<Cluster>,
    /// Replaying a trace file.
    replay: Option<Replay>,
    /// The cas tokens of the gets answered, by key, until the key's next cas.
    tokens: cas_tokens::Tokens,
    wake: Wake,
}

/// Run one step order to its end; returns the step_done status.
pub fn run_step(eng: &mut Engine, frame: &Value) -> &'static str {
    eng.go = None;
    let run = match prepare(eng, frame) {
        Ok(run) => run,
        Err((kind, e)) => {
            eng.error(kind, &e);
            return "failed";
        }
    };
    let mut run = run;
    let mut status = run.execute();
    if run.replay.as_ref().map_or(false, |r| r.failure.is_some()) {
        status = "failed"; // an unreadable record, said in one line when it was met
    }
    run.net.close_all(run.eng.poll.registry());
    run.pubsub.close(run.eng.poll.registry());
    status
}

/// The step's state from its order: its codec and servers (a cluster's nodes), its
/// pub/sub and trace parts; a failure is its error kind and message.
fn prepare<'a>(eng: &'a mut Engine, frame: &Value) -> Result<Run<'a>, (&'static str, String)> {
    let order = StepOrder::from_frame(frame).map_err(|e| ("spec", e))?;
    let codec = Codec::for_target(&order.target).map_err(|e| ("target", e))?;
    let addrs = crate::addr::servers(&order.target).map_err(|e| ("target", e))?;
    let (cluster, addrs) =
        crate::cluster::discover(&order, &codec, addrs).map_err(|e| ("connection", e))?;
    let pubsub = PubSubOrder::from_frame(frame).map_err(|e| ("spec", e))?;
    let trace = TraceOrder::from_frame(frame).map_err(|e| ("spec", e))?;
    let mut run = Run::new(eng, order, codec, &addrs, pubsub, cluster).map_err(|e| ("spec", e))?;
    if let Some(o) = trace {
        let ids: Vec<i64> = run.order.clients.iter().map(|c| c.id).collect();
        let (ops, keys) = (&run.order.ops, &run.order.keys);
        let replay = Replay::new(o, ops, &ids, (&keys.prefix, keys.length));
        let replay = replay.map_err(|e| ("spec", e))?;
        run.replay = Some(replay);
    }
    Ok(run)
}

/// What a step order asks that this engine cannot do: publishing without a pubsub part or
/// over a protocol other than RESP, more recorded op kinds than a recorder counts.
fn check_order(order: &StepOrder, has_pubsub: bool) -> Result<(), String> {
    let publish = order.code_of(Action::plain(Req::Publish));
    let publishes = order
        .clients
        .iter()
        .any(|c| c.mix.iter().any(|(code, _)| Some(*code) == publish));
    if publishes && !has_pubsub {
        return Err("step order: publish in the mix but no pubsub part".into());
    }
    if publishes && order.target.protocol != Protocol::Resp {
        return Err(format!(
            "workload.mix: the native engine publishes over RESP only; this target speaks {}",
            order.target.protocol.name()
        ));
    }
    if order.record.len() > KINDS_MAX {
        return Err(format!(
            "step order: {} recorded op kinds; this engine counts at most {}",
            order.record.len(),
            KINDS_MAX
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

/// What a plain connection closed before any reply adds to its message: a TLS port drops
/// a plain client that way, after failing to read a handshake (the plugin's advice).
fn plain_close_hint(advice: &str) -> String {
    match advice {
        "" => " before any reply (is it a TLS port?)".to_string(),
        advice => format!(" before any reply (is it a TLS port? {})", advice),
    }
}

fn kinds_of(order: &StepOrder) -> Result<Kinds, String> {
    let get = order.kind_index("get")?;
    let mut by_req = [get; REQS];
    let named = [
        (Req::Set, "set"),
        (Req::Delete, "delete"),
        (Req::Publish, "publish"),
        (Req::Gets, "gets"),
        (Req::Add, "add"),
        (Req::Replace, "replace"),
        (Req::Cas, "cas"),
        (Req::Append, "append"),
        (Req::Prepend, "prepend"),
        (Req::Incr, "incr"),
        (Req::Decr, "decr"),
        (Req::Touch, "touch"),
    ];
    for (req, name) in named {
        // Always recorded: set, delete, publish; the others when the order runs them.
        let runs = matches!(req, Req::Set | Req::Delete | Req::Publish)
            || Action::named(name)
                .and_then(|a| order.ops.code_of(a))
                .is_some();
        if runs {
            by_req[req as usize] = order.kind_index(name)?;
        }
    }
    Ok(Kinds {
        set: by_req[Req::Set as usize],
        delete: by_req[Req::Delete as usize],
        publish: by_req[Req::Publish as usize],
        deliver: order.kind_index("deliver")?,
        by_req,
    })
}

impl<'a> Run<'a> {
    fn new(
        eng: &'a mut Engine,
        order: StepOrder,
        codec: Codec,
        addrs: &[SocketAddr],
        pubsub: Option<PubSubOrder>,
        cluster: Option<Cluster>,
    ) -> Result<Run<'a>, String> {
        let mut order = order;
        let stride = match &cluster {
            Some(c) => {
                order.pipeline = c.per_conn * addrs.len();
                MAX_NODES
            }
            None => addrs.len(),
        };
        check_order(&order, pubsub.is_some())?;
        let tls = crate::tls::config_for(order.target.tls.as_ref())?;
        let kinds = kinds_of(&order)?;
        let early = Recorder::new(order.open_loop, order.record.len());
        let pubsub = PubSub::new(pubsub, addrs.first().copied(), early);
        let rec = eng.out.recorder(order.open_loop, order.record.len());
        let timeout = order.timeout_ns.unwrap_or(u64::MAX);
        let placement = Rendezvous::new(order.target.placement.as_deref().unwrap_or(&[]));
        let clients = clients_for(&order, addrs);
        let hint = plain_close_hint(&order.target.tls_advice);
        let net = Net::new(clients, tls, placement, stride, timeout, hint);
        let keys = Keys {
            values: Values::new(order.value_bytes, order.value_spread, order.seed),
            table: KeyTable::new(&order.keys.prefix, order.keys.length, order.keys.count),
            buf: Vec::with_capacity(256),
            next_trace: 0,
        };
        Ok(Run {
            capture: order.trace_part.clone().map(Capture::new),
            eng,
            order,
            codec,
            net,
            phase: Phase {
                mode: Mode::Idle,
                index: 1,
                remaining: None,
                budget_stops: false,
                over: false,
                spent_at: 0,
                measuring: false,
                load_start: 0,
                begin: 0,
                due_before: u64::MAX,
            },
            prefill: Prefill {
                queue: VecDeque::new(),
                sizes: None,
                error: None,
            },
            keys,
            rec,
            kinds,
            pubsub,
            cluster,
            replay: None,
            tokens: cas_tokens::Tokens::default(),
            wake: Wake {
                ready: Vec::with_capacity(64),
                tuner: WakeTuner::for_this_process(),
                next_housekeeping: 0,
            },
        })
    }
}

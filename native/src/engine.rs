//! The load loop of one worker: one connection per virtual client (per server), `pipeline`
//! requests in flight on each, refilled after every reply (memtier's `fill_pipeline`),
//! driven by one current-thread epoll loop (mio) with a timerfd for precise wake-ups.

use crate::frames::{In, Out, StepOrder};
use crate::http::Http;
use crate::memcache::{Memcache, Rendezvous};
use crate::pacing::{self, now_ns, Timer};
use crate::proto::{ParseResult, Reply, Req};
use crate::record::Recorder;
use crate::resp::Resp;
use crate::workload::{self, OpStream, StreamSpec, Values, CACHE_ASIDE, DELETE, GET, PUBLISH, SET};
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};

const STDIN: Token = Token(0);
const TIMER: Token = Token(1);
const FIRST_CONN: usize = 2;
const BACKOFF_START: u64 = 1_000_000; // 1 ms, doubled up to BACKOFF_MAX after each failure
const BACKOFF_MAX: u64 = 250_000_000;
const HOUSEKEEPING: u64 = 50_000_000;
const READ_CHUNK: usize = 16 * 1024; // a connection's first read buffer; grows by doubling

/// The protocol a step speaks.
pub enum Codec {
    Resp(Resp),
    Memcache(Memcache, Rendezvous),
    Http(Box<Http>),
}

impl Codec {
    fn hello(&self, out: &mut Vec<u8>) -> usize {
        match self {
            Codec::Resp(r) => r.hello(out),
            _ => 0,
        }
    }

    /// Encode one request; false when it cannot be sent (an HTTP delete without template).
    fn encode(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
    ) -> bool {
        match (self, req) {
            (Codec::Resp(r), Req::Get) => r.get(out, key),
            (Codec::Resp(r), Req::Set) => r.set(out, key, value, ttl),
            (Codec::Resp(r), Req::Delete) => r.delete(out, key),
            (Codec::Memcache(m, _), Req::Get) => m.get(out, key),
            (Codec::Memcache(m, _), Req::Set) => m.set(out, key, value, ttl),
            (Codec::Memcache(m, _), Req::Delete) => m.delete(out, key),
            (Codec::Http(h), Req::Get) => h.get(out, key),
            (Codec::Http(h), Req::Set) => h.set(out, key, value, ttl),
            (Codec::Http(h), Req::Delete) => return h.delete(out, key),
            (_, Req::Hello) => {}
        }
        true
    }

    fn parse(&self, buf: &[u8], req: Req) -> ParseResult {
        match self {
            Codec::Resp(r) => r.parse(buf, req),
            Codec::Memcache(m, _) => m.parse(buf, req),
            Codec::Http(h) => h.parse(buf, req),
        }
    }

    fn server_for(&self, key: &[u8]) -> usize {
        match self {
            Codec::Memcache(_, hash) => hash.index(key),
            _ => 0,
        }
    }
}

pub fn hello(codec: &Codec, out: &mut Vec<u8>) -> usize {
    codec.hello(out)
}

pub fn encode(
    codec: &Codec,
    out: &mut Vec<u8>,
    req: Req,
    key: &[u8],
    value: &[u8],
    ttl: Option<f64>,
) -> bool {
    codec.encode(out, req, key, value, ttl)
}

pub fn parse(codec: &Codec, buf: &[u8], req: Req) -> ParseResult {
    codec.parse(buf, req)
}

pub fn server_for(codec: &Codec, key: &[u8]) -> usize {
    codec.server_for(key)
}

/// The op stream of global client `id` (its group's mix; every system here shares its
/// state across workers, so the whole key space).
pub fn client_stream(order: &StepOrder, id: usize) -> OpStream {
    let mut first = 0;
    let mut group = &order.groups[0];
    for g in &order.groups {
        if id < first + g.concurrency {
            group = g;
            break;
        }
        first += g.concurrency;
    }
    OpStream::new(&StreamSpec {
        mix: &group.mix,
        key_dist: &order.key_distribution,
        keys: order.keys,
        key_offset: 0,
        value_size: &order.value_size,
        ttl: &order.ttl,
        seed: order.seed,
        client_id: id as i64,
    })
}

fn require_loopback(host: &str, where_: &str) -> Result<(), String> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    let ok = h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{}: the workbench only loads loopback targets (127.0.0.1, ::1, localhost); got {:?}",
            where_, host
        ))
    }
}

fn resolve(host: &str, port: u16, where_: &str) -> Result<SocketAddr, String> {
    require_loopback(host, where_)?;
    let h = host.trim_start_matches('[').trim_end_matches(']');
    (h, port)
        .to_socket_addrs()
        .map_err(|e| format!("{}: {}", where_, e))?
        .next()
        .ok_or_else(|| format!("{}: no address for {}", where_, host))
}

/// The protocol and the servers' addresses of a step, from its system options.
pub fn codec_for(system: &str, options: &Value) -> Result<(Codec, Vec<SocketAddr>), String> {
    match system {
        "redis" => {
            let url = options["url"]
                .as_str()
                .unwrap_or("redis://127.0.0.1:6379/0");
            let where_ = "target.options.url";
            let rest = url.strip_prefix("redis://").ok_or_else(|| {
                format!(
                    "{}: the native engine speaks redis:// (no TLS); got {:?}",
                    where_, url
                )
            })?;
            let (auth, rest) = match rest.rfind('@') {
                Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
                None => (None, rest),
            };
            let (hostport, db) = match rest.find('/') {
                Some(i) => (&rest[..i], rest[i + 1..].trim_matches('/')),
                None => (rest, ""),
            };
            let db: i64 = if db.is_empty() {
                0
            } else {
                db.parse()
                    .map_err(|_| format!("{}: bad database in {:?}", where_, url))?
            };
            let (host, port) = split_host_port(hostport, 6379, where_)?;
            let env = |name: &str| {
                options[name]
                    .as_str()
                    .and_then(|v| std::env::var(v).ok())
                    .filter(|v| !v.is_empty())
            };
            let username = env("username_env").or_else(|| {
                auth.map(|a| a.split(':').next().unwrap_or("").to_string())
                    .filter(|u| !u.is_empty())
            });
            let password = env("password_env");
            let addr = resolve(&host, port, where_)?;
            Ok((Codec::Resp(Resp::new(username, password, db)), vec![addr]))
        }
        "memcached" => {
            let list = options["servers"].as_array().cloned().unwrap_or_default();
            let where_ = "target.options.servers";
            if list.is_empty() {
                return Err(format!(
                    "{}: expected at least one memcached server such as 127.0.0.1:11211",
                    where_
                ));
            }
            let mut names = Vec::new();
            let mut addrs = Vec::new();
            for s in list {
                let text = s.as_str().unwrap_or("").trim().to_string();
                let (host, port) = split_host_port(&text, 11211, where_)?;
                addrs.push(resolve(&host, port, where_)?);
                names.push(if host.contains(':') {
                    format!("[{}]:{}", host, port)
                } else {
                    format!("{}:{}", host, port)
                });
            }
            Ok((Codec::Memcache(Memcache, Rendezvous::new(&names)), addrs))
        }
        "http" => {
            let h = Http::from_options(options)?;
            let addr = resolve(&h.host, h.port, "target.options.base_url")?;
            Ok((Codec::Http(Box::new(h)), vec![addr]))
        }
        other => Err(format!(
            "target.system: the native engine drives redis, memcached and http; got {:?}",
            other
        )),
    }
}

fn split_host_port(text: &str, default: u16, where_: &str) -> Result<(String, u16), String> {
    let bad = || format!("{}: expected host:port; got {:?}", where_, text);
    if let Some(rest) = text.strip_prefix('[') {
        let close = rest.find(']').ok_or_else(bad)?;
        let port = rest[close + 1..].trim_start_matches(':');
        let port = if port.is_empty() {
            default
        } else {
            port.parse().map_err(|_| bad())?
        };
        return Ok((rest[..close].to_string(), port));
    }
    match text.rfind(':') {
        Some(i) if text.matches(':').count() == 1 => Ok((
            text[..i].to_string(),
            text[i + 1..].parse().map_err(|_| bad())?,
        )),
        _ => Ok((text.to_string(), default)),
    }
}

/// A request in flight on a connection.
struct Pending {
    req: Req,
    aside: bool,
    index: u64,
    size: u32,
    ttl: Option<f64>,
    t0: u64,
    phase: u32,
    hot: bool,
}

struct Conn {
    addr: SocketAddr,
    sock: Option<TcpStream>,
    connected: bool,
    out: Vec<u8>,
    out_pos: usize,
    inb: Vec<u8>,
    pending: VecDeque<Pending>,
    retry_at: u64,
    backoff: u64,
    progress: u64,
}

struct Client {
    conns: Vec<Conn>,
    stream: OpStream,
    inflight: usize,
    next_intended: u64,
    period: Option<u64>,
    /// An op drawn while its server's connection was down; sent once it is back.
    parked: Option<workload::Op>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Idle,
    Prefill,
    Load,
}

pub struct Engine {
    poll: Poll,
    events: Events,
    timer: Timer,
    input: In,
    pub out: Out,
    pub stop: bool,
    pub eof: bool,
    pub go: Option<Option<f64>>,
    pub orders: VecDeque<Value>,
}

/// One step's state.
struct Run<'a> {
    eng: &'a mut Engine,
    order: StepOrder,
    codec: Codec,
    clients: Vec<Client>,
    values: Values,
    pipeline: usize,
    timeout: u64,
    mode: Mode,
    rec: Recorder,
    phase: u32,
    remaining: Option<i64>,
    budget_stops: bool,
    phase_over: bool,
    spent_at: u64,
    prefill: VecDeque<u64>,
    prefill_sizes: Option<OpStream>,
    prefill_error: Option<String>,
    next_housekeeping: u64,
    down: usize,
    key: Vec<u8>,
    keys: Option<workload::KeyTable>,
    ready: Vec<(usize, bool, bool, bool)>,
    load_start: u64,
    phase_begin: u64,
}

impl Engine {
    pub fn new(out: Out) -> Engine {
        let poll = Poll::new().expect("epoll");
        let timer = Timer::new();
        // SAFETY: fcntl on our own stdin.
        unsafe {
            let flags = libc::fcntl(0, libc::F_GETFL);
            libc::fcntl(0, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        poll.registry()
            .register(&mut SourceFd(&0), STDIN, Interest::READABLE)
            .expect("register stdin");
        poll.registry()
            .register(&mut SourceFd(&timer.fd), TIMER, Interest::READABLE)
            .expect("register timer");
        Engine {
            poll,
            events: Events::with_capacity(1024),
            timer,
            input: In::default(),
            out,
            stop: false,
            eof: false,
            go: None,
            orders: VecDeque::new(),
        }
    }

    fn read_stdin(&mut self) {
        let mut buf = [0u8; 65536];
        loop {
            // SAFETY: reads into buf from our stdin.
            let n = unsafe { libc::read(0, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            if n > 0 {
                self.input.feed(&buf[..n as usize]);
                continue;
            }
            if n == 0 {
                self.eof = true;
                self.stop = true;
            } else {
                let err = std::io::Error::last_os_error();
                if err.kind() == ErrorKind::Interrupted {
                    continue;
                }
                if err.kind() != ErrorKind::WouldBlock {
                    self.eof = true;
                    self.stop = true;
                }
            }
            break;
        }
        loop {
            match self.input.next() {
                Ok(Some(frame)) => match frame["type"].as_str().unwrap_or("") {
                    "step" => {
                        // A step's stop may follow its order in the same read: it is cleared
                        // here, when the order arrives, not when the step begins.
                        self.stop = self.eof;
                        self.orders.push_back(frame)
                    }
                    "go" => self.go = Some(frame["start"].as_f64()),
                    "stop" => self.stop = true,
                    _ => {}
                },
                Ok(None) => break,
                Err(message) => {
                    eprintln!("workbench-native: {}", message);
                    self.eof = true;
                    self.stop = true;
                    break;
                }
            }
        }
    }

    /// Wait for orders (no step running) until `deadline` (0: no deadline).
    pub fn wait_idle(&mut self, deadline: u64) {
        if deadline > 0 {
            self.timer.arm(deadline);
        }
        let _ = self.poll.poll(&mut self.events, None);
        let mut stdin = false;
        for ev in self.events.iter() {
            if ev.token() == STDIN {
                stdin = true;
            } else if ev.token() == TIMER {
                self.timer.clear();
            }
        }
        if stdin {
            self.read_stdin();
        }
    }

    pub fn error(&mut self, kind: &str, message: &str) {
        self.out
            .send(&json!({"type": "error", "kind": kind, "message": message, "trace": ""}));
    }

    /// Run one step order to its end; returns the step_done status.
    pub fn run_step(&mut self, frame: &Value) -> &'static str {
        self.go = None;
        let order = match StepOrder::from_frame(frame) {
            Ok(o) => o,
            Err(e) => {
                self.error("spec", &e.0);
                return "failed";
            }
        };
        let (codec, addrs) = match codec_for(&order.system, &order.system_options) {
            Ok(x) => x,
            Err(e) => {
                self.error("target", &e);
                return "failed";
            }
        };
        let mut run = match Run::new(self, order, codec, &addrs) {
            Ok(r) => r,
            Err(e) => {
                self.error("spec", &e);
                return "failed";
            }
        };
        let status = run.execute();
        run.close_all();
        status
    }
}

impl<'a> Run<'a> {
    fn new(
        eng: &'a mut Engine,
        order: StepOrder,
        codec: Codec,
        addrs: &[SocketAddr],
    ) -> Result<Run<'a>, String> {
        if order
            .groups
            .iter()
            .any(|g| g.mix.iter().any(|(c, _)| *c == PUBLISH))
        {
            return Err(
                "workload.mix: the native engine has no pub/sub; use a Python strategy for publish"
                    .into(),
            );
        }
        let pipeline = std::cmp::max(1, order.option_u64("pipeline", 1)) as usize;
        let timeout_s = order.system_options["timeout"].as_f64().unwrap_or(5.0);
        let timeout = if timeout_s > 0.0 {
            (timeout_s * 1e9) as u64
        } else {
            u64::MAX
        };
        let values = Values::new(workload::max_value_size(&order.value_size), order.seed);
        let all = order.total_clients();
        let period = order.rate.map(|r| (1e9 * all as f64 / r) as u64);
        let mut clients = Vec::new();
        let mut id = 0;
        for g in &order.groups {
            for _ in 0..g.concurrency {
                if id % order.workers == order.worker {
                    let stream = client_stream(&order, id);
                    let conns = addrs
                        .iter()
                        .map(|a| Conn {
                            addr: *a,
                            sock: None,
                            connected: false,
                            out: Vec::with_capacity(4096),
                            out_pos: 0,
                            inb: Vec::with_capacity(READ_CHUNK),
                            pending: VecDeque::new(),
                            retry_at: 0,
                            backoff: BACKOFF_START,
                            progress: 0,
                        })
                        .collect();
                    clients.push(Client {
                        conns,
                        stream,
                        inflight: 0,
                        next_intended: 0,
                        period,
                        parked: None,
                    });
                }
                id += 1;
            }
        }
        let open = order.rate.is_some();
        let keys = workload::KeyTable::new(&order.key_prefix, order.key_length, order.keys);
        Ok(Run {
            eng,
            order,
            codec,
            clients,
            values,
            pipeline,
            timeout,
            mode: Mode::Idle,
            rec: Recorder::new(open),
            phase: 1,
            remaining: None,
            budget_stops: false,
            phase_over: false,
            spent_at: 0,
            prefill: VecDeque::new(),
            prefill_sizes: None,
            prefill_error: None,
            next_housekeeping: 0,
            down: 0,
            key: Vec::with_capacity(256),
            keys,
            ready: Vec::with_capacity(64),
            load_start: 0,
            phase_begin: 0,
        })
    }

    fn token(&self, ci: usize, si: usize) -> Token {
        Token(FIRST_CONN + ci * self.clients[0].conns.len() + si)
    }

    /// Open (or reopen) a connection; the handshake (AUTH, SELECT) is queued first.
    fn open(&mut self, ci: usize, si: usize) -> Result<(), String> {
        let token = self.token(ci, si);
        let conn = &mut self.clients[ci].conns[si];
        if conn.sock.is_none() && conn.retry_at > 0 {
            self.down -= 1;
            conn.retry_at = 0;
        }
        let mut sock = TcpStream::connect(conn.addr)
            .map_err(|e| format!("cannot connect to {}: {}", conn.addr, e))?;
        let _ = sock.set_nodelay(true);
        self.eng
            .poll
            .registry()
            .register(&mut sock, token, Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| e.to_string())?;
        conn.sock = Some(sock);
        conn.connected = false;
        conn.out.clear();
        conn.out_pos = 0;
        conn.inb.clear();
        conn.progress = now_ns();
        let n = self.codec.hello(&mut conn.out);
        for _ in 0..n {
            conn.pending.push_back(Pending {
                req: Req::Hello,
                aside: false,
                index: 0,
                size: 0,
                ttl: None,
                t0: 0,
                phase: 0,
                hot: false,
            });
        }
        Ok(())
    }

    fn execute(&mut self) -> &'static str {
        // Connect every client; a server that is not there fails the step in one line.
        for ci in 0..self.clients.len() {
            for si in 0..self.clients[ci].conns.len() {
                if let Err(e) = self.open(ci, si) {
                    self.eng.error("connection", &e);
                    return "failed";
                }
            }
        }
        let limit = now_ns()
            + (self.order.system_options["connect_timeout"]
                .as_f64()
                .unwrap_or(5.0)
                .max(0.1)
                * 1e9) as u64;
        while !self.all_connected() {
            if let Some(e) = self.first_dead() {
                self.eng.error("connection", &e);
                return "failed";
            }
            if now_ns() >= limit {
                self.eng
                    .error("timeout", "connecting to the server timed out");
                return "failed";
            }
            if self.eng.stop {
                return "interrupted";
            }
            self.turn(limit);
        }
        if self.order.prefill {
            if let Some(status) = self.run_prefill() {
                return status;
            }
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
        let all = self.order.total_clients();
        let mine = self.clients.len();
        let warm_ops = workload::share(self.order.warmup_ops, mine, all).filter(|&n| n > 0);
        let budget = workload::share(self.order.ops, mine, all).filter(|&n| n > 0);
        let interval = (self.order.interval * 1e9) as u64;
        let warm_time = warm_ops.is_none() && self.order.warmup > 0.0;
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
            begin = start + (self.order.warmup * 1e9) as u64;
            while now_ns() < begin && !self.eng.stop {
                self.turn(begin);
            }
        }
        if self.eng.stop {
            self.mode = Mode::Idle;
            return "interrupted";
        }
        if warm_ops.is_some() || warm_time {
            self.begin_phase(budget, true);
        }
        let status = match (budget, self.order.duration) {
            (None, Some(d)) => self.measure_for((d * 1e9) as u64, begin, interval),
            _ => self.measure_ops(begin, interval),
        };
        self.mode = Mode::Idle;
        status
    }

    fn all_connected(&self) -> bool {
        self.clients
            .iter()
            .all(|c| c.conns.iter().all(|k| k.connected && k.pending.is_empty()))
    }

    fn first_dead(&self) -> Option<String> {
        self.clients
            .iter()
            .flat_map(|c| c.conns.iter())
            .find(|k| k.sock.is_none())
            .map(|k| format!("cannot reach {}", k.addr))
    }

    fn run_prefill(&mut self) -> Option<&'static str> {
        let (offset, count) = workload::partition(
            self.order.keys,
            self.order.workers as u64,
            self.order.worker as u64,
        );
        self.prefill = (offset..offset + count).collect();
        let mix = [(SET, 1.0)];
        self.prefill_sizes = Some(OpStream::new(&StreamSpec {
            mix: &mix,
            key_dist: &self.order.key_distribution,
            keys: self.order.keys,
            key_offset: 0,
            value_size: &self.order.value_size,
            ttl: &self.order.ttl,
            seed: self.order.seed,
            client_id: -1,
        }));
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

    fn start_load(&mut self, start: u64) {
        self.mode = Mode::Load;
        self.load_start = start;
        for c in self.clients.iter_mut() {
            if let Some(p) = c.period {
                c.next_intended = start + p;
            }
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
        self.phase_over = false;
        self.rec = Recorder::new(self.order.rate.is_some());
    }

    /// A measured phase of a fixed duration on the grid of `pacing::grid`.
    fn measure_for(&mut self, duration: u64, begin: u64, interval: u64) -> &'static str {
        self.phase_begin = begin;
        let ends = pacing::grid(duration, interval);
        let mut prev = 0u64;
        let mut cpu = pacing::cpu_seconds();
        for (k, &end) in ends.iter().enumerate() {
            let at = begin + end;
            while now_ns() < at && !self.eng.stop {
                self.turn(at);
            }
            let stopped = self.eng.stop;
            let last = stopped || k + 1 == ends.len();
            let end = if stopped {
                now_ns().saturating_sub(begin).min(end)
            } else {
                end
            };
            if last {
                self.finish_load(interval);
            }
            let rec = std::mem::replace(&mut self.rec, Recorder::new(self.order.rate.is_some()));
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
                let stopped = self.eng.stop && !self.phase_over;
                let end = if self.phase_over {
                    self.spent_at
                } else {
                    now_ns()
                }
                .saturating_sub(begin);
                self.finish_load(interval);
                let mut rec =
                    std::mem::replace(&mut self.rec, Recorder::new(self.order.rate.is_some()));
                let mut start = prev;
                if let Some((mut h, h_start, _)) = held.take() {
                    h.absorb(rec);
                    rec = h;
                    start = h_start;
                }
                self.emit(index, rec, start, end.max(start), cpu);
                return if stopped { "interrupted" } else { "completed" };
            }
            let now = now_ns();
            if now >= release {
                if let Some((h, h_start, h_end)) = held.take() {
                    cpu = self.emit(index, h, h_start, h_end, cpu);
                    index += 1;
                }
            }
            if now >= begin + boundary {
                let rec =
                    std::mem::replace(&mut self.rec, Recorder::new(self.order.rate.is_some()));
                held = Some((rec, prev, boundary));
                prev = boundary;
                boundary += interval;
            }
        }
    }

    /// Stop issuing, wait for the ops still in flight (at most 2 s or one interval);
    /// those that do not come back are counted as "abandoned".
    fn finish_load(&mut self, interval: u64) {
        self.mode = Mode::Idle;
        let limit = now_ns() + interval.min(2_000_000_000);
        while self.clients.iter().any(|c| c.inflight > 0) && now_ns() < limit {
            if self.eng.eof {
                break;
            }
            self.turn(limit);
        }
        let phase = self.phase;
        let mut abandoned = 0;
        for c in self.clients.iter_mut() {
            for k in c.conns.iter_mut() {
                abandoned += k
                    .pending
                    .iter()
                    .filter(|p| p.req != Req::Hello && p.phase == phase)
                    .count() as u64;
            }
        }
        self.rec
            .errors_n("abandoned", "no reply when the phase ended", abandoned);
    }

    fn emit(
        &mut self,
        index: usize,
        mut rec: Recorder,
        start: u64,
        end: u64,
        cpu_before: f64,
    ) -> f64 {
        let cpu = pacing::cpu_seconds();
        if let Some(period) = self.clients.first().and_then(|c| c.period) {
            // Offered: the schedule points (start + n*period, n >= 1) inside the span, whether
            // or not a client that fell behind could issue them yet.
            let points = |t: u64| (self.phase_begin + t).saturating_sub(self.load_start) / period;
            rec.offered = (points(end) - points(start)) * self.clients.len() as u64;
        }
        let duration = (end - start) as f64 / 1e9;
        let stats = rec.to_json(duration, self.order.worker, cpu - cpu_before);
        self.eng.out.send(&json!({
            "type": "interval",
            "index": index,
            "elapsed": end as f64 / 1e9,
            "warmup": false,
            "stats": stats,
        }));
        cpu
    }

    fn close_all(&mut self) {
        for ci in 0..self.clients.len() {
            for si in 0..self.clients[ci].conns.len() {
                if let Some(mut s) = self.clients[ci].conns[si].sock.take() {
                    let _ = self.eng.poll.registry().deregister(&mut s);
                }
            }
        }
    }

    /// One turn of the loop: wait for sockets, stdin or the timer (at most until
    /// `deadline`, 0: none), then handle what happened.
    fn turn(&mut self, deadline: u64) {
        let mut wake = if deadline > 0 { deadline } else { u64::MAX };
        if self.mode == Mode::Load && self.order.rate.is_some() {
            for c in &self.clients {
                if c.inflight < self.pipeline {
                    wake = wake.min(c.next_intended);
                }
            }
        }
        wake = wake.min(self.next_housekeeping.max(1));
        if self.down > 0 {
            for c in &self.clients {
                for k in &c.conns {
                    if k.sock.is_none() {
                        wake = wake.min(k.retry_at);
                    }
                }
            }
        }
        let now = now_ns();
        let timeout = if wake > now {
            self.eng.timer.arm(wake);
            None
        } else {
            Some(std::time::Duration::from_millis(0))
        };
        let _ = self.eng.poll.poll(&mut self.eng.events, timeout);
        let mut stdin = false;
        let mut timer = false;
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        for ev in self.eng.events.iter() {
            match ev.token() {
                STDIN => stdin = true,
                TIMER => timer = true,
                Token(t) => ready.push((
                    t - FIRST_CONN,
                    ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                    ev.is_writable(),
                    ev.is_read_closed() || ev.is_error(),
                )),
            }
        }
        self.eng.events.clear();
        if timer {
            self.eng.timer.clear();
        }
        if stdin {
            self.eng.read_stdin();
        }
        let per = self.clients.first().map(|c| c.conns.len()).unwrap_or(1);
        for &(t, readable, writable, closing) in ready.iter() {
            let (ci, si) = (t / per, t % per);
            if ci >= self.clients.len() {
                continue;
            }
            if writable {
                self.on_writable(ci, si);
            }
            if readable {
                self.on_readable(ci, si, closing);
            }
        }
        self.ready = ready;
        let now = now_ns();
        if self.mode == Mode::Load && self.order.rate.is_some() {
            for ci in 0..self.clients.len() {
                if self.clients[ci].next_intended <= now {
                    self.refill(ci, now);
                }
            }
        }
        if now >= self.next_housekeeping {
            self.next_housekeeping = now + HOUSEKEEPING;
            self.housekeeping(now);
        } else if self.down > 0 && self.mode != Mode::Idle {
            self.retry_due(now);
        }
    }

    fn retry_due(&mut self, now: u64) {
        for ci in 0..self.clients.len() {
            for si in 0..self.clients[ci].conns.len() {
                let k = &self.clients[ci].conns[si];
                if k.sock.is_none() && now >= k.retry_at {
                    self.reconnect(ci, si);
                }
            }
        }
    }

    fn housekeeping(&mut self, now: u64) {
        for ci in 0..self.clients.len() {
            for si in 0..self.clients[ci].conns.len() {
                let k = &self.clients[ci].conns[si];
                if k.sock.is_some()
                    && !k.pending.is_empty()
                    && now.saturating_sub(k.progress) > self.timeout
                {
                    let secs = self.timeout as f64 / 1e9;
                    self.drop_conn(
                        ci,
                        si,
                        "timeout",
                        &format!("no reply from {} within {}s", k.addr, secs),
                    );
                }
            }
        }
        if self.down > 0 && self.mode != Mode::Idle {
            self.retry_due(now);
        }
    }

    fn reconnect(&mut self, ci: usize, si: usize) {
        if let Err(e) = self.open(ci, si) {
            self.drop_conn(ci, si, "connection", &e);
        }
    }

    fn on_writable(&mut self, ci: usize, si: usize) {
        let k = &mut self.clients[ci].conns[si];
        if !k.connected {
            let sock = match k.sock.as_ref() {
                Some(s) => s,
                None => return,
            };
            if let Ok(Some(e)) | Err(e) = sock.take_error() {
                let msg = format!("cannot connect to {}: {}", k.addr, e);
                self.drop_conn(ci, si, "connection", &msg);
                return;
            }
            if sock.peer_addr().is_err() {
                return; // still connecting
            }
            k.connected = true;
            k.backoff = BACKOFF_START;
            if self.mode != Mode::Idle {
                self.refill(ci, now_ns());
            }
        }
        self.flush(ci, si);
    }

    fn flush(&mut self, ci: usize, si: usize) {
        let k = &mut self.clients[ci].conns[si];
        if !k.connected {
            return;
        }
        let sock = match k.sock.as_mut() {
            Some(s) => s,
            None => return,
        };
        while k.out_pos < k.out.len() {
            match sock.write(&k.out[k.out_pos..]) {
                Ok(0) => break,
                Ok(n) => k.out_pos += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    let msg = format!("writing to {}: {}", k.addr, e);
                    self.drop_conn(ci, si, "connection", &msg);
                    return;
                }
            }
        }
        k.out.clear();
        k.out_pos = 0;
    }

    fn on_readable(&mut self, ci: usize, si: usize, closing: bool) {
        let mut closed: Option<String> = None;
        {
            let k = &mut self.clients[ci].conns[si];
            let sock = match k.sock.as_mut() {
                Some(s) => s,
                None => return,
            };
            loop {
                let len = k.inb.len();
                if k.inb.capacity() - len < READ_CHUNK / 4 {
                    k.inb.reserve(len.max(READ_CHUNK));
                }
                let cap = k.inb.capacity();
                // SAFETY: the bytes past len are only exposed after read() initialised them.
                unsafe { k.inb.set_len(cap) };
                let r = sock.read(&mut k.inb[len..]);
                let got = match r {
                    Ok(n) => n,
                    Err(ref e) if e.kind() == ErrorKind::WouldBlock => 0,
                    Err(ref e) if e.kind() == ErrorKind::Interrupted => {
                        k.inb.truncate(len);
                        continue;
                    }
                    Err(e) => {
                        k.inb.truncate(len);
                        closed = Some(format!("reading from {}: {}", k.addr, e));
                        break;
                    }
                };
                k.inb.truncate(len + got);
                match r {
                    Ok(0) => {
                        closed = Some(format!("{} closed the connection", k.addr));
                        break;
                    }
                    // A short read drained the socket: with edge-triggered epoll, anything
                    // arriving later raises a new event, so no read to see EAGAIN.
                    // (Unless the peer is closing: then read on to see the end.)
                    Ok(n) if n < cap - len && !closing => break,
                    Ok(_) => continue,
                    _ => break,
                }
            }
        }
        self.consume(ci, si);
        if let Some(msg) = closed {
            if self.clients[ci].conns[si].sock.is_some() {
                self.drop_conn(ci, si, "connection", &msg);
            }
        }
    }

    /// Parse every complete reply, record it, refill the pipeline, then write once.
    fn consume(&mut self, ci: usize, si: usize) {
        let now = now_ns();
        let mut pos = 0;
        let mut close_after = false;
        loop {
            let k = &mut self.clients[ci].conns[si];
            let req = match k.pending.front() {
                Some(p) => p.req,
                None => break,
            };
            let parsed = match self.codec.parse(&k.inb[pos..], req) {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(e) => {
                    let msg = format!("{}: {}", k.addr, e);
                    k.inb.clear();
                    self.drop_conn(ci, si, "protocol", &msg);
                    return;
                }
            };
            let p = k
                .pending
                .pop_front()
                .expect("a reply answers the oldest request");
            k.progress = now;
            let start = pos;
            pos += parsed.used;
            close_after |= parsed.close;
            if p.req == Req::Hello {
                if let Reply::Failed(_, m) = &parsed.reply {
                    let m = m.clone();
                    self.drop_conn(ci, si, "server", &m);
                    return;
                }
                continue;
            }
            let value_len = parsed.reply.value_len();
            let _ = start;
            self.answered(ci, p, parsed.reply, value_len, now);
            if close_after {
                break;
            }
        }
        let k = &mut self.clients[ci].conns[si];
        if pos > 0 {
            k.inb.drain(..pos);
        }
        if close_after {
            self.drop_conn(
                ci,
                si,
                "connection",
                "the server closed the connection after a reply",
            );
            return;
        }
        self.refill(ci, now);
    }

    fn answered(&mut self, ci: usize, p: Pending, reply: Reply, value_len: usize, now: u64) {
        let in_phase = p.phase == self.phase && self.mode != Mode::Prefill;
        let c = &mut self.clients[ci];
        match (p.req, reply) {
            (_, Reply::Failed(kind, msg)) => {
                c.inflight -= 1;
                if self.mode == Mode::Prefill {
                    self.prefill_error.get_or_insert(msg);
                } else if in_phase {
                    self.rec.error(&kind, &msg);
                }
            }
            (Req::Get, reply) => {
                let hit = matches!(reply, Reply::Hit { .. });
                if in_phase {
                    let r = &mut self.rec;
                    r.latency(GET, now.saturating_sub(p.t0));
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
                if !hit && p.aside && self.mode != Mode::Idle {
                    // Cache-aside: the miss is filled before the client's next op.
                    self.send(
                        ci,
                        Req::Set,
                        p.index,
                        p.size as usize,
                        p.ttl,
                        now,
                        p.phase,
                        false,
                        false,
                    );
                } else {
                    self.clients[ci].inflight -= 1;
                }
            }
            (Req::Set, _) => {
                c.inflight -= 1;
                if in_phase {
                    self.rec.latency(SET, now.saturating_sub(p.t0));
                    self.rec.bytes_out += p.size as u64;
                }
            }
            (Req::Delete, _) => {
                c.inflight -= 1;
                if in_phase {
                    self.rec.latency(DELETE, now.saturating_sub(p.t0));
                }
            }
            (Req::Hello, _) => {}
        }
    }

    /// Queue one request on the connection its key belongs to (written by `refill`).
    #[allow(clippy::too_many_arguments)]
    fn send(
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
        let o = &self.order;
        let key = workload::key_of(
            &self.keys,
            &mut self.key,
            &o.key_prefix,
            index,
            o.key_length,
        );
        let si = self.codec.server_for(key);
        let value = if req == Req::Set {
            self.values.value(index, size)
        } else {
            &[][..]
        };
        let k = &mut self.clients[ci].conns[si];
        if !self.codec.encode(&mut k.out, req, key, value, ttl) {
            // An HTTP delete without a template: counted, never sent.
            self.clients[ci].inflight -= 1;
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
        });
    }

    /// Take one op from the phase budget; false: do not issue it.
    fn reserve(&mut self, now: u64) -> bool {
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
    fn refill(&mut self, ci: usize, now: u64) {
        loop {
            let c = &self.clients[ci];
            if c.inflight >= self.pipeline
                || c.conns.iter().any(|k| !k.connected) && c.conns.len() == 1
            {
                break;
            }
            match self.mode {
                Mode::Idle => break,
                Mode::Prefill => {
                    let index = match self.prefill.pop_front() {
                        Some(i) => i,
                        None => break,
                    };
                    let size = self
                        .prefill_sizes
                        .as_mut()
                        .map(|s| s.next_size())
                        .unwrap_or(0);
                    self.clients[ci].inflight += 1;
                    self.send(ci, Req::Set, index, size, None, now, 0, false, false);
                }
                Mode::Load => {
                    let c = &mut self.clients[ci];
                    let t0 = match c.period {
                        Some(p) => {
                            if c.next_intended > now {
                                break;
                            }
                            let t = c.next_intended;
                            c.next_intended += p;
                            t
                        }
                        None => now,
                    };
                    let op = match c.parked.take() {
                        Some(op) => op,
                        None => {
                            if !self.reserve(now) {
                                self.mode = Mode::Idle;
                                break;
                            }
                            self.clients[ci].stream.next_op()
                        }
                    };
                    let c = &mut self.clients[ci];
                    if c.conns.len() > 1 {
                        let o = &self.order;
                        let key = workload::key_of(
                            &self.keys,
                            &mut self.key,
                            &o.key_prefix,
                            op.index,
                            o.key_length,
                        );
                        let si = self.codec.server_for(key);
                        if !c.conns[si].connected {
                            c.parked = Some(op);
                            break;
                        }
                    }
                    if c.period.is_some() {
                        self.rec.lag(now - t0);
                    }
                    let hot = op.index < c.stream.hot_end;
                    c.inflight += 1;
                    let phase = self.phase;
                    // A cache-aside op is a get that sets on a miss.
                    let (req, aside) = match op.code {
                        GET => (Req::Get, false),
                        CACHE_ASIDE => (Req::Get, true),
                        SET => (Req::Set, false),
                        _ => (Req::Delete, false),
                    };
                    self.send(ci, req, op.index, op.size, op.ttl, t0, phase, aside, hot);
                }
            }
        }
        // One write per connection for everything queued (a cache-aside set included).
        for si in 0..self.clients[ci].conns.len() {
            let k = &self.clients[ci].conns[si];
            if k.out.len() > k.out_pos {
                self.flush(ci, si);
            }
        }
    }

    /// Close a connection: what was in flight on it failed (counted once each, under
    /// `kind`), and it is reopened after a backoff.
    fn drop_conn(&mut self, ci: usize, si: usize, kind: &str, message: &str) {
        let phase = self.phase;
        let measuring = self.mode != Mode::Prefill;
        let now = now_ns();
        let c = &mut self.clients[ci];
        let k = &mut c.conns[si];
        if let Some(mut s) = k.sock.take() {
            let _ = self.eng.poll.registry().deregister(&mut s);
        }
        let was_connected = k.connected;
        k.connected = false;
        k.out.clear();
        k.out_pos = 0;
        k.inb.clear();
        let mut failed = 0u64;
        let mut ops = 0usize;
        for p in k.pending.drain(..) {
            if p.req == Req::Hello {
                continue;
            }
            ops += 1;
            if p.phase == phase {
                failed += 1;
            }
        }
        c.inflight -= ops.min(c.inflight);
        self.down += 1;
        // Closed with nothing in flight (an HTTP `Connection: close`, an idle keep-alive
        // ended by the server): reopened at once, nothing failed.
        if was_connected && ops == 0 {
            k.retry_at = now;
            return;
        }
        k.retry_at = now + k.backoff;
        k.backoff = (k.backoff * 2).min(BACKOFF_MAX);
        if self.mode == Mode::Prefill {
            self.prefill_error
                .get_or_insert_with(|| message.to_string());
            return;
        }
        if measuring {
            // A failed connection attempt counts once and takes an op from the budget, so
            // that a run against a dead server still ends.
            if failed == 0 && self.mode == Mode::Load && !self.reserve(now) {
                self.mode = Mode::Idle;
            }
            self.rec.errors_n(kind, message, failed.max(1));
        }
    }
}

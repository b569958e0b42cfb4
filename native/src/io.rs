//! The mio loop of one worker: stdin for orders, a timerfd for precise wake-ups, and one
//! connection per virtual client (per server) with up to `pipeline` requests in flight,
//! refilled once half of it is free (`issue.rs`; memtier's `fill_pipeline` refills after
//! every reply). What a client sends next and
//! what a reply counts as is `issue.rs`; the step's phases are `step.rs`.

use crate::client::{Pending, BACKOFF_START, READ_CHUNK};
use crate::frames::{In, Out};
use crate::pacing::{self, now_ns, Timer};
use crate::proto::{Reply, Req};
use crate::report::Reporter;
use crate::step::{self, Run};
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};

const STDIN: Token = Token(0);
const TIMER: Token = Token(1);
pub const FIRST_CONN: usize = 2; // then the clients' connections, then subscribers'
const BACKOFF_MAX: u64 = 250_000_000; // a reconnection's backoff doubles up to this
const HOUSEKEEPING: u64 = 50_000_000;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Idle,
    Prefill,
    Load,
}

pub struct Engine {
    pub poll: Poll,
    pub events: Events,
    pub timer: Timer,
    input: In,
    /// Every frame out goes through the reporting thread, in order (report.rs).
    pub out: Reporter,
    pub stop: bool,
    pub eof: bool,
    pub go: Option<Option<f64>>,
    pub orders: VecDeque<Value>,
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
            out: Reporter::start(out),
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
    /// Run one step order to its end; returns the step_done status.
    pub fn run_step(&mut self, frame: &Value) -> &'static str {
        self.go = None;
        step::run_step(self, frame)
    }
}

impl<'a> Run<'a> {
    fn token(&self, ci: usize, si: usize) -> Token {
        Token(FIRST_CONN + ci * self.stride + si)
    }

    /// Open (or reopen) a connection; the handshake (AUTH, SELECT) is queued first.
    pub fn open(&mut self, ci: usize, si: usize) -> Result<(), String> {
        let token = self.token(ci, si);
        let tls = self.tls_session()?;
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
        conn.tls = tls;
        conn.connected = false;
        conn.out.clear();
        conn.out_pos = 0;
        conn.inb.clear();
        conn.progress = now_ns();
        let n = self.codec.hello(&mut conn.out);
        for _ in 0..n {
            conn.pending.push_back(Pending::hello());
        }
        Ok(())
    }

    pub fn close_all(&mut self) {
        for ci in 0..self.clients.len() {
            for si in 0..self.clients[ci].conns.len() {
                if let Some(mut s) = self.clients[ci].conns[si].sock.take() {
                    let _ = self.eng.poll.registry().deregister(&mut s);
                }
            }
        }
    }

    /// One turn of the loop: wait for sockets, stdin or the timer (at most until
    /// `deadline`, 0: none), then send what is due and handle what happened.
    pub fn turn(&mut self, deadline: u64) {
        let due = self.next_due();
        let other = self.other_wake(deadline);
        let now = now_ns();
        // Rent or buy: a send due sooner than a wake-up costs, or a reply awaited within
        // that time of the last activity, is polled for rather than slept to.
        // Not on a contended machine, where a poller only gets its fair share of a CPU.
        // A pipelined closed loop polls for replies too: a sleeping client is woken by
        // the server's write, and that wake-up is the server's CPU (perf on redis-server
        // at c=16 P=16: `sock_def_readable` waking the client, 5-7% of its samples under
        // the native engine against 2.5% under the busier redis-benchmark).
        let polling = self.mode == Mode::Load
            && (self.order.open_loop || self.order.pipeline > 1)
            && self.tuner.may_poll(now);
        let send_near = polling && due <= other && due < now + pacing::WAKE_COST;
        let reply_near = polling
            && now < self.tuner.active_at + pacing::WAKE_COST
            && self.clients.iter().any(|c| c.inflight > 0);
        if send_near || reply_near {
            let until = due.min(other).min(now + pacing::WAKE_COST);
            let (stdin, _) = self.poll_idle(until);
            self.after_wake(stdin);
            return;
        }
        let armed = other.min(self.tuner.arm_at(due, now));
        let timeout = if armed > now {
            self.eng.timer.arm(armed);
            None
        } else {
            Some(std::time::Duration::from_millis(0))
        };
        let _ = self.eng.poll.poll(&mut self.eng.events, timeout);
        let (stdin, timer) = self.collect_events();
        if timer {
            self.eng.timer.clear();
            self.tuner.observe(armed, now_ns());
        }
        // Woken by the timer, or already inside the early window (a reply woke the loop
        // there): spin the rest of the way, counted against the spin budget. Without this,
        // the loop turned with zero timeouts until the send, a spin nothing counted.
        if (timer || armed <= now) && due <= other {
            self.dispatch(); // replies that came with the wake-up keep their times
            self.spin_to(due);
        }
        self.after_wake(stdin);
    }

    /// What every turn does once awake: send what is due, read orders, handle sockets.
    fn after_wake(&mut self, stdin: bool) {
        let mut busy = self.issue_due(now_ns());
        if stdin {
            self.eng.read_stdin();
        }
        busy |= !self.ready.is_empty();
        self.dispatch();
        let now = now_ns();
        busy |= self.issue_due(now);
        if busy {
            self.tuner.active_at = now;
        }
        if now >= self.next_housekeeping {
            self.next_housekeeping = now + HOUSEKEEPING;
            self.housekeeping(now);
        } else if self.down > 0 && self.mode != Mode::Idle {
            self.retry_due(now);
        }
    }

    /// Poll without sleeping until something happens or `until`; the empty polls are idle
    /// polling (`WakeTuner::polled`). Returns (stdin, timer) as `collect_events` does.
    fn poll_idle(&mut self, until: u64) -> (bool, bool) {
        let mut last = now_ns();
        loop {
            let zero = Some(std::time::Duration::from_millis(0));
            let _ = self.eng.poll.poll(&mut self.eng.events, zero);
            if !self.eng.events.is_empty() {
                break;
            }
            last = self.tuner.idle_poll(last);
            if last >= until {
                break;
            }
            std::hint::spin_loop();
        }
        let (stdin, timer) = self.collect_events();
        if timer {
            self.eng.timer.clear();
        }
        (stdin, timer)
    }

    /// Woken ahead of a send on purpose: poll without sleeping until it is due (at most
    /// `SPIN_MAX`), replies handled as they come so that their times stay true.
    fn spin_to(&mut self, due: u64) {
        if due.saturating_sub(now_ns()) > pacing::SPIN_MAX {
            return;
        }
        let began = now_ns();
        let mut last = began;
        while last < due {
            let zero = Some(std::time::Duration::from_millis(0));
            let _ = self.eng.poll.poll(&mut self.eng.events, zero);
            if self.eng.events.is_empty() {
                last = self.tuner.idle_poll(last);
                std::hint::spin_loop();
                continue;
            }
            let (stdin, _) = self.collect_events();
            if stdin {
                self.eng.read_stdin();
            }
            self.dispatch();
            last = now_ns();
        }
        self.tuner.spent(now_ns().saturating_sub(began));
    }

    /// The earliest intended start of an open-loop client with a free slot (MAX: none).
    fn next_due(&self) -> u64 {
        if self.mode != Mode::Load || !self.order.open_loop {
            return u64::MAX;
        }
        self.clients
            .iter()
            .filter(|c| c.inflight < self.order.pipeline)
            .filter_map(|c| c.schedule.as_ref().map(|s| s.next))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The deadline, housekeeping and the reconnections due, whichever comes first.
    fn other_wake(&self, deadline: u64) -> u64 {
        let mut wake = if deadline > 0 { deadline } else { u64::MAX };
        wake = wake.min(self.next_housekeeping.max(1));
        if self.down > 0 {
            for k in self.clients.iter().flat_map(|c| c.conns.iter()) {
                if k.sock.is_none() {
                    wake = wake.min(k.retry_at);
                }
            }
        }
        wake
    }

    /// The poll's events: whether stdin and the timer fired; sockets are added to
    /// `self.ready` (until `dispatch` handles them).
    fn collect_events(&mut self) -> (bool, bool) {
        let (mut stdin, mut timer) = (false, false);
        for ev in self.eng.events.iter() {
            match ev.token() {
                STDIN => stdin = true,
                TIMER => timer = true,
                Token(t) => self.ready.push((
                    t - FIRST_CONN,
                    ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                    ev.is_writable(),
                    ev.is_read_closed() || ev.is_error(),
                )),
            }
        }
        self.eng.events.clear();
        (stdin, timer)
    }

    /// Handle the sockets that were ready: finish connects, write, read and consume.
    fn dispatch(&mut self) {
        let mut ready = std::mem::take(&mut self.ready);
        let per = self.stride;
        for &(t, readable, writable, closing) in ready.iter() {
            let (ci, si) = (t / per, t % per);
            if ci >= self.clients.len() {
                // Past the clients' connections: a subscriber's (pubsub.rs).
                self.subscriber_event(t - self.clients.len() * per, closing);
                continue;
            }
            if writable {
                self.on_writable(ci, si);
            }
            if readable {
                self.on_readable(ci, si, closing);
            }
        }
        // Handled once: with edge-triggered readiness, an event dropped unhandled would
        // never come again (the connection would wait for its timeout).
        ready.clear();
        self.ready = ready;
    }

    /// Open loop: every client whose next op is due sends it (as its pipeline allows).
    fn issue_due(&mut self, now: u64) -> bool {
        if self.mode != Mode::Load || !self.order.open_loop {
            return false;
        }
        let mut any = false;
        for ci in 0..self.clients.len() {
            if self.clients[ci]
                .schedule
                .as_ref()
                .map_or(false, |s| s.next <= now)
            {
                self.refill(ci, now);
                any = true;
            }
        }
        any
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
        self.cluster_housekeeping(now);
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
            if k.tls.is_some() {
                self.tls_writable(ci, si); // connected once the handshake is done (tls.rs)
                return;
            }
            k.connected = true;
            k.backoff = BACKOFF_START;
            if self.mode != Mode::Idle {
                self.refill(ci, now_ns());
            }
        }
        self.flush(ci, si);
    }

    pub fn flush(&mut self, ci: usize, si: usize) {
        let k = &mut self.clients[ci].conns[si];
        if !k.connected {
            return;
        }
        if k.tls.is_some() {
            self.tls_flush(ci, si);
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
        if self.clients[ci].conns[si].tls.is_some() {
            self.tls_readable(ci, si);
            return;
        }
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
                        let hint = crate::tls::plain_close_hint(&self.codec, k);
                        closed = Some(format!("{} closed the connection{}", k.addr, hint));
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
    pub(crate) fn consume(&mut self, ci: usize, si: usize) {
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
            k.answered = true;
            let start = pos;
            pos += parsed.used;
            close_after |= parsed.close;
            if p.req == Req::Hello {
                if let Reply::Failed(kind, m) = &parsed.reply {
                    let (kind, m) = (kind.clone(), format!("{}: {}", k.addr, m));
                    self.drop_conn(ci, si, &kind, &m);
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

    /// Close a connection: what was in flight on it failed (counted once each, under
    /// `kind`), and it is reopened after a backoff.
    pub fn drop_conn(&mut self, ci: usize, si: usize, kind: &str, message: &str) {
        let phase = self.phase;
        let measuring = self.mode != Mode::Prefill;
        let now = now_ns();
        let c = &mut self.clients[ci];
        let k = &mut c.conns[si];
        if let Some(mut s) = k.sock.take() {
            let _ = self.eng.poll.registry().deregister(&mut s);
        }
        k.tls = None;
        let was_connected = k.connected;
        k.failure = Some((kind.to_string(), message.to_string()));
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
            if let (Some(rp), true) = (self.replay.as_mut(), p.trace != 0) {
                rp.ended(p.index, p.trace); // a replayed op's key is free again (replay.rs)
            }
            ops += 1;
            if p.phase == phase {
                failed += 1;
            }
        }
        // Closed with nothing in flight (an HTTP `Connection: close`, an idle keep-alive
        // ended by the server): reopened at once, nothing failed.
        let quiet = was_connected && ops == 0;
        if quiet {
            k.retry_at = now;
        } else {
            k.retry_at = now + k.backoff;
            k.backoff = (k.backoff * 2).min(BACKOFF_MAX);
        }
        c.release(ops, now, self.order.pipeline);
        self.down += 1;
        if self.mode == Mode::Load {
            self.cluster_stale(); // a lost node: the slot map is read again (cluster.rs)
        }
        if quiet {
            return;
        }
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

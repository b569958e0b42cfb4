//! One turn of the loop: wait for sockets, stdin or the timer (sleeping to the timer, or
//! polling when a send or a reply is nearer than a wake-up costs), then send what is due
//! and handle what happened; housekeeping (timeouts, reconnections, a cluster's refresh).

use super::engine::{STDIN, TIMER};
use super::{Mode, Run};
use crate::net::FIRST_CONN;
use crate::pacing::{self, now_ns};
use mio::Token;

const HOUSEKEEPING: u64 = 50_000_000;

impl<'a> Run<'a> {
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
        let polling = self.phase.mode == Mode::Load
            && (self.order.open_loop || self.order.pipeline > 1)
            && self.wake.tuner.may_poll(now);
        let send_near = polling && due <= other && due < now + pacing::WAKE_COST;
        let reply_near = polling
            && now < self.wake.tuner.active_at + pacing::WAKE_COST
            && self.net.clients.iter().any(|c| c.inflight > 0);
        if send_near || reply_near {
            let until = due.min(other).min(now + pacing::WAKE_COST);
            let (stdin, _) = self.poll_idle(until);
            self.after_wake(stdin);
            return;
        }
        let armed = other.min(self.wake.tuner.arm_at(due, now));
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
            self.wake.tuner.observe(armed, now_ns());
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
        busy |= !self.wake.ready.is_empty();
        self.dispatch();
        let now = now_ns();
        busy |= self.issue_due(now);
        if busy {
            self.wake.tuner.active_at = now;
        }
        if now >= self.wake.next_housekeeping {
            self.wake.next_housekeeping = now + HOUSEKEEPING;
            self.housekeeping(now);
        } else if self.net.down > 0 && self.phase.mode != Mode::Idle {
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
            last = self.wake.tuner.idle_poll(last);
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
                last = self.wake.tuner.idle_poll(last);
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
        self.wake.tuner.spent(now_ns().saturating_sub(began));
    }

    /// The earliest intended start of an open-loop client with a free slot (MAX: none).
    fn next_due(&self) -> u64 {
        if self.phase.mode != Mode::Load || !self.order.open_loop {
            return u64::MAX;
        }
        self.net
            .clients
            .iter()
            .filter(|c| c.inflight < self.order.pipeline)
            .filter_map(|c| c.schedule.as_ref().map(|s| s.next))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The deadline, housekeeping and the reconnections due, whichever comes first.
    fn other_wake(&self, deadline: u64) -> u64 {
        let mut wake = if deadline > 0 { deadline } else { u64::MAX };
        wake = wake.min(self.wake.next_housekeeping.max(1));
        if self.net.down > 0 {
            for k in self.net.clients.iter().flat_map(|c| c.conns.iter()) {
                if k.sock.is_none() {
                    wake = wake.min(k.retry_at);
                }
            }
        }
        wake
    }

    /// The poll's events: whether stdin and the timer fired; sockets are added to
    /// `self.wake.ready` (until `dispatch` handles them).
    fn collect_events(&mut self) -> (bool, bool) {
        let (mut stdin, mut timer) = (false, false);
        for ev in self.eng.events.iter() {
            match ev.token() {
                STDIN => stdin = true,
                TIMER => timer = true,
                Token(t) => self.wake.ready.push((
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
        let mut ready = std::mem::take(&mut self.wake.ready);
        let per = self.net.stride;
        for &(t, readable, writable, closing) in ready.iter() {
            let (ci, si) = (t / per, t % per);
            if ci >= self.net.clients.len() {
                // Past the clients' connections: a subscriber's (`pubsub/`).
                let j = t - self.net.clients.len() * per;
                let registry = self.eng.poll.registry();
                let deliver = self.kinds.deliver;
                self.pubsub
                    .event(j, closing, registry, &mut self.rec, deliver);
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
        self.wake.ready = ready;
    }

    /// Open loop: every client whose next op is due sends it (as its pipeline allows).
    fn issue_due(&mut self, now: u64) -> bool {
        if self.phase.mode != Mode::Load || !self.order.open_loop {
            return false;
        }
        let mut any = false;
        for ci in 0..self.net.clients.len() {
            if self.net.clients[ci]
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
        for ci in 0..self.net.clients.len() {
            for si in 0..self.net.clients[ci].conns.len() {
                let k = &self.net.clients[ci].conns[si];
                if k.sock.is_none() && now >= k.retry_at {
                    self.reconnect(ci, si);
                }
            }
        }
    }

    fn housekeeping(&mut self, now: u64) {
        for ci in 0..self.net.clients.len() {
            for si in 0..self.net.clients[ci].conns.len() {
                let k = &self.net.clients[ci].conns[si];
                if k.sock.is_some()
                    && !k.pending.is_empty()
                    && now.saturating_sub(k.progress) > self.net.timeout
                {
                    let secs = self.net.timeout as f64 / 1e9;
                    self.drop_conn(
                        ci,
                        si,
                        "timeout",
                        &format!("no reply from {} within {}s", k.addr, secs),
                    );
                }
            }
        }
        if self.net.down > 0 && self.phase.mode != Mode::Idle {
            self.retry_due(now);
        }
        self.cluster_housekeeping(now);
    }
}

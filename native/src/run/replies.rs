//! A step's sockets and what comes back on them: connections opened, written and read,
//! every complete reply parsed and counted under its kind (a cache-aside miss filled, a
//! cluster's redirection followed), and a lost connection's requests counted as failed.

use super::{Mode, Run};
use crate::net::conn::Pending;
use crate::net::Opened;
use crate::pacing::now_ns;
use crate::protocols::wire::{Reply, Req};
use crate::tls::session::Failure;

const BACKOFF_MAX: u64 = 250_000_000; // a reconnection's backoff doubles up to this

impl<'a> Run<'a> {
    /// Open (or reopen) a connection; the handshake (AUTH, SELECT) is queued first.
    pub(super) fn open(&mut self, ci: usize, si: usize) -> Result<(), String> {
        let registry = self.eng.poll.registry();
        self.net.open(ci, si, registry, &self.codec)
    }

    pub(super) fn reconnect(&mut self, ci: usize, si: usize) {
        if let Err(e) = self.open(ci, si) {
            self.drop_conn(ci, si, "connection", &e);
        }
    }

    pub(super) fn on_writable(&mut self, ci: usize, si: usize) {
        if !self.net.clients[ci].conns[si].connected {
            match self.net.opened(ci, si) {
                Opened::Waiting => return,
                Opened::Failed((kind, msg)) => return self.drop_conn(ci, si, &kind, &msg),
                Opened::Ready => {
                    if self.phase.mode != Mode::Idle {
                        self.refill(ci, now_ns());
                    }
                }
            }
        }
        self.flush(ci, si);
    }

    /// Write what is queued on a connection; a failed write drops it.
    #[inline]
    pub(super) fn flush(&mut self, ci: usize, si: usize) {
        if let Err((kind, msg)) = self.net.flush(ci, si) {
            self.drop_conn(ci, si, &kind, &msg);
        }
    }

    pub(super) fn on_readable(&mut self, ci: usize, si: usize, closing: bool) {
        if self.net.clients[ci].conns[si].tls.is_some() {
            return self.on_readable_tls(ci, si);
        }
        let closed = self.net.read(ci, si, closing);
        self.consume(ci, si);
        if let Some(msg) = closed {
            if self.net.clients[ci].conns[si].sock.is_some() {
                self.drop_conn(ci, si, "connection", &msg);
            }
        }
    }

    /// A TLS connection's records: its handshake finished (then it is connected and its
    /// pipeline filled), or its replies handed to `consume`.
    fn on_readable_tls(&mut self, ci: usize, si: usize) {
        let was_connected = self.net.clients[ci].conns[si].connected;
        let progress = match self.net.readable_tls(ci, si) {
            None => return,
            Some(Err((kind, msg))) => return self.drop_conn(ci, si, &kind, &msg),
            Some(Ok(p)) => p,
        };
        let connected = self.net.clients[ci].conns[si].connected;
        if connected && !was_connected {
            if self.phase.mode != Mode::Idle {
                self.refill(ci, now_ns());
            }
            self.flush(ci, si);
        }
        if self.net.clients[ci].conns[si].connected {
            self.consume(ci, si);
        }
        if progress.closed {
            if let Some((kind, msg)) = self.net.closed_tls(ci, si) {
                self.drop_conn(ci, si, &kind, &msg);
            }
        }
    }

    /// Parse every complete reply, record it, refill the pipeline, then write once.
    pub(super) fn consume(&mut self, ci: usize, si: usize) {
        let now = now_ns();
        let mut pos = 0;
        let mut close_after = false;
        loop {
            let k = &mut self.net.clients[ci].conns[si];
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
            if let Reply::Failed(_, msg) = &parsed.reply {
                if self.codec.script_missing(p.req, msg) {
                    // Its script by EVAL, on this connection: the server keeps it (resend.rs).
                    // After ASKING on a cluster's node: the op may have come by -ASK, and
                    // without it the importing node would send it back (-MOVED).
                    let ask = self.cluster.is_some();
                    self.resend(ci, si, p, (ask, true), now);
                    continue;
                }
            }
            let value_len = parsed.reply.value_len();
            if p.req == Req::Gets {
                // Its token, read while the reply is in the buffer (tokens.rs).
                let token = match &parsed.reply {
                    Reply::Hit { start, end, .. } => {
                        let reply = &k.inb[pos - parsed.used..pos];
                        self.codec.token(&reply[..*start], &reply[*start..*end])
                    }
                    _ => None,
                };
                self.gets_answered(&p, token);
            }
            self.answered(ci, p, parsed.reply, value_len, now);
            if close_after {
                break;
            }
        }
        let k = &mut self.net.clients[ci].conns[si];
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
    pub(super) fn drop_conn(&mut self, ci: usize, si: usize, kind: &str, message: &str) {
        let phase = self.phase.index;
        let measuring = self.phase.mode != Mode::Prefill;
        let now = now_ns();
        let failure: Failure = (kind.to_string(), message.to_string());
        let was_connected = self.net.shut(ci, si, self.eng.poll.registry(), failure);
        let c = &mut self.net.clients[ci];
        let k = &mut c.conns[si];
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
        if self.phase.mode == Mode::Load {
            if let Some(c) = self.cluster.as_mut() {
                c.mark_stale(); // a lost node: the slot map is read again (cluster.rs)
            }
        }
        if quiet {
            return;
        }
        if self.phase.mode == Mode::Prefill {
            self.prefill
                .error
                .get_or_insert_with(|| message.to_string());
            return;
        }
        if measuring {
            // A failed connection attempt counts once and takes an op from the budget, so
            // that a run against a dead server still ends.
            if failed == 0 && self.phase.mode == Mode::Load && !self.reserve(now) {
                self.phase.mode = Mode::Idle;
            }
            self.rec.errors_n(kind, message, failed.max(1));
        }
    }

    pub(super) fn answered(
        &mut self,
        ci: usize,
        p: Pending,
        reply: Reply,
        value_len: usize,
        now: u64,
    ) {
        if let (Reply::Failed(_, msg), Some(_)) = (&reply, &self.cluster) {
            if let Some(r) = crate::cluster::slots::redirect_of(msg) {
                return self.redirect(ci, p, r, now); // MOVED or ASK: sent again (cluster.rs)
            }
        }
        if p.trace != 0 {
            self.replay_reply(&p, &reply); // a replayed op (replay.rs)
        }
        let in_phase = p.phase == self.phase.index && self.phase.mode != Mode::Prefill;
        let pipeline = self.order.pipeline;
        let c = &mut self.net.clients[ci];
        match (p.req, reply) {
            (_, Reply::Failed(kind, msg)) => {
                c.release(1, now, pipeline);
                if self.phase.mode == Mode::Prefill {
                    self.prefill.error.get_or_insert(msg);
                } else if in_phase {
                    self.rec.error(&kind, &msg);
                }
            }
            (Req::Get | Req::Gets, reply) => {
                let hit = matches!(reply, Reply::Hit { .. });
                self.got(ci, &p, hit, in_phase, value_len, now);
            }
            (_, Reply::Outcome(outcome)) => {
                c.release(1, now, pipeline);
                if in_phase {
                    self.outcome_answered(&p, outcome, now);
                }
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
            (req, reply) => {
                // The parsers answer a conditional write with an outcome only; counted, so
                // that a parser's slip shows.
                c.release(1, now, pipeline);
                if in_phase {
                    let msg = format!("{:?} answered {:?}", req, reply);
                    self.rec.error("protocol", &msg);
                }
            }
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
            r.latency(self.kinds.by_req[p.req as usize], p.t0, now);
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
            self.keys.next_trace = p.trace;
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
            self.net.clients[ci].release(1, now, self.order.pipeline);
        }
    }
}

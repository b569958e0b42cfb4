//! What one interval measured: an HdrHistogram per op kind and the counters, written as
//! the STATS object of the frames (histograms in the standard V2 deflate encoding, base64).

mod counts;
pub mod encode;
pub mod histogram;
pub mod report;

pub use counts::{Counts, KINDS_MAX};

use crate::protocols::wire::Outcome;

const FIRST_ERROR_CHARS: usize = 300;

/// The counters and histograms of one span; swapped out whole at each boundary.
pub struct Recorder {
    /// One latency histogram per op kind the order names (`StepOrder::record`).
    pub hist: Counts<KINDS_MAX>,
    pub kinds: usize,
    pub hits: u64,
    pub misses: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub hot_gets: u64,
    pub hot_hits: u64,
    /// Pub/sub: publishes answered, messages received, deliveries the publishes should cause.
    pub published: u64,
    pub delivered: u64,
    pub expected: u64,
    pub offered: u64,
    /// Redis Cluster redirections followed (`cluster/`).
    pub moved: u64,
    pub ask: u64,
    pub open_loop: bool,
    pub send_lag: Option<Counts<1>>,
    pub errors: Vec<(String, u64, String)>, // kind, count, first message
    /// A trace replay's requests not sent, by op (`metrics.Stats.skipped`).
    pub skipped: Vec<(String, u64)>,
    /// What the conditional writes did, by kind index then `Outcome as usize`
    /// (`metrics.Stats.outcomes`).
    pub outcomes: [[u64; OUTCOMES]; KINDS_MAX],
}

/// How many outcomes a conditional write has (`wire::OUTCOME_NAMES`).
pub const OUTCOMES: usize = 5;

impl Recorder {
    /// A recorder with one histogram per op kind the order names (`StepOrder::record`,
    /// at most KINDS_MAX: `Run::new` refuses more).
    pub fn new(open_loop: bool, kinds: usize) -> Recorder {
        Recorder::with_counts(Counts::new(), open_loop.then(Counts::new), open_loop, kinds)
    }

    /// This recorder's counts, zeroed, in a recorder for the next span (of a step that may
    /// record other kinds, open loop or not); nothing else of this span is kept.
    pub fn recycled(self, open_loop: bool, kinds: usize) -> Recorder {
        let (mut hist, mut lag) = (self.hist, self.send_lag);
        hist.clear(self.kinds);
        match lag.as_mut() {
            Some(l) if open_loop => l.clear(1),
            _ => lag = open_loop.then(Counts::new),
        }
        Recorder::with_counts(hist, lag, open_loop, kinds)
    }

    /// Every field of a recorder that has counted nothing: the one place both `new` and
    /// `recycled` make one.
    fn with_counts(
        hist: Counts<KINDS_MAX>,
        send_lag: Option<Counts<1>>,
        open_loop: bool,
        kinds: usize,
    ) -> Recorder {
        assert!(kinds <= KINDS_MAX, "at most {} op kinds", KINDS_MAX);
        Recorder {
            hist,
            kinds,
            hits: 0,
            misses: 0,
            bytes_in: 0,
            bytes_out: 0,
            hot_gets: 0,
            hot_hits: 0,
            published: 0,
            delivered: 0,
            expected: 0,
            offered: 0,
            moved: 0,
            ask: 0,
            open_loop,
            send_lag,
            errors: Vec::new(),
            skipped: Vec::new(),
            outcomes: [[0; OUTCOMES]; KINDS_MAX],
        }
    }

    /// A trace request not sent: an op the target does not do, or a value too large.
    pub fn skip(&mut self, what: &str, n: u64) {
        match self.skipped.iter_mut().find(|s| s.0 == what) {
            Some(s) => s.1 += n,
            None => self.skipped.push((what.to_string(), n)),
        }
    }

    /// A conditional write of the kind at index `kind` ended in `outcome`.
    #[inline]
    pub fn outcome(&mut self, kind: usize, outcome: Outcome) {
        self.outcomes[kind % KINDS_MAX][outcome as usize] += 1;
    }

    /// The latency of an op of the kind at index `kind` of the order's kinds, from its
    /// start to `end` (ns on the monotonic clock). `end` is never before `start`: were it
    /// ever, the difference would wrap to a huge value and show as the histogram's highest,
    /// a bug in sight rather than a 0 that hides it.
    #[inline(always)]
    pub fn latency(&mut self, kind: usize, start: u64, end: u64) {
        if cfg!(feature = "norecord") {
            return;
        }
        self.hist.record(kind, end.wrapping_sub(start));
    }

    /// An open-loop send's lag (its histogram is made with the recorder). Not inlined: it
    /// stays out of the closed loop's refill, where it never runs.
    #[inline(never)]
    pub fn lag(&mut self, ns: u64) {
        if cfg!(feature = "norecord") {
            return;
        }
        if let Some(h) = self.send_lag.as_mut() {
            h.record(0, ns);
        }
    }

    pub fn error(&mut self, kind: &str, message: &str) {
        self.errors_n(kind, message, 1);
    }

    pub fn errors_n(&mut self, kind: &str, message: &str, n: u64) {
        if n == 0 {
            return;
        }
        for e in self.errors.iter_mut() {
            if e.0 == kind {
                e.1 += n;
                return;
            }
        }
        let first: String = message.chars().take(FIRST_ERROR_CHARS).collect();
        self.errors.push((kind.to_string(), n, first));
    }

    /// Add another span in (the fold of a short tail into the interval before it).
    pub fn absorb(&mut self, other: Recorder) {
        self.hist.add(&other.hist, self.kinds);
        match (self.send_lag.as_mut(), other.send_lag) {
            (Some(x), Some(y)) => x.add(&y, 1),
            (None, Some(y)) => self.send_lag = Some(y),
            _ => {}
        }
        self.hits += other.hits;
        self.misses += other.misses;
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.hot_gets += other.hot_gets;
        self.hot_hits += other.hot_hits;
        self.published += other.published;
        self.delivered += other.delivered;
        self.expected += other.expected;
        self.offered += other.offered;
        self.moved += other.moved;
        self.ask += other.ask;
        for (kind, n, msg) in other.errors {
            self.errors_n(&kind, &msg, n);
        }
        for (what, n) in other.skipped {
            self.skip(&what, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_the_first_message() {
        let mut r = Recorder::new(false, 3);
        r.error("connection", "first");
        r.error("connection", "second");
        assert_eq!(
            r.errors,
            vec![("connection".to_string(), 2, "first".to_string())]
        );
    }
}

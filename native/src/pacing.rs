//! Time: the monotonic clock in ns, a precise wake-up (timerfd), the start the
//! coordinator names, the open-loop schedule and the interval grid.

use crate::rng::SplitMix64;
use std::os::unix::io::RawFd;

#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn realtime_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The monotonic instant of a CLOCK_REALTIME start time (seconds), converted once.
pub fn mono_of_realtime(start: f64) -> u64 {
    let mono = now_ns();
    let ahead = start - realtime_s();
    if ahead <= 0.0 {
        mono
    } else {
        mono + (ahead * 1e9) as u64
    }
}

/// A timerfd on CLOCK_MONOTONIC, armed at absolute instants; with the timer slack
/// set to 1 ns it wakes the loop within microseconds, not at 1 ms granularity.
pub struct Timer {
    pub fd: RawFd,
    armed: u64,
}

impl Timer {
    pub fn new() -> Timer {
        // SAFETY: plain system calls; the descriptor is owned by Timer.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            let fd = libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            );
            assert!(fd >= 0, "timerfd_create failed");
            Timer { fd, armed: 0 }
        }
    }

    /// Wake at `at` (monotonic ns); re-armed only when the instant changes.
    pub fn arm(&mut self, at: u64) {
        if at == self.armed {
            return;
        }
        self.armed = at;
        let at = at.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: the spec lives across the call; fd is ours.
        unsafe {
            libc::timerfd_settime(
                self.fd,
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    /// Consume an expiry so that the descriptor is quiet until armed again.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into buf.
        unsafe { libc::read(self.fd, buf.as_mut_ptr() as *mut libc::c_void, 8) };
        self.armed = 0;
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: closing our own descriptor once.
        unsafe { libc::close(self.fd) };
    }
}

/// How an open-loop client's gaps are drawn (`load.arrivals`, compiled into the order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// A constant gap of one period (wrk2).
    Uniform,
    /// Exponential gaps of mean one period, from the client's splitmix64 stream.
    Poisson,
}

/// What a client's schedule is made from (all from the order).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub period: u64,
    pub offset: u64,
    pub arrivals: Arrivals,
    pub seed: u64,
}

/// An exponential gap of mean `period` from a uniform draw `u` in [0, 1), as
/// `arrivals.exponential_gap` computes it.
#[inline]
pub fn exponential_gap(period: u64, u: f64) -> u64 {
    (period as f64 * -(1.0 - u).ln()) as u64
}

/// One client's intended starts (monotonic ns), in order: start + offset, then its gaps
/// (`workbench/engine/arrivals.py`'s `Schedule`, to the ns).
#[derive(Clone)]
pub struct Schedule {
    pub next: u64,
    period: u64,
    rng: Option<SplitMix64>,
}

impl Schedule {
    pub fn new(start: u64, t: &Timing) -> Schedule {
        Schedule {
            next: start + t.offset,
            period: t.period,
            rng: match t.arrivals {
                Arrivals::Uniform => None,
                Arrivals::Poisson => Some(SplitMix64::new(t.seed)),
            },
        }
    }

    /// The next intended start, the schedule moved past it.
    #[inline]
    pub fn take(&mut self) -> u64 {
        let due = self.next;
        self.next += match self.rng.as_mut() {
            None => self.period,
            Some(r) => exponential_gap(self.period, r.random()),
        };
        due
    }
}

/// How many of a schedule's intended starts lie before t (t asked in growing order).
pub struct Offered {
    start: u64,
    timing: Timing,
    schedule: Schedule,
    count: u64,
    upto: u64,
}

impl Offered {
    pub fn new(start: u64, timing: Timing) -> Offered {
        Offered {
            start,
            timing,
            schedule: Schedule::new(start, &timing),
            count: 0,
            upto: 0,
        }
    }

    pub fn before(&mut self, t: u64) -> u64 {
        let first = self.start + self.timing.offset;
        if self.timing.arrivals == Arrivals::Uniform {
            let p = self.timing.period.max(1);
            return if t <= first {
                0
            } else {
                (t - first + p - 1) / p
            };
        }
        if t < self.upto {
            // Asked about the past: count again from the start.
            self.schedule = Schedule::new(self.start, &self.timing);
            self.count = 0;
        }
        self.upto = t;
        while self.schedule.next < t {
            self.schedule.take();
            self.count += 1;
        }
        self.count
    }
}

/// The most the loop arms its timer ahead of an op's intended start, then spins to it.
pub const SPIN_MAX: u64 = 50_000;

/// The share of wall-clock time the loop may spend spinning to sends, per window. Spinning
/// buys send lag in microseconds where wake-ups come late, but it is CPU the verdict reads
/// as a busy worker and, on a small machine, CPU the server does not get: past this budget
/// the timer is armed at the intended start itself and a late wake-up shows as send lag.
pub const SPIN_SHARE_PERCENT: u64 = 5;
/// The window the spin budget is counted over.
pub const SPIN_WINDOW: u64 = 100_000_000;

/// What a sleep costs a worker in CPU beyond the sleep itself (the timer armed, the
/// switch out and back, the interrupt): measured at 25-35 µs on the 2-core VMs this runs
/// on (perf: `timerfd_settime` and `finish_task_switch` on top of a paced worker at one
/// wake-up per send), a few µs on bare metal. An event nearer than this is cheaper to
/// poll for than to sleep to: the loop then polls without sleeping ("idle polling").
pub const WAKE_COST: u64 = 30_000;

/// A zero-timeout poll that found nothing takes about a µs; one that took this long
/// was switched out by the scheduler, and that time is not counted as idle polling.
pub const PREEMPTED: u64 = 20_000;

/// Polling pays only on a CPU of our own. Over each `POLL_WINDOW` the loop sums the time
/// its polls lost to other processes (gaps of `PREEMPTED` or more) against the time it
/// polled; when the lost time is above `POLL_LOST_PERCENT` of it, the machine is
/// contended (a poller gets only its fair share there, where a sleeper is woken in
/// time), and the loop sleeps to every send for `POLL_PAUSE` before trying again.
pub const POLL_WINDOW: u64 = 100_000_000;
pub const POLL_LOST_PERCENT: u64 = 20;
pub const POLL_PAUSE: u64 = 1_000_000_000;

/// How early to arm the timer for an open-loop send: the timer's recent oversleep (how
/// late a timerfd wake-up came), tracking its high end (up at once, down slowly), at most
/// `SPIN_MAX`. The loop wakes that much ahead and polls without sleeping for the rest, so
/// that a send leaves within microseconds of its intended start even when wake-ups come
/// late, as long as the spinning stays within `SPIN_SHARE_PERCENT` of each window.
#[derive(Default)]
pub struct WakeTuner {
    pub early: u64,
    window_start: u64,
    spun: u64,
    /// Idle polling so far (ns): polls that found nothing, while the next send or reply
    /// was nearer than a wake-up. Reported beside the worker's CPU (`polled`, frames.md).
    pub polled: u64,
    reported: u64,
    /// When the loop last sent or handled a reply: replies are polled for until a
    /// wake-up's cost after it.
    pub active_at: u64,
    /// The current poll window (`POLL_WINDOW`): its start, the time polled and the time
    /// lost to other processes in it; no polling before `paused_until`.
    poll_window: u64,
    window_polled: u64,
    window_lost: u64,
    paused_until: u64,
}

impl WakeTuner {
    /// When to arm the timer for a send due at `due`, at `now`.
    #[inline]
    pub fn arm_at(&mut self, due: u64, now: u64) -> u64 {
        if now.saturating_sub(self.window_start) >= SPIN_WINDOW {
            self.window_start = now;
            self.spun = 0;
        }
        if self.spun * 100 >= SPIN_WINDOW * SPIN_SHARE_PERCENT {
            return due; // the budget is spent: no spinning until the next window
        }
        due.saturating_sub(self.early)
    }

    /// A poll that found nothing ended now; the previous one (or the start) ended at
    /// `last`. Counted as idle polling unless the gap shows the loop was switched out
    /// meanwhile (`PREEMPTED`): that wall time was not ours. Returns now.
    #[inline]
    pub fn idle_poll(&mut self, last: u64) -> u64 {
        let now = now_ns();
        let gap = now.saturating_sub(last);
        if gap < PREEMPTED {
            self.polled += gap;
            self.window_polled += gap;
        } else {
            self.window_lost += gap;
        }
        now
    }

    /// A tuner for a loop that must never poll: under a real-time policy (`chrt`), where
    /// the kernel stops a task that keeps its CPU for 50 ms of every second
    /// (`sched_rt_runtime_us`), which would show as 50 ms of send lag.
    pub fn for_this_process() -> WakeTuner {
        // SAFETY: asks the scheduling policy of this process.
        let policy = unsafe { libc::sched_getscheduler(0) };
        let realtime = policy == libc::SCHED_FIFO || policy == libc::SCHED_RR;
        WakeTuner {
            paused_until: if realtime { u64::MAX } else { 0 },
            ..WakeTuner::default()
        }
    }

    /// Whether the loop may poll at `now` (see `POLL_LOST_PERCENT`).
    #[inline]
    pub fn may_poll(&mut self, now: u64) -> bool {
        if now.saturating_sub(self.poll_window) >= POLL_WINDOW {
            let polled = self.window_polled + self.window_lost;
            if self.window_lost * 100 > polled * POLL_LOST_PERCENT {
                self.paused_until = self.paused_until.max(now + POLL_PAUSE);
            }
            self.poll_window = now;
            self.window_polled = 0;
            self.window_lost = 0;
        }
        now >= self.paused_until
    }

    /// The idle polling since the last call (ns).
    pub fn take_polled(&mut self) -> u64 {
        let ns = self.polled - self.reported;
        self.reported = self.polled;
        ns
    }

    /// A timer armed for `armed` woke the loop at `woke`.
    pub fn observe(&mut self, armed: u64, woke: u64) {
        let late = woke.saturating_sub(armed).min(SPIN_MAX);
        if late > self.early {
            self.early = late;
        } else {
            self.early -= self.early / 64;
        }
    }

    /// The loop spun `ns` in the early window to reach a send.
    #[inline]
    pub fn spent(&mut self, ns: u64) {
        self.spun += ns;
    }
}

/// Ends of the intervals of a measured phase of `duration`, as offsets from its start:
/// boundaries at k*I for k = 1..floor(D/I), the phase ending at D; a tail shorter than
/// I/2 is folded into the last interval, a longer one is an interval of its own.
pub fn grid(duration_ns: u64, interval_ns: u64) -> Vec<u64> {
    let n = duration_ns / interval_ns;
    let mut ends: Vec<u64> = (1..=n).map(|k| k * interval_ns).collect();
    let tail = duration_ns - n * interval_ns;
    if n == 0 {
        ends.push(duration_ns);
    } else if tail > 0 {
        if tail * 2 < interval_ns {
            *ends.last_mut().expect("n > 0") = duration_ns;
        } else {
            ends.push(duration_ns);
        }
    }
    ends
}

/// CPU seconds (user + system) this process has used.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct given.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        t(ru.ru_utime) + t(ru.ru_stime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_arrival_processes_count_what_they_schedule() {
        for arrivals in [Arrivals::Uniform, Arrivals::Poisson] {
            let t = Timing {
                period: 1000,
                offset: 300,
                arrivals,
                seed: 42,
            };
            let mut s = Schedule::new(10_000, &t);
            let times: Vec<u64> = (0..500).map(|_| s.take()).collect();
            assert_eq!(times[0], 10_300);
            assert!(times.windows(2).all(|w| w[0] <= w[1]));
            let mut o = Offered::new(10_000, t);
            let end = times[499] + 1;
            assert_eq!(o.before(10_300), 0);
            assert_eq!(o.before(end), 500);
            let mean = (times[499] - times[0]) as f64 / 499.0;
            assert!((mean - 1000.0).abs() < 150.0, "{}", mean);
        }
    }

    #[test]
    fn spinning_stops_when_its_share_of_the_window_is_spent_and_resumes_in_the_next() {
        let mut t = WakeTuner::default();
        t.observe(0, 30_000);
        assert_eq!(t.arm_at(1_000_000, 0), 970_000);
        t.spent(SPIN_WINDOW * SPIN_SHARE_PERCENT / 100 - 1);
        assert_eq!(t.arm_at(2_000_000, 1_000_000), 1_970_000);
        t.spent(1);
        assert_eq!(t.arm_at(3_000_000, 2_000_000), 3_000_000);
        assert_eq!(
            t.arm_at(SPIN_WINDOW + 9, SPIN_WINDOW + 1),
            SPIN_WINDOW + 9 - 30_000
        );
    }

    #[test]
    fn the_tuner_follows_the_late_wake_ups_and_forgets_them_slowly() {
        let mut t = WakeTuner::default();
        t.observe(1_000, 31_000);
        assert_eq!(t.early, 30_000);
        assert_eq!(t.arm_at(100_000, 0), 70_000);
        t.observe(1_000, 1_500);
        assert!(t.early < 30_000 && t.early > 29_000);
        t.observe(0, 10_000_000);
        assert_eq!(t.early, SPIN_MAX);
    }

    #[test]
    fn idle_polling_is_reported_once_per_interval() {
        let mut t = WakeTuner::default();
        t.polled += 700;
        assert_eq!(t.take_polled(), 700);
        assert_eq!(t.take_polled(), 0);
        t.polled += 5;
        t.spent(1_000); // the early window's budget: not counted twice
        assert_eq!(t.take_polled(), 5);
        let now = now_ns();
        t.idle_poll(now - 1_000); // a poll of about a µs
        t.idle_poll(now - PREEMPTED); // switched out meanwhile: not ours
        let polled = t.take_polled();
        assert!((1_000..PREEMPTED).contains(&polled), "{}", polled);
    }

    #[test]
    fn polling_pauses_after_a_window_that_lost_its_cpu_to_others() {
        let mut t = WakeTuner::default();
        let w = POLL_WINDOW;
        assert!(t.may_poll(w));
        t.window_polled = 80;
        t.window_lost = 20; // 20%: still ours
        assert!(t.may_poll(2 * w));
        t.window_polled = 70;
        t.window_lost = 30;
        assert!(!t.may_poll(3 * w));
        assert!(!t.may_poll(3 * w + POLL_PAUSE - 1));
        assert!(t.may_poll(3 * w + POLL_PAUSE));
    }

    #[test]
    fn grid_folds_short_tails_and_keeps_long_ones() {
        let s = 1_000_000_000;
        assert_eq!(grid(5 * s, s), vec![s, 2 * s, 3 * s, 4 * s, 5 * s]);
        assert_eq!(grid(s * 23 / 10, s), vec![s, s * 23 / 10]);
        assert_eq!(grid(s * 27 / 10, s), vec![s, 2 * s, s * 27 / 10]);
        assert_eq!(grid(s / 2, s), vec![s / 2]);
    }
}

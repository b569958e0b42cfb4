//! When the loop sleeps to its timer, spins to a send or polls for replies: the timer's
//! recent oversleep, the spin budget and the idle polling it counts (docs/frames.md).

use super::clock::now_ns;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

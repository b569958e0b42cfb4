//! Time: the monotonic clock in ns and the start the coordinator names, a precise
//! wake-up (`timer.rs`), the open-loop schedule (`schedule.rs`), when the loop sleeps, spins
//! or polls (`tuner.rs`), and the interval grid.

mod clock;
mod schedule;
mod timer;
mod tuner;

pub use clock::{cpu_seconds, mono_of_realtime, now_ns};
pub use schedule::{Offered, Schedule};
pub use timer::Timer;
pub use tuner::{WakeTuner, SPIN_MAX, WAKE_COST};

/// Ends of the intervals of a measured phase of `duration`, as offsets from its start:
/// boundaries at k*I for k = 1..floor(D/I), the phase ending at D; a tail shorter than
/// I/2 is folded into the last interval, a longer one is an interval of its own.
/// Computed per interval, never held as a list: a phase of 1e9 s at 1 s intervals is a
/// billion ends (8 GB), which workers used to build before their first interval.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    duration_ns: u64,
    interval_ns: u64,
    len: u64,
}

impl Grid {
    pub fn count(&self) -> u64 {
        self.len
    }

    /// The end of interval `k` (0-based, `k < len`).
    pub fn end(&self, k: u64) -> u64 {
        if k + 1 >= self.len {
            self.duration_ns
        } else {
            (k + 1) * self.interval_ns
        }
    }
}

pub fn grid(duration_ns: u64, interval_ns: u64) -> Grid {
    let n = duration_ns / interval_ns;
    let tail = duration_ns - n * interval_ns;
    let len = if n == 0 || (tail > 0 && tail * 2 >= interval_ns) {
        n + 1
    } else {
        n
    };
    Grid {
        duration_ns,
        interval_ns,
        len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(duration_ns: u64, interval_ns: u64) -> Vec<u64> {
        let g = grid(duration_ns, interval_ns);
        (0..g.count()).map(|k| g.end(k)).collect()
    }

    #[test]
    fn grid_folds_short_tails_and_keeps_long_ones() {
        let s = 1_000_000_000;
        assert_eq!(ends(5 * s, s), vec![s, 2 * s, 3 * s, 4 * s, 5 * s]);
        assert_eq!(ends(s * 23 / 10, s), vec![s, s * 23 / 10]);
        assert_eq!(ends(s * 27 / 10, s), vec![s, 2 * s, s * 27 / 10]);
        assert_eq!(ends(s / 2, s), vec![s / 2]);
    }
}

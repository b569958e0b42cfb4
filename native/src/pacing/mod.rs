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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_folds_short_tails_and_keeps_long_ones() {
        let s = 1_000_000_000;
        assert_eq!(grid(5 * s, s), vec![s, 2 * s, 3 * s, 4 * s, 5 * s]);
        assert_eq!(grid(s * 23 / 10, s), vec![s, s * 23 / 10]);
        assert_eq!(grid(s * 27 / 10, s), vec![s, 2 * s, s * 27 / 10]);
        assert_eq!(grid(s / 2, s), vec![s / 2]);
    }
}

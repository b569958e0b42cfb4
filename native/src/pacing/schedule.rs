//! One open-loop client's intended starts and how many of them fell before an instant
//! (`workbench/engine/arrivals.py`, to the ns).

use crate::order::{Arrivals, Timing};
use crate::workload::rng::SplitMix64;

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
}

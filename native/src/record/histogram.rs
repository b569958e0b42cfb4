//! The HdrHistogram every latency is recorded in: 1 ns to 1 h at 3 significant digits,
//! values in ns (docs/frames.md, STATS).

use hdrhistogram::Histogram;

pub const LOWEST_NS: u64 = 1;
pub const HIGHEST_NS: u64 = 3_600_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, 3).expect("histogram bounds");
    h.auto(false);
    h
}

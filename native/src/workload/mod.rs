//! Keys, value sizes, the op mix and TTLs of one virtual client, drawn from its own
//! generator (`rng.rs`) under the distributions the compiled order gives.
//!
//! The same seed gives the same op sequence here, and the same distributions (not the
//! same draws) as the Python engine. Values are the exception: they are the very bytes of
//! the Python engine's `ValueBuffer`, so a value can be checked against its key whichever
//! engine wrote it (`keys.rs`).

pub mod keys;
pub mod rng;

use crate::order::{KeyDist, SizeDist, StepOrder, TtlDist};
use rng::Rng;

enum KeyChooser {
    Uniform,
    Sequential(u64),
    Zipf(std::rc::Rc<Vec<f64>>),
    Gaussian(f64, f64),
    HotCold(f64, u64, u64),
}

/// One operation: its code (an index into the order's operations), key index, value size
/// and TTL (seconds).
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub code: u8,
    pub index: u64,
    pub size: usize,
    pub ttl: Option<f64>,
}

pub struct OpStream {
    rng: Rng,
    codes: Vec<u8>,
    cum: Vec<f64>,
    keys: u64,
    pub key_offset: u64,
    pub hot_end: u64,
    key: KeyChooser,
    size: SizeDist,
    ttl: TtlDist,
}

type ZipfCache = std::cell::RefCell<Vec<((u64, u64), std::rc::Rc<Vec<f64>>)>>;

thread_local! {
    // CDFs shared by the streams of this process (one per key count and exponent).
    static ZIPF: ZipfCache = const { std::cell::RefCell::new(Vec::new()) };
}

fn zipf_cdf(n: u64, s: f64) -> std::rc::Rc<Vec<f64>> {
    let id = (n, s.to_bits());
    ZIPF.with(|cache| {
        if let Some((_, cdf)) = cache.borrow().iter().find(|(k, _)| *k == id) {
            return cdf.clone();
        }
        let mut cdf = Vec::with_capacity(n as usize);
        let mut acc = 0.0;
        for i in 1..=n {
            acc += 1.0 / (i as f64).powf(s);
            cdf.push(acc);
        }
        let total = acc;
        for c in cdf.iter_mut() {
            *c /= total;
        }
        let cdf = std::rc::Rc::new(cdf);
        cache.borrow_mut().push((id, cdf.clone()));
        cdf
    })
}

fn cumulative(mix: &[(u8, f64)]) -> Vec<f64> {
    let total: f64 = mix.iter().map(|(_, w)| w).sum();
    let mut acc = 0.0;
    let mut cum: Vec<f64> = mix
        .iter()
        .map(|(_, w)| {
            acc += w;
            acc / total
        })
        .collect();
    if let Some(last) = cum.last_mut() {
        *last = 1.0;
    }
    cum
}

impl OpStream {
    /// The stream of client `client_id` with `mix`, under the order's distributions.
    pub fn new(order: &StepOrder, mix: &[(u8, f64)], client_id: i64, sequence_start: u64) -> Self {
        let keys = order.keys.count.max(1);
        let key = match order.keys.dist {
            KeyDist::Sequential => KeyChooser::Sequential(sequence_start),
            KeyDist::Zipf(s) => KeyChooser::Zipf(zipf_cdf(keys, s)),
            KeyDist::Gaussian(mean, sd) => KeyChooser::Gaussian(mean, sd),
            KeyDist::HotCold(access, hot, cold) => KeyChooser::HotCold(access, hot, cold),
            KeyDist::Uniform => KeyChooser::Uniform,
        };
        OpStream {
            rng: Rng::for_client(order.seed, client_id),
            codes: mix.iter().map(|(c, _)| *c).collect(),
            cum: cumulative(mix),
            keys,
            key_offset: order.keys.offset,
            hot_end: order.keys.hot_end,
            key,
            size: order.value_size.clone(),
            ttl: order.ttl.clone(),
        }
    }

    #[inline]
    fn next_key(&mut self) -> u64 {
        let n = self.keys;
        match &mut self.key {
            KeyChooser::Uniform => ((self.rng.random() * n as f64) as u64).min(n - 1),
            KeyChooser::Sequential(c) => {
                let k = *c % n;
                *c = c.wrapping_add(1);
                k
            }
            KeyChooser::Zipf(cdf) => {
                let u = self.rng.random();
                let i = cdf.partition_point(|&c| c < u) as u64;
                i.min(n - 1)
            }
            KeyChooser::Gaussian(mean, sd) => {
                let (mean, sd) = (*mean, *sd);
                for _ in 0..64 {
                    let i = self.rng.gauss(mean, sd).trunc();
                    if i >= 0.0 && i < n as f64 {
                        return i as u64;
                    }
                }
                (mean.max(0.0) as u64).min(n - 1)
            }
            KeyChooser::HotCold(access, hot, cold) => {
                let (access, hot, cold) = (*access, *hot, *cold);
                if self.rng.random() < access {
                    (self.rng.random() * hot as f64) as u64
                } else {
                    (hot + (self.rng.random() * cold as f64) as u64).min(n - 1)
                }
            }
        }
    }

    #[inline]
    pub fn next_size(&mut self) -> usize {
        match &self.size {
            SizeDist::Fixed(s) => *s,
            dist => size_at(dist, self.rng.random()),
        }
    }

    #[inline]
    fn next_ttl(&mut self) -> Option<f64> {
        match self.ttl {
            TtlDist::Range(..) => ttl_at(&self.ttl, self.rng.random()),
            ref fixed_or_none => ttl_at(fixed_or_none, 0.0),
        }
    }

    #[inline]
    pub fn next_op(&mut self) -> Op {
        let code = if self.codes.len() == 1 {
            self.codes[0]
        } else {
            let u = self.rng.random();
            let i = self
                .cum
                .partition_point(|&c| c <= u)
                .min(self.codes.len() - 1);
            self.codes[i]
        };
        let local = self.next_key();
        let size = self.next_size();
        let ttl = self.next_ttl();
        Op {
            code,
            index: self.key_offset + local,
            size,
            ttl,
        }
    }
}

/// The value size a uniform draw `u` in [0, 1) stands for (a fixed size draws nothing).
#[inline]
pub fn size_at(dist: &SizeDist, u: f64) -> usize {
    match dist {
        SizeDist::Fixed(s) => *s,
        SizeDist::Uniform(lo, hi) => {
            let span = (hi - lo + 1) as f64;
            lo + ((u * span) as usize).min(hi - lo)
        }
        SizeDist::Weighted(sizes, cum) => {
            // Python's `choices(sizes, cum_weights=cum)`: bisect_right of u * total.
            let x = u * cum[cum.len() - 1];
            sizes[cum.partition_point(|&c| c <= x).min(sizes.len() - 1)]
        }
    }
}

/// The TTL (seconds) a uniform draw `u` in [0, 1) stands for (`random.uniform`).
#[inline]
pub fn ttl_at(dist: &TtlDist, u: f64) -> Option<f64> {
    match *dist {
        TtlDist::None => None,
        TtlDist::Fixed(t) => Some(t),
        TtlDist::Range(lo, hi) => Some(lo + (hi - lo) * u),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_weights_become_a_cumulative_share() {
        assert_eq!(cumulative(&[(0, 9.0), (1, 1.0)]), vec![0.9, 1.0]);
    }
}

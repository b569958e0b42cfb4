//! Keys, value sizes, the op mix and TTLs of one virtual client, drawn from its own
//! generator (`rng.rs`) under the distributions the compiled order gives.
//!
//! The same seed gives the same op sequence here, and the same distributions (not the
//! same draws) as the Python engine. Values are the exception: they are the very bytes of
//! the Python engine's `ValueBuffer`, so a value can be checked against its key whichever
//! engine wrote it.

use crate::order::{KeyDist, SizeDist, StepOrder, TtlDist};
use crate::proto::decimal;
use crate::rng::{python_randbytes, Rng};

/// The key of an index: the prefix, then the index zero-padded (Python's `%0Nd`).
#[cfg(test)]
pub fn format_key(prefix: &str, index: u64, length: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(length.max(prefix.len() + 1));
    format_key_into(&mut out, prefix, index, length);
    out
}

/// `format_key` into a buffer the caller reuses (no allocation per op).
#[inline]
pub fn format_key_into(out: &mut Vec<u8>, prefix: &str, index: u64, length: usize) {
    out.clear();
    out.extend_from_slice(prefix.as_bytes());
    let mut buf = [0u8; 20];
    let digits = decimal(index, &mut buf);
    let width = std::cmp::max(length as i64 - prefix.len() as i64, 1) as usize;
    for _ in digits.len()..width {
        out.push(b'0');
    }
    out.extend_from_slice(digits);
}

/// Keys formatted once per step (up to `KEY_TABLE_LIMIT`, as the Python engine does).
pub struct KeyTable {
    data: Vec<u8>,
    ends: Vec<u32>,
}

pub const KEY_TABLE_LIMIT: u64 = 1 << 18;

impl KeyTable {
    pub fn new(prefix: &str, length: usize, keys: u64) -> Option<KeyTable> {
        if keys > KEY_TABLE_LIMIT {
            return None;
        }
        let mut data = Vec::with_capacity(keys as usize * length.max(prefix.len() + 1));
        let mut ends = Vec::with_capacity(keys as usize);
        let mut key = Vec::new();
        for i in 0..keys {
            format_key_into(&mut key, prefix, i, length);
            data.extend_from_slice(&key);
            ends.push(data.len() as u32);
        }
        Some(KeyTable { data, ends })
    }

    /// The key of `index`, when the table has it.
    #[inline]
    pub fn get(&self, index: u64) -> Option<&[u8]> {
        let i = index as usize;
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        Some(&self.data[start..end])
    }
}

/// The key of `index`: from the table, else formatted into `buf`.
#[inline]
pub fn key_of<'a>(
    table: &'a Option<KeyTable>,
    buf: &'a mut Vec<u8>,
    prefix: &str,
    index: u64,
    length: usize,
) -> &'a [u8] {
    if let Some(k) = table.as_ref().and_then(|t| t.get(index)) {
        return k;
    }
    format_key_into(buf, prefix, index, length);
    buf
}

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

/// The value bytes: one buffer, a value is a slice whose offset depends on its key only.
pub struct Values {
    data: Vec<u8>,
    spread: u64,
}

impl Values {
    /// `bytes` of `random.Random(seed).randbytes`, values starting within `spread`.
    pub fn new(bytes: usize, spread: usize, seed: i64) -> Values {
        Values {
            data: python_randbytes(seed, bytes),
            spread: spread as u64,
        }
    }

    #[inline]
    pub fn value(&self, key_index: u64, size: usize) -> &[u8] {
        let off = (key_index % self.spread) as usize;
        &self.data[off..off + size]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_like_python() {
        assert_eq!(format_key("wb:", 42, 12), b"wb:000000042".to_vec());
        assert_eq!(format_key("long-prefix", 7, 3), b"long-prefix7".to_vec());
        assert_eq!(format_key("k", 123456, 4), b"k123456".to_vec());
        assert_eq!(format_key("", 0, 3), b"000".to_vec());
    }

    #[test]
    fn the_key_table_holds_the_formatted_keys() {
        let t = KeyTable::new("wb:", 6, 1200).unwrap();
        let mut buf = Vec::new();
        for i in [0u64, 1, 999, 1000, 1199] {
            assert_eq!(t.get(i).unwrap(), format_key("wb:", i, 6).as_slice());
        }
        assert!(t.get(1200).is_none());
        let table = Some(t);
        assert_eq!(key_of(&table, &mut buf, "wb:", 5000, 6), b"wb:5000");
    }

    #[test]
    fn mix_weights_become_a_cumulative_share() {
        assert_eq!(cumulative(&[(0, 9.0), (1, 1.0)]), vec![0.9, 1.0]);
    }
}

//! Keys, value sizes, the op mix and TTLs of one virtual client, from the seed.
//!
//! The distributions mean what `workbench/workload.py` says they mean; the random
//! numbers are this engine's own (xoshiro256**), so the same seed gives the same op
//! sequence here, and the same distributions (not the same draws) as the Python engine.
//! Values are the exception: they are the very bytes of the Python engine's
//! `ValueBuffer` (Python's Mersenne Twister), so a value can be checked against its key
//! whichever engine wrote it.

use std::fmt;

use crate::proto::decimal;

pub const GET: u8 = 0;
pub const SET: u8 = 1;
pub const DELETE: u8 = 2;
pub const CACHE_ASIDE: u8 = 3;
pub const PUBLISH: u8 = 4;

pub const DEFAULT_HOT_SHARE: f64 = 0.2;
pub const VALUE_SPREAD: usize = 4096;

#[derive(Debug)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad(where_: &str, what: &str) -> SpecError {
    SpecError(format!("{}: {}", where_, what))
}

/// xoshiro256**, seeded through splitmix64.
#[derive(Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// The stream of one virtual client: the seed and the client id, as "seed:client".
    pub fn for_client(seed: i64, client: i64) -> Rng {
        let text = format!("{}:{}", seed, client);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325; // FNV-1a
        for b in text.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        Rng::new(h)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn random(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Normal deviate (Box-Muller).
    pub fn gauss(&mut self, mean: f64, sd: f64) -> f64 {
        let u1 = 1.0 - self.random();
        let u2 = self.random();
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// A distribution as written in the spec: its name and numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Dist {
    pub kind: String,
    pub params: Vec<f64>,
}

fn parse_call(
    text: &str,
    where_: &str,
    forms: &[&str],
) -> Result<(String, Vec<String>), SpecError> {
    let t = text.trim();
    let (name, args) = match t.find('(') {
        Some(i) => {
            if !t.ends_with(')') {
                return Err(bad(where_, &format!("cannot read {:?}", text)));
            }
            (&t[..i], &t[i + 1..t.len() - 1])
        }
        None => (t, ""),
    };
    let name = name.trim();
    if !forms.contains(&name) {
        return Err(bad(
            where_,
            &format!("expected one of {}; got {:?}", forms.join(", "), text),
        ));
    }
    let args = args
        .split(',')
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect();
    Ok((name.to_string(), args))
}

fn number(text: &str, where_: &str) -> Result<f64, SpecError> {
    text.parse::<f64>()
        .map_err(|_| bad(where_, &format!("expected a number; got {:?}", text)))
}

fn split_unit(text: &str) -> (&str, String) {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    (&t[..end], t[end..].trim().to_ascii_lowercase())
}

/// A size such as 100, 4KiB or 1MB, in bytes (as `workbench.options.parse_size`).
pub fn parse_size(text: &str, where_: &str) -> Result<u64, SpecError> {
    let (num, unit) = split_unit(text);
    let factor: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1024,
        "m" | "mb" | "mib" => 1024 * 1024,
        "g" | "gb" | "gib" => 1024 * 1024 * 1024,
        _ => {
            return Err(bad(
                where_,
                &format!("expected a size such as 100 or 4KiB; got {:?}", text),
            ))
        }
    };
    Ok((number(num, where_)? * factor as f64) as u64)
}

/// A duration such as 2, 500ms or 1m, in seconds (as `workbench.options.parse_duration`).
pub fn parse_duration(text: &str, where_: &str) -> Result<f64, SpecError> {
    let (num, unit) = split_unit(text);
    let factor = match unit.as_str() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(bad(
                where_,
                &format!("expected a duration such as 2 or 500ms; got {:?}", text),
            ))
        }
    };
    Ok(number(num, where_)? * factor)
}

pub fn parse_key_distribution(text: &str) -> Result<Dist, SpecError> {
    let w = "workload.key_distribution";
    let (kind, args) = parse_call(
        text,
        w,
        &["uniform", "zipf", "gaussian", "sequential", "hotcold"],
    )?;
    let params = args
        .iter()
        .map(|a| number(a, w))
        .collect::<Result<Vec<_>, _>>()?;
    let want = match kind.as_str() {
        "uniform" | "sequential" => 0,
        "zipf" => 1,
        _ => 2,
    };
    if params.len() != want {
        return Err(bad(
            w,
            &format!("{} takes {} argument(s); got {:?}", kind, want, text),
        ));
    }
    Ok(Dist { kind, params })
}

fn with_form(text: &str) -> String {
    let t = text.trim();
    if !t.contains('(') && t.chars().next().map_or(false, |c| c.is_ascii_digit()) {
        format!("fixed({})", t)
    } else {
        t.to_string()
    }
}

pub fn parse_value_size(text: &str) -> Result<Dist, SpecError> {
    let w = "workload.value_size";
    let (kind, args) = parse_call(&with_form(text), w, &["fixed", "uniform", "weighted"])?;
    let mut params = Vec::new();
    if kind == "weighted" {
        for a in &args {
            let mut it = a.splitn(2, ':');
            let size = parse_size(it.next().unwrap_or(""), w)?;
            let weight = number(it.next().unwrap_or(""), w)?;
            params.push(size as f64);
            params.push(weight);
        }
    } else {
        for a in &args {
            params.push(parse_size(a, w)? as f64);
        }
    }
    let ok = match kind.as_str() {
        "fixed" => params.len() == 1,
        "uniform" => params.len() == 2 && params[0] <= params[1],
        _ => !params.is_empty(),
    };
    if !ok {
        return Err(bad(w, &format!("cannot read {:?}", text)));
    }
    Ok(Dist { kind, params })
}

pub fn parse_ttl(text: &str) -> Result<Dist, SpecError> {
    let w = "workload.ttl";
    let (kind, args) = parse_call(&with_form(text), w, &["none", "fixed", "range"])?;
    let params = args
        .iter()
        .map(|a| parse_duration(a, w))
        .collect::<Result<Vec<_>, _>>()?;
    let want = match kind.as_str() {
        "none" => 0,
        "fixed" => 1,
        _ => 2,
    };
    if params.len() != want {
        return Err(bad(w, &format!("cannot read {:?}", text)));
    }
    Ok(Dist { kind, params })
}

pub fn op_code(name: &str) -> Option<u8> {
    match name {
        "get" => Some(GET),
        "set" => Some(SET),
        "delete" => Some(DELETE),
        "cache_aside" => Some(CACHE_ASIDE),
        "publish" => Some(PUBLISH),
        _ => None,
    }
}

pub fn max_value_size(dist: &Dist) -> usize {
    if dist.kind == "weighted" {
        dist.params.iter().step_by(2).fold(0.0f64, |a, &b| a.max(b)) as usize
    } else {
        *dist.params.last().unwrap_or(&0.0) as usize
    }
}

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

/// The [offset, count) share of the key space that `worker` of `workers` owns.
pub fn partition(keys: u64, workers: u64, worker: u64) -> (u64, u64) {
    let base = keys / workers;
    let extra = keys % workers;
    let offset = worker * base + std::cmp::min(worker, extra);
    (offset, base + if worker < extra { 1 } else { 0 })
}

/// Python's `round` (half to even) of a non-negative value.
pub fn round_half_even(x: f64) -> u64 {
    let f = x.floor();
    let diff = x - f;
    let r = if diff > 0.5 || (diff == 0.5 && (f as u64) % 2 == 1) {
        f + 1.0
    } else {
        f
    };
    r as u64
}

/// This worker's share of a total budget (as the Python engine's `_share`).
pub fn share(total: Option<u64>, plans: usize, all_clients: usize) -> Option<u64> {
    total.map(|t| {
        if plans == 0 {
            0
        } else {
            std::cmp::max(
                1,
                round_half_even(t as f64 * plans as f64 / std::cmp::max(all_clients, 1) as f64),
            )
        }
    })
}

enum KeyChooser {
    Uniform,
    Sequential(u64),
    Zipf(std::rc::Rc<Vec<f64>>),
    Gaussian(f64, f64),
    HotCold(f64, u64, u64),
}

enum SizeChooser {
    Fixed(usize),
    Uniform(usize, usize),
    Weighted(Vec<usize>, Vec<f64>),
}

enum TtlChooser {
    None,
    Fixed(f64),
    Range(f64, f64),
}

/// One operation: its code, key index, value size and TTL (seconds).
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
    size: SizeChooser,
    ttl: TtlChooser,
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

pub struct StreamSpec<'a> {
    pub mix: &'a [(u8, f64)],
    pub key_dist: &'a Dist,
    pub keys: u64,
    pub key_offset: u64,
    pub value_size: &'a Dist,
    pub ttl: &'a Dist,
    pub seed: i64,
    pub client_id: i64,
}

impl OpStream {
    pub fn new(s: &StreamSpec<'_>) -> OpStream {
        let keys = std::cmp::max(s.keys, 1);
        let total: f64 = s.mix.iter().map(|(_, w)| w).sum();
        let mut acc = 0.0;
        let mut cum: Vec<f64> = s
            .mix
            .iter()
            .map(|(_, w)| {
                acc += w;
                acc / total
            })
            .collect();
        if let Some(last) = cum.last_mut() {
            *last = 1.0;
        }
        let hot_share = if s.key_dist.kind == "hotcold" {
            s.key_dist.params[1]
        } else {
            DEFAULT_HOT_SHARE
        };
        let p = &s.key_dist.params;
        let key = match s.key_dist.kind.as_str() {
            "sequential" => KeyChooser::Sequential((s.client_id.max(0) as u64).wrapping_mul(7919)),
            "zipf" => KeyChooser::Zipf(zipf_cdf(keys, p[0])),
            "gaussian" => KeyChooser::Gaussian(p[0] * keys as f64, p[1] * keys as f64),
            "hotcold" => {
                let hot = std::cmp::max(1, (keys as f64 * p[1]) as u64);
                KeyChooser::HotCold(p[0], hot, std::cmp::max(1, keys.saturating_sub(hot)))
            }
            _ => KeyChooser::Uniform,
        };
        let v = &s.value_size.params;
        let size = match s.value_size.kind.as_str() {
            "uniform" => SizeChooser::Uniform(v[0] as usize, v[1] as usize),
            "weighted" => {
                let sizes = v.iter().step_by(2).map(|&x| x as usize).collect();
                let mut acc = 0.0;
                let cum = v
                    .iter()
                    .skip(1)
                    .step_by(2)
                    .map(|w| {
                        acc += w;
                        acc
                    })
                    .collect();
                SizeChooser::Weighted(sizes, cum)
            }
            _ => SizeChooser::Fixed(v[0] as usize),
        };
        let t = &s.ttl.params;
        let ttl = match s.ttl.kind.as_str() {
            "fixed" => TtlChooser::Fixed(t[0]),
            "range" => TtlChooser::Range(t[0], t[1]),
            _ => TtlChooser::None,
        };
        OpStream {
            rng: Rng::for_client(s.seed, s.client_id),
            codes: s.mix.iter().map(|(c, _)| *c).collect(),
            cum,
            keys,
            key_offset: s.key_offset,
            hot_end: s.key_offset + std::cmp::max(1, (keys as f64 * hot_share) as u64),
            key,
            size,
            ttl,
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
            SizeChooser::Fixed(s) => *s,
            SizeChooser::Uniform(lo, hi) => {
                let span = (hi - lo + 1) as f64;
                lo + ((self.rng.random() * span) as usize).min(hi - lo)
            }
            SizeChooser::Weighted(sizes, cum) => {
                let u = self.rng.random() * cum[cum.len() - 1];
                let i = cum.partition_point(|&c| c <= u).min(sizes.len() - 1);
                sizes[i]
            }
        }
    }

    #[inline]
    fn next_ttl(&mut self) -> Option<f64> {
        match self.ttl {
            TtlChooser::None => None,
            TtlChooser::Fixed(t) => Some(t),
            TtlChooser::Range(lo, hi) => Some(lo + (hi - lo) * self.rng.random()),
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

/// Python's `random.Random(seed)` (MT19937, seeded by `init_by_array`), for the values.
struct Mt {
    mt: [u32; 624],
    i: usize,
}

impl Mt {
    fn new(seed: i64) -> Mt {
        let mut n = seed.unsigned_abs();
        let mut key = Vec::new();
        while n > 0 {
            key.push(n as u32);
            n >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        let mut m = Mt {
            mt: [0; 624],
            i: 624,
        };
        m.mt[0] = 19_650_218;
        for i in 1..624 {
            let prev = m.mt[i - 1];
            m.mt[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..std::cmp::max(624, key.len()) {
            let prev = m.mt[i - 1];
            m.mt[i] = (m.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= 624 {
                m.mt[0] = m.mt[623];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..623 {
            let prev = m.mt[i - 1];
            m.mt[i] = (m.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                m.mt[0] = m.mt[623];
                i = 1;
            }
        }
        m.mt[0] = 0x8000_0000;
        m
    }

    fn next(&mut self) -> u32 {
        if self.i >= 624 {
            for k in 0..624 {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % 624] & 0x7fff_ffff);
                let mut v = self.mt[(k + 397) % 624] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.mt[k] = v;
            }
            self.i = 0;
        }
        let mut y = self.mt[self.i];
        self.i += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

/// `random.Random(seed).randbytes(n)`.
pub fn python_randbytes(seed: i64, n: usize) -> Vec<u8> {
    let mut mt = Mt::new(seed);
    let mut out = Vec::with_capacity(n + 4);
    let full = n / 4;
    for _ in 0..full {
        out.extend_from_slice(&mt.next().to_le_bytes());
    }
    let rest = n % 4;
    if rest > 0 {
        let r = mt.next() >> (32 - 8 * rest as u32);
        out.extend_from_slice(&r.to_le_bytes()[..rest]);
    }
    out
}

/// The value bytes: one buffer, a value is a slice whose offset depends on its key only.
pub struct Values {
    data: Vec<u8>,
}

impl Values {
    pub fn new(max_size: usize, seed: i64) -> Values {
        Values {
            data: python_randbytes(seed, max_size + VALUE_SPREAD),
        }
    }

    #[inline]
    pub fn value(&self, key_index: u64, size: usize) -> &[u8] {
        let off = (key_index % VALUE_SPREAD as u64) as usize;
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
    fn partition_covers_the_key_space() {
        assert_eq!(partition(10, 3, 0), (0, 4));
        assert_eq!(partition(10, 3, 1), (4, 3));
        assert_eq!(partition(10, 3, 2), (7, 3));
    }

    #[test]
    fn share_rounds_half_to_even() {
        assert_eq!(share(Some(5), 1, 2), Some(2));
        assert_eq!(share(Some(7), 1, 2), Some(4));
        assert_eq!(share(Some(1), 1, 4), Some(1));
    }

    #[test]
    fn randbytes_matches_python() {
        // random.Random(seed).randbytes(n).hex() in CPython 3.11.
        let hex = |seed, n| -> String {
            python_randbytes(seed, n)
                .iter()
                .map(|x| format!("{:02x}", x))
                .collect()
        };
        assert_eq!(hex(1, 6), "f5b16522b791");
        assert_eq!(hex(-5, 3), "7c769f");
        assert_eq!(hex((1 << 40) + 3, 5), "cef743380f");
    }

    #[test]
    fn same_seed_same_sequence() {
        let mix = [(GET, 0.9), (SET, 0.1)];
        let kd = parse_key_distribution("zipf(0.99)").unwrap();
        let vs = parse_value_size("uniform(8,3000)").unwrap();
        let ttl = parse_ttl("range(1,5)").unwrap();
        let spec = StreamSpec {
            mix: &mix,
            key_dist: &kd,
            keys: 1000,
            key_offset: 0,
            value_size: &vs,
            ttl: &ttl,
            seed: 7,
            client_id: 3,
        };
        let mut a = OpStream::new(&spec);
        let mut b = OpStream::new(&spec);
        for _ in 0..1000 {
            let (x, y) = (a.next_op(), b.next_op());
            assert_eq!((x.code, x.index, x.size), (y.code, y.index, y.size));
            assert!(x.size >= 8 && x.size <= 3000);
        }
    }
}

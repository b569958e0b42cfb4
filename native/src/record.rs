//! What one interval measured: an HdrHistogram per op kind and the counters, written as
//! the STATS object of the frames (histograms in the standard V2 deflate encoding, base64).

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

pub const LOWEST_NS: u64 = 1;
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
const FIRST_ERROR_CHARS: usize = 300;

pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, 3).expect("histogram bounds");
    h.auto(false);
    h
}

// HdrHistogram's own bucket layout for 1 ns .. 1 h at 3 significant digits: 2048
// sub-buckets (the top half of each bucket past the first), unit magnitude 0.
const HALF_MAGNITUDE: u32 = 10;
const HALF_COUNT: u64 = 1 << HALF_MAGNITUDE;
const SUB_MASK: u64 = 2 * HALF_COUNT - 1;

#[inline]
fn counts_index(v: u64) -> usize {
    let bucket = 64 - (v | SUB_MASK).leading_zeros() as u64 - (HALF_MAGNITUDE as u64 + 1);
    let sub = v >> bucket;
    (((bucket + 1) << HALF_MAGNITUDE) + sub - HALF_COUNT) as usize
}

#[inline]
fn value_at(index: usize) -> u64 {
    let mut bucket = (index as i64 >> HALF_MAGNITUDE) - 1;
    let mut sub = (index as u64 & (HALF_COUNT - 1)) + HALF_COUNT;
    if bucket < 0 {
        sub -= HALF_COUNT;
        bucket = 0;
    }
    sub << bucket
}

/// Latencies counted in HdrHistogram's buckets with one add per op (a few instructions),
/// turned into a real HdrHistogram once per interval.
#[derive(Clone)]
pub struct Counts {
    counts: Vec<u64>,
}

impl Counts {
    fn new() -> Counts {
        // Zeroed pages from the allocator: untouched buckets cost no memory.
        Counts {
            counts: vec![0; counts_index(HIGHEST_NS) + 1],
        }
    }

    /// A value in ns; beyond the histogram's range it is saturated, never dropped.
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        let i = counts_index(ns.clamp(LOWEST_NS, HIGHEST_NS));
        self.counts[i] += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&n| n == 0)
    }

    fn add(&mut self, other: &Counts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }

    pub fn histogram(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        for (i, &n) in self.counts.iter().enumerate() {
            if n > 0 {
                h.record_n(value_at(i), n)
                    .expect("a value within the bounds");
            }
        }
        h
    }
}

/// The counters and histograms of one span; swapped out whole at each boundary.
pub struct Recorder {
    pub hist: Vec<Counts>,
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
    /// Redis Cluster redirections followed (cluster.rs).
    pub moved: u64,
    pub ask: u64,
    pub open_loop: bool,
    pub send_lag: Option<Box<Counts>>,
    pub errors: Vec<(String, u64, String)>, // kind, count, first message
    /// A trace replay's requests not sent, by op (`metrics.Stats.skipped`).
    pub skipped: Vec<(String, u64)>,
}

impl Recorder {
    /// A recorder with one histogram per op kind the order names (`StepOrder::record`).
    pub fn new(open_loop: bool, kinds: usize) -> Recorder {
        Recorder {
            hist: (0..kinds).map(|_| Counts::new()).collect(),
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
            send_lag: None,
            errors: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// A trace request not sent: an op the target does not do, or a value too large.
    pub fn skip(&mut self, what: &str, n: u64) {
        match self.skipped.iter_mut().find(|s| s.0 == what) {
            Some(s) => s.1 += n,
            None => self.skipped.push((what.to_string(), n)),
        }
    }

    /// A latency in ns of an op of the kind at index `kind` of the order's kinds.
    #[inline(always)]
    pub fn latency(&mut self, kind: usize, ns: u64) {
        if cfg!(feature = "norecord") {
            return;
        }
        self.hist[kind].record(ns);
    }

    #[inline]
    pub fn lag(&mut self, ns: u64) {
        if cfg!(feature = "norecord") {
            return;
        }
        self.send_lag
            .get_or_insert_with(|| Box::new(Counts::new()))
            .record(ns);
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
        fn merge(a: &mut Option<Box<Counts>>, b: Option<Box<Counts>>) {
            match (a.as_mut(), b) {
                (Some(x), Some(y)) => x.add(&y),
                (None, Some(y)) => *a = Some(y),
                _ => {}
            }
        }
        for (a, b) in self.hist.iter_mut().zip(other.hist.iter()) {
            a.add(b);
        }
        merge(&mut self.send_lag, other.send_lag);
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

    /// The STATS object of `metrics.Stats.to_dict()`, plus cpu, offered and send_lag.
    /// `kinds` names the histograms, in the order the recorder was made with.
    pub fn to_json(
        &self,
        duration: f64,
        worker: usize,
        cpu_seconds: f64,
        kinds: &[String],
    ) -> Value {
        let mut hist = Map::new();
        for (name, h) in kinds.iter().zip(self.hist.iter()) {
            if !h.is_empty() {
                hist.insert(name.to_string(), Value::String(encode(&h.histogram())));
            }
        }
        let mut errors = Map::new();
        let mut first = Map::new();
        for (kind, n, msg) in &self.errors {
            errors.insert(kind.clone(), json!(n));
            first.insert(kind.clone(), json!(msg));
        }
        let lag = match &self.send_lag {
            Some(h) if self.open_loop && !h.is_empty() => encode(&h.histogram()),
            _ => String::new(),
        };
        let mut cpu = Map::new();
        cpu.insert(worker.to_string(), json!(cpu_seconds));
        let mut stats = json!({
            "duration": duration,
            "hist": hist,
            "hits": self.hits,
            "misses": self.misses,
            "errors": errors,
            "first_errors": first,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "published": self.published,
            "delivered": self.delivered,
            "expected_deliveries": self.expected,
            "hot_gets": self.hot_gets,
            "hot_hits": self.hot_hits,
            "server": {},
            "cpu": cpu,
            "offered": self.offered,
            "send_lag": lag,
            "moved": self.moved,
            "ask": self.ask,
        });
        if !self.skipped.is_empty() {
            let skipped: Map<String, Value> = self
                .skipped
                .iter()
                .map(|(what, n)| (what.clone(), json!(n)))
                .collect();
            stats["skipped"] = Value::Object(skipped);
        }
        stats
    }
}

/// The standard HdrHistogram V2 compressed encoding, as base64 text.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serialising a histogram into memory");
    base64(&bytes)
}

pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity((data.len() + 2) / 3 * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        out.push(ALPHABET[(n >> 18) as usize & 63] as char);
        out.push(ALPHABET[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            ALPHABET[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            ALPHABET[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            b'\r' | b'\n' => continue,
            _ => return None,
        };
        acc = acc << 6 | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for n in 0..10 {
            let data: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
            assert_eq!(base64_decode(&base64(&data)).unwrap(), data);
        }
        assert_eq!(base64(b"foob"), "Zm9vYg==");
    }

    #[test]
    fn counts_use_hdrhistograms_buckets() {
        let reference = new_histogram();
        for v in [
            1u64,
            2,
            1023,
            1024,
            2047,
            2048,
            2049,
            4095,
            1_000_000,
            123_456_789,
            HIGHEST_NS,
        ] {
            assert_eq!(
                value_at(counts_index(v)),
                reference.lowest_equivalent(v),
                "{}",
                v
            );
        }
        let mut c = Counts::new();
        for v in [5u64, 5, 70_000, 3_000_000] {
            c.record(v);
        }
        let h = c.histogram();
        assert_eq!(h.len(), 4);
        assert_eq!(h.value_at_quantile(0.5), 5);
        assert!(h.equivalent(h.max(), 3_000_000));
    }

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

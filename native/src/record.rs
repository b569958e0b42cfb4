//! What one interval measured: an HdrHistogram per op kind and the counters, written as
//! the STATS object of the frames (histograms in the standard V2 deflate encoding, base64).

use flate2::write::ZlibEncoder;
use flate2::Compression;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};
use std::io::Write;

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
/// Slots for the index of every u64 (the highest is 56,319): a value is counted as it is,
/// with no clamp and no bounds check, and the histogram's bounds are applied once per
/// interval (`histogram`), not once per op.
const SLOTS: usize = 1 << 16;

/// HdrHistogram's counts index of `v`: bucket `b` (the highest bit of `v | SUB_MASK`,
/// less HALF_MAGNITUDE) holds 2048 sub-buckets of `v >> b`, the lower half of which
/// overlaps bucket `b - 1`, so the index is `b * 1024 + (v >> b)`.
#[inline(always)]
fn counts_index(v: u64) -> usize {
    let bucket = 63 - (v | SUB_MASK).leading_zeros() as u64 - HALF_MAGNITUDE as u64;
    ((bucket << HALF_MAGNITUDE) + (v >> bucket)) as usize
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

/// The most op kinds a recorder counts (`metrics.OP_KINDS` has 5): a power of two, so
/// that a kind's index is masked into range rather than bounds-checked on every op.
pub const KINDS_MAX: usize = 8;

type Slots = [u64; SLOTS];

/// `N` latency histograms counted in HdrHistogram's buckets with one add per op (a few
/// instructions: the hot path of every reply), each turned into a real HdrHistogram once
/// per interval. One mapping of its own for all `N`, so that an op's count is one address
/// away from the recorder, and so that `clear` can hand its pages back whole.
pub struct Counts<const N: usize> {
    slots: std::ptr::NonNull<[Slots; N]>,
}

// SAFETY: the mapping is owned by this value alone (as a Box would be); a recorder is
// handed to the reporting thread whole (report.rs).
unsafe impl<const N: usize> Send for Counts<N> {}

impl<const N: usize> Counts<N> {
    const BYTES: usize = std::mem::size_of::<[Slots; N]>();

    pub fn new() -> Counts<N> {
        // Fresh zero pages: untouched buckets cost no memory and no clearing.
        // SAFETY: a private anonymous mapping of our own, checked below.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(at != libc::MAP_FAILED, "cannot map a recorder's counts");
        let slots = std::ptr::NonNull::new(at as *mut [Slots; N]).expect("a mapping");
        Counts { slots }
    }

    #[inline(always)]
    fn all(&self) -> &[Slots; N] {
        // SAFETY: the mapping lives as long as self, zero-filled and aligned to a page.
        unsafe { self.slots.as_ref() }
    }

    #[inline(always)]
    fn all_mut(&mut self) -> &mut [Slots; N] {
        // SAFETY: as in `all`, and `&mut self` makes the borrow unique.
        unsafe { self.slots.as_mut() }
    }

    /// Zero the first `n` histograms by giving their pages back to the kernel (each is
    /// 512 KiB, whole pages): they read as zero afterwards and cost no memory until
    /// counted in again, as a fresh mapping would, without mapping anew.
    pub fn clear(&mut self, n: usize) {
        let bytes = std::mem::size_of::<Slots>() * n.min(N);
        // SAFETY: a range of whole pages inside our own private anonymous mapping.
        let done = unsafe {
            libc::madvise(
                self.slots.as_ptr() as *mut libc::c_void,
                bytes,
                libc::MADV_DONTNEED,
            )
        };
        if done != 0 {
            for h in self.all_mut().iter_mut().take(n) {
                h.fill(0);
            }
        }
    }

    /// A value in ns of histogram `k` (< N); beyond the histogram's range it is saturated
    /// (when the interval's histogram is made), never dropped.
    #[inline(always)]
    pub fn record(&mut self, k: usize, ns: u64) {
        // The masks change nothing (k < N, a power of two, and every index is below
        // SLOTS) but spare the bounds checks.
        self.all_mut()[k & (N - 1)][counts_index(ns) & (SLOTS - 1)] += 1;
    }

    pub fn is_empty(&self, k: usize) -> bool {
        self.all()[k].iter().all(|&n| n == 0)
    }

    /// Add the first `n` histograms of `other`.
    fn add(&mut self, other: &Counts<N>, n: usize) {
        for (a, b) in self.all_mut().iter_mut().zip(other.all().iter()).take(n) {
            for (x, y) in a.iter_mut().zip(b.iter()) {
                *x += y;
            }
        }
    }

    /// The HdrHistogram of histogram `k`: values below LOWEST_NS count as LOWEST_NS,
    /// values above HIGHEST_NS as HIGHEST_NS.
    pub fn histogram(&self, k: usize) -> Histogram<u64> {
        let (low, high) = (counts_index(LOWEST_NS), counts_index(HIGHEST_NS));
        let mut h = new_histogram();
        for (i, &n) in self.all()[k].iter().enumerate() {
            if n > 0 {
                h.record_n(value_at(i.clamp(low, high)), n)
                    .expect("a value within the bounds");
            }
        }
        h
    }
}

impl<const N: usize> Drop for Counts<N> {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping `new` made, which nothing borrows any more.
        unsafe { libc::munmap(self.slots.as_ptr() as *mut libc::c_void, Self::BYTES) };
    }
}

/// The counters and histograms of one span; swapped out whole at each boundary.
pub struct Recorder {
    /// One latency histogram per op kind the order names (`StepOrder::record`).
    pub hist: Counts<KINDS_MAX>,
    pub kinds: usize,
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
    pub send_lag: Option<Counts<1>>,
    pub errors: Vec<(String, u64, String)>, // kind, count, first message
    /// A trace replay's requests not sent, by op (`metrics.Stats.skipped`).
    pub skipped: Vec<(String, u64)>,
}

impl Recorder {
    /// A recorder with one histogram per op kind the order names (`StepOrder::record`,
    /// at most KINDS_MAX: `Run::new` refuses more).
    pub fn new(open_loop: bool, kinds: usize) -> Recorder {
        Recorder::with_counts(Counts::new(), open_loop.then(Counts::new), open_loop, kinds)
    }

    /// This recorder's counts, zeroed, in a recorder for the next span (of a step that may
    /// record other kinds, open loop or not); nothing else of this span is kept.
    pub fn recycled(self, open_loop: bool, kinds: usize) -> Recorder {
        let (mut hist, mut lag) = (self.hist, self.send_lag);
        hist.clear(self.kinds);
        match lag.as_mut() {
            Some(l) if open_loop => l.clear(1),
            _ => lag = open_loop.then(Counts::new),
        }
        Recorder::with_counts(hist, lag, open_loop, kinds)
    }

    /// Every field of a recorder that has counted nothing: the one place both `new` and
    /// `recycled` make one.
    fn with_counts(
        hist: Counts<KINDS_MAX>,
        send_lag: Option<Counts<1>>,
        open_loop: bool,
        kinds: usize,
    ) -> Recorder {
        assert!(kinds <= KINDS_MAX, "at most {} op kinds", KINDS_MAX);
        Recorder {
            hist,
            kinds,
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
            send_lag,
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

    /// The latency of an op of the kind at index `kind` of the order's kinds, from its
    /// start to `end` (ns on the monotonic clock). `end` is never before `start`: were it
    /// ever, the difference would wrap to a huge value and show as the histogram's highest,
    /// a bug in sight rather than a 0 that hides it.
    #[inline(always)]
    pub fn latency(&mut self, kind: usize, start: u64, end: u64) {
        if cfg!(feature = "norecord") {
            return;
        }
        self.hist.record(kind, end.wrapping_sub(start));
    }

    /// An open-loop send's lag (its histogram is made with the recorder). Not inlined: it
    /// stays out of the closed loop's refill, where it never runs.
    #[inline(never)]
    pub fn lag(&mut self, ns: u64) {
        if cfg!(feature = "norecord") {
            return;
        }
        if let Some(h) = self.send_lag.as_mut() {
            h.record(0, ns);
        }
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
        self.hist.add(&other.hist, self.kinds);
        match (self.send_lag.as_mut(), other.send_lag) {
            (Some(x), Some(y)) => x.add(&y, 1),
            (None, Some(y)) => self.send_lag = Some(y),
            _ => {}
        }
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
        for (k, name) in kinds.iter().enumerate().take(self.kinds) {
            if !self.hist.is_empty(k) {
                let h = self.hist.histogram(k);
                hist.insert(name.to_string(), Value::String(encode(&h)));
            }
        }
        let mut errors = Map::new();
        let mut first = Map::new();
        for (kind, n, msg) in &self.errors {
            errors.insert(kind.clone(), json!(n));
            first.insert(kind.clone(), json!(msg));
        }
        let lag = match &self.send_lag {
            Some(h) if self.open_loop && !h.is_empty(0) => encode(&h.histogram(0)),
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

/// The cookie of HdrHistogram's V2 compressed encoding.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// The standard HdrHistogram V2 compressed encoding, as base64 text: the cookie, the
/// length, then the V2 encoding in a zlib stream. It is V2DeflateSerializer's format; the
/// stream is made at the fastest level, which any zlib reader reads, at a fraction of the
/// default level's instructions (this runs once per histogram per interval).
pub fn encode(h: &Histogram<u64>) -> String {
    let mut plain = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut plain)
        .expect("serialising a histogram into memory");
    let mut bytes = Vec::with_capacity(plain.len() / 2 + 8);
    bytes.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
    bytes.extend_from_slice(&[0; 4]);
    let mut z = ZlibEncoder::new(bytes, Compression::fast());
    z.write_all(&plain).expect("compressing into memory");
    let mut bytes = z.finish().expect("compressing into memory");
    let len = (bytes.len() - 8) as u32;
    bytes[4..8].copy_from_slice(&len.to_be_bytes());
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
        let mut c = Counts::<2>::new();
        for v in [5u64, 5, 70_000, 3_000_000] {
            c.record(1, v);
        }
        assert!(c.is_empty(0));
        let h = c.histogram(1);
        assert_eq!(h.len(), 4);
        assert_eq!(h.value_at_quantile(0.5), 5);
        assert!(h.equivalent(h.max(), 3_000_000));
    }

    #[test]
    fn values_out_of_bounds_are_saturated_like_hdrhistogram_would_be_clamped() {
        let mut c = Counts::<1>::new();
        for v in [0u64, 1, HIGHEST_NS, HIGHEST_NS + 1, u64::MAX] {
            c.record(0, v);
        }
        let h = c.histogram(0);
        let mut reference = new_histogram();
        for v in [0u64, 1, HIGHEST_NS, HIGHEST_NS + 1, u64::MAX] {
            reference
                .record(v.clamp(LOWEST_NS, HIGHEST_NS))
                .expect("in bounds");
        }
        assert_eq!(h, reference);
        assert_eq!(counts_index(u64::MAX), 56_319);
    }

    #[test]
    fn the_encoding_reads_back_as_hdrhistograms_v2_compressed_format() {
        use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
        let mut c = Counts::<1>::new();
        for v in [1u64, 7, 7, 900, 65_000, 1_000_000, 2_500_000_000] {
            c.record(0, v);
        }
        let h = c.histogram(0);
        let bytes = base64_decode(&encode(&h)).unwrap();
        let back: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
        assert_eq!(back, h);
        // The same header and payload as hdrhistogram's own serializer, after the stream.
        let mut theirs = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut theirs)
            .unwrap();
        assert_eq!(bytes[..4], theirs[..4]);
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

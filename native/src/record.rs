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

pub use crate::counts::{Counts, KINDS_MAX};

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
        enc: &mut Encoder,
        duration: f64,
        worker: usize,
        cpu_seconds: f64,
        kinds: &[String],
    ) -> Value {
        let mut hist = Map::new();
        for (k, name) in kinds.iter().enumerate().take(self.kinds) {
            if !self.hist.is_empty(k) {
                hist.insert(name.to_string(), Value::String(enc.counts(&self.hist, k)));
            }
        }
        let mut errors = Map::new();
        let mut first = Map::new();
        for (kind, n, msg) in &self.errors {
            errors.insert(kind.clone(), json!(n));
            first.insert(kind.clone(), json!(msg));
        }
        let lag = match &self.send_lag {
            Some(h) if self.open_loop && !h.is_empty(0) => enc.counts(h, 0),
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
///
/// One encoder serves every interval (the reporting thread's, report.rs): its histogram
/// and zlib state are made once and reset, where a fresh histogram (270 KB of counts) and
/// compressor per histogram faulted in their pages every time.
pub struct Encoder {
    scratch: Histogram<u64>,
    plain: Vec<u8>,
    zlib: ZlibEncoder<Vec<u8>>,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder {
            scratch: new_histogram(),
            plain: Vec::new(),
            zlib: ZlibEncoder::new(Vec::new(), Compression::fast()),
        }
    }

    /// Histogram `k` of `counts`, encoded.
    pub fn counts<const N: usize>(&mut self, counts: &Counts<N>, k: usize) -> String {
        counts.fill(k, &mut self.scratch);
        self.plain.clear();
        V2Serializer::new()
            .serialize(&self.scratch, &mut self.plain)
            .expect("serialising a histogram into memory");
        let head = self.zlib.get_mut();
        head.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        head.extend_from_slice(&[0; 4]);
        self.zlib
            .write_all(&self.plain)
            .expect("compressing into memory");
        // Ends the stream and starts the next one afresh, handing over this one.
        let mut bytes = self
            .zlib
            .reset(Vec::new())
            .expect("compressing into memory");
        let len = (bytes.len() - 8) as u32;
        bytes[4..8].copy_from_slice(&len.to_be_bytes());
        base64(&bytes)
    }
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
    fn the_encoding_reads_back_as_hdrhistograms_v2_compressed_format() {
        use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
        let mut c = Counts::<1>::new();
        for v in [1u64, 7, 7, 900, 65_000, 1_000_000, 2_500_000_000] {
            c.record(0, v);
        }
        let h = c.histogram(0);
        let bytes = base64_decode(&Encoder::new().counts(&c, 0)).unwrap();
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
    fn an_encoder_used_again_encodes_as_a_new_one_would() {
        let mut wide = Counts::<2>::new();
        for v in [
            3u64,
            900,
            65_000,
            1_000_000,
            2_500_000_000,
            3_000_000_000_000,
        ] {
            wide.record(0, v);
        }
        let mut narrow = Counts::<2>::new();
        for v in [20_000u64, 21_000, 21_000, 25_000] {
            narrow.record(1, v);
        }
        let mut used = Encoder::new();
        let first = used.counts(&wide, 0);
        // After a wider histogram and a different stream, nothing of either is left.
        assert_eq!(used.counts(&narrow, 1), Encoder::new().counts(&narrow, 1));
        assert_eq!(used.counts(&wide, 0), first);
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

//! An interval's recorder as the STATS object of the frames: histograms in the standard
//! HdrHistogram V2 deflate encoding, base64 (docs/frames.md).

use super::{Counts, Recorder};
use crate::protocols::wire::OUTCOME_NAMES;
use crate::record::histogram::new_histogram;
use crate::text::base64;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};
use std::io::Write;

/// The STATS object of `metrics.Stats.to_dict()`, plus cpu, offered and send_lag.
/// `kinds` names the histograms, in the order the recorder was made with.
pub fn stats(
    rec: &Recorder,
    enc: &mut Encoder,
    duration: f64,
    worker: usize,
    cpu_seconds: f64,
    kinds: &[String],
) -> Value {
    let mut hist = Map::new();
    for (k, name) in kinds.iter().enumerate().take(rec.kinds) {
        if !rec.hist.is_empty(k) {
            hist.insert(name.to_string(), Value::String(enc.counts(&rec.hist, k)));
        }
    }
    let mut errors = Map::new();
    let mut first = Map::new();
    for (kind, n, msg) in &rec.errors {
        errors.insert(kind.clone(), json!(n));
        first.insert(kind.clone(), json!(msg));
    }
    let lag = match &rec.send_lag {
        Some(h) if rec.open_loop && !h.is_empty(0) => enc.counts(h, 0),
        _ => String::new(),
    };
    let mut cpu = Map::new();
    cpu.insert(worker.to_string(), json!(cpu_seconds));
    let mut stats = json!({
        "duration": duration,
        "hist": hist,
        "hits": rec.hits,
        "misses": rec.misses,
        "errors": errors,
        "first_errors": first,
        "bytes_in": rec.bytes_in,
        "bytes_out": rec.bytes_out,
        "published": rec.published,
        "delivered": rec.delivered,
        "expected_deliveries": rec.expected,
        "hot_gets": rec.hot_gets,
        "hot_hits": rec.hot_hits,
        "server": {},
        "cpu": cpu,
        "offered": rec.offered,
        "send_lag": lag,
        "moved": rec.moved,
        "ask": rec.ask,
    });
    if !rec.skipped.is_empty() {
        let skipped: Map<String, Value> = rec
            .skipped
            .iter()
            .map(|(what, n)| (what.clone(), json!(n)))
            .collect();
        stats["skipped"] = Value::Object(skipped);
    }
    let outcomes = outcomes(rec, kinds);
    if !outcomes.is_empty() {
        stats["outcomes"] = Value::Object(outcomes);
    }
    stats
}

/// `{kind: {outcome: count}}` of the kinds that had any (`metrics.Stats.outcomes`).
fn outcomes(rec: &Recorder, kinds: &[String]) -> Map<String, Value> {
    let mut all = Map::new();
    for (k, name) in kinds.iter().enumerate().take(rec.kinds) {
        let counts: Map<String, Value> = OUTCOME_NAMES
            .iter()
            .zip(rec.outcomes[k])
            .filter(|&(_, n)| n > 0)
            .map(|(o, n)| (o.to_string(), json!(n)))
            .collect();
        if !counts.is_empty() {
            all.insert(name.clone(), Value::Object(counts));
        }
    }
    all
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::base64_decode;

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
}

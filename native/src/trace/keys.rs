//! A replayed request's key: the client it belongs to (zlib's crc32 of the trace's
//! spelling, as the Python engine hashes it), the index or own bytes it is sent under, and
//! two direct-mapped tables: keys sent under their index formatted once per slot, and the
//! keys a get-set-on-miss get was answered for.

use super::file::Key;
use crate::hash::crc32;
use crate::text::decimal;
use crate::workload::keys::format_key_into;

/// The bytes of a trace key as the trace spells it (an id in decimal).
pub fn key_text<'a>(key: &'a Key, buf: &'a mut [u8; 20]) -> &'a [u8] {
    match key {
        Key::Id(id) => decimal(*id, buf),
        Key::Text(t) => t,
    }
}

/// The key index a request is sent under, and its key's own bytes (the prefix, the
/// trace's key, '_' up to the recorded key size) when it does not go as the prefix and id
/// of index `id`: a text key, or a padded id.
pub fn key_index(prefix: &str, key: &Key, key_size: u32) -> (u64, Option<Box<[u8]>>) {
    if let Key::Id(id) = key {
        // Compared without writing the digits: this runs for every request read (and no
        // key size recorded, as in oracleGeneral, needs no digits counted).
        if key_size <= 1 || key_size <= digits(*id) {
            return (*id, None);
        }
    }
    let mut text = [0u8; 20];
    let body = key_text(key, &mut text);
    let pad = (key_size as usize).saturating_sub(body.len());
    let mut buf = Vec::with_capacity(prefix.len() + body.len() + pad);
    buf.extend_from_slice(prefix.as_bytes());
    buf.extend_from_slice(body);
    buf.extend(std::iter::repeat(b'_').take(pad));
    (crc32(&buf) as u64, Some(buf.into()))
}

/// How many decimal digits `n` has.
fn digits(mut n: u64) -> u32 {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Keys sent under their index (the prefix and the id), formatted once per slot of a
/// direct-mapped table: a trace's hot keys repeat, and formatting each request's key took
/// about a hundred instructions more per op than the synthetic workload's key table (issue
/// 23). A key pushed out by another is only formatted again.
pub struct IndexKeys {
    prefix: String,
    length: usize,
    /// Per slot: its index + 1 (0: empty), and its key's length in `data`.
    tags: Vec<u64>,
    lens: Vec<u8>,
    /// `STRIDE` bytes per slot, each starting with the prefix.
    data: Vec<u8>,
    stride: usize,
    /// A key too long for its slot (a long `keys.length`), formatted each time.
    scratch: Vec<u8>,
}

const INDEX_KEY_SLOTS: usize = 1 << 14;

impl IndexKeys {
    pub fn new(prefix: &str, length: usize) -> IndexKeys {
        let stride = prefix.len() + 20;
        let mut data = Vec::with_capacity(stride * INDEX_KEY_SLOTS);
        for _ in 0..INDEX_KEY_SLOTS {
            data.extend_from_slice(prefix.as_bytes());
            data.resize(data.len() + 20, 0);
        }
        IndexKeys {
            prefix: prefix.to_string(),
            length,
            tags: vec![0; INDEX_KEY_SLOTS],
            lens: vec![0; INDEX_KEY_SLOTS],
            data,
            stride,
            scratch: Vec::new(),
        }
    }

    /// The key of `index`, as `workload::keys::format_key_into` spells it.
    pub fn get(&mut self, index: u64) -> &[u8] {
        let tag = index.wrapping_add(1);
        let slot = (index.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 50) as usize;
        let at = slot * self.stride;
        if tag != 0 && self.tags[slot] == tag {
            return &self.data[at..at + self.lens[slot] as usize];
        }
        format_key_into(&mut self.scratch, &self.prefix, index, self.length);
        let n = self.scratch.len();
        if tag == 0 || n > self.stride || n > u8::MAX as usize {
            return &self.scratch;
        }
        self.data[at..at + n].copy_from_slice(&self.scratch);
        self.tags[slot] = tag;
        self.lens[slot] = n as u8;
        &self.data[at..at + n]
    }
}

/// Keys a get-set-on-miss get was answered for (a hit, or a miss whose fill went out on
/// the same connection ahead of anything sent after): their next gets need not wait. A
/// direct-mapped table of fixed size: a key pushed out by another only waits again.
pub struct Present {
    slots: Vec<u64>,
}

const PRESENT_SLOTS: usize = 1 << 16;

impl Present {
    pub fn new() -> Present {
        Present {
            slots: vec![0; PRESENT_SLOTS],
        }
    }

    fn tag(index: u64, text: bool) -> (usize, u64) {
        let h = index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (text as u64);
        (
            (h >> 48) as usize % PRESENT_SLOTS,
            (index << 1 | text as u64).wrapping_add(1),
        )
    }

    pub fn mark(&mut self, index: u64, text: bool) {
        let (slot, tag) = Self::tag(index, text);
        self.slots[slot] = tag;
    }

    pub fn has(&self, index: u64, text: bool) -> bool {
        let (slot, tag) = Self::tag(index, text);
        self.slots[slot] == tag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_hash_by_their_trace_spelling() {
        let mut buf = [0u8; 20];
        assert_eq!(key_text(&Key::Id(42), &mut buf), b"42");
        assert_eq!(key_text(&Key::Text(b"k:a"[..].into()), &mut buf), b"k:a");
    }

    #[test]
    fn an_unpadded_id_goes_by_index_and_any_other_key_as_its_own_bytes() {
        assert_eq!(key_index("wb:", &Key::Id(42), 2), (42, None));
        assert_eq!(key_index("wb:", &Key::Id(0), 1), (0, None));
        assert_eq!(key_index("wb:", &Key::Id(u64::MAX), 20), (u64::MAX, None));
        assert!(key_index("wb:", &Key::Id(99), 3).1.is_some());
        let (index, own) = key_index("wb:", &Key::Id(42), 5);
        assert_eq!(own.as_deref(), Some(&b"wb:42___"[..]));
        assert_eq!(index, crc32(b"wb:42___") as u64);
        let (_, own) = key_index("wb:", &Key::Text(b"k:a"[..].into()), 3);
        assert_eq!(own.as_deref(), Some(&b"wb:k:a"[..]));
    }

    #[test]
    fn index_keys_are_spelled_as_the_synthetic_keys_whatever_the_slot_held_before() {
        for (prefix, length) in [("wb:", 0), ("wb:", 12), ("", 3), ("p", 40)] {
            let mut keys = IndexKeys::new(prefix, length);
            // Twice over indices that share slots, and the largest (which is never kept).
            let indices: Vec<u64> = (0..40_000u64).chain([u64::MAX, 7, u64::MAX - 1]).collect();
            for _ in 0..2 {
                for &i in &indices {
                    let want = crate::workload::keys::format_key(prefix, i, length);
                    assert_eq!(keys.get(i), want.as_slice(), "{:?} {}", prefix, i);
                }
            }
        }
    }
}

//! The bytes a step sends: keys spelled as the Python engine spells them (the prefix, then
//! the index zero-padded), formatted once per step where they fit, and values sliced from
//! one buffer of the Python engine's very bytes.

use super::rng::python_randbytes;
use crate::text::decimal;

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

/// The keys and values a step sends: keys formatted once per step where they fit
/// (`table`), else into `buf`; values sliced from one buffer.
pub struct Keys {
    pub values: Values,
    pub table: Option<KeyTable>,
    pub buf: Vec<u8>,
    /// The handle of a replayed key the next send takes as it is (`trace/replay.rs`; 0:
    /// none, the key of its index).
    pub next_trace: u32,
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
}

//! Reading a cache trace as a stream, one request at a time, in the formats of
//! `workbench/traces/`: libCacheSim's oracleGeneral (24-byte records), Twitter's CSV and a
//! plain CSV with a header; `.zst` files decompressed on the way (`zstd.rs`). Memory is one
//! read buffer whatever the file's size. A malformed or truncated record is one line
//! naming the file, the record and its byte offset (in the decompressed stream).

use super::readahead::ReadAhead;
use std::fs::File;
use std::io::Read;

/// The op names a trace may hold, by index: the order's (the op registry's trace names,
/// `workbench.sdk.ops`), so that nothing here numbers ops by position. A request's op is
/// its index here; a request that names none (oracleGeneral, a CSV without an op column)
/// is a get.
#[derive(Clone, Debug)]
pub struct OpNames {
    names: Vec<String>,
    get: u8,
}

impl OpNames {
    pub fn new(names: Vec<String>) -> Result<OpNames, String> {
        if names.len() > u8::MAX as usize {
            return Err("step order: more trace op names than 255".into());
        }
        let get = names
            .iter()
            .position(|n| n == "get")
            .ok_or("step order: the trace's op names have no \"get\"")?;
        Ok(OpNames {
            names,
            get: get as u8,
        })
    }

    /// The op of a record's op field (empty: a get).
    fn of(&self, field: &[u8]) -> Result<u8, String> {
        let t = text(field)?;
        if t.is_empty() {
            return Ok(self.get);
        }
        self.names
            .iter()
            .position(|o| o == t)
            .map(|i| i as u8)
            .ok_or_else(|| format!("unknown operation {:?}", t))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OracleGeneral,
    Twitter,
    Csv,
}

impl Format {
    pub fn by_name(name: &str) -> Result<Format, String> {
        Ok(match name {
            "oracleGeneral" => Format::OracleGeneral,
            "twitter" => Format::Twitter,
            "csv" => Format::Csv,
            other => return Err(format!("step order: unknown trace format {:?}", other)),
        })
    }
}

/// A trace's key: an object id (oracleGeneral, or a decimal key of a text format) or the
/// key's own bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    Id(u64),
    Text(Box<[u8]>),
}

/// One request, as `workbench.traces.records.Request` holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub time: f64,
    pub key: Key,
    /// The recorded key length (0: none recorded).
    pub key_size: u32,
    pub value_size: u32,
    /// An index into the reader's `OpNames`.
    pub op: u8,
    /// Seconds; 0 for none.
    pub ttl: u32,
}

const CHUNK: usize = 1 << 20;
const RECORD: usize = 24; // oracleGeneral: u32 time, u64 id, u32 size, i64 next access
const CSV_HEADERS: [&str; 4] = [
    "time,key,size",
    "time,key,size,op",
    "time,key,size,op,ttl",
    "time,key,size,ttl",
];
const TWITTER_FIELDS: &str = "timestamp,key,key size,value size,client id,op,ttl";

pub struct TraceReader {
    path: String,
    format: Format,
    src: Box<dyn Read>,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    eof: bool,
    /// Decompressed bytes before `buf[pos]`, and the record number there.
    offset: u64,
    record: u64,
    /// The plain CSV's columns, from its header.
    columns: Vec<String>,
    ops: OpNames,
}

type Read_<T> = Result<T, String>;

impl TraceReader {
    pub fn open(path: &str, format: Format, ops: OpNames) -> Read_<TraceReader> {
        // Opened, and a `.zst` file decompressed, on a thread reading ahead (readahead.rs).
        let named = path.to_string();
        let src = ReadAhead::spawn(move || -> Read_<Box<dyn Read>> {
            let file = File::open(&named)
                .map_err(|e| format!("{}: cannot read the trace: {}", named, e))?;
            Ok(if named.ends_with(".zst") {
                Box::new(super::zstd::ZstdReader::new(file)?)
            } else {
                Box::new(file)
            })
        })?;
        Self::from_reader(path, format, ops, Box::new(src))
    }

    pub fn from_reader(
        path: &str,
        format: Format,
        ops: OpNames,
        src: Box<dyn Read>,
    ) -> Read_<TraceReader> {
        let mut r = TraceReader {
            path: path.to_string(),
            format,
            src,
            buf: vec![0; CHUNK],
            pos: 0,
            len: 0,
            eof: false,
            offset: 0,
            record: 0,
            columns: Vec::new(),
            ops,
        };
        if format == Format::Csv {
            r.read_header()?;
        }
        Ok(r)
    }

    fn bad(&self, problem: &str) -> String {
        format!(
            "{}: record {} at byte offset {}: {}",
            self.path, self.record, self.offset, problem
        )
    }

    /// At least `n` bytes buffered from `pos`, unless the stream ends first; false then.
    fn fill(&mut self, n: usize) -> Read_<bool> {
        while self.len - self.pos < n && !self.eof {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.len, 0);
                self.len -= self.pos;
                self.pos = 0;
            }
            if self.buf.len() < n {
                self.buf.resize(n.next_power_of_two(), 0);
            }
            let len = self.len;
            let got = self.src.read(&mut self.buf[len..]).map_err(|e| {
                let what = if e.kind() == std::io::ErrorKind::UnexpectedEof
                    || e.kind() == std::io::ErrorKind::InvalidData
                {
                    format!("corrupt zstd data ({})", e)
                } else {
                    format!("cannot read the trace: {}", e)
                };
                self.bad(&what)
            })?;
            self.len += got;
            self.eof = got == 0;
        }
        Ok(self.len - self.pos >= n)
    }

    /// The next line (without its newline), or None at the end of the file.
    fn line(&mut self) -> Read_<Option<(usize, usize)>> {
        let mut scanned = 0;
        loop {
            if let Some(i) = self.buf[self.pos + scanned..self.len]
                .iter()
                .position(|&b| b == b'\n')
            {
                return Ok(Some((self.pos, self.pos + scanned + i)));
            }
            scanned = self.len - self.pos;
            let before = self.len - self.pos;
            if !self.fill(before + 1)? {
                return Ok(if self.len > self.pos {
                    Some((self.pos, self.len))
                } else {
                    None
                });
            }
        }
    }

    /// Moves past a line that ended at `end` (its newline, if any, included).
    fn consume_line(&mut self, end: usize) {
        let next = (end + 1).min(self.len);
        self.offset += (next - self.pos) as u64;
        self.pos = next;
        self.record += 1;
    }

    fn read_header(&mut self) -> Read_<()> {
        let header = match self.line()? {
            Some((a, b)) => String::from_utf8_lossy(&self.buf[a..b])
                .trim()
                .replace(' ', ""),
            None => String::new(),
        };
        if !CSV_HEADERS.contains(&header.as_str()) {
            return Err(self.bad(&format!(
                "expected the header {}; got {:?}",
                CSV_HEADERS.join(" or "),
                header.chars().take(80).collect::<String>()
            )));
        }
        self.columns = header.split(',').map(str::to_string).collect();
        let end = self.line()?.map_or(self.len, |(_, b)| b);
        self.consume_line(end);
        Ok(())
    }

    /// The next request, None at the end of the trace.
    pub fn next_request(&mut self) -> Read_<Option<Request>> {
        match self.format {
            Format::OracleGeneral => self.next_oracle(),
            Format::Twitter | Format::Csv => loop {
                let (a, b) = match self.line()? {
                    Some(x) => x,
                    None => return Ok(None),
                };
                let text = &self.buf[a..b];
                if text.iter().all(|c| c.is_ascii_whitespace()) {
                    self.consume_line(b);
                    continue;
                }
                let parsed = if self.format == Format::Twitter {
                    twitter(text, &self.ops)
                } else {
                    plain_csv(text, &self.columns, &self.ops)
                };
                let r = parsed.map_err(|why| {
                    let expected = if self.format == Format::Twitter {
                        TWITTER_FIELDS.to_string()
                    } else {
                        self.columns.join(",")
                    };
                    let shown = String::from_utf8_lossy(&text[..text.len().min(80)]).to_string();
                    self.bad(&format!("expected {} ({}); got {:?}", expected, why, shown))
                })?;
                self.consume_line(b);
                return Ok(Some(r));
            },
        }
    }

    fn next_oracle(&mut self) -> Read_<Option<Request>> {
        if self.len - self.pos < RECORD && !self.fill(RECORD)? {
            let rest = self.len - self.pos;
            if rest == 0 {
                return Ok(None);
            }
            return Err(self.bad(&format!("truncated: {} of {} bytes", rest, RECORD)));
        }
        let b = &self.buf[self.pos..self.pos + RECORD];
        let time = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[4..12]);
        let size = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        self.pos += RECORD;
        self.offset += RECORD as u64;
        self.record += 1;
        Ok(Some(Request {
            time: time as f64,
            key: Key::Id(u64::from_le_bytes(id)),
            key_size: 0,
            value_size: size,
            op: self.ops.get,
            ttl: 0,
        }))
    }
}

fn text(field: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(field)
        .map(str::trim)
        .map_err(|_| "not UTF-8".to_string())
}

fn whole(field: &[u8], what: &str) -> Result<u32, String> {
    let t = text(field)?;
    let v: i64 = t
        .parse()
        .map_err(|_| format!("{} is not a whole number: {:?}", what, t))?;
    if v < 0 {
        return Err("negative size or TTL".into());
    }
    u32::try_from(v).map_err(|_| format!("{} is too large: {}", what, v))
}

/// The largest trace time either engine takes: what a signed 64-bit count of nanoseconds
/// holds. Infinity, NaN or 1e300 replayed at speed 1 were sent at once by this engine and
/// waited for by the Python one.
const MAX_TRACE_SECONDS: f64 = 9.2e9;

fn seconds(field: &str, what: &str) -> Result<f64, String> {
    let t = field.trim();
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{} is not a number: {:?}", what, t))?;
    if !v.is_finite() || v.abs() > MAX_TRACE_SECONDS {
        return Err(format!(
            "{} is not a finite number of at most 9.2e9 s: {:?}",
            what, t
        ));
    }
    Ok(v)
}

/// A key as the engine sends it: a decimal id (no leading zero, fits u64) as the id;
/// anything else as its bytes.
pub fn key_of(bytes: &[u8]) -> Key {
    let decimal = !bytes.is_empty()
        && bytes.len() <= 20
        && bytes.iter().all(u8::is_ascii_digit)
        && (bytes[0] != b'0' || bytes.len() == 1);
    if decimal {
        if let Ok(id) = std::str::from_utf8(bytes).unwrap_or("").parse::<u64>() {
            return Key::Id(id);
        }
    }
    Key::Text(bytes.into())
}

/// timestamp,key,key size,value size,client id,op,ttl (the key may hold commas).
fn twitter(line: &[u8], ops: &OpNames) -> Result<Request, String> {
    let line = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
    let (time, rest) = line.split_once(',').ok_or("too few fields")?;
    let mut right = rest.rsplitn(6, ',');
    let ttl = right.next().ok_or("too few fields")?;
    let op = right.next().ok_or("too few fields")?;
    let _client = right.next().ok_or("too few fields")?;
    let value_size = right.next().ok_or("too few fields")?;
    let key_size = right.next().ok_or("too few fields")?;
    let key = right.next().ok_or("too few fields")?;
    Ok(Request {
        time: seconds(time, "the timestamp")?,
        key: key_of(key.as_bytes()),
        key_size: whole(key_size.as_bytes(), "key size")?,
        value_size: whole(value_size.as_bytes(), "value size")?,
        op: ops.of(op.as_bytes())?,
        ttl: whole(ttl.as_bytes(), "ttl")?,
    })
}

/// A line under the header's columns (time,key,size[,op][,ttl]).
fn plain_csv(line: &[u8], columns: &[String], ops: &OpNames) -> Result<Request, String> {
    let line = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
    let fields: Vec<&str> = line.trim().split(',').collect();
    if fields.len() != columns.len() {
        return Err(format!(
            "{} fields for {} columns",
            fields.len(),
            columns.len()
        ));
    }
    let mut r = Request {
        time: 0.0,
        key: Key::Id(0),
        key_size: 0,
        value_size: 0,
        op: ops.get,
        ttl: 0,
    };
    for (name, field) in columns.iter().zip(fields) {
        match name.as_str() {
            "time" => r.time = seconds(field, "the time")?,
            "key" => r.key = key_of(field.as_bytes()),
            "size" => r.value_size = whole(field.as_bytes(), "size")?,
            "op" => r.op = ops.of(field.as_bytes())?,
            _ => r.ttl = whole(field.as_bytes(), "ttl")?,
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The op registry's trace names, in another order than its codes: nothing here
    // depends on where a name is.
    const NAMES: [&str; 11] = [
        "delete", "gets", "set", "add", "replace", "cas", "append", "prepend", "get", "incr",
        "decr",
    ];
    const DELETE: u8 = 0;
    const GETS: u8 = 1;
    const SET: u8 = 2;
    const GET: u8 = 8;

    fn all(format: Format, data: &[u8]) -> Result<Vec<Request>, String> {
        let ops = OpNames::new(NAMES.iter().map(|n| n.to_string()).collect())?;
        let src = Box::new(std::io::Cursor::new(data.to_vec()));
        let mut r = TraceReader::from_reader("t", format, ops, src)?;
        let mut out = Vec::new();
        while let Some(q) = r.next_request()? {
            out.push(q);
        }
        Ok(out)
    }

    fn oracle(time: u32, id: u64, size: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&time.to_le_bytes());
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
        b
    }

    #[test]
    fn oracle_general_records_read_as_gets_and_a_cut_record_is_named() {
        let mut data = oracle(3, 42, 100);
        data.extend(oracle(4, u64::MAX, 7));
        let got = all(Format::OracleGeneral, &data).unwrap();
        assert_eq!(got[1].key, Key::Id(u64::MAX));
        assert_eq!((got[0].time, got[0].value_size, got[0].op), (3.0, 100, GET));
        data.extend_from_slice(&[1, 2, 3]);
        let e = all(Format::OracleGeneral, &data).unwrap_err();
        assert_eq!(e, "t: record 2 at byte offset 48: truncated: 3 of 24 bytes");
    }

    #[test]
    fn twitter_lines_keep_ops_key_sizes_ttls_and_commas_in_keys() {
        let got = all(
            Format::Twitter,
            b"0,k:a,6,100,1,set,60\n1.5,a,b,3,0,1,gets,0\n\n2,17,2,5,1,delete,0",
        )
        .unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].key, Key::Text(b"k:a"[..].into()));
        assert_eq!(
            (got[0].key_size, got[0].value_size, got[0].op, got[0].ttl),
            (6, 100, SET, 60)
        );
        assert_eq!((got[1].time, got[1].op), (1.5, GETS));
        assert_eq!(got[1].key, Key::Text(b"a,b"[..].into()));
        assert_eq!((got[2].key.clone(), got[2].op), (Key::Id(17), DELETE));
        let e = all(Format::Twitter, b"0,a,1,10,0,get,0\n1,b,1,ten,0,get,0\n").unwrap_err();
        assert!(
            e.starts_with("t: record 1 at byte offset 17: expected timestamp,"),
            "{}",
            e
        );
        assert!(e.contains("value size is not a whole number"), "{}", e);
    }

    #[test]
    fn a_plain_csv_follows_its_header() {
        let got = all(Format::Csv, b"time,key,size,op\n0,7,10,set\n1,007,10,get\n").unwrap();
        assert_eq!(got[0].key, Key::Id(7));
        assert_eq!(got[1].key, Key::Text(b"007"[..].into())); // not the same key as 7
        assert_eq!(got[0].op, SET);
        let e = all(Format::Csv, b"when,what\n1,2\n").unwrap_err();
        assert!(
            e.contains("record 0 at byte offset 0: expected the header"),
            "{}",
            e
        );
        let e = all(Format::Csv, b"time,key,size\n0,1,10\n0,1\n").unwrap_err();
        assert!(e.contains("record 2 at byte offset 21:"), "{}", e);
    }

    #[test]
    fn lines_longer_than_the_buffer_still_read() {
        let key = "x".repeat(CHUNK + 10);
        let line = format!("0,{},1,10,0,get,0\n", key);
        let got = all(Format::Twitter, line.as_bytes()).unwrap();
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn times_that_are_not_finite_or_too_large_are_refused() {
        for t in ["inf", "nan", "1e300", "-inf"] {
            let data = format!("time,key,size\n0,1,10\n{},2,10\n", t);
            let e = all(Format::Csv, data.as_bytes()).unwrap_err();
            assert!(e.contains("record 2 at byte offset 21:"), "{}", e);
            let line = format!("{},a,1,10,0,get,0\n", t);
            assert!(all(Format::Twitter, line.as_bytes()).is_err());
        }
    }
}

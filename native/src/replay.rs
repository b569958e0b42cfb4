//! Replaying a trace file (`workload.trace`) in the native engine: the worker reads the
//! file itself (`tracefile.rs`). A request belongs to the worker holding client
//! `crc32(key) % all clients` of the run, as in the Python engine's
//! `engine/trace_feed.py`, so a key's requests all go through one worker.
//!
//! Within the worker, a free client takes the trace's next request, so every client
//! works while requests are left. A zipf trace dealt by hash alone put up to twice the
//! mean share on one client, which then ran alone at the end (issue 23). Each key's
//! requests still keep the trace's order. A key is *held* by the client that has one of
//! its requests in flight, and its later requests go to that client's own queue while
//! it is held. The held table has `SLOTS` slots by a hash of the key. Two keys sharing
//! a slot are held together, which only narrows the choice. A key nobody holds goes to
//! whichever client is free. A client sends from its own queue first. Requests of one
//! key on one connection are answered in order. A key moves to another client only
//! after all of its requests have ended, fills included.
//!
//! Speed 0 is a closed loop. At speed > 0 a request's trace time is its intended start
//! (the load's start plus its trace time since the trace's first request, over the
//! speed): the client's `Schedule::next` is set to it, so the loop's open-loop machinery
//! (io.rs) wakes, sends and records send lag as it does for `load.rate`.

use crate::proto::{decimal, Req};
use crate::tracefile::{self, Format, Key, TraceReader};
use serde_json::Value;
use std::collections::VecDeque;

// The step's side of the replay (`Run::replay_next` and its hooks): a child module, so it
// reads the replay's state as this module does, kept in a flat file beside the others.
#[path = "replay_clients.rs"]
mod clients;

/// The error kind of a trace that cannot be read to its end: it fails the step
/// (`trace_feed.UNREADABLE`).
pub const UNREADABLE: &str = "trace file";

/// What a request too large to send is counted as among the skipped
/// (`trace_feed.LARGE_VALUE`).
pub const LARGE_VALUE: &str = "value over 4 MiB";

/// The compiled `trace` part of a step order (`native_order._trace`).
#[derive(Clone, Debug)]
pub struct TraceOrder {
    pub path: String,
    pub format: Format,
    pub speed: f64,
    pub as_recorded: bool,
    pub limit: u64,
    /// Seconds of trace time from its first request that are the warm-up (0: none).
    pub warmup_s: f64,
    /// Clients of the whole run: a key's owner is its hash modulo this.
    pub all_clients: u64,
    /// What the strategy does: get, set, delete.
    pub supports: [bool; 3],
    /// Larger values are skipped and named (the value buffer's size).
    pub max_value: u32,
}

impl TraceOrder {
    pub fn from_frame(frame: &Value) -> Result<Option<TraceOrder>, String> {
        let t = match frame["native"].get("trace") {
            None | Some(Value::Null) => return Ok(None),
            Some(t) => t,
        };
        let bad = |name: &str| format!("step order: trace {:?} is missing or wrong", name);
        let num = |name: &str| t[name].as_u64().ok_or_else(|| bad(name));
        let supported: Vec<&str> = t["supported"]
            .as_array()
            .ok_or_else(|| bad("supported"))?
            .iter()
            .filter_map(|s| s.as_str())
            .collect();
        Ok(Some(TraceOrder {
            path: t["path"].as_str().ok_or_else(|| bad("path"))?.to_string(),
            format: Format::by_name(t["format"].as_str().unwrap_or(""))?,
            speed: t["speed"].as_f64().ok_or_else(|| bad("speed"))?,
            as_recorded: t["ops"].as_str() == Some("as-recorded"),
            limit: num("limit")?,
            warmup_s: t["warmup_s"].as_f64().unwrap_or(0.0),
            all_clients: num("all_clients")?.max(1),
            supports: [
                supported.contains(&"get"),
                supported.contains(&"set"),
                supported.contains(&"delete"),
            ],
            max_value: num("max_value")? as u32,
        }))
    }
}

/// A request of this worker, read and not yet sent.
struct Item {
    time: f64,
    /// The key index it is sent under (`key_index`), and its own bytes when it has them.
    index: u64,
    own: Option<Box<[u8]>>,
    value_size: u32,
    /// What it is sent as (`replayed`, worked out once as it is read).
    req: Req,
    aside: bool,
    ttl: u32,
}

/// Slots of the held-keys table: a power of two.
const SLOTS: usize = 1 << 16;

/// Requests read ahead into clients' own queues (keys they hold) at most; a client that
/// would read beyond waits until the queues drain to half (bounded memory when one hot
/// key outruns its client).
const QUEUED_MAX: usize = 1 << 16;

/// `Pending::trace` of a replayed op sent under its index's key; above it, a handle of
/// its own key bytes (`Replay::keys`). 0: not a replayed op.
pub const INDEX_KEY: u32 = 1;

/// The slot of a key in the held table.
fn slot_of(index: u64, own: bool) -> usize {
    let h = (index ^ own as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 40) as usize & (SLOTS - 1)
}

/// The replay of one step in one worker.
pub struct Replay {
    order: TraceOrder,
    reader: TraceReader,
    read: u64,
    exhausted: bool,
    /// The local index of each of the run's clients held here (u32::MAX: another worker's).
    local: Vec<u32>,
    all_local: bool,
    /// The key prefix, which a key sent as its own bytes starts with.
    prefix: String,
    index_keys: IndexKeys,
    /// Requests read, in trace order, that no client has taken yet.
    ahead: VecDeque<Item>,
    /// Per client: requests of keys it holds, in trace order; sent before `ahead`.
    own: Vec<VecDeque<Item>>,
    queued: usize,
    /// Per slot: (the client holding it, its requests in flight or in that client's queue).
    held: Vec<(u32, u32)>,
    /// Clients that waited because `QUEUED_MAX` was reached; refilled once it drains.
    stalled: Vec<usize>,
    /// Own key bytes of replayed ops in flight, by handle - INDEX_KEY - 1; and free handles.
    keys: Vec<Box<[u8]>>,
    free_keys: Vec<u32>,
    /// The trace time of its first request: the schedule's and the warm-up's origin.
    origin: Option<f64>,
    /// Per client: its share is done (nothing left, nothing in flight).
    finished: Vec<bool>,
    finished_count: usize,
    /// Per client: it waits at the end of the warm-up by trace time.
    parked: Vec<bool>,
    parked_count: usize,
    /// Offered (timed replay): intended starts read but not yet counted, and the count.
    dues: VecDeque<u64>,
    offered: u64,
    /// Where offered counts from (the load's start), 0 until the load starts.
    load_start: u64,
    /// The first unreadable record, once met: the step fails with it.
    pub failure: Option<String>,
    reported: bool,
    present: Present,
    /// Requests read and not replayed, not yet moved into the step's recorder.
    skipped: Vec<(&'static str, u64)>,
}

/// zlib's crc32 (IEEE), as the Python engine hashes a key to its client.
pub fn crc32(data: &[u8]) -> u32 {
    const fn table() -> [u32; 256] {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    }
    const TABLE: [u32; 256] = table();
    let mut c = !0u32;
    for &b in data {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// The bytes of a trace key as the trace spells it (an id in decimal).
fn key_text<'a>(key: &'a Key, buf: &'a mut [u8; 20]) -> &'a [u8] {
    match key {
        Key::Id(id) => decimal(*id, buf),
        Key::Text(t) => t,
    }
}

impl Replay {
    pub fn new(
        order: TraceOrder,
        client_ids: &[i64],
        prefix: &str,
        length: usize,
    ) -> Result<Replay, String> {
        let reader = TraceReader::open(&order.path, order.format)?;
        let mut local = vec![u32::MAX; order.all_clients as usize];
        for (i, &id) in client_ids.iter().enumerate() {
            if id >= 0 && (id as u64) < order.all_clients {
                local[id as usize] = i as u32;
            }
        }
        let n = client_ids.len();
        Ok(Replay {
            order,
            reader,
            read: 0,
            exhausted: false,
            all_local: local.iter().all(|&l| l != u32::MAX),
            local,
            prefix: prefix.to_string(),
            index_keys: IndexKeys::new(prefix, length),
            ahead: VecDeque::new(),
            own: (0..n).map(|_| VecDeque::new()).collect(),
            queued: 0,
            held: vec![(0, 0); SLOTS],
            stalled: Vec::new(),
            keys: Vec::new(),
            free_keys: Vec::new(),
            origin: None,
            finished: vec![false; n],
            finished_count: 0,
            parked: vec![false; n],
            parked_count: 0,
            dues: VecDeque::new(),
            offered: 0,
            load_start: 0,
            failure: None,
            reported: false,
            present: Present::new(),
            skipped: Vec::new(),
        })
    }

    pub fn timed(&self) -> bool {
        self.order.speed > 0.0
    }

    /// Every client of this worker has replayed its share.
    pub fn done(&self) -> bool {
        self.finished_count == self.finished.len()
    }

    /// The intended start of a request read (monotonic ns).
    fn due(&self, time: f64) -> u64 {
        let since = (time - self.origin.unwrap_or(time)).max(0.0);
        self.load_start + (since / self.order.speed * 1e9) as u64
    }

    /// Read one request into `ahead`, if its key is this worker's.
    fn read_one(&mut self) {
        if self.exhausted {
            return;
        }
        if self.order.limit > 0 && self.read >= self.order.limit {
            self.exhausted = true;
            return;
        }
        let r = match self.reader.next_request() {
            Ok(Some(r)) => r,
            Ok(None) => {
                self.exhausted = true;
                return;
            }
            Err(e) => {
                self.failure.get_or_insert(e);
                self.exhausted = true;
                return;
            }
        };
        self.read += 1;
        self.origin.get_or_insert(r.time);
        // Whose key: no need to hash when this worker holds all of the run's clients.
        if !self.all_local {
            let mut buf = [0u8; 20];
            let owner = crc32(key_text(&r.key, &mut buf)) as u64 % self.order.all_clients;
            if self.local[owner as usize] == u32::MAX {
                return;
            }
        }
        // A request that is not replayed is counted as it is read, never queued: a trace
        // of mostly skipped ops must not pile up in the queues of the clients reading on.
        let (req, aside) = match self.replayed(r.op, r.value_size) {
            Ok(sent_as) => sent_as,
            Err(what) => {
                match self.skipped.iter_mut().find(|s| s.0 == what) {
                    Some(s) => s.1 += 1,
                    None => self.skipped.push((what, 1)),
                }
                return;
            }
        };
        if self.timed() && self.load_start > 0 {
            let due = self.due(r.time);
            self.dues.push_back(due);
        }
        let (index, own) = key_index(&self.prefix, &r.key, r.key_size);
        self.ahead.push_back(Item {
            time: r.time,
            index,
            own,
            value_size: r.value_size,
            req,
            aside,
            ttl: r.ttl,
        });
    }

    /// The next request for client `ci`: the front of its own queue, else the trace's next
    /// one not taken (reading on until there is one or the trace ends). True: its own.
    fn front(&mut self, ci: usize) -> Option<(&Item, bool)> {
        if !self.own[ci].is_empty() {
            return self.own[ci].front().map(|i| (i, true));
        }
        while self.ahead.is_empty() && !self.exhausted {
            self.read_one();
        }
        self.ahead.front().map(|i| (i, false))
    }

    /// The intended start of client `ci`'s next request (MAX when none is left).
    fn next_due(&mut self, ci: usize) -> u64 {
        match self.front(ci).map(|(i, _)| i.time) {
            Some(t) => self.due(t),
            None => u64::MAX,
        }
    }

    /// A replayed op ended (answered, failed or dropped; a get-set-on-miss get once its
    /// fill did): its key is held one request less, its own bytes are freed.
    pub fn ended(&mut self, index: u64, trace: u32) {
        let slot = &mut self.held[slot_of(index, trace > INDEX_KEY)].1;
        *slot = slot.saturating_sub(1);
        if trace > INDEX_KEY {
            let h = trace - INDEX_KEY - 1;
            self.keys[h as usize] = Box::default();
            self.free_keys.push(h);
        }
    }

    /// Keep a key's own bytes while its op is in flight; the handle `Pending::trace` holds.
    fn keep(&mut self, own: Option<Box<[u8]>>) -> u32 {
        let key = match own {
            None => return INDEX_KEY,
            Some(k) => k,
        };
        let h = match self.free_keys.pop() {
            Some(h) => {
                self.keys[h as usize] = key;
                h
            }
            None => {
                self.keys.push(key);
                (self.keys.len() - 1) as u32
            }
        };
        h + INDEX_KEY + 1
    }

    /// The own key bytes of handle `trace` (> INDEX_KEY).
    pub fn key_of(&self, trace: u32) -> &[u8] {
        &self.keys[(trace - INDEX_KEY - 1) as usize]
    }

    /// The key of a request sent under its index (`trace` == INDEX_KEY).
    pub fn index_key(&mut self, index: u64) -> &[u8] {
        self.index_keys.get(index)
    }

    /// What a request is sent as, or what it is counted as skipped when it is not replayed:
    /// its op, or `LARGE_VALUE`.
    fn replayed(&self, op: u8, value_size: u32) -> Result<(Req, bool), &'static str> {
        let s = &self.order.supports;
        let name = tracefile::OPS[op as usize];
        let (req, aside) = if !self.order.as_recorded {
            (Req::Get, true)
        } else {
            match op {
                tracefile::GET | tracefile::GETS => (Req::Get, false),
                tracefile::SET => (Req::Set, false),
                tracefile::DELETE => (Req::Delete, false),
                _ => (Req::Hello, false), // no such request: skipped below
            }
        };
        let able = match req {
            Req::Get => s[0],
            Req::Set => s[1],
            Req::Delete => s[2],
            _ => false,
        };
        if !able {
            return Err(name);
        }
        if value_size > self.order.max_value && (req == Req::Set || aside) {
            return Err(LARGE_VALUE);
        }
        Ok((req, aside))
    }

    /// Intended starts of this worker's requests before `t` (timed replay; t asked in
    /// growing order), reading ahead in the trace as far as `t`.
    pub fn offered_before(&mut self, t: u64) -> u64 {
        if !self.timed() || self.load_start == 0 {
            return 0;
        }
        loop {
            while self.dues.front().map_or(false, |&d| d < t) {
                self.dues.pop_front();
                self.offered += 1;
            }
            if !self.dues.is_empty() || self.exhausted {
                return self.offered;
            }
            self.read_one();
        }
    }

    /// The load starts at `start`: schedules and offered counts run from here.
    fn start(&mut self, start: u64) {
        self.load_start = start;
        // What was read before the start (by the first clients' fronts) is offered too.
        let dues: Vec<u64> = self
            .own
            .iter()
            .flatten()
            .chain(self.ahead.iter())
            .map(|i| self.due(i.time))
            .collect();
        self.dues.extend(dues);
        let mut v: Vec<u64> = self.dues.drain(..).collect();
        v.sort_unstable();
        self.dues.extend(v);
    }
}

/// The key index a request is sent under, and its key's own bytes (the prefix, the
/// trace's key, '_' up to the recorded key size) when it does not go as the prefix and id
/// of index `id`: a text key, or a padded id.
fn key_index(prefix: &str, key: &Key, key_size: u32) -> (u64, Option<Box<[u8]>>) {
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

/// Whether the client has a get-set-on-miss get of this key waiting for its reply: until
/// it comes, a miss (and its fill) may follow.
fn in_flight(c: &crate::client::Client, index: u64, own: bool) -> bool {
    c.conns
        .iter()
        .flat_map(|k| k.pending.iter())
        .any(|p| p.index == index && (p.trace > INDEX_KEY) == own && p.req == Req::Get && p.aside)
}

/// Keys sent under their index (the prefix and the id), formatted once per slot of a
/// direct-mapped table: a trace's hot keys repeat, and formatting each request's key took
/// about a hundred instructions more per op than the synthetic workload's key table (issue
/// 23). A key pushed out by another is only formatted again.
struct IndexKeys {
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
    fn new(prefix: &str, length: usize) -> IndexKeys {
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

    /// The key of `index`, as `workload::format_key_into` spells it.
    fn get(&mut self, index: u64) -> &[u8] {
        let tag = index.wrapping_add(1);
        let slot = (index.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 50) as usize;
        let at = slot * self.stride;
        if tag != 0 && self.tags[slot] == tag {
            return &self.data[at..at + self.lens[slot] as usize];
        }
        crate::workload::format_key_into(&mut self.scratch, &self.prefix, index, self.length);
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
struct Present {
    slots: Vec<u64>,
}

const PRESENT_SLOTS: usize = 1 << 16;

impl Present {
    fn new() -> Present {
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

    fn mark(&mut self, index: u64, text: bool) {
        let (slot, tag) = Self::tag(index, text);
        self.slots[slot] = tag;
    }

    fn has(&self, index: u64, text: bool) -> bool {
        let (slot, tag) = Self::tag(index, text);
        self.slots[slot] == tag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_zlibs() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"42"), 0x3224_B088);
    }

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
                    let want = crate::workload::format_key(prefix, i, length);
                    assert_eq!(keys.get(i), want.as_slice(), "{:?} {}", prefix, i);
                }
            }
        }
    }

    #[test]
    fn an_index_key_and_an_own_key_of_one_index_are_held_apart() {
        assert!((0..100_000u64).all(|i| slot_of(i, false) < SLOTS && slot_of(i, true) < SLOTS));
        assert_ne!(slot_of(7, false), slot_of(7, true));
    }
}

//! Replaying a trace file (`workload.trace`) in the native engine: the worker reads the
//! file itself (`file.rs`). A request belongs to the worker holding client
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
//! (`run/turn.rs`) wakes, sends and records send lag as it does for `load.rate`. How the
//! step's clients take the requests is `run/replay.rs`; the state they take them from is here.

use super::file::{Format, Key, OpNames, TraceReader};
use super::keys::{key_index, key_text, IndexKeys, Present};
use crate::hash::crc32;
use crate::order::{Action, Ops};
use crate::protocols::wire::Req;
use serde_json::Value;
use std::collections::VecDeque;

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
    /// What the strategy does: a bit per request kind (`Req as usize`).
    pub supports: u32,
    /// Larger values are skipped and named (the value buffer's size).
    pub max_value: u32,
    /// Each op name a trace may hold and its op code (the op registry's trace names); a
    /// request is sent as the op its code is in the order's table, or skipped by its name.
    pub op_codes: Vec<(String, u8)>,
    /// Which keys go on the wire (`trace_keys.TraceKeys`): longer ones, or with a space or
    /// control character when `key_text`, are skipped under the names the order gives.
    pub key_max: usize,
    pub key_text: bool,
    pub key_too_long: String,
    pub key_not_text: String,
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
            supports: supported
                .iter()
                .filter_map(|name| Action::named(name))
                .fold(0, |bits, a| bits | 1 << a.req as u32),
            max_value: num("max_value")? as u32,
            op_codes: op_codes(&t["op_codes"]).ok_or_else(|| bad("op_codes"))?,
            key_max: t["keys"]["max_bytes"]
                .as_u64()
                .ok_or_else(|| bad("keys.max_bytes"))? as usize,
            key_text: t["keys"]["text"]
                .as_bool()
                .ok_or_else(|| bad("keys.text"))?,
            key_too_long: text(&t["keys"]["too_long"]).ok_or_else(|| bad("keys.too_long"))?,
            key_not_text: text(&t["keys"]["not_text"]).ok_or_else(|| bad("keys.not_text"))?,
        }))
    }
}

/// The trace's op names and their codes, from the order's table `{name: code}`.
fn op_codes(v: &Value) -> Option<Vec<(String, u8)>> {
    v.as_object()?
        .iter()
        .map(|(name, code)| {
            let code = code.as_u64().filter(|&c| c <= u8::MAX as u64)?;
            Some((name.clone(), code as u8))
        })
        .collect()
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// Why a request read is not sent: its op (by its index in the order's op names), its
/// value is larger than the buffer, or its key breaks the protocol's rule.
enum Skip {
    Op(u8),
    LargeValue,
    KeyTooLong,
    KeyNotText,
}

/// A request of this worker, read and not yet sent.
pub struct Item {
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
pub fn slot_of(index: u64, own: bool) -> usize {
    let h = (index ^ own as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 40) as usize & (SLOTS - 1)
}

/// The front request of a client's share, as the step weighs it.
pub struct Front {
    /// What it is sent as (worked out as it was read).
    pub req: Req,
    pub aside: bool,
    pub time: f64,
    pub index: u64,
    /// Sent under its own key bytes, not its index's key.
    pub text: bool,
    /// From the client's own queue (a key it holds), not the trace's next.
    pub mine: bool,
}

/// A request a client took: the handle its key goes by (`Pending::trace`), its value's
/// size and TTL, and the clients that waited for room in the queues (to refill).
pub struct Taken {
    pub handle: u32,
    pub value_size: u32,
    pub ttl: Option<f64>,
    pub wake: Vec<usize>,
}

/// What a phase's beginning means for a replay.
pub enum Began {
    /// The trace is done (or failed): the phase is over at once.
    Over,
    /// The measured phase wakes the clients that waited at the end of the warm-up.
    Woken,
    Going,
}

/// Where a client's front request lies against a warm-up by trace time.
pub enum Warm {
    Before,
    /// Past it: the client waits for the measured phase.
    Waits,
    /// Past it, and every client of this worker waits (or is done): the warm-up is over.
    AllWait,
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
    skipped: Vec<(String, u64)>,
    /// What each trace op (by its index in `order.op_codes`) is sent as.
    sent_as: Vec<Option<Action>>,
}

impl Replay {
    pub fn new(
        order: TraceOrder,
        ops: &Ops,
        client_ids: &[i64],
        keys: (&str, usize),
    ) -> Result<Replay, String> {
        let (prefix, length) = keys;
        let names = order.op_codes.iter().map(|(n, _)| n.clone()).collect();
        let reader = TraceReader::open(&order.path, order.format, OpNames::new(names)?)?;
        let sent_as = order.op_codes.iter().map(|&(_, c)| ops.action(c)).collect();
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
            sent_as,
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
    pub fn due(&self, time: f64) -> u64 {
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
        let sent_as = self
            .replayed(r.op, r.value_size)
            .and_then(|s| self.refused_key(&r.key, r.key_size).map_or(Ok(s), Err));
        let (req, aside) = match sent_as {
            Ok(sent_as) => sent_as,
            Err(skip) => {
                let what = match skip {
                    Skip::Op(op) => self.order.op_codes[op as usize].0.as_str(),
                    Skip::LargeValue => LARGE_VALUE,
                    Skip::KeyTooLong => self.order.key_too_long.as_str(),
                    Skip::KeyNotText => self.order.key_not_text.as_str(),
                };
                match self.skipped.iter_mut().find(|s| s.0 == what) {
                    Some(s) => s.1 += 1,
                    None => self.skipped.push((what.to_string(), 1)),
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
    pub fn next_due(&mut self, ci: usize) -> u64 {
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
    fn replayed(&self, op: u8, value_size: u32) -> Result<(Req, bool), Skip> {
        let (req, aside) = if !self.order.as_recorded {
            (Req::Get, true)
        } else {
            match self.sent_as[op as usize] {
                // A trace's requests are its keys' own: never a cache-aside or a publish.
                Some(a) if !a.aside && a.req != Req::Publish => (a.req, false),
                _ => (Req::Hello, false), // no such request: skipped below
            }
        };
        if req == Req::Hello || self.order.supports & 1 << req as u32 == 0 {
            return Err(Skip::Op(op));
        }
        if value_size > self.order.max_value && (req.carries_value() || aside) {
            return Err(Skip::LargeValue);
        }
        Ok((req, aside))
    }

    /// Why a key is not sent (`trace_keys.TraceKeys.refusal`): the prefix, the trace's
    /// key and its padding too long, or a byte a text protocol cannot carry.
    fn refused_key(&self, key: &Key, key_size: u32) -> Option<Skip> {
        let mut buf = [0u8; 20];
        let body = key_text(key, &mut buf);
        let len = self.prefix.len() + body.len().max(key_size as usize);
        if len > self.order.key_max {
            return Some(Skip::KeyTooLong);
        }
        if self.order.key_text && body.iter().any(|&b| b <= 0x20 || b == 0x7F) {
            return Some(Skip::KeyNotText);
        }
        None
    }

    /// The front request of client `ci`'s share (`front`), as the step weighs it; the
    /// requests skipped on the way handed to `skip` (what, how many).
    pub fn front_of(&mut self, ci: usize, mut skip: impl FnMut(&str, u64)) -> Option<Front> {
        let next = self.front(ci).map(|(i, mine)| Front {
            req: i.req,
            aside: i.aside,
            time: i.time,
            index: i.index,
            text: i.own.is_some(),
            mine,
        });
        for (what, n) in self.skipped.drain(..) {
            skip(&what, n);
        }
        next
    }

    /// The trace's first unreadable record, once: said when first met, then never again.
    pub fn report_failure(&mut self) -> Option<String> {
        if self.reported {
            return None;
        }
        self.reported = self.failure.is_some();
        self.failure.clone()
    }

    /// Client `ci` has nothing left and nothing in flight: its share is done. True when
    /// that made every client of this worker done.
    pub fn finish(&mut self, ci: usize) -> bool {
        if self.finished[ci] {
            return false;
        }
        self.finished[ci] = true;
        self.finished_count += 1;
        self.done()
    }

    /// The load's start, once known (schedules and offered counts run from it).
    pub fn started(&mut self, load_start: u64) {
        if self.load_start == 0 && load_start > 0 {
            self.start(load_start);
        }
    }

    /// A phase began: what it means for the replay.
    pub fn phase_began(&mut self, load_start: u64, measured: bool) -> Began {
        self.started(load_start);
        if self.done() || self.failure.is_some() {
            return Began::Over;
        }
        if measured && self.parked_count > 0 {
            self.parked.iter_mut().for_each(|p| *p = false);
            self.parked_count = 0;
            return Began::Woken;
        }
        Began::Going
    }

    /// A reply to a replayed op came (before it is counted). A get-set-on-miss get's key
    /// is there now, or its fill is on its way ahead of anything sent after it on the
    /// connection. The op ends here unless a fill follows.
    pub fn replied(&mut self, index: u64, trace: u32, aside_get: bool, answered: bool, hit: bool) {
        let own = trace > INDEX_KEY;
        if aside_get && answered {
            self.present.mark(index, own);
        }
        if !(aside_get && answered && !hit) {
            self.ended(index, trace);
        }
    }

    /// The client holding a slot's keys and its count of requests (0: nobody holds it).
    pub fn holder(&self, slot: usize) -> (usize, u32) {
        let (holder, held) = self.held[slot];
        (holder as usize, held)
    }

    /// Whether a get-set-on-miss get of this key was answered (its next get need not wait).
    pub fn present(&self, index: u64, text: bool) -> bool {
        self.present.has(index, text)
    }

    /// Warm-up by trace time: whether client `ci` waits at its request of trace time
    /// `time` until the measured phase begins.
    pub fn past_warmup(&mut self, ci: usize, time: f64, measuring: bool) -> Warm {
        if measuring || self.order.warmup_s <= 0.0 {
            return Warm::Before;
        }
        let origin = self.origin.unwrap_or(time);
        if time - origin < self.order.warmup_s {
            return Warm::Before;
        }
        if !self.parked[ci] {
            self.parked[ci] = true;
            self.parked_count += 1;
            if self.parked_count + self.finished_count >= self.parked.len() {
                return Warm::AllWait;
            }
        }
        Warm::Waits
    }

    /// Another client holds the front request's key: the request joins that client's
    /// queue (true), unless the queues are full, where client `ci` waits for room (false).
    pub fn pass_on(&mut self, ci: usize, slot: usize, holder: usize) -> bool {
        if self.queued >= QUEUED_MAX {
            if !self.stalled.contains(&ci) {
                self.stalled.push(ci);
            }
            return false;
        }
        let item = self.ahead.pop_front().expect("the front just read");
        self.held[slot].1 += 1;
        self.queued += 1;
        self.own[holder].push_back(item);
        true
    }

    /// Client `ci` takes its front request (`mine`: from its own queue; else the trace's
    /// next, whose key it holds from now on, `held` requests of it before this one).
    pub fn take(&mut self, ci: usize, mine: bool, slot: usize, held: u32) -> Taken {
        let mut wake = Vec::new();
        let item = if mine {
            self.queued -= 1;
            if self.queued <= QUEUED_MAX / 2 && !self.stalled.is_empty() {
                wake = std::mem::take(&mut self.stalled);
            }
            self.own[ci].pop_front()
        } else {
            self.held[slot] = (ci as u32, held + 1);
            self.ahead.pop_front()
        };
        let item = item.expect("the front just read");
        Taken {
            handle: self.keep(item.own),
            value_size: item.value_size,
            ttl: (item.ttl > 0).then_some(item.ttl as f64),
            wake,
        }
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
    pub fn start(&mut self, start: u64) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_key_and_an_own_key_of_one_index_are_held_apart() {
        assert!((0..100_000u64).all(|i| slot_of(i, false) < SLOTS && slot_of(i, true) < SLOTS));
        assert_ne!(slot_of(7, false), slot_of(7, true));
    }
}

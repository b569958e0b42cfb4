//! Publish/subscribe on Redis, with the meaning of the Python engine
//! (workbench/engine/clients.py, driver.py): a publish carries a 16-byte stamp (its
//! CLOCK_MONOTONIC ns, then `sequence << 1 | measured`, both little-endian i64) before its
//! body and goes to channel `wb:ch:{key index % channels}`; it counts as published with
//! `subscribers_per_channel` expected deliveries. Subscribers (this worker's slots) hold
//! their own connections, subscribed before the step is armed, and record each measured
//! message's delivery latency from its stamp. A subscriber whose connection dies is not
//! reopened: what it misses counts as lost (expected - delivered), not as an error, as in
//! the Python engine (Redis drops a subscriber past its output buffer limit, and such a
//! run is still a measurement of what was delivered).

use crate::io::FIRST_CONN;
use crate::proto::{first_line, parse_int, show};
use crate::record::Recorder;
use crate::step::Run;
use mio::net::TcpStream;
use mio::{Interest, Token};
use serde_json::Value;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

const STAMP: usize = 16;
/// After the load: deliveries still on their way are awaited until none came for
/// QUIET_TURNS x QUIET_TURN, at most LATE_WAIT (the Python engine's rule).
const QUIET_TURN: u64 = 100_000_000;
const QUIET_TURNS: u32 = 3;
const LATE_WAIT: u64 = 3_000_000_000;
const READ_CHUNK: usize = 64 * 1024;

/// The pub/sub part of a compiled order (`native_order._pubsub`).
pub struct PubSubOrder {
    pub channels: usize,
    pub per_channel: u64,
    pub message_size: usize,
    /// The channel of each subscriber this worker holds.
    pub slots: Vec<usize>,
}

impl PubSubOrder {
    /// None when the step publishes nothing.
    pub fn from_frame(frame: &Value) -> Result<Option<PubSubOrder>, String> {
        let p = &frame["native"]["pubsub"];
        if p.is_null() {
            return Ok(None);
        }
        let num = |name: &str| {
            p[name]
                .as_u64()
                .ok_or_else(|| format!("step order: pubsub.{} is not a whole number", name))
        };
        let channels = num("channels")? as usize;
        let slots = p["slots"]
            .as_array()
            .ok_or("step order: pubsub.slots is not a list")?
            .iter()
            .map(|s| s.as_u64().map(|c| c as usize).filter(|&c| c < channels))
            .collect::<Option<Vec<_>>>()
            .ok_or("step order: pubsub.slots are not channel indexes")?;
        if channels == 0 {
            return Err("step order: pubsub.channels is 0".into());
        }
        Ok(Some(PubSubOrder {
            channels,
            per_channel: num("subscribers_per_channel")?,
            message_size: (num("message_size")? as usize).max(STAMP),
            slots,
        }))
    }
}

/// One subscriber's connection.
pub struct Subscriber {
    channel: usize,
    sock: Option<TcpStream>,
    inb: Vec<u8>,
}

/// A step's pub/sub state.
pub struct PubSub {
    pub order: Option<PubSubOrder>,
    addr: Option<SocketAddr>,
    names: Vec<Vec<u8>>,
    message: Vec<u8>,
    seq: u64,
    subs: Vec<Subscriber>,
    /// Whether this worker measures now: a publish's tag, and where deliveries go.
    pub measuring: bool,
    /// Measured deliveries that came while this worker still warmed up: they belong to
    /// its first measured interval.
    pub early: Recorder,
}

impl PubSub {
    pub fn new(order: Option<PubSubOrder>, addr: Option<SocketAddr>, early: Recorder) -> PubSub {
        let (names, message) = match &order {
            Some(o) => (
                (0..o.channels)
                    .map(|i| format!("wb:ch:{}", i).into_bytes())
                    .collect(),
                (0..o.message_size).map(|i| b'a' + (i % 26) as u8).collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        PubSub {
            order,
            addr,
            names,
            message,
            seq: 0,
            subs: Vec::new(),
            measuring: false,
            early,
        }
    }

    /// The channel and stamped message of a publish of key index `index`, made now.
    pub fn stamped(&mut self, index: u64, now: u64) -> (&[u8], &[u8]) {
        self.seq += 1;
        let tag = (self.seq << 1 | self.measuring as u64) as i64;
        self.message[..8].copy_from_slice(&(now as i64).to_le_bytes());
        self.message[8..STAMP].copy_from_slice(&tag.to_le_bytes());
        let ch = (index % self.names.len().max(1) as u64) as usize;
        (&self.names[ch], &self.message)
    }

    /// Deliveries a publish should cause.
    pub fn per_channel(&self) -> u64 {
        self.order.as_ref().map_or(0, |o| o.per_channel)
    }
}

/// One element of a RESP reply: its type byte and the range of its payload.
struct Elem {
    kind: u8,
    start: usize,
    end: usize,
}

/// One element at `pos`: None while incomplete.
fn element(buf: &[u8], pos: usize) -> Result<Option<(Elem, usize)>, String> {
    let (line, used) = match first_line(&buf[pos..]) {
        Some(l) => l,
        None => return Ok(None),
    };
    let kind = *line.first().ok_or("an empty RESP line")?;
    let start = pos + used;
    if kind != b'$' {
        return Ok(Some((
            Elem {
                kind,
                start: pos + 1,
                end: pos + line.len(),
            },
            start,
        )));
    }
    let n = parse_int(&line[1..]).ok_or_else(|| format!("bad bulk length {:?}", show(line)))?;
    if n < 0 {
        return Ok(Some((
            Elem {
                kind,
                start,
                end: start,
            },
            start,
        )));
    }
    let end = start + n as usize;
    if buf.len() < end + 2 {
        return Ok(None);
    }
    Ok(Some((Elem { kind, start, end }, end + 2)))
}

/// One complete reply from `pos`: a flat array's elements, or one line as a single element.
fn reply(buf: &[u8], pos: usize) -> Result<Option<(Vec<Elem>, usize)>, String> {
    let (line, used) = match first_line(&buf[pos..]) {
        Some(l) => l,
        None => return Ok(None),
    };
    if line.first() != Some(&b'*') {
        return Ok(element(buf, pos)?.map(|(e, next)| (vec![e], next)));
    }
    let n = parse_int(&line[1..]).ok_or_else(|| format!("bad array length {:?}", show(line)))?;
    let mut next = pos + used;
    let mut elems = Vec::with_capacity(n.max(0) as usize);
    for _ in 0..n.max(0) {
        match element(buf, next)? {
            Some((e, after)) => {
                elems.push(e);
                next = after;
            }
            None => return Ok(None),
        }
    }
    Ok(Some((elems, next)))
}

impl<'a> Run<'a> {
    fn sub_token(&self, j: usize) -> Token {
        Token(FIRST_CONN + self.clients.len() * self.stride + j)
    }

    /// Open and subscribe every subscriber of this worker before the step is armed.
    pub fn subscribe_all(&mut self) -> Result<(), String> {
        let slots = match &self.pubsub.order {
            Some(o) => o.slots.clone(),
            None => return Ok(()),
        };
        let addr = self.pubsub.addr.ok_or("pub/sub needs a server address")?;
        let wait = Duration::from_nanos(self.order.connect_timeout_ns.max(10_000_000_000));
        for (j, channel) in slots.into_iter().enumerate() {
            let sock = self.subscribe_one(addr, channel, wait)?;
            let mut sock = TcpStream::from_std(sock);
            let token = self.sub_token(j);
            self.eng
                .poll
                .registry()
                .register(&mut sock, token, Interest::READABLE)
                .map_err(|e| e.to_string())?;
            self.pubsub.subs.push(Subscriber {
                channel,
                sock: Some(sock),
                inb: Vec::with_capacity(READ_CHUNK),
            });
        }
        Ok(())
    }

    /// A blocking connect, hello and SUBSCRIBE, confirmed; the socket made non-blocking.
    fn subscribe_one(
        &self,
        addr: SocketAddr,
        channel: usize,
        wait: Duration,
    ) -> Result<std::net::TcpStream, String> {
        let fail =
            |e: std::io::Error| format!("subscriber of wb:ch:{} at {}: {}", channel, addr, e);
        let mut sock = std::net::TcpStream::connect_timeout(&addr, wait).map_err(fail)?;
        sock.set_read_timeout(Some(wait)).map_err(fail)?;
        let _ = sock.set_nodelay(true);
        let mut out = Vec::new();
        let hellos = self.codec.hello(&mut out);
        crate::resp::command(&mut out, &[b"SUBSCRIBE", &self.pubsub.names[channel]]);
        sock.write_all(&out).map_err(fail)?;
        let mut inb: Vec<u8> = Vec::new();
        let mut pos = 0;
        let mut answered = 0;
        let mut chunk = [0u8; 4096];
        while answered <= hellos {
            match reply(&inb, pos)? {
                Some((elems, next)) => {
                    if let Some(e) = elems.first().filter(|e| e.kind == b'-') {
                        return Err(format!(
                            "subscriber of wb:ch:{}: redis: {}",
                            channel,
                            show(&inb[e.start..e.end])
                        ));
                    }
                    pos = next;
                    answered += 1;
                }
                None => {
                    let n = sock.read(&mut chunk).map_err(fail)?;
                    if n == 0 {
                        return Err(format!(
                            "subscriber of wb:ch:{}: {} closed the connection",
                            channel, addr
                        ));
                    }
                    inb.extend_from_slice(&chunk[..n]);
                }
            }
        }
        sock.set_nonblocking(true).map_err(fail)?;
        Ok(sock)
    }

    /// A subscriber's socket is readable (`j`: its index), or closing.
    pub fn subscriber_event(&mut self, j: usize, closing: bool) {
        if j >= self.pubsub.subs.len() {
            return;
        }
        let mut closed: Option<String> = None;
        {
            let s = &mut self.pubsub.subs[j];
            let sock = match s.sock.as_mut() {
                Some(x) => x,
                None => return,
            };
            let mut chunk = [0u8; READ_CHUNK];
            loop {
                match sock.read(&mut chunk) {
                    Ok(0) => {
                        closed = Some("the server closed the connection".into());
                        break;
                    }
                    Ok(n) => {
                        s.inb.extend_from_slice(&chunk[..n]);
                        if n < chunk.len() && !closing {
                            break;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        closed = Some(e.to_string());
                        break;
                    }
                }
            }
        }
        if let Err(e) = self.deliveries(j) {
            closed = Some(e);
        }
        if let Some(why) = closed {
            let s = &mut self.pubsub.subs[j];
            if let Some(mut sock) = s.sock.take() {
                let _ = self.eng.poll.registry().deregister(&mut sock);
            }
            eprintln!(
                "workbench-native: subscriber of wb:ch:{} lost: {}",
                s.channel, why
            );
        }
    }

    /// Record every complete message in subscriber `j`'s buffer.
    fn deliveries(&mut self, j: usize) -> Result<(), String> {
        let now = crate::pacing::now_ns();
        let deliver = self.kinds.deliver;
        let s = &mut self.pubsub.subs[j];
        let mut pos = 0;
        while let Some((elems, next)) = reply(&s.inb, pos)? {
            pos = next;
            // ["message", channel, data]; anything else (a confirmation) is not a delivery.
            if elems.len() != 3 || &s.inb[elems[0].start..elems[0].end] != b"message" {
                continue;
            }
            let data = &s.inb[elems[2].start..elems[2].end];
            if data.len() < STAMP {
                continue;
            }
            let mut word = [0u8; 8];
            word.copy_from_slice(&data[..8]);
            let sent = i64::from_le_bytes(word);
            word.copy_from_slice(&data[8..STAMP]);
            if i64::from_le_bytes(word) & 1 == 0 {
                continue; // published during warm-up: neither it nor its publish counts
            }
            let rec = if self.pubsub.measuring {
                &mut self.rec
            } else {
                &mut self.pubsub.early
            };
            rec.latency(deliver, now.saturating_sub(sent.max(0) as u64));
            rec.delivered += 1;
            rec.bytes_in += data.len() as u64;
        }
        s.inb.drain(..pos);
        Ok(())
    }

    /// After the load, before its last interval is cut: wait for deliveries still on their
    /// way, so that they land in that interval as the replies of ops in flight do, and the
    /// step's deliveries are the sum of its intervals'. What comes later is not recorded:
    /// it shows as lost.
    pub fn await_deliveries(&mut self) {
        if self.pubsub.subs.is_empty() {
            return;
        }
        let limit = crate::pacing::now_ns() + LATE_WAIT;
        let mut quiet = 0;
        let mut last = u64::MAX;
        while crate::pacing::now_ns() < limit && !self.eng.eof {
            let delivered = self.rec.delivered;
            quiet = if delivered == last { quiet + 1 } else { 0 };
            if quiet >= QUIET_TURNS {
                break;
            }
            last = delivered;
            let at = crate::pacing::now_ns() + QUIET_TURN;
            while crate::pacing::now_ns() < at && !self.eng.eof {
                self.turn(at);
            }
        }
    }

    pub fn close_subscribers(&mut self) {
        for s in self.pubsub.subs.iter_mut() {
            if let Some(mut sock) = s.sock.take() {
                let _ = self.eng.poll.registry().deregister(&mut sock);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_messages_confirmations_and_partial_replies() {
        let buf = b"*3\r\n$9\r\nsubscribe\r\n$7\r\nwb:ch:0\r\n:1\r\n";
        let (e, used) = reply(&buf[..], 0).unwrap().unwrap();
        assert_eq!(used, buf.len());
        assert_eq!(&buf[e[0].start..e[0].end], b"subscribe");
        assert_eq!(e[2].kind, b':');
        let msg = b"*3\r\n$7\r\nmessage\r\n$7\r\nwb:ch:1\r\n$3\r\nabc\r\n";
        let (e, used) = reply(&msg[..], 0).unwrap().unwrap();
        assert_eq!((used, &msg[e[2].start..e[2].end]), (msg.len(), &b"abc"[..]));
        assert!(reply(&msg[..msg.len() - 3], 0).unwrap().is_none());
        let (e, _) = reply(b"+OK\r\n", 0).unwrap().unwrap();
        assert_eq!((e[0].kind, e[0].start, e[0].end), (b'+', 1, 3));
    }

    #[test]
    fn a_stamp_holds_the_time_and_the_measured_tag() {
        let order = PubSubOrder {
            channels: 4,
            per_channel: 2,
            message_size: 20,
            slots: vec![],
        };
        let mut p = PubSub::new(Some(order), None, Recorder::new(false, 5));
        p.measuring = true;
        let (ch, m) = p.stamped(6, 123);
        assert_eq!(ch, b"wb:ch:2");
        assert_eq!(m.len(), 20);
        assert_eq!(i64::from_le_bytes(m[..8].try_into().unwrap()), 123);
        assert_eq!(i64::from_le_bytes(m[8..16].try_into().unwrap()), 3);
    }
}

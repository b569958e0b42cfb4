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

mod subscriber;

use crate::protocols::Codec;
use crate::record::Recorder;
use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use subscriber::{subscribe, Subscriber, STAMP};

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

impl PubSub {
    /// Open and subscribe every subscriber of this worker before the step is armed; their
    /// poll tokens from `first_token` on.
    pub fn subscribe_all(
        &mut self,
        registry: &Registry,
        first_token: usize,
        codec: &Codec,
        wait: Duration,
    ) -> Result<(), String> {
        let slots = match &self.order {
            Some(o) => o.slots.clone(),
            None => return Ok(()),
        };
        let addr = self.addr.ok_or("pub/sub needs a server address")?;
        let mut hello = Vec::new();
        let hellos = codec.hello(&mut hello);
        for (j, channel) in slots.into_iter().enumerate() {
            let sock = subscribe(addr, &self.names[channel], channel, (&hello, hellos), wait)?;
            let mut sock = TcpStream::from_std(sock);
            registry
                .register(&mut sock, Token(first_token + j), Interest::READABLE)
                .map_err(|e| e.to_string())?;
            self.subs.push(Subscriber::new(channel, sock));
        }
        Ok(())
    }

    /// Subscriber `j`'s socket is readable, or closing: its complete messages recorded
    /// (in `rec` while this worker measures, else in `early`). One that is lost is not
    /// reopened: what it misses shows as lost.
    pub fn event(
        &mut self,
        j: usize,
        closing: bool,
        registry: &Registry,
        rec: &mut Recorder,
        deliver: usize,
    ) {
        let rec = if self.measuring { rec } else { &mut self.early };
        if let Some(s) = self.subs.get_mut(j) {
            s.event(closing, registry, rec, deliver);
        }
    }

    /// Whether this worker holds subscribers.
    pub fn subscribed(&self) -> bool {
        !self.subs.is_empty()
    }

    pub fn close(&mut self, registry: &Registry) {
        for s in self.subs.iter_mut() {
            s.close(registry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! A virtual client of the mio loop: one connection per server, its op stream and its
//! open-loop schedule.

use super::conn::Conn;
use crate::order::Timing;
use crate::pacing::{Offered, Schedule};
use crate::workload::{Op, OpStream};

/// A virtual client: its connections, its op stream and its schedule.
pub struct Client {
    pub conns: Vec<Conn>,
    pub stream: OpStream,
    pub inflight: usize,
    /// When a slot of its pipeline last came free (a reply to a full pipeline): an op due
    /// before then found the client busy.
    pub free_at: u64,
    /// Open loop: the send that began its current run of back-to-back ops (the last op it
    /// sent with a free slot); a busy client's stopwatch never starts before it.
    pub run_began: u64,
    /// Open loop: what its schedule is made of (from the order), its intended starts and
    /// the count of those offered, once the load has started.
    pub timing: Option<Timing>,
    pub schedule: Option<Schedule>,
    pub offered: Option<Offered>,
    /// An op drawn while its server's connection was down; sent once it is back.
    pub parked: Option<Op>,
}

impl Client {
    /// `n` of its ops ended (answered, failed or dropped) at `now`.
    pub fn release(&mut self, n: usize, now: u64, pipeline: usize) {
        if n > 0 && self.inflight >= pipeline {
            self.free_at = now;
        }
        self.inflight -= n.min(self.inflight);
    }
}

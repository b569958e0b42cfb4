//! One connection of a client to one server: its socket, its buffers, the requests in
//! flight on it (each with what its reply is counted as) and its reconnection backoff.

use crate::protocols::wire::Req;
use crate::protocols::Codec;
use crate::tls::session::Session;
use mio::net::TcpStream;
use std::collections::VecDeque;
use std::net::SocketAddr;

pub const BACKOFF_START: u64 = 1_000_000; // 1 ms, doubled after each failure
pub const READ_CHUNK: usize = 16 * 1024; // a connection's first read buffer; grows by doubling

/// A request in flight on a connection.
pub struct Pending {
    pub req: Req,
    pub aside: bool,
    pub index: u64,
    pub size: u32,
    pub ttl: Option<f64>,
    pub t0: u64,
    pub phase: u32,
    pub hot: bool,
    /// 0: not a replayed op; `replay::INDEX_KEY`: a replayed op under the key of `index`;
    /// above: a handle of the replayed key's own bytes (`trace/replay.rs`).
    pub trace: u32,
    /// A cas's token, as it was sent: sent again with it when the op is (a cluster's
    /// redirection, a script the server no longer holds).
    pub token: Option<Box<[u8]>>,
}

impl Pending {
    /// A reply to the connection's opening commands, not an operation.
    pub fn hello() -> Pending {
        Pending {
            req: Req::Hello,
            aside: false,
            index: 0,
            size: 0,
            ttl: None,
            t0: 0,
            phase: 0,
            hot: false,
            trace: 0,
            token: None,
        }
    }
}

/// One connection of a client to one server.
pub struct Conn {
    pub addr: SocketAddr,
    pub sock: Option<TcpStream>,
    pub connected: bool,
    pub out: Vec<u8>,
    pub out_pos: usize,
    pub inb: Vec<u8>,
    pub pending: VecDeque<Pending>,
    pub retry_at: u64,
    pub backoff: u64,
    pub progress: u64,
    /// Why it was last dropped (kind, message): what a step that cannot start says.
    pub failure: Option<(String, String)>,
    /// TLS state (rediss://, memcached tls, https://); None for plain TCP.
    pub tls: Option<Session>,
    /// A reply ever came on it (a close before any may be a TLS port: `tls/session.rs`).
    pub answered: bool,
    /// The scripts were sent on it since it opened (`load_scripts_for`).
    pub scripts_loaded: bool,
}

impl Conn {
    pub fn new(addr: SocketAddr) -> Conn {
        Conn {
            addr,
            sock: None,
            connected: false,
            out: Vec::with_capacity(4096),
            out_pos: 0,
            inb: Vec::with_capacity(READ_CHUNK),
            pending: VecDeque::new(),
            retry_at: 0,
            backoff: BACKOFF_START,
            progress: 0,
            failure: None,
            tls: None,
            answered: false,
            scripts_loaded: false,
        }
    }

    /// Before a request that runs a script: the scripts loaded on this connection once
    /// (SCRIPT LOAD, each answered as an opening command), so that its EVALSHA finds
    /// them. A NOSCRIPT answered and sent again would come after the requests behind it
    /// on the connection, and a replay's later op of the same key would run first.
    pub fn load_scripts_for(&mut self, codec: &Codec, req: Req) {
        if self.scripts_loaded || !codec.runs_script(req) {
            return;
        }
        for _ in 0..codec.load_scripts(&mut self.out) {
            self.pending.push_back(Pending::hello());
        }
        self.scripts_loaded = true;
    }

    /// Operations of `phase` still waiting for their reply.
    pub fn in_phase(&self, phase: u32) -> usize {
        self.pending
            .iter()
            .filter(|p| p.req != Req::Hello && p.phase == phase)
            .count()
    }
}

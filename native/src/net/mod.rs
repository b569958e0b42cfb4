//! The step's connections: every client's connection to each server (`client.rs`,
//! `conn.rs`), opened, written, read and closed on the loop's poll, over TLS when the
//! step asks for it. What a reply or a lost connection means for the step is the loop's
//! (`run/`); here a failure is only named.

pub mod client;
pub mod conn;
pub mod placement;

use crate::pacing::now_ns;
use crate::protocols::Codec;
use crate::tls::session::{Failure, Progress, Session};
use crate::tls::TlsConfig;
use client::Client;
use conn::{Pending, BACKOFF_START, READ_CHUNK};
use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use placement::Rendezvous;
use std::io::{ErrorKind, Read, Write};

/// The poll token of the first client connection (stdin and the timer come first); the
/// clients' connections follow, then the subscribers' (`pubsub/`).
pub const FIRST_CONN: usize = 2;

/// What a connection that was being opened has come to, once its socket is writable.
pub enum Opened {
    /// Still connecting, or a TLS handshake under way.
    Waiting,
    /// Connected and ready for requests.
    Ready,
    Failed(Failure),
}

/// Every client's connections, and how they are opened and kept.
pub struct Net {
    pub clients: Vec<Client>,
    pub tls: Option<TlsConfig>,
    /// Tokens a client's connections take (its nodes may grow in a cluster).
    pub stride: usize,
    /// Connections lost and waiting to be opened again.
    pub down: usize,
    /// How long a request may wait for its reply before its connection fails (ns).
    pub timeout: u64,
    /// Which server a key goes to, when there are several.
    pub placement: Rendezvous,
    /// What a plain connection closed before any reply adds to its message (a TLS port?).
    plain_close_hint: String,
}

impl Net {
    pub fn new(
        clients: Vec<Client>,
        tls: Option<TlsConfig>,
        placement: Rendezvous,
        stride: usize,
        timeout: u64,
        plain_close_hint: String,
    ) -> Net {
        Net {
            clients,
            tls,
            placement,
            stride,
            down: 0,
            timeout,
            plain_close_hint,
        }
    }

    fn token(&self, ci: usize, si: usize) -> Token {
        Token(FIRST_CONN + ci * self.stride + si)
    }

    /// The first poll token past the clients' connections.
    pub fn tokens_end(&self) -> usize {
        FIRST_CONN + self.clients.len() * self.stride
    }

    /// Open (or reopen) a connection; the codec's opening commands (AUTH, SELECT) are
    /// queued first.
    pub fn open(
        &mut self,
        ci: usize,
        si: usize,
        registry: &Registry,
        codec: &Codec,
    ) -> Result<(), String> {
        let token = self.token(ci, si);
        let tls = match &self.tls {
            Some(cfg) => Some(Session::new(cfg)?),
            None => None,
        };
        let conn = &mut self.clients[ci].conns[si];
        if conn.sock.is_none() && conn.retry_at > 0 {
            self.down -= 1;
            conn.retry_at = 0;
        }
        let mut sock = TcpStream::connect(conn.addr)
            .map_err(|e| format!("cannot connect to {}: {}", conn.addr, e))?;
        let _ = sock.set_nodelay(true);
        registry
            .register(&mut sock, token, Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| e.to_string())?;
        conn.sock = Some(sock);
        conn.tls = tls;
        conn.connected = false;
        conn.out.clear();
        conn.out_pos = 0;
        conn.inb.clear();
        conn.scripts_loaded = false;
        conn.progress = now_ns();
        let n = codec.hello(&mut conn.out);
        for _ in 0..n {
            conn.pending.push_back(Pending::hello());
        }
        Ok(())
    }

    pub fn close_all(&mut self, registry: &Registry) {
        for k in self.clients.iter_mut().flat_map(|c| c.conns.iter_mut()) {
            if let Some(mut s) = k.sock.take() {
                let _ = registry.deregister(&mut s);
            }
        }
    }

    /// Close a connection after a failure (`kind`, `message`): its socket, its buffers,
    /// when it may be opened again. Its requests in flight stay in `pending` for the
    /// caller to count; whether it was connected is returned.
    pub fn shut(&mut self, ci: usize, si: usize, registry: &Registry, failure: Failure) -> bool {
        let k = &mut self.clients[ci].conns[si];
        if let Some(mut s) = k.sock.take() {
            let _ = registry.deregister(&mut s);
        }
        k.tls = None;
        let was_connected = k.connected;
        k.failure = Some(failure);
        k.connected = false;
        k.out.clear();
        k.out_pos = 0;
        k.inb.clear();
        self.down += 1;
        was_connected
    }

    /// A socket being opened is writable: connected, still connecting, or failed.
    pub fn opened(&mut self, ci: usize, si: usize) -> Opened {
        let k = &mut self.clients[ci].conns[si];
        let sock = match k.sock.as_mut() {
            Some(s) => s,
            None => return Opened::Waiting,
        };
        if let Ok(Some(e)) | Err(e) = sock.take_error() {
            let msg = format!("cannot connect to {}: {}", k.addr, e);
            return Opened::Failed(("connection".into(), msg));
        }
        if sock.peer_addr().is_err() {
            return Opened::Waiting; // still connecting
        }
        if let Some(tls) = k.tls.as_mut() {
            // Connected once the handshake is done (`readable_tls`).
            let (addr, answered) = (k.addr, k.answered);
            return match tls.writable(sock, &mut k.inb, addr, answered) {
                Ok(()) => Opened::Waiting,
                Err(f) => Opened::Failed(f),
            };
        }
        k.connected = true;
        k.backoff = BACKOFF_START;
        Opened::Ready
    }

    /// Write what is queued on a connected connection (through its TLS session if any).
    #[inline]
    pub fn flush(&mut self, ci: usize, si: usize) -> Result<(), Failure> {
        let k = &mut self.clients[ci].conns[si];
        if !k.connected {
            return Ok(());
        }
        let sock = match k.sock.as_mut() {
            Some(s) => s,
            None => return Ok(()),
        };
        if let Some(tls) = k.tls.as_mut() {
            let (addr, answered) = (k.addr, k.answered);
            let sent = tls.flush(sock, &k.out[k.out_pos..], &mut k.inb, addr, answered);
            k.out.clear();
            k.out_pos = 0;
            return sent;
        }
        while k.out_pos < k.out.len() {
            match sock.write(&k.out[k.out_pos..]) {
                Ok(0) => break,
                Ok(n) => k.out_pos += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    let msg = format!("writing to {}: {}", k.addr, e);
                    return Err(("connection".into(), msg));
                }
            }
        }
        k.out.clear();
        k.out_pos = 0;
        Ok(())
    }

    /// Read what a plain socket holds into the connection's buffer; the message when the
    /// peer closed it or the read failed (the buffer keeps what came before).
    #[inline]
    pub fn read(&mut self, ci: usize, si: usize, closing: bool) -> Option<String> {
        let k = &mut self.clients[ci].conns[si];
        let sock = k.sock.as_mut()?;
        loop {
            let len = k.inb.len();
            if k.inb.capacity() - len < READ_CHUNK / 4 {
                k.inb.reserve(len.max(READ_CHUNK));
            }
            let cap = k.inb.capacity();
            // SAFETY: the bytes past len are only exposed after read() initialised them.
            unsafe { k.inb.set_len(cap) };
            let r = sock.read(&mut k.inb[len..]);
            let got = match r {
                Ok(n) => n,
                Err(ref e) if e.kind() == ErrorKind::WouldBlock => 0,
                Err(ref e) if e.kind() == ErrorKind::Interrupted => {
                    k.inb.truncate(len);
                    continue;
                }
                Err(e) => {
                    k.inb.truncate(len);
                    // A TLS port resets a plain client whose request it left unread.
                    let reset = e.kind() == ErrorKind::ConnectionReset;
                    let hint = if reset && !k.answered && !k.pending.is_empty() {
                        self.plain_close_hint.as_str()
                    } else {
                        ""
                    };
                    return Some(format!("reading from {}: {}{}", k.addr, e, hint));
                }
            };
            k.inb.truncate(len + got);
            match r {
                Ok(0) => {
                    // A TLS port drops a plain client that way, after failing to read a
                    // handshake: said when nothing was ever answered on it.
                    let quiet = k.answered || k.pending.is_empty();
                    let hint = if quiet { "" } else { &self.plain_close_hint };
                    return Some(format!("{} closed the connection{}", k.addr, hint));
                }
                // A short read drained the socket: with edge-triggered epoll, anything
                // arriving later raises a new event, so no read to see EAGAIN.
                // (Unless the peer is closing: then read on to see the end.)
                Ok(n) if n < cap - len && !closing => return None,
                Ok(_) => continue,
                _ => return None,
            }
        }
    }

    /// A TLS connection's socket is readable: its records decrypted into its buffer, its
    /// handshake finished (it is connected from then on, `Progress::handshaken`).
    pub fn readable_tls(&mut self, ci: usize, si: usize) -> Option<Result<Progress, Failure>> {
        let k = &mut self.clients[ci].conns[si];
        let (addr, answered, connected) = (k.addr, k.answered, k.connected);
        let (sock, tls) = match (k.sock.as_mut(), k.tls.as_mut()) {
            (Some(s), Some(t)) => (s, t),
            _ => return None,
        };
        let progress = tls.readable(sock, &mut k.inb, addr, answered, connected);
        if let Ok(p) = &progress {
            if !connected && p.handshaken {
                k.connected = true;
                k.progress = now_ns();
                k.backoff = BACKOFF_START;
            }
        }
        Some(progress)
    }

    /// Why a TLS connection the peer closed ends, once what it sent is consumed; None
    /// when it is closed already.
    pub fn closed_tls(&self, ci: usize, si: usize) -> Option<Failure> {
        let k = &self.clients[ci].conns[si];
        k.sock.as_ref()?;
        k.tls.as_ref().map(|t| t.closed(k.addr, k.answered))
    }

    pub fn all_connected(&self) -> bool {
        self.clients
            .iter()
            .all(|c| c.conns.iter().all(|k| k.connected && k.pending.is_empty()))
    }

    /// The first connection that could not be opened: its failure (kind, message), as the
    /// server said it (a refused AUTH says WRONGPASS), else that it cannot be reached.
    pub fn first_dead(&self) -> Option<Failure> {
        let k = self
            .clients
            .iter()
            .flat_map(|c| c.conns.iter())
            .find(|k| k.sock.is_none())?;
        Some(match &k.failure {
            Some((kind, message)) if kind != "connection" => (kind.clone(), message.clone()),
            _ => ("connection".into(), format!("cannot reach {}", k.addr)),
        })
    }
}

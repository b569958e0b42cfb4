//! One connection's TLS: records to and from the socket, the handshake, and why a
//! connection failed named in one line (a refusal, an alert, a plain port). The loop
//! decides what a failure means for the step; nothing here knows about operations.

use super::TlsConfig;
use mio::net::TcpStream;
use rustls::ClientConnection;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;

/// A connection's TLS state.
pub struct Session {
    conn: ClientConnection,
    has_cert: bool,
}

impl Session {
    pub fn new(cfg: &TlsConfig) -> Result<Session, String> {
        cfg.client().map(|conn| Session {
            conn,
            has_cert: cfg.offers_cert(),
        })
    }

    fn handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Plaintext to send (buffered until the handshake is done).
    pub fn write_plain(&mut self, data: &[u8]) {
        let _ = self.conn.writer().write_all(data);
    }

    /// Move TLS records to the socket until it would block.
    fn send(&mut self, sock: &mut TcpStream) -> std::io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(sock) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Read what the socket holds, decrypt it and append the plaintext to `inb`.
    /// Ok(true): the peer closed; Err: a TLS failure (kind, message) or a socket error.
    fn receive(
        &mut self,
        sock: &mut TcpStream,
        inb: &mut Vec<u8>,
        addr: SocketAddr,
    ) -> Result<bool, (String, String)> {
        let mut closed = false;
        loop {
            let more = match self.conn.read_tls(sock) {
                Ok(0) => {
                    closed = true;
                    false
                }
                Ok(_) => true,
                Err(e) if e.kind() == ErrorKind::WouldBlock => false,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(("connection".into(), format!("reading from {}: {}", addr, e)))
                }
            };
            if let Err(e) = self.conn.process_new_packets() {
                let _ = self.send(sock); // the alert tells the server why
                return Err(("tls".into(), describe(&e, addr)));
            }
            let mut chunk = [0u8; 16 * 1024];
            loop {
                match self.conn.reader().read(&mut chunk) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => inb.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => {
                        closed = true; // closed without close_notify
                        break;
                    }
                }
            }
            // Edge-triggered readiness: read until the socket would block.
            if !more || closed {
                return Ok(closed);
            }
        }
    }
}

impl Session {
    /// Why a write failed. With TLS 1.3 a server that refuses the client (no client
    /// certificate, say) checks after the client's handshake is done, sends its alert and
    /// closes; the reset that follows fails our next write. The alert arrived before the
    /// reset and is still in the socket's receive queue: read it, so the refusal is named
    /// (`tls`) the same way whichever comes first, the read or the write.
    fn failure_behind(
        &mut self,
        sock: &mut TcpStream,
        inb: &mut Vec<u8>,
        addr: SocketAddr,
        write_error: &std::io::Error,
        answered: bool,
    ) -> (String, String) {
        match self.receive(sock, inb, addr) {
            Err((kind, msg)) if kind == "tls" => (kind, msg),
            _ if !answered && !self.has_cert && !self.handshaking() => {
                ("tls".into(), refusal(addr))
            }
            _ => (
                "connection".into(),
                format!("writing to {}: {}", addr, write_error),
            ),
        }
    }
}

/// A TLS server, offered no client certificate, that closed or reset the connection after
/// the handshake and before any reply (without an alert we could read).
fn refusal(addr: SocketAddr) -> String {
    format!(
        "TLS: {} closed the connection after the handshake and before any reply: it \
         requires a client certificate (CertificateRequired, its usual cause); set tls_cert \
         and tls_key",
        addr
    )
}

/// One line naming why a handshake or record failed.
fn describe(e: &rustls::Error, addr: SocketAddr) -> String {
    match e {
        rustls::Error::InvalidCertificate(why) => {
            format!("TLS: certificate of {} does not verify: {:?}", addr, why)
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => format!(
            "TLS: {} does not speak TLS (is it a plain port?): {}",
            addr, e
        ),
        rustls::Error::AlertReceived(alert) => {
            format!(
                "TLS handshake with {} failed: the server sent {:?}",
                addr, alert
            )
        }
        other => format!("TLS handshake with {} failed: {}", addr, other),
    }
}

/// A TLS connection's socket was readable and its records were handled.
pub struct Progress {
    /// The handshake is over (the connection counts as connected from now on).
    pub handshaken: bool,
    /// The peer closed the connection: once the plaintext read is consumed, `closed`
    /// says why.
    pub closed: bool,
}

/// Why a connection ends: (error kind, message).
pub type Failure = (String, String);

impl Session {
    /// The socket is writable: send handshake or application records.
    pub fn writable(
        &mut self,
        sock: &mut TcpStream,
        inb: &mut Vec<u8>,
        addr: SocketAddr,
        answered: bool,
    ) -> Result<(), Failure> {
        match self.send(sock) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failure_behind(sock, inb, addr, &e, answered)),
        }
    }

    /// Plaintext queued for the connection goes through the session, then to the socket.
    pub fn flush(
        &mut self,
        sock: &mut TcpStream,
        data: &[u8],
        inb: &mut Vec<u8>,
        addr: SocketAddr,
        answered: bool,
    ) -> Result<(), Failure> {
        self.write_plain(data);
        self.writable(sock, inb, addr, answered)
    }

    /// The socket is readable: decrypt into `inb` and send what the records call for. A
    /// failure (a refusal, an alert, a close during the handshake) ends the connection.
    pub fn readable(
        &mut self,
        sock: &mut TcpStream,
        inb: &mut Vec<u8>,
        addr: SocketAddr,
        answered: bool,
        connected: bool,
    ) -> Result<Progress, Failure> {
        let received = self.receive(sock, inb, addr);
        let sent = self.send(sock);
        let handshaking = self.handshaking();
        let refused = !answered && !self.has_cert && !handshaking;
        let closed = match received {
            // A reset with no alert to read, after the handshake and before any reply,
            // offered no certificate: the refusal (see `refusal`).
            Err((kind, _)) if kind != "tls" && refused => {
                return Err(("tls".into(), refusal(addr)))
            }
            Err(failure) => return Err(failure),
            Ok(closed) => closed,
        };
        if let Err(e) = sent {
            return Err(self.failure_behind(sock, inb, addr, &e, answered));
        }
        if !connected && closed {
            let msg = format!(
                "TLS: {} closed the connection during the handshake (a client certificate \
                 wanted? not a TLS port?)",
                addr
            );
            return Err(("tls".into(), msg));
        }
        Ok(Progress {
            handshaken: !handshaking,
            closed,
        })
    }

    /// Why a connection the peer closed ends, once what it sent is consumed.
    pub fn closed(&self, addr: SocketAddr, answered: bool) -> Failure {
        if !answered && !self.has_cert {
            // TLS 1.3: a server wanting a client certificate checks it after our
            // handshake is done; one that closes without its alert (an asyncio server
            // does) is named as the refusal it is, as the Python side does.
            return ("tls".into(), refusal(addr));
        }
        (
            "connection".into(),
            format!("{} closed the connection", addr),
        )
    }
}

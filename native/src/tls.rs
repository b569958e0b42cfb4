//! TLS on the mio loop's connections: rediss://, memcached with `tls = true`, https://.
//!
//! rustls 0.21 with ring (builds with Debian's rustc 1.63). The options are the Python
//! side's: `tls_ca` (else the system's CAs), `tls_cert`/`tls_key` (mutual TLS),
//! `tls_insecure` (no verification at all) and `tls_sni` (the name sent and checked; without
//! it the certificate's chain is checked but not its name, as loopback test certificates
//! rarely name 127.0.0.1). A connection counts as connected only once its handshake is
//! done, so no operation is ever timed across a handshake.

use crate::client::Conn;
use crate::codec::Codec;
use crate::io::Mode;
use crate::pacing::now_ns;
use crate::step::Run;
use mio::net::TcpStream;
use rustls::client::{ServerCertVerified, ServerCertVerifier, WebPkiVerifier};
use rustls::{
    Certificate, CertificateError, ClientConfig, ClientConnection, PrivateKey, RootCertStore,
    ServerName,
};
use serde_json::Value;
use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

const SYSTEM_CAS: &str = "/etc/ssl/certs/ca-certificates.crt"; // Debian's bundle

/// The client side of a step's TLS, shared by all its connections.
pub struct TlsConfig {
    config: Arc<ClientConfig>,
    name: ServerName,
    /// A client certificate is offered (tls_cert).
    has_cert: bool,
}

/// Whether the target asks for TLS: rediss://, https:// or memcached's `tls = true`.
fn wanted(system: &str, options: &Value) -> bool {
    let url_is = |field: &str, scheme: &str| {
        options[field]
            .as_str()
            .map_or(false, |u| u.starts_with(scheme))
    };
    match system {
        "redis" => url_is("url", "rediss://"),
        "memcached" => options["tls"].as_bool().unwrap_or(false),
        "http" => url_is("base_url", "https://"),
        _ => false,
    }
}

fn text<'a>(options: &'a Value, name: &str) -> &'a str {
    options[name].as_str().unwrap_or("")
}

fn pem_items(path: &str, field: &str) -> Result<Vec<rustls_pemfile::Item>, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("target.options.{}: cannot read {:?}: {}", field, path, e))?;
    rustls_pemfile::read_all(&mut BufReader::new(file))
        .map_err(|e| format!("target.options.{}: not PEM ({:?}): {}", field, path, e))
}

fn certificates(path: &str, field: &str) -> Result<Vec<Certificate>, String> {
    let certs: Vec<Certificate> = pem_items(path, field)?
        .into_iter()
        .filter_map(|item| match item {
            rustls_pemfile::Item::X509Certificate(der) => Some(Certificate(der)),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(format!(
            "target.options.{}: expected a PEM certificate in {:?}",
            field, path
        ));
    }
    Ok(certs)
}

fn private_key(path: &str) -> Result<PrivateKey, String> {
    pem_items(path, "tls_key")?
        .into_iter()
        .find_map(|item| match item {
            rustls_pemfile::Item::PKCS8Key(der)
            | rustls_pemfile::Item::RSAKey(der)
            | rustls_pemfile::Item::ECKey(der) => Some(PrivateKey(der)),
            _ => None,
        })
        .ok_or_else(|| {
            format!(
                "target.options.tls_key: expected a PEM private key in {:?}",
                path
            )
        })
}

/// Verification as the options say: the chain always (unless insecure), the name only
/// when `tls_sni` gave one.
struct Verifier {
    webpki: WebPkiVerifier,
    insecure: bool,
    check_name: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &Certificate,
        intermediates: &[Certificate],
        server_name: &ServerName,
        scts: &mut dyn Iterator<Item = &[u8]>,
        ocsp_response: &[u8],
        now: SystemTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.insecure {
            return Ok(ServerCertVerified::assertion());
        }
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            scts,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForName))
                if !self.check_name =>
            {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }
}

/// The step's TLS configuration (None: plain TCP). Bad files are the profile's fault.
pub fn config_for(system: &str, options: &Value) -> Result<Option<TlsConfig>, String> {
    if !wanted(system, options) {
        return Ok(None);
    }
    let (ca, cert, key, sni) = (
        text(options, "tls_ca"),
        text(options, "tls_cert"),
        text(options, "tls_key"),
        text(options, "tls_sni"),
    );
    let insecure = options["tls_insecure"].as_bool().unwrap_or(false);
    let mut roots = RootCertStore::empty();
    let (path, field) = if ca.is_empty() {
        (SYSTEM_CAS, "tls_ca")
    } else {
        (ca, "tls_ca")
    };
    for c in certificates(path, field)? {
        // A bundle may hold certificates webpki cannot parse: the others still count.
        let _ = roots.add(&c);
    }
    let verifier = Verifier {
        webpki: WebPkiVerifier::new(roots, None),
        insecure,
        check_name: !sni.is_empty(),
    };
    let builder = ClientConfig::builder()
        .with_safe_defaults()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let config = if cert.is_empty() {
        builder.with_no_client_auth()
    } else {
        let key = private_key(if key.is_empty() { cert } else { key })?;
        builder
            .with_client_auth_cert(certificates(cert, "tls_cert")?, key)
            .map_err(|e| format!("target.options.tls_cert: {}", e))?
    };
    let name = if sni.is_empty() { "localhost" } else { sni };
    let name = ServerName::try_from(name)
        .map_err(|_| format!("target.options.tls_sni: not a server name: {:?}", sni))?;
    Ok(Some(TlsConfig {
        config: Arc::new(config),
        name,
        has_cert: !cert.is_empty(),
    }))
}

impl TlsConfig {
    /// A client session for a blocking exchange (cluster.rs reads CLUSTER SLOTS with it).
    pub fn client(&self) -> Result<ClientConnection, String> {
        ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(|e| format!("TLS setup: {}", e))
    }
}

/// A connection's TLS state.
pub struct Session {
    conn: ClientConnection,
    has_cert: bool,
}

impl Session {
    pub fn new(cfg: &TlsConfig) -> Result<Session, String> {
        ClientConnection::new(cfg.config.clone(), cfg.name.clone())
            .map(|conn| Session {
                conn,
                has_cert: cfg.has_cert,
            })
            .map_err(|e| format!("TLS setup: {}", e))
    }

    pub fn handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Plaintext to send (buffered until the handshake is done).
    pub fn write_plain(&mut self, data: &[u8]) {
        let _ = self.conn.writer().write_all(data);
    }

    /// Move TLS records to the socket until it would block.
    pub fn send(&mut self, sock: &mut TcpStream) -> std::io::Result<()> {
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

/// Said when a plain connection that never had a reply is closed with requests in flight:
/// a TLS port drops a plain client that way, after failing to read a handshake.
pub fn plain_close_hint(codec: &Codec, k: &Conn) -> &'static str {
    if k.answered || k.tls.is_some() || k.pending.is_empty() {
        return "";
    }
    match codec {
        Codec::Resp(_) => " before any reply (is it a TLS port? use rediss://)",
        Codec::Memcache(..) | Codec::Meta(..) => {
            " before any reply (is it a TLS port? set target.options.tls = true)"
        }
        Codec::Http(_) => " before any reply (is it a TLS port? use https://)",
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

impl<'a> Run<'a> {
    /// A new connection's TLS session (None for plain TCP).
    pub fn tls_session(&self) -> Result<Option<Session>, String> {
        match &self.tls {
            Some(cfg) => Session::new(cfg).map(Some),
            None => Ok(None),
        }
    }

    /// A TLS connection's socket is writable: send handshake or application records.
    pub fn tls_writable(&mut self, ci: usize, si: usize) {
        let k = &mut self.clients[ci].conns[si];
        let (addr, answered) = (k.addr, k.answered);
        let (sock, tls) = match (k.sock.as_mut(), k.tls.as_mut()) {
            (Some(s), Some(t)) => (s, t),
            _ => return,
        };
        if let Err(e) = tls.send(sock) {
            let (kind, msg) = tls.failure_behind(sock, &mut k.inb, addr, &e, answered);
            self.drop_conn(ci, si, &kind, &msg);
        }
    }

    /// A TLS connection's socket is readable: decrypt into `inb`, finish the handshake
    /// (then the connection counts as connected) or hand the replies to `consume`.
    pub fn tls_readable(&mut self, ci: usize, si: usize) {
        let k = &mut self.clients[ci].conns[si];
        let (addr, answered) = (k.addr, k.answered);
        let (sock, tls) = match (k.sock.as_mut(), k.tls.as_mut()) {
            (Some(s), Some(t)) => (s, t),
            _ => return,
        };
        let received = tls.receive(sock, &mut k.inb, addr);
        let sent = tls.send(sock);
        let handshaking = tls.handshaking();
        let refused = !answered && !tls.has_cert && !handshaking;
        let closed = match received {
            // A reset with no alert to read, after the handshake and before any reply,
            // offered no certificate: the refusal (see `refusal`).
            Err((kind, _)) if kind != "tls" && refused => {
                self.drop_conn(ci, si, "tls", &refusal(addr));
                return;
            }
            Err((kind, msg)) => {
                self.drop_conn(ci, si, &kind, &msg);
                return;
            }
            Ok(closed) => closed,
        };
        if let Err(e) = sent {
            let (kind, msg) = tls.failure_behind(sock, &mut k.inb, addr, &e, answered);
            self.drop_conn(ci, si, &kind, &msg);
            return;
        }
        if !k.connected && closed {
            let msg = format!(
                "TLS: {} closed the connection during the handshake (a client certificate \
                 wanted? not a TLS port?)",
                addr
            );
            self.drop_conn(ci, si, "tls", &msg);
            return;
        }
        if !k.connected && !handshaking {
            k.connected = true;
            k.progress = now_ns();
            k.backoff = crate::client::BACKOFF_START;
            if self.mode != Mode::Idle {
                self.refill(ci, now_ns());
            }
            self.flush(ci, si);
        }
        if self.clients[ci].conns[si].connected {
            self.consume(ci, si);
        }
        let k = &self.clients[ci].conns[si];
        if closed && k.sock.is_some() {
            if !k.answered && !k.tls.as_ref().map_or(true, |t| t.has_cert) {
                // TLS 1.3: a server wanting a client certificate checks it after our
                // handshake is done; one that closes without its alert (an asyncio server
                // does) is named as the refusal it is, as the Python side does.
                self.drop_conn(ci, si, "tls", &refusal(addr));
                return;
            }
            let msg = format!("{} closed the connection", addr);
            self.drop_conn(ci, si, "connection", &msg);
        }
    }

    /// Plaintext queued in `out` goes through the session (called by `flush`).
    pub fn tls_flush(&mut self, ci: usize, si: usize) {
        let k = &mut self.clients[ci].conns[si];
        if let Some(tls) = k.tls.as_mut() {
            tls.write_plain(&k.out[k.out_pos..]);
            k.out.clear();
            k.out_pos = 0;
        }
        self.tls_writable(ci, si);
    }
}

//! TLS on the mio loop's connections, when the target asks for it (the plugin decides:
//! rediss://, a `tls` option, https://; the order only says TLS or not, and its settings).
//!
//! rustls 0.21 with ring (builds with Debian's rustc 1.63). The settings are the Python
//! side's: `tls_ca` (else the system's CAs), `tls_cert`/`tls_key` (mutual TLS),
//! `tls_insecure` (no verification at all) and `tls_sni` (the name sent and checked; without
//! it the certificate's chain is checked but not its name, as loopback test certificates
//! rarely name 127.0.0.1). A connection counts as connected only once its handshake is
//! done, so no operation is ever timed across a handshake.

use crate::order::TlsOrder;
use rustls::client::{ServerCertVerified, ServerCertVerifier, WebPkiVerifier};
use rustls::{
    Certificate, CertificateError, ClientConfig, ClientConnection, PrivateKey, RootCertStore,
    ServerName,
};
use std::io::BufReader;
use std::sync::Arc;
use std::time::SystemTime;

pub mod session;

const SYSTEM_CAS: &str = "/etc/ssl/certs/ca-certificates.crt"; // Debian's bundle

/// The client side of a step's TLS, shared by all its connections.
pub struct TlsConfig {
    config: Arc<ClientConfig>,
    name: ServerName,
    /// A client certificate is offered (tls_cert).
    has_cert: bool,
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
pub fn config_for(tls: Option<&TlsOrder>) -> Result<Option<TlsConfig>, String> {
    let t = match tls {
        Some(t) => t,
        None => return Ok(None),
    };
    let (ca, cert, key, sni) = (
        t.ca.as_str(),
        t.cert.as_str(),
        t.key.as_str(),
        t.sni.as_str(),
    );
    let insecure = t.insecure;
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
    /// A client session for a blocking exchange (`cluster/slots.rs` reads CLUSTER SLOTS with it).
    pub fn client(&self) -> Result<ClientConnection, String> {
        ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(|e| format!("TLS setup: {}", e))
    }

    /// A client certificate is offered: a server that closes after the handshake has
    /// not refused a missing one.
    pub fn offers_cert(&self) -> bool {
        self.has_cert
    }
}

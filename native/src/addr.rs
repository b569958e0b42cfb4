//! Server addresses: host and port read from `host:port` text, and the loopback guard a
//! remote target needs the order's consent to pass (nothing is connected here).

use std::net::{SocketAddr, ToSocketAddrs};

pub fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

/// The address of a server; a remote one only when the order allows it.
pub fn resolve(
    host: &str,
    port: u16,
    where_: &str,
    allow_remote: bool,
) -> Result<SocketAddr, String> {
    if !allow_remote && !is_loopback(host) {
        return Err(format!(
            "{}: {:?} is not a loopback address (127.0.0.1, ::1, localhost); to load a \
             remote target, set target.allow_remote = true or pass --allow-remote",
            where_, host
        ));
    }
    let h = host.trim_start_matches('[').trim_end_matches(']');
    (h, port)
        .to_socket_addrs()
        .map_err(|e| format!("{}: {}", where_, e))?
        .next()
        .ok_or_else(|| format!("{}: no address for {}", where_, host))
}

pub fn split_host_port(text: &str, default: u16, where_: &str) -> Result<(String, u16), String> {
    let bad = || format!("{}: expected host:port; got {:?}", where_, text);
    if let Some(rest) = text.strip_prefix('[') {
        let close = rest.find(']').ok_or_else(bad)?;
        let port = rest[close + 1..].trim_start_matches(':');
        let port = if port.is_empty() {
            default
        } else {
            port.parse().map_err(|_| bad())?
        };
        return Ok((rest[..close].to_string(), port));
    }
    match text.rfind(':') {
        Some(i) if text.matches(':').count() == 1 => Ok((
            text[..i].to_string(),
            text[i + 1..].parse().map_err(|_| bad())?,
        )),
        _ => Ok((text.to_string(), default)),
    }
}

//! Server addresses: a target's hosts looked up, and the loopback guard a remote target
//! needs the order's consent to pass (nothing is connected here).

use crate::order::TargetOrder;
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

/// The addresses of a target's servers, in its order: each host looked up (a name, or an
/// address as text), a remote one only when the order allows it. No URL is read here: the
/// plugin's parser gave host and port.
pub fn servers(t: &TargetOrder) -> Result<Vec<SocketAddr>, String> {
    t.servers
        .iter()
        .map(|(host, port)| resolve(host, *port, &t.origin, t.allow_remote))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_remote_address_needs_the_orders_consent() {
        let target = |allow_remote: bool| {
            let t = json!({"protocol": "resp", "servers": [["192.0.2.7", 6379]],
                           "origin": "target.options.url"});
            TargetOrder::from_value(&t, allow_remote).unwrap()
        };
        let e = servers(&target(false)).unwrap_err();
        assert!(
            e.starts_with("target.options.url: \"192.0.2.7\" is not a loopback"),
            "{}",
            e
        );
        assert_eq!(
            servers(&target(true)).unwrap()[0].to_string(),
            "192.0.2.7:6379"
        );
    }
}

//! The protocol a step speaks and where its servers are: dispatch to the RESP, memcached
//! and HTTP encoders and parsers, and the target's own options (URL, servers, base URL)
//! read into addresses. A non-loopback address is refused unless the order allows a
//! remote target; nothing is connected here.

pub mod http;
pub mod memcache;
pub mod meta;
pub mod resp;
pub mod wire;

use crate::addr::{resolve, split_host_port};
use http::Http;
use memcache::{Memcache, Rendezvous};
use meta::Meta;
use resp::Resp;
use serde_json::Value;
use std::net::SocketAddr;
use wire::{ParseResult, Req};

/// The protocol a step speaks.
pub enum Codec {
    Resp(Resp),
    Memcache(Memcache, Rendezvous),
    /// memcached's meta protocol (mg, ms, md), the strategy's `protocol = "meta"`.
    Meta(Meta, Rendezvous),
    Http(Box<Http>),
}

impl Codec {
    /// The connection's opening commands (AUTH, SELECT); how many replies they take.
    pub fn hello(&self, out: &mut Vec<u8>) -> usize {
        match self {
            Codec::Resp(r) => r.hello(out),
            _ => 0,
        }
    }

    /// Encode one request; false when it cannot be sent (an HTTP delete without template).
    pub fn encode(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
    ) -> bool {
        match (self, req) {
            (Codec::Resp(r), Req::Get) => r.get(out, key),
            (Codec::Resp(r), Req::Set) => r.set(out, key, value, ttl),
            (Codec::Resp(r), Req::Delete) => r.delete(out, key),
            (Codec::Memcache(m, _), Req::Get) => m.get(out, key),
            (Codec::Memcache(m, _), Req::Set) => m.set(out, key, value, ttl),
            (Codec::Memcache(m, _), Req::Delete) => m.delete(out, key),
            (Codec::Meta(m, _), Req::Get) => m.get(out, key),
            (Codec::Meta(m, _), Req::Set) => m.set(out, key, value, ttl),
            (Codec::Meta(m, _), Req::Delete) => m.delete(out, key),
            (Codec::Http(h), Req::Get) => h.get(out, key),
            (Codec::Http(h), Req::Set) => h.set(out, key, value, ttl),
            (Codec::Http(h), Req::Delete) => return h.delete(out, key),
            (Codec::Resp(r), Req::Publish) => r.publish(out, key, value),
            // Pub/sub is Redis's: counted as unsupported, never sent.
            (_, Req::Publish) => return false,
            (_, Req::Hello) => {}
        }
        true
    }

    #[inline]
    pub fn parse(&self, buf: &[u8], req: Req) -> ParseResult {
        match self {
            Codec::Resp(r) => r.parse(buf, req),
            Codec::Memcache(m, _) => m.parse(buf, req),
            Codec::Meta(m, _) => m.parse(buf, req),
            Codec::Http(h) => h.parse(buf, req),
        }
    }

    /// What a plain connection closed before any reply adds to its message: a TLS port
    /// drops a plain client that way, after failing to read a handshake.
    pub fn tls_hint(&self) -> &'static str {
        match self {
            Codec::Resp(_) => " before any reply (is it a TLS port? use rediss://)",
            Codec::Memcache(..) | Codec::Meta(..) => {
                " before any reply (is it a TLS port? set target.options.tls = true)"
            }
            Codec::Http(_) => " before any reply (is it a TLS port? use https://)",
        }
    }

    /// The index of the server a key goes to.
    #[inline]
    pub fn server_for(&self, key: &[u8]) -> usize {
        match self {
            Codec::Memcache(_, hash) | Codec::Meta(_, hash) => hash.index(key),
            _ => 0,
        }
    }
}

/// What a codec is made from: the system, its options, the remote decision and, for
/// several servers, their rendezvous seeds (all from the compiled order).
pub struct Target<'a> {
    pub system: &'a str,
    pub options: &'a Value,
    /// The strategy's options (memcached's `protocol`); null when there are none.
    pub strategy: &'a Value,
    pub allow_remote: bool,
    pub placement: Option<&'a [u32]>,
}

/// The protocol and the servers' addresses of a step.
pub fn codec_for(t: &Target<'_>) -> Result<(Codec, Vec<SocketAddr>), String> {
    match t.system {
        "redis" => redis(t),
        "memcached" => memcached(t),
        "http" => {
            let h = Http::from_options(t.options)?;
            let addr = resolve(&h.host, h.port, "target.options.base_url", t.allow_remote)?;
            Ok((Codec::Http(Box::new(h)), vec![addr]))
        }
        other => Err(format!(
            "target.system: the native engine drives redis, memcached and http; got {:?}",
            other
        )),
    }
}

fn redis(t: &Target<'_>) -> Result<(Codec, Vec<SocketAddr>), String> {
    let where_ = "target.options.url";
    let url = t.options["url"].as_str().unwrap_or("");
    let rest = url
        .strip_prefix("redis://")
        .or_else(|| url.strip_prefix("rediss://")) // TLS: tls/
        .ok_or_else(|| format!("{}: expected redis:// or rediss://; got {:?}", where_, url))?;
    let (auth, rest) = match rest.rfind('@') {
        Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
        None => (None, rest),
    };
    let (hostport, db) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i + 1..].trim_matches('/')),
        None => (rest, ""),
    };
    let db: i64 = if db.is_empty() {
        0
    } else {
        db.parse()
            .map_err(|_| format!("{}: bad database in {:?}", where_, url))?
    };
    let (host, port) = split_host_port(hostport, 6379, where_)?;
    let env = |name: &str| {
        t.options[name]
            .as_str()
            .and_then(|v| std::env::var(v).ok())
            .filter(|v| !v.is_empty())
    };
    let username = env("username_env").or_else(|| {
        auth.map(|a| a.split(':').next().unwrap_or("").to_string())
            .filter(|u| !u.is_empty())
    });
    let password = env("password_env");
    let addr = resolve(&host, port, where_, t.allow_remote)?;
    Ok((Codec::Resp(Resp::new(username, password, db)), vec![addr]))
}

fn memcached(t: &Target<'_>) -> Result<(Codec, Vec<SocketAddr>), String> {
    let where_ = "target.options.servers";
    let list = t.options["servers"].as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        return Err(format!(
            "{}: expected at least one memcached server such as 127.0.0.1:11211",
            where_
        ));
    }
    let mut addrs = Vec::new();
    for s in list {
        let (host, port) = split_host_port(s.as_str().unwrap_or("").trim(), 11211, where_)?;
        addrs.push(resolve(&host, port, where_, t.allow_remote)?);
    }
    let seeds = t.placement.unwrap_or(&[]);
    if addrs.len() > 1 && seeds.len() != addrs.len() {
        return Err(format!(
            "step order: {} servers but {} placement seeds",
            addrs.len(),
            seeds.len()
        ));
    }
    let hash = Rendezvous::new(seeds);
    match t.strategy["protocol"].as_str().unwrap_or("text") {
        "text" => Ok((Codec::Memcache(Memcache, hash), addrs)),
        "meta" => Ok((Codec::Meta(Meta, hash), addrs)),
        other => Err(format!(
            "strategy.options.protocol: expected \"text\" or \"meta\"; got {:?}",
            other
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target<'a>(options: &'a Value, allow_remote: bool) -> Target<'a> {
        Target {
            system: "redis",
            options,
            strategy: &Value::Null,
            allow_remote,
            placement: None,
        }
    }

    #[test]
    fn memcached_speaks_the_protocol_its_strategy_names() {
        let o = json!({"servers": ["127.0.0.1:11211"]});
        let pick = |strategy: Value| {
            codec_for(&Target {
                system: "memcached",
                options: &o,
                strategy: &strategy,
                allow_remote: false,
                placement: None,
            })
            .map(|(c, _)| matches!(c, Codec::Meta(..)))
        };
        assert_eq!(pick(Value::Null), Ok(false));
        assert_eq!(pick(json!({"protocol": "text"})), Ok(false));
        assert_eq!(pick(json!({"protocol": "meta"})), Ok(true));
        assert!(pick(json!({"protocol": "binary"}))
            .unwrap_err()
            .contains("strategy.options.protocol"));
    }

    #[test]
    fn a_remote_address_needs_the_orders_consent() {
        let o = json!({"url": "redis://192.0.2.7:6379/0"});
        let e = codec_for(&target(&o, false)).err().unwrap();
        assert!(e.contains("not a loopback address"), "{}", e);
        let (_, addrs) = codec_for(&target(&o, true)).ok().unwrap();
        assert_eq!(addrs[0].to_string(), "192.0.2.7:6379");
    }
}

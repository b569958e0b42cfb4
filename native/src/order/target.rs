//! The target part of a compiled order: the wire protocol the step speaks and everything
//! its codec and its connections need, resolved in Python by the system's plugin (its one
//! parser of its options: `workbench/engine/native_order.py`). Nothing here knows which
//! system it is, and nothing parses a URL: servers come as host and port.

use super::read::{list_at, str_at, Read};
use serde_json::Value;

/// A wire protocol the native engine speaks, by its name in `workbench.sdk.protocols`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Resp,
    MemcacheText,
    MemcacheMeta,
    Http1,
}

impl Protocol {
    pub fn named(name: &str) -> Read<Protocol> {
        Ok(match name {
            "resp" => Protocol::Resp,
            "memcache-text" => Protocol::MemcacheText,
            "memcache-meta" => Protocol::MemcacheMeta,
            "http1" => Protocol::Http1,
            other => {
                return Err(format!(
                    "step order: the native engine speaks resp, memcache-text, memcache-meta \
                     and http1; got protocol {:?}",
                    other
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Resp => "resp",
            Protocol::MemcacheText => "memcache-text",
            Protocol::MemcacheMeta => "memcache-meta",
            Protocol::Http1 => "http1",
        }
    }
}

/// TLS as the target asks for it: the CA file (empty: the system's), a client certificate
/// and key (mutual TLS), the name sent and checked (empty: the chain is checked, not the
/// name), or no verification at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsOrder {
    pub ca: String,
    pub cert: String,
    pub key: String,
    pub sni: String,
    pub insecure: bool,
}

/// What a RESP connection says first: AUTH (a user, and the password from the environment
/// variable named, never from the order), then SELECT of a database other than 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Login {
    pub db: i64,
    pub username: Option<String>,
    pub password_env: Option<String>,
}

/// Where the step's servers are and how to speak to them.
#[derive(Clone, Debug)]
pub struct TargetOrder {
    pub protocol: Protocol,
    /// Host and port of each server, in the order the placement seeds follow.
    pub servers: Vec<(String, u16)>,
    /// The option the servers were read from, named in the errors about them.
    pub origin: String,
    pub tls: Option<TlsOrder>,
    /// A Redis Cluster: the servers are where its slot map is read from.
    pub cluster: bool,
    /// Rendezvous seeds, one per server, when keys are spread over several.
    pub placement: Option<Vec<u32>>,
    pub login: Login,
    /// An HTTP target's host header, base path, templates and statuses (`protocols/http.rs`).
    pub http: Value,
    /// Said when a plain connection is closed before any reply (a TLS port?): the plugin's
    /// advice, such as "use rediss://".
    pub tls_advice: String,
    pub allow_remote: bool,
}

fn text_or_none(v: &Value, name: &str) -> Option<String> {
    v[name]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn server(v: &Value) -> Read<(String, u16)> {
    let host = v[0].as_str().filter(|h| !h.is_empty());
    let port = v[1].as_u64().filter(|&p| p > 0 && p <= u16::MAX as u64);
    match (host, port) {
        (Some(h), Some(p)) => Ok((h.to_string(), p as u16)),
        _ => Err(format!(
            "step order: a server is [host, port from 1 to 65535]; got {}",
            v
        )),
    }
}

fn tls(v: &Value) -> Option<TlsOrder> {
    if v.is_null() {
        return None;
    }
    let text = |name: &str| v[name].as_str().unwrap_or("").to_string();
    Some(TlsOrder {
        ca: text("ca"),
        cert: text("cert"),
        key: text("key"),
        sni: text("sni"),
        insecure: v["insecure"].as_bool().unwrap_or(false),
    })
}

fn placement(v: &Value) -> Read<Option<Vec<u32>>> {
    match v {
        Value::Null => Ok(None),
        Value::Array(seeds) => seeds
            .iter()
            .map(|s| {
                s.as_u64()
                    .filter(|&s| s <= u32::MAX as u64)
                    .map(|s| s as u32)
            })
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| "step order: placement seeds are not numbers".into()),
        _ => Err("step order: placement is not a list of seeds".into()),
    }
}

impl TargetOrder {
    /// The target part of an order (or of a probe's "open"), with the remote decision.
    pub fn from_value(v: &Value, allow_remote: bool) -> Read<TargetOrder> {
        let servers = list_at(v, "servers")?
            .iter()
            .map(server)
            .collect::<Read<Vec<_>>>()?;
        let origin = str_at(v, "origin")?;
        if servers.is_empty() {
            return Err(format!("{}: names no server", origin));
        }
        let placement = placement(&v["placement"])?;
        if let Some(seeds) = &placement {
            if servers.len() > 1 && seeds.len() != servers.len() {
                return Err(format!(
                    "step order: {} servers but {} placement seeds",
                    servers.len(),
                    seeds.len()
                ));
            }
        }
        let login = &v["login"];
        Ok(TargetOrder {
            protocol: Protocol::named(&str_at(v, "protocol")?)?,
            servers,
            origin,
            tls: tls(&v["tls"]),
            cluster: v["cluster"].as_bool().unwrap_or(false),
            placement,
            login: Login {
                db: login["db"].as_i64().unwrap_or(0),
                username: text_or_none(login, "username"),
                password_env: text_or_none(login, "password_env"),
            },
            http: v.get("http1").cloned().unwrap_or(Value::Null),
            tls_advice: v["tls_advice"].as_str().unwrap_or("").to_string(),
            allow_remote,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_target_is_read_whole_or_refused_in_one_line() {
        let t = TargetOrder::from_value(
            &json!({"protocol": "resp", "servers": [["::1", 7000]], "origin": "target.options.url",
                    "tls": {"sni": "cache.local"}, "login": {"db": 3, "password_env": "PW"}}),
            false,
        )
        .unwrap();
        assert_eq!((t.protocol, t.servers[0].1), (Protocol::Resp, 7000));
        assert_eq!(t.login.db, 3);
        assert_eq!(t.login.password_env.as_deref(), Some("PW"));
        assert_eq!(t.tls.unwrap().sni, "cache.local");
        let bad = |v: Value| TargetOrder::from_value(&v, false).unwrap_err();
        assert!(
            bad(json!({"protocol": "smtp", "servers": [["h", 1]], "origin": "o"}))
                .contains("\"smtp\"")
        );
        assert!(
            bad(json!({"protocol": "resp", "servers": [["h", 0]], "origin": "o"}))
                .contains("port from 1")
        );
        assert!(
            bad(json!({"protocol": "resp", "servers": [], "origin": "o"}))
                .contains("o: names no server")
        );
    }
}

//! The protocol a step speaks: the RESP, memcached text, memcached meta and HTTP/1.1
//! encoders and parsers, picked by the protocol the order names, never by the system
//! (`order/target.rs`). A plugin whose server speaks one of these runs here unchanged.

pub mod chunked;
pub mod http;
pub mod memcache;
pub mod meta;
pub mod resp;
pub mod wire;

use crate::order::{Login, Protocol, TargetOrder};
use http::Http;
use memcache::Memcache;
use meta::Meta;
use resp::Resp;
use wire::{ParseResult, Req};

/// The protocol a step speaks.
pub enum Codec {
    Resp(Resp),
    Memcache(Memcache),
    /// memcached's meta protocol (mg, ms, md).
    Meta(Meta),
    Http(Box<Http>),
}

/// The password of a login, from the environment variable it names (never from the
/// order, so that no step order or stored run carries it).
fn password(login: &Login) -> Option<String> {
    login
        .password_env
        .as_ref()
        .and_then(|name| std::env::var(name).ok())
        .filter(|v| !v.is_empty())
}

impl Codec {
    /// The codec of the target's protocol.
    pub fn for_target(t: &TargetOrder) -> Result<Codec, String> {
        Ok(match t.protocol {
            Protocol::Resp => {
                let login = &t.login;
                Codec::Resp(Resp::new(login.username.clone(), password(login), login.db))
            }
            Protocol::MemcacheText => Codec::Memcache(Memcache),
            Protocol::MemcacheMeta => Codec::Meta(Meta),
            Protocol::Http1 => Codec::Http(Box::new(Http::from_settings(&t.http, &t.origin)?)),
        })
    }

    /// The connection's opening commands (AUTH, SELECT); how many replies they take.
    pub fn hello(&self, out: &mut Vec<u8>) -> usize {
        match self {
            Codec::Resp(r) => r.hello(out),
            _ => 0,
        }
    }

    /// A script's op again by `EVAL` (`resp::script_missing`); RESP's only.
    pub fn by_eval(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        token: &[u8],
    ) {
        if let Codec::Resp(r) = self {
            r.by_eval(out, req, key, value, ttl, token);
        }
    }

    /// Whether `req` runs a script (RESP's append, prepend, incr, decr, touch, cas).
    pub fn runs_script(&self, req: Req) -> bool {
        matches!(self, Codec::Resp(_)) && resp::script_of(req).is_some()
    }

    /// SCRIPT LOAD of every script; how many replies they take (none but RESP's).
    pub fn load_scripts(&self, out: &mut Vec<u8>) -> usize {
        match self {
            Codec::Resp(_) => resp::load_scripts(out),
            _ => 0,
        }
    }

    /// Whether an error reply to `req` asks for its script by `EVAL` (RESP's NOSCRIPT).
    pub fn script_missing(&self, req: Req, message: &str) -> bool {
        matches!(self, Codec::Resp(_)) && resp::script_missing(req, message)
    }

    /// Encode one request; false when it cannot be sent (an HTTP delete without template,
    /// a conditional write other than add and replace, or a gets, over HTTP). `token` is a cas's token (empty: none).
    pub fn encode(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        token: &[u8],
    ) -> bool {
        if req.conditional() || req == Req::Gets {
            match self {
                Codec::Resp(r) => r.conditional(out, req, key, value, ttl, token),
                Codec::Memcache(m) => m.conditional(out, req, key, value, ttl, token),
                Codec::Meta(m) => m.conditional(out, req, key, value, ttl, token),
                Codec::Http(h) => return h.conditional(out, req, key, value, ttl),
            }
            return true;
        }
        match (self, req) {
            (Codec::Resp(r), Req::Get) => r.get(out, key),
            (Codec::Resp(r), Req::Set) => r.set(out, key, value, ttl),
            (Codec::Resp(r), Req::Delete) => r.delete(out, key),
            (Codec::Memcache(m), Req::Get) => m.get(out, key),
            (Codec::Memcache(m), Req::Set) => m.set(out, key, value, ttl),
            (Codec::Memcache(m), Req::Delete) => m.delete(out, key),
            (Codec::Meta(m), Req::Get) => m.get(out, key),
            (Codec::Meta(m), Req::Set) => m.set(out, key, value, ttl),
            (Codec::Meta(m), Req::Delete) => m.delete(out, key),
            (Codec::Http(h), Req::Get) => h.get(out, key),
            (Codec::Http(h), Req::Set) => h.set(out, key, value, ttl),
            (Codec::Http(h), Req::Delete) => return h.delete(out, key),
            (Codec::Resp(r), Req::Publish) => r.publish(out, key, value),
            // Pub/sub is RESP's: counted as unsupported, never sent.
            (_, Req::Publish) => return false,
            (_, Req::Hello) => {}
            _ => unreachable!("a conditional write or a gets is encoded above"),
        }
        true
    }

    /// The cas token a gets hit brings: `head` is its reply up to the value's start,
    /// `value` the value (a memcached cas unique, or the value's SHA-1 over RESP).
    pub fn token(&self, head: &[u8], value: &[u8]) -> Option<Vec<u8>> {
        match self {
            Codec::Resp(_) => Some(resp::value_token(value)),
            Codec::Memcache(_) => memcache::value_line_token(head),
            Codec::Meta(_) => meta::va_line_token(head),
            Codec::Http(_) => None,
        }
    }

    #[inline]
    pub fn parse(&self, buf: &[u8], req: Req) -> ParseResult {
        match self {
            Codec::Resp(r) => r.parse(buf, req),
            Codec::Memcache(m) => m.parse(buf, req),
            Codec::Meta(m) => m.parse(buf, req),
            Codec::Http(h) => h.parse(buf, req),
        }
    }
}

//! Reading a Redis Cluster's topology off the wire: CRC16 key slots with hash tags, the
//! -MOVED/-ASK redirections an error reply carries, and the slot map a node answers to
//! CLUSTER SLOTS (a short blocking exchange after the connection's AUTH). What a step does
//! with them (node connections, parked ops, refreshes) is `mod.rs` and `run/cluster.rs`.

use crate::addr::is_loopback;
use crate::protocols::resp::command;
use crate::protocols::wire::{line_end, parse_int};
use crate::tls::TlsConfig;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

pub const SLOTS: usize = 16384;
/// CRC16-CCITT (XMODEM) of each byte value: the per-byte step of the key hash.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC16-CCITT (XMODEM), Redis Cluster's key hash (a table lookup per byte).
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[((crc >> 8) as u8 ^ b) as usize]
    })
}

/// The slot of a key: of its hash tag (the text between the first `{` and the next `}`,
/// when not empty), else of the whole key.
pub fn slot_of(key: &[u8]) -> usize {
    let mut part = key;
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                part = &key[open + 1..open + 1 + len];
            }
        }
    }
    (crc16(part) as usize) % SLOTS
}

/// A redirection read from an error reply: "MOVED 3999 127.0.0.1:6381" or "ASK ...".
#[derive(Debug, PartialEq, Eq)]
pub struct Redirect {
    pub ask: bool,
    pub slot: usize,
    pub host: String,
    pub port: u16,
}

/// The redirection an error reply's message (as `protocols/resp.rs` words it) carries, if any.
pub fn redirect_of(message: &str) -> Option<Redirect> {
    let mut words = message.split_whitespace();
    let ask = match words.next()? {
        "MOVED" => false,
        "ASK" => true,
        _ => return None,
    };
    let slot: usize = words.next()?.parse().ok()?;
    let hostport = words.next()?;
    let i = hostport.rfind(':')?;
    let port = hostport[i + 1..].parse().ok()?;
    let host = hostport[..i].trim_start_matches('[').trim_end_matches(']');
    if slot >= SLOTS {
        return None;
    }
    Some(Redirect {
        ask,
        slot,
        host: host.to_string(),
        port,
    })
}

/// A RESP value, as CLUSTER SLOTS answers.
#[derive(Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Text(Vec<u8>),
    Nil,
    Array(Vec<Value>),
    Error(String),
}

/// One complete RESP value at the start of `buf` and the bytes it took; None until complete.
pub fn value(buf: &[u8]) -> Result<Option<(Value, usize)>, String> {
    let eol = match line_end(buf, 0) {
        Some(e) => e,
        None => return Ok(None),
    };
    let line = &buf[1..eol];
    let used = eol + 2;
    let int = || parse_int(line).ok_or_else(|| "CLUSTER SLOTS: a bad number".to_string());
    match buf.first() {
        Some(b'+') => Ok(Some((Value::Text(line.to_vec()), used))),
        Some(b'-') => Ok(Some((
            Value::Error(String::from_utf8_lossy(line).into_owned()),
            used,
        ))),
        Some(b':') => Ok(Some((Value::Int(int()?), used))),
        Some(b'$') => {
            let n = int()?;
            if n < 0 {
                return Ok(Some((Value::Nil, used)));
            }
            let end = used + n as usize;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            Ok(Some((Value::Text(buf[used..end].to_vec()), end + 2)))
        }
        Some(b'*') => {
            let n = int()?;
            let mut items = Vec::new();
            let mut pos = used;
            for _ in 0..n.max(0) {
                match value(&buf[pos..])? {
                    Some((v, u)) => {
                        items.push(v);
                        pos += u;
                    }
                    None => return Ok(None),
                }
            }
            Ok(Some((Value::Array(items), pos)))
        }
        _ => Err(format!(
            "CLUSTER SLOTS: unexpected reply {:?}",
            crate::protocols::wire::show(&buf[..eol])
        )),
    }
}

/// A slot range and the address of the master that serves it (host as the node said it).
pub type Range = (usize, usize, String, u16);

/// The ranges of a CLUSTER SLOTS reply.
pub fn ranges(reply: Value) -> Result<Vec<Range>, String> {
    let bad = || "CLUSTER SLOTS: not a list of [start, end, [host, port, ...], ...]".to_string();
    let items = match reply {
        Value::Array(items) => items,
        Value::Error(e) => return Err(format!("CLUSTER SLOTS: {} (is it a cluster node?)", e)),
        _ => return Err(bad()),
    };
    let mut out = Vec::new();
    for item in items {
        let parts = match item {
            Value::Array(p) if p.len() >= 3 => p,
            _ => return Err(bad()),
        };
        let (start, end) = match (&parts[0], &parts[1]) {
            (Value::Int(a), Value::Int(b)) if *a >= 0 && *b < SLOTS as i64 && a <= b => {
                (*a as usize, *b as usize)
            }
            _ => return Err(bad()),
        };
        let (host, port) = match &parts[2] {
            Value::Array(m) if m.len() >= 2 => match (&m[0], &m[1]) {
                (Value::Text(h), Value::Int(p)) => (String::from_utf8_lossy(h).into_owned(), *p),
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        };
        out.push((start, end, host, port as u16));
    }
    Ok(out)
}

/// The address of a node as the cluster names it; an empty host is the one asked.
pub fn node_addr(
    host: &str,
    port: u16,
    asked: SocketAddr,
    allow_remote: bool,
) -> Result<SocketAddr, String> {
    if host.is_empty() || host == "?" {
        return Ok(SocketAddr::new(asked.ip(), port));
    }
    if !allow_remote && !is_loopback(host) {
        return Err(format!(
            "the cluster names node {}:{}, not a loopback address; to load a remote \
             target, set target.allow_remote = true or pass --allow-remote",
            host, port
        ));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cluster node {}:{}: {}", host, port, e))?
        .next()
        .ok_or_else(|| format!("cluster node {}:{}: no address", host, port))
}

/// Ask one node for the slot map: connect, the connection's opening commands (AUTH), then
/// CLUSTER SLOTS, blocking, each step bounded by `timeout`.
pub fn fetch(
    addr: SocketAddr,
    hello: &[u8],
    hellos: usize,
    tls: Option<&TlsConfig>,
    timeout: Duration,
) -> Result<Vec<Range>, String> {
    let why = |e: std::io::Error| format!("CLUSTER SLOTS from {}: {}", addr, e);
    let sock = TcpStream::connect_timeout(&addr, timeout).map_err(why)?;
    sock.set_read_timeout(Some(timeout)).map_err(why)?;
    sock.set_write_timeout(Some(timeout)).map_err(why)?;
    let mut out = hello.to_vec();
    command(&mut out, &[b"CLUSTER", b"SLOTS"]);
    match tls {
        Some(cfg) => {
            let conn = cfg.client()?;
            exchange(rustls::StreamOwned::new(conn, sock), &out, hellos, addr)
        }
        None => exchange(sock, &out, hellos, addr),
    }
}

pub fn exchange<S: Read + Write>(
    mut s: S,
    out: &[u8],
    hellos: usize,
    addr: SocketAddr,
) -> Result<Vec<Range>, String> {
    let why = |e: std::io::Error| format!("CLUSTER SLOTS from {}: {}", addr, e);
    s.write_all(out).map_err(why)?;
    s.flush().map_err(why)?;
    let mut inb = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let mut seen = 0;
    loop {
        while let Some((v, used)) = value(&inb)? {
            inb.drain(..used);
            seen += 1;
            if seen <= hellos {
                if let Value::Error(e) = v {
                    return Err(format!("{}: {}", addr, e));
                }
                continue;
            }
            return ranges(v);
        }
        let n = s.read(&mut chunk).map_err(why)?;
        if n == 0 {
            return Err(format!(
                "CLUSTER SLOTS from {}: the connection closed",
                addr
            ));
        }
        inb.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_those_of_the_cluster_specification() {
        // The examples of the Redis Cluster specification and redis-cli's CLUSTER KEYSLOT.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"bar"), 5061);
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        assert_eq!(slot_of(b"{user1000}.followers"), slot_of(b"user1000"));
        // An empty tag hashes the whole key; only the first braces count.
        assert_eq!(
            slot_of(b"foo{}{bar}"),
            (crc16(b"foo{}{bar}") as usize) % SLOTS
        );
        assert_eq!(slot_of(b"foo{{bar}}zap"), slot_of(b"{bar"));
        assert_eq!(slot_of(b"foo{bar}{zap}"), slot_of(b"bar"));
    }

    #[test]
    fn redirects_are_read_from_error_replies() {
        assert_eq!(
            redirect_of("MOVED 3999 127.0.0.1:6381"),
            Some(Redirect {
                ask: false,
                slot: 3999,
                host: "127.0.0.1".into(),
                port: 6381
            })
        );
        let ask = redirect_of("ASK 12 [::1]:7000").unwrap();
        assert!(ask.ask);
        assert_eq!((ask.slot, ask.host.as_str(), ask.port), (12, "::1", 7000));
        assert_eq!(redirect_of("CLUSTERDOWN The cluster is down"), None);
        assert_eq!(redirect_of("MOVED 99999 127.0.0.1:1"), None);
    }

    #[test]
    fn cluster_slots_replies_are_read_whole_or_not_at_all() {
        let reply = b"*2\r\n*3\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n\
*4\r\n:8192\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n*2\r\n$9\r\n127.0.0.1\r\n:7002\r\n";
        for cut in 0..reply.len() {
            assert_eq!(value(&reply[..cut]).unwrap(), None, "cut at {}", cut);
        }
        let (v, used) = value(reply).unwrap().unwrap();
        assert_eq!(used, reply.len());
        let r = ranges(v).unwrap();
        assert_eq!(r[0], (0, 8191, "127.0.0.1".to_string(), 7000));
        assert_eq!(r[1], (8192, 16383, String::new(), 7001));
        let asked: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        assert_eq!(
            node_addr("", 7001, asked, false).unwrap().to_string(),
            "127.0.0.1:7001"
        );
        assert!(node_addr("192.0.2.1", 7001, asked, false)
            .unwrap_err()
            .contains("not a loopback address"));
        let err = ranges(
            value(b"-ERR This instance has cluster support disabled\r\n")
                .unwrap()
                .unwrap()
                .0,
        )
        .unwrap_err();
        assert!(err.contains("is it a cluster node?"), "{}", err);
    }
}

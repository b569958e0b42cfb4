//! HTTP/1.1 with the http plugin's templates: one keep-alive connection per client, as
//! wrk; responses parsed by hand into hit, miss, done or an error counted as http-NNN.

use super::chunked::{dechunk, find};
use super::wire::{line_end, show, Outcome, ParseResult, Parsed, Reply, Req};
use crate::text::{base64, base64_decode, json_escape, percent};
use serde_json::Value;

const MAX_HEAD: usize = 64 * 1024;
/// A conditional set's precondition not met: the add or replace is not stored.
const PRECONDITION_FAILED: u16 = 412;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Key,
    Value,
    Ttl,
}

/// Literal text and placeholders, in order.
#[derive(Clone)]
struct Template {
    pieces: Vec<(String, Option<Part>)>,
}

impl Template {
    fn parse(text: &str) -> Template {
        let mut pieces = Vec::new();
        let mut rest = text;
        loop {
            let found = ["{key}", "{value}", "{ttl}"]
                .iter()
                .filter_map(|p| rest.find(p).map(|i| (i, *p)))
                .min();
            match found {
                Some((i, p)) => {
                    let part = match p {
                        "{key}" => Part::Key,
                        "{value}" => Part::Value,
                        _ => Part::Ttl,
                    };
                    pieces.push((rest[..i].to_string(), Some(part)));
                    rest = &rest[i + p.len()..];
                }
                None => {
                    pieces.push((rest.to_string(), None));
                    return Template { pieces };
                }
            }
        }
    }
}

pub struct Request {
    method: String,
    target: Template,
}

pub struct Http {
    common: String,
    get: Request,
    set: Request,
    delete: Option<Request>,
    body: Template,
    raw_body: bool,
    base64_values: bool,
    hit: Vec<u16>,
    miss: Vec<u16>,
    set_ok: Vec<u16>,
    delete_ok: Vec<u16>,
    hit_field: String,
    value_field: String,
}

fn ttl_text(ttl: Option<f64>) -> String {
    match ttl {
        None => String::new(),
        Some(t) if t.fract() == 0.0 => format!("{}", t as i64),
        Some(t) => format!("{}", t),
    }
}

fn statuses(v: &Value, name: &str) -> Result<Vec<u16>, String> {
    let list = v
        .get(name)
        .and_then(|x| x.as_array())
        .ok_or_else(|| format!("target.options.{}: expected a list", name))?;
    list.iter()
        .map(|s| {
            s.as_str()
                .map(|t| t.trim().to_string())
                .or_else(|| s.as_i64().map(|n| n.to_string()))
                .and_then(|t| t.parse::<u16>().ok())
                .ok_or_else(|| format!("target.options.{}: expected HTTP status codes", name))
        })
        .collect()
}

fn opt_str(v: &Value, name: &str) -> String {
    v.get(name)
        .and_then(|x| x.as_str())
        .unwrap_or("")
        .to_string()
}

fn request(text: &str, base_path: &str) -> Result<Request, String> {
    let t = text.trim();
    let (method, path) = match t.find(' ') {
        Some(i) => (t[..i].to_ascii_uppercase(), t[i + 1..].trim()),
        None => {
            return Err(format!(
                "expected a template such as 'GET /lookup?key={{key}}'; got {:?}",
                text
            ))
        }
    };
    if !["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"].contains(&method.as_str())
        || !path.starts_with('/')
    {
        return Err(format!(
            "expected a template such as 'GET /lookup?key={{key}}'; got {:?}",
            text
        ));
    }
    Ok(Request {
        method,
        target: Template::parse(&format!("{}{}", base_path.trim_end_matches('/'), path)),
    })
}

/// What a response's header lines say about its body and its connection.
struct Head {
    close: bool,
    length: Option<usize>,
    chunked: bool,
    is_json: bool,
}

fn head(lines: &[u8], http10: bool) -> Result<Head, String> {
    let mut h = Head {
        close: http10,
        length: None,
        chunked: false,
        is_json: false,
    };
    for line in lines.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = match line.iter().position(|&b| b == b':') {
            Some(c) => c,
            None => continue,
        };
        let name = String::from_utf8_lossy(&line[..colon])
            .trim()
            .to_ascii_lowercase();
        let value = String::from_utf8_lossy(&line[colon + 1..])
            .trim()
            .to_ascii_lowercase();
        match name.as_str() {
            "content-length" => {
                h.length = Some(
                    value
                        .parse()
                        .map_err(|_| format!("a bad Content-Length: {:?}", value))?,
                )
            }
            "transfer-encoding" => h.chunked = value.contains("chunked"),
            "content-type" => {
                h.is_json = value.split(';').next().unwrap_or("").trim() == "application/json"
            }
            "connection" => h.close = value == "close" || (h.close && value != "keep-alive"),
            _ => {}
        }
    }
    Ok(h)
}

/// The head lines every request carries: Host, then `target.options.headers`. A Host among
/// those headers stands for the URL's (as the Python strategies do): two made every request
/// a 400.
fn common_headers(o: &Value, netloc: &str) -> Result<String, String> {
    let list: &[Value] = match o.get("headers").and_then(|h| h.as_array()) {
        Some(list) => list,
        None => &[],
    };
    let names_host = |line: &Value| {
        let name = line.as_str().unwrap_or("").split(':').next().unwrap_or("");
        name.trim().eq_ignore_ascii_case("host")
    };
    let mut common = if list.iter().any(names_host) {
        String::new()
    } else {
        format!("Host: {}\r\n", netloc)
    };
    for line in list {
        let line = line.as_str().unwrap_or("");
        let mut it = line.splitn(2, ':');
        let name = it.next().unwrap_or("").trim();
        let value = it.next().ok_or_else(|| {
            format!(
                "target.options.headers: expected 'Name: value'; got {:?}",
                line
            )
        })?;
        common.push_str(&format!("{}: {}\r\n", name, value.trim()));
    }
    Ok(common)
}

impl Http {
    /// The http1 settings of a target, resolved by its plugin: the Host header
    /// (`host_header`, as the base URL spelled it), the base path every template's path is
    /// appended to (`base_path`), the templates, statuses and fields (`origin` names the
    /// option they came from).
    pub fn from_settings(o: &Value, origin: &str) -> Result<Http, String> {
        let netloc = opt_str(o, "host_header");
        if netloc.is_empty() {
            return Err(format!(
                "{}: the target has no host to name in requests",
                origin
            ));
        }
        let path = opt_str(o, "base_path");
        let path = path.as_str();
        let netloc = netloc.as_str();
        let common = common_headers(o, netloc)?;
        let delete_text = opt_str(o, "delete");
        let body_text = opt_str(o, "set_body");
        Ok(Http {
            common,
            get: request(&opt_str(o, "get"), path)?,
            set: request(&opt_str(o, "set"), path)?,
            delete: if delete_text.trim().is_empty() {
                None
            } else {
                Some(request(&delete_text, path)?)
            },
            raw_body: body_text.trim() == "{value}",
            body: Template::parse(&body_text),
            base64_values: opt_str(o, "value_encoding") == "base64",
            hit: statuses(o, "hit_status")?,
            miss: statuses(o, "miss_status")?,
            set_ok: statuses(o, "set_status")?,
            delete_ok: statuses(o, "delete_status")?,
            hit_field: opt_str(o, "hit_field"),
            value_field: opt_str(o, "value_field"),
        })
    }

    fn head(&self, out: &mut Vec<u8>, r: &Request, key: &[u8], ttl: Option<f64>) {
        out.extend_from_slice(r.method.as_bytes());
        out.push(b' ');
        for (lit, part) in &r.target.pieces {
            out.extend_from_slice(lit.as_bytes());
            match part {
                Some(Part::Key) => percent(out, key),
                Some(Part::Ttl) => percent(out, ttl_text(ttl).as_bytes()),
                _ => {}
            }
        }
        out.extend_from_slice(b" HTTP/1.1\r\n");
        out.extend_from_slice(self.common.as_bytes());
    }

    pub fn get(&self, out: &mut Vec<u8>, key: &[u8]) {
        self.head(out, &self.get, key, None);
        out.extend_from_slice(b"\r\n");
    }

    pub fn set(&self, out: &mut Vec<u8>, key: &[u8], value: &[u8], ttl: Option<f64>) {
        self.store(out, key, value, ttl, b"");
    }

    /// add or replace (`req`): the set with a precondition (RFC 9110 13.1),
    /// `If-None-Match: *` (only where there is no value) or `If-Match: *` (only where there
    /// is one); 412 Precondition Failed is not stored. False for any other kind: no HTTP
    /// request is one.
    pub fn conditional(
        &self,
        out: &mut Vec<u8>,
        req: Req,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
    ) -> bool {
        let condition: &[u8] = match req {
            Req::Add => b"If-None-Match: *\r\n",
            Req::Replace => b"If-Match: *\r\n",
            _ => return false,
        };
        self.store(out, key, value, ttl, condition);
        true
    }

    /// The set request, with `condition`'s header lines (none: empty).
    fn store(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: &[u8],
        ttl: Option<f64>,
        condition: &[u8],
    ) {
        self.head(out, &self.set, key, ttl);
        out.extend_from_slice(condition);
        let mut body = Vec::new();
        let body_ref: &[u8] = if self.raw_body {
            value
        } else {
            for (lit, part) in &self.body.pieces {
                body.extend_from_slice(lit.as_bytes());
                match part {
                    Some(Part::Key) => json_escape(&mut body, &String::from_utf8_lossy(key)),
                    Some(Part::Value) => {
                        let text: String = if self.base64_values {
                            base64(value)
                        } else {
                            value.iter().map(|&b| b as char).collect()
                        };
                        json_escape(&mut body, &text);
                    }
                    Some(Part::Ttl) => match ttl {
                        None => body.extend_from_slice(b"null"),
                        t => body.extend_from_slice(ttl_text(t).as_bytes()),
                    },
                    None => {}
                }
            }
            &body
        };
        let kind = if self.raw_body {
            "application/octet-stream"
        } else {
            "application/json"
        };
        out.extend_from_slice(
            format!(
                "Content-Type: {}\r\nContent-Length: {}\r\n\r\n",
                kind,
                body_ref.len()
            )
            .as_bytes(),
        );
        out.extend_from_slice(body_ref);
    }

    /// False when there is no delete template (the op is then an "unsupported" error).
    pub fn delete(&self, out: &mut Vec<u8>, key: &[u8]) -> bool {
        match &self.delete {
            Some(r) => {
                self.head(out, r, key, None);
                out.extend_from_slice(b"\r\n");
                true
            }
            None => false,
        }
    }

    fn method(&self, req: Req) -> &str {
        match req {
            Req::Set | Req::Add | Req::Replace => &self.set.method,
            Req::Delete => self
                .delete
                .as_ref()
                .map(|d| d.method.as_str())
                .unwrap_or("DELETE"),
            _ => &self.get.method,
        }
    }

    pub fn parse(&self, buf: &[u8], req: Req) -> ParseResult {
        let head_end = match find(buf, b"\r\n\r\n") {
            Some(e) => e,
            None => {
                if buf.len() > MAX_HEAD {
                    return Err("a response head longer than 64 KiB".into());
                }
                return Ok(None);
            }
        };
        let first = line_end(buf, 0).unwrap_or(head_end);
        let status_line = &buf[..first];
        if !status_line.starts_with(b"HTTP/1.") || status_line.len() < 12 {
            return Err(format!(
                "not an HTTP/1.x status line: {:?}",
                show(status_line)
            ));
        }
        let status: u16 = std::str::from_utf8(&status_line[9..12])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("not an HTTP/1.x status line: {:?}", show(status_line)))?;
        let Head {
            close,
            mut length,
            mut chunked,
            is_json,
        } = head(
            &buf[first + 2..head_end],
            status_line.starts_with(b"HTTP/1.0"),
        )?;
        if self.method(req) == "HEAD"
            || status == 204
            || status == 304
            || (100..200).contains(&status)
        {
            length = Some(0);
            chunked = false;
        }
        let start = head_end + 4;
        let (body, used): (Vec<u8>, usize) = if chunked {
            match dechunk(buf, start)? {
                Some(x) => x,
                None => return Ok(None),
            }
        } else {
            match length {
                Some(n) => {
                    if buf.len() < start + n {
                        return Ok(None);
                    }
                    (Vec::new(), start + n)
                }
                None => return Err("a response without Content-Length or chunked encoding".into()),
            }
        };
        let body_ref: &[u8] = if chunked { &body } else { &buf[start..used] };
        let reply = self.meaning(req, status, is_json, body_ref, start, used, chunked)?;
        Ok(Some(Parsed { reply, used, close }))
    }

    #[allow(clippy::too_many_arguments)]
    fn meaning(
        &self,
        req: Req,
        status: u16,
        is_json: bool,
        body: &[u8],
        start: usize,
        end: usize,
        owned: bool,
    ) -> Result<Reply, String> {
        let fail = || {
            let snippet: String =
                String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
            Reply::Failed(
                format!("http-{}", status),
                format!("{} request: {} {}", self.method(req), status, snippet),
            )
        };
        Ok(match req {
            Req::Get => {
                if self.hit.contains(&status) {
                    if !is_json || self.value_field.is_empty() {
                        if !self.hit_field.is_empty() {
                            Reply::Miss
                        } else if owned {
                            Reply::Hit {
                                start: 0,
                                end: 0,
                                decoded: Some(body.to_vec()),
                            }
                        } else {
                            Reply::Hit {
                                start,
                                end,
                                decoded: None,
                            }
                        }
                    } else {
                        self.json_hit(body)?
                    }
                } else if self.miss.contains(&status) {
                    Reply::Miss
                } else {
                    fail()
                }
            }
            Req::Set | Req::Hello | Req::Publish => {
                if self.set_ok.contains(&status) {
                    Reply::Done
                } else {
                    fail()
                }
            }
            Req::Add | Req::Replace => {
                if status == PRECONDITION_FAILED {
                    Reply::Outcome(Outcome::NotStored)
                } else if self.set_ok.contains(&status) {
                    Reply::Outcome(Outcome::Stored)
                } else {
                    fail()
                }
            }
            Req::Delete => {
                if self.delete_ok.contains(&status) {
                    Reply::Deleted(true)
                } else if self.miss.contains(&status) {
                    Reply::Deleted(false)
                } else {
                    fail()
                }
            }
            // Never sent: `Codec::encode` refuses the other kinds over HTTP.
            _ => return Err(format!("no HTTP request is a {:?}", req)),
        })
    }

    fn json_hit(&self, body: &[u8]) -> Result<Reply, String> {
        let data: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Reply::Failed(
                    "protocol".into(),
                    format!("a hit whose body is not JSON: {}", e),
                ))
            }
        };
        let obj = match data.as_object() {
            Some(o) => o,
            None => {
                return Ok(Reply::Failed(
                    "protocol".into(),
                    "a hit whose JSON body is not an object".into(),
                ))
            }
        };
        if !self.hit_field.is_empty() {
            let truthy = match obj.get(&self.hit_field) {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                Some(Value::String(s)) => !s.is_empty(),
                _ => true,
            };
            if !truthy {
                return Ok(Reply::Miss);
            }
        }
        let decoded = match obj.get(&self.value_field) {
            None | Some(Value::Null) => return Ok(Reply::Miss),
            Some(Value::String(s)) => {
                if self.base64_values {
                    match base64_decode(s) {
                        Some(b) => b,
                        None => {
                            return Ok(Reply::Failed(
                                "protocol".into(),
                                "a value that is not base64".into(),
                            ))
                        }
                    }
                } else if s.chars().all(|c| (c as u32) < 256) {
                    s.chars().map(|c| c as u32 as u8).collect()
                } else {
                    s.clone().into_bytes()
                }
            }
            Some(other) => other.to_string().into_bytes(),
        };
        Ok(Reply::Hit {
            start: 0,
            end: 0,
            decoded: Some(decoded),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Http {
        Http::from_settings(&config_options(), "target.options.base_url").unwrap()
    }

    fn config_options() -> Value {
        serde_json::json!({
            "host_header": "127.0.0.1:8080", "base_path": "/api",
            "get": "GET /lookup?key={key}",
            "set": "POST /",
            "set_body": "{\"key\": \"{key}\", \"value\": \"{value}\", \"ttl\": {ttl}}",
            "delete": "",
            "value_encoding": "latin-1",
            "hit_status": ["200"], "miss_status": ["404"], "set_status": ["200", "201", "204"],
            "delete_status": ["200"], "hit_field": "", "value_field": "value", "headers": [],
        })
    }

    #[test]
    fn a_target_without_a_host_header_is_refused() {
        let mut o = config_options();
        o["host_header"] = "".into();
        let e = Http::from_settings(&o, "target.options.base_url")
            .err()
            .unwrap();
        assert!(e.starts_with("target.options.base_url:"), "{}", e);
    }

    #[test]
    fn a_host_header_given_stands_for_the_urls() {
        let mut o = config_options();
        o["headers"] = serde_json::json!(["host: cache.example", "X-A: 1"]);
        let h = Http::from_settings(&o, "target.options.base_url").unwrap();
        let mut out = Vec::new();
        h.get(&mut out, b"k");
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("ost: ").count(), 1, "{}", text);
        assert!(
            text.contains("\r\nhost: cache.example\r\nX-A: 1\r\n"),
            "{}",
            text
        );
    }

    #[test]
    fn requests_follow_the_templates() {
        let h = config();
        let mut out = Vec::new();
        h.get(&mut out, b"a b/c");
        assert!(out.starts_with(
            b"GET /api/lookup?key=a%20b%2Fc HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        ));
        out.clear();
        h.set(&mut out, b"k", &[b'"', 0xe9], None);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with("{\"key\": \"k\", \"value\": \"\\\"\u{e9}\", \"ttl\": null}"),
            "{}",
            text
        );
        assert!(!h.delete(&mut Vec::new(), b"k"));
        let mut out = Vec::new();
        assert!(h.conditional(&mut out, Req::Add, b"k", b"v", None));
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("\r\nIf-None-Match: *\r\nContent-Type: "),
            "{}",
            text
        );
        assert!(!h.conditional(&mut Vec::new(), Req::Cas, b"k", b"v", None));
        let refused = b"HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n";
        let p = h.parse(refused, Req::Replace).unwrap().unwrap();
        assert_eq!(p.reply, Reply::Outcome(Outcome::NotStored));
        let done = b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
        let p = h.parse(done, Req::Add).unwrap().unwrap();
        assert_eq!(p.reply, Reply::Outcome(Outcome::Stored));
    }

    #[test]
    fn responses_mean_hit_miss_or_error() {
        let h = config();
        let hit = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"value\":\"\xc3\xa9x\"}";
        let p = h.parse(hit, Req::Get).unwrap().unwrap();
        assert_eq!(
            p.reply,
            Reply::Hit {
                start: 0,
                end: 0,
                decoded: Some(vec![0xe9, b'x'])
            }
        );
        let miss = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(h.parse(miss, Req::Get).unwrap().unwrap().reply, Reply::Miss);
        let chunked = b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let p = h.parse(chunked, Req::Get).unwrap().unwrap();
        assert!(p.close);
        assert!(matches!(p.reply, Reply::Failed(ref k, _) if k == "http-500"));
        assert!(h.parse(&chunked[..40], Req::Get).unwrap().is_none());
    }
}

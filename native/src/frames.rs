//! The worker's side of the frames: orders in on stdin, reports out on a private stdout.
//! Each frame is a 4-byte big-endian length, then a UTF-8 JSON object (`engine/wire.py`).

use crate::workload::{self, Dist, SpecError};
use serde_json::Value;
use std::io::Write;

pub const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Frames written whole to one file descriptor.
pub struct Out {
    file: std::fs::File,
}

impl Out {
    /// Keeps the real stdout for frames and points fd 1 at stderr, so that nothing
    /// printed by accident lands among the frames.
    pub fn private_stdout() -> Out {
        use std::os::unix::io::FromRawFd;
        // SAFETY: plain descriptor calls on this process's own stdout and stderr.
        unsafe {
            let fd = libc::dup(1);
            libc::dup2(2, 1);
            Out {
                file: std::fs::File::from_raw_fd(fd),
            }
        }
    }

    pub fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("a frame is JSON");
        let mut frame = Vec::with_capacity(body.len() + 4);
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(&body);
        if self.file.write_all(&frame).is_err() {
            // The coordinator is gone: nobody is left to report to.
            std::process::exit(3);
        }
    }
}

/// Collects bytes from stdin and cuts them into frames.
#[derive(Default)]
pub struct In {
    buf: Vec<u8>,
}

impl In {
    pub fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    pub fn next(&mut self) -> Result<Option<Value>, String> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let size =
            u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
        if size > MAX_FRAME {
            return Err(format!(
                "frame of {} bytes is larger than {}",
                size, MAX_FRAME
            ));
        }
        if self.buf.len() < 4 + size {
            return Ok(None);
        }
        let value = serde_json::from_slice(&self.buf[4..4 + size])
            .map_err(|e| format!("unreadable frame: {}", e));
        self.buf.drain(..4 + size);
        value.map(Some)
    }
}

/// A group of clients with their own mix.
#[derive(Clone, Debug)]
pub struct Group {
    pub mix: Vec<(u8, f64)>,
    pub concurrency: usize,
}

/// Everything of the "step" order this engine uses.
#[derive(Clone, Debug)]
pub struct StepOrder {
    pub system: String,
    pub system_options: Value,
    pub strategy_options: Value,
    pub worker: usize,
    pub workers: usize,
    pub groups: Vec<Group>,
    pub keys: u64,
    pub key_prefix: String,
    pub key_length: usize,
    pub key_distribution: Dist,
    pub value_size: Dist,
    pub ttl: Dist,
    pub prefill: bool,
    pub duration: Option<f64>,
    pub ops: Option<u64>,
    pub warmup: f64,
    pub warmup_ops: Option<u64>,
    pub interval: f64,
    pub rate: Option<f64>,
    pub seed: i64,
}

fn field<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .fold(v, |v, k| v.get(k).unwrap_or(&Value::Null))
}

fn mix(v: &Value, where_: &str) -> Result<Vec<(u8, f64)>, SpecError> {
    let obj = v
        .as_object()
        .ok_or_else(|| SpecError(format!("{}: expected a table of op weights", where_)))?;
    let mut out = Vec::new();
    for (name, w) in obj {
        let code = workload::op_code(name)
            .ok_or_else(|| SpecError(format!("{}.{}: unknown operation", where_, name)))?;
        let w = w.as_f64().unwrap_or(0.0);
        if w > 0.0 {
            out.push((code, w));
        }
    }
    if out.is_empty() {
        return Err(SpecError(format!(
            "{}: expected at least one operation with a positive weight",
            where_
        )));
    }
    Ok(out)
}

fn opt_u64(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_f64().map(|f| f as u64))
}

impl StepOrder {
    pub fn from_frame(order: &Value) -> Result<StepOrder, SpecError> {
        let spec = &order["spec"];
        let wl = &spec["workload"];
        let load = &spec["load"];
        let concurrency = opt_u64(&load["concurrency"]).unwrap_or(16) as usize;
        let mut groups = Vec::new();
        if let Some(list) = wl["groups"].as_array() {
            for (i, g) in list.iter().enumerate() {
                groups.push(Group {
                    mix: mix(&g["mix"], &format!("workload.groups[{}].mix", i))?,
                    concurrency: opt_u64(&g["concurrency"]).unwrap_or(1) as usize,
                });
            }
        }
        if groups.is_empty() {
            groups.push(Group {
                mix: mix(&wl["mix"], "workload.mix")?,
                concurrency,
            });
        }
        let text = |v: &Value, default: &str| {
            v.as_str()
                .map(|s| s.to_string())
                .unwrap_or_else(|| match v {
                    Value::Number(n) => n.to_string(),
                    _ => default.to_string(),
                })
        };
        Ok(StepOrder {
            system: field(spec, "target.system")
                .as_str()
                .unwrap_or("")
                .to_string(),
            system_options: order["system_options"].clone(),
            strategy_options: order["strategy_options"].clone(),
            worker: opt_u64(&order["worker"]).unwrap_or(0) as usize,
            workers: std::cmp::max(1, opt_u64(&order["workers"]).unwrap_or(1) as usize),
            groups,
            keys: std::cmp::max(1, opt_u64(&wl["keys"]).unwrap_or(10_000)),
            key_prefix: wl["key_prefix"].as_str().unwrap_or("wb:").to_string(),
            key_length: opt_u64(&wl["key_length"]).unwrap_or(12) as usize,
            key_distribution: workload::parse_key_distribution(&text(
                &wl["key_distribution"],
                "uniform",
            ))?,
            value_size: workload::parse_value_size(&text(&wl["value_size"], "fixed(100)"))?,
            ttl: workload::parse_ttl(&text(&wl["ttl"], "none"))?,
            prefill: wl["prefill"].as_bool().unwrap_or(false),
            duration: load["duration"].as_f64(),
            ops: opt_u64(&load["ops"]),
            warmup: load["warmup"].as_f64().unwrap_or(0.0),
            warmup_ops: opt_u64(&load["warmup_ops"]),
            interval: load["interval"].as_f64().unwrap_or(1.0),
            rate: load["rate"].as_f64(),
            seed: spec["seed"].as_i64().unwrap_or(1),
        })
    }

    pub fn total_clients(&self) -> usize {
        self.groups.iter().map(|g| g.concurrency).sum()
    }

    pub fn option_u64(&self, name: &str, default: u64) -> u64 {
        opt_u64(&self.strategy_options[name]).unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_from_a_byte_stream() {
        let mut input = In::default();
        let body = br#"{"type":"go","start":1.5}"#;
        let mut bytes = (body.len() as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(body);
        input.feed(&bytes[..7]);
        assert!(input.next().unwrap().is_none());
        input.feed(&bytes[7..]);
        assert_eq!(input.next().unwrap().unwrap()["start"], 1.5);
    }
}

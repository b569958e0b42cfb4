//! The watched processes (the managed server, the workers), read from /proc: which CPU
//! each was on (a hiccup on a CPU none of them used did not delay the load), and how long
//! each waited for a CPU while it could run (the scheduler's run-queue delay: a CPU the
//! machine gave to something else; a stopped process does not wait, it is not runnable).
//! The coordinator names them in `watch` orders on stdin, with the run's other processes
//! of its own (itself: `own`), whose CPU time is the load's and not the machine's
//! (`own.rs`); stdin's end stops the meter.

use super::own::Ours;
use crate::frames::In;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The processes watched, by name ("server", "worker 0"), each with its pid; and each
/// one's run-queue delay when last sampled; and the run's own processes (these and the
/// coordinator).
#[derive(Clone, Default)]
pub struct Watched(
    Arc<Mutex<Vec<(String, i32)>>>,
    Arc<Mutex<HashMap<i32, u64>>>,
    pub Ours,
);

impl Watched {
    /// Watch `pids`; the run's own processes are they and `also` (by name too).
    pub fn set(&self, pids: Vec<(String, i32)>, also: Vec<(String, i32)>) {
        let own = pids
            .iter()
            .chain(&also)
            .map(|(n, pid)| (*pid, n.clone()))
            .collect();
        *self.0.lock().expect("the watch list") = pids;
        self.2.set(own);
    }

    fn list(&self) -> Vec<(String, i32)> {
        self.0.lock().expect("the watch list").clone()
    }

    /// Each watched process still running: its CPU now, and the ns it waited for a CPU
    /// since the last call (0 at its first).
    pub fn waits(&self) -> Vec<(String, usize, u64)> {
        let mut last = self.1.lock().expect("the run-queue delays");
        let mut out = Vec::new();
        for (name, pid) in self.list() {
            let (cpu, delay) = match (processor(pid), run_delay(pid)) {
                (Some(cpu), Some(delay)) => (cpu, delay),
                _ => continue,
            };
            let before = last.insert(pid, delay).unwrap_or(delay);
            out.push((name, cpu, delay.saturating_sub(before)));
        }
        out
    }

    /// The watched processes whose main thread last ran, or waits to run, on `cpu`.
    pub fn on_cpu(&self, cpu: usize) -> Vec<String> {
        self.list()
            .into_iter()
            .filter(|(_, pid)| processor(*pid) == Some(cpu))
            .map(|(name, _)| name)
            .collect()
    }
}

/// The ns a process's main thread has waited on a run queue (the second figure of
/// /proc/PID/schedstat).
pub fn run_delay(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{}/schedstat", pid)).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU a process's main thread last ran on: field 39 of /proc/PID/stat (the 37th
/// after the command name, which may hold spaces and parentheses).
pub fn processor(pid: i32) -> Option<usize> {
    let text = std::fs::read_to_string(format!("/proc/{}/stat", pid)).ok()?;
    let (_, fields) = text.rsplit_once(')')?;
    fields.split_whitespace().nth(36)?.parse().ok()
}

/// The watched processes by name, and the run's other processes of its own, by name.
pub type Orders = (Vec<(String, i32)>, Vec<(String, i32)>);

/// A watch list and the run's other processes from a
/// `{"type":"watch","pids":{"server":123,...},"own":{"coordinator":456}}` frame.
pub fn watch_list(frame: &Value) -> Option<Orders> {
    if frame["type"] != "watch" {
        return None;
    }
    let named = |v: &Value| -> Vec<(String, i32)> {
        v.as_object().map_or(vec![], |pids| {
            pids.iter()
                .filter_map(|(name, pid)| Some((name.clone(), pid.as_i64()? as i32)))
                .collect()
        })
    };
    frame["pids"].as_object()?;
    Some((named(&frame["pids"]), named(&frame["own"])))
}

/// Read orders from stdin on a thread of its own; at its end, `stop`.
pub fn read_orders(watched: Watched, stop: Arc<AtomicBool>) {
    std::thread::Builder::new()
        .name("hiccup-orders".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let mut input = In::default();
            let mut buf = [0u8; 4096];
            let mut stdin = std::io::stdin();
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => input.feed(&buf[..n]),
                }
                while let Ok(Some(frame)) = input.next() {
                    if let Some((list, also)) = watch_list(&frame) {
                        watched.set(list, also);
                    }
                }
            }
            stop.store(true, Ordering::Relaxed);
        })
        .expect("start the meter's order reader");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn this_process_is_on_the_cpu_it_runs_on() {
        let me = std::process::id() as i32;
        assert!(processor(me).is_some());
        assert_eq!(processor(-1), None);
    }

    #[test]
    fn a_watch_frame_names_the_processes() {
        let frame = json!({"type": "watch", "pids": {"server": 12, "worker 0": 34}});
        let (mut list, also) = watch_list(&frame).expect("a watch list");
        list.sort();
        assert_eq!(
            list,
            vec![("server".to_string(), 12), ("worker 0".to_string(), 34)]
        );
        assert!(also.is_empty());
        let frame = json!({"type": "watch", "pids": {}, "own": {"coordinator": 56}});
        let own = vec![("coordinator".to_string(), 56)];
        assert_eq!(watch_list(&frame), Some((vec![], own)));
        assert_eq!(watch_list(&json!({"type": "go"})), None);
    }

    #[test]
    fn a_watched_process_is_sampled_with_its_cpu_and_its_waits() {
        let w = Watched::default();
        w.set(
            vec![
                ("me".into(), std::process::id() as i32),
                ("gone".into(), -1),
            ],
            vec![],
        );
        let seen = w.waits();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, "me");
        assert_eq!(seen[0].2, 0); // the first sample counts from itself
        assert!(run_delay(std::process::id() as i32).is_some());
    }
}

//! `workbench-native --hiccup`: the load machine's hiccup meter, a process of its own.
//!
//! One thread per CPU this process may run on, each pinned to its CPU at normal priority,
//! sleeps a fixed tick (1 ms by default) and records how late it wakes (jHiccup's
//! method). A CPU taken from everyone for 30 ms (a kernel thread, another VM on the host,
//! a real-time task) shows as a wake-up 30 ms late on that CPU, whatever the load does.
//!
//! Why a process of its own, one per machine, and not a thread in each worker: the
//! workers' figures must not pay for it (no code on their load path), a Python worker's
//! waits for its GIL are not the machine's, and one meter serves both engines and every
//! worker on the machine. The coordinator starts it on each load machine and reads its
//! frames (workbench/engine/hiccup_meter.py); this process writes, every slice (50 ms),
//! the lateness of every CPU's wake-ups, the hiccups over the threshold with their start
//! and length, on which CPU each watched process (the managed server, the workers) was
//! seen, and whether the run's own processes held the CPU through each hiccup (own.rs).
//! docs/frames.md ("The hiccup meter") is the protocol.

mod own;
mod settings;
mod slice;
mod tick;
mod watch;

use crate::frames::Out;
use serde_json::json;
use settings::settings;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Run the meter until stdin closes (the coordinator is done) or the parent dies.
pub fn run(args: &[String], version: &str) -> i32 {
    let settings = match settings(args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("workbench-native --hiccup: {}", e);
            return 2;
        }
    };
    crate::os::parent::die_with_parent();
    let mut out = Out::private_stdout();
    let cpus = tick::allowed_cpus();
    let watched = watch::Watched::default();
    let stop = Arc::new(AtomicBool::new(false));
    let meters: Vec<Arc<tick::Cpu>> = cpus.iter().map(|&c| Arc::new(tick::Cpu::new(c))).collect();
    for cpu in &meters {
        tick::start(cpu.clone(), settings, watched.clone(), stop.clone());
    }
    watch::read_orders(watched.clone(), stop.clone());
    out.send(&json!({
        "type": "ready",
        "pid": std::process::id(),
        "meter": "native",
        "version": version,
        "cpus": cpus,
        "tick_ns": settings.tick_ns,
        "threshold_ns": settings.threshold_ns,
        "slice_ns": settings.slice_ns,
    }));
    let mut start = slice::wall_ns();
    while !stop.load(Ordering::Relaxed) {
        slice::sleep_to_next(settings.slice_ns);
        let end = slice::wall_ns();
        let frame = slice::frame(&meters, &watched, settings, (start, end));
        out.send(&frame);
        watched.2.read(&cpus);
        start = end;
    }
    0
}

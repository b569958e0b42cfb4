//! Who held a CPU while its meter thread waited: the run's own processes (the coordinator,
//! the workers, the managed server), or something else.
//!
//! On a machine the load itself fills, a meter thread woken while one of our processes
//! runs on its CPU waits for the end of that process's slice: a late wake-up that is the
//! load's own CPU sharing, not a stall the machine imposed (the cost of it to the server
//! is its own wait for a CPU, which `watch` reads apart). So at each hiccup (never per
//! tick: the meter's cost stays one timer sleep per tick) the meter reads how long each
//! thread of ours last seen on that CPU ran since the CPU's previous reading, through
//! file descriptors kept open (a pread of /proc/PID/task/TID/schedstat and stat). The
//! slice writer takes the reading every slice, so a hiccup is judged over at most a slice
//! and its own length. The hiccup is our own when our threads ran at least `OWN_SHARE` of
//! it (or of the time since the reading, when that is shorter).

use crate::pacing::now_ns;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

/// The share of a hiccup our processes must have run on its CPU for it to be our own.
pub const OWN_SHARE: f64 = 0.5;
/// Slices between re-listings of our processes' threads (threads come and go rarely: a
/// new one is read from its first listing, and counts from there).
const RELIST_SLICES: u32 = 20;

/// One thread of ours, its /proc files kept open.
struct Thread {
    schedstat: File,
    stat: File,
}

impl Thread {
    fn open(pid: i32, tid: i32) -> Option<Thread> {
        let dir = format!("/proc/{}/task/{}", pid, tid);
        Some(Thread {
            schedstat: File::open(format!("{}/schedstat", dir)).ok()?,
            stat: File::open(format!("{}/stat", dir)).ok()?,
        })
    }

    /// The ns this thread has run (the first figure of its schedstat).
    fn run_ns(&self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.schedstat.read_at(&mut buf, 0).ok()?;
        std::str::from_utf8(&buf[..n])
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// The CPU it last ran on (field 39 of its stat, the 37th after the command name).
    fn cpu(&self) -> Option<usize> {
        let mut buf = [0u8; 1024];
        let n = self.stat.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let (_, fields) = text.rsplit_once(')')?;
        fields.split_whitespace().nth(36)?.parse().ok()
    }
}

/// A reading: when (monotonic ns), and each thread's run time then.
type Reading = (u64, HashMap<i32, u64>);

#[derive(Default)]
struct State {
    pids: Vec<i32>,
    threads: HashMap<i32, Thread>,
    /// Per CPU, its last two readings, newest first: the slice writer's may fall inside a
    /// hiccup (even after its end, before the meter thread judged it), and a hiccup is
    /// judged from the newest reading before it began.
    readings: HashMap<usize, Vec<Reading>>,
    slices: u32,
}

impl State {
    fn relist(&mut self) {
        let mut kept = HashMap::new();
        for &pid in &self.pids {
            let Ok(dir) = std::fs::read_dir(format!("/proc/{}/task", pid)) else {
                continue;
            };
            for entry in dir.flatten() {
                let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                    continue;
                };
                if let Some(t) = self.threads.remove(&tid).or_else(|| Thread::open(pid, tid)) {
                    kept.insert(tid, t);
                }
            }
        }
        self.threads = kept;
    }

    fn keep(&mut self, cpu: usize, reading: Reading) {
        let kept = self.readings.entry(cpu).or_default();
        kept.insert(0, reading);
        kept.truncate(2);
    }

    fn runs(&self) -> HashMap<i32, u64> {
        self.threads
            .iter()
            .filter_map(|(&tid, t)| Some((tid, t.run_ns()?)))
            .collect()
    }
}

/// The run's own processes, as the meter threads and the slice writer share them.
#[derive(Clone, Default)]
pub struct Ours(Arc<Mutex<State>>);

impl Ours {
    /// Our processes from now on (their threads listed at once).
    pub fn set(&self, mut pids: Vec<i32>) {
        pids.sort_unstable();
        pids.dedup();
        let mut s = self.0.lock().expect("our processes");
        if s.pids == pids {
            return;
        }
        s.pids = pids;
        s.relist();
        s.readings.clear();
    }

    /// The slice writer's reading, for every CPU in `cpus`: where the next hiccup's run
    /// time counts from. Nothing to read (no process of ours): nothing done.
    pub fn read(&self, cpus: &[usize]) {
        let mut s = self.0.lock().expect("our processes");
        if s.pids.is_empty() {
            return;
        }
        s.slices += 1;
        if s.slices >= RELIST_SLICES {
            s.slices = 0;
            s.relist();
        }
        let at = now_ns();
        let runs = s.runs();
        for &cpu in cpus {
            s.keep(cpu, (at, runs.clone()));
        }
    }

    /// Whether the hiccup of `late` ns that ended `woke` (monotonic ns) on `cpu` was our
    /// own: our threads last seen on `cpu` ran at least `OWN_SHARE` of it (or of the time
    /// since `cpu`'s reading, when that began within it). `cpu` is read again now.
    pub fn held(&self, cpu: usize, late: u64, woke: u64) -> bool {
        let mut s = self.0.lock().expect("our processes");
        if s.pids.is_empty() {
            return false;
        }
        let runs = s.runs();
        let here: Vec<i32> = s
            .threads
            .iter()
            .filter(|(_, t)| t.cpu() == Some(cpu))
            .map(|(&tid, _)| tid)
            .collect();
        let began = woke.saturating_sub(late);
        let kept = s.readings.get(&cpu).map_or(&[][..], |r| &r[..]);
        let from = kept.iter().find(|(at, _)| *at <= began).or(kept.last());
        let judged = from.map(|(at, then)| {
            let ran: u64 = here
                .iter()
                .filter_map(|tid| Some(runs.get(tid)?.saturating_sub(*then.get(tid)?)))
                .sum();
            let span = late.min(woke.saturating_sub(*at));
            span > 0 && ran as f64 >= OWN_SHARE * span as f64
        });
        s.keep(cpu, (now_ns(), runs));
        judged.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn on_cpu() -> usize {
        // SAFETY: asks the CPU the calling thread runs on.
        unsafe { libc::sched_getcpu() as usize }
    }

    #[test]
    fn nothing_of_ours_holds_nothing() {
        let ours = Ours::default();
        ours.read(&[0]);
        assert!(!ours.held(0, 2_000_000, now_ns()));
    }

    #[test]
    fn a_busy_thread_of_ours_on_the_cpu_held_it() {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, (tx, rx)) = (stop.clone(), std::sync::mpsc::channel());
        let busy = std::thread::spawn(move || {
            tx.send(on_cpu()).expect("say the CPU");
            while !flag.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        let _ = rx.recv();
        let ours = Ours::default();
        ours.set(vec![std::process::id() as i32]);
        let cpus: Vec<usize> = super::super::tick::allowed_cpus();
        ours.read(&cpus);
        let start = now_ns();
        while now_ns() - start < 30_000_000 {
            std::hint::spin_loop(); // this thread too is ours
        }
        let woke = now_ns();
        // Our two busy threads ran on whichever CPUs the whole time: on one of them at least,
        // they held a 10 ms hiccup; a process not ours held none.
        let held = cpus.iter().any(|&c| ours.held(c, 10_000_000, woke));
        stop.store(true, Ordering::Relaxed);
        busy.join().expect("the busy thread");
        assert!(held);
        let mut asleep = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("start sleep");
        let others = Ours::default();
        others.set(vec![asleep.id() as i32]);
        others.read(&cpus);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let held = cpus.iter().any(|&c| others.held(c, 10_000_000, now_ns()));
        let _ = asleep.kill();
        let _ = asleep.wait();
        assert!(!held);
    }
}

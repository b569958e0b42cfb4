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
//! it (or of the time since the reading, when that is shorter) and at least `OWN_BUSY` of
//! the time since the reading; it is named by the process of ours that ran longest there
//! (a hiccup the server held explains no wait: the server ran through it).

use crate::pacing::now_ns;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

/// The share of a hiccup our processes must have run on its CPU for it to be our own.
pub const OWN_SHARE: f64 = 0.5;
/// The share of the time since the CPU's reading our processes must have run on it too:
/// the reading may be a slice older than the hiccup, and what they ran before it also
/// counts, so a light load (a worker polling a few % of a CPU) would otherwise cover a
/// short hiccup something else caused. A load that holds a CPU a quarter of the time or
/// more is one a woken thread waits behind; a server spinning through the hiccup holds it
/// most of a slice and its hiccup.
pub const OWN_BUSY: f64 = 0.25;
/// Slices between re-listings of our processes' threads (threads come and go rarely: a
/// new one is read from its first listing, and counts from there).
const RELIST_SLICES: u32 = 20;

/// One thread of ours, its /proc files kept open, and the process it belongs to.
struct Thread {
    pid: i32,
    schedstat: File,
    stat: File,
}

impl Thread {
    fn open(pid: i32, tid: i32) -> Option<Thread> {
        let dir = format!("/proc/{}/task/{}", pid, tid);
        Some(Thread {
            pid,
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
    /// Our processes by pid, each with its name ("server", "worker 0", "coordinator").
    pids: Vec<(i32, String)>,
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
        for &(pid, _) in &self.pids {
            // No let-else: the crate builds with rustc 1.63 (Debian's), which lacks it.
            let dir = match std::fs::read_dir(format!("/proc/{}/task", pid)) {
                Ok(dir) => dir,
                Err(_) => continue,
            };
            for entry in dir.flatten() {
                let tid = match entry.file_name().to_str().and_then(|s| s.parse().ok()) {
                    Some(tid) => tid,
                    None => continue,
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
    /// Our processes (pid, name) from now on (their threads listed at once).
    pub fn set(&self, mut pids: Vec<(i32, String)>) {
        pids.sort_unstable();
        pids.dedup_by_key(|p| p.0);
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
    /// since `cpu`'s reading, when that began within it), and `OWN_BUSY` of the time since
    /// that reading. `cpu` is read again now.
    /// Says which of them ran longest there (by its name), or None when not our own.
    pub fn held(&self, cpu: usize, late: u64, woke: u64) -> Option<String> {
        let mut s = self.0.lock().expect("our processes");
        if s.pids.is_empty() {
            return None;
        }
        let runs = s.runs();
        let here: Vec<(i32, i32)> = s
            .threads
            .iter()
            .filter(|(_, t)| t.cpu() == Some(cpu))
            .map(|(&tid, t)| (tid, t.pid))
            .collect();
        let began = woke.saturating_sub(late);
        let kept = s.readings.get(&cpu).map_or(&[][..], |r| &r[..]);
        let from = kept.iter().find(|(at, _)| *at <= began).or(kept.last());
        let judged = from.and_then(|(at, then)| {
            let mut by_pid: HashMap<i32, u64> = HashMap::new();
            for (tid, pid) in &here {
                if let (Some(now), Some(before)) = (runs.get(tid), then.get(tid)) {
                    *by_pid.entry(*pid).or_insert(0) += now.saturating_sub(*before);
                }
            }
            let ran = by_pid.values().sum::<u64>() as f64;
            let window = woke.saturating_sub(*at);
            let span = late.min(window);
            if span == 0 || ran < OWN_SHARE * span as f64 || ran < OWN_BUSY * window as f64 {
                return None;
            }
            let (pid, _) = by_pid.into_iter().max_by_key(|&(pid, ns)| (ns, -pid))?;
            s.pids.iter().find(|p| p.0 == pid).map(|p| p.1.clone())
        });
        s.keep(cpu, (now_ns(), runs));
        judged
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
        assert_eq!(ours.held(0, 2_000_000, now_ns()), None);
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
        ours.set(vec![(std::process::id() as i32, "worker 0".into())]);
        let cpus: Vec<usize> = super::super::tick::allowed_cpus();
        ours.read(&cpus);
        let start = now_ns();
        while now_ns() - start < 30_000_000 {
            std::hint::spin_loop(); // this thread too is ours
        }
        let woke = now_ns();
        // Our two busy threads ran on whichever CPUs the whole time: on one of them at least,
        // they held a 10 ms hiccup; a process not ours held none.
        let held: Vec<_> = cpus
            .iter()
            .filter_map(|&c| ours.held(c, 10_000_000, woke))
            .collect();
        stop.store(true, Ordering::Relaxed);
        busy.join().expect("the busy thread");
        assert!(!held.is_empty());
        assert!(held.iter().all(|name| name == "worker 0"));
        let mut asleep = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("start sleep");
        let others = Ours::default();
        others.set(vec![(asleep.id() as i32, "server".into())]);
        others.read(&cpus);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let held = cpus
            .iter()
            .any(|&c| others.held(c, 10_000_000, now_ns()).is_some());
        let _ = asleep.kill();
        let _ = asleep.wait();
        assert!(!held);
    }
}

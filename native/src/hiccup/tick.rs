//! One meter thread per CPU: pinned to its CPU at normal priority, it sleeps a fixed tick
//! and records how late it woke. A normal-priority thread is woken as promptly as the
//! load's own threads are: what delays it (the CPU taken by something else) delays them.

use super::settings::Settings;
use super::watch::Watched;
use crate::pacing::now_ns;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A hiccup: a wake-up at least the threshold late.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub cpu: usize,
    /// When the thread should have woken (CLOCK_MONOTONIC, ns): the CPU was taken from
    /// then for `len` ns at least.
    pub start: u64,
    pub len: u64,
    /// The watched processes (the server, the workers) seen on this CPU when it ended.
    pub on: Vec<String>,
    /// Which of the run's own processes held the CPU for it (`own.rs`), if they did: the
    /// load's CPU sharing.
    pub own: Option<String>,
}

/// What a CPU's thread recorded since the writer last took it.
#[derive(Debug, Default)]
pub struct Taken {
    pub late: Vec<u64>,
    pub events: Vec<Event>,
}

/// One CPU's meter: its thread records into `taken`, the writer takes it every slice.
pub struct Cpu {
    pub cpu: usize,
    pub taken: Mutex<Taken>,
}

impl Cpu {
    pub fn new(cpu: usize) -> Cpu {
        Cpu {
            cpu,
            taken: Mutex::new(Taken::default()),
        }
    }

    /// What was recorded since the last call (the thread goes on into a fresh one).
    pub fn take(&self) -> Taken {
        let mut taken = self.taken.lock().expect("the meter's lock");
        std::mem::take(&mut *taken)
    }

    /// One wake-up, `late` ns after it was due at `due`.
    pub fn record(&self, due: u64, late: u64, settings: Settings, watched: &Watched) {
        let event = if late >= settings.threshold_ns {
            Some(Event {
                cpu: self.cpu,
                start: due,
                len: late,
                on: watched.on_cpu(self.cpu),
                own: watched.2.held(self.cpu, late, due + late),
            })
        } else {
            None
        };
        let mut taken = self.taken.lock().expect("the meter's lock");
        taken.late.push(late);
        if let Some(e) = event {
            taken.events.push(e);
        }
    }
}

/// The CPUs this process may run on (its affinity), in order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is an empty set; the kernel fills it for this process.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return vec![0];
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: reads one bit of the set the kernel filled.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pin the calling thread to `cpu`; false if refused (the CPU went offline).
fn pin(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET sets one bit of it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: 0 is the calling thread; the set lives across the call.
    unsafe { libc::sched_setaffinity(0, size, &set) == 0 }
}

/// Sleep `ns` on CLOCK_MONOTONIC (relative: a late wake-up does not shorten the next).
pub fn sleep_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; no remainder wanted (a signal ends the sleep early, and
    // the wake-up is then measured from the same start, never as negative).
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

/// Start `cpu`'s thread: small stack, pinned, sleeping `settings.tick_ns` at a time until
/// `stop`.
pub fn start(cpu: Arc<Cpu>, settings: Settings, watched: Watched, stop: Arc<AtomicBool>) {
    std::thread::Builder::new()
        .name(format!("hiccup-{}", cpu.cpu))
        .stack_size(64 * 1024)
        .spawn(move || {
            if !pin(cpu.cpu) {
                return;
            }
            while !stop.load(Ordering::Relaxed) {
                let slept = now_ns();
                sleep_ns(settings.tick_ns);
                let woke = now_ns();
                let due = slept + settings.tick_ns;
                cpu.record(due, woke.saturating_sub(due), settings, &watched);
            }
        })
        .expect("start a meter thread");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allowed_cpu_is_listed_once_in_order() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_late_wake_up_is_a_hiccup_with_its_start_and_length() {
        let cpu = Cpu::new(3);
        let s = Settings::default();
        cpu.record(10_000, 80_000, s, &Watched::default());
        cpu.record(20_000, 5_000_000, s, &Watched::default());
        let taken = cpu.take();
        assert_eq!(taken.late, vec![80_000, 5_000_000]);
        assert_eq!(
            taken.events,
            vec![Event {
                cpu: 3,
                start: 20_000,
                len: 5_000_000,
                on: vec![],
                own: None,
            }]
        );
        assert!(cpu.take().late.is_empty());
    }

    #[test]
    fn a_thread_pinned_to_a_cpu_runs_there() {
        let first = allowed_cpus()[0];
        std::thread::spawn(move || {
            assert!(pin(first));
            // SAFETY: asks the CPU the calling thread runs on.
            assert_eq!(unsafe { libc::sched_getcpu() }, first as i32);
        })
        .join()
        .expect("the pinned thread");
    }
}

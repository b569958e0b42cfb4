//! The clocks: CLOCK_MONOTONIC in ns (the one every worker and Python's perf_counter
//! share), the coordinator's realtime start converted once, and this process's CPU time.

#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn realtime_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The monotonic instant of a CLOCK_REALTIME start time (seconds), converted once.
pub fn mono_of_realtime(start: f64) -> u64 {
    let mono = now_ns();
    let ahead = start - realtime_s();
    if ahead <= 0.0 {
        mono
    } else {
        mono + (ahead * 1e9) as u64
    }
}

/// CPU seconds (user + system) this process has used.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct given.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        t(ru.ru_utime) + t(ru.ru_stime)
    }
}

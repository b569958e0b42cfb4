//! A precise wake-up: a timerfd armed at absolute instants of the monotonic clock.

use std::os::unix::io::RawFd;

/// A timerfd on CLOCK_MONOTONIC, armed at absolute instants; with the timer slack
/// set to 1 ns it wakes the loop within microseconds, not at 1 ms granularity.
pub struct Timer {
    pub fd: RawFd,
    armed: u64,
}

impl Timer {
    pub fn new() -> Timer {
        // SAFETY: plain system calls; the descriptor is owned by Timer.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            let fd = libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            );
            assert!(fd >= 0, "timerfd_create failed");
            Timer { fd, armed: 0 }
        }
    }

    /// Wake at `at` (monotonic ns); re-armed only when the instant changes.
    pub fn arm(&mut self, at: u64) {
        if at == self.armed {
            return;
        }
        self.armed = at;
        let at = at.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: the spec lives across the call; fd is ours.
        unsafe {
            libc::timerfd_settime(
                self.fd,
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    /// Consume an expiry so that the descriptor is quiet until armed again.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into buf.
        unsafe { libc::read(self.fd, buf.as_mut_ptr() as *mut libc::c_void, 8) };
        self.armed = 0;
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: closing our own descriptor once.
        unsafe { libc::close(self.fd) };
    }
}

//! The worker's scheduling policy while a closed loop runs: `SCHED_BATCH`.
//!
//! A reply wakes a sleeping client, and a woken task normally preempts the one running on
//! its CPU: on a machine the server shares, that is the server, in the middle of its
//! writes. Under `SCHED_BATCH` the worker keeps its fair share of the CPU but a wake-up
//! does not preempt (the kernel's `check_preempt_wakeup_fair` leaves batch tasks to the
//! tick), so the server finishes its batch of replies and the worker reads them at once.
//! memcached 1.6 at 4 clients x 16 in flight (`-t 1`, 2 cores shared with other loads,
//! median of 9 rounds): 4.91 µs of the server's CPU per GET against 5.87 without it, and
//! 147k GETs/s against 86k (memtier_benchmark 89k). A worker on a CPU of its own is not
//! woken on the server's CPU, and there nothing changes.
//!
//! Not for an open loop (a timer's wake-up must send on time), nor while subscribers
//! wait for deliveries (their latency is the figure), nor under a policy the operator
//! chose (`chrt`): only a worker under `SCHED_OTHER` switches, and it switches back
//! when the load ends.

/// The calling thread under `SCHED_BATCH` until dropped (a no-op when not wanted or
/// when the policy could not be changed).
pub struct Batch {
    switched: bool,
}

impl Batch {
    /// Switch the calling thread to `SCHED_BATCH` when `wanted` and it runs under
    /// `SCHED_OTHER`; the nice value stays.
    pub fn enter(wanted: bool) -> Batch {
        Batch {
            switched: wanted && current() == libc::SCHED_OTHER && set(libc::SCHED_BATCH),
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if self.switched {
            set(libc::SCHED_OTHER);
        }
    }
}

/// The calling thread, for good, under `SCHED_BATCH` (the reporting thread, `record/report.rs`):
/// woken at every interval, possibly on the loop's CPU, its wake-up then never preempts
/// the loop; it still gets its fair share (an idle-class thread could starve on a busy
/// machine, and every frame goes through it). Left alone under a policy the operator chose.
pub fn background() {
    if current() == libc::SCHED_OTHER {
        set(libc::SCHED_BATCH);
    }
}

/// The calling thread's scheduling policy.
fn current() -> libc::c_int {
    // SAFETY: asks the policy of the calling thread (0).
    unsafe { libc::sched_getscheduler(0) }
}

/// Set the calling thread's policy (a normal one: priority 0); false if refused.
fn set(policy: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: the param lives across the call; 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_loop_runs_batch_and_switches_back_when_it_ends() {
        // On a thread of its own: the policy is per thread, and the test harness's
        // other tests must not see it.
        std::thread::spawn(|| {
            assert_eq!(current(), libc::SCHED_OTHER);
            {
                let b = Batch::enter(true);
                assert!(b.switched);
                assert_eq!(current(), libc::SCHED_BATCH);
            }
            assert_eq!(current(), libc::SCHED_OTHER);
            let off = Batch::enter(false);
            assert!(!off.switched);
            assert_eq!(current(), libc::SCHED_OTHER);
        })
        .join()
        .expect("the policy thread");
    }

    #[test]
    fn the_reporting_thread_runs_batch_unless_the_operator_chose() {
        std::thread::spawn(|| {
            background();
            assert_eq!(current(), libc::SCHED_BATCH);
            assert!(set(libc::SCHED_IDLE));
            background();
            assert_eq!(current(), libc::SCHED_IDLE);
        })
        .join()
        .expect("the policy thread");
    }

    #[test]
    fn a_policy_the_operator_chose_is_left_alone() {
        std::thread::spawn(|| {
            assert!(set(libc::SCHED_IDLE));
            {
                let b = Batch::enter(true);
                assert!(!b.switched);
                assert_eq!(current(), libc::SCHED_IDLE);
            }
            assert_eq!(current(), libc::SCHED_IDLE);
        })
        .join()
        .expect("the policy thread");
    }
}

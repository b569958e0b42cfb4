//! Blocks of a histogram's size or more get their own mapping from glibc's malloc, so
//! that each one goes back to the kernel when it is dropped and a long run stays flat.
//!
//! Every interval makes and drops blocks of 128 KiB to a few MiB: a recorder's bucket
//! counts (4 MiB, plus 512 KiB of send-lag counts in an open loop), the interval's
//! HdrHistograms (270 KB of counts each), their zlib state and, when latencies spread
//! wide, their encodings. With a threshold of 1 MiB the smaller ones came from the heap,
//! which only shrinks from its top: after a server stall (an interval of widely spread
//! latencies) a soak run's open-loop worker kept 0.7 MB more heap for the rest of the run.
//! Mapped, a block's untouched pages cost nothing and a calloc is never cleared by hand.

/// Blocks this large or larger are mapped (the Python engine's `engine/allocator.py` uses
/// the same threshold).
pub const MAP_FROM: usize = 128 * 1024;

/// Fix glibc's mmap threshold at `MAP_FROM` (it then no longer slides up after the first
/// mapped block is freed). Called once, first thing in `main`.
pub fn map_large_blocks() {
    // SAFETY: a plain mallopt; glibc takes its own lock.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MAP_FROM as libc::c_int) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::new_histogram;

    /// Blocks glibc has mapped (each on its own), in the whole process.
    fn mapped_blocks() -> usize {
        // SAFETY: a plain mallinfo2.
        unsafe { libc::mallinfo2() }.hblks
    }

    /// In a process of its own (a fresh heap: in the test binary's threads a block may
    /// come from a free chunk another test left behind), run by the test below.
    #[test]
    #[ignore]
    fn per_interval_blocks_in_a_fresh_process() {
        map_large_blocks();
        let before = mapped_blocks();
        // An interval's histogram: hdrhistogram makes its counts as a vec of zeros.
        let counts = vec![0u64; new_histogram().distinct_values()];
        assert!(counts.len() * 8 >= MAP_FROM);
        assert_eq!(
            mapped_blocks(),
            before + 1,
            "a histogram came from the heap"
        );
        drop(counts);
        assert_eq!(mapped_blocks(), before, "a histogram's block was kept");
    }

    #[test]
    fn per_interval_blocks_are_mapped_so_they_go_back_to_the_kernel() {
        let me = std::env::current_exe().expect("the test binary");
        let done = std::process::Command::new(me)
            .args(["--ignored", "--exact", "--test-threads=1"])
            .arg("alloc::tests::per_interval_blocks_in_a_fresh_process")
            .output()
            .expect("run the test binary");
        let out = String::from_utf8_lossy(&done.stdout);
        assert!(done.status.success(), "{}", out);
        assert!(out.contains("1 passed"), "{}", out);
    }
}

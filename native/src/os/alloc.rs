//! Blocks of a histogram's size or more get their own mapping from glibc's malloc, so
//! that each one goes back to the kernel when it is dropped and a long run stays flat.
//!
//! A recorder's bucket counts (4 MiB, plus 512 KiB of send-lag counts in an open loop) are
//! a mapping of their own, cleared and used again (`record/counts.rs`), and the reporting thread
//! keeps one HdrHistogram (270 KB of counts) and one zlib state for every interval
//! (`record/report.rs`). What is still made per interval is blocks of up to a few hundred KiB when
//! latencies spread wide: the frame, a wide histogram's V2 encoding. With a threshold of
//! 1 MiB they came from the heap, which only shrinks from its top: after a server stall
//! (an interval of widely spread latencies) a soak run's open-loop worker kept 0.7 MB more
//! heap for the rest of the run. Mapped, a block's untouched pages cost nothing and a
//! calloc is never cleared by hand.

/// Blocks this large or larger are mapped (the Python engine's `engine/allocator.py` uses
/// the same threshold).
pub const MAP_FROM: usize = 128 * 1024;

/// Fix glibc's mmap threshold at `MAP_FROM` (it then no longer slides up after the first
/// mapped block is freed). Called once, first thing in `main`.
pub fn map_large_blocks() {
    // SAFETY: a plain mallopt; glibc takes its own lock.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MAP_FROM as libc::c_int) };
}

/// Give the heap's free pages back to the kernel, wherever they are (glibc's heap only
/// shrinks from its top by itself). Called once an interval has been reported: the
/// interval's smaller blocks (its frame, a wide histogram's encoding) are
/// free then, and a stall's wider interval would otherwise leave its high-water mark
/// behind small blocks that outlive it (+0.36 MB of heap in a soak run's worker).
pub fn give_back() {
    // SAFETY: a plain malloc_trim.
    unsafe { libc::malloc_trim(0) };
}

/// The resident kB of this process (0 if /proc cannot say).
#[cfg(test)]
fn resident_kb() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: a plain sysconf.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize / 1024
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::histogram::new_histogram;

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
        // A histogram: hdrhistogram makes its counts as a vec of zeros.
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

    /// Also in a process of its own (nothing else frees or allocates meanwhile).
    #[test]
    #[ignore]
    fn free_heap_pages_go_back_in_a_fresh_process() {
        map_large_blocks();
        // A wide interval's blocks (64 KiB, below the mapping threshold), each followed by
        // a small block that outlives them: the heap cannot shrink from its top.
        let mut kept = Vec::new();
        let mut wide = Vec::new();
        for i in 0..32u8 {
            wide.push(vec![i | 1; 64 * 1024]);
            kept.push(vec![i; 64]);
        }
        drop(wide);
        let before = resident_kb();
        give_back();
        let after = resident_kb();
        assert!(
            before >= 32 * 64,
            "the wide blocks were on the heap: {} kB",
            before
        );
        // Each free 64 KiB block gives back its whole pages but the one holding its chunk
        // header: 14 or 15 of 4 KiB by where the heap began (which moves with whatever the
        // test binary allocated first, its list of tests included), so 14 at least.
        assert!(
            after + 32 * 56 <= before,
            "heap {} kB -> {} kB",
            before,
            after
        );
        assert_eq!(kept.len(), 32);
    }

    fn run_alone(test: &str) {
        let me = std::env::current_exe().expect("the test binary");
        let done = std::process::Command::new(me)
            .args(["--ignored", "--exact", "--test-threads=1", test])
            .output()
            .expect("run the test binary");
        let out = String::from_utf8_lossy(&done.stdout);
        assert!(done.status.success(), "{}", out);
        assert!(out.contains("1 passed"), "{}", out);
    }

    #[test]
    fn free_heap_pages_go_back() {
        run_alone("os::alloc::tests::free_heap_pages_go_back_in_a_fresh_process");
    }

    #[test]
    fn per_interval_blocks_are_mapped_so_they_go_back_to_the_kernel() {
        run_alone("os::alloc::tests::per_interval_blocks_in_a_fresh_process");
    }
}

//! Latency counts in HdrHistogram's own buckets, one add per op, turned into a real
//! HdrHistogram once per interval (`encode.rs`) and cleared for the next interval without
//! mapping anew (report.rs hands a recorder back and forth).
//!
//! The counts of one histogram are 512 KiB, 128 blocks of 4 KiB (a page on x86-64), of
//! which an interval touches a few. Each add marks its block, so that making the
//! histogram, clearing it and telling an empty one read only the blocks counted into (a
//! full scan read 512 KiB per kind and mapped its untouched pages, 0.8-4.5 ms an interval
//! with five kinds). A block counted into is zeroed by hand and stays; one left untouched
//! for a whole interval after that goes back to the kernel, so a stall's spread of
//! latencies does not stay resident.

#[cfg(test)]
use super::histogram::new_histogram;
use super::histogram::{HIGHEST_NS, LOWEST_NS};
use hdrhistogram::Histogram;

// HdrHistogram's own bucket layout for 1 ns .. 1 h at 3 significant digits: 2048
// sub-buckets (the top half of each bucket past the first), unit magnitude 0.
const HALF_MAGNITUDE: u32 = 10;
const HALF_COUNT: u64 = 1 << HALF_MAGNITUDE;
const SUB_MASK: u64 = 2 * HALF_COUNT - 1;
/// Slots for the index of every u64 (the highest is 56,319): a value is counted as it is,
/// with no clamp and no bounds check, and the histogram's bounds are applied once per
/// interval (`histogram`), not once per op.
const SLOTS: usize = 1 << 16;
/// Slots per block (4 KiB), the unit in which counts are marked, read and given back.
const BLOCK: usize = 512;
const BLOCK_BYTES: usize = BLOCK * 8;
/// One bit per block of a histogram (128 blocks).
type Blocks = [u64; SLOTS / BLOCK / 64];

/// HdrHistogram's counts index of `v`: bucket `b` (the highest bit of `v | SUB_MASK`,
/// less HALF_MAGNITUDE) holds 2048 sub-buckets of `v >> b`, the lower half of which
/// overlaps bucket `b - 1`, so the index is `b * 1024 + (v >> b)`.
#[inline(always)]
fn counts_index(v: u64) -> usize {
    let bucket = 63 - (v | SUB_MASK).leading_zeros() as u64 - HALF_MAGNITUDE as u64;
    ((bucket << HALF_MAGNITUDE) + (v >> bucket)) as usize
}

#[inline]
fn value_at(index: usize) -> u64 {
    let mut bucket = (index as i64 >> HALF_MAGNITUDE) - 1;
    let mut sub = (index as u64 & (HALF_COUNT - 1)) + HALF_COUNT;
    if bucket < 0 {
        sub -= HALF_COUNT;
        bucket = 0;
    }
    sub << bucket
}

/// The blocks whose bit is set, in order.
fn marked(bits: Blocks) -> impl Iterator<Item = usize> {
    (0..bits.len() * 64).filter(move |&b| bits[b / 64] >> (b % 64) & 1 == 1)
}

/// The most op kinds a recorder counts (the registry records 14): a power of two, so
/// that a kind's index is masked into range rather than bounds-checked on every op.
pub const KINDS_MAX: usize = 16;

type Slots = [u64; SLOTS];

/// `N` latency histograms in one private mapping of their own (so that an op's count is
/// one address away from the recorder, and blocks can be given back whole).
pub struct Counts<const N: usize> {
    slots: std::ptr::NonNull<[Slots; N]>,
    /// Per histogram, the blocks counted into since it was last cleared.
    touched: [Blocks; N],
    /// Per histogram, the blocks written since they were last given back to the kernel.
    resident: [Blocks; N],
}

// SAFETY: the mapping is owned by this value alone (as a Box would be); a recorder is
// handed to the reporting thread whole (report.rs).
unsafe impl<const N: usize> Send for Counts<N> {}

impl<const N: usize> Counts<N> {
    const BYTES: usize = std::mem::size_of::<[Slots; N]>();

    pub fn new() -> Counts<N> {
        // Fresh zero pages: untouched buckets cost no memory and no clearing.
        // SAFETY: a private anonymous mapping of our own, checked below.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(at != libc::MAP_FAILED, "cannot map a recorder's counts");
        // Small pages even where huge ones are the default: a few blocks are counted into,
        // and each is given back on its own. Only advice: a refusal changes nothing else.
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(at, Self::BYTES, libc::MADV_NOHUGEPAGE) };
        Counts {
            slots: std::ptr::NonNull::new(at as *mut [Slots; N]).expect("a mapping"),
            touched: [[0; SLOTS / BLOCK / 64]; N],
            resident: [[0; SLOTS / BLOCK / 64]; N],
        }
    }

    #[inline(always)]
    fn all(&self) -> &[Slots; N] {
        // SAFETY: the mapping lives as long as self, zero-filled and aligned to a page.
        unsafe { self.slots.as_ref() }
    }

    #[inline(always)]
    fn all_mut(&mut self) -> &mut [Slots; N] {
        // SAFETY: as in `all`, and `&mut self` makes the borrow unique.
        unsafe { self.slots.as_mut() }
    }

    /// A value in ns of histogram `k` (< N); beyond the histogram's range it is saturated
    /// (when the interval's histogram is made), never dropped.
    #[inline(always)]
    pub fn record(&mut self, k: usize, ns: u64) {
        // The masks change nothing (k < N, a power of two, and every index is below
        // SLOTS) but spare the bounds checks.
        let (k, i) = (k & (N - 1), counts_index(ns) & (SLOTS - 1));
        self.all_mut()[k][i] += 1;
        let b = i / BLOCK;
        self.touched[k][(b / 64) & 1] |= 1 << (b % 64);
    }

    pub fn is_empty(&self, k: usize) -> bool {
        self.touched[k].iter().all(|&bits| bits == 0)
    }

    /// Add the first `n` histograms of `other`.
    pub fn add(&mut self, other: &Counts<N>, n: usize) {
        for k in 0..n.min(N) {
            for b in marked(other.touched[k]) {
                let (from, to) = (b * BLOCK, (b + 1) * BLOCK);
                for (x, y) in self.all_mut()[k][from..to]
                    .iter_mut()
                    .zip(&other.all()[k][from..to])
                {
                    *x += y;
                }
                self.touched[k][b / 64] |= 1 << (b % 64);
            }
        }
    }

    /// Make `h` the HdrHistogram of histogram `k` (whatever it held before): values below
    /// LOWEST_NS count as LOWEST_NS, values above HIGHEST_NS as HIGHEST_NS.
    pub fn fill(&self, k: usize, h: &mut Histogram<u64>) {
        let (low, high) = (counts_index(LOWEST_NS), counts_index(HIGHEST_NS));
        h.reset();
        for b in marked(self.touched[k]) {
            for i in b * BLOCK..(b + 1) * BLOCK {
                let n = self.all()[k][i];
                if n > 0 {
                    h.record_n(value_at(i.clamp(low, high)), n)
                        .expect("a value within the bounds");
                }
            }
        }
    }

    /// The HdrHistogram of histogram `k`, in a histogram of its own.
    #[cfg(test)]
    pub fn histogram(&self, k: usize) -> Histogram<u64> {
        let mut h = new_histogram();
        self.fill(k, &mut h);
        h
    }

    /// Zero the first `n` histograms: the blocks counted into by hand (they stay, as the
    /// next interval's latencies likely fall there again); those untouched since they were
    /// last zeroed go back to the kernel, reading as zero and costing no memory.
    pub fn clear(&mut self, n: usize) {
        for k in 0..n.min(N) {
            let touched = std::mem::take(&mut self.touched[k]);
            for b in marked(touched) {
                self.all_mut()[k][b * BLOCK..(b + 1) * BLOCK].fill(0);
            }
            let mut kept = touched;
            for b in marked(self.resident[k]) {
                let cold = touched[b / 64] >> (b % 64) & 1 == 0;
                if cold && !self.give_back(k, b) {
                    kept[b / 64] |= 1 << (b % 64); // refused: it stays, zero already
                }
            }
            self.resident[k] = kept;
        }
    }

    /// Give block `b` of histogram `k` back to the kernel (it is zero); false if refused.
    fn give_back(&mut self, k: usize, b: usize) -> bool {
        let at = self.all_mut()[k][b * BLOCK..].as_mut_ptr();
        // SAFETY: a 4 KiB-aligned range inside our own private anonymous mapping (where the
        // page size is larger, madvise refuses it and the block simply stays).
        unsafe { libc::madvise(at as *mut libc::c_void, BLOCK_BYTES, libc::MADV_DONTNEED) == 0 }
    }
}

impl<const N: usize> Drop for Counts<N> {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping `new` made, which nothing borrows any more.
        unsafe { libc::munmap(self.slots.as_ptr() as *mut libc::c_void, Self::BYTES) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_use_hdrhistograms_buckets() {
        let reference = new_histogram();
        for v in [
            1u64,
            2,
            1023,
            1024,
            2047,
            2048,
            2049,
            4095,
            1_000_000,
            123_456_789,
            HIGHEST_NS,
        ] {
            assert_eq!(
                value_at(counts_index(v)),
                reference.lowest_equivalent(v),
                "{}",
                v
            );
        }
        let mut c = Counts::<2>::new();
        for v in [5u64, 5, 70_000, 3_000_000] {
            c.record(1, v);
        }
        assert!(c.is_empty(0));
        let h = c.histogram(1);
        assert_eq!(h.len(), 4);
        assert_eq!(h.value_at_quantile(0.5), 5);
        assert!(h.equivalent(h.max(), 3_000_000));
    }

    #[test]
    fn values_out_of_bounds_are_saturated_like_hdrhistogram_would_be_clamped() {
        let mut c = Counts::<1>::new();
        for v in [0u64, 1, HIGHEST_NS, HIGHEST_NS + 1, u64::MAX] {
            c.record(0, v);
        }
        let h = c.histogram(0);
        let mut reference = new_histogram();
        for v in [0u64, 1, HIGHEST_NS, HIGHEST_NS + 1, u64::MAX] {
            reference
                .record(v.clamp(LOWEST_NS, HIGHEST_NS))
                .expect("in bounds");
        }
        assert_eq!(h, reference);
        assert_eq!(counts_index(u64::MAX), 56_319);
    }

    /// Whether each block of histogram `k` is in memory (mincore on the mapping).
    fn in_memory<const N: usize>(c: &Counts<N>, k: usize) -> Vec<bool> {
        let mut pages = vec![0u8; SLOTS / BLOCK];
        let at = c.all()[k].as_ptr() as *mut libc::c_void;
        // SAFETY: mincore over our own mapping, one byte per 4 KiB page into `pages`.
        let done = unsafe { libc::mincore(at, SLOTS * 8, pages.as_mut_ptr()) };
        assert_eq!(done, 0, "mincore");
        pages.iter().map(|p| p & 1 == 1).collect()
    }

    const SPREAD: [u64; 6] = [5, 900, 70_000, 3_000_000, 2_000_000_000, 40_000_000_000];

    #[test]
    fn a_cleared_histogram_is_zero_in_every_slot_and_counts_again_like_a_new_one() {
        let mut c = Counts::<2>::new();
        for v in SPREAD {
            c.record(0, v);
            c.record(1, v * 2);
        }
        c.clear(2);
        for k in 0..2 {
            assert!(c.is_empty(k));
            assert!(c.all()[k].iter().all(|&n| n == 0), "histogram {}", k);
            assert_eq!(c.histogram(k).len(), 0);
        }
        let mut fresh = Counts::<2>::new();
        for v in [7u64, 900, 65_000] {
            c.record(1, v);
            fresh.record(1, v);
        }
        assert_eq!(c.histogram(1), fresh.histogram(1));
        assert!(c.is_empty(0));
    }

    #[test]
    fn a_block_untouched_for_an_interval_goes_back_to_the_kernel() {
        // SAFETY: a plain sysconf.
        if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != BLOCK_BYTES as libc::c_long {
            return; // blocks are pages only where pages are 4 KiB
        }
        let mut c = Counts::<1>::new();
        let blocks: Vec<usize> = SPREAD.iter().map(|&v| counts_index(v) / BLOCK).collect();
        for v in SPREAD {
            c.record(0, v);
        }
        let resident = |c: &Counts<1>| -> Vec<usize> {
            let pages = in_memory(c, 0);
            (0..pages.len()).filter(|&b| pages[b]).collect()
        };
        assert_eq!(resident(&c), blocks, "counted into");
        c.clear(1); // zeroed by hand: they stay for the next interval
        assert_eq!(
            resident(&c),
            blocks,
            "after the interval they were counted in"
        );
        c.record(0, 5);
        c.clear(1); // only the first was counted into again
        assert_eq!(
            resident(&c),
            blocks[..1].to_vec(),
            "after an interval without them"
        );
    }

    #[test]
    fn adding_counts_carries_their_blocks() {
        let (mut a, mut b, mut both) = (Counts::<1>::new(), Counts::<1>::new(), Counts::<1>::new());
        for v in SPREAD {
            a.record(0, v);
            b.record(0, v * 3);
            both.record(0, v);
            both.record(0, v * 3);
        }
        a.add(&b, 1);
        assert_eq!(a.histogram(0), both.histogram(0));
        let mut empty = Counts::<1>::new();
        empty.add(&b, 1);
        assert!(!empty.is_empty(0));
    }
}

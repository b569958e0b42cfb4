//! The op trace of one step (`workload.trace_out`): what this worker sent, in the warm-up
//! and in the measured phase, written when the step ends as raw part records that the
//! Python side merges across workers into libCacheSim's oracleGeneral format
//! (`workbench.oracle_trace`): u64 send time (CLOCK_MONOTONIC ns, the clock every worker
//! and Python's perf_counter share), u64 key index, u32 size, little-endian.

use std::fs::File;
use std::io::{BufWriter, Write};

/// Gets, sets and cache-aside gets sent, as flat (time, key, size) triples: three pushes
/// per op and nothing else on the hot path.
pub struct Capture {
    path: String,
    measured: Vec<u64>,
    warmup: Vec<u64>,
}

impl Capture {
    pub fn new(path: String) -> Capture {
        Capture {
            path,
            measured: Vec::new(),
            warmup: Vec::new(),
        }
    }

    pub fn add(&mut self, measuring: bool, t: u64, key: u64, size: u64) {
        let to = if measuring {
            &mut self.measured
        } else {
            &mut self.warmup
        };
        to.extend_from_slice(&[t, key, size]);
    }

    /// The measured part at the order's path, the warm-up beside it (`PATH.warmup`).
    pub fn write(&self) -> std::io::Result<()> {
        write_part(&self.path, &self.measured)?;
        write_part(&format!("{}.warmup", self.path), &self.warmup)
    }
}

fn write_part(path: &str, flat: &[u64]) -> std::io::Result<()> {
    let mut records: Vec<(u64, u64, u64)> =
        flat.chunks_exact(3).map(|r| (r[0], r[1], r[2])).collect();
    records.sort_unstable();
    let mut out = BufWriter::new(File::create(path)?);
    for (t, key, size) in records {
        out.write_all(&t.to_le_bytes())?;
        out.write_all(&key.to_le_bytes())?;
        out.write_all(&(size.min(u32::MAX as u64) as u32).to_le_bytes())?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_sorted_records_of_20_bytes_with_the_warm_up_beside() {
        let dir = std::env::temp_dir().join(format!("wb-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.part0").to_string_lossy().into_owned();
        let mut c = Capture::new(path.clone());
        c.add(false, 5, 1, 10);
        c.add(true, 9, 2, 20);
        c.add(true, 7, 3, u64::MAX);
        c.write().unwrap();
        let measured = std::fs::read(&path).unwrap();
        assert_eq!(measured.len(), 40);
        assert_eq!(u64::from_le_bytes(measured[0..8].try_into().unwrap()), 7);
        assert_eq!(u64::from_le_bytes(measured[8..16].try_into().unwrap()), 3);
        assert_eq!(
            u32::from_le_bytes(measured[16..20].try_into().unwrap()),
            u32::MAX
        );
        assert_eq!(u64::from_le_bytes(measured[20..28].try_into().unwrap()), 9);
        let warm = std::fs::read(format!("{}.warmup", path)).unwrap();
        assert_eq!(warm.len(), 20);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

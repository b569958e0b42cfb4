//! Where a key goes over several servers: highest-random-weight scores of its crc32 against
//! the servers' seeds, which the step order carries (the system's plugin makes them, as
//! `plugins/workbench_memcached/protocol.py` does for memcached's clients).

use crate::hash::crc32;

fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// Highest-random-weight hashing: a key goes to the server whose seed scores highest.
pub struct Rendezvous {
    seeds: Vec<u32>,
}

impl Rendezvous {
    pub fn new(seeds: &[u32]) -> Rendezvous {
        Rendezvous {
            seeds: seeds.to_vec(),
        }
    }

    #[inline]
    pub fn index(&self, key: &[u8]) -> usize {
        if self.seeds.len() < 2 {
            return 0;
        }
        let base = crc32(key);
        let mut best: i64 = -1;
        let mut winner = 0;
        for (i, seed) in self.seeds.iter().enumerate() {
            let score = fmix32(base ^ seed) as i64;
            if score > best {
                best = score;
                winner = i;
            }
        }
        winner
    }
}

//! The generators: this engine's own stream of random numbers (xoshiro256**, one per
//! virtual client), splitmix64 for the open-loop arrivals (the very stream of
//! `workbench/engine/arrivals.py`, so both engines draw the same gaps), and Python's
//! Mersenne Twister for the value bytes, so that a value can be checked against its key
//! whichever engine wrote it.

/// xoshiro256**, seeded through splitmix64.
#[derive(Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// The stream of one virtual client: the seed and the client id, as "seed:client".
    pub fn for_client(seed: i64, client: i64) -> Rng {
        let text = format!("{}:{}", seed, client);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325; // FNV-1a
        for b in text.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        Rng::new(h)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn random(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Normal deviate (Box-Muller).
    pub fn gauss(&mut self, mean: f64, sd: f64) -> f64 {
        let u1 = 1.0 - self.random();
        let u2 = self.random();
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// splitmix64 (Steele, Lea and Flood), as `arrivals.SplitMix64`.
#[derive(Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1): the top 53 bits.
    pub fn random(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Python's `random.Random(seed)` (MT19937, seeded by `init_by_array`), for the values.
struct Mt {
    mt: [u32; 624],
    i: usize,
}

const MT_N: usize = 624;

impl Mt {
    fn new(seed: i64) -> Mt {
        let mut n = seed.unsigned_abs();
        let mut key = Vec::new();
        while n > 0 {
            key.push(n as u32);
            n >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        let mut m = Mt {
            mt: [0; MT_N],
            i: MT_N,
        };
        m.mt[0] = 19_650_218;
        for i in 1..MT_N {
            let prev = m.mt[i - 1];
            m.mt[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        m.mix_in(&key);
        m
    }

    /// `init_by_array`'s two passes over the key.
    fn mix_in(&mut self, key: &[u32]) {
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..std::cmp::max(MT_N, key.len()) {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= MT_N {
                self.mt[0] = self.mt[MT_N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..MT_N - 1 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= MT_N {
                self.mt[0] = self.mt[MT_N - 1];
                i = 1;
            }
        }
        self.mt[0] = 0x8000_0000;
    }

    fn next(&mut self) -> u32 {
        if self.i >= MT_N {
            for k in 0..MT_N {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % MT_N] & 0x7fff_ffff);
                let mut v = self.mt[(k + 397) % MT_N] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.mt[k] = v;
            }
            self.i = 0;
        }
        let mut y = self.mt[self.i];
        self.i += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

/// `random.Random(seed).randbytes(n)`.
pub fn python_randbytes(seed: i64, n: usize) -> Vec<u8> {
    let mut mt = Mt::new(seed);
    let mut out = Vec::with_capacity(n + 4);
    let full = n / 4;
    for _ in 0..full {
        out.extend_from_slice(&mt.next().to_le_bytes());
    }
    let rest = n % 4;
    if rest > 0 {
        let r = mt.next() >> (32 - 8 * rest as u32);
        out.extend_from_slice(&r.to_le_bytes()[..rest]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randbytes_matches_python() {
        // random.Random(seed).randbytes(n).hex() in CPython 3.11.
        let hex = |seed, n| -> String {
            python_randbytes(seed, n)
                .iter()
                .map(|x| format!("{:02x}", x))
                .collect()
        };
        assert_eq!(hex(1, 6), "f5b16522b791");
        assert_eq!(hex(-5, 3), "7c769f");
        assert_eq!(hex((1 << 40) + 3, 5), "cef743380f");
    }

    #[test]
    fn splitmix_is_the_reference_stream() {
        // The reference outputs of splitmix64 from seed 1234567 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn same_seed_same_numbers() {
        let (mut a, mut b) = (Rng::for_client(7, 3), Rng::for_client(7, 3));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(
            Rng::for_client(7, 3).next_u64(),
            Rng::for_client(7, 4).next_u64()
        );
    }
}

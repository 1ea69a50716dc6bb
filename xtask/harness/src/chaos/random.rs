//! A small seeded generator (SplitMix64) for the random points at which the chaos workloads
//! drop futures and hold locks: good enough for spreading faults, not for anything secret.

/// SplitMix64.
pub struct Random(u64);

impl Random {
    /// Seeded from the clock and the process id, so each worker differs.
    #[must_use]
    pub fn seeded() -> Self {
        Self(super::worker::wall_us() ^ (u64::from(std::process::id()) << 32))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            0
        } else {
            self.next_u64() % bound
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_below_its_bound_and_varies() {
        let mut random = Random(7);
        let draws: Vec<u64> = (0..100).map(|_| random.below(10)).collect();
        assert!(draws.iter().all(|&d| d < 10));
        assert!(draws.iter().any(|&d| d != draws[0]));
        assert_eq!(random.below(0), 0);
    }
}

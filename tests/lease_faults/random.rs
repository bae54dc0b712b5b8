//! The one random-number generator of the fault test: the driver's faults
//! and the helpers' hold and rest times. Deterministic, so that a seed
//! replays the same faults; no need for a crate.

use crate::common::server::Dice;

/// Xorshift64: the same seed, the same numbers.
pub(crate) struct Random(u64);

impl Random {
    /// A generator from `seed` (any value: it is made odd, never zero).
    pub(crate) fn new(seed: u64) -> Random {
        Random(seed | 1)
    }
}

impl Dice for Random {
    fn between(&mut self, low: u64, high: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        low + self.0 % (high - low).max(1)
    }
}

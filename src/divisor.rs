//! Division by a divisor fixed at run time, as a multiply and two shifts.
//!
//! Turning clock nanoseconds into layout units divides by the layout's unit:
//! on the first ID of each unit, on every non-blocking call and at every
//! tick of the ticker (within a unit the clock readers avoid it altogether:
//! see `TickRules::in_clock_unit`). The unit is only known at run time, so
//! the compiler emits a hardware `div`, which costs 20–90 cycles depending
//! on the CPU. Precomputing a reciprocal once per layout brings that down to
//! a few cycles.
//!
//! The method is Granlund and Montgomery, "Division by Invariant Integers using
//! Multiplication" (PLDI 1994), figure 4.1: exact for every 64-bit dividend and
//! divisor, which the tests check against `/`.

/// A precomputed reciprocal of a non-zero `u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Divisor {
    magic: u64,
    shift1: u32,
    shift2: u32,
}

impl Divisor {
    /// Precomputes division by `d`; `d` must not be zero (layouts reject a zero unit).
    pub(crate) const fn new(d: u64) -> Divisor {
        assert!(d != 0, "division by zero");
        // l = ceil(log2(d)), so 2^(l-1) < d <= 2^l.
        let l = if d == 1 {
            0
        } else {
            64 - (d - 1).leading_zeros()
        };
        // m' = floor(2^64 * (2^l - d) / d) + 1; 2^l - d < d keeps it below 2^64.
        let magic = ((((1u128 << l) - d as u128) << 64) / d as u128 + 1) as u64;
        Divisor {
            magic,
            shift1: if l > 0 { 1 } else { 0 },
            shift2: l.saturating_sub(1),
        }
    }

    /// `n / d`.
    #[inline]
    pub(crate) const fn divide(self, n: u64) -> u64 {
        let t1 = ((self.magic as u128 * n as u128) >> 64) as u64;
        // t1 <= n, and the sum below is at most n: neither step can overflow.
        (t1 + ((n - t1) >> self.shift1)) >> self.shift2
    }
}

#[cfg(test)]
mod tests {
    use super::Divisor;
    use proptest::prelude::*;

    #[test]
    fn edge_divisors_and_dividends() {
        let divisors = [
            1,
            2,
            3,
            7,
            10,
            1_000,
            1_000_000,
            10_000_000,
            1 << 32,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        let dividends = [0, 1, 2, 999_999, 1_000_000, 1 << 62, u64::MAX - 1, u64::MAX];
        for d in divisors {
            let div = Divisor::new(d);
            for n in dividends {
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
        }
    }

    proptest! {
        #[test]
        fn matches_hardware_division(d in 1u64.., n: u64) {
            prop_assert_eq!(Divisor::new(d).divide(n), n / d);
        }

        #[test]
        fn matches_for_small_divisors_near_multiples(d in 1u64..100_000_000, k in 0u64..1 << 40, off in 0u64..3) {
            let n = k.saturating_mul(d).saturating_add(off).saturating_sub(1);
            prop_assert_eq!(Divisor::new(d).divide(n), n / d);
        }
    }
}

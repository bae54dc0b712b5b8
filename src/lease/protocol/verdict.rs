//! A holder's clock against the registry's: the skew allowance that the
//! loss rule (rule 6) relies on, checked at every acquisition and renewal,
//! and the verdict `flakegen leases check` reports.

use super::terms::Terms;
use crate::lease::backend::LeaseError;

/// How a host's clock stands against a registry server's, as leasing
/// judges it at every acquisition and renewal: what `flakegen leases check`
/// reports of this host's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(not(feature = "inspect"), allow(unreachable_pub))]
pub enum ClockVerdict {
    /// Further ahead than the skew allowance: generators here are refused
    /// (`LeaseError::ClockAhead`), as their fences could outrun the loss rule.
    Refused,
    /// Ahead by more than half the allowance: accepted, close to the limit.
    NearTheLimit,
    /// Behind by more than the allowance: accepted, but its IDs carry early
    /// times, and after a loss it waits that much longer.
    Behind,
    /// Within the allowance.
    Within,
}

impl ClockVerdict {
    /// The verdict on a clock `ahead_millis` ahead of the server's
    /// (negative: behind), with a skew allowance of `skew_millis`.
    #[cfg_attr(not(feature = "inspect"), allow(unreachable_pub))]
    pub fn of(ahead_millis: i64, skew_millis: u64) -> ClockVerdict {
        let skew = i64::try_from(skew_millis).unwrap_or(i64::MAX);
        if ahead_millis > skew {
            ClockVerdict::Refused
        } else if ahead_millis > skew / 2 {
            ClockVerdict::NearTheLimit
        } else if ahead_millis < -skew {
            ClockVerdict::Behind
        } else {
            ClockVerdict::Within
        }
    }
}

impl Terms<'_> {
    /// Refuses a holder whose clock, read at `now_ms` before the server read
    /// `server_unix_millis`, is further ahead than the skew allows: its fences could
    /// outrun the loss rule.
    pub(super) fn check_skew(
        &self,
        now_ms: u64,
        server_unix_millis: u64,
    ) -> Result<(), LeaseError> {
        let ahead = crate::clock::units::lead_millis(now_ms, server_unix_millis);
        match ClockVerdict::of(ahead, self.skew_millis) {
            ClockVerdict::Refused => Err(LeaseError::ClockAhead {
                ahead_millis: ahead.unsigned_abs(),
                skew_millis: self.skew_millis,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::protocol::fixtures::terms;

    #[test]
    fn a_clock_ahead_by_more_than_the_skew_is_refused() {
        let t = terms();
        assert!(t.check_skew(3_000, 1_000).is_ok());
        assert!(matches!(
            t.check_skew(3_001, 1_000),
            Err(LeaseError::ClockAhead {
                ahead_millis: 2_001,
                skew_millis: 2_000
            })
        ));
        assert!(t.check_skew(0, 1_000).is_ok());
    }
}

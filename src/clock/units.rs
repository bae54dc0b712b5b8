//! Nanoseconds, milliseconds, `Duration`s and `SystemTime`s: the crate's one
//! home for converting between them. Each conversion saturates rather than
//! wraps, and says which way it rounds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) const NANOS_PER_MILLI: u64 = 1_000_000;

/// Whole nanoseconds in `d`, saturating.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whole milliseconds in `d`, rounded down, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A clock reading in whole milliseconds, rounded down.
pub(crate) const fn floor_millis(unix_nanos: u64) -> u64 {
    unix_nanos / NANOS_PER_MILLI
}

/// A clock reading in whole milliseconds, rounded up.
pub(crate) const fn ceil_millis(unix_nanos: u64) -> u64 {
    unix_nanos.div_ceil(NANOS_PER_MILLI)
}

/// Nanoseconds at a millisecond instant, saturating.
pub(crate) const fn millis_to_nanos(unix_millis: u64) -> u64 {
    unix_millis.saturating_mul(NANOS_PER_MILLI)
}

/// Nanoseconds since 1970 of `time`; 0 before 1970, saturating after 2554.
pub(crate) fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, nanos)
}

/// Milliseconds since 1970 of `time`, rounded down; 0 before 1970.
pub(crate) fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, millis)
}

/// How far the instant `to_millis` lies ahead of `from_millis` (behind:
/// negative), saturating.
pub(crate) fn lead_millis(to_millis: u64, from_millis: u64) -> i64 {
    let lead = i128::from(to_millis) - i128::from(from_millis);
    i64::try_from(lead).unwrap_or(if lead < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_saturate_and_round_as_named() {
        assert_eq!(nanos(Duration::MAX), u64::MAX);
        assert_eq!(millis(Duration::MAX), u64::MAX);
        assert_eq!(millis(Duration::from_micros(1_999)), 1);
        assert_eq!(floor_millis(1_999_999), 1);
        assert_eq!(ceil_millis(1_000_001), 2);
        assert_eq!(ceil_millis(1_000_000), 1);
        assert_eq!(millis_to_nanos(u64::MAX), u64::MAX);
        assert_eq!(unix_nanos(UNIX_EPOCH - Duration::from_secs(1)), 0);
        assert_eq!(unix_millis(UNIX_EPOCH + Duration::from_nanos(2_500_000)), 2);
        assert_eq!(lead_millis(5, 3), 2);
        assert_eq!(lead_millis(3, 5), -2);
        assert_eq!(lead_millis(u64::MAX, 0), i64::MAX);
        assert_eq!(lead_millis(0, u64::MAX), i64::MIN);
    }
}

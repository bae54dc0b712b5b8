//! Nanoseconds, milliseconds, `Duration`s and `SystemTime`s: the crate's one
//! home for converting between them. Each conversion saturates rather than
//! wraps, and says which way it rounds.

use core::fmt;
use core::time::Duration;
#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) const NANOS_PER_MILLI: u64 = 1_000_000;

/// Whole nanoseconds in `d`, saturating.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whole milliseconds in `d`, rounded down, saturating.
#[cfg(feature = "std")]
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
#[cfg(feature = "std")]
pub(crate) fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, nanos)
}

/// Milliseconds since 1970 of `time`, rounded down; 0 before 1970.
#[cfg(feature = "std")]
pub(crate) fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, millis)
}

/// How far the instant `to_millis` lies ahead of `from_millis` (behind:
/// negative), saturating.
#[cfg(feature = "std")]
pub(crate) fn lead_millis(to_millis: u64, from_millis: u64) -> i64 {
    let lead = i128::from(to_millis) - i128::from(from_millis);
    i64::try_from(lead).unwrap_or(if lead < 0 { i64::MIN } else { i64::MAX })
}

/// Milliseconds since 1970, shown as RFC 3339 in UTC.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rfc3339(pub(crate) u64);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, ms) = (self.0 / 86_400_000, self.0 % 86_400_000);
        // Days since 1970 to a civil date (Howard Hinnant's algorithm), in
        // 400-year eras from 0000-03-01.
        let z = days + 719_468;
        let era = z / 146_097;
        let day_of_era = z % 146_097;
        let year_of_era =
            (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let month_from_march = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
        let month = if month_from_march < 10 {
            month_from_march + 3
        } else {
            month_from_march - 9
        };
        let year = year_of_era + era * 400 + u64::from(month <= 2);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1_000 % 60,
            ms % 1_000
        )
    }
}

/// An instant as a person reads it in a message: RFC 3339 in UTC to the
/// millisecond, and how long ago it was or how soon it comes, by the clock
/// that `now_millis` was read from: `2026-12-01T19:05:31.808Z, 3.2 s ago`.
#[derive(Clone, Copy, Debug)]
#[cfg(feature = "std")]
pub(crate) struct Moment {
    pub(crate) unix_millis: u64,
    pub(crate) now_millis: u64,
}

#[cfg(feature = "std")]
impl Moment {
    /// `unix_millis`, aged by the system's clock when it is said.
    #[cfg(feature = "std")]
    pub(crate) fn now(unix_millis: u64) -> Moment {
        Moment {
            unix_millis,
            now_millis: unix_millis_now(),
        }
    }
}

/// An instant as a message says it: a [`Moment`], aged by the system's
/// clock; without `std`, where no clock is the machine's, the instant alone.
#[cfg(feature = "std")]
pub(crate) fn moment(unix_millis: u64) -> Moment {
    Moment::now(unix_millis)
}
#[cfg(not(feature = "std"))]
pub(crate) fn moment(unix_millis: u64) -> Rfc3339 {
    Rfc3339(unix_millis)
}

/// The system's clock, in ms since 1970.
#[cfg(feature = "std")]
pub(crate) fn unix_millis_now() -> u64 {
    unix_millis(SystemTime::now())
}

#[cfg(feature = "std")]
impl fmt::Display for Moment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, ", Rfc3339(self.unix_millis))?;
        let lead = lead_millis(self.unix_millis, self.now_millis);
        if lead == 0 {
            return f.write_str("now");
        }
        let span = Span(lead.unsigned_abs());
        if lead > 0 {
            write!(f, "in {span}")
        } else {
            write!(f, "{span} ago")
        }
    }
}

/// A span of milliseconds, sized to be read: `412 ms`, `3.2 s`, `4.1 min`,
/// `3.0 h`, `12.3 days`.
#[derive(Clone, Copy, Debug)]
#[cfg(feature = "std")]
pub(crate) struct Span(pub(crate) u64);

#[cfg(feature = "std")]
impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        let of = |unit: u64| ms as f64 / unit as f64;
        if ms < 1_000 {
            write!(f, "{ms} ms")
        } else if ms < 120_000 {
            write!(f, "{:.1} s", of(1_000))
        } else if ms < 7_200_000 {
            write!(f, "{:.1} min", of(60_000))
        } else if ms < 172_800_000 {
            write!(f, "{:.1} h", of(3_600_000))
        } else {
            write!(f, "{:.1} days", of(86_400_000))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_are_said_with_their_age() {
        let at = 1_796_151_863_658;
        let said = |now| {
            Moment {
                unix_millis: at,
                now_millis: now,
            }
            .to_string()
        };
        assert_eq!(said(at + 3_200), "2026-12-01T19:04:23.658Z, 3.2 s ago");
        assert_eq!(said(at - 412), "2026-12-01T19:04:23.658Z, in 412 ms");
        assert_eq!(said(at), "2026-12-01T19:04:23.658Z, now");
        assert_eq!(Span(3 * 3_600_000).to_string(), "3.0 h");
        assert_eq!(Span(5 * 86_400_000).to_string(), "5.0 days");
    }

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

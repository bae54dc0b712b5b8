//! Where generators get the time from.

use std::sync::Arc;

mod manual;
mod monotonic;
mod os;
mod system;
pub(crate) mod units;

pub use self::manual::ManualClock;
pub use self::monotonic::MonotonicClock;
pub use self::system::{CoarseClock, SyscallClock, SystemClock};

pub(crate) use self::os::tighten_timer_slack;

/// A source of wall-clock time.
///
/// A clock returns nanoseconds since 1970-01-01T00:00:00Z as a `u64` (enough
/// until the year 2554); a time before 1970 reads as 0. It need not be
/// monotonic: generators keep their own logical clock that never goes back, so
/// a clock that steps backwards makes them wait or lead, never repeat an ID.
///
/// Implemented for `&C`, `Box<C>` and `Arc<C>`, so one clock can be shared.
///
/// # Examples
///
/// A clock that runs 5 seconds fast:
///
/// ```
/// use flakegen::{Clock, SystemClock};
///
/// struct Fast(SystemClock);
///
/// impl Clock for Fast {
///     fn unix_nanos(&self) -> u64 {
///         self.0.unix_nanos() + 5_000_000_000
///     }
/// }
///
/// assert!(Fast(SystemClock).unix_nanos() > SystemClock.unix_nanos());
/// ```
pub trait Clock: Send + Sync {
    /// Nanoseconds since the Unix epoch.
    fn unix_nanos(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn unix_nanos(&self) -> u64 {
        (**self).unix_nanos()
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    #[inline]
    fn unix_nanos(&self) -> u64 {
        (**self).unix_nanos()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn unix_nanos(&self) -> u64 {
        (**self).unix_nanos()
    }
}

//! Where generators get the time from.

use alloc::boxed::Box;
use alloc::sync::Arc;

mod manual;
#[cfg(feature = "std")]
mod monotonic;
#[cfg(feature = "std")]
mod os;
#[cfg(feature = "std")]
mod system;
#[cfg(feature = "std")]
mod tsc;
pub(crate) mod units;

pub use self::manual::ManualClock;
#[cfg(feature = "std")]
pub use self::monotonic::MonotonicClock;
#[cfg(feature = "std")]
pub use self::system::{CoarseClock, SyscallClock, SystemClock};
#[cfg(feature = "std")]
pub use self::tsc::{Fallback, TimeSource, TscClock};

#[cfg(feature = "std")]
pub(crate) use self::os::{at_exit, tighten_timer_slack};

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

    /// Which time the clock tells: `None` for the machine's (every clock
    /// that reads it, however it does), or an id of a time of its own, as
    /// a [`ManualClock`]'s (its clones share it). Two generators of one
    /// layout and worker id on clocks that tell the same time could issue
    /// the same ID, so a process builds them one at a time (see
    /// [`Builder::worker`](crate::Builder::worker)); on times of their own
    /// they are apart. Default: the machine's.
    fn own_time(&self) -> Option<u64> {
        None
    }
}

// Forwards every method, provided ones included: an unforwarded one would
// take its default behind a pointer.
macro_rules! forward_clock {
    ($($ptr:ty),*) => {$(
        #[deny(clippy::missing_trait_methods)]
        impl<C: Clock + ?Sized> Clock for $ptr {
            #[inline]
            fn unix_nanos(&self) -> u64 {
                (**self).unix_nanos()
            }
            fn own_time(&self) -> Option<u64> {
                (**self).own_time()
            }
        }
    )*};
}

forward_clock!(&C, Box<C>, Arc<C>);

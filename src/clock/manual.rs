//! A clock the program sets by hand.

use alloc::sync::Arc;
use core::time::Duration;
#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

use super::Clock;
#[cfg(feature = "std")]
use super::units::unix_nanos;
use super::units::{millis_to_nanos, nanos};
use crate::sync::{AtomicU64, Ordering, plain};

/// A clock that moves only when told to: advance, stall, rewind.
///
/// Clones share one time, so a test keeps one handle and gives a clone to a
/// generator, then steers it. Always compiled in: tests and simulations of
/// NTP steps, VM migration and restarts need no feature flag.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use flakegen::{Builder, IdGenerator, IssueError};
/// use flakegen::clock::ManualClock;
///
/// let clock = ManualClock::from_unix_millis(1_700_000_000_000);
/// let generator = Builder::new().worker(1).clock(clock.clone()).build_mutex()?;
///
/// let before = generator.next_id()?;
/// clock.rewind(Duration::from_secs(1)); // NTP stepped the clock back
/// // A blocking call would wait out the second; the non-blocking one says so.
/// match generator.try_next_id() {
///     Err(IssueError::WouldBlock { wait_nanos }) => assert!(wait_nanos > 999_000_000),
///     other => panic!("{other:?}"),
/// }
/// clock.advance(Duration::from_secs(2));
/// assert!(generator.next_id()? > before);
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock {
    // Relaxed everywhere: the value is self-contained, no other memory is
    // published through it, and a test that needs ordering between threads
    // already synchronises by other means (join, channel, barrier).
    unix_nanos: Arc<AtomicU64>,
    /// Tells this clock's time apart from every other's (see `Clock::own_time`).
    time: u64,
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::from_unix_nanos(0)
    }
}

/// Numbers each manual clock's time; 0 is never one.
static TIMES: plain::AtomicU64 = plain::AtomicU64::new(1);

impl ManualClock {
    /// A clock stopped at `time` (1970 if `time` is earlier).
    #[cfg(feature = "std")]
    pub fn new(time: SystemTime) -> Self {
        let clock = ManualClock::default();
        clock.set(time);
        clock
    }

    /// A clock stopped at `millis` milliseconds since 1970.
    pub fn from_unix_millis(millis: u64) -> Self {
        ManualClock::from_unix_nanos(millis_to_nanos(millis))
    }

    /// A clock stopped at `nanos` nanoseconds since 1970.
    pub fn from_unix_nanos(nanos: u64) -> Self {
        ManualClock {
            unix_nanos: Arc::new(AtomicU64::new(nanos)),
            // Relaxed: only the number's uniqueness matters.
            time: TIMES.fetch_add(1, plain::Ordering::Relaxed),
        }
    }

    /// Sets the time.
    #[cfg(feature = "std")]
    pub fn set(&self, time: SystemTime) {
        self.set_unix_nanos(unix_nanos(time));
    }

    /// Sets the time in nanoseconds since 1970.
    pub fn set_unix_nanos(&self, nanos: u64) {
        self.unix_nanos.store(nanos, Ordering::Relaxed);
    }

    /// Moves the time forward (saturating at the end of the `u64` range).
    pub fn advance(&self, by: Duration) {
        let by = nanos(by);
        // fetch_update cannot fail with a closure that always returns Some.
        let _ = self
            .unix_nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(by))
            });
    }

    /// Moves the time backwards (saturating at 1970), as an NTP step or a VM
    /// migration can.
    pub fn rewind(&self, by: Duration) {
        let by = nanos(by);
        let _ = self
            .unix_nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_sub(by))
            });
    }

    /// The current time.
    #[cfg(feature = "std")]
    pub fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.unix_nanos())
    }
}

impl Clock for ManualClock {
    #[inline]
    fn unix_nanos(&self) -> u64 {
        self.unix_nanos.load(Ordering::Relaxed)
    }

    /// A time of its own, which its clones share.
    fn own_time(&self) -> Option<u64> {
        Some(self.time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_time_and_saturate() {
        let a = ManualClock::from_unix_millis(1_000);
        let b = a.clone();
        a.advance(Duration::from_millis(5));
        assert_eq!(b.unix_nanos(), 1_005_000_000);
        b.rewind(Duration::from_secs(10));
        assert_eq!(a.unix_nanos(), 0);
        a.set_unix_nanos(u64::MAX - 1);
        a.advance(Duration::from_secs(1));
        assert_eq!(b.unix_nanos(), u64::MAX);
        a.set(UNIX_EPOCH + Duration::from_millis(7));
        assert_eq!(b.now(), UNIX_EPOCH + Duration::from_millis(7));
    }
}

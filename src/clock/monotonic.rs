//! Wall time that never steps backwards.

use std::time::Instant;

use super::Clock;
use super::os;
use super::units::nanos;

/// Wall time read once, then advanced by the monotonic clock.
///
/// It never steps backwards within a process, so NTP steps and manual changes
/// of the system clock do not make generators wait. In exchange it drifts from
/// wall time by whatever the system clock is corrected by after the anchor,
/// and a restarted process re-anchors, possibly earlier than the time it last
/// issued: use [`Builder::resume_after`](crate::Builder::resume_after) across restarts.
///
/// # Examples
///
/// ```
/// use flakegen::Clock;
/// use flakegen::clock::MonotonicClock;
///
/// let clock = MonotonicClock::new();
/// let a = clock.unix_nanos();
/// let b = clock.unix_nanos();
/// assert!(b >= a);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    anchor_unix_nanos: u64,
    anchor: Instant,
}

impl MonotonicClock {
    /// Anchors to the system's wall clock now.
    pub fn new() -> Self {
        MonotonicClock {
            anchor: Instant::now(),
            anchor_unix_nanos: os::std_realtime_nanos(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn unix_nanos(&self) -> u64 {
        self.anchor_unix_nanos
            .saturating_add(nanos(self.anchor.elapsed()))
    }
}

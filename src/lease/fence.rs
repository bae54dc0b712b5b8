//! The fence: the one place where a registry's milliseconds meet a layout's
//! units and ticks.
//!
//! A registry stores instants as whole milliseconds since 1970. A generator
//! counts in ticks (see `layout.rs`). Every conversion between the two is a
//! method here, each rounded to the safe side, and [`Fence`] shares the
//! confirmed fence with the hot path as one tick to compare against.

use crate::clock::units::{ceil_millis, millis_to_nanos};
use crate::layout::Layout;
use crate::sync::{AtomicU64, Ordering};

/// The first unit a holder may issue in when its predecessor's fence is
/// `fence_unix_millis`: the first unit that starts at or after the fence (possibly
/// past the layout's end).
pub(crate) fn start_unit(layout: &Layout, fence_unix_millis: u64) -> u64 {
    layout.first_unit_at_or_after(millis_to_nanos(fence_unix_millis))
}

/// The first tick that may not be issued under a fence at `fence_unix_millis`: the
/// first tick of [`start_unit`]. An ID's timestamp is its unit's start, so a
/// unit that starts before the fence is below it even if it ends after.
pub(crate) fn cap(layout: &Layout, fence_unix_millis: u64) -> u64 {
    let unit = start_unit(layout, fence_unix_millis).min(layout.max_timestamp() + 1);
    layout.first_tick(unit)
}

/// The last tick a holder may not issue when its predecessor's fence is
/// `fence_unix_millis`: the one before [`start_unit`]'s first (the layout's last
/// tick, or past it, when that unit is past the layout's end).
pub(crate) fn last_before(layout: &Layout, fence_unix_millis: u64) -> u64 {
    let unit = start_unit(layout, fence_unix_millis).min(layout.max_timestamp() + 1);
    layout.first_tick(unit).saturating_sub(1)
}

/// The fence a holder lowers its own to when it stops, having issued up to
/// `last_tick`: the start of the next unit, rounded up to a millisecond, so
/// that [`start_unit`] of it is that next unit.
pub(crate) fn high_water_ms(layout: &Layout, last_tick: u64) -> u64 {
    let last_unit = layout.unit_of_tick(last_tick.min(layout.max_tick()));
    ceil_millis(layout.unit_start_nanos(last_unit + 1))
}

/// The confirmed fence a generator issues below, shared by the hot path and
/// the lease's thread.
pub(crate) struct Fence {
    /// The first tick that may not be issued: never past the layout's end
    /// (`max_tick + 1`, also the cap without a lease), so that one compare
    /// against it also keeps a tick within the layout; [`CLOSED`] once the
    /// generator shut down. A lease's fence lies after the layout's epoch,
    /// so its cap is never 0.
    cap: AtomicU64,
    /// The confirmed fence, in ms since 1970.
    unix_millis: AtomicU64,
}

/// The cap of a generator that shut down: no tick may be issued.
const CLOSED: u64 = 0;

impl Fence {
    /// No lease: capped only by the layout's end.
    pub(crate) fn none(layout: &Layout) -> Fence {
        Fence {
            cap: AtomicU64::new(layout.max_tick() + 1),
            unix_millis: AtomicU64::new(u64::MAX),
        }
    }

    /// A confirmed fence at `unix_millis`.
    pub(crate) fn at(layout: &Layout, unix_millis: u64) -> Fence {
        Fence {
            cap: AtomicU64::new(cap(layout, unix_millis).max(1)),
            unix_millis: AtomicU64::new(unix_millis),
        }
    }

    /// The first tick that may not be issued.
    #[inline]
    pub(crate) fn cap(&self) -> u64 {
        // Relaxed: a fence only moves forward, once the server confirmed it,
        // and a caller that reads an older one only refuses sooner. Closing
        // does not rely on callers seeing it either (see `close`). No other
        // memory is published through it.
        self.cap.load(Ordering::Relaxed)
    }

    /// The confirmed fence, in ms since 1970.
    pub(crate) fn unix_millis(&self) -> u64 {
        // Relaxed: as in `cap`.
        self.unix_millis.load(Ordering::Relaxed)
    }

    /// Whether the generator shut down.
    pub(crate) fn is_closed(&self) -> bool {
        self.cap() == CLOSED
    }

    /// Moves the fence forward to a confirmed `unix_millis`; never back, and
    /// never once closed.
    pub(crate) fn confirm(&self, layout: &Layout, unix_millis: u64) {
        let new_cap = cap(layout, unix_millis).max(1);
        // Relaxed: see `cap`. A read-modify-write, so a renewal confirmed
        // while the generator shuts down cannot reopen it.
        let raised = self
            .cap
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |cap| {
                (cap != CLOSED).then_some(cap.max(new_cap))
            });
        if raised.is_ok() {
            // The two move apart for a moment; each only ever grows, and the
            // cap is the only one the hot path reads.
            self.unix_millis.fetch_max(unix_millis, Ordering::Relaxed);
        }
    }

    /// Refuses every tick from now on; returns the first tick that was not
    /// allowed before (`None`: already closed).
    ///
    /// Callers that loaded the old cap may still issue below it: the
    /// generator then seals its counter at the tick before it, so that every
    /// tick reserved from then on is at or past the old cap, and refused
    /// whichever cap its caller reads.
    pub(crate) fn close(&self) -> Option<u64> {
        // Relaxed: the swap reads the last cap in the cap's modification
        // order, and `confirm` never writes after a close, so no caller can
        // have read a larger one.
        let old = self.cap.swap(CLOSED, Ordering::Relaxed);
        (old != CLOSED).then_some(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::units::floor_millis;

    #[test]
    fn a_holder_stops_where_its_successor_starts() {
        let layout = Layout::SONYFLAKE; // 10 ms units
        // A holder that issued up to unit 41 releases at unit 42's start...
        let last_tick = layout.first_tick(41) + 3;
        let released = high_water_ms(&layout, last_tick);
        assert_eq!(millis_to_nanos(released), layout.unit_start_nanos(42));
        // ...so its successor starts at unit 42, and its own cap stops it there.
        assert_eq!(start_unit(&layout, released), 42);
        assert_eq!(cap(&layout, released), layout.first_tick(42));
    }

    #[test]
    fn a_fence_inside_a_unit_rounds_up_for_both_sides() {
        // 3 ms into a 10 ms unit: the unit starts below the fence, so it is
        // the holder's, and the successor starts at the next one. Rounding
        // the fence down instead would hand unit 50 to both.
        let layout = Layout::SONYFLAKE;
        let inside = floor_millis(layout.unit_start_nanos(50)) + 3;
        assert_eq!(cap(&layout, inside), layout.first_tick(51));
        assert_eq!(start_unit(&layout, inside), 51);
        let on = floor_millis(layout.unit_start_nanos(50));
        assert_eq!(cap(&layout, on), layout.first_tick(50));
        assert_eq!(start_unit(&layout, on), 50);
    }

    #[test]
    fn a_fence_never_moves_back() {
        let layout = Layout::TWITTER;
        let now = 1_800_000_000_000;
        let fence = Fence::at(&layout, now);
        fence.confirm(&layout, now - 5);
        assert_eq!(fence.unix_millis(), now);
        assert_eq!(fence.cap(), cap(&layout, now));
        fence.confirm(&layout, now + 5);
        assert_eq!(fence.cap(), cap(&layout, now + 5));
    }

    #[test]
    fn a_closed_fence_stays_closed() {
        let layout = Layout::TWITTER;
        let now = 1_800_000_000_000;
        let fence = Fence::at(&layout, now);
        assert_eq!(fence.close(), Some(cap(&layout, now)));
        fence.confirm(&layout, now + 5);
        assert!(fence.is_closed());
        assert_eq!(fence.cap(), 0);
        assert_eq!(fence.close(), None);
    }

    #[test]
    fn no_cap_lies_past_the_layouts_end() {
        // The hot path's one compare against the cap also keeps ticks
        // within the layout (`TickRules::in_clock_unit`).
        for layout in [Layout::TWITTER, Layout::SONYFLAKE] {
            let end = layout.max_tick() + 1;
            assert_eq!(Fence::none(&layout).cap(), end);
            let fence = Fence::at(&layout, u64::MAX);
            assert_eq!(fence.cap(), end);
            fence.confirm(&layout, u64::MAX);
            assert_eq!(fence.cap(), end);
            assert!(Fence::at(&layout, 0).cap() <= end);
        }
    }

    #[test]
    fn conversions_saturate() {
        let layout = Layout::TWITTER;
        assert_eq!(cap(&layout, u64::MAX), layout.max_tick() + 1);
    }
}

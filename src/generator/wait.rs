//! Waiting for the clock: the cold path every strategy shares.
//!
//! A waiter *sleeps* to the boundary it waits for. It never polls the clock
//! with `yield`: on a machine whose cores are busy with other threads, a
//! yielding waiter gives its core away for a whole scheduler slice
//! (milliseconds), while a thread woken from a timed sleep is run promptly.
//! A sleep wakes late by the timer slack (50 µs by default on Linux) plus
//! the scheduler's latency. That costs nothing in rate: once awake, one
//! thread uses up a unit's sequence in a fraction of the unit.

use std::thread;
use std::time::Duration;

use crate::clock::Clock;
use crate::layout::Layout;

/// Longest single sleep, so a clock that jumps (or a [`ManualClock`](crate::ManualClock)
/// moved by another thread) is noticed promptly.
pub(crate) const MAX_NAP: Duration = Duration::from_millis(10);

/// Blocks until `clock` reaches the start of unit `target`; returns its
/// reading then. `now_nanos` is a reading the caller already made.
#[cold]
pub(crate) fn until_unit<C: Clock + ?Sized>(
    clock: &C,
    layout: &Layout,
    target: u64,
    mut now_nanos: u64,
) -> u64 {
    let deadline = layout.unit_start_nanos(target);
    while now_nanos < deadline {
        thread::sleep(Duration::from_nanos(deadline - now_nanos).min(MAX_NAP));
        now_nanos = clock.unix_nanos();
    }
    now_nanos
}

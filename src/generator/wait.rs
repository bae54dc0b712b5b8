//! Waiting for the clock: the cold path every strategy shares.
//!
//! A waiter *sleeps* to the boundary it waits for. It never polls the clock
//! with `yield`: on a machine whose cores are busy with other threads, a
//! yielding waiter gives its core away for a whole scheduler slice
//! (milliseconds), while a thread woken from a timed sleep is run promptly.
//! A sleep wakes late by the timer slack (50 µs by default on Linux) plus
//! the scheduler's latency. That costs nothing in rate: once awake, one
//! thread uses up a unit's sequence in a fraction of the unit.
//!
//! Without `std` nothing sleeps: a call that would wait gives its ticks
//! back and says how long, and the caller waits its own way.

#[cfg(feature = "std")]
use core::time::Duration;
#[cfg(feature = "std")]
pub(crate) use std::time::Instant;

use crate::clock::Clock;
use crate::layout::Layout;

/// When a wait gives up, by the monotonic clock. Without `std` no call
/// waits, so there is none: the type has no value.
#[cfg(not(feature = "std"))]
#[derive(Clone, Copy, Debug)]
pub enum Instant {}

/// Longest single sleep, so a clock that jumps (or a [`ManualClock`](crate::clock::ManualClock)
/// moved by another thread) is noticed promptly.
#[cfg(feature = "std")]
pub(crate) const MAX_NAP: Duration = Duration::from_millis(10);

/// How often a call at its lease's fence looks for a renewal or a new
/// lease: a small part of any registry's round trip.
#[cfg(feature = "std")]
pub(crate) const LEASE_POLL: Duration = Duration::from_millis(1);

/// Blocks until `clock` reaches the start of unit `target`; or, once the
/// monotonic clock reaches `give_up`, returns how far behind it still is.
/// `now_nanos` is a reading the caller already made.
#[cold]
#[cfg(feature = "std")]
pub(crate) fn until_unit<C: Clock + ?Sized>(
    clock: &C,
    layout: &Layout,
    target: u64,
    mut now_nanos: u64,
    give_up: Option<Instant>,
) -> Result<(), u64> {
    let deadline = layout.unit_start_nanos(target);
    while now_nanos < deadline {
        nap(deadline, now_nanos, give_up)?;
        now_nanos = clock.unix_nanos();
    }
    Ok(())
}

/// Without `std`, only a call whose clock reached `target` gets here (the
/// others gave their ticks back): `Err` with how far behind it is else.
#[cfg(not(feature = "std"))]
pub(crate) fn until_unit<C: Clock + ?Sized>(
    _clock: &C,
    layout: &Layout,
    target: u64,
    now_nanos: u64,
    _give_up: Option<Instant>,
) -> Result<(), u64> {
    match layout.unit_start_nanos(target).checked_sub(now_nanos) {
        Some(behind) if behind > 0 => Err(behind),
        _ => Ok(()),
    }
}

/// Sleeps towards `deadline` (the clock's ns, which read `now_nanos`): at
/// most [`MAX_NAP`], and never past `give_up`. The bound is the monotonic
/// clock's, so a clock that stops or steps back cannot hold a waiter.
/// `Err` with how far behind the clock still is, once `give_up` has come.
#[cfg(feature = "std")]
pub(crate) fn nap(deadline: u64, now_nanos: u64, give_up: Option<Instant>) -> Result<(), u64> {
    let mut nap = Duration::from_nanos(deadline.saturating_sub(now_nanos)).min(MAX_NAP);
    if let Some(give_up) = give_up {
        let left = give_up.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(deadline.saturating_sub(now_nanos));
        }
        nap = nap.min(left);
    }
    std::thread::sleep(nap);
    Ok(())
}

//! Waiting for the clock: the cold path every strategy shares.

use std::thread;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::Error;
use crate::layout::Layout;

/// Below this much time to go, a waiter stops sleeping and polls the clock,
/// yielding the CPU between reads. A timed sleep wakes late by the timer
/// slack (50 µs by default on Linux) plus scheduling latency; sleeping to
/// within this margin and polling the rest keeps the wake-up on time without
/// spinning through the whole wait.
const POLL_WINDOW: Duration = Duration::from_micros(150);

/// Longest single sleep, so a clock that jumps (or a [`ManualClock`](crate::ManualClock)
/// moved by another thread) is noticed promptly.
const MAX_NAP: Duration = Duration::from_millis(10);

/// Blocks until `clock` reaches the start of unit `target`; returns its reading then.
#[cold]
pub(crate) fn until_unit<C: Clock + ?Sized>(clock: &C, layout: &Layout, target: u64) -> u64 {
    let deadline = layout.unit_start_nanos(target);
    loop {
        let now = clock.unix_nanos();
        let Some(remaining) = deadline.checked_sub(now).filter(|&r| r > 0) else {
            return now;
        };
        let remaining = Duration::from_nanos(remaining);
        if remaining > POLL_WINDOW {
            thread::sleep((remaining - POLL_WINDOW).min(MAX_NAP));
        } else {
            thread::yield_now();
        }
    }
}

/// The error for a non-blocking call that would have to wait until unit `target`.
#[cold]
pub(crate) fn would_block(layout: &Layout, target: u64, now_nanos: u64) -> Error {
    let wait = layout.unit_start_nanos(target).saturating_sub(now_nanos);
    Error::WouldBlock {
        wait: Duration::from_nanos(wait),
    }
}

/// The error for a timestamp past the layout's end.
#[cold]
pub(crate) fn exhausted(layout: &Layout) -> Error {
    Error::TimestampExhausted {
        end: layout.exhausted_at(),
    }
}

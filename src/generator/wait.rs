//! Waiting for the clock: the cold path every strategy shares.

use std::thread;
use std::time::Duration;

use crate::clock::Clock;
use crate::layout::Layout;
use crate::sync::{AtomicBool, Ordering};

/// Below this much time to go, the waiter watching the boundary stops
/// sleeping and polls the clock, yielding the CPU between reads. A timed sleep
/// wakes late by the timer slack (50 µs by default on Linux) plus scheduling
/// latency; sleeping to within this margin and polling the rest catches the
/// boundary on time without spinning through the whole wait.
const POLL_WINDOW: Duration = Duration::from_micros(150);

/// Longest single sleep, so a clock that jumps (or a [`ManualClock`](crate::ManualClock)
/// moved by another thread) is noticed promptly.
const MAX_NAP: Duration = Duration::from_millis(10);

/// Waiting for a unit boundary, shared by one generator's callers.
///
/// When several callers wait for the same boundary, one of them watches it
/// closely (sleeps, then polls the clock through the last [`POLL_WINDOW`]) and
/// the others sleep through it and wake a little late. The watcher resumes
/// issuing the moment the unit opens, and one thread alone can use up a unit,
/// so the rate is kept; what is saved is the others' polling, which on two
/// cores would otherwise cost a third of a core.
#[derive(Debug, Default)]
pub(crate) struct BoundaryWatch {
    /// Whether some caller is polling the clock near the boundary.
    polling: AtomicBool,
}

impl BoundaryWatch {
    /// Blocks until `clock` reaches the start of unit `target`; returns its reading then.
    #[cold]
    pub(crate) fn until_unit<C: Clock + ?Sized>(
        &self,
        clock: &C,
        layout: &Layout,
        target: u64,
    ) -> u64 {
        let deadline = layout.unit_start_nanos(target);
        loop {
            let now = clock.unix_nanos();
            let Some(remaining) = deadline.checked_sub(now).filter(|&r| r > 0) else {
                return now;
            };
            let remaining = Duration::from_nanos(remaining);
            if remaining > POLL_WINDOW {
                thread::sleep((remaining - POLL_WINDOW).min(MAX_NAP));
            } else if self
                .polling
                // Relaxed: the flag guards no data, only who polls; a lost race
                // means two pollers or none for one boundary, never a wrong ID.
                .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                let now = poll(clock, deadline);
                self.polling.store(false, Ordering::Relaxed);
                return now;
            } else {
                thread::sleep(remaining);
            }
        }
    }
}

/// Reads the clock until it reaches `deadline`, yielding between reads.
fn poll<C: Clock + ?Sized>(clock: &C, deadline: u64) -> u64 {
    loop {
        let now = clock.unix_nanos();
        if now >= deadline {
            return now;
        }
        thread::yield_now();
    }
}

//! The peers' shape, written here so the comparison lives in one run.
//!
//! snowdon and snowflaked issue an ID with a clock read, then a
//! compare-and-swap loop on one packed `ms << sequence_bits | sequence`
//! word. [`ClockCas`] is that loop and nothing else: no lead bound, no end
//! of the layout, no fence, none of flakegen's guarantees. Only its cost is
//! of interest, as the baseline the clock-reading strategies are held to.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crossbeam_utils::CachePadded;
use flakegen::{Clock, SystemClock};

/// A minimal clock + CAS snowflake at a 22-bit sequence, the width of the
/// `mechanism` group's layout.
#[derive(Default)]
pub(crate) struct ClockCas {
    state: CachePadded<AtomicU64>,
}

impl ClockCas {
    /// The next ID, with the clock read by `unix_nanos`.
    #[inline]
    pub(crate) fn next(&self, unix_nanos: impl FnOnce() -> u64) -> u64 {
        let now_ms = unix_nanos() / 1_000_000;
        // Relaxed: only the atomicity of the exchange matters here.
        let mut current = self.state.load(Ordering::Relaxed);
        loop {
            let next = if now_ms > current >> 22 {
                now_ms << 22
            } else {
                current + 1
            };
            match self.state.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return next,
                Err(actual) => current = actual,
            }
        }
    }
}

/// How a peer reads the clock: `std`, as they do; `system`, as flakegen's
/// `SystemClock` does, to compare the mechanisms alone.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PeerClock {
    Std,
    System,
}

impl PeerClock {
    pub(crate) const ALL: [PeerClock; 2] = [PeerClock::Std, PeerClock::System];

    /// The label benchmark ids use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            PeerClock::Std => "std",
            PeerClock::System => "system",
        }
    }

    /// Takes `n` IDs from `peer`, reading the clock this way; the choice
    /// is made once, outside the loop.
    pub(crate) fn take(self, peer: &ClockCas, n: u64) {
        match self {
            PeerClock::Std => {
                for _ in 0..n {
                    black_box(peer.next(std_unix_nanos));
                }
            }
            PeerClock::System => {
                for _ in 0..n {
                    black_box(peer.next(|| SystemClock.unix_nanos()));
                }
            }
        }
    }
}

/// The wall clock as the peers read it: `SystemTime::now()`, then a `Duration`.
#[inline]
pub(crate) fn std_unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

//! The lock-free strategy: the whole state in one atomic.

use crossbeam_utils::CachePadded;

use super::core::Core;
use super::error::BuildError;
use super::front::{Generator, Raw, Reserved, Start};
use super::state::{Refusal, TickCounter, tick_counter_methods};
use crate::clock::Clock;
#[cfg(feature = "std")]
use crate::clock::SystemClock;
use crate::lease::Claim;

/// Lock-free: timestamp and sequence packed in one `AtomicU64`.
///
/// Each ID costs one clock read and one `fetch_add` while the clock stays in
/// the same unit, plus a `fetch_max` when it moves to the next; no caller ever
/// waits for another, and a batch reserves its whole range with one
/// `fetch_add`. The default choice where the clock is cheap to read (see
/// [Choosing a strategy](crate#choosing-a-strategy)).
///
/// When the layout's rate is used up (or the clock steps back) a caller holds
/// its ID until the clock catches up, sleeping rather than spinning.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use flakegen::{AtomicGenerator, IdGenerator};
///
/// let generator = Arc::new(AtomicGenerator::new(3)?);
/// let handles: Vec<_> = (0..4)
///     .map(|_| {
///         let generator = Arc::clone(&generator);
///         std::thread::spawn(move || generator.next_id())
///     })
///     .collect();
/// let mut ids: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect::<Result<_, _>>()?;
/// ids.sort();
/// ids.dedup();
/// assert_eq!(ids.len(), 4);
/// # Ok::<(), flakegen::Error>(())
/// ```
#[cfg(feature = "std")]
pub type AtomicGenerator<C = SystemClock> = Generator<Atomic, C>;

/// Lock-free: timestamp and sequence packed in one `AtomicU64` (a
/// `portable-atomic` one where the target has no 64-bit atomics).
#[cfg(not(feature = "std"))]
pub type AtomicGenerator<C> = Generator<Atomic, C>;

/// The atomic strategy's state.
pub struct Atomic {
    /// The last tick issued. Alone on its cache line so contended updates do
    /// not evict the read-only fields beside it.
    ticks: CachePadded<TickCounter>,
}

impl core::fmt::Debug for Atomic {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Atomic")
            .field("last_tick", &self.ticks.last_issued())
            .finish()
    }
}

impl<C: Clock> Raw<C> for Atomic {
    const NAME: &'static str = "AtomicGenerator";

    // What an ID costs over its floor, a clock read and one `fetch_add`
    // (`cargo bench -- floor`): the fork check before this (`issue`, two
    // loads and a compare: a forked child issues nothing of its parent's),
    // the compare with the claim's cap (one load: the lease's fence), the
    // compare with the clock's unit below (a shift, a multiply, a compare:
    // an ID's timestamp is the clock's), and `compose_tick` (two masks and
    // two multiplies: the layout is chosen at run time). About 25
    // instructions, a dozen of them loads of the layout and the claim, which
    // the `fetch_add`, a full barrier on x86, keeps the compiler from
    // hoisting out of a caller's loop. Some processes run them in the clock
    // read's shadow (atomic/tsc within 0.3 ns of its floor); in others every
    // instruction between two `fetch_add`s costs its own time, as plain
    // loads added to the floor do, and they cost 2–3 ns on `TscClock`.
    // Nothing computed from the clock may go before the `fetch_add`: it
    // waits for the clock's whole chain (the clock's unit worked out there,
    // to shorten the compare after it, cost 3 ns more). `inline(always)`
    // here and in `issue`: `TscClock`'s read made the inliner leave a call
    // with its result in memory in the middle (four floor runs each, over
    // the floor: 0.1–1.7 ns system, 0.2–3.2 ns TSC; 1.5–1.6 and 3.2–3.4
    // with `inline`).
    #[inline(always)]
    fn reserve(&self, core: &Core<C>, claim: &Claim, count: u64) -> Result<Reserved, Refusal> {
        let now_nanos = core.clock.unix_nanos();
        let first = self
            .ticks
            .take(count, core.rules.max_tick())
            .ok_or(Refusal::Exhausted)?;
        // After the `fetch_add`: measured 0.5 ns per ID faster than before
        // it (`cargo bench -- floor`), where the mutex gains from reading
        // it before its lock. An older cap only refuses sooner (see
        // `Fence::cap`).
        let cap = claim.cap();
        let end = first + (count - 1);
        if core.rules.in_clock_unit(first, end, now_nanos, cap) {
            Ok(Reserved::Ready(first))
        } else {
            Ok(self.reserve_slow(core, first, count, now_nanos, cap))
        }
    }

    fn try_reserve(
        &self,
        core: &Core<C>,
        claim: &Claim,
        count: u64,
    ) -> Result<u64, (Refusal, u64)> {
        let (now_nanos, now) = core.read_clock();
        // A compare-and-swap loop, so a refusal consumes nothing.
        self.ticks
            .try_take(&core.rules, count, now, claim.cap())
            .map_err(|refusal| (refusal, now_nanos))
    }

    tick_counter_methods!(ticks);
}

impl Atomic {
    /// `reserve` for the first call in a new unit, or ticks ahead of the
    /// clock: `first..first + count`, just taken, judged by the exact rules.
    #[cold]
    #[inline(never)]
    fn reserve_slow<C: Clock>(
        &self,
        core: &Core<C>,
        first: u64,
        count: u64,
        now_nanos: u64,
        cap: u64,
    ) -> Reserved {
        let rules = &core.rules;
        let now = core.layout().units_since_epoch(now_nanos);
        let first = self.ticks.raise(first, count, rules.floor(now));
        Reserved::judged(first, first + (count - 1), now, rules.limit(now), cap)
    }
}

impl<C: Clock> Start<C> for Atomic {
    fn start(_: &Core<C>, last: u64) -> Result<Self, BuildError> {
        Ok(Atomic {
            ticks: CachePadded::new(TickCounter::new(last)),
        })
    }
}

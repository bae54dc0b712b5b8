//! Twitter's algorithm under a lock.

use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, MutexGuard};

use super::core::Core;
use super::error::BuildError;
use super::front::{Generator, Raw, Reserved, Start};
use super::state::Refusal;
use crate::clock::{Clock, SystemClock};
use crate::lease::Claim;

/// Twitter's algorithm under a [`parking_lot::Mutex`]: read the clock, lock,
/// compare with the last ID, bump the sequence or start a new unit.
///
/// The reference the other strategies are measured against, and the simplest
/// to reason about. A caller holding a stale clock reading continues after
/// the last tick rather than resetting the sequence, so the generator never
/// goes back in time; and it waits for the clock outside the lock, so one
/// waiting caller does not hold up the others.
///
/// Costs one clock read and one uncontended lock per ID; under contention the
/// lock's hand-over dominates. See [Choosing a strategy](crate#choosing-a-strategy).
///
/// # Examples
///
/// ```
/// use flakegen::{IdGenerator, MutexGenerator};
///
/// let generator = MutexGenerator::new(7)?;
/// let mut ids = [flakegen::Snowflake::default(); 16];
/// generator.next_ids(&mut ids)?; // one lock for all 16
/// assert!(ids.windows(2).all(|w| w[0] < w[1]));
/// # Ok::<(), flakegen::Error>(())
/// ```
pub type MutexGenerator<C = SystemClock> = Generator<Locked, C>;

/// The mutex strategy's state.
pub struct Locked {
    /// The last tick issued. Padded so callers contending for the lock do not
    /// also slow reads of the fields beside it.
    last_tick: CachePadded<Mutex<u64>>,
}

impl core::fmt::Debug for Locked {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Locked")
            .field("last_tick", &*self.last_tick.lock())
            .finish()
    }
}

impl<C: Clock> Raw<C> for Locked {
    const NAME: &'static str = "MutexGenerator";

    #[inline]
    fn reserve(&self, core: &Core<C>, claim: &Claim, count: u64) -> Result<Reserved, Refusal> {
        let now_nanos = core.clock.unix_nanos();
        // Before the lock: read inside, the cap's two loads would hold the
        // unlock back (1.4 ns more per ID in the floor report). An older cap
        // only refuses sooner (see `Fence::cap`).
        let cap = claim.cap();
        let mut last = self.last_tick.lock();
        // `*last` is at most the layout's last tick, so neither add overflows.
        let first = *last + 1;
        let end = first + (count - 1);
        if core.rules.in_clock_unit(first, end, now_nanos, cap) {
            *last = end;
            Ok(Reserved::Ready(first))
        } else {
            Self::reserve_slow(core, last, count, now_nanos, cap)
        }
    }

    fn try_reserve(
        &self,
        core: &Core<C>,
        claim: &Claim,
        count: u64,
    ) -> Result<u64, (Refusal, u64)> {
        let (now_nanos, now) = core.read_clock();
        let mut last = self.last_tick.lock();
        let refused = |refusal| (refusal, now_nanos);
        let (first, end) = core
            .rules
            .reserve(*last, now, count)
            .ok_or(refused(Refusal::Exhausted))?;
        core.rules
            .try_verdict(end, now, claim.cap())
            .map_err(refused)?;
        *last = end;
        Ok(first)
    }

    fn give_back(&self, first: u64, end: u64) {
        let mut last = self.last_tick.lock();
        // Only if nothing was reserved since: nothing above was issued.
        if *last == end {
            *last = first - 1;
        }
    }

    fn advance(&self, core: &Core<C>, last: u64) {
        let mut counter = self.last_tick.lock();
        *counter = core.rules.advanced(*counter, last);
    }

    fn seal(&self, tick: u64) -> u64 {
        let mut last = self.last_tick.lock();
        let before = *last;
        *last = before.max(tick);
        before
    }

    fn last_issued(&self) -> u64 {
        *self.last_tick.lock()
    }
}

impl Locked {
    /// `reserve` for the first call in a new unit, or ticks ahead of the
    /// clock: Twitter's algorithm, under the lock `last` still holds.
    #[cold]
    #[inline(never)]
    fn reserve_slow<C: Clock>(
        core: &Core<C>,
        mut last: MutexGuard<'_, u64>,
        count: u64,
        now_nanos: u64,
        cap: u64,
    ) -> Result<Reserved, Refusal> {
        let rules = &core.rules;
        let now = core.layout().units_since_epoch(now_nanos);
        let (first, end) = rules.reserve(*last, now, count).ok_or(Refusal::Exhausted)?;
        *last = end;
        drop(last);
        Ok(Reserved::judged(first, end, now, rules.limit(now), cap))
    }
}

impl<C: Clock> Start<C> for Locked {
    fn start(_: &Core<C>, last: u64) -> Result<Self, BuildError> {
        Ok(Locked {
            last_tick: CachePadded::new(Mutex::new(last)),
        })
    }
}

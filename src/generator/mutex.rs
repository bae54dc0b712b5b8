//! Twitter's algorithm under a lock.

use core::fmt;

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use super::builder::{Builder, Config};
use super::state::{TickRules, Verdict};
use super::wait::{self, BoundaryWatch};
use super::{IdGenerator, fill};
use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::id::Snowflake;
use crate::layout::Layout;

/// Twitter's algorithm under a [`parking_lot::Mutex`]: read the clock, lock,
/// compare with the last ID, bump the sequence or start a new unit.
///
/// The reference the other strategies are measured against, and the simplest
/// to reason about. Unlike straight ports of Twitter's code it cannot go back
/// in time: a caller holding a stale clock reading continues after the last
/// tick instead of resetting the sequence (the bug behind duplicate IDs in
/// several ports), and it waits for the clock outside the lock, so one waiting
/// caller does not hold up the others' bookkeeping.
///
/// Costs one clock read and one uncontended lock per ID; under contention the
/// lock's hand-over dominates. See the crate docs for how to choose.
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
pub struct MutexGenerator<C = SystemClock> {
    /// The last tick issued (see the `state` module). Padded so callers
    /// contending for the lock do not also slow reads of the fields below.
    last: CachePadded<Mutex<u64>>,
    clock: C,
    layout: Layout,
    rules: TickRules,
    watch: BoundaryWatch,
    worker: u64,
    worker_field: u64,
}

impl MutexGenerator<SystemClock> {
    /// A generator for `worker` with the defaults of [`Builder`].
    ///
    /// # Errors
    ///
    /// As for [`Builder::build_mutex`].
    pub fn new(worker: u64) -> Result<Self, Error> {
        Builder::new().worker(worker).build_mutex()
    }
}

impl<C: Clock> MutexGenerator<C> {
    pub(crate) fn from_config(config: Config<C>) -> Self {
        MutexGenerator {
            last: CachePadded::new(Mutex::new(config.last)),
            clock: config.clock,
            layout: config.layout,
            rules: config.rules,
            watch: BoundaryWatch::default(),
            worker: config.worker,
            worker_field: config.worker_field,
        }
    }

    /// Reserves `count` ticks and returns the first, after waiting if `block`,
    /// or with `WouldBlock` (reserving nothing) if not.
    #[inline]
    fn issue(&self, count: u64, block: bool) -> Result<u64, Error> {
        let now_nanos = self.clock.unix_nanos();
        let now = self.layout.units_since_epoch(now_nanos);
        let (first, wait_until) = {
            let mut last = self.last.lock();
            let Some((first, end)) = self.rules.reserve(*last, now, count) else {
                drop(last);
                return Err(wait::exhausted(&self.layout));
            };
            let wait_until = match self.rules.verdict(end, now) {
                Verdict::WaitUntil(unit) if !block => {
                    drop(last);
                    return Err(wait::would_block(&self.layout, unit, now_nanos));
                }
                Verdict::WaitUntil(unit) => Some(unit),
                _ => None,
            };
            *last = end;
            (first, wait_until)
        };
        if let Some(unit) = wait_until {
            // The ticks are ours; hand them out once the clock allows.
            self.watch.until_unit(&self.clock, &self.layout, unit);
        }
        Ok(first)
    }

    #[inline]
    fn id(&self, tick: u64) -> Snowflake {
        Snowflake::from_u64(self.layout.compose_tick(tick, self.worker_field))
    }

    fn issue_into(&self, ids: &mut [Snowflake], block: bool) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let first = self.issue(ids.len() as u64, block)?;
        fill(&self.layout, self.worker_field, first, ids);
        Ok(())
    }
}

impl<C: Clock> IdGenerator for MutexGenerator<C> {
    #[inline]
    fn next_id(&self) -> Result<Snowflake, Error> {
        Ok(self.id(self.issue(1, true)?))
    }

    fn try_next_id(&self) -> Result<Snowflake, Error> {
        Ok(self.id(self.issue(1, false)?))
    }

    fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error> {
        self.issue_into(ids, true)
    }

    fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error> {
        self.issue_into(ids, false)
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn worker(&self) -> u64 {
        self.worker
    }
}

impl<C> fmt::Debug for MutexGenerator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexGenerator")
            .field("layout", &self.layout)
            .field("worker", &self.worker)
            .field("last_tick", &*self.last.lock())
            .finish_non_exhaustive()
    }
}

//! The lock-free strategy: the whole state in one atomic.

use core::fmt;

use crossbeam_utils::CachePadded;

use super::builder::{Builder, Config};
use super::state::{TickCounter, TickRules, Verdict};
use super::wait::{self, BoundaryWatch};
use super::{IdGenerator, fill};
use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::id::Snowflake;
use crate::layout::Layout;

/// Lock-free: timestamp and sequence packed in one `AtomicU64`.
///
/// Each ID costs one clock read and one `fetch_add` while the clock stays in
/// the same unit, plus a `fetch_max` when it moves to the next; no caller ever
/// waits for another, and a batch reserves its whole range with one
/// `fetch_add`. The fastest strategy when the clock is cheap to read.
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
pub struct AtomicGenerator<C = SystemClock> {
    /// The last tick issued: `timestamp << sequence_bits | sequence` (table in
    /// the `state` module). Alone on its cache line so contended updates do not
    /// evict the read-only fields below.
    last: CachePadded<TickCounter>,
    clock: C,
    layout: Layout,
    rules: TickRules,
    watch: BoundaryWatch,
    worker: u64,
    worker_field: u64,
}

impl AtomicGenerator<SystemClock> {
    /// A generator for `worker` with the defaults of [`Builder`].
    ///
    /// # Errors
    ///
    /// As for [`Builder::build_atomic`].
    pub fn new(worker: u64) -> Result<Self, Error> {
        Builder::new().worker(worker).build_atomic()
    }
}

impl<C: Clock> AtomicGenerator<C> {
    pub(crate) fn from_config(config: Config<C>) -> Self {
        AtomicGenerator {
            last: CachePadded::new(TickCounter::new(config.last)),
            clock: config.clock,
            layout: config.layout,
            rules: config.rules,
            watch: BoundaryWatch::default(),
            worker: config.worker,
            worker_field: config.worker_field,
        }
    }

    /// Takes `count` ticks and returns the first once they may be issued.
    #[inline]
    fn issue(&self, count: u64) -> Result<u64, Error> {
        let now = self.layout.units_since_epoch(self.clock.unix_nanos());
        let first = self.last.take(count, self.rules.floor(now));
        match self.rules.verdict(first + (count - 1), now) {
            Verdict::Ready => Ok(first),
            Verdict::WaitUntil(unit) => {
                // The ticks are ours; hand them out once the clock allows.
                self.watch.until_unit(&self.clock, &self.layout, unit);
                Ok(first)
            }
            Verdict::Exhausted => Err(wait::exhausted(&self.layout)),
        }
    }

    #[inline]
    fn id(&self, tick: u64) -> Snowflake {
        Snowflake::from_u64(self.layout.compose_tick(tick, self.worker_field))
    }

    /// Takes `count` ticks only if no waiting is needed (a compare-and-swap
    /// loop, so a refusal consumes nothing).
    fn try_issue(&self, count: u64) -> Result<u64, Error> {
        let now_nanos = self.clock.unix_nanos();
        let now = self.layout.units_since_epoch(now_nanos);
        match self.last.try_take(self.rules, count, now) {
            Ok(first) => Ok(first),
            Err(Verdict::WaitUntil(unit)) => Err(wait::would_block(&self.layout, unit, now_nanos)),
            Err(_) => Err(wait::exhausted(&self.layout)),
        }
    }
}

impl<C: Clock> IdGenerator for AtomicGenerator<C> {
    #[inline]
    fn next_id(&self) -> Result<Snowflake, Error> {
        Ok(self.id(self.issue(1)?))
    }

    fn try_next_id(&self) -> Result<Snowflake, Error> {
        Ok(self.id(self.try_issue(1)?))
    }

    fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error> {
        let count = ids.len() as u64;
        if count == 0 {
            return Ok(());
        }
        // Once exhausted, refuse before adding: a batch adds `count` at a time,
        // and the counter's headroom must not be eaten by failed calls.
        if self.last.last() >= self.rules.max_tick() {
            return Err(wait::exhausted(&self.layout));
        }
        let first = self.issue(count)?;
        fill(&self.layout, self.worker_field, first, ids);
        Ok(())
    }

    fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let first = self.try_issue(ids.len() as u64)?;
        fill(&self.layout, self.worker_field, first, ids);
        Ok(())
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn worker(&self) -> u64 {
        self.worker
    }
}

impl<C> fmt::Debug for AtomicGenerator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicGenerator")
            .field("layout", &self.layout)
            .field("worker", &self.worker)
            .field("last_tick", &self.last.last())
            .finish_non_exhaustive()
    }
}

//! Configuring a generator.

use std::time::{Duration, UNIX_EPOCH};

use super::state::TickRules;
use super::{AtomicGenerator, MutexGenerator, TickerGenerator};
use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::id::Snowflake;
use crate::layout::Layout;

/// Configures and builds any of the three generators.
///
/// Defaults: [`Layout::TWITTER`], worker 0, [`SystemClock`], `max_lead` 0,
/// nothing to resume after, and (for the ticker) a background thread.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use flakegen::{Builder, IdGenerator, Layout};
///
/// let generator = Builder::new()
///     .layout(Layout::SONYFLAKE)
///     .worker(42)
///     .max_lead(Duration::from_millis(100))
///     .build_atomic()?;
/// let id = generator.next_id()?;
/// assert_eq!(Layout::SONYFLAKE.decode(id)?.worker, 42);
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until one of its `build_` methods is called"]
pub struct Builder<C = SystemClock> {
    layout: Layout,
    worker: u64,
    clock: C,
    max_lead: Duration,
    resume_after: Option<Snowflake>,
    ticker_thread: bool,
}

/// What every strategy is built from: a builder's settings, validated.
pub(crate) struct Config<C> {
    pub(crate) layout: Layout,
    pub(crate) worker: u64,
    pub(crate) worker_field: u64,
    pub(crate) clock: C,
    pub(crate) rules: TickRules,
    /// The tick to count on from: nothing at or below it is ever issued.
    pub(crate) last: u64,
    pub(crate) ticker_thread: bool,
}

impl Builder<SystemClock> {
    /// A builder with the defaults.
    pub fn new() -> Self {
        Builder {
            layout: Layout::TWITTER,
            worker: 0,
            clock: SystemClock,
            max_lead: Duration::ZERO,
            resume_after: None,
            ticker_thread: true,
        }
    }
}

impl Default for Builder<SystemClock> {
    fn default() -> Self {
        Builder::new()
    }
}

impl<C: Clock> Builder<C> {
    /// The bit layout of the IDs.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// This generator's worker id, unique among the generators that run at the
    /// same time with the same layout. Checked against the layout when building.
    pub fn worker(mut self, worker: u64) -> Self {
        self.worker = worker;
        self
    }

    /// The clock to read time from.
    pub fn clock<D: Clock>(self, clock: D) -> Builder<D> {
        Builder {
            layout: self.layout,
            worker: self.worker,
            clock,
            max_lead: self.max_lead,
            resume_after: self.resume_after,
            ticker_thread: self.ticker_thread,
        }
    }

    /// How far ahead of the clock an ID's timestamp may run.
    ///
    /// The generator's logical clock runs ahead when a unit's sequence is used
    /// up (it borrows the next unit) or when the clock steps backwards. With the
    /// default of zero, as in Twitter's algorithm, no ID's timestamp is ever
    /// later than the clock: calls wait instead. A lead lets bursts borrow
    /// future units, and rides out small backward steps, at the price of
    /// timestamps that can be up to `max_lead` early. Rounded down to whole units.
    pub fn max_lead(mut self, max_lead: Duration) -> Self {
        self.max_lead = max_lead;
        self
    }

    /// Never issue an ID at or below `last_id`, whatever the clock says.
    ///
    /// For restarts: store the last ID issued (or the largest in the database)
    /// and pass it here, and the new process carries on after it even if the
    /// clock moved backwards while it was down. If `last_id` was made by another
    /// worker, the generator skips the rest of that ID's time unit.
    pub fn resume_after(mut self, last_id: Snowflake) -> Self {
        self.resume_after = Some(last_id);
        self
    }

    /// Whether [`build_ticker`](Self::build_ticker) starts a background thread
    /// (the default). Without one, time moves forward only when
    /// [`TickerGenerator::tick`] is called or a caller has used up the current
    /// unit and reads the clock itself: for programs that drive the tick from
    /// their own event loop. Ignored by the other strategies.
    pub fn ticker_thread(mut self, spawn: bool) -> Self {
        self.ticker_thread = spawn;
        self
    }

    /// Builds a [`MutexGenerator`].
    ///
    /// # Errors
    ///
    /// [`Error::WorkerOutOfRange`] when the worker id does not fit the layout;
    /// [`Error::EpochInFuture`] when the clock reads earlier than the layout's
    /// epoch; [`Error::IdOutsideLayout`] or [`Error::TimestampExhausted`] when
    /// the `resume_after` ID does not belong to the layout or leaves no room.
    pub fn build_mutex(self) -> Result<MutexGenerator<C>, Error> {
        Ok(MutexGenerator::from_config(self.into_config()?))
    }

    /// Builds an [`AtomicGenerator`].
    ///
    /// # Errors
    ///
    /// As for [`build_mutex`](Self::build_mutex).
    pub fn build_atomic(self) -> Result<AtomicGenerator<C>, Error> {
        Ok(AtomicGenerator::from_config(self.into_config()?))
    }

    /// Builds a [`TickerGenerator`] and starts its thread.
    ///
    /// # Errors
    ///
    /// As for [`build_mutex`](Self::build_mutex), and [`Error::TickerSpawn`]
    /// when the thread cannot be started.
    pub fn build_ticker(self) -> Result<TickerGenerator<C>, Error>
    where
        C: 'static,
    {
        TickerGenerator::from_config(self.into_config()?)
    }

    fn into_config(self) -> Result<Config<C>, Error> {
        let layout = self.layout;
        if self.worker > layout.max_worker() {
            return Err(Error::WorkerOutOfRange {
                worker: self.worker,
                max: layout.max_worker(),
            });
        }
        let now = self.clock.unix_nanos();
        if now < layout.unit_start_nanos(0) {
            return Err(Error::EpochInFuture {
                epoch: layout.epoch(),
                now: UNIX_EPOCH + Duration::from_nanos(now),
            });
        }
        let lead_units = self.max_lead.as_nanos() / layout.unit().as_nanos();
        let rules = TickRules::new(&layout, u64::try_from(lead_units).unwrap_or(u64::MAX));
        let last = match self.resume_after {
            None => 0,
            Some(id) => {
                let parts = layout.decode(id)?;
                let last = if parts.worker == self.worker {
                    layout.tick_of(parts)
                } else {
                    // Any ID of ours in that unit could sort below `id`: skip the unit.
                    rules.floor(parts.timestamp + 1) - 1
                };
                if last >= rules.max_tick() {
                    return Err(super::wait::exhausted(&layout));
                }
                last
            }
        };
        Ok(Config {
            worker_field: layout.worker_field(self.worker),
            layout,
            worker: self.worker,
            clock: self.clock,
            rules,
            last,
            ticker_thread: self.ticker_thread,
        })
    }
}

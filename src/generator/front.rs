//! The one front: [`Generator`] implements [`IdGenerator`] once, over a raw
//! strategy that only reserves ticks.
//!
//! As `lock_api::Mutex<R, T>` puts one safe type in front of every raw lock,
//! `Generator<R, C>` puts one generator in front of every way of handing out
//! ticks. What the strategies share lives in [`Core`]: the clock, the layout
//! and its rules, the worker, the waiting and the mapping of refusals to
//! errors. What differs, how concurrent callers are kept apart, is the raw
//! strategy `R`, in `atomic.rs`, `mutex.rs` and `ticker.rs`.

use core::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::IdGenerator;
use super::state::{Refusal, TickRules};
use super::wait;
use crate::clock::{Clock, SystemClock};
use crate::error::{BuildError, IssueError, unix_millis};
use crate::id::Snowflake;
use crate::layout::Layout;
use crate::lease::{Acquired, Fence, Keeper, Lease, LeaseStatus, Limits, Pending, Release};

/// A Snowflake generator: the one implementation of [`IdGenerator`], over a
/// strategy `R` that says how concurrent callers synchronise and a [`Clock`] `C`.
///
/// Name it through its aliases, [`AtomicGenerator`](crate::AtomicGenerator),
/// [`MutexGenerator`](crate::MutexGenerator) and
/// [`TickerGenerator`](crate::TickerGenerator); build it with
/// [`Builder`](crate::Builder), or with `new` for the defaults. Every
/// strategy issues the same IDs under the same rules: the IDs depend only on
/// the calls and the clock, never on the strategy.
///
/// # Examples
///
/// ```
/// use flakegen::{AtomicGenerator, IdGenerator, MutexGenerator};
///
/// let atomic = AtomicGenerator::new(1)?;
/// let mutex = MutexGenerator::new(2)?;
/// assert!(atomic.next_id()? < atomic.next_id()?);
/// assert_eq!(mutex.worker(), 2);
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct Generator<R: Raw<C>, C: Clock = SystemClock> {
    raw: R,
    core: Core<C>,
}

/// What every strategy shares, validated once when building.
pub struct Core<C> {
    pub(crate) clock: C,
    pub(crate) rules: TickRules,
    worker: u64,
    worker_field: u64,
    /// The longest a call waits for the clock, in ns; never below one unit,
    /// so waiting out a used-up unit is never refused.
    max_wait_nanos: u64,
    /// The lease's fence, which caps the ticks issued; no cap without a lease.
    fence: Arc<Fence>,
    keeper: Option<Keeper>,
}

/// A generator's settings as the builder collects them, before validation.
#[derive(Clone, Debug)]
pub(crate) struct Settings<C> {
    pub(crate) layout: Layout,
    /// `None`: worker 0, or the lease's.
    pub(crate) worker: Option<u64>,
    pub(crate) clock: C,
    pub(crate) max_lead: Duration,
    pub(crate) max_wait: Duration,
    pub(crate) resume_after: Option<Snowflake>,
    pub(crate) lease: Option<Leased>,
}

/// A lease, with the generator's clock shared with the lease's thread.
#[derive(Clone)]
pub(crate) struct Leased {
    pub(crate) lease: Lease,
    pub(crate) clock: Arc<dyn Clock>,
}

impl fmt::Debug for Leased {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The clock is the builder's, shown beside it.
        self.lease.fmt(f)
    }
}

/// The default of [`Builder::max_wait`](crate::Builder::max_wait).
pub(crate) const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);

impl Settings<SystemClock> {
    pub(crate) const fn new() -> Self {
        Settings {
            layout: Layout::TWITTER,
            worker: None,
            clock: SystemClock,
            max_lead: Duration::ZERO,
            max_wait: DEFAULT_MAX_WAIT,
            resume_after: None,
            lease: None,
        }
    }
}

/// What a call does when its ticks must wait for the clock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Sleeps on the caller's thread, within `max_wait`.
    Block,
    /// Gives the ticks back and says how long to wait: the async calls
    /// sleep their own way, then ask again.
    GiveBack,
}

/// Ticks a raw strategy has set aside for a blocking call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserved {
    /// Ticks from this one on may be issued at once: the common case.
    Ready(u64),
    /// Ticks from `first` on, reserved when the clock read unit `now`, may
    /// not be issued yet, or ever: the front settles them.
    Pending {
        /// The first tick of the range.
        first: u64,
        /// The clock's unit the reservation was made against.
        now: u64,
    },
}

impl Reserved {
    /// Ticks from `first` on, reserved against unit `now`: ready if they
    /// end below `limit` (`TickRules::limit(now)`, or a view of it) and `cap`.
    #[inline]
    pub(crate) fn judged(first: u64, end: u64, now: u64, limit: u64, cap: u64) -> Reserved {
        if end < limit.min(cap) {
            Reserved::Ready(first)
        } else {
            Reserved::Pending { first, now }
        }
    }
}

pub(crate) use self::sealed::{Raw, Start};

mod sealed {
    use super::{BuildError, Clock, Core, Instant, Refusal, Reserved, wait};

    /// How a strategy keeps concurrent callers apart: its only job is to hand
    /// out disjoint ranges of ticks. Public in name only (the module is
    /// private), so no other crate can implement it.
    pub trait Raw<C: Clock>: Sized + Send + Sync {
        /// The public name of the generator, for `Debug`.
        const NAME: &'static str;

        /// Reserves `count` (at least 1) ticks for a blocking call, whatever
        /// the clock, and says whether they may be issued at once below the
        /// cap: the front waits for them if need be. `Err` only for
        /// `Refusal::Exhausted`, and then nothing is reserved.
        fn reserve(&self, core: &Core<C>, count: u64) -> Result<Reserved, Refusal>;

        /// Reserves `count` ticks only if they may be issued at once; otherwise
        /// reserves nothing and says why, with the clock reading (ns) it judged by.
        fn try_reserve(&self, core: &Core<C>, count: u64) -> Result<u64, (Refusal, u64)>;

        /// Blocks until the clock reaches the start of `unit`, or until the
        /// monotonic clock reaches `give_up`; the clock read `now_nanos` a
        /// moment ago. `Err` with how far behind the clock still is.
        #[cold]
        fn wait_until(
            &self,
            core: &Core<C>,
            unit: u64,
            now_nanos: u64,
            give_up: Option<Instant>,
        ) -> Result<(), u64> {
            wait::until_unit(&core.clock, core.layout(), unit, now_nanos, give_up)
        }

        /// Gives back ticks `first..=end`, reserved by `reserve` and refused
        /// at the fence, unless later ticks were reserved since: a refusal
        /// then consumes nothing, and a generator whose lease recovers
        /// issues again at once.
        fn give_back(&self, first: u64, end: u64);

        /// Moves the counter to `tick` if it is below, so that every tick
        /// reserved from now on lies past it; returns the last tick handed
        /// out before. One read-modify-write, so each reservation is either
        /// counted in the result or lies past `tick`.
        fn seal(&self, tick: u64) -> u64;

        /// The last tick handed out, for `Debug`.
        fn last_issued(&self) -> u64;
    }

    /// How a strategy is set up by default, apart from [`Raw`] because the
    /// ticker's default (a thread with its own clone of the clock) needs more
    /// of the clock than issuing does.
    pub trait Start<C: Clock>: Raw<C> {
        /// Sets up the strategy with nothing issued at or below tick `last`.
        fn start(core: &Core<C>, last: u64) -> Result<Self, BuildError>;
    }
}

/// A generator's settings, checked, with its lease (if any) being acquired
/// on the lease's thread.
struct Prepared<C> {
    worker: Option<u64>,
    clock: C,
    rules: TickRules,
    max_wait_nanos: u64,
    resume_after: Option<crate::layout::Fields>,
    pending: Option<Pending>,
}

impl<C: Clock> Core<C> {
    /// Validates `settings`, acquires the lease if any (waiting for a
    /// previous holder's fence), and returns the core and the tick to count
    /// on from.
    fn new(settings: Settings<C>) -> Result<(Core<C>, u64), BuildError> {
        let mut prepared = Prepared::new(settings)?;
        let acquired = match prepared.pending.take() {
            None => None,
            Some(pending) => {
                let acquired = pending.wait()?;
                while let Some(nap) = acquired.start_step()? {
                    std::thread::sleep(nap);
                }
                Some(acquired)
            }
        };
        prepared.finish(acquired)
    }

    /// [`new`](Self::new) for async code: every wait is awaited with tokio's
    /// timer, and the registry is only ever called from the lease's thread.
    #[cfg(feature = "tokio")]
    async fn new_async(settings: Settings<C>) -> Result<(Core<C>, u64), BuildError> {
        let mut prepared = Prepared::new(settings)?;
        let acquired = match prepared.pending.take() {
            None => None,
            Some(pending) => {
                let acquired = pending.wait_async().await?;
                while let Some(nap) = acquired.start_step()? {
                    tokio::time::sleep(nap).await;
                }
                Some(acquired)
            }
        };
        prepared.finish(acquired)
    }
}

impl<C: Clock> Prepared<C> {
    /// Checks what can be checked without a registry, and starts the lease.
    fn new(settings: Settings<C>) -> Result<Self, BuildError> {
        let Settings {
            layout,
            worker,
            clock,
            max_lead,
            max_wait,
            resume_after,
            lease,
        } = settings;
        if let Some(worker) = worker.filter(|&w| w > layout.max_worker()) {
            return Err(BuildError::WorkerOutOfRange {
                worker,
                max: layout.max_worker(),
            });
        }
        let now = clock.unix_nanos();
        if now < layout.unit_start_nanos(0) {
            return Err(BuildError::EpochInFuture {
                epoch_unix_millis: unix_millis(layout.epoch()),
                now_unix_millis: now / 1_000_000,
            });
        }
        if layout.units_since_epoch(now) > layout.max_timestamp() {
            // A generator built now could only issue the last unit, which an
            // earlier one may have issued already: every restart would repeat it.
            return Err(BuildError::LayoutExhausted {
                end_unix_millis: unix_millis(layout.exhausted_at()),
            });
        }
        let unit_nanos = layout.unit().as_nanos();
        let max_wait_nanos = u64::try_from(max_wait.as_nanos().max(unit_nanos)).unwrap_or(u64::MAX);
        let lead_units = u64::try_from(max_lead.as_nanos() / unit_nanos).unwrap_or(u64::MAX);
        let rules = TickRules::new(layout, lead_units);
        let resume_after = resume_after
            .map(|id| {
                layout
                    .decode(id)
                    .map_err(BuildError::ResumeAfterOtherLayout)
            })
            .transpose()?;
        let pending = match (worker, lease) {
            (Some(_), Some(_)) => return Err(BuildError::WorkerAndLease),
            (_, None) => None,
            (None, Some(Leased { lease, clock })) => {
                let limits = Limits {
                    max_lead,
                    lead_units,
                    max_wait_nanos,
                };
                Some(lease.start(layout, clock, limits)?)
            }
        };
        Ok(Prepared {
            worker,
            clock,
            rules,
            max_wait_nanos,
            resume_after,
            pending,
        })
    }

    /// The core, once the lease (if any) is `acquired`; and the tick to
    /// count on from.
    fn finish(self, acquired: Option<Acquired>) -> Result<(Core<C>, u64), BuildError> {
        let Prepared {
            worker,
            clock,
            rules,
            max_wait_nanos,
            resume_after,
            pending: _,
        } = self;
        let layout = *rules.layout();
        let (worker, lease_last, fence, keeper) = match acquired {
            None => (worker.unwrap_or(0), 0, Arc::new(Fence::none(&layout)), None),
            Some(acquired) => (
                acquired.worker,
                acquired.last_tick,
                acquired.fence,
                Some(acquired.keeper),
            ),
        };
        let resume_last = match resume_after {
            None => 0,
            Some(fields) if fields.worker == worker => layout.tick_of(fields),
            // Any ID of ours in that unit could sort below `id`: skip the
            // unit. (Not `rules.floor`, which clamps to the last unit.)
            Some(fields) => layout.first_tick(fields.timestamp + 1) - 1,
        };
        let last = resume_last.max(lease_last);
        let core = Core {
            clock,
            rules,
            worker,
            worker_field: layout.worker_field(worker),
            max_wait_nanos,
            fence,
            keeper,
        };
        if last >= rules.max_tick() {
            // Nothing was issued: dropping the core gives the lease back
            // without a wait for the next holder.
            return Err(BuildError::ResumeAfterExhausted {
                end_unix_millis: unix_millis(layout.exhausted_at()),
            });
        }
        // The first tick it may issue, held back to within max_lead of the
        // clock, as the clock reads now that any lease has been acquired.
        let wait_nanos = core.ready_at(last).saturating_sub(core.clock.unix_nanos());
        if wait_nanos > max_wait_nanos {
            return Err(BuildError::ResumeAhead { wait_nanos });
        }
        Ok((core, last))
    }
}

impl<C: Clock> Core<C> {
    /// The clock reading (ns) from which the tick after `last` may be issued.
    fn ready_at(&self, last: u64) -> u64 {
        let first_unit = self.rules.ready_unit(last + 1);
        self.layout().unit_start_nanos(first_unit)
    }

    #[inline]
    pub(crate) fn layout(&self) -> &Layout {
        self.rules.layout()
    }

    /// The clock's unit now.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.layout().units_since_epoch(self.clock.unix_nanos())
    }

    #[inline]
    fn id(&self, tick: u64) -> Snowflake {
        Snowflake::from_u64(self.layout().compose_tick(tick, self.worker_field))
    }

    /// Writes the IDs of ticks `first, first + 1, ...` into `ids`.
    #[inline]
    fn fill(&self, first: u64, ids: &mut [Snowflake]) {
        for (tick, slot) in (first..).zip(ids.iter_mut()) {
            *slot = self.id(tick);
        }
    }

    /// How long until `unit` starts, seen from clock reading `now_nanos`, if
    /// that is worth waiting for: a wait beyond `max_wait` is an error.
    fn wait_for(&self, unit: u64, now_nanos: u64) -> Result<u64, IssueError> {
        let wait = self
            .layout()
            .unit_start_nanos(unit)
            .saturating_sub(now_nanos);
        if wait > self.max_wait_nanos {
            Err(IssueError::ClockBehind { behind_nanos: wait })
        } else {
            Ok(wait)
        }
    }

    /// Whether clock reading `now_nanos` has reached the start of `unit`: a
    /// wait for it returns at once (a ticker whose thread is late publishes
    /// the unit itself).
    fn reached(&self, unit: u64, now_nanos: u64) -> bool {
        now_nanos >= self.layout().unit_start_nanos(unit)
    }

    /// When a wait that starts now must give up, by the monotonic clock:
    /// `max_wait` bounds every wait, whatever the generator's clock does
    /// meanwhile (stops, steps back). `None`: no bound.
    fn give_up(&self) -> Option<Instant> {
        Instant::now().checked_add(Duration::from_nanos(self.max_wait_nanos))
    }

    /// The first tick that may not be issued: the lease's fence.
    #[inline]
    pub(crate) fn cap(&self) -> u64 {
        self.fence.cap()
    }

    /// The error for a call refused at clock reading `now_nanos`.
    #[cold]
    fn refusal_error(&self, refusal: Refusal, now_nanos: u64) -> IssueError {
        match refusal {
            Refusal::Exhausted => self.exhausted(),
            Refusal::Fenced if self.fence.is_closed() => IssueError::ShutDown,
            Refusal::Fenced => IssueError::LeaseLost {
                fence_unix_millis: self.fence.unix_ms(),
            },
            Refusal::WaitUntil(unit) => match self.wait_for(unit, now_nanos) {
                Ok(wait_nanos) => IssueError::WouldBlock { wait_nanos },
                Err(behind) => behind,
            },
        }
    }

    #[cold]
    fn exhausted(&self) -> IssueError {
        IssueError::TimestampExhausted {
            end_unix_millis: unix_millis(self.layout().exhausted_at()),
        }
    }
}

impl<R: Start<C>, C: Clock> Generator<R, C> {
    pub(crate) fn from_settings(settings: Settings<C>) -> Result<Self, BuildError> {
        Self::assemble(settings, R::start)
    }
}

impl<R: Raw<C>, C: Clock> Generator<R, C> {
    /// Validates `settings` and starts the raw strategy with `start`.
    pub(crate) fn assemble(
        settings: Settings<C>,
        start: impl FnOnce(&Core<C>, u64) -> Result<R, BuildError>,
    ) -> Result<Self, BuildError> {
        let (core, last) = Core::new(settings)?;
        let raw = start(&core, last)?;
        Ok(Generator { raw, core })
    }

    /// [`assemble`](Self::assemble) for async code; also waits, with tokio's
    /// timer, for the first unit it may issue in (within `max_wait`), so
    /// that its first call need not block.
    #[cfg(feature = "tokio")]
    pub(crate) async fn assemble_async(
        settings: Settings<C>,
        start: impl FnOnce(&Core<C>, u64) -> Result<R, BuildError>,
    ) -> Result<Self, BuildError> {
        let (core, last) = Core::new_async(settings).await?;
        let raw = start(&core, last)?;
        let ready_at = core.ready_at(last);
        // Bounded by max_wait on the monotonic clock, whatever the clock does.
        let give_up = core.give_up();
        loop {
            let left = ready_at.saturating_sub(core.clock.unix_nanos());
            if left == 0 || give_up.is_some_and(|at| Instant::now() >= at) {
                break;
            }
            tokio::time::sleep(Duration::from_nanos(left)).await;
        }
        Ok(Generator { raw, core })
    }

    pub(crate) fn raw(&self) -> &R {
        &self.raw
    }

    pub(crate) fn core(&self) -> &Core<C> {
        &self.core
    }

    /// Reserves `count` ticks and returns the first once they may be issued.
    #[inline]
    fn issue(&self, count: u64, wait: Wait) -> Result<u64, IssueError> {
        match self.raw.reserve(&self.core, count) {
            Ok(Reserved::Ready(first)) => Ok(first),
            Ok(Reserved::Pending { first, now }) => {
                self.settle(first, first + (count - 1), now, wait)
            }
            Err(_) => Err(self.core.exhausted()),
        }
    }

    /// `issue`'s slow path: ticks `first..=end`, reserved against unit `now`,
    /// are ahead of the clock or past the layout's end.
    #[cold]
    #[inline(never)]
    fn settle(&self, first: u64, end: u64, now: u64, wait: Wait) -> Result<u64, IssueError> {
        match self.core.rules.verdict(end, now, self.core.cap()) {
            // The clock moved on between the raw strategy's reads.
            Ok(()) => Ok(first),
            Err(Refusal::Fenced) => self.settle_at_fence(first, end, now, wait),
            // The ticks stay reserved and are never issued: a gap, never a repeat.
            Err(Refusal::Exhausted) => Err(self.core.refusal_error(Refusal::Exhausted, 0)),
            Err(Refusal::WaitUntil(unit)) => {
                let now_nanos = self.core.clock.unix_nanos();
                // Past this point a wait only blocks if the clock is short of the unit.
                if wait == Wait::GiveBack && !self.core.reached(unit, now_nanos) {
                    return Err(self.give_back(first, end, unit, now_nanos));
                }
                self.core.wait_for(unit, now_nanos)?;
                // The ticks are ours; hand them out once the clock allows, or
                // skip them if it does not within max_wait (a gap, never a repeat).
                self.raw
                    .wait_until(&self.core, unit, now_nanos, self.core.give_up())
                    .map_err(|behind_nanos| IssueError::ClockBehind { behind_nanos })?;
                Ok(first)
            }
        }
    }

    /// `settle` for ticks `first..=end` at or past the lease's fence. If they
    /// are also ahead of the clock, wait for it as for any lead: a lease
    /// whose fence is only its predecessor's (or just confirmed) is renewed
    /// past them before the clock gets there. Refused, they are given back.
    #[cold]
    fn settle_at_fence(
        &self,
        first: u64,
        end: u64,
        now: u64,
        wait: Wait,
    ) -> Result<u64, IssueError> {
        if let Err(Refusal::WaitUntil(unit)) = self.core.rules.verdict(end, now, u64::MAX) {
            let now_nanos = self.core.clock.unix_nanos();
            if wait == Wait::GiveBack && !self.core.reached(unit, now_nanos) {
                return Err(self.give_back(first, end, unit, now_nanos));
            }
            let give_up = self.core.give_up();
            if self.core.wait_for(unit, now_nanos).is_ok()
                && self
                    .raw
                    .wait_until(&self.core, unit, now_nanos, give_up)
                    .is_ok()
                && end < self.core.cap()
            {
                return Ok(first);
            }
        }
        self.raw.give_back(first, end);
        Err(self.core.refusal_error(Refusal::Fenced, 0))
    }

    /// Gives back ticks `first..=end` that may not be issued before `unit`,
    /// and says how long that is from clock reading `now_nanos` (or that it
    /// is further than `max_wait`).
    #[cold]
    fn give_back(&self, first: u64, end: u64, unit: u64, now_nanos: u64) -> IssueError {
        self.raw.give_back(first, end);
        self.core.refusal_error(Refusal::WaitUntil(unit), now_nanos)
    }

    fn try_issue(&self, count: u64) -> Result<u64, IssueError> {
        self.raw
            .try_reserve(&self.core, count)
            .map_err(|(refusal, now_nanos)| self.core.refusal_error(refusal, now_nanos))
    }
}

impl<R: Raw<C>, C: Clock> Drop for Generator<R, C> {
    /// Shuts the generator down (see [`IdGenerator::shutdown`]) without
    /// waiting: it returns at once, and the lease's thread gives the lease back.
    fn drop(&mut self) {
        drop(self.shutdown());
    }
}

impl<R: Start<SystemClock>> Generator<R, SystemClock> {
    /// A generator for `worker` with the defaults of [`Builder`](crate::Builder).
    ///
    /// # Errors
    ///
    /// As for [`Builder::build_atomic`](crate::Builder::build_atomic) (and,
    /// for the ticker, [`BuildError::TickerSpawn`]).
    pub fn new(worker: u64) -> Result<Self, BuildError> {
        Self::from_settings(Settings {
            worker: Some(worker),
            ..Settings::new()
        })
    }
}

impl<R: Raw<C>, C: Clock> IdGenerator for Generator<R, C> {
    #[inline]
    fn next_id(&self) -> Result<Snowflake, IssueError> {
        Ok(self.core.id(self.issue(1, Wait::Block)?))
    }

    #[inline]
    fn next_id_or_wait_hint(&self) -> Result<Snowflake, IssueError> {
        Ok(self.core.id(self.issue(1, Wait::GiveBack)?))
    }

    #[inline]
    fn try_next_id(&self) -> Result<Snowflake, IssueError> {
        Ok(self.core.id(self.try_issue(1)?))
    }

    fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        if !ids.is_empty() {
            let first = self.issue(ids.len() as u64, Wait::Block)?;
            self.core.fill(first, ids);
        }
        Ok(())
    }

    fn next_ids_or_wait_hint(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        if !ids.is_empty() {
            let first = self.issue(ids.len() as u64, Wait::GiveBack)?;
            self.core.fill(first, ids);
        }
        Ok(())
    }

    fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        if !ids.is_empty() {
            let first = self.try_issue(ids.len() as u64)?;
            self.core.fill(first, ids);
        }
        Ok(())
    }

    fn layout(&self) -> &Layout {
        self.core.layout()
    }

    fn worker(&self) -> u64 {
        self.core.worker
    }

    fn max_wait(&self) -> Duration {
        Duration::from_nanos(self.core.max_wait_nanos)
    }

    fn lease(&self) -> Option<LeaseStatus> {
        self.core.keeper.as_ref().map(Keeper::status)
    }

    fn shutdown(&self) -> Release {
        let Some(keeper) = &self.core.keeper else {
            return Release::nothing();
        };
        let last = match self.core.fence.close() {
            // Callers that read the old cap may still issue below it; every
            // tick reserved after the seal lies at or past it, and is refused
            // whichever cap its caller reads. So nothing is issued past `last`.
            Some(cap) => {
                let allowed = cap - 1;
                self.raw.seal(allowed).min(allowed)
            }
            // Shut down already: the first call decided where the fence goes.
            None => 0,
        };
        keeper.release(last)
    }
}

impl<R: Raw<C>, C: Clock> fmt::Debug for Generator<R, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(R::NAME)
            .field("layout", self.core.layout())
            .field("worker", &self.core.worker)
            .field("last_tick", &self.raw.last_issued())
            .finish_non_exhaustive()
    }
}

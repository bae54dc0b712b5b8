//! The build pipeline: the settings checked, the lease (if any) acquired on
//! its own thread and waited for, the core put together, and the raw
//! strategy started on the first tick it may issue.

#[cfg(feature = "std")]
use core::fmt;
use core::time::Duration;

use alloc::sync::Arc;
#[cfg(feature = "std")]
use std::time::Instant;

use super::claims::Claims;
use super::core::{Core, Readiness};
use super::error::BuildError;
use super::front::{Generator, Raw, Start};
use super::seats::Seat;
use super::state::TickRules;
use crate::clock::Clock;
#[cfg(feature = "std")]
use crate::clock::SystemClock;
use crate::clock::units::{floor_millis, nanos};
use crate::id::Snowflake;
use crate::layout::{Fields, Layout};
use crate::lease::Claim;
#[cfg(feature = "std")]
use crate::lease::{Lease, LeaseHandle, Pending};

/// A generator's settings as the builder collects them, before validation.
#[derive(Clone, Debug)]
pub(crate) struct Settings<C> {
    pub(crate) layout: Layout,
    /// `None`: the lease's, or none given (an error without a lease).
    pub(crate) worker: Option<u64>,
    pub(crate) clock: C,
    pub(crate) max_lead: Duration,
    pub(crate) max_wait: Duration,
    pub(crate) resume_after: Option<Snowflake>,
    #[cfg(feature = "std")]
    pub(crate) lease: Option<LeaseSetting>,
}

/// A lease as the builder was given it, with the generator's clock shared
/// with the lease's thread.
#[cfg(feature = "std")]
#[derive(Clone)]
pub(crate) struct LeaseSetting {
    pub(crate) lease: Lease,
    pub(crate) clock: Arc<dyn Clock>,
}

#[cfg(feature = "std")]
impl fmt::Debug for LeaseSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The clock is the builder's, shown beside it.
        self.lease.fmt(f)
    }
}

/// The default of [`Builder::max_wait`](crate::Builder::max_wait).
pub(crate) const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);

/// The longest a waiting build sleeps before it looks at its lease again.
#[cfg(feature = "std")]
const START_NAP: Duration = Duration::from_millis(50);

#[cfg(feature = "std")]
impl Settings<SystemClock> {
    pub(crate) const fn new() -> Self {
        Settings::on(SystemClock)
    }
}

impl<C> Settings<C> {
    /// The defaults, on `clock`.
    pub(crate) const fn on(clock: C) -> Self {
        Settings {
            layout: Layout::TWITTER,
            worker: None,
            clock,
            max_lead: Duration::ZERO,
            max_wait: DEFAULT_MAX_WAIT,
            resume_after: None,
            #[cfg(feature = "std")]
            lease: None,
        }
    }
}

/// A generator's settings, checked, with its lease (if any) being acquired
/// on the lease's thread.
struct Prepared<C> {
    worker: Option<u64>,
    clock: C,
    rules: TickRules,
    max_wait_nanos: u64,
    resume_after: Option<Fields>,
    #[cfg(feature = "std")]
    pending: Option<Pending>,
}

/// A build's wait for its lease's start.
#[cfg(feature = "std")]
struct StartWait {
    /// How long the build may wait beyond `max_wait` (`Lease::start_wait`).
    start_wait_nanos: u64,
    /// When it gives up, by the monotonic clock; set at the first look.
    give_up: Option<Instant>,
}

impl<C: Clock> Core<C> {
    /// Validates `settings` and puts the core together: without `std`
    /// there is no lease to wait for.
    #[cfg(not(feature = "std"))]
    fn build(settings: Settings<C>) -> Result<(Core<C>, u64), BuildError> {
        Prepared::new(settings)?.finish()
    }

    /// Validates `settings`, acquires the lease if any (waiting for a
    /// previous holder's fence), and returns the core and the tick to count
    /// on from. A build that fails once the lease is acquired gives it back,
    /// and waits (within the registry's timeout) for the registry to confirm.
    #[cfg(feature = "std")]
    fn build(settings: Settings<C>) -> Result<(Core<C>, u64), BuildError> {
        let mut prepared = Prepared::new(settings)?;
        let Some(pending) = prepared.pending.take() else {
            return prepared.finish(None);
        };
        let mut wait = StartWait::new(pending.start_wait);
        let lease = pending.wait()?;
        let started = (|| {
            while let Some(nap) = prepared.start_step(&lease, &mut wait)? {
                std::thread::sleep(nap);
            }
            prepared.start(&lease.latest(), 0)
        })();
        match started {
            Ok(_) => prepared.finish(Some(lease)),
            Err(e) => {
                // Best effort: the error to report is the build's.
                let _ = lease.give_back().wait(Lease::DEFAULT_TIMEOUT);
                Err(e)
            }
        }
    }

    /// [`build`](Self::build) for async code: every wait is awaited with
    /// tokio's timer, and the registry is only ever called from the lease's thread.
    #[cfg(feature = "tokio")]
    async fn build_async(settings: Settings<C>) -> Result<(Core<C>, u64), BuildError> {
        let mut prepared = Prepared::new(settings)?;
        let Some(pending) = prepared.pending.take() else {
            return prepared.finish(None);
        };
        let mut wait = StartWait::new(pending.start_wait);
        let lease = pending.wait_async().await?;
        let started = async {
            while let Some(nap) = prepared.start_step(&lease, &mut wait)? {
                tokio::time::sleep(nap).await;
            }
            prepared.start(&lease.latest(), 0)
        };
        match started.await {
            Ok(_) => prepared.finish(Some(lease)),
            Err(e) => {
                let _ = lease.give_back().wait_async(Lease::DEFAULT_TIMEOUT).await;
                Err(e)
            }
        }
    }
}

#[cfg(feature = "std")]
impl StartWait {
    fn new(start_wait: Duration) -> Self {
        StartWait {
            start_wait_nanos: nanos(start_wait),
            give_up: None,
        }
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
            #[cfg(feature = "std")]
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
                epoch_unix_millis: layout.epoch_unix_millis(),
                now_unix_millis: floor_millis(now),
            });
        }
        if layout.units_since_epoch(now) > layout.max_timestamp() {
            // A generator built now could only issue the last unit, which an
            // earlier one may have issued already: every restart would repeat it.
            return Err(BuildError::LayoutExhausted {
                end_unix_millis: layout.exhausted_at_unix_millis(),
            });
        }
        let unit_nanos = layout.unit_nanos();
        let max_wait_nanos = nanos(max_wait).max(unit_nanos);
        let lead_units = nanos(max_lead) / unit_nanos;
        let rules = TickRules::new(layout, lead_units);
        let resume_after = resume_after
            .map(|id| {
                layout
                    .decode(id)
                    .map_err(BuildError::ResumeAfterOtherLayout)
            })
            .transpose()?;
        #[cfg(feature = "std")]
        let pending = match (worker, lease) {
            (Some(_), Some(_)) => return Err(BuildError::WorkerAndLease),
            (None, None) => return Err(BuildError::NoWorker),
            (Some(_), None) => None,
            (None, Some(LeaseSetting { lease, clock })) => {
                Some(lease.start(layout, clock, max_lead)?)
            }
        };
        #[cfg(not(feature = "std"))]
        if worker.is_none() {
            return Err(BuildError::NoWorker);
        }
        Ok(Prepared {
            worker,
            clock,
            rules,
            max_wait_nanos,
            resume_after,
            #[cfg(feature = "std")]
            pending,
        })
    }

    /// One step of waiting for the lease's start (the previous holder's
    /// fence) where it lies further ahead than `max_wait`: how long to sleep
    /// before the next step, or `None` once the generator's own wait is
    /// within `max_wait`. A start further ahead than `max_wait` and
    /// [`Lease::start_wait`] refuses at once, and no wait outlasts what the
    /// first look saw, by the monotonic clock, so a clock that stops cannot
    /// hold the build. Sync and async builds sleep their own way between steps.
    #[cfg(feature = "std")]
    fn start_step(
        &self,
        lease: &LeaseHandle,
        wait: &mut StartWait,
    ) -> Result<Option<Duration>, BuildError> {
        let claim = lease.latest();
        let now_nanos = self.clock.unix_nanos();
        let left = match Readiness::of(&self.rules, self.max_wait_nanos, claim.last(), now_nanos) {
            Readiness::Within(_) => return Ok(None),
            Readiness::Exhausted => return Err(self.fence_exhausted(&claim)),
            Readiness::Beyond(left) => left,
        };
        if lease.lost_for_good() {
            return Err(BuildError::Lease(lease.lost()));
        }
        let bound = self.max_wait_nanos.max(wait.start_wait_nanos);
        let give_up = match wait.give_up {
            Some(at) => at,
            None if left > bound => Instant::now(),
            None => *wait
                .give_up
                .insert(Instant::now() + Duration::from_nanos(left)),
        };
        if Instant::now() >= give_up {
            // Nothing was issued: dropping the lease gives it back, its
            // fence where the previous holder left it.
            return Err(BuildError::FenceAhead {
                worker: claim.worker(),
                wait_nanos: left,
            });
        }
        Ok(Some(
            Duration::from_nanos(left - self.max_wait_nanos).min(START_NAP),
        ))
    }

    fn fence_exhausted(&self, claim: &Claim) -> BuildError {
        BuildError::FenceExhausted {
            worker: claim.worker(),
            end_unix_millis: self.rules.layout().exhausted_at_unix_millis(),
        }
    }

    /// The tick to count on from under `claim` (and `resume_after`, and
    /// `floor`: the last tick a generator of this process issued on the
    /// same seat), if it may be issued within `max_wait`.
    fn start(&self, claim: &Claim, floor: u64) -> Result<u64, BuildError> {
        let layout = self.rules.layout();
        let resume_last = match self.resume_after {
            None => 0,
            Some(fields) if fields.worker == claim.worker() => layout.tick_of(fields),
            // Any ID of ours in that unit could sort below `id`: skip the
            // unit. (Not `rules.floor`, which clamps to the last unit.)
            Some(fields) => layout.first_tick(fields.timestamp + 1) - 1,
        };
        let last = resume_last.max(claim.last()).max(floor);
        let now_nanos = self.clock.unix_nanos();
        match Readiness::of(&self.rules, self.max_wait_nanos, last, now_nanos) {
            Readiness::Within(_) => Ok(last),
            Readiness::Exhausted if claim.last() >= resume_last => Err(self.fence_exhausted(claim)),
            Readiness::Exhausted => Err(BuildError::ResumeAfterExhausted {
                end_unix_millis: layout.exhausted_at_unix_millis(),
            }),
            Readiness::Beyond(wait_nanos) => Err(BuildError::ResumeAhead { wait_nanos }),
        }
    }

    /// The core, once the lease (if any) is acquired and its start within
    /// `max_wait`; and the tick to count on from.
    fn finish(
        self,
        #[cfg(feature = "std")] lease: Option<LeaseHandle>,
    ) -> Result<(Core<C>, u64), BuildError> {
        #[cfg(feature = "std")]
        let leased = lease.as_ref().map(LeaseHandle::latest);
        #[cfg(not(feature = "std"))]
        let leased = None;
        let (claim, seat, floor) = match leased {
            None => {
                // Checked when preparing: a generator without a lease has one.
                let worker = self.worker.ok_or(BuildError::NoWorker)?;
                let layout = *self.rules.layout();
                let (seat, floor) = Seat::take(layout, worker, self.clock.own_time())?;
                let claim = Arc::new(Claim::unleased(&layout, worker));
                (claim, Some(seat), floor)
            }
            Some(claim) => (claim, None, 0),
        };
        let last = self.start(&claim, floor)?;
        let core = Core {
            clock: self.clock,
            rules: self.rules,
            max_wait_nanos: self.max_wait_nanos,
            claims: Claims::new(claim),
            #[cfg(feature = "std")]
            lease,
            seat,
        };
        Ok((core, last))
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
        let (core, last) = Core::build(settings)?;
        let raw = start(&core, last)?;
        Ok(Generator::from_parts(raw, core))
    }

    /// [`assemble`](Self::assemble) for async code; also waits, with tokio's
    /// timer, for the first unit it may issue in (within `max_wait`), so
    /// that its first call need not block.
    #[cfg(feature = "tokio")]
    pub(crate) async fn assemble_async(
        settings: Settings<C>,
        start: impl FnOnce(&Core<C>, u64) -> Result<R, BuildError>,
    ) -> Result<Self, BuildError> {
        let (core, last) = Core::build_async(settings).await?;
        let raw = start(&core, last)?;
        // Bounded by max_wait on the monotonic clock, whatever the clock does.
        let give_up = core.give_up();
        while let Readiness::Within(left) = core.readiness(last) {
            if left == 0 || give_up.is_some_and(|at| Instant::now() >= at) {
                break;
            }
            tokio::time::sleep(Duration::from_nanos(left)).await;
        }
        Ok(Generator::from_parts(raw, core))
    }
}

#[cfg(feature = "std")]
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

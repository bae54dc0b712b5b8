//! Configuring a generator.

use core::time::Duration;

#[cfg(feature = "std")]
use alloc::boxed::Box;
#[cfg(feature = "std")]
use alloc::sync::Arc;

use super::AtomicGenerator;
#[cfg(feature = "std")]
use super::build::LeaseSetting;
use super::build::Settings;
use super::error::BuildError;
use super::front::{Generator, Start};
#[cfg(feature = "std")]
use super::{IdGenerator, MutexGenerator, Strategy, Ticker, TickerGenerator};
use crate::clock::Clock;
#[cfg(feature = "std")]
use crate::clock::SystemClock;
use crate::id::Snowflake;
use crate::layout::Layout;
#[cfg(feature = "std")]
use crate::lease::Lease;

/// Configures and builds a generator of any strategy.
///
/// Defaults: [`Layout::TWITTER`], [`SystemClock`], `max_lead` 0, `max_wait`
/// one second, nothing to resume after. There is no default worker id: a
/// generator is told which worker it is, by [`worker`](Self::worker) (from
/// [`flakegen::worker`](crate::worker) in a deployment) or by a
/// [`lease`](Self::lease), or building it fails ([`BuildError::NoWorker`]).
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
#[must_use = "a builder does nothing until one of its `build` methods is called"]
#[cfg(feature = "std")]
pub struct Builder<C = SystemClock> {
    settings: Settings<C>,
}

/// Configures and builds a generator; without `std`, on a clock of the
/// program's own ([`Builder::on`]).
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until one of its `build` methods is called"]
#[cfg(not(feature = "std"))]
pub struct Builder<C> {
    settings: Settings<C>,
}

impl<C: Clock> Builder<C> {
    /// A builder with the defaults, on `clock`: what
    /// `Builder::new().clock(clock)` makes, and without `std`, where there
    /// is no system clock, the way to start.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::{Builder, IdGenerator};
    /// use flakegen::clock::ManualClock;
    ///
    /// let clock = ManualClock::from_unix_millis(1_700_000_000_000);
    /// let generator = Builder::on(clock).worker(3).build_atomic()?;
    /// assert_eq!(generator.next_id()?.as_u64() >> 22, 1_700_000_000_000 - 1_288_834_974_657);
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    pub const fn on(clock: C) -> Self {
        Builder {
            settings: Settings::on(clock),
        }
    }
}

#[cfg(feature = "std")]
impl Builder<SystemClock> {
    /// A builder with the defaults.
    pub const fn new() -> Self {
        Builder {
            settings: Settings::new(),
        }
    }
}

#[cfg(feature = "std")]
impl Default for Builder<SystemClock> {
    fn default() -> Self {
        Builder::new()
    }
}

#[cfg(feature = "std")]
impl<C: Clock + Clone + 'static> Builder<C> {
    /// Leases the worker id on the terms of `lease` (registry, namespace,
    /// TTL, renewal, skew), instead of taking it from [`worker`](Self::worker).
    ///
    /// Building acquires a free id and starts a thread that renews it. If the
    /// id's previous holder left a fence ahead of this clock, the build
    /// waits for it, up to [`Lease::start_wait`] (the TTL, the skew and a
    /// second: 13 s by default, after a registry lost its data), and says
    /// so in a `lease acquired` event with the wait and its cause. Dropping
    /// the generator releases the id: it waits for the registry to confirm
    /// (within [`Lease::release_wait`]) unless it is dropped on an async
    /// runtime's thread, and [`shutdown`](crate::IdGenerator::shutdown)
    /// lets a service wait for it where it chooses. The
    /// [`lease`](crate::lease) module states the contract that keeps two
    /// holders of one id from ever issuing the same ID. The lease's thread
    /// reads the generator's clock, whichever order `lease` and
    /// [`clock`](Self::clock) are called in.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use flakegen::{Builder, IdGenerator, lease::{Lease, MemoryRegistry}};
    ///
    /// let lease = Lease::new(MemoryRegistry::new(), "orders").ttl(Duration::from_secs(5));
    /// let generator = Builder::new().lease(lease).build_ticker()?;
    /// println!("worker {} until {:?}", generator.worker(), generator.lease().unwrap().fence);
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    pub fn lease(mut self, lease: Lease) -> Self {
        let clock: Arc<dyn Clock> = Arc::new(self.settings.clock.clone());
        self.settings.lease = Some(LeaseSetting { lease, clock });
        self
    }
}

impl<C: Clock> Builder<C> {
    /// The bit layout of the IDs.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.settings.layout = layout;
        self
    }

    /// This generator's worker id, unique among the generators that run at the
    /// same time with the same layout (see [Caveats](crate#caveats)). Checked
    /// against the layout when building. Not with [`lease`](Self::lease),
    /// which chooses the worker id.
    ///
    /// Within one process flakegen keeps generators of one layout and
    /// worker id apart itself: while one lives, building a second fails
    /// ([`BuildError::WorkerInUse`]: share the first instead, it is
    /// `Sync`); once it is dropped, the next one starts after the last ID
    /// it issued. So a helper that builds a generator per call issues
    /// unique IDs (slowly: share one). Across processes, only the worker
    /// id keeps them apart.
    pub fn worker(mut self, worker: u64) -> Self {
        self.settings.worker = Some(worker);
        self
    }

    /// The clock to read time from; the lease's thread, if any, reads it too.
    pub fn clock<D: Clock + Clone + 'static>(self, clock: D) -> Builder<D> {
        let Settings {
            layout,
            worker,
            clock: _,
            max_lead,
            max_wait,
            resume_after,
            #[cfg(feature = "std")]
            lease,
        } = self.settings;
        Builder {
            settings: Settings {
                layout,
                worker,
                clock: clock.clone(),
                max_lead,
                max_wait,
                resume_after,
                #[cfg(feature = "std")]
                lease: lease.map(|LeaseSetting { lease, .. }| LeaseSetting {
                    lease,
                    clock: Arc::new(clock.clone()),
                }),
            },
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
        self.settings.max_lead = max_lead;
        self
    }

    /// The longest a call waits for the clock to catch up with the generator.
    ///
    /// When the clock is further behind than this (it stepped back, or
    /// [`resume_after`](Self::resume_after) was given an ID from a host whose
    /// clock ran ahead), calls fail at once with
    /// [`IssueError::ClockBehind`](crate::IssueError::ClockBehind), issuing
    /// nothing, instead of blocking until the clock gets there. Default: one
    /// second. Waiting for the next unit when the current one is used up is
    /// never refused: a value below one unit counts as one unit.
    /// `Duration::MAX` waits for as long as it takes.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.settings.max_wait = max_wait;
        self
    }

    /// Never issue an ID at or below `last_id`, whatever the clock says.
    ///
    /// For restarts: store the last ID issued (or the largest in the database)
    /// and pass it here, and the new process carries on after it even if the
    /// clock moved backwards while it was down. If `last_id` was made by another
    /// worker, the generator skips the rest of that ID's time unit.
    pub fn resume_after(mut self, last_id: Snowflake) -> Self {
        self.settings.resume_after = Some(last_id);
        self
    }

    fn build_raw<R: Start<C>>(self) -> Result<Generator<R, C>, BuildError> {
        Generator::from_settings(self.settings)
    }

    /// Builds an [`AtomicGenerator`].
    ///
    /// # Errors
    ///
    /// [`BuildError::WorkerOutOfRange`] when the worker id does not fit the
    /// layout; [`BuildError::EpochInFuture`] when the clock reads earlier than
    /// the layout's epoch; [`BuildError::LayoutExhausted`] when it reads past
    /// the layout's end; [`BuildError::ResumeAfterOtherLayout`],
    /// [`BuildError::ResumeAfterExhausted`] or [`BuildError::ResumeAhead`]
    /// when the `resume_after` ID does not belong to the layout, leaves no
    /// room, or lies further ahead than `max_wait`. With a lease:
    /// [`BuildError::WorkerAndLease`], [`BuildError::InvalidLease`],
    /// [`BuildError::LeaseSpawn`], [`BuildError::Lease`] when the registry
    /// fails or has no free id, [`BuildError::FenceAhead`] and
    /// [`BuildError::FenceExhausted`].
    pub fn build_atomic(self) -> Result<AtomicGenerator<C>, BuildError> {
        self.build_raw()
    }

    /// Builds a [`MutexGenerator`].
    ///
    /// # Errors
    ///
    /// As for [`build_atomic`](Self::build_atomic).
    #[cfg(feature = "std")]
    pub fn build_mutex(self) -> Result<MutexGenerator<C>, BuildError> {
        self.build_raw()
    }

    /// Builds a [`TickerGenerator`] and starts its thread.
    ///
    /// # Errors
    ///
    /// As for [`build_atomic`](Self::build_atomic), and
    /// [`BuildError::TickerSpawn`] when the thread cannot be started.
    #[cfg(feature = "std")]
    pub fn build_ticker(self) -> Result<TickerGenerator<C>, BuildError>
    where
        C: Clone + 'static,
    {
        self.build_raw()
    }

    /// Builds a [`TickerGenerator`] without a background thread: time moves
    /// forward only when [`refresh`](TickerGenerator::refresh) is called, or
    /// when a caller has used up the current unit and reads the clock itself.
    /// For programs that drive the ticker from an event loop they already run.
    ///
    /// # Errors
    ///
    /// As for [`build_atomic`](Self::build_atomic).
    #[cfg(feature = "std")]
    pub fn build_ticker_without_thread(self) -> Result<TickerGenerator<C>, BuildError> {
        Generator::assemble(self.settings, Ticker::without_thread)
    }

    /// Builds a generator of the strategy chosen at run time.
    ///
    /// # Errors
    ///
    /// As for the `build_` method of that strategy.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::{Builder, IdGenerator, Strategy};
    ///
    /// let strategy: Strategy = std::env::var("ID_STRATEGY").as_deref().unwrap_or("ticker").parse()?;
    /// let generator = Builder::new().worker(9).build(strategy)?;
    /// assert_eq!(generator.worker(), 9);
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn build(self, strategy: Strategy) -> Result<Box<dyn IdGenerator>, BuildError>
    where
        C: Clone + 'static,
    {
        Ok(match strategy {
            Strategy::Atomic => Box::new(self.build_atomic()?),
            Strategy::Mutex => Box::new(self.build_mutex()?),
            Strategy::Ticker => Box::new(self.build_ticker()?),
        })
    }

    /// Builds a generator of the strategy chosen at run time, for async code
    /// (feature `tokio`).
    ///
    /// As [`build`](Self::build), but it never blocks the thread that polls
    /// it: the lease, if any, is acquired on its own thread, and the waits (for
    /// a previous holder's fence, and for the first unit this generator may
    /// issue in, within `max_wait`) are tokio sleeps. Dropping the future
    /// before it completes gives an acquired lease back.
    ///
    /// # Errors
    ///
    /// As for [`build`](Self::build).
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::{Builder, IdGenerator, Strategy, lease::{Lease, MemoryRegistry}};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), flakegen::Error> {
    /// let lease = Lease::new(MemoryRegistry::new(), "orders");
    /// let generator = Builder::new().lease(lease).build_async(Strategy::Atomic).await?;
    /// let id = generator.next_id()?;
    /// # let _ = id;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn build_async(self, strategy: Strategy) -> Result<Box<dyn IdGenerator>, BuildError>
    where
        C: Clone + 'static,
    {
        let settings = self.settings;
        Ok(match strategy {
            Strategy::Atomic => {
                Box::new(AtomicGenerator::assemble_async(settings, Start::start).await?)
            }
            Strategy::Mutex => {
                Box::new(MutexGenerator::assemble_async(settings, Start::start).await?)
            }
            Strategy::Ticker => {
                Box::new(TickerGenerator::assemble_async(settings, Start::start).await?)
            }
        })
    }
}

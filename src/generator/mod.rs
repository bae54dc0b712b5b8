//! The generator trait, the one front that implements it, and the three
//! strategies behind that front.

use alloc::boxed::Box;
use alloc::sync::Arc;

use crate::id::Snowflake;
use crate::layout::Layout;
#[cfg(feature = "std")]
use crate::lease::{LeaseStatus, Release};

#[cfg(feature = "tokio")]
mod asynchronous;
mod atomic;
mod build;
mod builder;
mod claims;
mod core;
mod error;
mod front;
#[cfg(feature = "std")]
mod mutex;
mod seats;
mod state;
mod strategy;
#[cfg(feature = "std")]
mod ticker;
mod wait;

#[cfg(feature = "tokio")]
pub use self::asynchronous::AsyncIdGenerator;
pub use self::atomic::AtomicGenerator;
pub use self::builder::Builder;
pub use self::error::{BuildError, IssueError};
pub use self::front::Generator;
#[cfg(feature = "std")]
pub use self::mutex::MutexGenerator;
pub use self::strategy::{ParseStrategyError, Strategy};
#[cfg(feature = "std")]
pub use self::ticker::TickerGenerator;

#[cfg(feature = "std")]
use self::ticker::Ticker;

/// A source of unique, increasing IDs for one worker.
///
/// Implemented by [`Generator`] for the three strategies, [`AtomicGenerator`],
/// [`MutexGenerator`] and [`TickerGenerator`], which issue the same IDs under
/// the same rules and differ only in how concurrent callers synchronise. The
/// trait is object safe: `Box<dyn IdGenerator>` and `Arc<dyn IdGenerator>`
/// work, so a program can choose a [`Strategy`] at run time.
///
/// Every implementation guarantees, across threads, clock regressions and
/// batch calls: no two IDs are equal; each ID is greater than every ID
/// returned before the call began; and with `max_lead` zero no ID's timestamp
/// is later than the clock when it is returned (for the ticker: than the
/// ticker's latest reading of the clock).
///
/// # Examples
///
/// ```
/// use flakegen::{Builder, IdGenerator, Strategy};
///
/// for (worker, strategy) in (1..).zip(Strategy::ALL) {
///     let generator: Box<dyn IdGenerator> = Builder::new().worker(worker).build(strategy)?;
///     let a = generator.next_id()?;
///     let b = generator.next_id()?;
///     assert!(a < b);
///     assert_eq!(generator.layout().decode(b)?.worker, generator.worker());
/// }
/// # Ok::<(), flakegen::Error>(())
/// ```
pub trait IdGenerator: Send + Sync {
    /// Issues the next ID, waiting for the clock when the generator's lead
    /// would otherwise pass `max_lead`.
    ///
    /// # Errors
    ///
    /// [`IssueError::ClockBehind`], at once and issuing nothing, when the wait
    /// would be longer than the generator's `max_wait`;
    /// [`IssueError::TimestampExhausted`] once the layout has run out of time
    /// (or the clock reads past its end). With a lease,
    /// [`IssueError::LeaseLost`] at the lease's fence when no renewal or new
    /// lease lets it go further within `max_wait` (it waits for one as it
    /// waits for the clock: a process thawed past its fence renews at once;
    /// see [`lease`](Self::lease) for why none came), and
    /// [`IssueError::ShutDown`] after [`shutdown`](Self::shutdown);
    /// [`IssueError::Copied`] in a forked child. Never
    /// [`IssueError::WouldBlock`].
    fn next_id(&self) -> Result<Snowflake, IssueError>;

    /// Issues the next ID if that needs no waiting.
    ///
    /// # Errors
    ///
    /// [`IssueError::WouldBlock`], with how long to wait, when
    /// [`next_id`](Self::next_id) would have waited (and when a lease that
    /// healed has IDs that start later); nothing is consumed then.
    /// [`IssueError::ClockBehind`], [`IssueError::TimestampExhausted`],
    /// [`IssueError::LeaseLost`] (at once, waiting for no renewal),
    /// [`IssueError::ShutDown`] and [`IssueError::Copied`] as for `next_id`.
    fn try_next_id(&self) -> Result<Snowflake, IssueError>;

    /// Fills `ids` with consecutive new IDs, synchronising once for the whole
    /// slice where the strategy allows. Waits like [`next_id`](Self::next_id)
    /// until the last of them is within `max_lead` of the clock.
    ///
    /// # Errors
    ///
    /// As for `next_id`, and [`IssueError::TimestampExhausted`] when the batch
    /// does not fit in the layout's remaining time; `ids` is then left unchanged.
    fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError>;

    /// Fills `ids` like [`next_ids`](Self::next_ids) if that needs no waiting.
    ///
    /// # Errors
    ///
    /// As for [`try_next_id`](Self::try_next_id); `ids` is then left unchanged
    /// and nothing is consumed.
    fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError>;

    /// [`next_id`](Self::next_id), but where `next_id` would sleep it returns
    /// [`IssueError::WouldBlock`] with how long, giving back what it
    /// reserved (a gap if another call reserved since, never a repeat). At
    /// a lease's fence, while a renewal or a new lease may still come, that
    /// is a short wait to ask again after: a loop of your own bounds its
    /// asking by [`max_wait`](Self::max_wait), as `next_id` does.
    ///
    /// The fast path the async calls are built on (see
    /// `AsyncIdGenerator`, feature `tokio`): where nothing needs
    /// waiting it is `next_id`'s own path, which reserves first and judges
    /// after, where [`try_next_id`](Self::try_next_id) judges before it
    /// reserves (a compare-and-swap loop: up to 3× the ticker's cost per
    /// ID). Call it to build a waiting loop of your own on another executor.
    /// A generator of your own may leave the default, `try_next_id`.
    ///
    /// # Errors
    ///
    /// As for [`try_next_id`](Self::try_next_id).
    #[inline]
    fn next_id_or_wait_hint(&self) -> Result<Snowflake, IssueError> {
        self.try_next_id()
    }

    /// [`next_id_or_wait_hint`](Self::next_id_or_wait_hint) for a batch;
    /// the default is [`try_next_ids`](Self::try_next_ids).
    ///
    /// # Errors
    ///
    /// As for [`try_next_ids`](Self::try_next_ids); `ids` is then left unchanged.
    fn next_ids_or_wait_hint(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        self.try_next_ids(ids)
    }

    /// The layout of the IDs issued.
    fn layout(&self) -> &Layout;

    /// The worker id in every ID issued.
    fn worker(&self) -> u64;

    /// The longest a call waits for the clock before it fails with
    /// [`IssueError::ClockBehind`] (see [`Builder::max_wait`](crate::Builder::max_wait)).
    /// Default: one second, the builder's default.
    fn max_wait(&self) -> ::core::time::Duration {
        build::DEFAULT_MAX_WAIT
    }

    /// Where the generator's worker-id lease stands (see [`lease`](crate::lease)),
    /// or `None` if it was given its worker id directly, or if it was built
    /// before this process was forked: the lease is the parent's, and every
    /// call here is refused with [`IssueError::Copied`].
    #[cfg(feature = "std")]
    fn lease(&self) -> Option<LeaseStatus> {
        None
    }

    /// Stops issuing and gives the worker-id lease back, if any; returns at
    /// once, with a [`Release`] to wait on for the registry's confirmation.
    ///
    /// From then on every call fails with [`IssueError::ShutDown`]. The
    /// lease's fence is lowered to the unit after the last ID issued, so the
    /// next holder of the id starts at once. Dropping a leased generator does
    /// the same without waiting. Without a lease, this does nothing.
    ///
    /// What blocks, and for how long, is in [the lease docs](crate::lease#what-blocks).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use flakegen::{Builder, IdGenerator, IssueError, lease::{Lease, MemoryRegistry}};
    ///
    /// let generator = Builder::new().lease(Lease::new(MemoryRegistry::new(), "orders")).build_mutex()?;
    /// generator.next_id()?;
    /// generator.shutdown().wait(Duration::from_secs(3))?;
    /// assert_eq!(generator.next_id(), Err(IssueError::ShutDown));
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    #[cfg(feature = "std")]
    fn shutdown(&self) -> Release {
        Release::nothing()
    }

    /// Tells the generator that this process is a copy restored from a
    /// snapshot (AWS Lambda SnapStart, CRaC, CRIU, a cloned VM): call it in
    /// the restore hook, before any ID is issued. Every copy of the snapshot
    /// holds the same worker id, lease and last ID, and would issue the
    /// same IDs.
    ///
    /// From the call on, nothing is issued under what the snapshot held. A
    /// leased generator then leases again as a new holder, on connections
    /// of its own (from a registry of [`lease::connect`](crate::lease::connect),
    /// or a [`MemoryRegistry`](crate::lease::MemoryRegistry)), leaves the
    /// old lease to expire without writing to it, and issues under the new
    /// one once its IDs may start (this call waits for that, within
    /// [`Lease::start_wait`](crate::lease::Lease::start_wait)); calls made
    /// meanwhile are refused. A generator given its worker id refuses from
    /// now on: that id is every copy's, so build a new generator with a
    /// worker id of this copy's own. Nothing can be done for a copy whose
    /// hook never calls this: see the guide's *Serverless, forks and
    /// snapshots*.
    ///
    /// # Errors
    ///
    /// [`IssueError::Copied`] (as [`Error::Issue`](crate::Error::Issue))
    /// for a generator given its worker id, or leased from a registry that
    /// cannot be opened again ([`Registry::reopen`](crate::lease::backend::Registry::reopen));
    /// every later call refuses with it too. [`Error::Build`](crate::Error::Build)
    /// when the new lease could not be acquired, or its IDs could not start
    /// in time; the generator then refuses with `Copied`, and calling this
    /// again retries.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::{Builder, IdGenerator, IssueError, lease::{Lease, MemoryRegistry}};
    ///
    /// let generator = Builder::new().lease(Lease::new(MemoryRegistry::new(), "orders")).build_atomic()?;
    /// let before = generator.next_id()?;
    /// // In the restore hook of every copy:
    /// generator.after_restore()?;
    /// assert!(generator.next_id()? > before);
    ///
    /// let fixed = Builder::new().worker(8).build_atomic()?;
    /// assert!(fixed.after_restore().is_err());
    /// assert_eq!(fixed.next_id(), Err(IssueError::Copied));
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    fn after_restore(&self) -> Result<(), crate::Error>;
}

macro_rules! forward_id_generator {
    ($($ptr:ty),*) => {$(
        impl<G: IdGenerator + ?Sized> IdGenerator for $ptr {
            #[inline]
            fn next_id(&self) -> Result<Snowflake, IssueError> {
                (**self).next_id()
            }
            #[inline]
            fn try_next_id(&self) -> Result<Snowflake, IssueError> {
                (**self).try_next_id()
            }
            #[inline]
            fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
                (**self).next_ids(ids)
            }
            #[inline]
            fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
                (**self).try_next_ids(ids)
            }
            #[inline]
            fn next_id_or_wait_hint(&self) -> Result<Snowflake, IssueError> {
                (**self).next_id_or_wait_hint()
            }
            fn next_ids_or_wait_hint(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
                (**self).next_ids_or_wait_hint(ids)
            }
            fn layout(&self) -> &Layout {
                (**self).layout()
            }
            fn worker(&self) -> u64 {
                (**self).worker()
            }
            fn max_wait(&self) -> ::core::time::Duration {
                (**self).max_wait()
            }
            #[cfg(feature = "std")]
            fn lease(&self) -> Option<LeaseStatus> {
                (**self).lease()
            }
            #[cfg(feature = "std")]
            fn shutdown(&self) -> Release {
                (**self).shutdown()
            }
            fn after_restore(&self) -> Result<(), crate::Error> {
                (**self).after_restore()
            }
        }
    )*};
}

forward_id_generator!(&G, Box<G>, Arc<G>);

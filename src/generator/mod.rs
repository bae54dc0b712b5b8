//! The generator trait and its three strategies.

use std::sync::Arc;

use crate::error::Error;
use crate::id::Snowflake;
use crate::layout::Layout;

mod atomic;
mod builder;
mod mutex;
pub(crate) mod state;
mod ticker;
mod wait;

pub use self::atomic::AtomicGenerator;
pub use self::builder::Builder;
pub use self::mutex::MutexGenerator;
pub use self::ticker::TickerGenerator;

/// A source of unique, increasing IDs for one worker.
///
/// Implemented by the three strategies, [`AtomicGenerator`], [`MutexGenerator`]
/// and [`TickerGenerator`], which issue the same IDs under the same rules and
/// differ only in how concurrent callers synchronise. The trait is object safe:
/// `Box<dyn IdGenerator>` and `Arc<dyn IdGenerator>` work, so a program can
/// choose a strategy at run time.
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
/// use flakegen::{Builder, IdGenerator};
///
/// let strategies: Vec<Box<dyn IdGenerator>> = vec![
///     Box::new(Builder::new().worker(1).build_atomic()?),
///     Box::new(Builder::new().worker(2).build_mutex()?),
///     Box::new(Builder::new().worker(3).build_ticker()?),
/// ];
/// for generator in &strategies {
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
    /// [`Error::TimestampExhausted`] once the layout has run out of time (or
    /// the clock reads past its end). Never [`Error::WouldBlock`].
    fn next_id(&self) -> Result<Snowflake, Error>;

    /// Issues the next ID if that needs no waiting.
    ///
    /// # Errors
    ///
    /// [`Error::WouldBlock`], with how long to wait, when [`next_id`](Self::next_id)
    /// would have waited; nothing is consumed then. [`Error::TimestampExhausted`]
    /// as for `next_id`.
    fn try_next_id(&self) -> Result<Snowflake, Error>;

    /// Fills `ids` with consecutive new IDs, synchronising once for the whole
    /// slice where the strategy allows. Waits like [`next_id`](Self::next_id)
    /// until the last of them is within `max_lead` of the clock.
    ///
    /// # Errors
    ///
    /// [`Error::TimestampExhausted`] when the batch does not fit in the layout's
    /// remaining time; `ids` is then left unchanged.
    fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error>;

    /// Fills `ids` like [`next_ids`](Self::next_ids) if that needs no waiting.
    ///
    /// # Errors
    ///
    /// [`Error::WouldBlock`] when `next_ids` would have waited, and
    /// [`Error::TimestampExhausted`] as for `next_ids`; `ids` is then left
    /// unchanged and nothing is consumed.
    fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error>;

    /// The layout of the IDs issued.
    fn layout(&self) -> &Layout;

    /// The worker id in every ID issued.
    fn worker(&self) -> u64;
}

macro_rules! forward_id_generator {
    ($($ptr:ty),*) => {$(
        impl<G: IdGenerator + ?Sized> IdGenerator for $ptr {
            #[inline]
            fn next_id(&self) -> Result<Snowflake, Error> {
                (**self).next_id()
            }
            #[inline]
            fn try_next_id(&self) -> Result<Snowflake, Error> {
                (**self).try_next_id()
            }
            #[inline]
            fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error> {
                (**self).next_ids(ids)
            }
            #[inline]
            fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error> {
                (**self).try_next_ids(ids)
            }
            fn layout(&self) -> &Layout {
                (**self).layout()
            }
            fn worker(&self) -> u64 {
                (**self).worker()
            }
        }
    )*};
}

forward_id_generator!(&G, Box<G>, Arc<G>);

/// Writes the IDs of ticks `first, first + 1, ...` into `ids`.
#[inline]
fn fill(layout: &Layout, worker_field: u64, first: u64, ids: &mut [Snowflake]) {
    for (tick, slot) in (first..).zip(ids.iter_mut()) {
        *slot = Snowflake::from_u64(layout.compose_tick(tick, worker_field));
    }
}

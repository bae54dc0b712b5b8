//! What the generator's two operations can fail with: issuing
//! ([`IssueError`]) and building ([`BuildError`]).
//!
//! Issuing is the hot path, so its error is `Copy` and small:
//! `Result<Snowflake, IssueError>` is 16 bytes and comes back in registers.

use core::fmt;
use core::time::Duration;

use crate::clock::units::{Rfc3339, moment};
use crate::id::IdError;

/// Why an ID could not be issued: the only error of
/// [`IdGenerator`](crate::IdGenerator)'s methods.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use flakegen::{Builder, IdGenerator, IssueError};
/// use flakegen::clock::ManualClock;
///
/// let clock = ManualClock::from_unix_millis(1_700_000_000_000);
/// let generator = Builder::new().worker(1).clock(clock.clone()).build_atomic()?;
/// generator.next_id()?;
/// clock.rewind(Duration::from_millis(5)); // NTP stepped the clock back
/// match generator.try_next_id() {
///     Err(e @ IssueError::WouldBlock { .. }) => assert!(e.retry_after().unwrap() > Duration::from_millis(4)),
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IssueError {
    /// A non-blocking call would have had to wait for the clock; nothing was
    /// issued. The blocking methods wait instead.
    WouldBlock {
        /// How long until the call can succeed, as far as the clock says now.
        wait_nanos: u64,
    },
    /// The clock is further behind the generator's logical clock than the
    /// generator's `max_wait`: the clock stepped back, or the generator was
    /// told to resume after an ID from a host whose clock ran ahead. Nothing
    /// was issued, and the call returned at once instead of waiting.
    ClockBehind {
        /// How far the clock must move forward before IDs can be issued.
        behind_nanos: u64,
    },
    /// The timestamp no longer fits the layout: the layout has run out of
    /// time, or the clock reads far in the future.
    TimestampExhausted {
        /// The first instant the layout cannot represent, in ms since 1970.
        end_unix_millis: u64,
    },
    /// The generator has issued everything below its lease's fence, and no
    /// renewal or new lease lets it go further yet: issuing more could
    /// repeat another holder's IDs. Nothing was consumed.
    /// [`IdGenerator::lease`](crate::IdGenerator::lease) says why: renewals
    /// failing (the registry unreachable), or the lease lost and being
    /// leased again (it issues again once the new lease's IDs may start),
    /// or lost for good with [`Lease::reacquire`](crate::lease::Lease::reacquire) off.
    LeaseLost {
        /// The fence reached, in ms since 1970.
        fence_unix_millis: u64,
    },
    /// The generator was shut down
    /// ([`IdGenerator::shutdown`](crate::IdGenerator::shutdown)) and gave its
    /// worker id back: another generator may hold it now.
    ShutDown,
    /// The generator belongs to another copy of this process, which may
    /// issue the same IDs: it was built before this process was forked
    /// from its parent, or this copy was restored from a snapshot and its
    /// worker id is not its own. Nothing was issued, and nothing
    /// of the other copy's (its lease, its registry connections, its
    /// threads) was touched.
    Copied,
}

impl IssueError {
    /// How long to wait before trying again, when waiting can help:
    /// `Some` for [`WouldBlock`](Self::WouldBlock) and [`ClockBehind`](Self::ClockBehind).
    pub const fn retry_after(&self) -> Option<Duration> {
        match *self {
            IssueError::WouldBlock { wait_nanos: n }
            | IssueError::ClockBehind { behind_nanos: n } => Some(Duration::from_nanos(n)),
            IssueError::TimestampExhausted { .. }
            | IssueError::LeaseLost { .. }
            | IssueError::ShutDown
            | IssueError::Copied => None,
        }
    }
}

impl fmt::Display for IssueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IssueError::WouldBlock { wait_nanos } => write!(
                f,
                "no id can be issued without waiting for the clock: retry in {:?}, \
                 or call the blocking method",
                Duration::from_nanos(wait_nanos)
            ),
            IssueError::ClockBehind { behind_nanos } => write!(
                f,
                "the clock is {:?} behind the last id issued, more than the generator's max_wait: \
                 check the host's clock (NTP, VM migration, a resume_after id from a fast host), \
                 retry once it has caught up, or raise max_wait",
                Duration::from_nanos(behind_nanos)
            ),
            IssueError::TimestampExhausted { end_unix_millis } => write!(
                f,
                "the layout's timestamp ran out at {}: check that the clock is right, then \
                 move to a layout with a later epoch or more timestamp bits",
                moment(end_unix_millis)
            ),
            IssueError::LeaseLost { fence_unix_millis } => write!(
                f,
                "this generator has reached its lease's fence ({}) and may not issue past it \
                 yet: it will once a renewal is confirmed, or once it has leased a worker id \
                 again, which it does by itself; retry shortly. Its lease() says which, and \
                 until when; only with Lease::reacquire off is a loss final (then build a new \
                 generator)",
                moment(fence_unix_millis)
            ),
            IssueError::ShutDown => f.write_str(
                "this generator was shut down and gave its worker id back: build a new \
                 generator to issue more IDs",
            ),
            IssueError::Copied => f.write_str(
                "this generator belongs to another copy of this process (it was built before \
                 a fork, in the parent, or this process was restored from a snapshot), which \
                 may issue the same IDs: build a new generator in this process, with a lease \
                 or a worker id of its own (see the guide: Serverless, forks and snapshots)",
            ),
        }
    }
}

impl core::error::Error for IssueError {}

/// Why a generator could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The worker id does not fit in the layout's worker field.
    WorkerOutOfRange {
        /// The worker id asked for.
        worker: u64,
        /// The largest worker id the layout can hold.
        max: u64,
    },
    /// The layout's epoch is later than the generator's clock.
    EpochInFuture {
        /// The layout's epoch, in ms since 1970.
        epoch_unix_millis: u64,
        /// What the clock said, in ms since 1970.
        now_unix_millis: u64,
    },
    /// The ID given to [`Builder::resume_after`](crate::Builder::resume_after)
    /// was not made with the generator's layout.
    ResumeAfterOtherLayout(IdError),
    /// The ID given to [`Builder::resume_after`](crate::Builder::resume_after)
    /// leaves no room in the layout for another ID.
    ResumeAfterExhausted {
        /// The first instant the layout cannot represent, in ms since 1970.
        end_unix_millis: u64,
    },
    /// The clock reads past the layout's last unit: a generator built now
    /// could only repeat the last unit an earlier one may have issued.
    LayoutExhausted {
        /// The first instant the layout cannot represent, in ms since 1970.
        end_unix_millis: u64,
    },
    /// The ID given to [`Builder::resume_after`](crate::Builder::resume_after)
    /// is further ahead of the clock than `max_wait`: every call would
    /// refuse until the clock got there.
    ResumeAhead {
        /// How long the generator would have to wait.
        wait_nanos: u64,
    },
    /// The ticker's thread could not be started.
    #[cfg(feature = "std")]
    TickerSpawn(std::io::Error),
    /// The lease's thread could not be started, or stopped (by a panic)
    /// before it acquired a worker id.
    #[cfg(feature = "std")]
    LeaseSpawn(std::io::Error),
    /// The leased id's previous holder left a fence past the layout's end:
    /// nothing this generator could issue under it would fit. The lease was
    /// given back.
    FenceExhausted {
        /// The worker id granted.
        worker: u64,
        /// The first instant the layout cannot represent, in ms since 1970.
        end_unix_millis: u64,
    },
    /// Both a worker id and a lease were given: a leased generator's worker
    /// id is the one the registry grants.
    #[cfg(feature = "std")]
    WorkerAndLease,
    /// Neither a worker id nor a lease was given: a generator must be told
    /// which worker it is, or two could issue the same IDs.
    NoWorker,
    /// Another generator of this process, alive now, has this worker id and
    /// layout, on a clock that tells the same time: the two could issue the
    /// same IDs.
    WorkerInUse {
        /// The worker id.
        worker: u64,
    },
    /// The lease's terms cannot work.
    #[cfg(feature = "std")]
    InvalidLease(crate::lease::InvalidTerms),
    /// The lease could not be acquired.
    #[cfg(feature = "std")]
    Lease(crate::lease::LeaseError),
    /// The leased id's previous holder left a fence further ahead of this
    /// generator's clock than its `max_wait`; the lease was given back.
    FenceAhead {
        /// The worker id granted.
        worker: u64,
        /// How long this generator would have had to wait.
        wait_nanos: u64,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::WorkerOutOfRange { worker, max } => write!(
                f,
                "worker id {worker} does not fit the layout: use 0 to {max}, \
                 or a layout with more worker bits"
            ),
            BuildError::EpochInFuture {
                epoch_unix_millis,
                now_unix_millis,
            } => write!(
                f,
                "the layout's epoch ({}) is after the clock ({}): fix the clock or choose an \
                 epoch in the past",
                Rfc3339(*epoch_unix_millis),
                Rfc3339(*now_unix_millis)
            ),
            BuildError::ResumeAfterOtherLayout(e) => {
                write!(f, "cannot resume after that id: {e}")
            }
            BuildError::ResumeAfterExhausted { end_unix_millis } => write!(
                f,
                "cannot resume after that id: it is the layout's last (the layout ends at {}); \
                 move to a layout with a later epoch or more timestamp bits",
                Rfc3339(*end_unix_millis)
            ),
            BuildError::LayoutExhausted { end_unix_millis } => write!(
                f,
                "the layout ran out of time at {}, and the clock reads past it: check that the \
                 clock is right, or move to a layout with a later epoch or more timestamp bits",
                Rfc3339(*end_unix_millis)
            ),
            BuildError::ResumeAhead { wait_nanos } => write!(
                f,
                "the ID to resume after lies {:?} ahead of this clock, more than max_wait: it \
                 came from a host whose clock ran ahead, or this clock is behind; check the \
                 clocks, or raise max_wait",
                Duration::from_nanos(*wait_nanos)
            ),
            #[cfg(feature = "std")]
            BuildError::TickerSpawn(e) => write!(
                f,
                "could not start the ticker's thread ({e}): raise the thread limit, \
                 or use the atomic strategy, which needs no thread"
            ),
            #[cfg(feature = "std")]
            BuildError::LeaseSpawn(e) => write!(
                f,
                "could not start the lease's thread ({e}): raise the thread limit, or give \
                 the generator a worker id of its own instead of a lease"
            ),
            BuildError::FenceExhausted {
                worker,
                end_unix_millis,
            } => write!(
                f,
                "worker id {worker} is fenced past the layout's end ({}): its previous holder \
                 ran a clock far ahead, or the layout ran out of time; check the clocks, or \
                 move to a layout with a later epoch or more timestamp bits",
                Rfc3339(*end_unix_millis)
            ),
            #[cfg(feature = "std")]
            BuildError::WorkerAndLease => f.write_str(
                "both a worker id and a lease were given: drop Builder::worker, \
                 the lease chooses the worker id",
            ),
            BuildError::NoWorker => f.write_str(
                "no worker id was given, and generators with the same one issue the same IDs: \
                 give one unique among the running generators of this layout \
                 (Builder::worker), read it from the deployment (flakegen::worker: \
                 FLAKEGEN_WORKER_ID, a StatefulSet pod's ordinal, a private IPv4 address), \
                 or lease one from a registry (Builder::lease)",
            ),
            BuildError::WorkerInUse { worker } => write!(
                f,
                "another generator of this process has worker id {worker} with this layout, \
                 and two could issue the same IDs: share that one (it is Sync: an Arc or a \
                 static), drop it first (the next one starts after its last ID), or give this \
                 one another worker id"
            ),
            #[cfg(feature = "std")]
            BuildError::InvalidLease(terms) => write!(f, "invalid lease settings: {terms}"),
            #[cfg(feature = "std")]
            BuildError::Lease(e) => write!(f, "could not lease a worker id: {e}"),
            BuildError::FenceAhead { worker, wait_nanos } => write!(
                f,
                "worker id {worker} is fenced {:?} ahead of this clock, more than max_wait: its \
                 previous holder's clock ran ahead of this one, or the registry restarted or \
                 lost its data (ids without a record wait one TTL plus the skew allowance); \
                 retry after that long, check the clocks, or raise max_wait",
                Duration::from_nanos(*wait_nanos)
            ),
        }
    }
}

#[cfg(feature = "std")]
impl From<crate::lease::Refused> for BuildError {
    fn from(refused: crate::lease::Refused) -> Self {
        use crate::lease::Refused;
        match refused {
            Refused::Invalid(terms) => BuildError::InvalidLease(terms),
            Refused::Lease(e) => BuildError::Lease(e),
            Refused::Spawn(e) => BuildError::LeaseSpawn(e),
        }
    }
}

impl core::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            BuildError::ResumeAfterOtherLayout(e) => Some(e),
            #[cfg(feature = "std")]
            BuildError::TickerSpawn(e) | BuildError::LeaseSpawn(e) => Some(e),
            #[cfg(feature = "std")]
            BuildError::InvalidLease(e) => Some(e),
            #[cfg(feature = "std")]
            BuildError::Lease(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Snowflake;

    #[test]
    fn issuing_results_come_back_in_two_registers() {
        assert!(size_of::<Result<Snowflake, IssueError>>() <= 16);
        assert!(size_of::<Result<(), IssueError>>() <= 16);
    }
}

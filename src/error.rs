//! The one error type of the crate.

use core::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Everything that can go wrong in flakegen.
///
/// Every fallible function documents which variants it returns under `# Errors`.
/// The `Display` text says what went wrong and what to do about it; match on the
/// variant when a program needs to react (for example to
/// [`WouldBlock`](Error::WouldBlock)).
///
/// # Examples
///
/// ```
/// use flakegen::{Error, Layout, Parts};
///
/// let err = Layout::TWITTER
///     .compose(Parts { timestamp: 0, worker: 1024, sequence: 0 })
///     .unwrap_err();
/// assert!(matches!(err, Error::PartOutOfRange { .. }));
/// assert!(err.to_string().contains("at most 1023"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A custom layout's widths, unit or epoch do not describe a usable layout.
    InvalidLayout(LayoutError),
    /// The worker id does not fit in the layout's worker field.
    WorkerOutOfRange {
        /// The worker id asked for.
        worker: u64,
        /// The largest worker id the layout can hold.
        max: u64,
    },
    /// A part given to [`Layout::compose`](crate::Layout::compose) does not fit its field.
    PartOutOfRange {
        /// Which part.
        part: Part,
        /// The value given.
        value: u64,
        /// The largest value the field can hold.
        max: u64,
    },
    /// An ID has bits set above the layout's fields, so it was not made with this layout.
    IdOutsideLayout {
        /// The ID.
        id: u64,
        /// How many low bits the layout uses.
        bits: u32,
    },
    /// The layout's epoch is later than the generator's clock.
    EpochInFuture {
        /// The layout's epoch.
        epoch: SystemTime,
        /// What the clock said.
        now: SystemTime,
    },
    /// The timestamp no longer fits the layout: the layout has run out of time,
    /// or the clock is far in the future.
    TimestampExhausted {
        /// The first instant the layout cannot represent.
        end: SystemTime,
    },
    /// A non-blocking call would have had to wait for the clock.
    ///
    /// Returned only by `try_` methods; the blocking ones wait instead.
    WouldBlock {
        /// How long until the call can succeed, as far as the clock says now.
        wait: Duration,
    },
    /// A string is not the decimal form of a 64-bit ID.
    InvalidId {
        /// The start of the offending input (at most 40 characters).
        input: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A negative `i64` cannot be an ID.
    NegativeId {
        /// The value given.
        value: i64,
    },
    /// The ID is above `i64::MAX`, so it does not fit a signed 64-bit column.
    IdAboveI64 {
        /// The ID.
        id: u64,
    },
    /// The ticker's background thread could not be started.
    TickerSpawn(std::io::Error),
    /// A worker id could not be read from the deployment (environment variable,
    /// host name or network address).
    WorkerSource {
        /// Where the worker id was looked for.
        source: &'static str,
        /// What was found wrong there.
        reason: String,
    },
}

/// Which field of an ID a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// Time units since the layout's epoch.
    Timestamp,
    /// The worker (machine, shard) id.
    Worker,
    /// The per-unit sequence number.
    Sequence,
}

/// Why a [`Layout`](crate::Layout) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutError {
    /// The timestamp field has no bits, so IDs would not be time-ordered.
    NoTimestampBits,
    /// The fields add up to more than 64 bits.
    TooManyBits {
        /// The sum of the three widths.
        total: u32,
    },
    /// Timestamp and sequence together take all 64 bits, leaving the
    /// generators' packed state no bit to detect overflow with.
    NoHeadroom,
    /// The time unit is zero.
    ZeroUnit,
    /// The time unit does not fit in 64 bits of nanoseconds.
    UnitTooLarge,
    /// The layout's timestamp would run past the year 2554, where 64 bits of
    /// nanoseconds since 1970 (what a [`Clock`](crate::Clock) returns) end.
    OutlivesClock,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Timestamp => "timestamp",
            Part::Worker => "worker id",
            Part::Sequence => "sequence",
        })
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::NoTimestampBits => f.write_str(
                "the timestamp field has no bits: give it at least 1 (41 is usual for milliseconds)",
            ),
            LayoutError::TooManyBits { total } => write!(
                f,
                "timestamp, worker and sequence widths add up to {total} bits: they must fit in 64"
            ),
            LayoutError::NoHeadroom => f.write_str(
                "timestamp and sequence widths add up to 64 bits: keep them to 63 at most \
                 (give the spare bit to the worker field or leave it unused)",
            ),
            LayoutError::ZeroUnit => f.write_str("the time unit is zero: use at least 1 ns"),
            LayoutError::UnitTooLarge => {
                f.write_str("the time unit is longer than u64::MAX nanoseconds (584 years)")
            }
            LayoutError::OutlivesClock => f.write_str(
                "epoch plus the timestamp's range runs past the year 2554, beyond what clocks \
                 measure: use fewer timestamp bits, a shorter unit or an earlier epoch",
            ),
        }
    }
}

fn unix_millis(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i128,
        Err(e) => -(e.duration().as_millis() as i128),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidLayout(e) => write!(f, "invalid layout: {e}"),
            Error::WorkerOutOfRange { worker, max } => write!(
                f,
                "worker id {worker} does not fit the layout: use 0 to {max}, \
                 or a layout with more worker bits"
            ),
            Error::PartOutOfRange { part, value, max } => {
                write!(
                    f,
                    "{part} {value} does not fit the layout: it must be at most {max}"
                )
            }
            Error::IdOutsideLayout { id, bits } => write!(
                f,
                "id {id} has bits set above the layout's {bits} bits: \
                 it was made with another layout; decode it with that one"
            ),
            Error::EpochInFuture { epoch, now } => write!(
                f,
                "the layout's epoch (unix ms {}) is after the clock (unix ms {}): \
                 fix the clock or choose an epoch in the past",
                unix_millis(*epoch),
                unix_millis(*now)
            ),
            Error::TimestampExhausted { end } => write!(
                f,
                "the layout's timestamp ran out at unix ms {}: check that the clock is \
                 right, then move to a layout with a later epoch or more timestamp bits",
                unix_millis(*end)
            ),
            Error::WouldBlock { wait } => write!(
                f,
                "no id can be issued without waiting for the clock: retry in {wait:?}, \
                 or call the blocking method"
            ),
            Error::InvalidId { input, reason } => {
                write!(f, "invalid id {input:?}: {reason}")
            }
            Error::NegativeId { value } => write!(
                f,
                "negative value {value} is not an id (ids are never negative): \
                 was it read from the wrong column?"
            ),
            Error::IdAboveI64 { id } => write!(
                f,
                "id {id} is above i64::MAX and does not fit a signed 64-bit column: \
                 store it as NUMERIC(20) or text, or use a layout that keeps the top bit clear"
            ),
            Error::TickerSpawn(e) => write!(
                f,
                "could not start the ticker thread ({e}): raise the thread limit, \
                 or use the atomic strategy, which needs no thread"
            ),
            Error::WorkerSource { source, reason } => {
                write!(f, "no worker id from {source}: {reason}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::TickerSpawn(e) => Some(e),
            _ => None,
        }
    }
}

impl std::error::Error for LayoutError {}

impl From<LayoutError> for Error {
    fn from(e: LayoutError) -> Self {
        Error::InvalidLayout(e)
    }
}

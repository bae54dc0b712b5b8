//! Errors, one type per kind of operation, and [`Error`] over all of them.
//!
//! Issuing is the hot path, so its error, [`IssueError`], is `Copy` and small:
//! `Result<Snowflake, IssueError>` is 16 bytes and comes back in registers.
//! Building, layouts, ID conversions, parsing and worker-id lookup each have
//! their own type, and [`Error`] converts from every one for programs that
//! want a single type behind `?`.

use core::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why an ID could not be issued: the only error of
/// [`IdGenerator`](crate::IdGenerator)'s methods.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use flakegen::{Builder, IdGenerator, IssueError, ManualClock};
///
/// let clock = ManualClock::from_unix_millis(1_700_000_000_000);
/// let generator = Builder::new().clock(clock.clone()).build_atomic()?;
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
            | IssueError::ShutDown => None,
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
                "the layout's timestamp ran out at unix ms {end_unix_millis}: check that the clock \
                 is right, then move to a layout with a later epoch or more timestamp bits"
            ),
            IssueError::LeaseLost { fence_unix_millis } => write!(
                f,
                "this generator has reached its lease's fence (unix ms {fence_unix_millis}) \
                 with no renewal or new lease confirmed: retry shortly (it issues again once \
                 one is); its lease() says why, and if it says Lost, build a new generator"
            ),
            IssueError::ShutDown => f.write_str(
                "this generator was shut down and gave its worker id back: build a new \
                 generator to issue more IDs",
            ),
        }
    }
}

impl std::error::Error for IssueError {}

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
    /// A background thread (the ticker's, or a lease's keeper) could not be started.
    TickerSpawn(std::io::Error),
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
    WorkerAndLease,
    /// The lease settings cannot work.
    InvalidLease {
        /// Why, and what to change.
        reason: String,
    },
    /// The lease could not be acquired.
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
                "the layout's epoch (unix ms {epoch_unix_millis}) is after the clock \
                 (unix ms {now_unix_millis}): fix the clock or choose an epoch in the past"
            ),
            BuildError::ResumeAfterOtherLayout(e) => {
                write!(f, "cannot resume after that id: {e}")
            }
            BuildError::ResumeAfterExhausted { end_unix_millis } => write!(
                f,
                "cannot resume after that id: it is the layout's last (the layout ends at \
                 unix ms {end_unix_millis}); move to a layout with a later epoch or more timestamp bits"
            ),
            BuildError::LayoutExhausted { end_unix_millis } => write!(
                f,
                "the layout ran out of time at unix ms {end_unix_millis}, and the clock reads \
                 past it: check that the clock is right, or move to a layout with a later \
                 epoch or more timestamp bits"
            ),
            BuildError::ResumeAhead { wait_nanos } => write!(
                f,
                "the ID to resume after lies {:?} ahead of this clock, more than max_wait: it \
                 came from a host whose clock ran ahead, or this clock is behind; check the \
                 clocks, or raise max_wait",
                Duration::from_nanos(*wait_nanos)
            ),
            BuildError::TickerSpawn(e) => write!(
                f,
                "could not start a background thread ({e}): raise the thread limit, \
                 or use the atomic strategy without a lease, which needs no thread"
            ),
            BuildError::FenceExhausted {
                worker,
                end_unix_millis,
            } => write!(
                f,
                "worker id {worker} is fenced past the layout's end (unix ms {end_unix_millis}): \
                 its previous holder ran a clock far ahead, or the layout ran out of time; \
                 check the clocks, or move to a layout with a later epoch or more timestamp bits"
            ),
            BuildError::WorkerAndLease => f.write_str(
                "both a worker id and a lease were given: drop Builder::worker, \
                 the lease chooses the worker id",
            ),
            BuildError::InvalidLease { reason } => write!(f, "invalid lease settings: {reason}"),
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

impl From<crate::lease::Refused> for BuildError {
    fn from(refused: crate::lease::Refused) -> Self {
        use crate::lease::Refused;
        match refused {
            Refused::Invalid(reason) => BuildError::InvalidLease { reason },
            Refused::Lease(e) => BuildError::Lease(e),
            Refused::Spawn(e) => BuildError::TickerSpawn(e),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::ResumeAfterOtherLayout(e) => Some(e),
            BuildError::TickerSpawn(e) => Some(e),
            BuildError::Lease(e) => Some(e),
            _ => None,
        }
    }
}

/// Which field of an ID a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Time units since the layout's epoch.
    Timestamp,
    /// The worker (machine, shard) id.
    Worker,
    /// The per-unit sequence number.
    Sequence,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Timestamp => "timestamp",
            Field::Worker => "worker id",
            Field::Sequence => "sequence",
        })
    }
}

/// An ID, or a value meant to become one, that does not fit where it is put:
/// a layout's fields, or a signed 64-bit column.
///
/// # Examples
///
/// ```
/// use flakegen::{Field, Fields, IdError, Layout};
///
/// let err = Layout::TWITTER
///     .compose(Fields { timestamp: 0, worker: 1024, sequence: 0 })
///     .unwrap_err();
/// assert_eq!(err, IdError::FieldOutOfRange { field: Field::Worker, value: 1024, max: 1023 });
/// assert!(err.to_string().contains("at most 1023"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdError {
    /// A value given to [`Layout::compose`](crate::Layout::compose) does not fit its field.
    FieldOutOfRange {
        /// Which field.
        field: Field,
        /// The value given.
        value: u64,
        /// The largest value the field can hold.
        max: u64,
    },
    /// An ID has bits set above the layout's fields, so it was not made with this layout.
    OutsideLayout {
        /// The ID.
        id: u64,
        /// How many low bits the layout uses.
        bits: u32,
    },
    /// A negative `i64` cannot be an ID.
    Negative {
        /// The value given.
        value: i64,
    },
    /// The ID is above `i64::MAX`, so it does not fit a signed 64-bit column.
    AboveI64 {
        /// The ID.
        id: u64,
    },
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IdError::FieldOutOfRange { field, value, max } => {
                write!(
                    f,
                    "{field} {value} does not fit the layout: it must be at most {max}"
                )
            }
            IdError::OutsideLayout { id, bits } => write!(
                f,
                "id {id} has bits set above the layout's {bits} bits: \
                 it was made with another layout; decode it with that one"
            ),
            IdError::Negative { value } => write!(
                f,
                "negative value {value} is not an id (ids are never negative): \
                 was it read from the wrong column?"
            ),
            IdError::AboveI64 { id } => write!(
                f,
                "id {id} is above i64::MAX and does not fit a signed 64-bit column: \
                 store it as NUMERIC(20) or text, or use a layout that keeps the top bit clear"
            ),
        }
    }
}

impl std::error::Error for IdError {}

/// A string that is not the decimal form of a 64-bit ID. Holds no copy of
/// the input, so parsing never allocates.
///
/// # Examples
///
/// ```
/// use flakegen::Snowflake;
///
/// let err = "12ab".parse::<Snowflake>().unwrap_err();
/// assert_eq!(err.to_string(), "invalid id: byte 2 is not a decimal digit (ids are digits only: no sign, spaces or separators)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParseIdError {
    kind: ParseIdErrorKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ParseIdErrorKind {
    Empty,
    NotADigit { at: usize },
    TooLarge,
}

impl ParseIdError {
    pub(crate) const fn empty() -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::Empty,
        }
    }

    pub(crate) const fn not_a_digit(at: usize) -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::NotADigit { at },
        }
    }

    pub(crate) const fn too_large() -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::TooLarge,
        }
    }
}

impl fmt::Display for ParseIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ParseIdErrorKind::Empty => f.write_str("invalid id: empty; expected decimal digits"),
            ParseIdErrorKind::NotADigit { at } => write!(
                f,
                "invalid id: byte {at} is not a decimal digit \
                 (ids are digits only: no sign, spaces or separators)"
            ),
            ParseIdErrorKind::TooLarge => {
                f.write_str("invalid id: too large; ids are at most 18446744073709551615")
            }
        }
    }
}

impl std::error::Error for ParseIdError {}

/// Text that names no [`Layout`](crate::Layout): see its
/// [`FromStr`](crate::Layout#impl-FromStr-for-Layout) for the forms it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseLayoutError {
    /// A single word that is no preset's name.
    UnknownPreset,
    /// A part of a custom layout that is not `key=value`.
    NotAPair,
    /// A key that is no field of a layout.
    UnknownKey,
    /// A value that does not fit its key.
    BadValue {
        /// The key.
        key: &'static str,
    },
    /// The fields do not make a valid layout.
    Invalid(LayoutError),
}

impl fmt::Display for ParseLayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const FORM: &str = "a preset (twitter, discord, sonyflake, instagram) or fields such as \
             \"timestamp_bits=41,worker_bits=10,sequence_bits=12,unit=1ms,\
             epoch_unix_millis=1288834974657,field_order=worker-sequence\"";
        match self {
            ParseLayoutError::UnknownPreset => write!(f, "unknown layout: expected {FORM}"),
            ParseLayoutError::NotAPair => {
                write!(f, "a layout's fields are key=value pairs: expected {FORM}")
            }
            ParseLayoutError::UnknownKey => write!(f, "unknown layout field: expected {FORM}"),
            ParseLayoutError::BadValue { key } => {
                let expected = match *key {
                    "unit" => "a whole number of ns, us, ms or s, such as 10ms",
                    "field_order" => "worker-sequence or sequence-worker",
                    _ => "a whole number",
                };
                write!(f, "bad value for layout field {key}: expected {expected}")
            }
            ParseLayoutError::Invalid(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ParseLayoutError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ParseLayoutError::Invalid(e) => Some(e),
            _ => None,
        }
    }
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

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid layout: ")?;
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

impl std::error::Error for LayoutError {}

/// Where [`worker`](crate::worker) looked for a worker id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WorkerOrigin {
    /// An environment variable.
    Environment,
    /// The host (or pod) name.
    HostName,
    /// A network interface's IPv4 address.
    Ipv4,
}

impl fmt::Display for WorkerOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkerOrigin::Environment => "the environment",
            WorkerOrigin::HostName => "the host name",
            WorkerOrigin::Ipv4 => "the IPv4 address",
        })
    }
}

/// A worker id could not be read from the deployment. Its message says what
/// was found and what to set instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerError {
    origin: WorkerOrigin,
    reason: String,
}

impl WorkerError {
    pub(crate) fn new(origin: WorkerOrigin, reason: String) -> Self {
        WorkerError { origin, reason }
    }

    /// Where the worker id was looked for.
    pub fn origin(&self) -> WorkerOrigin {
        self.origin
    }
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no worker id from {}: {}", self.origin, self.reason)
    }
}

impl std::error::Error for WorkerError {}

/// A string that names no [`Strategy`](crate::Strategy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParseStrategyError(pub(crate) ());

impl fmt::Display for ParseStrategyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown strategy: expected one of atomic, mutex, ticker")
    }
}

impl std::error::Error for ParseStrategyError {}

/// Declares [`Error`] from one list of its variants: the enum, its
/// `Display` and `source` (both the held error's: `Error` is transparent),
/// its `Debug`, and a `From` for each.
macro_rules! umbrella {
    ($(#[$outer:meta])* pub enum Error { $( $(#[doc = $doc:literal])* $variant:ident($ty:ty), )* }) => {
        $(#[$outer])*
        #[non_exhaustive]
        pub enum Error {
            $( $(#[doc = $doc])* $variant($ty), )*
        }

        /// The message first, then the structure: `fn main() -> Result<(),
        /// flakegen::Error>` prints an error with `Debug`, and the message is
        /// what says what to do. `{:#?}` is the structure alone.
        impl fmt::Debug for Error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Error::$variant(e) if f.alternate() => {
                        f.debug_tuple(stringify!($variant)).field(e).finish()
                    } )*
                    $( Error::$variant(e) => {
                        write!(f, "{e} [{}({e:?})]", stringify!($variant))
                    } )*
                }
            }
        }

        impl fmt::Display for Error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Error::$variant(e) => e.fmt(f), )*
                }
            }
        }

        impl std::error::Error for Error {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                match self {
                    $( Error::$variant(e) => e.source(), )*
                }
            }
        }

        $(
            impl From<$ty> for Error {
                fn from(e: $ty) -> Self {
                    Error::$variant(e)
                }
            }
        )*
    };
}

umbrella! {
    /// Every error of the crate, for programs that want one type behind `?`.
    ///
    /// Each operation returns its own, narrower error type; this one converts
    /// from all of them and displays as the error it holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::{Builder, Error, IdGenerator, Snowflake};
    ///
    /// fn newest(stored: &str) -> Result<Snowflake, Error> {
    ///     let last: Snowflake = stored.parse()?; // ParseIdError
    ///     let generator = Builder::new().worker(1).resume_after(last).build_atomic()?; // BuildError
    ///     Ok(generator.next_id()?) // IssueError
    /// }
    /// assert!(matches!(newest("x"), Err(Error::ParseId(_))));
    /// // Debug, which `fn main() -> Result<(), Error>` prints, starts with the message.
    /// let e = newest("x").unwrap_err();
    /// assert!(format!("{e:?}").starts_with(&e.to_string()));
    /// ```
    pub enum Error {
        /// Issuing an ID failed.
        Issue(IssueError),
        /// Building a generator failed.
        Build(BuildError),
        /// A custom layout was rejected.
        Layout(LayoutError),
        /// An ID or one of its fields did not fit.
        Id(IdError),
        /// A string was not an ID.
        ParseId(ParseIdError),
        /// A string was not a strategy's name.
        ParseStrategy(ParseStrategyError),
        /// A string was not a layout.
        ParseLayout(ParseLayoutError),
        /// No worker id could be read from the deployment.
        Worker(WorkerError),
        /// A lease registry failed.
        Lease(crate::lease::LeaseError),
    }
}

/// Milliseconds since 1970 of `time`, 0 before 1970: for error payloads.
pub(crate) fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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

    #[test]
    fn parse_and_id_errors_are_small_and_copy() {
        fn copy<T: Copy>() {}
        copy::<ParseIdError>();
        copy::<IdError>();
        assert!(size_of::<Result<Snowflake, ParseIdError>>() <= 24);
    }
}

//! Worker ids leased from a registry, fenced by timestamp.
//!
//! Every scheme of this kind rests on one promise: no two running generators
//! share a layout and a worker id. A lease keeps that promise without trusting
//! any two clocks to agree. [`Builder::lease`](crate::Builder::lease) takes a
//! worker id from a [`Registry`] (PostgreSQL or Redis, behind the `postgres`
//! and `redis` features) and keeps it renewed from a background thread.
//!
//! # The contract
//!
//! Each worker id's record in the registry holds its holder, an expiry judged
//! by the *server's* clock, and a **fence**: an instant (milliseconds since
//! 1970) that its holder's IDs stay below.
//!
//! - A holder moves its fence forward to its own clock plus the TTL, in the
//!   same atomic step that checks that it still holds the lease. Its
//!   generator uses the new fence only once the server has confirmed it.
//! - A leased generator issues no ID whose timestamp (the start of its unit)
//!   is at or past its confirmed fence. This is a cap on the tick counter,
//!   like the layout's end: the hot path pays one compare for it.
//! - A new holder issues only timestamps at or past the previous fence, as
//!   [`resume_after`](crate::Builder::resume_after) would. If its clock is
//!   behind, it waits (or leads, within `max_lead`). A fence further ahead
//!   than `max_wait` makes the build fail: it never hangs.
//! - So the old holder's IDs all lie below the fence and the new holder's at
//!   or above it. That holds whatever the two clocks read, however long either
//!   was paused (a GC pause, a frozen VM, `SIGSTOP`), and whether or not a
//!   reply was lost. Who holds a lease is decided by the server's clock and
//!   the TTL alone.
//!
//! No needless waits:
//!
//! - The fence leads its holder's clock by at most the TTL. By the time a
//!   crashed holder's lease has expired, its fence has passed too, unless the
//!   clocks disagree.
//! - A generator that is dropped has stopped issuing. It releases its lease
//!   and lowers its fence to the start of the unit after its last ID, so a
//!   restarted process takes the id at once. A fence is lowered only this
//!   way, and only by its own holder.
//! - Acquiring prefers ids whose fence has already passed.
//!
//! When renewals fail (the registry is down, or a partition cuts the holder
//! off), the generator runs on to its fence and then refuses with
//! [`IssueError::LeaseLost`](crate::IssueError::LeaseLost). It never issues
//! past the fence. If the registry comes back and nobody took the id, the
//! renewals succeed again. To take a new lease, possibly on another id,
//! build a new generator.
//!
//! # A registry that loses its data
//!
//! Holders keep running on fences that a registry no longer knows about if it
//! loses its data: a Redis restarted without persistence, or a truncated
//! table. The registry therefore writes a marker when a namespace is first
//! used, and again when it is used after a loss. An id with no record is
//! fenced one TTL plus the skew allowance
//! ([`Builder::lease_skew`](crate::Builder::lease_skew), default 2 s) past the
//! marker's time. Only the first TTL after a fresh start or a loss waits; later
//! acquisitions do not. This is the one place where clocks must roughly agree:
//! the holders' clocks with the server's, within the skew allowance. Every
//! generator of a namespace should use the same TTL.
//!
//! # Choosing a TTL
//!
//! The TTL bounds how long a crashed holder's id stays unusable. It is also
//! how long a holder rides out an unreachable registry before it stops. The
//! keeper renews every third of it by default. A few seconds suits most
//! services (the default is 10 s). It must be longer than one unit of the
//! layout and longer than the generator's `max_lead`.
//!
//! # Examples
//!
//! ```no_run
//! # #[cfg(feature = "redis")] {
//! use flakegen::{Builder, IdGenerator, lease};
//!
//! let registry = lease::connect("redis://127.0.0.1:6379/0")?;
//! let generator = Builder::new().lease(registry, "orders").build_atomic()?;
//! println!("leased worker {}", generator.worker());
//! let id = generator.next_id()?;
//! # }
//! # Ok::<(), flakegen::Error>(())
//! ```

use core::fmt;
use std::sync::Arc;
use std::time::Duration;

mod keeper;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;

pub(crate) use self::keeper::{DEFAULT_SKEW, DEFAULT_TTL, Fence, Keeper, LeaseSettings};
pub use self::keeper::{LeaseState, LeaseStatus};
#[cfg(feature = "postgres")]
pub use self::postgres::PostgresRegistry;
#[cfg(feature = "redis")]
pub use self::redis::RedisRegistry;

/// How long connecting to a registry may take before it counts as unreachable,
/// and how long one request may take once connected.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// Where worker-id leases are kept.
///
/// Implemented by [`PostgresRegistry`] and [`RedisRegistry`] (behind the
/// `postgres` and `redis` features). Each call must be atomic on the server,
/// must judge expiry by the server's clock, and must finish or fail within a
/// bounded time. The [module docs](self) give the contract it serves.
pub trait Registry: Send + Sync + 'static {
    /// Takes a free worker id for `request.holder`.
    ///
    /// An id is free if it has no record, no holder, or an expired lease.
    /// Among the free ids, one whose fence is at or before `request.now_unix_ms`
    /// is preferred, and then the one with the earliest fence. The record's
    /// fence becomes the later of its old fence and `request.fence_unix_ms`. An
    /// id with no record counts as fenced at the namespace's marker plus the
    /// TTL plus `request.skew`.
    ///
    /// # Errors
    ///
    /// [`LeaseError::AllHeld`] when no id is free, and the connection errors.
    fn acquire(&self, request: &AcquireRequest<'_>) -> Result<Grant, LeaseError>;

    /// Extends `lease` by `ttl` from now (server time) and moves its fence to
    /// the later of its fence and `fence_unix_ms`. Returns the fence now in force.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Lost`] when the record names another holder (or none),
    /// and the connection errors.
    fn renew(
        &self,
        lease: &LeaseKey<'_>,
        fence_unix_ms: u64,
        ttl: Duration,
    ) -> Result<u64, LeaseError>;

    /// Gives `lease` up and lowers its fence to `fence_unix_ms` if that is
    /// lower. Does nothing if `lease.holder` no longer holds it.
    ///
    /// # Errors
    ///
    /// The connection errors.
    fn release(&self, lease: &LeaseKey<'_>, fence_unix_ms: u64) -> Result<(), LeaseError>;
}

macro_rules! forward_registry {
    ($($ptr:ty),*) => {$(
        impl<R: Registry + ?Sized> Registry for $ptr {
            fn acquire(&self, request: &AcquireRequest<'_>) -> Result<Grant, LeaseError> {
                (**self).acquire(request)
            }
            fn renew(&self, lease: &LeaseKey<'_>, fence_unix_ms: u64, ttl: Duration) -> Result<u64, LeaseError> {
                (**self).renew(lease, fence_unix_ms, ttl)
            }
            fn release(&self, lease: &LeaseKey<'_>, fence_unix_ms: u64) -> Result<(), LeaseError> {
                (**self).release(lease, fence_unix_ms)
            }
        }
    )*};
}

forward_registry!(Arc<R>, Box<R>);

/// What [`Registry::acquire`] is asked for.
#[derive(Clone, Copy, Debug)]
pub struct AcquireRequest<'a> {
    /// The namespace: generators that share a layout share one.
    pub namespace: &'a str,
    /// How many worker ids the layout holds: ids `0..workers` may be granted.
    pub workers: u64,
    /// A token unique to this acquisition.
    pub holder: &'a str,
    /// How long the lease lasts without renewal, by the server's clock.
    pub ttl: Duration,
    /// The fence asked for: the holder's clock plus the TTL.
    pub fence_unix_ms: u64,
    /// The holder's clock, to prefer ids whose fence has passed.
    pub now_unix_ms: u64,
    /// How far the holders' clocks may disagree with the server's, for ids
    /// with no record.
    pub skew: Duration,
}

/// A lease [`Registry::acquire`] granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The worker id.
    pub worker: u64,
    /// The fence before this grant: every ID the holder issues is at or past it.
    pub previous_fence_unix_ms: u64,
    /// The fence now in force: every ID the holder issues is below it.
    pub fence_unix_ms: u64,
}

/// One held lease, as [`Registry::renew`] and [`Registry::release`] name it.
#[derive(Clone, Copy, Debug)]
pub struct LeaseKey<'a> {
    /// The namespace.
    pub namespace: &'a str,
    /// The worker id.
    pub worker: u64,
    /// The token the lease was acquired with.
    pub holder: &'a str,
}

/// Connects to the registry a URL names: `postgres://` (or `postgresql://`)
/// with the `postgres` feature, `redis://` with the `redis` feature.
///
/// Nothing is sent until the first acquisition, which connects within
/// [`DEFAULT_TIMEOUT`].
///
/// # Errors
///
/// [`LeaseError::UnsupportedUrl`] for another scheme, or one whose feature is
/// off; [`LeaseError::InvalidUrl`] for a URL the client cannot parse.
pub fn connect(url: &str) -> Result<Arc<dyn Registry>, LeaseError> {
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    match scheme {
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => Ok(Arc::new(PostgresRegistry::new(url)?)),
        #[cfg(feature = "redis")]
        "redis" => Ok(Arc::new(RedisRegistry::new(url)?)),
        _ => Err(LeaseError::UnsupportedUrl {
            scheme: scheme.to_owned(),
        }),
    }
}

/// What can go wrong with a lease. The message names the server's address
/// (never its password) and says what to do.
#[derive(Debug)]
#[non_exhaustive]
pub enum LeaseError {
    /// The URL's scheme is not one this build supports.
    UnsupportedUrl {
        /// The scheme given.
        scheme: String,
    },
    /// The URL could not be parsed.
    InvalidUrl {
        /// Why.
        reason: String,
    },
    /// The namespace cannot be used as one.
    InvalidNamespace {
        /// Why.
        reason: &'static str,
    },
    /// The server could not be reached, or stopped answering, within the timeout.
    Unreachable {
        /// The server's address.
        address: String,
        /// What the client reported.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server refused the credentials.
    Unauthorized {
        /// The server's address.
        address: String,
        /// What the server said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Every worker id of the namespace is held.
    AllHeld {
        /// The namespace.
        namespace: String,
        /// How many ids are held (all the layout has).
        held: u64,
    },
    /// The lease is no longer this holder's: it expired and another holder
    /// took it, or it was released.
    Lost {
        /// The namespace.
        namespace: String,
        /// The worker id.
        worker: u64,
    },
    /// A record in the registry is not one flakegen wrote.
    Corrupt {
        /// The server's address.
        address: String,
        /// What was found.
        detail: String,
    },
    /// The server answered with an error.
    Server {
        /// The server's address.
        address: String,
        /// What the server said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::UnsupportedUrl { scheme } => write!(
                f,
                "no lease registry for {scheme:?} URLs: use postgres:// or redis:// \
                 with the crate's postgres or redis feature on"
            ),
            LeaseError::InvalidUrl { reason } => {
                write!(f, "invalid lease registry URL: {reason}")
            }
            LeaseError::InvalidNamespace { reason } => {
                write!(f, "invalid lease namespace: {reason}")
            }
            LeaseError::Unreachable { address, source } => write!(
                f,
                "lease registry at {address} is unreachable ({source}): check that the server \
                 runs and the address is right"
            ),
            LeaseError::Unauthorized { address, source } => write!(
                f,
                "lease registry at {address} refused the credentials ({source}): check the \
                 user name and password in the URL"
            ),
            LeaseError::AllHeld { namespace, held } => write!(
                f,
                "all {held} worker ids of lease namespace {namespace:?} are held: stop a \
                 generator, wait for a crashed one's lease to expire, or use a layout \
                 with more worker bits"
            ),
            LeaseError::Lost { namespace, worker } => write!(
                f,
                "the lease on worker id {worker} of namespace {namespace:?} is no longer held: \
                 build a new generator to lease an id again"
            ),
            LeaseError::Corrupt { address, detail } => write!(
                f,
                "lease registry at {address} holds a record flakegen did not write ({detail}): \
                 remove it, or use another namespace"
            ),
            LeaseError::Server { address, source } => {
                write!(
                    f,
                    "lease registry at {address} answered with an error: {source}"
                )
            }
        }
    }
}

impl std::error::Error for LeaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LeaseError::Unreachable { source, .. }
            | LeaseError::Unauthorized { source, .. }
            | LeaseError::Server { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// Checks a namespace: the backends put it in keys and rows.
pub(crate) fn check_namespace(namespace: &str) -> Result<(), LeaseError> {
    let reason = if namespace.is_empty() {
        "it is empty"
    } else if namespace.len() > 200 {
        "it is longer than 200 bytes"
    } else if namespace
        .chars()
        .any(|c| c.is_control() || c == '{' || c == '}')
    {
        "it holds a control character or a brace"
    } else {
        return Ok(());
    };
    Err(LeaseError::InvalidNamespace { reason })
}

/// One worker id's record, as a backend read it.
#[cfg(any(feature = "postgres", test))]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record {
    /// Whether someone holds it: a holder, and an expiry after the server's now.
    pub(crate) held: bool,
    pub(crate) fence_unix_ms: u64,
}

/// The choice [`Registry::acquire`] makes, for backends that make it in Rust:
/// among ids `0..request.workers`, the free one whose fence has passed on the
/// holder's clock, else the free one with the earliest fence; ties go to the
/// lowest id. `record(worker)` is `None` for an id with no record, which is
/// fenced at `unknown_fence_unix_ms`. Returns the grant, or how many are held.
/// (The Redis backend makes the same choice in Lua.)
#[cfg(any(feature = "postgres", test))]
pub(crate) fn choose(
    request: &AcquireRequest<'_>,
    unknown_fence_unix_ms: u64,
    mut record: impl FnMut(u64) -> Option<Record>,
) -> Result<Grant, u64> {
    let mut best: Option<(bool, u64, u64)> = None; // (fence not yet passed, fence, worker)
    let mut held = 0u64;
    for worker in 0..request.workers {
        let fence = match record(worker) {
            Some(Record { held: true, .. }) => {
                held += 1;
                continue;
            }
            Some(record) => record.fence_unix_ms,
            None => unknown_fence_unix_ms,
        };
        let candidate = (fence > request.now_unix_ms, fence, worker);
        if best.is_none_or(|best| candidate < best) {
            best = Some(candidate);
        }
    }
    let (_, previous, worker) = best.ok_or(held)?;
    Ok(Grant {
        worker,
        previous_fence_unix_ms: previous,
        fence_unix_ms: previous.max(request.fence_unix_ms),
    })
}

/// Where an id with no record is fenced: a TTL and the skew allowance past
/// the registry's marker.
#[cfg(any(feature = "postgres", test))]
pub(crate) fn unknown_fence(marker_unix_ms: u64, request: &AcquireRequest<'_>) -> u64 {
    let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    marker_unix_ms
        .saturating_add(millis(request.ttl))
        .saturating_add(millis(request.skew))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(now: u64) -> AcquireRequest<'static> {
        AcquireRequest {
            namespace: "n",
            workers: 4,
            holder: "me",
            ttl: Duration::from_secs(10),
            fence_unix_ms: now + 10_000,
            now_unix_ms: now,
            skew: Duration::from_secs(2),
        }
    }

    #[test]
    fn prefers_a_passed_fence_then_the_earliest() {
        let records = [
            Some(Record {
                held: true,
                fence_unix_ms: 1,
            }),
            Some(Record {
                held: false,
                fence_unix_ms: 5_000,
            }),
            Some(Record {
                held: false,
                fence_unix_ms: 900,
            }),
            None,
        ];
        let grant = choose(&request(1_000), 99_999, |w| records[w as usize]).unwrap();
        assert_eq!((grant.worker, grant.previous_fence_unix_ms), (2, 900));
        assert_eq!(grant.fence_unix_ms, 11_000);
        // Nothing has passed: the earliest fence, even the unknown id's.
        let grant = choose(&request(100), 4_000, |w| records[w as usize]).unwrap();
        assert_eq!((grant.worker, grant.previous_fence_unix_ms), (2, 900));
        let grant = choose(&request(100), 500, |w| records[w as usize]).unwrap();
        assert_eq!((grant.worker, grant.previous_fence_unix_ms), (3, 500));
    }

    #[test]
    fn unrecorded_ids_wait_a_ttl_and_the_skew_past_the_marker() {
        assert_eq!(unknown_fence(1_000, &request(0)), 1_000 + 10_000 + 2_000);
        assert_eq!(unknown_fence(u64::MAX - 5, &request(0)), u64::MAX);
    }

    #[test]
    fn a_fence_ahead_of_the_asked_one_is_kept() {
        let grant = choose(&request(0), 50_000, |_| None).unwrap();
        assert_eq!(grant.fence_unix_ms, 50_000);
    }

    #[test]
    fn counts_the_held_when_none_is_free() {
        let held = Some(Record {
            held: true,
            fence_unix_ms: 0,
        });
        assert_eq!(choose(&request(0), 0, |_| held), Err(4));
    }

    #[test]
    fn namespaces_that_cannot_be_keys_are_refused() {
        assert!(check_namespace("orders").is_ok());
        for bad in ["", "a{b}", "tab\there", &"x".repeat(201)] {
            assert!(check_namespace(bad).is_err(), "{bad:?}");
        }
    }
}

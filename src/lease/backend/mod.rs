//! The storage layer: what a registry must offer, and the records and
//! marker it stores, nothing more.
//!
//! A service that only leases worker ids needs none of this: it names a
//! registry by URL ([`connect`](super::connect)) or builds one of flakegen's
//! ([`MemoryRegistry`](super::MemoryRegistry), `MysqlRegistry`, `PostgresRegistry`,
//! `RedisRegistry`, `EtcdRegistry`, `KubernetesRegistry`) and hands it to a [`Lease`](super::Lease). Those who
//! keep leases somewhere else implement [`Registry`]: three storage steps,
//! and nothing of the protocol, which flakegen decides once over them.
//!
//! # What a store must provide, and why
//!
//! The protocol (see [the contract](super#the-contract)) keeps two holders
//! of a worker id apart with fences: instants that one holder's IDs stay
//! below and the next one's start at. It needs three things of a store:
//!
//! - **A compare-and-set.** [`Registry::swap`] writes a record only if it
//!   still has the version the writer last saw, under the marker it last
//!   saw, in one atomic step. That is what makes a renewal confirm *this*
//!   lease (rule 1) and keeps a lost lease from being written back (rule 4).
//! - **A clock, its own or its clients'.** Who holds an id is decided by a
//!   clock and the TTL alone: an expiry is the writer's now plus the TTL.
//!   With a server clock ([`TimeBase::Server`]), two holders whose clocks
//!   disagree still agree on who holds it, and each holder's clock is
//!   checked against the server's at every acquisition and renewal (the
//!   skew allowance), which is what bounds how far a fence confirmed before
//!   a loss can lead the loss: the loss rule (rule 6) fences unrecorded ids
//!   at the marker plus the TTL plus that allowance. A store without a
//!   clock (etcd, [`TimeBase::Client`]) uses its clients' clocks for the
//!   same times, and the allowance becomes an assumption nobody checks:
//!   every two hosts' clocks within it of each other. Fences need no clock
//!   at all: whatever the clocks say, a holder's IDs stay below the fence
//!   the store confirmed, and its successor starts at it.
//! - **A marker that names its history, and a high-water mark.** A
//!   namespace's marker is the moment, by the registry's clock, from which
//!   the store vouches for the namespace's records. It must change whenever
//!   the store may have forgotten a write it confirmed: its data lost (a
//!   restart without persistence, a `TRUNCATE`, a dropped table, keys or
//!   rows deleted), or its history changed under it (a replica promoted, a
//!   restore, another server answering at the same address). Every write
//!   checks the marker in the same atomic step, so a holder from before a
//!   change can no longer renew, and every record from before it is fenced
//!   by the loss rule. A namespace with no marker is new or emptied, and
//!   nothing tells which: its new marker is the moment it was found. The
//!   high-water mark, raised with every write past it, tells an id never
//!   handed out under the marker (at or above it) from one whose record is
//!   gone (below it), which waits from the moment that was seen.
//!
//! The servers of one registry (a primary and its replicas) are taken to
//! keep their clocks in step, as databases with replicas do (NTP): the new
//! marker after a failover is the new server's clock, and a new server
//! whose clock is behind the old one's by some time shortens the loss
//! rule's margin by as much.
//!
//! Beside the three steps, `Inspect` is what a tool shows an operator
//! (`flakegen leases`, `flakegen leases check`): optional, for registries
//! that can say it, with its views in `flakegen::lease::inspect` (the
//! `inspect` feature).
//!
//! # A registry of flakegen's own, file by file
//!
//! The storage layer is in three parts. At its top, the contract: this
//! trait, the records (`record.rs`), what a registry declares of itself
//! (`capability.rs`), its errors (`error.rs`), the operators' views
//! (`inspect.rs`) and the table of registries with `connect` by URL
//! (`connect.rs`). In `client/`, what the remote stores stand on and no
//! store's dialect: URLs, the call budget, the probe, TLS, the runtime and
//! connection pool, the HTTP client of etcd and Kubernetes, and how long a
//! client's knowledge of a record serves a write. Then the stores: memory
//! (`memory.rs`), and one folder for each remote store, which maps `read`,
//! `mark` and `swap` onto its server and nothing more.
//!
//! Each remote store lives in a folder of the same rooms (a test holds them to it):
//! `<name>/mod.rs` (the type, its docs: the layout of its keys or tables and
//! what counts as a loss; and `impl Registry`), `url.rs` (its URL, and the
//! fix-it texts in its terms), `errors.rs` (its client's failures as a
//! [`LeaseError`]), `inspect.rs` (the operators' views) and its transport
//! (`session.rs` and `statements.rs` for SQL, `gateway.rs` over the shared `client/http.rs` for
//! etcd). Adding one touches, besides its folder: one entry of
//! `REGISTRIES` in `connect.rs` (the CLI's help, the
//! README's table, the crate's guide and every list of registries in the
//! docs are checked against it: `tests/release.rs`), its
//! feature in `Cargo.toml`, its test servers in
//! `scripts/services/<service>.sh`, its fixture in `tests/common/<name>.rs`,
//! the list `ALL` in `tests/common/server.rs` (which runs the contract
//! suite, the fault test and the cross-registry tests on it) and its
//! service's name in `tests/common/services.rs` (which the CLI's tests
//! share), and the registries CI checks in `.ci/run`.

use std::ops::Range;
use std::sync::Arc;

// The registries stand on this module's trait, and `lease` shows them:
// declared here, re-exported there, so that imports run one way.
mod capability;
pub(super) mod client;
pub(super) mod connect;
pub(super) mod error;
#[cfg(feature = "etcd")]
pub(super) mod etcd;
pub(super) mod inspect;
#[cfg(feature = "kubernetes")]
pub(super) mod kubernetes;
pub(super) mod memory;
#[cfg(feature = "mysql")]
pub(super) mod mysql;
#[cfg(feature = "postgres")]
pub(super) mod postgres;
mod record;
#[cfg(feature = "redis")]
pub(super) mod redis;

pub(crate) use self::error::LeaseError;
#[cfg(feature = "etcd")]
pub(crate) use self::error::Source;
pub(crate) use self::error::said;
#[cfg(feature = "inspect")]
pub(crate) use self::inspect::Inspect;
#[cfg(feature = "inspect")]
pub use self::record::RecordState;
#[cfg(not(feature = "inspect"))]
pub(crate) use self::record::RecordState;
pub use self::record::{Expect, NewRecord, Record};

pub use self::capability::{MarkerCheck, ReadCost, TimeBase};

/// Where worker-id leases are stored: [`MemoryRegistry`](super::MemoryRegistry), and
/// `MysqlRegistry`, `PostgresRegistry`, `RedisRegistry`, `EtcdRegistry` and
/// `KubernetesRegistry` behind the `mysql`, `postgres`, `redis`, `etcd` and
/// `kubernetes` features.
///
/// A registry only stores. Which id is free, where fences go, the marker
/// rule and the release rule are decided once, by flakegen, over these three
/// steps (see [the contract](super#the-contract)). A registry must promise:
///
/// - **Atomic steps, judged by one clock.** [`swap`](Self::swap) checks and
///   writes in one step, and computes an expiry from the registry's clock:
///   the server's, or, for a store without one, its clients' ([`TimeBase`]).
/// - **A marker no earlier than any loss, and a high-water mark.** If the
///   store can lose records, or its history can change (a restart without
///   persistence, a truncated or dropped table, data deleted by hand, a
///   failover to a replica, a restore), the namespace's marker in force
///   after it is no earlier, by the registry's clock in milliseconds, than
///   the loss: it is written anew, and every record written before it is
///   either gone or still carries the old marker. A namespace with no
///   marker proves nothing: [`mark`](Self::mark) dates it now. Every write
///   past the namespace's high-water mark raises it. See [the module
///   docs](self#what-a-store-must-provide-and-why).
/// - **Bounded calls.** Every call finishes or fails within the registry's
///   timeout, measured on the client, whatever the server does.
/// - **Cheap at any scale, or saying what it costs.** A [`read`](Self::read)
///   costs what the live holders cost, not what the id space or every record
///   ever written would: it returns the few records an acquisition chooses
///   from, not all of them. A store that cannot ask for so few (Kubernetes'
///   LIST) declares it ([`ReadCost::EveryRecord`]). No call holds a shared
///   server (a Redis) for more than a millisecond.
///
/// Where stores differ, a registry declares which it is, and the contract
/// suite holds it to that: [`time_base`](Self::time_base),
/// [`marker_check`](Self::marker_check), [`read_cost`](Self::read_cost).
///
/// Implement it to keep leases somewhere else, and prove it with the
/// contract suite that flakegen's own registries pass: the
/// [`flakegen-contract`](https://docs.rs/flakegen-contract) crate runs it
/// over a fixture of yours, against your real server.
pub trait Registry: Send + Sync + 'static {
    /// Reads what an acquisition in `namespace` chooses from, among the
    /// ids `0..request.workers`. A registry keeps these obligations, each
    /// checked by the contract rule named beside it
    /// ([`flakegen-contract`](https://docs.rs/flakegen-contract)):
    ///
    /// 1. **The server's clock** when it read, in [`Snapshot::server_unix_millis`]
    ///    (`read_returns_what_an_acquisition_chooses_from`).
    /// 2. **The marker in force**, or `None` where there is none: a marker
    ///    of another history (a failover, a restore) is not in force
    ///    (`a_mark_after_a_wipe_is_no_earlier_than_the_wipe`,
    ///    `a_marker_replaced_is_never_moved_back`,
    ///    `the_marker_is_no_earlier_than_the_loss`).
    /// 3. **The high-water mark** under the marker in force, 0 where there
    ///    is none ([`Snapshot::high_water`];
    ///    `read_returns_what_an_acquisition_chooses_from`).
    /// 4. **The records that decide a choice**, where they exist: of the free
    ///    records under the marker in force, the one with the earliest
    ///    fence (ties: the lowest id); of those whose lease has expired by
    ///    the server's clock, one, preferably the earliest fence's; the
    ///    record of [`prefer`](ReadRequest::prefer); and the record of the id
    ///    at the high-water mark (`read_returns_what_an_acquisition_chooses_from`,
    ///    `a_displaced_holder_heals_onto_a_free_id_and_writes_nothing_back`).
    /// 5. **Every record in the probe**: each id of
    ///    [`probed`](ReadRequest::probed) that has a record, whatever marker
    ///    it was written under. flakegen moves the probe, at most
    ///    [`MAX_PROBE`](ReadRequest::MAX_PROBE) ids at a time, through the ids below the high-water mark,
    ///    and takes an id there with no record under the marker for one
    ///    whose record is gone (`read_returns_what_an_acquisition_chooses_from`,
    ///    `a_record_gone_far_below_the_mark_is_leased_again`).
    /// 6. **A consistent view, or a telling one.** A read may take several
    ///    steps rather than one atomic one, provided that a record written
    ///    at or past the high-water mark it returns, by an acquisition
    ///    racing it, shows in the snapshot: flakegen then reads again
    ///    (`builds_racing_in_a_new_namespace_each_get_an_id`).
    ///
    /// [`Snapshot::records`] may hold other records of the namespace below
    /// `workers`, as many as [`read_cost`](Self::read_cost) declares
    /// (`a_read_costs_what_its_registry_declares`); those above are ignored. Which id is free, and where its lease
    /// starts, flakegen decides from these: a registry computes nothing of
    /// it, and keeps no state for it beyond the records and the marker.
    ///
    /// # Errors
    ///
    /// The connection's errors, and [`LeaseError::Corrupt`] for a record the
    /// registry cannot read.
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError>;

    /// Makes sure the namespace has a marker, and returns the one in force.
    ///
    /// A new marker is the server's clock now, in milliseconds rounded up,
    /// with a high-water mark of 0, and later than any marker it replaces
    /// (one of another history: a failover, a restore). Never earlier: a
    /// namespace with no marker is new, or was emptied (a `FLUSHALL`, its
    /// tables dropped, its keys deleted, a backup from before it existed
    /// restored), and nothing in an empty store tells which. A registry
    /// that knows its whole history (a [`MemoryRegistry`](super::MemoryRegistry),
    /// which lives and dies with its process) may say when its data began.
    ///
    /// # Errors
    ///
    /// The connection's errors.
    fn mark(&self, namespace: &str) -> Result<u64, LeaseError>;

    /// Writes `record` as the record of `worker`, if and only if the
    /// namespace's marker in force is `expect.marker_unix_millis` and the
    /// record's version is `expect.version` (`None`: there is no record).
    /// The record written carries `expect.marker_unix_millis`, and expires
    /// `record.ttl_millis` after the server's now (never, for a free record:
    /// `ttl_millis` 0 writes expiry 0). A `worker` at or above the
    /// namespace's high-water mark raises the mark to `worker + 1`, in the
    /// same atomic step or before it, never after.
    ///
    /// Returns the server's clock when it wrote (ms since 1970, rounded
    /// down), or `None` if it did not write.
    ///
    /// The marker is checked in the same atomic step, or, for a store that
    /// compares one object at a time, as its [`marker_check`](Self::marker_check)
    /// declares ([`MarkerCheck::ConfirmedFirst`];
    /// `swap_writes_only_under_the_marker_in_force`,
    /// `a_swap_under_a_planted_marker_keeps_its_check`,
    /// `a_swap_under_a_deleted_marker_keeps_its_check`).
    ///
    /// # Errors
    ///
    /// The connection's errors. After an error the write may or may not have
    /// happened.
    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError>;

    /// Whose clock the times this registry returns are read from. Default:
    /// [`TimeBase::Server`].
    fn time_base(&self) -> TimeBase {
        TimeBase::Server
    }

    /// How [`swap`](Self::swap) checks the marker. Default:
    /// [`MarkerCheck::InSwap`], in the same atomic step as the version.
    fn marker_check(&self) -> MarkerCheck {
        MarkerCheck::InSwap
    }

    /// What a [`read`](Self::read) costs the server. Default:
    /// [`ReadCost::Bounded`], a few records whatever the namespace holds.
    fn read_cost(&self) -> ReadCost {
        ReadCost::Bounded
    }

    /// What the registry can show an operator, if it can: see [`Inspect`].
    /// Leasing never calls it. Default: `None`.
    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn Inspect> {
        None
    }

    /// The same store behind connections of its own, none of them this
    /// one's: what a process restored from a snapshot leases again from
    /// ([`IdGenerator::after_restore`](crate::IdGenerator::after_restore)),
    /// since every copy of the snapshot holds a copy of this one's sockets
    /// and whatever runs them. `None` when it cannot be made: the restored
    /// generator then refuses. Default: `None`; the registries of
    /// [`connect`](super::connect) reconnect to their URL.
    fn reopen(&self) -> Option<Arc<dyn Registry>> {
        None
    }
}

// Forwards every method, provided ones included: a new provided method
// that went unforwarded would silently take its default behind a pointer.
macro_rules! forward_registry {
    ($($ptr:ty),*) => {$(
        #[deny(clippy::missing_trait_methods)]
        impl<R: Registry + ?Sized> Registry for $ptr {
            fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
                (**self).read(namespace, request)
            }
            fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
                (**self).mark(namespace)
            }
            fn swap(&self, namespace: &str, worker: u64, expect: Expect, record: &NewRecord<'_>) -> Result<Option<u64>, LeaseError> {
                (**self).swap(namespace, worker, expect, record)
            }
            fn time_base(&self) -> TimeBase {
                (**self).time_base()
            }
            fn marker_check(&self) -> MarkerCheck {
                (**self).marker_check()
            }
            fn read_cost(&self) -> ReadCost {
                (**self).read_cost()
            }
            #[cfg(feature = "inspect")]
            fn inspect(&self) -> Option<&dyn Inspect> {
                (**self).inspect()
            }
            fn reopen(&self) -> Option<Arc<dyn Registry>> {
                (**self).reopen()
            }
        }
    )*};
}

forward_registry!(Arc<R>, Box<R>);

/// What [`Registry::read`] found: the few records an acquisition chooses from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The server's clock when it read, in ms since 1970 (rounded down).
    pub server_unix_millis: u64,
    /// The namespace's marker in force, if any.
    pub marker_unix_millis: Option<u64>,
    /// Records an acquisition may take, in any order: see [`Registry::read`]
    /// for which must be here.
    pub records: Vec<Record>,
    /// The namespace's high-water mark under the marker in force: no id at
    /// or above it has had a record written under that marker. Every
    /// [`swap`](Registry::swap) that writes a record at or above it raises
    /// it past that id, in the same atomic step (or before it). 0 where
    /// there is no marker.
    pub high_water: u64,
}

/// What an acquisition asks [`Registry::read`] for.
///
/// ```
/// use flakegen::lease::backend::ReadRequest;
///
/// let request = ReadRequest::new(1024).prefer(Some(7)).probe(64..128);
/// assert_eq!((request.workers, request.prefer), (1024, Some(7)));
/// assert_eq!(request.probe, 64..128);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadRequest {
    /// The ids in play: `0..workers`.
    pub workers: u64,
    /// The id a generator held before a loss, whose record the read returns.
    pub prefer: Option<u64>,
    /// Ids whose records the read returns, whatever they say: those of
    /// [`probed`](Self::probed).
    pub probe: Range<u64>,
}

impl ReadRequest {
    /// The most ids a probe covers.
    pub const MAX_PROBE: u64 = 64;

    /// A read among the ids `0..workers`, preferring none, probing none.
    pub const fn new(workers: u64) -> ReadRequest {
        ReadRequest {
            workers,
            prefer: None,
            probe: 0..0,
        }
    }

    /// The same read, returning the record of `worker` too.
    #[must_use]
    pub const fn prefer(mut self, worker: Option<u64>) -> ReadRequest {
        self.prefer = worker;
        self
    }

    /// The same read, returning every record among `ids` too.
    #[must_use]
    pub const fn probe(mut self, ids: Range<u64>) -> ReadRequest {
        self.probe = ids;
        self
    }

    /// The probe's ids whose records a read must return: those below
    /// `workers`, at most [`MAX_PROBE`](Self::MAX_PROBE) of them, so that a
    /// probe asked for carelessly cannot hold a shared server.
    pub fn probed(&self) -> Range<u64> {
        let start = self.probe.start.min(self.workers);
        let end = self
            .probe
            .end
            .min(self.workers)
            .min(start.saturating_add(Self::MAX_PROBE));
        start..end.max(start)
    }
}

impl Snapshot {
    /// Whether the snapshot holds a record under `marker_unix_millis` at
    /// or above its own high-water mark: a read made of several steps, not
    /// one atomic step, can see an acquisition racing it write that record
    /// between them. Such a snapshot is read again.
    pub(crate) fn fresh_taken(&self, marker_unix_millis: u64) -> bool {
        self.records
            .iter()
            .any(|r| r.worker >= self.high_water && r.marker_unix_millis == marker_unix_millis)
    }
}

/// A count of ms, or a version, for a SQL `BIGINT` column: past `i64::MAX`
/// (never, for a time before the year 292,000,000) it saturates.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
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
    } else if namespace.trim() != namespace {
        // SQL compares text padded with spaces: "a " would be "a".
        "it begins or ends with white space"
    } else {
        return Ok(());
    };
    Err(LeaseError::InvalidNamespace { reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_read_holds_a_probe_and_the_records_that_decide() {
        assert_eq!(ReadCost::BOUND as u64, ReadRequest::MAX_PROBE + 8);
    }

    #[test]
    fn namespaces_that_cannot_be_keys_are_refused() {
        assert!(check_namespace("orders").is_ok());
        for bad in ["", "a{b}", "tab\there", " a", "a ", &"x".repeat(201)] {
            assert!(check_namespace(bad).is_err(), "{bad:?}");
        }
    }
}

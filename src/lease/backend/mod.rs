//! The storage layer: what a registry must offer, and the records and
//! marker it stores, nothing more.
//!
//! A service that only leases worker ids needs none of this: it names a
//! registry by URL ([`connect`](super::connect)) or builds one of flakegen's
//! ([`MemoryRegistry`](super::MemoryRegistry), `MysqlRegistry`, `PostgresRegistry`,
//! `RedisRegistry`, `EtcdRegistry`) and hands it to a [`Lease`](super::Lease). Those who
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
//! - **A marker that names its history.** The marker is the moment, by the
//!   server's clock, from which the store vouches for its records. It must
//!   change whenever the store may have forgotten a write it confirmed: its
//!   data lost (a restart without persistence, a `TRUNCATE`, a dropped
//!   table), or its history changed under it (a replica promoted, a
//!   restore, another server answering at the same address). Every write
//!   checks the marker in the same atomic step, so a holder from before a
//!   change can no longer renew, and every record from before it is fenced
//!   by the loss rule.
//!
//! The servers of one registry (a primary and its replicas) are taken to
//! keep their clocks in step, as databases with replicas do (NTP): the new
//! marker after a failover is the new server's clock, and a new server
//! whose clock is behind the old one's by some time shortens the loss
//! rule's margin by as much.
//!
//! Beside the three steps, [`Inspect`] is what a tool shows an operator
//! (`flakegen leases`, `flakegen leases check`): optional, for registries
//! that can say it.

use std::sync::Arc;
use std::time::Duration;

// The registries stand on this module's trait, and `lease` shows them:
// declared here, re-exported there, so that imports run one way.
pub(super) mod connect;
mod error;
#[cfg(feature = "etcd")]
pub(super) mod etcd;
pub(super) mod memory;
#[cfg(feature = "mysql")]
pub(super) mod mysql;
#[cfg(feature = "postgres")]
pub(super) mod postgres;
#[cfg(remote)]
mod probe;
#[cfg(feature = "redis")]
pub(super) mod redis;
#[cfg(remote)]
mod remote;
#[cfg(remote)]
mod tls;

pub use self::error::LeaseError;
#[cfg(feature = "etcd")]
pub(crate) use self::error::Source;
pub(crate) use self::error::said;

/// How long connecting to a registry, or one request once connected, may
/// take before it counts as unreachable, measured on the client: 3 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// Where worker-id leases are stored: [`MemoryRegistry`](super::MemoryRegistry), and
/// `MysqlRegistry`, `PostgresRegistry`, `RedisRegistry` and `EtcdRegistry`
/// behind the `mysql`, `postgres`, `redis` and `etcd` features.
///
/// A registry only stores. Which id is free, where fences go, the marker
/// rule and the release rule are decided once, by flakegen, over these three
/// steps (see [the contract](super#the-contract)). A registry must promise:
///
/// - **Atomic steps, judged by the server's clock.** [`swap`](Self::swap)
///   checks and writes in one step, and computes an expiry from its own clock.
/// - **A marker no earlier than any loss.** If the store can lose records,
///   or its history can change (a restart without persistence, a truncated
///   or dropped table, a failover to a replica, a restore), the marker in
///   force after it is no earlier, by the server's clock in milliseconds,
///   than the loss: it is written anew, and every record written before it
///   is either gone or still carries the old marker. See [the module
///   docs](self#what-a-store-must-provide-and-why).
/// - **Bounded calls.** Every call finishes or fails within the registry's
///   timeout, measured on the client, whatever the server does.
/// - **Cheap at any scale.** A [`read`](Self::read) costs what the live
///   holders cost, not what the id space or every record ever written would:
///   it returns the few records an acquisition chooses from, not all of them.
///   No call holds a shared server (a Redis) for more than a millisecond.
///
/// Implement it to keep leases somewhere else, and prove it with the
/// contract suite that flakegen's own registries pass: the
/// [`flakegen-contract`](https://docs.rs/flakegen-contract) crate runs it
/// over a fixture of yours, against your real server.
pub trait Registry: Send + Sync + 'static {
    /// Reads what an acquisition in `namespace`, among ids `0..workers`,
    /// chooses from: the server's clock, the marker in force (`None` if
    /// there is none), the records an acquisition may take, and the lowest
    /// id with no record written under the marker in force
    /// ([`Snapshot::fresh`]).
    ///
    /// [`Snapshot::records`] may hold any records of the namespace below
    /// `workers` (all of them, for a registry that can afford it), and must
    /// hold at least, where they exist:
    ///
    /// - of the free records written under the marker in force (no holder),
    ///   the one with the earliest fence (ties: the lowest id);
    /// - of the records written under the marker in force whose lease has
    ///   expired by the server's clock, one, preferably the one with the
    ///   earliest fence;
    /// - the record of `prefer`, the id a generator held before a loss;
    /// - the record of [`Snapshot::fresh`], if it has one from before the
    ///   marker in force.
    ///
    /// A read may take several steps rather than one atomic one: if an
    /// acquisition racing it takes the fresh id between them, and the
    /// snapshot holds that id's new record, flakegen reads again.
    ///
    /// # Errors
    ///
    /// The connection's errors, and [`LeaseError::Corrupt`] for a record the
    /// registry cannot read.
    fn read(
        &self,
        namespace: &str,
        workers: u64,
        prefer: Option<u64>,
    ) -> Result<Snapshot, LeaseError>;

    /// Makes sure the namespace has a marker, and returns the one in force.
    ///
    /// A new marker is the moment the store's data began, by the server's
    /// clock in milliseconds rounded up: any data it lost was lost before that.
    /// A store that knows it has lost nothing (a table it has just created)
    /// may say 0.
    ///
    /// # Errors
    ///
    /// The connection's errors.
    fn mark(&self, namespace: &str) -> Result<u64, LeaseError>;

    /// Writes `record` as the record of `worker`, if and only if the marker
    /// in force is `expect.marker_unix_millis` and the record's version is
    /// `expect.version` (`None`: there is no record). The record written
    /// carries `expect.marker_unix_millis`, and expires `record.ttl_millis`
    /// after the server's now (never, for a free record: `ttl_millis` 0
    /// writes expiry 0).
    ///
    /// Returns the server's clock when it wrote (ms since 1970, rounded
    /// down), or `None` if it did not write.
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

    /// What the registry can show an operator, if it can: see [`Inspect`].
    /// Leasing never calls it. Default: `None`.
    fn inspect(&self) -> Option<&dyn Inspect> {
        None
    }
}

/// What a tool shows an operator of a registry (`flakegen leases`,
/// `flakegen leases check`): optional, apart from the three storage steps a
/// registry must offer, and reached through [`Registry::inspect`]. Leasing
/// never calls it. Nothing here writes: a look at a registry never
/// creates its table, its marker, or a record.
pub trait Inspect: Send + Sync {
    /// Every record of `namespace`, whatever marker it was written under,
    /// ordered by worker id, with the server's clock and the marker in
    /// force. It may cost what the namespace's records cost.
    ///
    /// # Errors
    ///
    /// The connection's errors, [`LeaseError::NoLeases`] when the store
    /// holds no leases at all (no table yet), and [`LeaseError::Corrupt`]
    /// for a record the registry cannot read.
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError>;

    /// The namespaces that have records, in order.
    ///
    /// # Errors
    ///
    /// As for [`list`](Self::list).
    fn namespaces(&self) -> Result<Vec<String>, LeaseError>;

    /// What the server says of itself: the connection as negotiated, and
    /// each setting or arrangement under which leasing from it could fail,
    /// wait, or hand an id to two holders, with what to do.
    ///
    /// # Errors
    ///
    /// The connection's errors.
    fn survey(&self) -> Result<Survey, LeaseError>;
}

// Forwards every method, provided ones included: a new provided method
// that went unforwarded would silently take its default behind a pointer.
macro_rules! forward_registry {
    ($($ptr:ty),*) => {$(
        #[deny(clippy::missing_trait_methods)]
        impl<R: Registry + ?Sized> Registry for $ptr {
            fn read(&self, namespace: &str, workers: u64, prefer: Option<u64>) -> Result<Snapshot, LeaseError> {
                (**self).read(namespace, workers, prefer)
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
            fn inspect(&self) -> Option<&dyn Inspect> {
                (**self).inspect()
            }
        }
    )*};
}

forward_registry!(Arc<R>, Box<R>);

/// Whose clock a registry's times are read from: the server clock of
/// [`Snapshot::server_unix_millis`], of a swap's answer, of an expiry and a
/// marker ([`Registry::time_base`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeBase {
    /// The store's own clock, read by the store: every holder is judged by
    /// one clock, and each holder's is checked against it (the skew
    /// allowance).
    Server,
    /// The store has none (etcd): its times are the calling host's clock.
    /// Nothing checks one host's clock against another's; the skew
    /// allowance is what the hosts must keep to.
    Client,
}

/// What [`Registry::read`] found: the few records an acquisition chooses from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The server's clock when it read, in ms since 1970 (rounded down).
    pub server_unix_millis: u64,
    /// The marker in force, if any.
    pub marker_unix_millis: Option<u64>,
    /// Records an acquisition may take, in any order: see [`Registry::read`]
    /// for which must be here.
    pub records: Vec<Record>,
    /// The lowest id below `workers` with no record written under the
    /// marker in force: one no holder has touched since the store's data
    /// began (it may hold a record from before, which is then in `records`).
    /// `None` when every id has one.
    pub fresh: Option<u64>,
    /// `fresh` may not be the lowest such id: a registry that looks for it
    /// a bounded slice of ids at a time found none in this read's slice
    /// (more acquisitions than the slice holds came between two reads), and
    /// the next read looks past it. flakegen reads again, a bounded number
    /// of times.
    pub more: bool,
}

impl Snapshot {
    /// Whether the fresh id has a record under `marker_unix_millis` after
    /// all: a read made of several steps, not one atomic step, can see an
    /// acquisition racing it write that record between them. Such a
    /// snapshot is read again.
    pub(crate) fn fresh_taken(&self, marker_unix_millis: u64) -> bool {
        self.fresh.is_some_and(|fresh| {
            self.records
                .iter()
                .any(|r| r.worker == fresh && r.marker_unix_millis == marker_unix_millis)
        })
    }
}

/// What [`Inspect::list`] found: every record of a namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The server's clock when it read, in ms since 1970 (rounded down).
    pub server_unix_millis: u64,
    /// The marker in force, if any. A record written under another is void:
    /// its id is fenced by the loss rule.
    pub marker_unix_millis: Option<u64>,
    /// Every record, by worker id.
    pub records: Vec<Record>,
}

/// What the server says of itself: [`Inspect::survey`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Survey {
    /// How the connection travels, as negotiated with the server.
    pub transport: Transport,
    /// What stands between the server and the generators that rely on it.
    pub caveats: Vec<Caveat>,
}

impl Survey {
    /// A survey of a connection over `transport`, with `caveats`.
    pub fn new(transport: Transport, caveats: Vec<Caveat>) -> Self {
        Survey { transport, caveats }
    }
}

/// How a connection to a registry travels, as negotiated: what the
/// connection did, not what its URL asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// In this process: no network.
    InProcess,
    /// Plain text.
    Plain,
    /// TLS, with this much of the server's certificate verified.
    Tls(Verified),
}

/// How much of a server's certificate a TLS connection verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verified {
    /// Nothing: anyone on the path could answer for the server.
    Nothing,
    /// Its chain, up to a trusted CA, but not the host name.
    Chain,
    /// Its chain and the host name in the URL.
    Full,
}

/// A setting or arrangement of the server's under which leasing from it
/// could fail, wait, or hand an id to two holders: see [`Inspect::survey`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caveat {
    /// What it bears on: `durability` (what a crash could forget),
    /// `topology` (replicas, failovers, other writers), `eviction`.
    pub topic: &'static str,
    /// What was seen, as the server names it
    /// (`innodb_flush_log_at_trx_commit = 0`, `primary, 1 asynchronous replica`).
    pub setting: String,
    /// How much it matters.
    pub severity: Severity,
    /// What it means for generators, and what to do.
    pub advice: String,
}

/// How much a [`Caveat`] matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing: what a fault would cost, all of it safe.
    Note,
    /// Works, and is safe, unless something else fails too (a machine's
    /// crash, not the server's).
    Warning,
    /// Generators will fail here, or could share an id: fix it first.
    Danger,
}

/// One worker id's record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// The worker id.
    pub worker: u64,
    /// The holder's token; empty when nobody holds it.
    pub holder: String,
    /// Changes with every write; a [`swap`](Registry::swap) names the version it replaces.
    pub version: u64,
    /// The marker in force when the record was written.
    pub marker_unix_millis: u64,
    /// When the lease expires, by the server's clock (ms since 1970); 0 when free.
    pub expires_unix_millis: u64,
    /// The fence (ms since 1970): every ID its holders issued lies below it.
    pub fence_unix_millis: u64,
}

/// What a record says, under a marker and by the server's clock: the one
/// judgement that leasing and every tool make of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordState {
    /// A live lease: its holder may still be issuing.
    Held,
    /// Its lease expired: free to take, at or past its fence.
    Expired,
    /// Given back: free to take, at or past its fence.
    Free,
    /// Written under another marker, before a loss the registry cannot
    /// vouch across: free to take, fenced by the loss rule.
    Void,
}

impl RecordState {
    /// The state's name, as tools print it.
    pub const fn name(self) -> &'static str {
        match self {
            RecordState::Held => "held",
            RecordState::Expired => "expired",
            RecordState::Free => "free",
            RecordState::Void => "void",
        }
    }
}

impl Record {
    /// What this record says when the marker in force is `marker_unix_millis`
    /// and the server's clock reads `server_unix_millis`.
    pub fn state(&self, marker_unix_millis: Option<u64>, server_unix_millis: u64) -> RecordState {
        if Some(self.marker_unix_millis) != marker_unix_millis {
            RecordState::Void
        } else if self.holder.is_empty() {
            RecordState::Free
        } else if self.expires_unix_millis <= server_unix_millis {
            RecordState::Expired
        } else {
            RecordState::Held
        }
    }
}

/// What a [`swap`](Registry::swap) expects to find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    /// The marker in force.
    pub marker_unix_millis: u64,
    /// The record's version; `None` when there must be no record.
    pub version: Option<u64>,
}

/// The record a [`swap`](Registry::swap) writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewRecord<'a> {
    /// The holder's token; empty to free the id.
    pub holder: &'a str,
    /// The new version.
    pub version: u64,
    /// How long the lease lasts from the server's now, in ms; 0 for a free record.
    pub ttl_millis: u64,
    /// The fence, in ms since 1970.
    pub fence_unix_millis: u64,
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
    fn namespaces_that_cannot_be_keys_are_refused() {
        assert!(check_namespace("orders").is_ok());
        for bad in ["", "a{b}", "tab\there", " a", "a ", &"x".repeat(201)] {
            assert!(check_namespace(bad).is_err(), "{bad:?}");
        }
    }
}

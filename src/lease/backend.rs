//! For those who write a registry: the storage steps it must offer, and the
//! records and marker it stores, nothing more.
//!
//! A service that only leases worker ids needs none of this: it names a
//! registry by URL ([`connect`](super::connect)) or builds one of flakegen's
//! ([`MemoryRegistry`](super::MemoryRegistry), `MysqlRegistry`,
//! `PostgresRegistry`, `RedisRegistry`) and hands it to a
//! [`Lease`](super::Lease).

use std::sync::Arc;

use super::error::LeaseError;

/// Where worker-id leases are stored: [`MemoryRegistry`](super::MemoryRegistry),
/// and `MysqlRegistry`, `PostgresRegistry` and `RedisRegistry` behind the
/// `mysql`, `postgres` and `redis` features.
///
/// A registry only stores. Which id is free, where fences go, the marker
/// rule and the release rule are decided once, by flakegen, over these three
/// steps (see [the contract](super#the-contract)). A registry must promise:
///
/// - **Atomic steps, judged by the server's clock.** [`swap`](Self::swap)
///   checks and writes in one step, and computes an expiry from its own clock.
/// - **A marker no earlier than any loss.** If the store can lose records (a
///   restart without persistence, a truncated table, a failover), the marker
///   in force after the loss is no earlier, by the server's clock in
///   milliseconds, than the loss: it is written anew, and every record written
///   before it is either gone or still carries the old marker.
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

    /// Every record of `namespace`, whatever marker it was written under,
    /// ordered by worker id, with the server's clock and the marker in
    /// force: what a tool shows an operator (`flakegen leases`). Leasing
    /// never calls it, so it may cost what the namespace's records cost,
    /// but it writes nothing.
    ///
    /// # Errors
    ///
    /// The connection's errors, and [`LeaseError::Corrupt`] for a record the
    /// registry cannot read.
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError>;

    /// The server's settings under which a crash could forget writes it had
    /// confirmed, with nothing in the store to show it: a renewal a holder
    /// already used, forgotten, lets a second holder take the id below the
    /// first one's fence. What a tool warns an operator of (`flakegen
    /// leases check`); leasing never calls it. A registry that cannot lose
    /// a confirmed write unseen (a Redis restart is always a loss) keeps
    /// the default, none.
    ///
    /// # Errors
    ///
    /// The connection's errors.
    fn caveats(&self) -> Result<Vec<Caveat>, LeaseError> {
        Ok(Vec::new())
    }
}

macro_rules! forward_registry {
    ($($ptr:ty),*) => {$(
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
            fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
                (**self).list(namespace)
            }
            fn caveats(&self) -> Result<Vec<Caveat>, LeaseError> {
                (**self).caveats()
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
    /// `fresh` may not be the lowest such id yet: the registry is still
    /// indexing records an older flakegen wrote without its index, a
    /// bounded slice per read. Read again.
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

/// What [`Registry::list`] found: every record of a namespace.
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

/// A server setting under which a crash could forget confirmed writes
/// unseen: see [`Registry::caveats`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caveat {
    /// The setting and its value, as the server names them
    /// (`innodb_flush_log_at_trx_commit = 0`).
    pub setting: String,
    /// Which crash would forget.
    pub crash: Crash,
    /// What would be forgotten, and what to set instead.
    pub advice: String,
}

/// Which crash a [`Caveat`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crash {
    /// A crash of the server itself (killed, out of memory), and so also
    /// of its machine: a holder could share its id after any restart the
    /// server did not plan.
    Server,
    /// Only a crash of the server's machine (power, kernel), not of the
    /// server alone.
    Machine,
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

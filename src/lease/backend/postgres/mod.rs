//! Leases in a PostgreSQL table (feature `postgres`): the storage steps.

mod errors;
#[cfg(feature = "inspect")]
mod inspect;
mod session;
mod statements;
mod url;

use tokio_postgres::Config;
use tokio_postgres::Row;
use tokio_postgres_rustls::MakeRustlsConnect;

use self::session::Session;
use self::statements::{MARK, MARK_IN_FORCE, SENTINEL};
use super::client::remote::{Failure, Remote};
use super::inspect::Verified;
use super::{Expect, LeaseError, NewRecord, ReadRequest, Record, Registry, Snapshot, signed};

/// Worker-id leases kept in a PostgreSQL table, `flakegen_leases`, with
/// each namespace's marker in a table beside it, `flakegen_namespaces`;
/// both are created on first use.
///
/// Each step is a statement or two, and expiry is judged by the server's
/// clock (`clock_timestamp()`). A [`swap`](Registry::swap) is an `UPDATE`
/// (or an `INSERT … ON CONFLICT DO NOTHING`) that matches the record's
/// version and holds the namespace's marker row, with `FOR SHARE` for a
/// renewal and by raising its high-water mark for a new record: a
/// compare-and-set that a loss cannot slip into. Every call, connecting
/// included, finishes or fails within its timeout on the client. A broken
/// connection is opened again on the next call. Leases need the primary:
/// a connection that finds a standby is refused ([`LeaseError::ReadOnly`]).
///
/// # What counts as a loss
///
/// A namespace's marker is its row of `flakegen_namespaces`: the moment
/// from which the registry vouches for its records, and a stamp of the
/// history it vouches for, as the server names it: the cluster's system
/// identifier, its timeline, the lease table's oid, and the token of the
/// table's sentinel row (`worker` -1, written with the table). Every
/// statement compares the stamp with the server's own, so a marker whose
/// history changed is void at once, and the next acquisition writes a new
/// one (the server's clock, rounded up, and later than the old one). Each
/// of these is a detected loss that costs the first TTL and skew after it
/// a wait:
///
/// - a **failover**: a promoted standby starts a new timeline, whether it
///   missed the last renewals or not (a synchronous standby too: flakegen
///   cannot prove from the server that every renewal reached it, so it
///   pays the pause rather than trust it);
/// - a **restore** to a point in time (a new timeline), into another
///   cluster (another system identifier), or of the lease table from a dump
///   (a new oid, though the sentinel row came back with it);
/// - `TRUNCATE`, or a `DELETE` of every row (the sentinel goes), and a
///   dropped and re-created lease table (a new oid);
/// - **rows deleted**: both tables dropped, a namespace's marker row
///   deleted, its records deleted. A namespace with no marker row gets the
///   server's clock now: it is new, or was emptied, and nothing in an
///   empty table tells which (see [`Registry::mark`]); a record deleted
///   under a marker that stays is found below the high-water mark, and its
///   id waits from the moment it was seen gone.
///
/// Not detected: a physical backup restored as a cluster that keeps its
/// timeline (start it with `recovery.signal`, which opens a new one). Turn
/// on [`Lease::wait_out_rollbacks`](crate::lease::Lease::wait_out_rollbacks)
/// where that can happen.
///
/// A restart or a crash of the server is no loss when its commits are
/// durable. A server whose `synchronous_commit` is `off` would forget its
/// last commits in a crash (up to three times `wal_writer_delay`), renewals
/// their holders already used among them, and nothing in the table would
/// show it; so the registry's sessions set it to `local` (a session setting,
/// which a pooler in transaction mode does not keep). With `fsync = off` a
/// crash of the machine forgets them too: keep it on where generators
/// lease. `Inspect::survey` (`flakegen leases check`) reports both, and the
/// replication around the server.
///
/// A read finds what an acquisition chooses from through two partial
/// indexes (the free records by fence, the held ones by expiry), and the
/// ids flakegen probes by the primary key: its cost does not grow with the
/// id space or with the records kept.
///
/// For teams that run migrations themselves, the tables and indexes are
/// [`Self::DDL`]:
///
/// ```sql
#[doc = include_str!("leases.sql")]
#[doc = include_str!("namespaces.sql")]
/// ```
///
/// # Examples
///
/// ```no_run
/// use flakegen::{Builder, IdGenerator, lease::{Lease, PostgresRegistry}};
///
/// let registry = PostgresRegistry::new("postgres://app:secret@127.0.0.1:5432/app")?;
/// let generator = Builder::new().lease(Lease::new(registry, "orders")).build_atomic()?;
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct PostgresRegistry {
    config: Config,
    /// `None` for `sslmode=disable`.
    tls: Option<MakeRustlsConnect>,
    /// How much of the server's certificate the TLS configuration checks.
    #[cfg_attr(not(feature = "inspect"), allow(dead_code))]
    verified: Verified,
    remote: Remote<Session>,
}

impl PostgresRegistry {
    /// The tables the registry keeps leases and their markers in, created
    /// on first use.
    pub const DDL: &'static str =
        concat!(include_str!("leases.sql"), include_str!("namespaces.sql"));

    fn corrupt(&self, detail: String) -> Failure<tokio_postgres::Error> {
        Failure::Lease(LeaseError::Corrupt {
            address: self.remote.address.clone(),
            detail,
        })
    }

    /// A column that must hold a count of ms (or a version): never negative.
    fn unsigned(&self, row: &Row, column: &str) -> Result<u64, Failure<tokio_postgres::Error>> {
        let value: i64 = row.try_get(column)?;
        u64::try_from(value).map_err(|_| {
            let worker: i64 = row.try_get("worker").unwrap_or(-1);
            self.corrupt(format!("worker {worker}'s {column} is {value}"))
        })
    }

    /// A record, from a row of the columns `read` and `list` select.
    fn record(&self, row: &Row) -> Result<Record, Failure<tokio_postgres::Error>> {
        Ok(Record {
            worker: self.unsigned(row, "worker")?,
            holder: row.try_get("holder")?,
            version: self.unsigned(row, "version")?,
            marker_unix_millis: self.unsigned(row, "marker_ms")?,
            expires_unix_millis: self.unsigned(row, "expires_ms")?,
            fence_unix_millis: self.unsigned(row, "fence_ms")?,
        })
    }
}

impl Registry for PostgresRegistry {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        super::check_namespace(namespace)?;
        let workers = signed(request.workers);
        let prefer = request.prefer.map_or(-1, signed);
        let probed = request.probed();
        let (from, to) = (signed(probed.start), signed(probed.end));
        self.run_swap(|client, prepared| async move {
            let rows = client
                .query(&prepared.read, &[&namespace, &workers, &prefer, &from, &to])
                .await?;
            // One row at least: the head's, with no record where none was chosen.
            let head = rows
                .first()
                .ok_or_else(|| self.corrupt("a read returned no row".into()))?;
            let marker: Option<i64> = head.try_get("in_force")?;
            let marker_unix_millis = match marker {
                Some(m) => {
                    Some(u64::try_from(m).map_err(|_| self.corrupt(format!("the marker is {m}")))?)
                }
                None => None,
            };
            let now: i64 = head.try_get("now_ms")?;
            let high_water = self.unsigned(head, "high_water")?;
            let mut records = Vec::with_capacity(rows.len());
            for row in &rows {
                if row.try_get::<_, Option<i64>>("worker")?.is_some() {
                    records.push(self.record(row)?);
                }
            }
            Ok(Snapshot {
                server_unix_millis: u64::try_from(now).unwrap_or(0),
                marker_unix_millis,
                records,
                high_water,
            })
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        super::check_namespace(namespace)?;
        self.run(|client| async move {
            // A table whose rows went (TRUNCATE) begins again with a sentinel.
            client.execute(SENTINEL, &[]).await?;
            let mut row = client.query_opt(&*MARK, &[&namespace]).await?;
            if row.is_none() {
                // In force already, or written by another client since
                // this statement's snapshot.
                row = client.query_opt(&*MARK_IN_FORCE, &[&namespace]).await?;
            }
            let row = row.ok_or_else(|| self.corrupt("no marker after writing one".into()))?;
            self.unsigned(&row, "marker_ms")
        })
    }

    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        let params = (
            namespace.to_owned(),
            signed(worker),
            signed(expect.marker_unix_millis),
            expect.version.map(signed),
            record.holder.to_owned(),
            signed(record.version),
            signed(record.ttl_millis),
            signed(record.fence_unix_millis),
        );
        self.run_swap(|client, swaps| async move {
            let (ns, w, m, v, h, nv, ttl, f) = &params;
            let values: [&(dyn tokio_postgres::types::ToSql + Sync); 8] =
                [ns, w, m, v, h, nv, ttl, f];
            let mut row = match expect.version {
                Some(_) => client.query_opt(&swaps.update, &values).await?,
                None => client.query_opt(&swaps.insert, &values).await?,
            };
            if row.is_none() && expect.version.is_some() {
                // Not at that version under the marker: at it under another?
                row = client.query_opt(&swaps.adopt, &values).await?;
            }
            match row {
                Some(row) => {
                    let now: i64 = row.try_get(0)?;
                    Ok(Some(u64::try_from(now).unwrap_or(0)))
                }
                None => Ok(None),
            }
        })
    }

    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn super::Inspect> {
        Some(self)
    }
}

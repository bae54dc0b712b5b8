//! Leases in a PostgreSQL table (feature `postgres`): the storage steps.

mod errors;
mod inspect;
mod session;
mod url;

use std::fmt;
use std::sync::LazyLock;

use tokio_postgres::Config;
use tokio_postgres::Row;
use tokio_postgres_rustls::MakeRustlsConnect;

use self::session::Session;
use super::inspect::Verified;
use super::remote::{Failure, Remote};
use super::{Expect, LeaseError, NewRecord, Record, Registry, Snapshot, signed};

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
/// indexes (the free records by fence, the held ones by expiry), and looks
/// for records gone below the high-water mark 256 ids at a time from a
/// cursor: its cost does not grow with the id space or with the records
/// kept.
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
    verified: Verified,
    remote: Remote<Session>,
}

/// The server's clock in ms, rounded down: expiry is judged no later than it is.
const NOW_MS: &str = "floor(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The server's clock in ms, rounded up: a marker is never earlier than the loss.
const CEIL_NOW_MS: &str = "ceil(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// What a marker vouches for, as the server names its history now: the
/// cluster's system identifier, its timeline (from the name of the WAL file
/// it writes to; `standby` while in recovery), the lease table (its oid,
/// which a new table changes) and the token of the table's sentinel row
/// (`worker` -1), which `TRUNCATE` or a `DELETE` of every row takes away.
/// Refers to the lease table: only in statements that know it exists.
macro_rules! stamp {
    () => {
        "((SELECT system_identifier FROM pg_control_system())::text || '/' || \
          CASE WHEN pg_is_in_recovery() THEN 'standby' \
               ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END || '/' || \
          coalesce(to_regclass('flakegen_leases')::oid::text, 'none') || '/' || \
          coalesce((SELECT holder FROM flakegen_leases WHERE namespace = '' AND worker = -1), 'none'))"
    };
}
const STAMP: &str = stamp!();

/// Writes the table's sentinel row where it is missing, with a token no
/// other table had: a table's data begins with it.
const SENTINEL: &str = "INSERT INTO flakegen_leases (namespace, worker, holder, fence_ms) \
     VALUES ('', -1, md5(random()::text || clock_timestamp()::text), 0) ON CONFLICT DO NOTHING";

/// How many ids below the high-water mark a read looks at for records gone.
const SLICE: i64 = 256;

/// The namespace `$1`'s marker in force and its high-water mark, if any.
static MARK_IN_FORCE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT marker_ms, high_water, cursor_at FROM flakegen_namespaces \
         WHERE namespace = $1 AND stamp = {STAMP}"
    )
});

/// The server's clock, the marker in force and the high-water mark, and
/// the lowest id below the mark (and `$2` workers) in a slice from the
/// cursor with no record under the marker; the cursor moves there, or
/// past the slice (back to 0 past the mark). `$1` namespace, `$2` workers.
static HEAD: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH m AS ({mark}), \
           slice AS (SELECT CASE WHEN m.cursor_at < least(m.high_water, $2::bigint) \
                            THEN m.cursor_at ELSE 0 END AS start, \
                            least(m.high_water, $2::bigint) AS top FROM m), \
           bounds AS (SELECT start, least(start + {SLICE}, top) AS stop, top FROM slice), \
           gap AS (SELECT min(w) AS w FROM ( \
               SELECT g AS w FROM bounds, generate_series(bounds.start, bounds.stop - 1) g \
               EXCEPT \
               SELECT l.worker FROM flakegen_leases l, bounds, m \
               WHERE l.namespace = $1 AND l.worker >= bounds.start AND l.worker < bounds.stop \
                 AND l.marker_ms = m.marker_ms) unrecorded), \
           next AS (SELECT CASE WHEN coalesce(gap.w, b.stop) >= b.top THEN 0 \
                                ELSE coalesce(gap.w, b.stop) END AS at FROM gap, bounds b), \
           moved AS (UPDATE flakegen_namespaces SET cursor_at = next.at FROM next \
             WHERE namespace = $1 AND cursor_at <> next.at) \
         SELECT {NOW_MS} AS now_ms, m.marker_ms, coalesce(m.high_water, 0) AS high_water, \
                gap.w AS gap, coalesce(b.start > 0 OR b.stop < b.top, false) AS more \
         FROM (SELECT 1) one LEFT JOIN m ON true LEFT JOIN bounds b ON true \
           LEFT JOIN gap ON true",
        mark = &*MARK_IN_FORCE,
    )
});

/// The records an acquisition chooses from: the free one with the earliest
/// fence and a few expired ones under the marker (through the partial
/// indexes), and those of the preferred id, the id at the high-water mark
/// and the gap found. `$1` namespace, `$2` workers, `$3` marker (-1: none),
/// `$4` the server's now, `$5` the preferred id, `$6` the mark, `$7` the gap.
const CANDIDATES: &str = "\
    (SELECT worker, coalesce(holder, '') AS holder, version, marker_ms, expires_ms, fence_ms \
     FROM flakegen_leases WHERE namespace = $1 AND worker >= 0 AND worker < $2 \
       AND holder IS NULL AND marker_ms = $3 ORDER BY fence_ms, worker LIMIT 1) \
    UNION ALL \
    (SELECT worker, coalesce(holder, '') AS holder, version, marker_ms, expires_ms, fence_ms \
     FROM flakegen_leases WHERE namespace = $1 AND worker >= 0 AND worker < $2 \
       AND holder IS NOT NULL AND marker_ms = $3 AND expires_ms <= $4 \
     ORDER BY expires_ms LIMIT 4) \
    UNION ALL \
    (SELECT worker, coalesce(holder, '') AS holder, version, marker_ms, expires_ms, fence_ms \
     FROM flakegen_leases WHERE namespace = $1 AND worker >= 0 AND worker < $2 \
       AND worker IN ($5, $6, $7))";

/// A swap's new expiry: none for a free record (`$7` 0), else the server's
/// clock plus the TTL.
static EXPIRY: LazyLock<String> =
    LazyLock::new(|| format!("CASE WHEN $7::bigint = 0 THEN 0 ELSE {NOW_MS} + $7::bigint END"));

/// The namespace's marker row at `$3` and in force, its high-water mark
/// raised past `$2`: held against a new marker until the statement ends.
static RAISED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE flakegen_namespaces SET high_water = greatest(high_water, $2::bigint + 1) \
         WHERE namespace = $1 AND marker_ms = $3 AND stamp = {STAMP} RETURNING 1"
    )
});

/// A renewal: the record at version `$4`, under the marker `$3`, which is
/// held with `FOR SHARE` (a `TRUNCATE` waits for the swap's lock on the
/// table).
static SWAP_UPDATE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH marker AS (SELECT 1 FROM flakegen_namespaces WHERE namespace = $1 \
           AND marker_ms = $3 AND stamp = {STAMP} FOR SHARE) \
         UPDATE flakegen_leases SET holder = NULLIF($5::text, ''), version = $6, \
         marker_ms = $3, expires_ms = {expiry}, fence_ms = $8 \
         WHERE namespace = $1 AND worker = $2 AND version = $4 AND marker_ms = $3 \
         AND EXISTS (SELECT 1 FROM marker) RETURNING {NOW_MS}",
        expiry = &*EXPIRY,
    )
});

/// A record at version `$4` written under another marker, taken under `$3`.
static SWAP_ADOPT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH marker AS ({raised}) \
         UPDATE flakegen_leases SET holder = NULLIF($5::text, ''), version = $6, \
         marker_ms = $3, expires_ms = {expiry}, fence_ms = $8 \
         WHERE namespace = $1 AND worker = $2 AND version = $4 AND marker_ms <> $3 \
         AND EXISTS (SELECT 1 FROM marker) RETURNING {NOW_MS}",
        raised = &*RAISED,
        expiry = &*EXPIRY,
    )
});

/// A record where none is (`$4` NULL), under the marker `$3`.
static SWAP_INSERT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH marker AS ({raised}) INSERT INTO flakegen_leases \
         (namespace, worker, holder, version, marker_ms, expires_ms, fence_ms) \
         SELECT $1, $2, NULLIF($5::text, ''), $6, $3, {expiry}, $8 \
         WHERE EXISTS (SELECT 1 FROM marker) AND $4::bigint IS NULL \
         ON CONFLICT DO NOTHING RETURNING {NOW_MS}",
        raised = &*RAISED,
        expiry = &*EXPIRY,
    )
});

/// Writes the namespace `$1`'s marker where none is in force: the server's
/// clock, rounded up, and later than one of another history it replaces,
/// with a high-water mark of 0. Returns nothing where one is in force.
static MARK: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO flakegen_namespaces AS m (namespace, marker_ms, stamp) \
         VALUES ($1, {CEIL_NOW_MS}, {STAMP}) ON CONFLICT (namespace) DO UPDATE \
         SET marker_ms = greatest(excluded.marker_ms, m.marker_ms + 1), \
             stamp = excluded.stamp, high_water = 0, cursor_at = 0 \
         WHERE m.stamp <> excluded.stamp RETURNING marker_ms"
    )
});

/// Writes the namespace `$1`'s marker as 0, where it has no marker row and
/// no record.
static DECLARE_NEW: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO flakegen_namespaces (namespace, marker_ms, stamp) \
         SELECT $1, 0, {STAMP} \
         WHERE NOT EXISTS (SELECT 1 FROM flakegen_leases WHERE namespace = $1) \
         ON CONFLICT (namespace) DO NOTHING RETURNING 1"
    )
});

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

impl fmt::Debug for PostgresRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresRegistry")
            .field("address", &self.remote.address)
            .finish_non_exhaustive()
    }
}

impl Registry for PostgresRegistry {
    fn read(
        &self,
        namespace: &str,
        workers: u64,
        prefer: Option<u64>,
    ) -> Result<Snapshot, LeaseError> {
        super::check_namespace(namespace)?;
        let workers = signed(workers);
        let prefer = prefer.map_or(-1, signed);
        self.run(|client| async move {
            let head = client.query_one(&*HEAD, &[&namespace, &workers]).await?;
            let marker: Option<i64> = head.try_get("marker_ms")?;
            let marker_unix_millis = match marker {
                Some(m) => {
                    Some(u64::try_from(m).map_err(|_| self.corrupt(format!("the marker is {m}")))?)
                }
                None => None,
            };
            let now: i64 = head.try_get("now_ms")?;
            let high_water = self.unsigned(&head, "high_water")?;
            let gap: Option<i64> = head.try_get("gap")?;
            let fresh = signed(high_water);
            let rows = client
                .query(
                    CANDIDATES,
                    &[
                        &namespace,
                        &workers,
                        &marker.unwrap_or(-1),
                        &now,
                        &prefer,
                        &fresh,
                        &gap.unwrap_or(-1),
                    ],
                )
                .await?;
            let mut records = Vec::with_capacity(rows.len());
            for row in &rows {
                records.push(self.record(row)?);
            }
            Ok(Snapshot {
                server_unix_millis: u64::try_from(now).unwrap_or(0),
                marker_unix_millis,
                records,
                high_water,
                unrecorded: gap.map(i64::unsigned_abs).into_iter().collect(),
                more: head.try_get("more")?,
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

    fn declare_new(&self, namespace: &str) -> Result<(), LeaseError> {
        super::check_namespace(namespace)?;
        self.run(|client| async move {
            if client
                .query_opt(&*DECLARE_NEW, &[&namespace])
                .await?
                .is_some()
            {
                return Ok(());
            }
            let marked = client
                .query_opt(
                    "SELECT 1 FROM flakegen_namespaces WHERE namespace = $1",
                    &[&namespace],
                )
                .await?
                .is_some();
            let trace = if marked {
                "it has a marker row in flakegen_namespaces"
            } else {
                "it has rows in flakegen_leases"
            };
            Err(Failure::Lease(LeaseError::NotNew {
                namespace: namespace.to_owned(),
                trace: trace.to_owned(),
            }))
        })
    }

    fn inspect(&self) -> Option<&dyn super::Inspect> {
        Some(self)
    }
}

//! Leases in a MySQL or MariaDB table (feature `mysql`): the storage steps.

mod errors;
#[cfg(feature = "inspect")]
mod inspect;
mod session;
mod statements;
mod url;

use mysql_async::prelude::Queryable;
use mysql_async::{Opts, Row};

use self::errors::{DEADLOCK_RETRIES, deadlocked};
use self::session::{Session, results};
use self::statements::{
    Candidates, MARK, MARK_IN_FORCE, NOW, SENTINEL, Write, candidates, head, landed, raise,
    swap_adopt, swap_insert, swap_update,
};
use super::client::remote::{Failure, Remote};
use super::inspect::Verified;
use super::{Expect, LeaseError, NewRecord, ReadRequest, Record, Registry, Snapshot, signed};

/// Worker-id leases kept in a MySQL or MariaDB table, `flakegen_leases`
/// (InnoDB), with each namespace's marker in a table beside it,
/// `flakegen_namespaces`; both are created on first use.
///
/// Each step is a few statements, none in a transaction that spans two
/// (a client paused between them holds no lock), and expiry is judged by
/// the server's clock (`NOW(6)`, in ms, rounded down; a new marker rounded
/// up). A [`swap`](Registry::swap) is one statement: an `UPDATE` of the
/// record at its expected version joined to the namespace's marker row
/// (whose high-water mark it raises when the record was written under
/// another marker), or, when no record is expected, the mark raised and
/// then an `INSERT … SELECT` from the marker row. A statement's reads of
/// the rows it writes or joins are current reads: InnoDB's REPEATABLE READ
/// snapshot never decides a swap, a swap cannot pass on a record or marker
/// another client has changed since, and a `TRUNCATE` waits for the
/// statement. The connection asks for `CLIENT_FOUND_ROWS`, so a matched
/// row counts though its values might not change. Every call, connecting
/// included, finishes or fails within its timeout on the client, and the
/// server gives up a lock wait after as long. A statement InnoDB rolls
/// back as a deadlock's victim (builds marking or taking ids at once) is
/// made again within that time, unless a write before it landed. A broken
/// connection is opened again on the next call.
///
/// A read finds what an acquisition chooses from through two indexes (the
/// free records by fence, the held ones by expiry, over a stored column
/// `is_free`), and the ids flakegen probes by the primary key: its cost does not grow with the id space or
/// with the records kept.
///
/// # What counts as a loss
///
/// A namespace's marker is its row of `flakegen_namespaces`: the moment
/// from which the registry vouches for its records, and a stamp of the
/// history it vouches for: the server that confirms writes (`@@server_id`,
/// `@@hostname`, `@@port`), the lease table's creation time, and the token
/// of the table's sentinel row (`worker` -1, written with the table). Every
/// statement compares the stamp with the server's own, so a marker whose
/// history changed is void at once, and the next acquisition writes a new
/// one (the server's clock, rounded up, and later than the old one). Each
/// of these is a detected loss that costs the first TTL and skew after it
/// a wait:
///
/// - a **failover** to a replica, or a switch to the other server of a
///   master-master pair, whether it missed the last renewals or not, and a
///   replica cloned from a copy of the data directory (another server);
/// - `TRUNCATE`, or a `DELETE` of every row (the sentinel goes);
/// - a **dropped** and re-created lease table, and a logical restore on the
///   same server (a dump's table is created anew, in another second,
///   though the sentinel row came back with it), or a physical one (below);
/// - **rows deleted**: both tables dropped, a namespace's marker row
///   deleted, its records deleted. A namespace with no marker row gets the
///   server's clock now: it is new, or was emptied, and nothing in an
///   empty table tells which (see [`Registry::mark`]); a record deleted
///   under a marker that stays is found below the high-water mark, and its
///   id waits from the moment it was seen gone.
///
/// On MariaDB, a physical backup restored in place (`mariabackup
/// --copy-back`, a copy of the data directory) is detected too: MariaDB
/// takes a table's creation time from its `.frm` file's change time, and a
/// restore writes the file anew. Not detected: on MariaDB, a disk or volume
/// snapshot rolled back (LVM, ZFS, a cloud volume, a VM), which keeps the
/// files' times; on MySQL 8, which keeps creation times in its data
/// dictionary, any physical restore onto the same host and port. Either is
/// the same server, table and rows, only older. Turn on
/// [`Lease::wait_out_rollbacks`](crate::lease::Lease::wait_out_rollbacks)
/// where that can happen.
///
/// Leases need one server that takes writes. A connection that finds the
/// server read-only (a replica) is refused ([`LeaseError::ReadOnly`]), and
/// so is one that finds it writable while it replicates, on any channel,
/// from another server that takes writes too (two masters at once, as in a
/// master-master pair that takes writes on both sides: each would grant
/// leases alone), or that cannot be asked ([`LeaseError::MultiWriter`]).
/// Every acquisition asks, and a connection that renews asks again every
/// 10 s, so a peer made writable later is seen. Seeing the replication
/// needs the `REPLICA MONITOR` (MariaDB) or `REPLICATION CLIENT` (MySQL)
/// privilege; without it the check is skipped, and `Inspect::survey`
/// (`flakegen leases check`) says so. A Galera or Group Replication cluster
/// never loses a write it confirmed, but moving between its members still
/// counts as a loss here (another server), and costs the same wait.
///
/// A restart or a crash of the server is no loss when its commits are
/// durable: `innodb_flush_log_at_trx_commit = 1`, the default, keeps every
/// renewal across crashes of the server and of its machine; `2` across the
/// server's own crashes only. With `0`, a crash forgets up to a second of
/// renewals that their holders already used, and nothing in the table
/// shows it: two holders could then share an id. Keep `1` (or `2` with a
/// machine that does not crash under it). It is a global setting, which a
/// session cannot raise for itself; `Inspect::survey` reports it.
///
/// # MySQL 8 and MariaDB
///
/// The SQL keeps to what both accept (tested against MariaDB 10.11):
/// `NOW(6)`, a stored generated column, `WITH RECURSIVE`, `INSERT … ON
/// DUPLICATE KEY UPDATE … VALUES()` (deprecated in MySQL 8.0.20, still
/// accepted), multi-table `UPDATE` and `INSERT … SELECT`. On MySQL 8 the
/// default authentication (`caching_sha2_password`) over a plain
/// connection needs the server's RSA key, which the client fetches; over
/// TLS it needs nothing. MySQL 8's `utf8mb4_bin` compares namespaces
/// without trailing-space padding, MariaDB's with it: flakegen refuses
/// namespaces that end in white space.
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
/// use flakegen::{Builder, IdGenerator, lease::{Lease, MysqlRegistry}};
///
/// let url = "mysql://app:secret@10.0.0.7:3306/app?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ssl/db-ca.pem";
/// let generator = Builder::new().lease(Lease::new(MysqlRegistry::new(url)?, "orders")).build_atomic()?;
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct MysqlRegistry {
    opts: Opts,
    /// How much of the server's certificate the TLS options check.
    #[cfg_attr(not(feature = "inspect"), allow(dead_code))]
    verified: Verified,
    remote: Remote<Session>,
}

type Sql<T> = Result<T, Failure<mysql_async::Error>>;

impl MysqlRegistry {
    /// The tables the registry keeps leases and their markers in, created
    /// on first use.
    pub const DDL: &'static str =
        concat!(include_str!("leases.sql"), include_str!("namespaces.sql"));

    fn corrupt(&self, detail: String) -> Failure<mysql_async::Error> {
        Failure::Lease(LeaseError::Corrupt {
            address: self.remote.address.clone(),
            detail,
        })
    }

    /// Records from rows of [`COLUMNS`].
    fn records(&self, rows: Vec<Row>) -> Sql<Vec<Record>> {
        rows.into_iter().map(|row| self.record(row)).collect()
    }

    /// A record from a row of [`COLUMNS`](statements::COLUMNS).
    fn record(&self, row: Row) -> Sql<Record> {
        let corrupt =
            |what: &str| self.corrupt(format!("a record's {what} is missing or negative"));
        let (worker, holder, version, marker, expires, fence): (i64, String, i64, i64, i64, i64) =
            mysql_async::from_row_opt(row).map_err(|_| corrupt("columns"))?;
        let unsigned = |v: i64, what| u64::try_from(v).map_err(|_| corrupt(what));
        Ok(Record {
            worker: unsigned(worker, "worker id")?,
            holder,
            version: unsigned(version, "version")?,
            marker_unix_millis: unsigned(marker, "marker")?,
            expires_unix_millis: unsigned(expires, "expiry")?,
            fence_unix_millis: unsigned(fence, "fence")?,
        })
    }
}

impl Registry for MysqlRegistry {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        super::check_namespace(namespace)?;
        let (ns, workers) = (namespace.to_owned(), signed(request.workers));
        let prefer = request.prefer.map_or(-1, signed);
        let probed = request.probed();
        let (from, to) = (signed(probed.start), signed(probed.end));
        self.run_acquiring(|mut conn| async move {
            let result = async {
                // Ids past the ones in play name no record.
                let in_play = |id: i64| if id < workers { id } else { -1 };
                // The server's clock, and the marker unless a restore voided
                // it, then the candidates under it: one round trip.
                let asked = Candidates {
                    workers,
                    prefer: in_play(prefer),
                    probe: (from, to),
                };
                let sql = format!("{}; {}", head(&ns), candidates(&ns, &asked));
                let mut sets = results(&mut conn, &sql).await?.into_iter();
                // SET, SELECT INTO, the head, SET, the candidates.
                let (head, rows) = (sets.nth(2), sets.nth(1));
                let (Some(head), Some(rows)) = (head, rows) else {
                    return Err(self.corrupt("a read's answer lacks its results".into()));
                };
                let (now, marker, high): (i64, Option<i64>, i64) = head
                    .into_iter()
                    .next()
                    .and_then(|row| mysql_async::from_row_opt(row).ok())
                    .ok_or_else(|| self.corrupt("no clock reading".into()))?;
                let records = self.records(rows)?;
                Ok(Snapshot {
                    server_unix_millis: u64::try_from(now).unwrap_or(0),
                    marker_unix_millis: marker.and_then(|m| u64::try_from(m).ok()),
                    records,
                    high_water: high.unsigned_abs(),
                })
            }
            .await;
            (conn, result)
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        super::check_namespace(namespace)?;
        let ns = namespace.to_owned();
        self.run(|mut conn| async move {
            let result = async {
                // A table whose rows went (TRUNCATE) begins again with a
                // sentinel. A marker of another history is replaced; one in
                // force stays: writing it again changes nothing, so a
                // statement InnoDB rolled back as a deadlock's victim (two
                // builds marking at once) is made again.
                let mut deadlocks = 0;
                let mark: Option<(i64, i64)> = loop {
                    let marked = async {
                        conn.query_drop(SENTINEL).await?;
                        conn.exec_drop(MARK, (&ns,)).await?;
                        conn.exec_first(MARK_IN_FORCE, (&ns,)).await
                    };
                    match marked.await {
                        Err(e) if deadlocked(&e) && deadlocks < DEADLOCK_RETRIES => deadlocks += 1,
                        marked => break marked?,
                    }
                };
                let (marker, _) =
                    mark.ok_or_else(|| self.corrupt("no marker after writing one".into()))?;
                u64::try_from(marker).map_err(|_| self.corrupt(format!("the marker is {marker}")))
            }
            .await;
            (conn, result)
        })
    }

    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        let ns = namespace.to_owned();
        let (worker, marker) = (signed(worker), signed(expect.marker_unix_millis));
        let (holder, version) = (record.holder.to_owned(), signed(record.version));
        let (ttl, fence) = (signed(record.ttl_millis), signed(record.fence_unix_millis));
        let expected = expect.version.map(signed);
        self.run(|mut conn| async move {
            let result = async {
                // The server's clock before the write, as the others read it;
                // the statements; what they wrote: one round trip. Each
                // statement commits alone, so no lock outlives it: a client
                // paused between round trips holds nothing.
                let write = Write {
                    ns: &ns,
                    worker,
                    marker,
                    holder: &holder,
                    version,
                    ttl,
                    fence,
                };
                let sql = match expected {
                    // Not at that version under the marker: under another?
                    // (swap_adopt runs only where swap_update wrote nothing.)
                    Some(expected) => format!(
                        "{NOW}, @flakegen_ttl := {ttl}; {}; \
                         SET @flakegen_written := ROW_COUNT(); {}; \
                         SELECT @flakegen_now, @flakegen_written + ROW_COUNT()",
                        swap_update(&write, expected),
                        swap_adopt(&write, expected),
                        NOW = &*NOW,
                    ),
                    None => format!(
                        "{NOW}, @flakegen_ttl := {ttl}; {}; {}; \
                         SELECT @flakegen_now, ROW_COUNT()",
                        raise(&write),
                        swap_insert(&write),
                        NOW = &*NOW,
                    ),
                };
                let mut deadlocks = 0;
                let (now, rows): (i64, i64) = loop {
                    match results(&mut conn, &sql).await {
                        Ok(sets) => {
                            break sets
                                .into_iter()
                                .last()
                                .and_then(|rows| rows.into_iter().next())
                                .and_then(|row| mysql_async::from_row_opt(row).ok())
                                .ok_or_else(|| self.corrupt("no outcome of a swap".into()))?;
                        }
                        // A record exists: not the one expected.
                        Err(mysql_async::Error::Server(e)) if e.code == 1062 => return Ok(None),
                        // InnoDB rolled back one statement, which wrote
                        // nothing; one before it may have written the
                        // record, as its version, no other write's, tells.
                        // If none did, the swap is made again.
                        Err(e) if deadlocked(&e) && deadlocks < DEADLOCK_RETRIES => {
                            deadlocks += 1;
                            let landed: Option<i64> = conn.query_first(landed(&write)).await?;
                            if let Some(now) = landed {
                                break (now, 1);
                            }
                        }
                        Err(e) => return Err(e.into()),
                    }
                };
                Ok((rows > 0).then(|| u64::try_from(now).unwrap_or(0)))
            }
            .await;
            (conn, result)
        })
    }

    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn super::Inspect> {
        Some(self)
    }
}

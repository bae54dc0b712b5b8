//! Leases in one MySQL or MariaDB table (feature `mysql`): storage steps only.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Row, SslOpts};

use super::DEFAULT_TIMEOUT;
use super::backend::{
    Caveat, Crash, Expect, Listing, NewRecord, Record, Registry, Snapshot, signed,
};
use super::error::LeaseError;
use super::remote::{Connected, Failure, Remote};
use super::tls;

/// Worker-id leases kept in a MySQL or MariaDB table, `flakegen_leases`
/// (InnoDB), which is created on first use.
///
/// Each step is a few statements, none in a transaction that spans two
/// (a client paused between them holds no lock), and expiry is judged by
/// the server's clock (`NOW(6)`, in ms, rounded down; a new marker rounded
/// up). A [`swap`](Registry::swap) is one statement: an `UPDATE` of the
/// record at its expected version joined to the marker row, or an `INSERT
/// … SELECT` from the marker row when no record is expected. A statement's
/// reads of the rows it writes or joins are current reads: InnoDB's
/// REPEATABLE READ snapshot never decides a swap, a swap cannot pass on a
/// record or marker another client has changed since, and a `TRUNCATE`
/// waits for the statement. The connection asks for `CLIENT_FOUND_ROWS`, so
/// a matched row counts though its values might not change. Every call, connecting included, finishes or fails within
/// [`DEFAULT_TIMEOUT`] on the client, and the server gives up a lock wait
/// after as long. A broken connection is opened again on the next call.
///
/// A read finds what an acquisition chooses from through two indexes (the
/// free records by fence, the held ones by expiry, over a stored column
/// `is_free`) and a cursor row per namespace (`worker` -2), from which it
/// looks for the lowest id with no record 256 ids at a time: its cost does
/// not grow with the id space or with the records kept.
///
/// # What counts as a loss
///
/// The marker is the row `('', -1)`: when the table's data began, stamped
/// with the table's creation time. `TRUNCATE` removes it with the rest; a
/// table restored from a dump, or created anew, has another creation time,
/// which makes its marker void. Either way the next acquisition writes a
/// new marker (the server's clock, rounded up), so the first TTL and skew
/// after it wait. So does an `ALTER TABLE` that rebuilds the table, which
/// moves its creation time too: alter it only with no generator running,
/// or take the wait. A table flakegen creates starts at 0: nothing can have
/// been lost. Not detected, so never done under running generators:
/// deleting some rows but not the marker, dropping the table (flakegen
/// creates the next one at marker 0, as new), restoring a physical backup
/// (which keeps the creation time), or a failover to a replica that missed
/// writes. After any of those, delete the marker row
/// (`DELETE FROM flakegen_leases WHERE worker = -1`) before a generator starts.
///
/// A restart or a crash of the server is no loss when its commits are
/// durable: `innodb_flush_log_at_trx_commit = 1`, the default, keeps every
/// renewal across crashes of the server and of its machine; `2` across the
/// server's own crashes only. With `0`, a crash forgets up to a second of
/// renewals that their holders already used, and nothing in the table
/// shows it: two holders could then share an id. Keep `1` (or `2` with a
/// machine that does not crash under it), and see the same caveat for
/// replicas above. It is a global setting, which a session cannot raise for
/// itself; [`Registry::caveats`] (`flakegen leases check`) reports it.
///
/// # MySQL 8 and MariaDB
///
/// The SQL keeps to what both accept (tested against MariaDB 10.11):
/// `NOW(6)`, a stored generated column, `WITH RECURSIVE`, `INSERT … ON
/// DUPLICATE KEY UPDATE … VALUES()` (deprecated in MySQL 8.0.20, still
/// accepted), multi-table `UPDATE` and `INSERT … SELECT` of a table from
/// itself. On MySQL 8 the default authentication
/// (`caching_sha2_password`) over a plain connection needs the server's RSA
/// key, which the client fetches; over TLS it needs nothing. MySQL 8's
/// `utf8mb4_bin` compares namespaces without trailing-space padding,
/// MariaDB's with it: flakegen refuses namespaces that end in white space.
///
/// For teams that run migrations themselves, the table and its indexes are
/// [`Self::DDL`], followed once by [`Self::NEW_TABLE_MARKER`]:
///
/// ```sql
#[doc = include_str!("mysql.sql")]
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
    remote: Remote<Conn>,
}

/// The server's clock in ms, rounded down: expiry is judged no later than it is.
const NOW_MS: &str = "FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000)";

/// When the table was created, in seconds: a restore or a rebuild changes it.
const CREATED: &str = "(SELECT UNIX_TIMESTAMP(CREATE_TIME) FROM information_schema.TABLES \
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'flakegen_leases')";

/// How many ids a read looks through, at most, for the fresh one (see
/// `PostgresRegistry`'s, which this follows).
const FRESH_SLICE: u64 = 256;

/// The columns of a record, in the order [`MysqlRegistry::record`] reads them.
const COLUMNS: &str = "worker, COALESCE(holder, ''), version, marker_ms, expires_ms, fence_ms";

/// How long the probe that tells a user who needs TLS from a wrong
/// password may take: it runs only when a plain login was refused.
const TLS_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

impl MysqlRegistry {
    /// The table the registry keeps leases in, created on first use.
    pub const DDL: &'static str = include_str!("mysql.sql");

    /// Run once right after [`DDL`](Self::DDL) when creating the table by
    /// hand: it records that the new table has lost nothing, so the first
    /// generators need not wait (see
    /// [A registry that loses its data](super#a-registry-that-loses-its-data)).
    /// Never run it on a table that had rows.
    pub const NEW_TABLE_MARKER: &'static str = "INSERT INTO flakegen_leases (namespace, worker, version, fence_ms) \
         SELECT '', -1, UNIX_TIMESTAMP(CREATE_TIME), 0 FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'flakegen_leases' \
         ON DUPLICATE KEY UPDATE worker = worker";

    /// A registry at `url` (`mysql://user:password@host:port/database`).
    /// Nothing is sent until the first call.
    ///
    /// TLS (rustls) as MySQL's clients take it, in the URL's query:
    /// `ssl-mode=DISABLED` (the default), `REQUIRED` (TLS, the certificate
    /// unchecked), `VERIFY_CA` (its chain), `VERIFY_IDENTITY` (its chain and
    /// the host name); `ssl-ca=<PEM file>` names the CAs to trust, the
    /// Mozilla roots otherwise. A managed database wants
    /// `?ssl-mode=VERIFY_IDENTITY&ssl-ca=/path/to/its-ca.pem`.
    /// `PREFERRED` (TLS if the server offers it) is refused: say which.
    ///
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        let invalid = |reason: String| LeaseError::InvalidUrl { reason };
        let (url, params) = tls::take_params(url, &["ssl-mode", "ssl-ca"]);
        let param = |name| {
            params
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        let opts = Opts::from_url(&url).map_err(|e| invalid(e.to_string()))?;
        let mode = param("ssl-mode").unwrap_or("DISABLED").to_ascii_uppercase();
        let ssl = match mode.as_str() {
            "DISABLED" => None,
            "REQUIRED" => Some(
                SslOpts::default()
                    .with_danger_accept_invalid_certs(true)
                    .with_danger_skip_domain_validation(true),
            ),
            "VERIFY_CA" => Some(SslOpts::default().with_danger_skip_domain_validation(true)),
            "VERIFY_IDENTITY" => Some(SslOpts::default()),
            "PREFERRED" => {
                return Err(invalid(
                    "ssl-mode=PREFERRED would fall back to plain text unseen: use \
                     VERIFY_IDENTITY (or REQUIRED, VERIFY_CA), or DISABLED"
                        .to_owned(),
                ));
            }
            other => {
                return Err(invalid(format!(
                    "ssl-mode={other} is none of DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
                )));
            }
        };
        let ssl = match (ssl, param("ssl-ca")) {
            (None, Some(_)) => {
                return Err(invalid(
                    "a CA file (ssl-ca=) is for TLS: add ssl-mode=VERIFY_IDENTITY".to_owned(),
                ));
            }
            (Some(ssl), Some(ca_file)) => {
                std::fs::metadata(ca_file)
                    .map_err(|e| invalid(format!("cannot read the CA file {ca_file} ({e})")))?;
                Some(
                    ssl.with_root_certs(vec![std::path::PathBuf::from(ca_file).into()])
                        .with_disable_built_in_roots(true),
                )
            }
            (ssl, None) => ssl,
        };
        if ssl.is_some() {
            tls::ensure_default_provider();
        }
        let timeout = DEFAULT_TIMEOUT.as_secs().max(1);
        let opts = OptsBuilder::from_opts(opts)
            .ssl_opts(ssl)
            .client_found_rows(true)
            .prefer_socket(false)
            .init(vec![
                // The server gives up too, so a stuck statement frees its locks.
                format!("SET SESSION innodb_lock_wait_timeout = {timeout}"),
                format!("SET SESSION lock_wait_timeout = {timeout}"),
                // UNIX_TIMESTAMP(NOW(6)) through a zone with daylight saving
                // is ambiguous for an hour a year; through UTC it never is.
                "SET SESSION time_zone = '+00:00'".to_owned(),
            ]);
        let opts = Opts::from(opts);
        let address = format!("{}:{}", opts.ip_or_hostname(), opts.tcp_port());
        Ok(MysqlRegistry {
            opts,
            remote: Remote::new(address)?,
        })
    }

    /// Runs `call` with a connection, opening one (and creating the table)
    /// first if need be.
    fn run<T, F>(&self, call: impl FnOnce(Conn) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        let opts = &self.opts;
        let open = || async move {
            let mut conn = Conn::new(opts.clone()).await?;
            create_table(&mut conn).await?;
            Ok(Connected {
                client: conn,
                driver: None,
            })
        };
        let result = self.remote.run(open, call);
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }

    /// The client's error, said as a [`LeaseError`].
    fn error(&self, e: mysql_async::Error) -> LeaseError {
        let address = self.remote.address.clone();
        let mysql_async::Error::Server(server) = &e else {
            if let Some(reason) = tls::tls_failure(&e) {
                return LeaseError::Tls { address, reason };
            }
            return LeaseError::Unreachable {
                address,
                source: Arc::new(e),
            };
        };
        match server.code {
            // Access denied: a wrong password, or a user that must use TLS
            // (MariaDB and MySQL say the same to both).
            1045 if self.opts.ssl_opts().is_none() && self.tls_logs_in() => {
                LeaseError::TlsRequired {
                    address,
                    source: Arc::new(e),
                }
            }
            1045 => LeaseError::Unauthorized {
                address,
                source: Arc::new(e),
            },
            1049 => LeaseError::UnknownDatabase {
                address,
                database: self.opts.db_name().unwrap_or("").to_owned(),
            },
            // No right to the database, or to create or use the table.
            1044 | 1142 | 1143 => LeaseError::Forbidden {
                address,
                registry: "MysqlRegistry",
                source: Arc::new(e),
            },
            // The server is going away, or not ready yet.
            1053 | 1077 | 1152 | 2006 | 2013 => LeaseError::Unreachable {
                address,
                source: Arc::new(e),
            },
            _ => LeaseError::Server {
                address,
                source: Arc::new(e),
            },
        }
    }

    /// Whether the URL's credentials log in over TLS (the certificate
    /// unchecked): then a refused plain login was a user that must use TLS.
    fn tls_logs_in(&self) -> bool {
        tls::ensure_default_provider();
        let ssl = SslOpts::default()
            .with_danger_accept_invalid_certs(true)
            .with_danger_skip_domain_validation(true);
        let opts = OptsBuilder::from_opts(self.opts.clone()).ssl_opts(ssl);
        let login = async move { Conn::new(opts).await?.disconnect().await };
        self.remote
            .probe(TLS_PROBE_TIMEOUT, login)
            .is_some_and(|r| r.is_ok())
    }

    fn corrupt(&self, detail: String) -> Failure<mysql_async::Error> {
        Failure::Lease(LeaseError::Corrupt {
            address: self.remote.address.clone(),
            detail,
        })
    }

    /// Records from rows of [`COLUMNS`].
    fn records(&self, rows: Vec<Row>) -> Result<Vec<Record>, Failure<mysql_async::Error>> {
        rows.into_iter().map(|row| self.record(row)).collect()
    }

    /// A record from a row of [`COLUMNS`].
    fn record(&self, row: Row) -> Result<Record, Failure<mysql_async::Error>> {
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

impl fmt::Debug for MysqlRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MysqlRegistry")
            .field("address", &self.remote.address)
            .finish_non_exhaustive()
    }
}

/// Creates the table if it is missing, with a marker that says nothing was
/// lost. Two clients racing to create it are safe: the loser's marker
/// insert changes nothing, and a marker written in between by an
/// acquisition only makes the first generators wait.
async fn create_table(conn: &mut Conn) -> Result<(), mysql_async::Error> {
    let exists: Option<i64> = conn
        .query_first(format!("SELECT 1 FROM {CREATED} t"))
        .await?;
    if exists.is_none() {
        conn.query_drop(MysqlRegistry::DDL).await?;
        conn.query_drop(MysqlRegistry::NEW_TABLE_MARKER).await?;
    }
    Ok(())
}

impl Registry for MysqlRegistry {
    fn read(
        &self,
        namespace: &str,
        workers: u64,
        prefer: Option<u64>,
    ) -> Result<Snapshot, LeaseError> {
        let (ns, workers) = (namespace.to_owned(), signed(workers));
        self.run(|mut conn| async move {
            let result = async {
                // The server's clock, and the marker unless a restore voided it.
                let head: (i64, Option<i64>) = conn
                    .query_first(format!(
                        "SELECT {NOW_MS}, IF(m.version = {CREATED}, m.fence_ms, NULL) \
                         FROM (SELECT 1) one LEFT JOIN flakegen_leases m \
                         ON m.namespace = '' AND m.worker = -1"
                    ))
                    .await?
                    .ok_or_else(|| self.corrupt("no clock reading".into()))?;
                let (now, marker) = head;
                // The fresh id: a slice past the namespace's cursor.
                let start: i64 = match marker {
                    None => 0,
                    Some(marker) => conn
                        .exec_first(
                            "SELECT fence_ms FROM flakegen_leases \
                             WHERE namespace = ? AND worker = -2 AND marker_ms = ?",
                            (&ns, marker),
                        )
                        .await?
                        .unwrap_or(0),
                };
                let stop = workers.min(start + signed(FRESH_SLICE));
                let gap: Option<i64> = if start < stop {
                    conn.exec_first(
                        "WITH RECURSIVE s (w) AS (SELECT CAST(? AS SIGNED) UNION ALL \
                         SELECT w + 1 FROM s WHERE w + 1 < ?) \
                         SELECT MIN(s.w) FROM s LEFT JOIN flakegen_leases l \
                         ON l.namespace = ? AND l.worker = s.w AND l.marker_ms = ? \
                         WHERE l.worker IS NULL",
                        (start, stop, &ns, marker.unwrap_or(-1)),
                    )
                    .await?
                    .flatten()
                } else {
                    None
                };
                let fresh = gap.unwrap_or(stop);
                if let Some(marker) = marker.filter(|_| fresh > start) {
                    conn.exec_drop(
                        "INSERT INTO flakegen_leases (namespace, worker, marker_ms, fence_ms) \
                         VALUES (?, -2, ?, ?) ON DUPLICATE KEY UPDATE \
                         fence_ms = IF(marker_ms = VALUES(marker_ms), \
                             GREATEST(fence_ms, VALUES(fence_ms)), VALUES(fence_ms)), \
                         marker_ms = VALUES(marker_ms)",
                        (&ns, marker, fresh),
                    )
                    .await?;
                }
                let fresh = (fresh < workers).then_some(fresh);
                let rows: Vec<Row> = conn
                    .exec(
                        format!(
                            "(SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = ? \
                               AND marker_ms = ? AND is_free = 1 AND worker >= 0 AND worker < ? \
                               ORDER BY fence_ms, worker LIMIT 1) \
                             UNION ALL \
                             (SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = ? \
                               AND marker_ms = ? AND is_free = 0 AND expires_ms <= ? \
                               AND worker >= 0 AND worker < ? ORDER BY expires_ms LIMIT 4) \
                             UNION ALL \
                             (SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = ? \
                               AND worker IN (?, ?) AND worker >= 0 AND worker < ?)"
                        ),
                        (
                            &ns,
                            marker.unwrap_or(-1),
                            workers,
                            &ns,
                            marker.unwrap_or(-1),
                            now,
                            workers,
                            &ns,
                            prefer.map_or(-1, signed),
                            fresh.unwrap_or(-1),
                            workers,
                        ),
                    )
                    .await?;
                let records = self.records(rows)?;
                Ok(Snapshot {
                    server_unix_millis: u64::try_from(now).unwrap_or(0),
                    marker_unix_millis: marker.and_then(|m| u64::try_from(m).ok()),
                    records,
                    fresh: fresh.map(i64::unsigned_abs),
                    more: gap.is_none() && stop < workers,
                })
            }
            .await;
            (conn, result)
        })
    }

    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let ns = namespace.to_owned();
        self.run(|mut conn| async move {
            let result = async {
                let head: (i64, Option<i64>) = conn
                    .query_first(format!(
                        "SELECT {NOW_MS}, (SELECT IF(version = {CREATED}, fence_ms, NULL) \
                         FROM flakegen_leases WHERE namespace = '' AND worker = -1)"
                    ))
                    .await?
                    .ok_or_else(|| self.corrupt("no clock reading".into()))?;
                let (now, marker) = head;
                let rows: Vec<Row> = conn
                    .exec(
                        format!(
                            "SELECT {COLUMNS} FROM flakegen_leases \
                             WHERE namespace = ? AND worker >= 0 ORDER BY worker"
                        ),
                        (&ns,),
                    )
                    .await?;
                let records = self.records(rows)?;
                Ok(Listing {
                    server_unix_millis: u64::try_from(now).unwrap_or(0),
                    marker_unix_millis: marker.and_then(|m| u64::try_from(m).ok()),
                    records,
                })
            }
            .await;
            (conn, result)
        })
    }

    fn caveats(&self) -> Result<Vec<Caveat>, LeaseError> {
        self.run(|mut conn| async move {
            let result = async {
                // A global setting only: a session cannot make its own
                // commits more durable than the server's.
                let flush: Option<String> = conn
                    .query_first("SELECT CAST(@@GLOBAL.innodb_flush_log_at_trx_commit AS CHAR)")
                    .await?;
                let setting = |value: &str| format!("innodb_flush_log_at_trx_commit = {value}");
                Ok(match flush.as_deref() {
                    Some("0") => vec![Caveat {
                        setting: setting("0"),
                        crash: Crash::Server,
                        advice: "the server writes its log about once a second, so a crash of \
                                 the server forgets up to a second of renewals it confirmed, \
                                 and two holders could share an id: set it to 1 (the default)"
                            .to_owned(),
                    }],
                    Some("2") => vec![Caveat {
                        setting: setting("2"),
                        crash: Crash::Machine,
                        advice: "the log reaches the disk about once a second, so a crash of \
                                 the server's machine (not of the server alone) forgets up to \
                                 a second of renewals it confirmed, and two holders could \
                                 share an id: set it to 1 (the default)"
                            .to_owned(),
                    }],
                    _ => Vec::new(),
                })
            }
            .await;
            (conn, result)
        })
    }

    fn mark(&self, _namespace: &str) -> Result<u64, LeaseError> {
        self.run(|mut conn| async move {
            let result = async {
                // A marker of another table (a restore) is replaced, never
                // lowered; a current one stays as it is.
                conn.query_drop(format!(
                    "INSERT INTO flakegen_leases (namespace, worker, version, fence_ms) \
                     SELECT '', -1, {CREATED}, CEIL(UNIX_TIMESTAMP(NOW(6)) * 1000) \
                     ON DUPLICATE KEY UPDATE \
                     fence_ms = IF(version = VALUES(version), fence_ms, \
                         GREATEST(VALUES(fence_ms), fence_ms + 1)), \
                     version = VALUES(version)"
                ))
                .await?;
                let marker: i64 = conn
                    .query_first(
                        "SELECT fence_ms FROM flakegen_leases WHERE namespace = '' AND worker = -1",
                    )
                    .await?
                    .ok_or_else(|| self.corrupt("no marker after writing one".into()))?;
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
                // The server's clock before the write, as the others read it.
                let now: i64 = conn
                    .query_first(format!("SELECT {NOW_MS}"))
                    .await?
                    .ok_or_else(|| self.corrupt("no clock reading".into()))?;
                let expires = if ttl == 0 { 0 } else { now.saturating_add(ttl) };
                // One statement each, so no lock outlives it: a client paused
                // mid-swap holds nothing. The marker row is joined in, read as
                // it is now (a current read), and void if of another table.
                let written = match expected {
                    Some(expected) => {
                        conn.exec_drop(
                            format!(
                                "UPDATE flakegen_leases l JOIN flakegen_leases m \
                                 ON m.namespace = '' AND m.worker = -1 AND m.fence_ms = ? \
                                 AND m.version = {CREATED} \
                                 SET l.holder = NULLIF(?, ''), l.version = ?, l.marker_ms = ?, \
                                 l.expires_ms = ?, l.fence_ms = ? \
                                 WHERE l.namespace = ? AND l.worker = ? AND l.version = ?"
                            ),
                            (
                                marker, &holder, version, marker, expires, fence, &ns, worker,
                                expected,
                            ),
                        )
                        .await?;
                        conn.affected_rows() == 1
                    }
                    None => match conn
                        .exec_drop(
                            format!(
                                "INSERT INTO flakegen_leases \
                                 (namespace, worker, holder, version, marker_ms, expires_ms, \
                                 fence_ms) \
                                 SELECT ?, ?, NULLIF(?, ''), ?, ?, ?, ? FROM flakegen_leases m \
                                 WHERE m.namespace = '' AND m.worker = -1 AND m.fence_ms = ? \
                                 AND m.version = {CREATED}"
                            ),
                            (
                                &ns, worker, &holder, version, marker, expires, fence, marker,
                            ),
                        )
                        .await
                    {
                        Ok(()) => conn.affected_rows() == 1,
                        // A record exists: not the one expected.
                        Err(mysql_async::Error::Server(e)) if e.code == 1062 => false,
                        Err(e) => return Err(e.into()),
                    },
                };
                Ok(written.then(|| u64::try_from(now).unwrap_or(0)))
            }
            .await;
            (conn, result)
        })
    }
}

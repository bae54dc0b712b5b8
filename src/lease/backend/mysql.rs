//! Leases in one MySQL or MariaDB table (feature `mysql`): storage steps only.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Row, SslOpts};

use super::probe::Speaks;
use super::remote::{Connected, Failure, Remote};
use super::tls;
use super::{
    Caveat, DEFAULT_TIMEOUT, Expect, Inspect, LeaseError, Listing, NewRecord, Record, Registry,
    Severity, Snapshot, Survey, Transport, Verified, signed,
};

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
/// The marker is one row of `flakegen_marker`: the moment the lease
/// table's data began, and a stamp of the history it vouches for: the
/// server that confirms writes (`@@server_id`, `@@hostname`, `@@port`), the
/// lease table's creation time, and the token of the table's sentinel row
/// (`worker` -1, written with the table). Every statement compares the
/// stamp with the server's own, so a marker whose history changed is void
/// at once, and the next acquisition writes a new one (the server's clock,
/// rounded up, and later than the old one). Each of these changes the
/// stamp, and is a detected loss that costs the first TTL and skew after it
/// a wait:
///
/// - a **failover** to a replica, or a switch to the other server of a
///   master-master pair, whether it missed the last renewals or not;
/// - `TRUNCATE`, or a `DELETE` of every row (the sentinel goes);
/// - a **dropped** and re-created table, whoever creates it (the marker row
///   stays in its own table, so the new table is not taken for a new
///   install), and a logical restore (a dump's table is created anew, in
///   another second).
///
/// Leases need one server that takes writes. A connection that finds the
/// server read-only (a replica) is refused ([`LeaseError::ReadOnly`]), and
/// so is one that finds it writable while it replicates from another server
/// that takes writes too (two masters at once, as in a master-master pair
/// that takes writes on both sides: each would grant leases alone), or that
/// cannot be asked ([`LeaseError::MultiWriter`]). Seeing the replication
/// needs the `REPLICA MONITOR` (MariaDB) or `REPLICATION CLIENT` (MySQL)
/// privilege; without it the check is skipped, and [`Inspect::survey`]
/// (`flakegen leases check`) says so. A Galera or Group Replication cluster
/// never loses a write it confirmed, but moving between its members still
/// counts as a loss here (another server), and costs the same wait.
///
/// Not detected, so never done under running generators: deleting some
/// rows by hand, but not the sentinel; dropping both tables (the next
/// start is a new install); restoring a physical backup onto the same host
/// and port. After any of those,
/// delete the marker row (`DELETE FROM flakegen_marker`) before a generator
/// starts.
///
/// A restart or a crash of the server is no loss when its commits are
/// durable: `innodb_flush_log_at_trx_commit = 1`, the default, keeps every
/// renewal across crashes of the server and of its machine; `2` across the
/// server's own crashes only. With `0`, a crash forgets up to a second of
/// renewals that their holders already used, and nothing in the table
/// shows it: two holders could then share an id. Keep `1` (or `2` with a
/// machine that does not crash under it). It is a global setting, which a
/// session cannot raise for itself; [`Inspect::survey`] reports it.
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
/// For teams that run migrations themselves, the tables and indexes are
/// [`Self::DDL`], followed once by [`Self::NEW_TABLE_MARKER`]:
///
/// ```sql
#[doc = include_str!("mysql.sql")]
#[doc = include_str!("mysql_marker.sql")]
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
    verified: Verified,
    remote: Remote<Session>,
}

/// A connection, and whether it was made ready to lease on: the server
/// found to take writes, alone, and the tables there.
struct Session {
    conn: Conn,
    ready: bool,
}

/// The server's clock in ms, rounded down: expiry is judged no later than it is.
const NOW_MS: &str = "FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000)";

/// What the marker vouches for, as the server names its history now: the
/// server that confirms writes, when the lease table was created (in
/// seconds: a new table, or a logical restore, changes it), and the token
/// of the table's sentinel row (`worker` -1), which `TRUNCATE` or a
/// `DELETE` of every row takes away. Refers to the lease table: only in
/// statements that know it exists.
macro_rules! stamp {
    () => {
        "CONCAT(@@server_id, '/', @@hostname, ':', @@port, '/', \
         COALESCE((SELECT UNIX_TIMESTAMP(CREATE_TIME) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'flakegen_leases'), 'none'), '/', \
         COALESCE((SELECT holder FROM flakegen_leases WHERE namespace = '' AND worker = -1), 'none'))"
    };
}
/// Writes the table's sentinel row where it is missing, with a token no
/// other table had: a table's data begins with it.
const SENTINEL: &str = "INSERT IGNORE INTO flakegen_leases (namespace, worker, holder, fence_ms) \
     VALUES ('', -1, UUID(), 0)";
const STAMP: &str = stamp!();

/// The marker in force, if any.
const MARKER: &str = concat!(
    "(SELECT marker_ms FROM flakegen_marker WHERE one = 1 AND stamp = ",
    stamp!(),
    ")"
);

/// How many ids a read looks through, at most, for the fresh one (see
/// `PostgresRegistry`'s, which this follows).
const FRESH_SLICE: u64 = 256;

/// The columns of a record, in the order [`MysqlRegistry::record`] reads them.
const COLUMNS: &str = "worker, COALESCE(holder, ''), version, marker_ms, expires_ms, fence_ms";

/// How long the probe that tells a user who needs TLS from a wrong
/// password may take: it runs only when a plain login was refused.
const TLS_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long asking the server this one replicates from whether it takes
/// writes may take: once per connection, and only on a replicating server.
const PEER_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// What each failure's message tells a user to check, in this registry's
/// own URL terms.
const TLS_FIX: &str = "check the CA file (ssl-ca=<file>; the Mozilla roots without one), that \
     the server's certificate names the host in the URL (or verify the CA alone: \
     ssl-mode=VERIFY_CA), and that the server takes TLS";
const TLS_REQUIRED_FIX: &str = "add ssl-mode=VERIFY_IDENTITY (with ssl-ca=<CA file>) to the URL";
const CREDENTIALS_FIX: &str = "check the user name and password in the URL \
     (mysql://user:password@host:port/db; percent-encode special characters)";

impl MysqlRegistry {
    /// The tables the registry keeps leases and their marker in, created
    /// on first use.
    pub const DDL: &'static str =
        concat!(include_str!("mysql.sql"), include_str!("mysql_marker.sql"));

    /// Run once right after [`DDL`](Self::DDL) when creating the tables by
    /// hand (two statements: the table's sentinel row, then the marker):
    /// it records that the new table has lost nothing, so the first
    /// generators need not wait (see
    /// [A registry that loses its data](crate::lease#a-registry-that-loses-its-data)).
    /// It writes no marker where one exists already: a table created again
    /// after a drop is not new, and its generators wait. flakegen itself
    /// writes it only on a server that never applied another's writes: a
    /// replica since promoted may lack tables its old primary created and
    /// leased from just before the failover.
    pub const NEW_TABLE_MARKER: &'static str = concat!(
        "INSERT IGNORE INTO flakegen_leases (namespace, worker, holder, fence_ms) \
         VALUES ('', -1, UUID(), 0); ",
        "INSERT IGNORE INTO flakegen_marker (one, marker_ms, stamp) VALUES (1, 0, ",
        stamp!(),
        ")"
    );

    /// A registry at `url` (`mysql://user:password@host:port/database`, or
    /// `mariadb://`).
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
        // The client knows one scheme; MariaDB's name is as good.
        let url = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("mariadb") => {
                format!("mysql://{rest}")
            }
            _ => url.to_owned(),
        };
        let (url, params) = tls::take_params(&url, &["ssl-mode", "ssl-ca"]);
        let param = |name| {
            params
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        let opts = Opts::from_url(&url).map_err(|e| invalid(e.to_string()))?;
        if opts.db_name().is_none_or(str::is_empty) {
            return Err(invalid(
                "the URL names no database: add /<database> (mysql://user:password@host:port/db)"
                    .to_owned(),
            ));
        }
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
        let verified = match mode.as_str() {
            "VERIFY_IDENTITY" => Verified::Full,
            "VERIFY_CA" => Verified::Chain,
            _ => Verified::Nothing,
        };
        Ok(MysqlRegistry {
            opts,
            verified,
            remote: Remote::new(address, Speaks::Mysql)?,
        })
    }

    /// Runs `call` with a connection ready to lease on (the server takes
    /// writes, alone; the tables are there), opening one first if need be.
    fn run<T, F>(&self, call: impl FnOnce(Conn) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        self.session(true, call)
    }

    /// Runs `call` with a connection as it is: for a look that writes
    /// nothing, on any server.
    fn look<T, F>(&self, call: impl FnOnce(Conn) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        self.session(false, call)
    }

    fn session<T, F>(
        &self,
        ready: bool,
        call: impl FnOnce(Conn) -> F + Send,
    ) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        let opts = &self.opts;
        let open = || async move {
            let conn = Conn::new(opts.clone()).await?;
            Ok(Connected {
                client: Session { conn, ready: false },
                driver: None,
            })
        };
        let result = self.remote.run(open, |mut session| async move {
            if ready && !session.ready {
                if let Err(e) = self.prepare(&mut session.conn).await {
                    return (session, Err(e));
                }
                session.ready = true;
            }
            let (conn, result) = call(session.conn).await;
            (
                Session {
                    conn,
                    ready: session.ready,
                },
                result,
            )
        });
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }

    /// Makes a connection ready to lease on: the server must take writes,
    /// and be the only one that does among those it replicates from; the
    /// tables are created if they are missing. Tables created here together
    /// are new, so their marker says nothing was lost; a lease table created
    /// where a marker row was left (it was dropped) is not, nor is a lease
    /// table without a marker.
    async fn prepare(&self, conn: &mut Conn) -> Result<(), Failure<mysql_async::Error>> {
        let read_only: Option<(i64, String)> =
            conn.query_first("SELECT @@read_only, VERSION()").await?;
        if let Some((1, _)) = read_only {
            return Err(Failure::Lease(LeaseError::ReadOnly {
                address: self.remote.address.clone(),
                role: "read_only = ON: a replica, or a server set aside".to_owned(),
            }));
        }
        if let Some(upstream) = self.upstream(conn).await? {
            let found = match self.peer_read_only(&upstream).await {
                Ok(true) => None,
                Ok(false) => Some("takes writes too (read_only = OFF)".to_owned()),
                Err(why) => Some(format!(
                    "could not be asked whether it takes writes ({why}): it may"
                )),
            };
            if let Some(found) = found {
                return Err(Failure::Lease(LeaseError::MultiWriter {
                    address: self.remote.address.clone(),
                    peer: format!("{}:{}", upstream.0, upstream.1),
                    found,
                }));
            }
        }
        let present: (i64, i64) = conn
            .query_first(
                "SELECT COUNT(CASE WHEN TABLE_NAME = 'flakegen_leases' THEN 1 END), \
                 COUNT(CASE WHEN TABLE_NAME = 'flakegen_marker' THEN 1 END) \
                 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() \
                 AND TABLE_NAME IN ('flakegen_leases', 'flakegen_marker')",
            )
            .await?
            .unwrap_or((0, 0));
        if present == (1, 1) {
            return Ok(());
        }
        // One client creates them: others wait for it, then find them there.
        let locked: Option<i64> = conn
            .query_first("SELECT GET_LOCK('flakegen_leases_create', 3)")
            .await?;
        if locked != Some(1) {
            return Err(self.corrupt("could not take the lock that creates the tables".into()));
        }
        let created = async {
            let present: (i64, i64) = conn
                .query_first(
                    "SELECT COUNT(CASE WHEN TABLE_NAME = 'flakegen_leases' THEN 1 END), \
                     COUNT(CASE WHEN TABLE_NAME = 'flakegen_marker' THEN 1 END) \
                     FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() \
                     AND TABLE_NAME IN ('flakegen_leases', 'flakegen_marker')",
                )
                .await?
                .unwrap_or((0, 0));
            if present.0 == 0 {
                conn.query_drop(include_str!("mysql.sql")).await?;
                conn.query_drop(SENTINEL).await?;
            }
            if present.1 == 0 {
                conn.query_drop(include_str!("mysql_marker.sql")).await?;
            }
            if present == (0, 0) && !replicated(conn).await? {
                for statement in MysqlRegistry::NEW_TABLE_MARKER.split("; ") {
                    conn.query_drop(statement).await?;
                }
            }
            Ok::<(), mysql_async::Error>(())
        }
        .await;
        let _ = conn
            .query_drop("DO RELEASE_LOCK('flakegen_leases_create')")
            .await;
        Ok(created?)
    }

    /// The server this one replicates from, if it does (a channel whose
    /// threads run, or try to); `None` too when the user may not see it.
    async fn upstream(
        &self,
        conn: &mut Conn,
    ) -> Result<Option<(String, u16)>, Failure<mysql_async::Error>> {
        // MariaDB: every channel; MySQL 8: SHOW REPLICA STATUS; older: SLAVE.
        for statement in [
            "SHOW ALL SLAVES STATUS",
            "SHOW REPLICA STATUS",
            "SHOW SLAVE STATUS",
        ] {
            let rows: Vec<Row> = match conn.query(statement).await {
                Ok(rows) => rows,
                // Not this server's syntax: try the next.
                Err(mysql_async::Error::Server(e)) if e.code == 1064 => continue,
                // No right to see replication (1227): nothing to go on.
                Err(mysql_async::Error::Server(e)) if e.code == 1227 || e.code == 1142 => {
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            };
            for row in rows {
                let text = |names: &[&str]| {
                    names
                        .iter()
                        .find_map(|name| row.get_opt::<String, _>(*name).and_then(Result::ok))
                };
                let io = text(&["Slave_IO_Running", "Replica_IO_Running"]).unwrap_or_default();
                let sql = text(&["Slave_SQL_Running", "Replica_SQL_Running"]).unwrap_or_default();
                if io == "No" && sql == "No" {
                    continue;
                }
                let host = text(&["Master_Host", "Source_Host"]).unwrap_or_default();
                let port = text(&["Master_Port", "Source_Port"])
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(3306);
                if !host.is_empty() {
                    return Ok(Some((host, port)));
                }
            }
            return Ok(None);
        }
        Ok(None)
    }

    /// Whether the server at `peer` is read-only, asked with this
    /// registry's credentials and TLS; why it could not be asked, if not.
    async fn peer_read_only(&self, peer: &(String, u16)) -> Result<bool, String> {
        let opts = OptsBuilder::from_opts(self.opts.clone())
            .ip_or_hostname(peer.0.clone())
            .tcp_port(peer.1);
        let ask = async {
            let mut conn = Conn::new(opts).await?;
            let read_only: Option<i64> = conn.query_first("SELECT @@read_only").await?;
            let _ = conn.disconnect().await;
            Ok::<_, mysql_async::Error>(read_only == Some(1))
        };
        match tokio::time::timeout(PEER_PROBE_TIMEOUT, ask).await {
            Ok(Ok(read_only)) => Ok(read_only),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {PEER_PROBE_TIMEOUT:?}")),
        }
    }

    /// The client's error, said as a [`LeaseError`].
    fn error(&self, e: mysql_async::Error) -> LeaseError {
        let address = self.remote.address.clone();
        let mysql_async::Error::Server(server) = &e else {
            if let Some(reason) = tls::tls_failure(&e) {
                return LeaseError::Tls {
                    address,
                    reason,
                    fix: TLS_FIX,
                };
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
                    fix: TLS_REQUIRED_FIX,
                }
            }
            1045 => LeaseError::Unauthorized {
                address,
                source: Arc::new(e),
                fix: CREDENTIALS_FIX,
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
            // Running with --read-only.
            1290 | 1836 => LeaseError::ReadOnly {
                address,
                role: format!("it said: {}", server.message),
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

/// Whether the server has applied writes replicated from another: a
/// replica, or one promoted from a replica (MariaDB: a replica's GTID
/// position; MySQL: GTIDs of another server among those executed). A
/// server without GTIDs gives no sign.
async fn replicated(conn: &mut Conn) -> Result<bool, mysql_async::Error> {
    match conn
        .query_first::<String, _>("SELECT @@gtid_slave_pos")
        .await
    {
        Ok(position) => return Ok(position.is_some_and(|p| !p.trim().is_empty())),
        // Not MariaDB: MySQL's GTIDs name the server that made them.
        Err(mysql_async::Error::Server(e)) if e.code == 1193 => {}
        Err(e) => return Err(e),
    }
    let row: Option<(String, String)> = match conn
        .query_first("SELECT @@gtid_executed, @@server_uuid")
        .await
    {
        Ok(row) => row,
        Err(mysql_async::Error::Server(_)) => return Ok(false),
        Err(e) => return Err(e),
    };
    Ok(row.is_some_and(|(executed, uuid)| {
        executed
            .split(',')
            .filter_map(|set| set.trim().split(':').next())
            .any(|source| !source.is_empty() && !source.eq_ignore_ascii_case(&uuid))
    }))
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
                    .query_first(format!("SELECT {NOW_MS}, {MARKER}"))
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

    fn mark(&self, _namespace: &str) -> Result<u64, LeaseError> {
        self.run(|mut conn| async move {
            let result = async {
                // A table whose rows went (TRUNCATE) begins again with a
                // sentinel. A marker of another history is replaced: never
                // earlier than now, nor than the one it replaces. One in
                // force stays.
                conn.query_drop(SENTINEL).await?;
                conn.query_drop(format!(
                    "INSERT INTO flakegen_marker (one, marker_ms, stamp) \
                     VALUES (1, CEIL(UNIX_TIMESTAMP(NOW(6)) * 1000), {STAMP}) \
                     ON DUPLICATE KEY UPDATE \
                     marker_ms = IF(stamp = VALUES(stamp), marker_ms, \
                         GREATEST(VALUES(marker_ms), marker_ms + 1)), \
                     stamp = VALUES(stamp)"
                ))
                .await?;
                let marker: i64 = conn
                    .query_first(format!("SELECT {MARKER}"))
                    .await?
                    .flatten()
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
                // it is now (a current read), and void if of another history.
                let written = match expected {
                    Some(expected) => {
                        conn.exec_drop(
                            format!(
                                "UPDATE flakegen_leases l JOIN flakegen_marker m \
                                 ON m.one = 1 AND m.marker_ms = ? AND m.stamp = {STAMP} \
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
                                 SELECT ?, ?, NULLIF(?, ''), ?, ?, ?, ? FROM flakegen_marker m \
                                 WHERE m.one = 1 AND m.marker_ms = ? AND m.stamp = {STAMP}"
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

    fn inspect(&self) -> Option<&dyn Inspect> {
        Some(self)
    }
}

/// Whether the lease table exists, in a statement's result.
const LEASES_PRESENT: &str = "(SELECT COUNT(*) FROM information_schema.TABLES \
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'flakegen_leases')";

impl Inspect for MysqlRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let ns = namespace.to_owned();
        self.look(|mut conn| async move {
            let result = async {
                let head: (i64, i64) = conn
                    .query_first(format!("SELECT {NOW_MS}, {LEASES_PRESENT}"))
                    .await?
                    .ok_or_else(|| self.corrupt("no clock reading".into()))?;
                let (now, leases) = head;
                if leases == 0 {
                    return Err(Failure::Lease(LeaseError::NoLeases {
                        address: self.remote.address.clone(),
                    }));
                }
                // Only once both tables are known to be there.
                let has_marker: Option<i64> = conn
                    .query_first(
                        "SELECT COUNT(*) FROM information_schema.TABLES \
                         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'flakegen_marker'",
                    )
                    .await?;
                let marker: Option<i64> = if has_marker.unwrap_or(0) > 0 {
                    conn.query_first(format!("SELECT {MARKER}"))
                        .await?
                        .flatten()
                } else {
                    None
                };
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

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        self.look(|mut conn| async move {
            let result = async {
                let leases: Option<i64> =
                    conn.query_first(format!("SELECT {LEASES_PRESENT}")).await?;
                if leases.unwrap_or(0) == 0 {
                    return Err(Failure::Lease(LeaseError::NoLeases {
                        address: self.remote.address.clone(),
                    }));
                }
                let names: Vec<String> = conn
                    .query(
                        "SELECT DISTINCT namespace FROM flakegen_leases WHERE worker >= 0 \
                         ORDER BY namespace",
                    )
                    .await?;
                Ok(names)
            }
            .await;
            (conn, result)
        })
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        let verified = self.verified;
        self.look(|mut conn| async move {
            let result = async {
                let cipher: Option<(String, String)> = conn
                    .query_first("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
                    .await?;
                let transport = match cipher {
                    Some((_, cipher)) if !cipher.is_empty() => Transport::Tls(verified),
                    _ => Transport::Plain,
                };
                let mut caveats = Vec::new();
                // A global setting only: a session cannot make its own
                // commits more durable than the server's.
                let flush: Option<String> = conn
                    .query_first("SELECT CAST(@@GLOBAL.innodb_flush_log_at_trx_commit AS CHAR)")
                    .await?;
                let setting = |value: &str| format!("innodb_flush_log_at_trx_commit = {value}");
                match flush.as_deref() {
                    Some("0") => caveats.push(Caveat {
                        topic: "durability",
                        setting: setting("0"),
                        severity: Severity::Danger,
                        advice: "the server writes its log about once a second, so a crash of \
                                 the server forgets up to a second of renewals it confirmed, \
                                 and two holders could share an id: set it to 1 (the default)"
                            .to_owned(),
                    }),
                    Some("2") => caveats.push(Caveat {
                        topic: "durability",
                        setting: setting("2"),
                        severity: Severity::Warning,
                        advice: "the log reaches the disk about once a second, so a crash of \
                                 the server's machine (not of the server alone) forgets up to \
                                 a second of renewals it confirmed, and two holders could \
                                 share an id: set it to 1 (the default)"
                            .to_owned(),
                    }),
                    value => caveats.push(Caveat {
                        topic: "durability",
                        setting: setting(value.unwrap_or("1")),
                        severity: Severity::Note,
                        advice: "no server setting lets a crash forget a renewal the registry \
                                 confirmed: every commit reaches the disk before it is confirmed"
                            .to_owned(),
                    }),
                }
                caveats.push(self.topology(&mut conn).await?);
                Ok(Survey::new(transport, caveats))
            }
            .await;
            (conn, result)
        })
    }
}

impl MysqlRegistry {
    /// The server's place among the servers it replicates with, as leasing
    /// sees it: the same judgement a connection makes before it leases.
    async fn topology(&self, conn: &mut Conn) -> Result<Caveat, Failure<mysql_async::Error>> {
        let read_only: Option<i64> = conn.query_first("SELECT @@read_only").await?;
        let galera: Option<String> = match conn.query_first("SELECT @@wsrep_on").await {
            Ok(on) => on,
            Err(mysql_async::Error::Server(_)) => None,
            Err(e) => return Err(e.into()),
        };
        let caveat = |setting: String, severity, advice: &str| Caveat {
            topic: "topology",
            setting,
            severity,
            advice: advice.to_owned(),
        };
        if read_only == Some(1) {
            return Ok(caveat(
                "read_only = ON: a replica".to_owned(),
                Severity::Danger,
                "generators cannot lease here (it takes no writes): point them at the server \
                 that does",
            ));
        }
        if matches!(galera.as_deref(), Some("1" | "ON")) {
            return Ok(caveat(
                "a Galera cluster member".to_owned(),
                Severity::Note,
                "moving to another member counts as a loss (another server): generators wait \
                 the TTL and the skew allowance, then lease again by themselves. Point every \
                 generator at one member at a time",
            ));
        }
        let visible = match conn.query::<Row, _>("SHOW ALL SLAVES STATUS").await {
            Ok(_) => true,
            Err(mysql_async::Error::Server(e)) if e.code == 1064 => {
                conn.query::<Row, _>("SHOW REPLICA STATUS").await.is_ok()
            }
            Err(mysql_async::Error::Server(_)) => false,
            Err(e) => return Err(e.into()),
        };
        if !visible {
            return Ok(caveat(
                "replication not visible to this user".to_owned(),
                Severity::Warning,
                "flakegen cannot see whether this server replicates from another that takes \
                 writes (two masters would each grant leases alone): grant the user REPLICA \
                 MONITOR (MariaDB) or REPLICATION CLIENT (MySQL), or make sure yourself that \
                 generators lease from one writable server only",
            ));
        }
        Ok(match self.upstream(conn).await? {
            Some(upstream) => match self.peer_read_only(&upstream).await {
                Ok(true) => caveat(
                    format!(
                        "takes writes, and replicates from {}:{}, which is read-only",
                        upstream.0, upstream.1
                    ),
                    Severity::Note,
                    "a switch to the other server is a detected loss (another server): \
                     generators wait the TTL and the skew allowance, then lease again by \
                     themselves. Keep the other server read-only while this one takes writes",
                ),
                Ok(false) => caveat(
                    format!(
                        "takes writes, and replicates from {}:{}, which takes writes too",
                        upstream.0, upstream.1
                    ),
                    Severity::Danger,
                    "two writable masters each grant leases alone, and two generators could \
                     share an id: generators are refused here. Point every generator at one \
                     side, and set read_only = ON on the other",
                ),
                Err(why) => caveat(
                    format!(
                        "takes writes, and replicates from {}:{}, which could not be asked ({why})",
                        upstream.0, upstream.1
                    ),
                    Severity::Danger,
                    "if it takes writes too, each side grants leases alone: generators are \
                     refused here until it can be asked. Let this URL's user connect to it, \
                     or stop replicating from it",
                ),
            },
            None => caveat(
                "takes writes, and replicates from no other server".to_owned(),
                Severity::Note,
                "a failover to a replica of this server is a detected loss (another server), \
                 whether it missed the last renewals or not: generators run to the fences \
                 this one confirmed, wait the TTL and the skew allowance, then lease again by \
                 themselves. Clients must follow the failover (an address that moves)",
            ),
        })
    }
}

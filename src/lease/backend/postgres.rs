//! Leases in one PostgreSQL table (feature `postgres`): storage steps only.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use tokio_postgres::config::SslMode;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::probe::Speaks;
use super::remote::{Connected, Failure, Remote};
use super::tls::{self, Verify};
use super::{
    Caveat, DEFAULT_TIMEOUT, Expect, Inspect, LeaseError, Listing, NewRecord, Record, Registry,
    Severity, Snapshot, Survey, Transport, Verified, signed,
};

/// Worker-id leases kept in a PostgreSQL table, `flakegen_leases`, with
/// its marker in a table beside it, `flakegen_marker`; both are created on
/// first use.
///
/// Each step is one statement, and expiry is judged by the server's clock
/// (`clock_timestamp()`). A [`swap`](Registry::swap) is an `UPDATE` (or an
/// `INSERT … ON CONFLICT DO NOTHING`) that matches the record's version and
/// holds the marker row with `FOR SHARE`, so it is a compare-and-set that a
/// loss cannot slip into. Every call, connecting included, finishes or
/// fails within [`DEFAULT_TIMEOUT`] on the client. A broken connection is
/// opened again on the next call. Leases need the primary: a connection
/// that finds a standby is refused ([`LeaseError::ReadOnly`]).
///
/// # What counts as a loss
///
/// The marker is one row of `flakegen_marker`: the moment the lease
/// table's data began, and a stamp of the history it vouches for, as the
/// server names it: the cluster's system identifier, its timeline, the
/// lease table's oid, and the token of the table's sentinel row (`worker`
/// -1, written with the table). Every statement compares the stamp with
/// the server's own, so a marker whose history changed is void at once,
/// and the next acquisition writes a new one (the server's clock, rounded
/// up, and later than the old one). Each of these changes the stamp, and is
/// a detected loss that costs the first TTL and skew after it a wait:
///
/// - a **failover**: a promoted standby starts a new timeline, whether it
///   missed the last renewals or not (a synchronous standby too: flakegen
///   cannot prove from the server that every renewal reached it, so it
///   pays the pause rather than trust it);
/// - a **restore** to a point in time (a new timeline), or into another
///   cluster (another system identifier), or a `pg_dump` restored (a new
///   table);
/// - `TRUNCATE`, or a `DELETE` of every row (the sentinel goes);
/// - a **dropped** and re-created table, whoever creates it (a new oid; the
///   marker row stays in its own table, so the new table is not taken for
///   a new install).
///
/// Not detected, so never done under running generators: deleting some
/// rows by hand, but not the sentinel; dropping both tables (the next start
/// is a new install); restoring a physical backup as a cluster that keeps
/// its timeline (start it with `recovery.signal`, which opens a new one).
/// After any of those, delete the marker row (`DELETE FROM
/// flakegen_marker`) before a generator starts.
///
/// A restart or a crash of the server is no loss when its commits are
/// durable. A server whose `synchronous_commit` is `off` would forget its
/// last commits in a crash (up to three times `wal_writer_delay`), renewals
/// their holders already used among them, and nothing in the table would
/// show it; so the registry's sessions set it to `local` (a session setting,
/// which a pooler in transaction mode does not keep). With `fsync = off` a
/// crash of the machine forgets them too: keep it on where generators
/// lease. [`Inspect::survey`] (`flakegen leases check`) reports both, and
/// the replication around the server.
///
/// A read finds what an acquisition chooses from through two partial
/// indexes (the free records by fence, the held ones by expiry) and a
/// cursor row per namespace (`worker` -2), from which it looks for the
/// lowest id with no record a slice of 256 ids at a time: its cost does not
/// grow with the id space or with the records kept.
///
/// For teams that run migrations themselves, the tables and indexes are
/// [`Self::DDL`], followed once by [`Self::NEW_TABLE_MARKER`]:
///
/// ```sql
#[doc = include_str!("postgres.sql")]
#[doc = include_str!("postgres_marker.sql")]
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

/// A connection, and whether it was made ready to lease on: the server
/// found to be a primary, and the tables there.
struct Session {
    client: Arc<Client>,
    /// The swaps, prepared once the connection is ready: a renewal is one
    /// round trip and no planning (a statement sent as text is parsed,
    /// described and planned every time: twice the renewal's cost).
    swaps: Option<Arc<Swaps>>,
}

/// The two swaps, prepared on one connection.
struct Swaps {
    /// At the record's version.
    update: Statement,
    /// Of a record that must not exist.
    insert: Statement,
}

/// The server's clock in ms, rounded down: expiry is judged no later than it is.
const NOW_MS: &str = "floor(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The server's clock in ms, rounded up: a marker is never earlier than the loss.
const CEIL_NOW_MS: &str = "ceil(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// What the marker vouches for, as the server names its history now: the
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
/// Writes the table's sentinel row where it is missing, with a token no
/// other table had: a table's data begins with it.
macro_rules! sentinel {
    () => {
        "INSERT INTO flakegen_leases (namespace, worker, holder, fence_ms) \
         VALUES ('', -1, md5(random()::text || clock_timestamp()::text), 0) ON CONFLICT DO NOTHING"
    };
}
const STAMP: &str = stamp!();

/// How many ids a read looks through, at most, for the fresh one. The
/// namespace's cursor row (`worker` -2: `fence_ms` the cursor, `marker_ms`
/// the marker it counts under) keeps how far earlier reads got: every id
/// below it has a record under that marker, so each id is looked at once
/// per marker. One slice is a range scan of the primary key and a set
/// difference, a fraction of a millisecond; a slice with no gap (more
/// acquisitions came between two reads than it holds) moves the cursor
/// past it, and says so (`Snapshot::more`).
const FRESH_SLICE: i64 = 256;

/// The server's clock, the marker in force, and the fresh id: the lowest
/// id at or past the namespace's cursor, within a slice, with no record
/// under the marker; the cursor moves there (or past the slice). `$1`
/// namespace, `$2` workers.
static FRESH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "WITH m AS (SELECT (SELECT marker_ms FROM flakegen_marker \
                            WHERE stamp = {STAMP}) AS marker), \
           slice AS (SELECT c.start, least(c.start + {FRESH_SLICE}, $2) AS stop FROM \
             (SELECT coalesce((SELECT l.fence_ms FROM flakegen_leases l, m \
               WHERE l.namespace = $1 AND l.worker = -2 AND l.marker_ms = m.marker), 0) \
               AS start) c), \
           gap AS (SELECT min(w) AS w FROM ( \
               SELECT g AS w FROM slice, generate_series(slice.start, slice.stop - 1) g \
               EXCEPT \
               SELECT l.worker FROM flakegen_leases l, slice, m \
               WHERE l.namespace = $1 AND l.worker >= slice.start AND l.worker < slice.stop \
                 AND l.marker_ms = m.marker) unrecorded), \
           fresh AS (SELECT coalesce(gap.w, slice.stop) AS w FROM gap, slice), \
           moved AS (INSERT INTO flakegen_leases (namespace, worker, marker_ms, fence_ms) \
             SELECT $1, -2, m.marker, fresh.w FROM m, fresh, slice \
             WHERE m.marker IS NOT NULL AND fresh.w > slice.start \
             ON CONFLICT (namespace, worker) DO UPDATE \
             SET fence_ms = excluded.fence_ms, marker_ms = excluded.marker_ms \
             WHERE flakegen_leases.marker_ms <> excluded.marker_ms \
                OR flakegen_leases.fence_ms < excluded.fence_ms) \
         SELECT {NOW_MS} AS now_ms, m.marker AS marker_ms, fresh.w AS fresh, \
                gap.w IS NULL AND slice.stop < $2 AS more \
         FROM m, fresh, gap, slice"
    )
});

/// The records an acquisition chooses from: the free one with the earliest
/// fence and a few expired ones under the marker (through the partial
/// indexes), the preferred id's and the fresh id's. `$1` namespace, `$2`
/// workers, `$3` marker (-1: none), `$4` the server's now, `$5` the
/// preferred id, `$6` the fresh id (-1: none).
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
       AND worker IN ($5, $6))";

/// The marker row at `$3` and in force, locked against a new marker while a
/// swap checks it (a `TRUNCATE` waits for the swap's lock on the table).
static MARKER_HELD: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT 1 FROM flakegen_marker WHERE marker_ms = $3 AND stamp = {STAMP} FOR SHARE")
});

/// A swap's new expiry: none for a free record (`$7` 0), else the server's
/// clock plus the TTL.
static EXPIRY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("CASE WHEN $7::bigint = 0 THEN 0 ELSE {NOW_MS} + $7::bigint END")
});

/// A swap at the record's version `$4`, under the marker `$3`.
static SWAP_UPDATE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "WITH marker AS ({held}) UPDATE flakegen_leases SET \
         holder = NULLIF($5::text, ''), version = $6, marker_ms = $3, \
         expires_ms = {set}, fence_ms = $8 \
         WHERE namespace = $1 AND worker = $2 AND version = $4 \
         AND EXISTS (SELECT 1 FROM marker) RETURNING {NOW_MS}",
        held = &*MARKER_HELD,
        set = &*EXPIRY,
    )
});

/// A swap that writes the record where none is (`$4` NULL), under the
/// marker `$3`.
static SWAP_INSERT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "WITH marker AS ({held}) INSERT INTO flakegen_leases \
         (namespace, worker, holder, version, marker_ms, expires_ms, fence_ms) \
         SELECT $1, $2, NULLIF($5::text, ''), $6, $3, {set}, $8 \
         WHERE EXISTS (SELECT 1 FROM marker) AND $4::bigint IS NULL \
         ON CONFLICT DO NOTHING RETURNING {NOW_MS}",
        held = &*MARKER_HELD,
        set = &*EXPIRY,
    )
});

/// The marker in force, if any.
static MARKER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("(SELECT marker_ms FROM flakegen_marker WHERE stamp = {STAMP})")
});

/// What each failure's message tells a user to check, in this registry's
/// own URL terms.
const TLS_FIX: &str = "check the CA file (sslrootcert=<file>; the system's CAs without one), \
     that the server's certificate names the host in the URL (or verify the CA alone: \
     sslmode=verify-ca), and that the server takes TLS";
const TLS_REQUIRED_FIX: &str = "add sslmode=verify-full (with sslrootcert=<CA file>) to the URL";
const CREDENTIALS_FIX: &str = "check the user name and password in the URL \
     (postgres://user:password@host:port/db; percent-encode special characters)";

impl PostgresRegistry {
    /// The tables the registry keeps leases and their marker in, created
    /// on first use.
    pub const DDL: &'static str = concat!(
        include_str!("postgres.sql"),
        include_str!("postgres_marker.sql")
    );

    /// Run once right after [`DDL`](Self::DDL) when creating the tables by
    /// hand: it records that the new table has lost nothing, so the first
    /// generators need not wait (see
    /// [A registry that loses its data](crate::lease#a-registry-that-loses-its-data)).
    /// It writes nothing where a marker row exists already: a table created
    /// again after a drop is not new, and its generators wait. Nor on a
    /// cluster past its first timeline: a standby since promoted may lack
    /// tables its old primary created and leased from just before the
    /// failover, and there the first generators wait too.
    pub const NEW_TABLE_MARKER: &'static str = concat!(
        sentinel!(),
        "; INSERT INTO flakegen_marker (marker_ms, stamp) SELECT 0, ",
        stamp!(),
        " WHERE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) = '00000001' \
         ON CONFLICT DO NOTHING"
    );

    /// A registry at `url` (`postgres://user:password@host:port/database`).
    /// Nothing is sent until the first call.
    ///
    /// TLS (rustls) as libpq takes it, in the URL's query: `sslmode=disable`
    /// (the default here, unlike libpq's), `require` (TLS, unverified; with
    /// a CA file, the chain is verified), `verify-ca` (the chain),
    /// `verify-full` (the chain and the host name); `sslrootcert=<PEM file>`
    /// names the CAs to trust, the system's otherwise. A managed database
    /// wants `?sslmode=verify-full&sslrootcert=/path/to/its-ca.pem`.
    /// `prefer` and `allow` (libpq's default, TLS if the server offers it)
    /// are refused: they fall back to plain text unseen, and leave the
    /// certificate unchecked.
    ///
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        let url = lowercase_scheme(url);
        // libpq's TLS parameters, some of which the client does not know.
        let (url, params) = tls::take_params(&url, &["sslmode", "sslrootcert"]);
        let param = |name| {
            params
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        let ca_file = param("sslrootcert").map(std::path::Path::new);
        let (ssl_mode, verify) = match param("sslmode").unwrap_or("disable") {
            "disable" => (SslMode::Disable, None),
            mode @ ("allow" | "prefer") => {
                return Err(LeaseError::InvalidUrl {
                    reason: format!(
                        "sslmode={mode} would fall back to plain text unseen, with the \
                         certificate unchecked: use sslmode=verify-full (with \
                         sslrootcert=<CA file>), or sslmode=disable"
                    ),
                });
            }
            // As libpq: with a CA file, `require` checks the chain.
            "require" if ca_file.is_some() => (SslMode::Require, Some(Verify::Chain)),
            "require" => (SslMode::Require, Some(Verify::Nothing)),
            "verify-ca" => (SslMode::Require, Some(Verify::Chain)),
            "verify-full" => (SslMode::Require, Some(Verify::Full)),
            other => {
                return Err(LeaseError::InvalidUrl {
                    reason: format!(
                        "sslmode={other} is none of disable, require, verify-ca, verify-full"
                    ),
                });
            }
        };
        let verified = match verify {
            None | Some(Verify::Nothing) => Verified::Nothing,
            Some(Verify::Chain) => Verified::Chain,
            Some(Verify::Full) => Verified::Full,
        };
        let tls = verify
            .map(|verify| tls::client_config(verify, ca_file))
            .transpose()
            .map_err(|reason| LeaseError::InvalidUrl { reason })?
            .map(MakeRustlsConnect::new);
        let mut config: Config = url.parse().map_err(|e| LeaseError::InvalidUrl {
            reason: format!("{e}"),
        })?;
        config.ssl_mode(ssl_mode);
        // The client takes any text for a host name, and reports one that
        // cannot be as a failed connection: say it here, for what it is.
        for host in config.get_hosts() {
            if let tokio_postgres::config::Host::Tcp(host) = host {
                let name = host.trim_start_matches('[').trim_end_matches(']');
                let fits = |c: char| c.is_ascii_alphanumeric() || "-._:".contains(c);
                if name.is_empty() || !name.chars().all(fits) {
                    return Err(LeaseError::InvalidUrl {
                        reason: format!(
                            "{host:?} is not a host name or an IP address \
                             (percent-encode special characters in the user name and password)"
                        ),
                    });
                }
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_TIMEOUT);
        }
        // The server gives up too, so a stuck statement frees its locks.
        let timeout_ms = DEFAULT_TIMEOUT.as_millis();
        let options = format!(
            "{} -c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}",
            config.get_options().unwrap_or("")
        );
        config.options(options.trim());
        config.application_name("flakegen-lease");
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
            #[cfg(unix)]
            Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => "localhost".to_owned(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        Ok(PostgresRegistry {
            config,
            tls,
            verified,
            remote: Remote::new(format!("{host}:{port}"), Speaks::Postgres)?,
        })
    }

    /// Runs `call` with a connection ready to lease on (the server a
    /// primary, the tables there), opening one first if need be.
    fn run<T, F>(&self, call: impl FnOnce(Arc<Client>) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: Future<Output = Result<T, Failure<tokio_postgres::Error>>> + Send,
    {
        self.session(true, |client, _| call(client))
    }

    /// [`run`](Self::run), with the connection's prepared swaps.
    fn run_swap<T, F>(
        &self,
        call: impl FnOnce(Arc<Client>, Arc<Swaps>) -> F + Send,
    ) -> Result<T, LeaseError>
    where
        T: Send,
        F: Future<Output = Result<T, Failure<tokio_postgres::Error>>> + Send,
    {
        self.session(true, |client, swaps| {
            call(client, swaps.expect("a ready session has its swaps"))
        })
    }

    /// Runs `call` with a connection as it is: for a look that writes
    /// nothing, on a primary or a standby.
    fn look<T, F>(&self, call: impl FnOnce(Arc<Client>) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: Future<Output = Result<T, Failure<tokio_postgres::Error>>> + Send,
    {
        self.session(false, |client, _| call(client))
    }

    fn session<T, F>(
        &self,
        ready: bool,
        call: impl FnOnce(Arc<Client>, Option<Arc<Swaps>>) -> F + Send,
    ) -> Result<T, LeaseError>
    where
        T: Send,
        F: Future<Output = Result<T, Failure<tokio_postgres::Error>>> + Send,
    {
        let (config, tls) = (&self.config, &self.tls);
        let open = || async move {
            let (client, driver) = match tls {
                Some(tls) => {
                    let (client, connection) = config.connect(tls.clone()).await?;
                    (
                        client,
                        Remote::<Session>::spawn(async move {
                            let _ = connection.await;
                        }),
                    )
                }
                None => {
                    let (client, connection) = config.connect(NoTls).await?;
                    (
                        client,
                        Remote::<Session>::spawn(async move {
                            let _ = connection.await;
                        }),
                    )
                }
            };
            // A renewal the server confirmed must outlive the server's
            // crash, whatever the server's default for other sessions.
            client.batch_execute(DURABLE_COMMITS).await?;
            Ok(Connected {
                client: Session {
                    client: Arc::new(client),
                    swaps: None,
                },
                driver: Some(driver),
            })
        };
        let address = &self.remote.address;
        let result = self.remote.run(open, |mut session| async move {
            if ready && session.swaps.is_none() {
                match prepare(&session.client, address).await {
                    Ok(swaps) => session.swaps = Some(Arc::new(swaps)),
                    Err(e) => return (session, Err(e)),
                }
            }
            let call = call(Arc::clone(&session.client), session.swaps.clone());
            (session, call.await)
        });
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }

    /// The client's error, said as a [`LeaseError`].
    fn error(&self, e: tokio_postgres::Error) -> LeaseError {
        let address = self.remote.address.clone();
        // The server's own words ("password authentication failed for user
        // ..."), not the client's "db error".
        let Some(db) = e.as_db_error() else {
            if let Some(reason) = tls::tls_failure(&e) {
                return LeaseError::Tls {
                    address,
                    reason,
                    fix: TLS_FIX,
                };
            }
            // No SQLSTATE: the connection itself failed.
            return LeaseError::Unreachable {
                address,
                source: Arc::new(e),
            };
        };
        let source = Arc::new(db.clone());
        let code = db.code();
        if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            && db.message().contains("no encryption")
        {
            // pg_hba.conf takes this role over TLS only.
            LeaseError::TlsRequired {
                address,
                source,
                fix: TLS_REQUIRED_FIX,
            }
        } else if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            LeaseError::Unauthorized {
                address,
                source,
                fix: CREDENTIALS_FIX,
            }
        } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
            LeaseError::Forbidden {
                address,
                registry: "PostgresRegistry",
                source,
            }
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            LeaseError::UnknownDatabase {
                address,
                database: self.config.get_dbname().unwrap_or("").to_owned(),
            }
        } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
            LeaseError::ReadOnly {
                address,
                role: format!("it said: {}", db.message()),
            }
        } else if *code == SqlState::CANNOT_CONNECT_NOW
            || *code == SqlState::ADMIN_SHUTDOWN
            || *code == SqlState::CRASH_SHUTDOWN
        {
            // Starting up or shutting down: it will answer, just not now.
            LeaseError::Unreachable { address, source }
        } else {
            LeaseError::Server { address, source }
        }
    }

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

/// Makes the session's commits wait for the server's own disk where the
/// server's default (`synchronous_commit = off`) would not. Any other value
/// already does, and a stronger one (waiting for replicas) is kept.
const DURABLE_COMMITS: &str = "SELECT set_config('synchronous_commit', 'local', false) \
     WHERE current_setting('synchronous_commit') = 'off'";

/// Makes a connection ready to lease on: the server must be the primary,
/// and the tables are created if they are missing. Tables created here
/// together, on a cluster's first timeline, are new, so their marker says
/// nothing was lost (see [`PostgresRegistry::NEW_TABLE_MARKER`]); a lease
/// table created where a marker row was left (it was dropped) is not, nor
/// is a lease table without a marker. Then prepares the swaps.
async fn prepare(client: &Client, address: &str) -> Result<Swaps, Failure<tokio_postgres::Error>> {
    create(client, address).await?;
    Ok(Swaps {
        update: client.prepare(&SWAP_UPDATE).await?,
        insert: client.prepare(&SWAP_INSERT).await?,
    })
}

/// [`prepare`]'s checks and tables.
async fn create(client: &Client, address: &str) -> Result<(), Failure<tokio_postgres::Error>> {
    let standby: bool = client
        .query_one("SELECT pg_is_in_recovery()", &[])
        .await?
        .get(0);
    if standby {
        // Its writes fail, and its timeline changes when it is promoted:
        // a session opened here is of no use to leasing.
        return Err(Failure::Lease(LeaseError::ReadOnly {
            address: address.to_owned(),
            role: "a standby, in recovery".to_owned(),
        }));
    }
    let present = "SELECT to_regclass('flakegen_leases') IS NOT NULL, \
                   to_regclass('flakegen_marker') IS NOT NULL";
    let row = client.query_one(present, &[]).await?;
    let (leases, marker): (bool, bool) = (row.get(0), row.get(1));
    if leases && marker {
        return Ok(());
    }
    client
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(1593)")
        .await?;
    let done = async {
        // Again, under the lock: another client may have created them.
        let row = client.query_one(present, &[]).await?;
        let (leases, marker): (bool, bool) = (row.get(0), row.get(1));
        if !leases {
            client.batch_execute(include_str!("postgres.sql")).await?;
            client.batch_execute(sentinel!()).await?;
        }
        if !marker {
            client
                .batch_execute(include_str!("postgres_marker.sql"))
                .await?;
        }
        if !leases && !marker {
            client
                .batch_execute(PostgresRegistry::NEW_TABLE_MARKER)
                .await?;
        }
        client.batch_execute("COMMIT").await
    };
    match done.await {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(e.into())
        }
    }
}

/// `url` with its scheme in lower case: schemes are case-insensitive
/// (RFC 3986), and not every client knows it.
fn lowercase_scheme(url: &str) -> std::borrow::Cow<'_, str> {
    match url.split_once("://") {
        Some((scheme, rest)) if scheme.bytes().any(|b| b.is_ascii_uppercase()) => {
            format!("{}://{rest}", scheme.to_ascii_lowercase()).into()
        }
        _ => url.into(),
    }
}

impl Registry for PostgresRegistry {
    fn read(
        &self,
        namespace: &str,
        workers: u64,
        prefer: Option<u64>,
    ) -> Result<Snapshot, LeaseError> {
        let workers = signed(workers);
        let prefer = prefer.map_or(-1, signed);
        self.run(|client| async move {
            let head = client.query_one(&*FRESH, &[&namespace, &workers]).await?;
            let marker: Option<i64> = head.try_get("marker_ms")?;
            let marker_unix_millis = match marker {
                Some(m) => {
                    Some(u64::try_from(m).map_err(|_| self.corrupt(format!("the marker is {m}")))?)
                }
                None => None,
            };
            let now: i64 = head.try_get("now_ms")?;
            let fresh: i64 = head.try_get("fresh")?;
            let fresh = (fresh < workers).then_some(fresh);
            let rows = client
                .query(
                    CANDIDATES,
                    &[
                        &namespace,
                        &workers,
                        &marker.unwrap_or(-1),
                        &now,
                        &prefer,
                        &fresh.unwrap_or(-1),
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
                fresh: fresh.map(|w| w.unsigned_abs()),
                more: head.try_get("more")?,
            })
        })
    }

    fn mark(&self, _namespace: &str) -> Result<u64, LeaseError> {
        // A marker of another history is replaced: never earlier than now,
        // nor than the one it replaces. One in force stays as it is.
        let write = format!(
            "WITH new AS (INSERT INTO flakegen_marker AS m (marker_ms, stamp) \
             VALUES ({CEIL_NOW_MS}, {STAMP}) ON CONFLICT (one) DO UPDATE \
             SET marker_ms = greatest(excluded.marker_ms, m.marker_ms + 1), stamp = excluded.stamp \
             WHERE m.stamp <> excluded.stamp RETURNING marker_ms) \
             SELECT marker_ms FROM new UNION ALL SELECT {} LIMIT 1",
            &*MARKER
        );
        self.run(|client| async move {
            // A table whose rows went (TRUNCATE) begins again with a sentinel.
            client.execute(sentinel!(), &[]).await?;
            let mut row = client.query_opt(&write, &[]).await?;
            if row
                .as_ref()
                .is_none_or(|r| r.get::<_, Option<i64>>(0).is_none())
            {
                // Another client wrote it after this statement's snapshot.
                row = Some(
                    client
                        .query_one(&format!("SELECT {}", &*MARKER), &[])
                        .await?,
                );
            }
            let marker: Option<i64> = row.and_then(|r| r.get(0));
            let marker =
                marker.ok_or_else(|| self.corrupt("no marker after writing one".into()))?;
            u64::try_from(marker).map_err(|_| self.corrupt(format!("the marker is {marker}")))
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
            let statement = match expect.version {
                Some(_) => &swaps.update,
                None => &swaps.insert,
            };
            let (ns, w, m, v, h, nv, ttl, f) = &params;
            let row = client
                .query_opt(statement, &[ns, w, m, v, h, nv, ttl, f])
                .await?;
            match row {
                Some(row) => {
                    let now: i64 = row.try_get(0)?;
                    Ok(Some(u64::try_from(now).unwrap_or(0)))
                }
                None => Ok(None),
            }
        })
    }

    fn inspect(&self) -> Option<&dyn Inspect> {
        Some(self)
    }
}

impl Inspect for PostgresRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        self.look(|client| async move {
            let head = client
                .query_one(
                    &format!(
                        "SELECT {NOW_MS} AS now_ms, \
                         to_regclass('flakegen_leases') IS NOT NULL AS leases, \
                         to_regclass('flakegen_marker') IS NOT NULL AS marker"
                    ),
                    &[],
                )
                .await?;
            if !head.try_get::<_, bool>("leases")? {
                return Err(Failure::Lease(LeaseError::NoLeases {
                    address: self.remote.address.clone(),
                }));
            }
            let now: i64 = head.try_get("now_ms")?;
            // Only once both tables are known to be there.
            let marker: Option<i64> = if head.try_get::<_, bool>("marker")? {
                client
                    .query_one(&format!("SELECT {}", &*MARKER), &[])
                    .await?
                    .try_get(0)?
            } else {
                None
            };
            let rows = client
                .query(
                    "SELECT worker, coalesce(holder, '') AS holder, version, marker_ms, \
                     expires_ms, fence_ms FROM flakegen_leases \
                     WHERE namespace = $1 AND worker >= 0 ORDER BY worker",
                    &[&namespace],
                )
                .await?;
            let mut records = Vec::with_capacity(rows.len());
            for row in &rows {
                records.push(self.record(row)?);
            }
            Ok(Listing {
                server_unix_millis: u64::try_from(now).unwrap_or(0),
                marker_unix_millis: marker
                    .map(|m| {
                        u64::try_from(m).map_err(|_| self.corrupt(format!("the marker is {m}")))
                    })
                    .transpose()?,
                records,
            })
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        self.look(|client| async move {
            let present: bool = client
                .query_one("SELECT to_regclass('flakegen_leases') IS NOT NULL", &[])
                .await?
                .get(0);
            if !present {
                return Err(Failure::Lease(LeaseError::NoLeases {
                    address: self.remote.address.clone(),
                }));
            }
            let rows = client
                .query(
                    "SELECT DISTINCT namespace FROM flakegen_leases WHERE worker >= 0 \
                     ORDER BY namespace",
                    &[],
                )
                .await?;
            rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
        })
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        let verified = self.verified;
        self.look(|client| async move {
            let row = client
                .query_one(
                    "SELECT coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), \
                     false), current_setting('fsync'), current_setting('synchronous_commit'), \
                     pg_is_in_recovery(), current_setting('synchronous_standby_names'), \
                     (SELECT count(*) FROM pg_stat_replication)",
                    &[],
                )
                .await?;
            let ssl: bool = row.try_get(0)?;
            let (fsync, commit): (String, String) = (row.try_get(1)?, row.try_get(2)?);
            let (standby, sync_names): (bool, String) = (row.try_get(3)?, row.try_get(4)?);
            let replicas: i64 = row.try_get(5)?;
            let transport = if ssl {
                Transport::Tls(verified)
            } else {
                Transport::Plain
            };
            let mut caveats = Vec::new();
            if commit == "off" {
                // The registry's sessions set it; a connection pooler that
                // does not keep session settings loses that.
                caveats.push(Caveat {
                    topic: "durability",
                    setting: "synchronous_commit = off".to_owned(),
                    severity: Severity::Danger,
                    advice: "the registry's session commits without waiting for the disk, \
                             so a crash of the server forgets the last renewals it confirmed \
                             and two holders could share an id: connect without a pooler \
                             that drops session settings, or set synchronous_commit = on \
                             for the role (ALTER ROLE ... SET synchronous_commit = on)"
                        .to_owned(),
                });
            }
            if fsync == "off" {
                caveats.push(Caveat {
                    topic: "durability",
                    setting: "fsync = off".to_owned(),
                    severity: Severity::Warning,
                    advice: "a crash of the server's machine forgets renewals it confirmed \
                             (and may corrupt the database), and two holders could share an \
                             id: set fsync = on where generators lease"
                        .to_owned(),
                });
            }
            if caveats.is_empty() {
                caveats.push(Caveat {
                    topic: "durability",
                    setting: format!("fsync = {fsync}, synchronous_commit = {commit}"),
                    severity: Severity::Note,
                    advice: "no server setting lets a crash forget a renewal the registry \
                             confirmed: every commit reaches the disk before it is confirmed"
                        .to_owned(),
                });
            }
            caveats.push(topology(standby, replicas, &sync_names));
            Ok(Survey::new(transport, caveats))
        })
    }
}

/// The server's place among its replicas, as leasing sees it.
fn topology(standby: bool, replicas: i64, sync_names: &str) -> Caveat {
    let (setting, severity, advice) = if standby {
        (
            "a standby, in recovery".to_owned(),
            Severity::Danger,
            "generators cannot lease here (it takes no writes): point them at the primary"
                .to_owned(),
        )
    } else if replicas == 0 {
        (
            "a primary with no standby streaming from it".to_owned(),
            Severity::Note,
            "a restore, or a standby promoted later, starts a new timeline: a detected loss, \
             after which generators wait the TTL and the skew allowance, then lease again by \
             themselves"
                .to_owned(),
        )
    } else {
        let kind = if sync_names.trim().is_empty() {
            "asynchronous"
        } else {
            "synchronous or asynchronous (synchronous_standby_names is set)"
        };
        (
            format!("a primary with {replicas} standby(s) streaming, {kind}"),
            Severity::Note,
            "a failover to a standby starts a new timeline: a detected loss, whether the \
             standby missed the last renewals or not. Generators run to the fences the old \
             primary confirmed, wait the TTL and the skew allowance, then lease again by \
             themselves; nothing is undetected. Clients must follow the failover (an address \
             that moves, or every host in the URL with target_session_attrs=read-write)"
                .to_owned(),
        )
    };
    Caveat {
        topic: "topology",
        setting,
        severity,
        advice,
    }
}

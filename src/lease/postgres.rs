//! Leases in one PostgreSQL table (feature `postgres`): storage steps only.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use tokio_postgres::config::SslMode;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls, Row};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::DEFAULT_TIMEOUT;
use super::backend::{
    Caveat, Crash, Expect, Listing, NewRecord, Record, Registry, Snapshot, signed,
};
use super::error::LeaseError;
use super::remote::{Connected, Failure, Remote};
use super::tls::{self, Verify};

/// Worker-id leases kept in a PostgreSQL table, `flakegen_leases`, which is
/// created on first use.
///
/// Each step is one statement, and expiry is judged by the server's clock
/// (`clock_timestamp()`). A [`swap`](Registry::swap) is an `UPDATE` (or an
/// `INSERT … ON CONFLICT DO NOTHING`) that matches the record's version and
/// holds the marker row with `FOR SHARE`, so it is a compare-and-set that a
/// `TRUNCATE` cannot slip into. Every call, connecting included, finishes or
/// fails within [`DEFAULT_TIMEOUT`] on the client. A broken connection is
/// opened again on the next call.
///
/// # What counts as a loss
///
/// The marker is the row `('', -1)`: when the table's data began. `TRUNCATE`
/// removes it with the rest, and the next acquisition writes a new one (the
/// server's clock, rounded up), so a truncated table is safe, at the price of
/// one TTL and skew of waiting. A table flakegen creates starts at 0:
/// nothing can have been lost. Not detected, so never done under running
/// generators: deleting some rows but not the marker, dropping the table
/// (the new one starts at 0), or restoring it from a backup. After any of
/// those, delete the marker row (`DELETE FROM flakegen_leases WHERE worker = -1`)
/// before a generator starts.
///
/// A restart or a crash of the server is no loss when its commits are
/// durable. A server whose `synchronous_commit` is `off` would forget its
/// last commits in a crash (up to three times `wal_writer_delay`), renewals
/// their holders already used among them, and nothing in the table would
/// show it; so the registry's sessions set it to `local` (a session setting,
/// which a pooler in transaction mode does not keep). With `fsync = off` a
/// crash of the machine forgets them too: keep it on where generators
/// lease. [`Registry::caveats`] (`flakegen leases check`) reports both.
///
/// A read finds what an acquisition chooses from through two partial
/// indexes (the free records by fence, the held ones by expiry) and a
/// cursor row per namespace (`worker` -2), from which it looks for the
/// lowest id with no record a slice of 256 ids at a time: its cost does not
/// grow with the id space or with the records kept. An older flakegen's
/// table gets the indexes on first use (the role then needs the right to
/// create them, once).
///
/// For teams that run migrations themselves, the table and its indexes are
/// [`Self::DDL`], followed once by [`Self::NEW_TABLE_MARKER`]:
///
/// ```sql
#[doc = include_str!("postgres.sql")]
/// INSERT INTO flakegen_leases (namespace, worker, fence_ms) VALUES ('', -1, 0)
///     ON CONFLICT DO NOTHING;
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
    remote: Remote<Arc<Client>>,
}

/// The server's clock in ms, rounded down: expiry is judged no later than it is.
const NOW_MS: &str = "floor(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The server's clock in ms, rounded up: a marker is never earlier than the loss.
const CEIL_NOW_MS: &str = "ceil(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// How many ids a read looks through, at most, for the fresh one. The
/// namespace's cursor row (`worker` -2: `fence_ms` the cursor, `marker_ms`
/// the marker it counts under) keeps how far earlier reads got: every id
/// below it has a record under that marker, so each id is looked at once
/// per marker. One slice is a range scan of the primary key and a set
/// difference, a fraction of a millisecond; an older flakegen's records,
/// which moved no cursor, are passed a slice per read (`Snapshot::more`).
const FRESH_SLICE: i64 = 256;

/// The server's clock, the marker, and the fresh id: the lowest id at or
/// past the namespace's cursor, within a slice, with no record under the
/// marker; the cursor moves there (or past the slice). `$1` namespace, `$2`
/// workers.
static FRESH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "WITH m AS (SELECT (SELECT fence_ms FROM flakegen_leases \
                            WHERE namespace = '' AND worker = -1) AS marker), \
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

/// The marker row, locked against a concurrent delete while a swap checks it.
const MARKER_HELD: &str = "SELECT 1 FROM flakegen_leases \
     WHERE namespace = '' AND worker = -1 AND fence_ms = $3 FOR SHARE";

impl PostgresRegistry {
    /// The table the registry keeps leases in, created on first use.
    pub const DDL: &'static str = include_str!("postgres.sql");

    /// Run once right after [`DDL`](Self::DDL) when creating the table by
    /// hand: it records that the new table has lost nothing, so the first
    /// generators need not wait (see
    /// [A registry that loses its data](super#a-registry-that-loses-its-data)).
    /// Never run it on a table that had rows.
    pub const NEW_TABLE_MARKER: &'static str = "INSERT INTO flakegen_leases (namespace, worker, fence_ms) VALUES ('', -1, 0) \
         ON CONFLICT DO NOTHING";

    /// A registry at `url` (`postgres://user:password@host:port/database`).
    /// Nothing is sent until the first call.
    ///
    /// TLS (rustls) as libpq takes it, in the URL's query: `sslmode=disable`,
    /// `allow` or `prefer` (the default: TLS if the server offers it,
    /// unverified), `require` (TLS, unverified; with a CA file, the chain is
    /// verified), `verify-ca` (the chain), `verify-full` (the chain and the
    /// host name); `sslrootcert=<PEM file>` names the CAs to trust, the
    /// system's otherwise. A managed database wants
    /// `?sslmode=verify-full&sslrootcert=/path/to/its-ca.pem`.
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
        let (ssl_mode, verify) = match param("sslmode").unwrap_or("prefer") {
            "disable" => (SslMode::Disable, None),
            "allow" | "prefer" => (SslMode::Prefer, Some(Verify::Nothing)),
            // As libpq: with a CA file, `require` checks the chain.
            "require" if ca_file.is_some() => (SslMode::Require, Some(Verify::Chain)),
            "require" => (SslMode::Require, Some(Verify::Nothing)),
            "verify-ca" => (SslMode::Require, Some(Verify::Chain)),
            "verify-full" => (SslMode::Require, Some(Verify::Full)),
            other => {
                return Err(LeaseError::InvalidUrl {
                    reason: format!(
                        "sslmode={other} is none of disable, allow, prefer, require, \
                         verify-ca, verify-full"
                    ),
                });
            }
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
            remote: Remote::new(format!("{host}:{port}"))?,
        })
    }

    /// Runs `call` with a connection, opening one (and creating the table)
    /// first if need be.
    fn run<T, F>(&self, call: impl FnOnce(Arc<Client>) -> F + Send) -> Result<T, LeaseError>
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
                        Remote::<Arc<Client>>::spawn(async move {
                            let _ = connection.await;
                        }),
                    )
                }
                None => {
                    let (client, connection) = config.connect(NoTls).await?;
                    (
                        client,
                        Remote::<Arc<Client>>::spawn(async move {
                            let _ = connection.await;
                        }),
                    )
                }
            };
            // A renewal the server confirmed must outlive the server's
            // crash, whatever the server's default for other sessions.
            client.batch_execute(DURABLE_COMMITS).await?;
            create_table(&client).await?;
            Ok(Connected {
                client: Arc::new(client),
                driver: Some(driver),
            })
        };
        let result = self.remote.run(open, |client| {
            let call = call(Arc::clone(&client));
            async move { (client, call.await) }
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
                return LeaseError::Tls { address, reason };
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
            LeaseError::TlsRequired { address, source }
        } else if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            LeaseError::Unauthorized { address, source }
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

/// Creates the table if it is missing, and adds the columns an older
/// flakegen's table lacks. A table created here is new, so its marker says
/// nothing was lost; a table that exists without a marker lost its rows, and
/// the next acquisition marks the moment.
async fn create_table(client: &Client) -> Result<(), tokio_postgres::Error> {
    client
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(1593)")
        .await?;
    let done = async {
        let existed: bool = client
            .query_one("SELECT to_regclass('flakegen_leases') IS NOT NULL", &[])
            .await?
            .get(0);
        if !existed {
            client.batch_execute(PostgresRegistry::DDL).await?;
            client
                .batch_execute(PostgresRegistry::NEW_TABLE_MARKER)
                .await?;
        } else {
            // A table an older flakegen created lacks the indexes reads use.
            let indexed: bool = client
                .query_one(
                    "SELECT to_regclass('flakegen_leases_free') IS NOT NULL \
                     AND to_regclass('flakegen_leases_held') IS NOT NULL",
                    &[],
                )
                .await?
                .get(0);
            if !indexed {
                client.batch_execute(PostgresRegistry::DDL).await?;
            }
            let missing: i64 = client
                .query_one(
                    "SELECT 2 - count(*) FROM information_schema.columns \
                     WHERE table_name = 'flakegen_leases' AND column_name IN ('version', 'marker_ms') \
                     AND table_schema = current_schema()",
                    &[],
                )
                .await?
                .get(0);
            if missing > 0 {
                client
                    .batch_execute(
                        "ALTER TABLE flakegen_leases \
                         ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 0, \
                         ADD COLUMN IF NOT EXISTS marker_ms bigint NOT NULL DEFAULT 0",
                    )
                    .await?;
            }
        }
        client.batch_execute("COMMIT").await
    };
    match done.await {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(e)
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

    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        self.run(|client| async move {
            let head = client
                .query_one(
                    &format!(
                        "SELECT {NOW_MS} AS now_ms, (SELECT fence_ms FROM flakegen_leases \
                         WHERE namespace = '' AND worker = -1) AS marker_ms"
                    ),
                    &[],
                )
                .await?;
            let now: i64 = head.try_get("now_ms")?;
            let marker: Option<i64> = head.try_get("marker_ms")?;
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

    fn caveats(&self) -> Result<Vec<Caveat>, LeaseError> {
        self.run(|client| async move {
            let row = client
                .query_one(
                    "SELECT current_setting('fsync'), current_setting('synchronous_commit')",
                    &[],
                )
                .await?;
            let (fsync, commit): (String, String) = (row.try_get(0)?, row.try_get(1)?);
            let mut caveats = Vec::new();
            if commit == "off" {
                // The registry's sessions set it; a connection pooler that
                // does not keep session settings loses that.
                caveats.push(Caveat {
                    setting: "synchronous_commit = off".to_owned(),
                    crash: Crash::Server,
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
                    setting: "fsync = off".to_owned(),
                    crash: Crash::Machine,
                    advice: "a crash of the server's machine forgets renewals it confirmed \
                             (and may corrupt the database), and two holders could share an \
                             id: set fsync = on where generators lease"
                        .to_owned(),
                });
            }
            Ok(caveats)
        })
    }

    fn mark(&self, _namespace: &str) -> Result<u64, LeaseError> {
        self.run(|client| async move {
            let row = client
                .query_one(
                    &format!(
                        "WITH new AS (INSERT INTO flakegen_leases (namespace, worker, fence_ms) \
                         VALUES ('', -1, {CEIL_NOW_MS}) ON CONFLICT DO NOTHING RETURNING fence_ms) \
                         SELECT fence_ms FROM new UNION ALL SELECT fence_ms FROM flakegen_leases \
                         WHERE namespace = '' AND worker = -1 LIMIT 1"
                    ),
                    &[],
                )
                .await?;
            let marker: i64 = row.try_get(0)?;
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
        let set = format!("CASE WHEN $7::bigint = 0 THEN 0 ELSE {NOW_MS} + $7::bigint END");
        let sql = match expect.version {
            Some(_) => format!(
                "WITH marker AS ({MARKER_HELD}) UPDATE flakegen_leases SET \
                 holder = NULLIF($5::text, ''), version = $6, marker_ms = $3, \
                 expires_ms = {set}, fence_ms = $8 \
                 WHERE namespace = $1 AND worker = $2 AND version = $4 \
                 AND EXISTS (SELECT 1 FROM marker) RETURNING {NOW_MS}"
            ),
            None => format!(
                "WITH marker AS ({MARKER_HELD}) INSERT INTO flakegen_leases \
                 (namespace, worker, holder, version, marker_ms, expires_ms, fence_ms) \
                 SELECT $1, $2, NULLIF($5::text, ''), $6, $3, {set}, $8 \
                 WHERE EXISTS (SELECT 1 FROM marker) AND $4::bigint IS NULL \
                 ON CONFLICT DO NOTHING RETURNING {NOW_MS}"
            ),
        };
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
        self.run(|client| async move {
            let (ns, w, m, v, h, nv, ttl, f) = &params;
            let row = client
                .query_opt(&sql, &[ns, w, m, v, h, nv, ttl, f])
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
}

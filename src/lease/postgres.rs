//! Leases in one PostgreSQL table (feature `postgres`).

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, NoTls};

use super::{AcquireRequest, DEFAULT_TIMEOUT, Grant, LeaseError, LeaseKey, Record, Registry};

/// Worker-id leases kept in a PostgreSQL table, `flakegen_leases`, which is
/// created on first use.
///
/// Each call is one transaction, and expiry is judged by the server's clock
/// (`clock_timestamp()`). Acquisitions in one namespace take a transaction
/// advisory lock, so they run one at a time, and lock the rows they read, so
/// a renewal cannot slip in between. A broken connection is opened again on
/// the next call.
///
/// Connecting may take [`DEFAULT_TIMEOUT`] (or the URL's `connect_timeout`),
/// and so may each statement (`statement_timeout`). A server that goes away
/// closes the connection, and the call then fails at once.
///
/// For teams that run migrations themselves, the table is [`Self::DDL`],
/// followed once by [`Self::NEW_TABLE_MARKER`]:
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
/// use flakegen::{Builder, IdGenerator, lease::PostgresRegistry};
///
/// let registry = PostgresRegistry::new("postgres://app:secret@127.0.0.1:5432/app")?;
/// let generator = Builder::new().lease(registry, "orders").build_atomic()?;
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct PostgresRegistry {
    config: postgres::Config,
    /// `host:port`, for messages: never the password.
    address: String,
    client: Mutex<Option<Client>>,
}

/// The server's clock, in ms since 1970.
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The marker row (namespace `''`, worker -1): when the table's data began,
/// 0 for a table created empty by flakegen (nothing can have been lost).
const MARKER: &str = "('', -1)";

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
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        let mut config: postgres::Config = url.parse().map_err(|e| LeaseError::InvalidUrl {
            reason: format!("{e}"),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_TIMEOUT);
        }
        let timeout_ms = DEFAULT_TIMEOUT.as_millis();
        let options = format!(
            "{} -c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}",
            config.get_options().unwrap_or("")
        );
        config.options(options.trim());
        config.application_name("flakegen-lease");
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(host)) => host.clone(),
            #[cfg(unix)]
            Some(postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => "localhost".to_owned(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        Ok(PostgresRegistry {
            config,
            address: format!("{host}:{port}"),
            client: Mutex::new(None),
        })
    }

    /// Runs `f` on a connection, opening one (and creating the table) first
    /// if need be; drops a connection that broke.
    fn with_client<T>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, Failure>,
    ) -> Result<T, LeaseError> {
        let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        let client = match slot.take() {
            Some(client) if !client.is_closed() => slot.insert(client),
            _ => {
                let mut client = self.config.connect(NoTls).map_err(|e| self.error(e))?;
                create_table(&mut client).map_err(|e| self.error(e))?;
                slot.insert(client)
            }
        };
        let result = f(client);
        if client.is_closed() {
            *slot = None;
        }
        result.map_err(|failure| match failure {
            Failure::Postgres(e) => self.error(e),
            Failure::Lease(e) => e,
            Failure::Corrupt(detail) => LeaseError::Corrupt {
                address: self.address.clone(),
                detail,
            },
        })
    }

    fn error(&self, e: postgres::Error) -> LeaseError {
        let address = self.address.clone();
        // The server's own words ("password authentication failed for user
        // ..."), not the client's "db error".
        let Some(db) = e.as_db_error() else {
            // No SQLSTATE: the connection itself failed.
            return LeaseError::Unreachable {
                address,
                source: Box::new(e),
            };
        };
        let source = Box::new(db.clone());
        let code = db.code();
        if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            LeaseError::Unauthorized { address, source }
        } else {
            LeaseError::Server { address, source }
        }
    }
}

impl fmt::Debug for PostgresRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresRegistry")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// Why a call failed, before it is told as a [`LeaseError`].
enum Failure {
    Postgres(postgres::Error),
    Lease(LeaseError),
    Corrupt(String),
}

impl From<postgres::Error> for Failure {
    fn from(e: postgres::Error) -> Self {
        Failure::Postgres(e)
    }
}

/// Creates the table if it is missing. A table created here is new, so its
/// marker says nothing was lost; a table that exists without a marker lost
/// its rows, and the next acquisition marks the moment.
fn create_table(client: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock(1593)", &[])?;
    let existed: bool = tx
        .query_one("SELECT to_regclass('flakegen_leases') IS NOT NULL", &[])?
        .get(0);
    if !existed {
        tx.batch_execute(PostgresRegistry::DDL)?;
        tx.batch_execute(PostgresRegistry::NEW_TABLE_MARKER)?;
    }
    tx.commit()
}

/// A column that must hold a time in ms (or a count) since 1970.
fn millis(value: i64, what: &str, worker: i64) -> Result<u64, Failure> {
    u64::try_from(value)
        .map_err(|_| Failure::Corrupt(format!("worker {worker}'s {what} is {value}")))
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Serialises acquisitions (and re-creations after a loss) in one namespace.
fn lock_namespace(
    tx: &mut postgres::Transaction<'_>,
    namespace: &str,
) -> Result<(), postgres::Error> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 1593))",
        &[&namespace],
    )?;
    Ok(())
}

impl Registry for PostgresRegistry {
    fn acquire(&self, request: &AcquireRequest<'_>) -> Result<Grant, LeaseError> {
        super::check_namespace(request.namespace)?;
        let namespace = request.namespace;
        self.with_client(|client| {
            let mut tx = client.transaction()?;
            lock_namespace(&mut tx, namespace)?;
            // The marker: if the table lost its rows, now is when it was
            // first used again.
            tx.execute(
                &format!(
                    "INSERT INTO flakegen_leases (namespace, worker, fence_ms) \
                     VALUES {MARKER_VALUES} ON CONFLICT DO NOTHING",
                    MARKER_VALUES = format_args!("('', -1, {NOW_MS})")
                ),
                &[],
            )?;
            let marker_row = tx.query_one(
                &format!(
                    "SELECT fence_ms FROM flakegen_leases WHERE (namespace, worker) = {MARKER}"
                ),
                &[],
            )?;
            let marker = millis(marker_row.try_get(0)?, "marker", -1)?;
            let rows = tx.query(
                &format!(
                    "SELECT worker, holder, expires_ms, fence_ms, {NOW_MS} AS now_ms \
                     FROM flakegen_leases WHERE namespace = $1 AND worker < $2 \
                     ORDER BY worker FOR UPDATE"
                ),
                &[&namespace, &to_i64(request.workers)],
            )?;
            let mut records = std::collections::HashMap::new();
            for row in &rows {
                let worker: i64 = row.try_get("worker")?;
                let holder: Option<String> = row.try_get("holder")?;
                let expires = millis(row.try_get("expires_ms")?, "expiry", worker)?;
                let fence = millis(row.try_get("fence_ms")?, "fence", worker)?;
                let now = millis(row.try_get("now_ms")?, "clock", worker)?;
                if let Ok(worker) = u64::try_from(worker) {
                    let held = holder.is_some_and(|h| !h.is_empty()) && expires > now;
                    records.insert(
                        worker,
                        Record {
                            held,
                            fence_unix_ms: fence,
                        },
                    );
                } else {
                    return Err(Failure::Corrupt(format!("a row has worker id {worker}")));
                }
            }
            let unknown = super::unknown_fence(marker, request);
            let grant =
                super::choose(request, unknown, |w| records.get(&w).copied()).map_err(|held| {
                    Failure::Lease(LeaseError::AllHeld {
                        namespace: namespace.to_owned(),
                        held,
                    })
                })?;
            let ttl_ms = to_i64(u64::try_from(request.ttl.as_millis()).unwrap_or(u64::MAX));
            tx.execute(
                &format!(
                    "INSERT INTO flakegen_leases (namespace, worker, holder, expires_ms, fence_ms) \
                     VALUES ($1, $2, $3, {NOW_MS} + $4, $5) \
                     ON CONFLICT (namespace, worker) DO UPDATE SET holder = excluded.holder, \
                     expires_ms = excluded.expires_ms, fence_ms = excluded.fence_ms"
                ),
                &[
                    &namespace,
                    &to_i64(grant.worker),
                    &request.holder,
                    &ttl_ms,
                    &to_i64(grant.fence_unix_ms),
                ],
            )?;
            tx.commit()?;
            Ok(grant)
        })
    }

    fn renew(
        &self,
        lease: &LeaseKey<'_>,
        fence_unix_ms: u64,
        ttl: Duration,
    ) -> Result<u64, LeaseError> {
        let ttl_ms = to_i64(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let (namespace, worker, fence) =
            (lease.namespace, to_i64(lease.worker), to_i64(fence_unix_ms));
        self.with_client(|client| {
            let renewed = client.query_opt(
                &format!(
                    "UPDATE flakegen_leases SET expires_ms = {NOW_MS} + $4, \
                     fence_ms = GREATEST(fence_ms, $5) \
                     WHERE namespace = $1 AND worker = $2 AND holder = $3 RETURNING fence_ms"
                ),
                &[&namespace, &worker, &lease.holder, &ttl_ms, &fence],
            )?;
            if let Some(row) = renewed {
                return millis(row.try_get(0)?, "fence", worker);
            }
            // No row of ours. If there is no row at all, the table lost it,
            // and nobody has taken the id since (that would have written a
            // row): it is still ours, so write it again.
            let mut tx = client.transaction()?;
            lock_namespace(&mut tx, namespace)?;
            let recreated = tx.query_opt(
                &format!(
                    "INSERT INTO flakegen_leases (namespace, worker, holder, expires_ms, fence_ms) \
                     VALUES ($1, $2, $3, {NOW_MS} + $4, $5) ON CONFLICT DO NOTHING RETURNING fence_ms"
                ),
                &[&namespace, &worker, &lease.holder, &ttl_ms, &fence],
            )?;
            tx.commit()?;
            match recreated {
                Some(row) => millis(row.try_get(0)?, "fence", worker),
                None => Err(Failure::Lease(LeaseError::Lost {
                    namespace: namespace.to_owned(),
                    worker: lease.worker,
                })),
            }
        })
    }

    fn release(&self, lease: &LeaseKey<'_>, fence_unix_ms: u64) -> Result<(), LeaseError> {
        self.with_client(|client| {
            client.execute(
                "UPDATE flakegen_leases SET holder = NULL, expires_ms = 0, \
                 fence_ms = LEAST(fence_ms, $4) \
                 WHERE namespace = $1 AND worker = $2 AND holder = $3",
                &[
                    &lease.namespace,
                    &to_i64(lease.worker),
                    &lease.holder,
                    &to_i64(fence_unix_ms),
                ],
            )?;
            Ok(())
        })
    }
}

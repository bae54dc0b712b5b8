//! The connection a PostgreSQL registry leases on: opened, checked to be
//! the primary's, its tables created and its swaps prepared, once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use tokio_postgres::{Client, NoTls, Statement};

use super::super::remote::{Connected, Failure, Remote};
use super::PostgresRegistry;
use super::statements::{CANDIDATES, HEAD, SENTINEL, SWAP_ADOPT, SWAP_INSERT, SWAP_UPDATE};
use crate::lease::backend::LeaseError;

/// A connection, and whether it was made ready to lease on: the server
/// found to be a primary, and the tables there.
pub(super) struct Session {
    client: Arc<Client>,
    /// The storage steps' statements, prepared once the connection is
    /// ready: a renewal, and each of a read's two queries, is one round
    /// trip and no planning (a statement sent as text is parsed, described
    /// and planned every time: twice the cost).
    swaps: Option<Arc<Swaps>>,
}

/// The storage steps' statements, prepared on one connection.
pub(super) struct Swaps {
    /// A read's clock, marker and high-water mark.
    pub(super) head: Statement,
    /// A read's records.
    pub(super) candidates: Statement,
    /// At the record's version, under the marker it was written under.
    pub(super) update: Statement,
    /// At the record's version, written under another marker.
    pub(super) adopt: Statement,
    /// Of a record that must not exist.
    pub(super) insert: Statement,
}

impl PostgresRegistry {
    /// Runs `call` with a connection ready to lease on (the server a
    /// primary, the tables there), opening one first if need be.
    pub(super) fn run<T, F>(
        &self,
        call: impl FnOnce(Arc<Client>) -> F + Send,
    ) -> Result<T, LeaseError>
    where
        T: Send,
        F: Future<Output = Result<T, Failure<tokio_postgres::Error>>> + Send,
    {
        self.session(true, |client, _| call(client))
    }

    /// [`run`](Self::run), with the connection's prepared swaps.
    pub(super) fn run_swap<T, F>(
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
    #[cfg(feature = "inspect")]
    pub(super) fn look<T, F>(
        &self,
        call: impl FnOnce(Arc<Client>) -> F + Send,
    ) -> Result<T, LeaseError>
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
}

/// Makes the session's commits wait for the server's own disk where the
/// server's default (`synchronous_commit = off`) would not. Any other value
/// already does, and a stronger one (waiting for replicas) is kept.
const DURABLE_COMMITS: &str = "SELECT set_config('synchronous_commit', 'local', false) \
     WHERE current_setting('synchronous_commit') = 'off'";

/// Makes a connection ready to lease on: the server must be the primary,
/// and the tables are created if they are missing (they say nothing of any
/// namespace: each is marked on its first use). Then prepares the swaps.
async fn prepare(client: &Client, address: &str) -> Result<Swaps, Failure<tokio_postgres::Error>> {
    create(client, address).await?;
    // Prepared together: the client pipelines them, one round trip for all.
    let statements = all([
        &*HEAD,
        CANDIDATES,
        &*SWAP_UPDATE,
        &*SWAP_ADOPT,
        &*SWAP_INSERT,
    ]
    .map(|sql| -> Pin<Box<dyn Future<Output = _> + Send + '_>> { Box::pin(client.prepare(sql)) }))
    .await;
    let mut prepared = Vec::with_capacity(statements.len());
    for statement in statements {
        prepared.push(statement?);
    }
    let [head, candidates, update, adopt, insert]: [Statement; 5] = prepared
        .try_into()
        .unwrap_or_else(|_| unreachable!("five statements prepared"));
    Ok(Swaps {
        head,
        candidates,
        update,
        adopt,
        insert,
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
    let present = "SELECT to_regclass('flakegen_leases') IS NOT NULL \
                   AND to_regclass('flakegen_namespaces') IS NOT NULL";
    if client.query_one(present, &[]).await?.get::<_, bool>(0) {
        return Ok(());
    }
    client
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(1593)")
        .await?;
    let done = async {
        // Again, under the lock: another client may have created them.
        if !client.query_one(present, &[]).await?.get::<_, bool>(0) {
            client.batch_execute(PostgresRegistry::DDL).await?;
            client.batch_execute(SENTINEL).await?;
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

/// Every future of `futures` polled together until each is done: their
/// requests go out at once, so a client that pipelines sends them in one
/// round trip. Their outputs, in order.
async fn all<T, const N: usize>(
    mut futures: [Pin<Box<dyn Future<Output = T> + Send + '_>>; N],
) -> Vec<T> {
    let mut done: Vec<Option<T>> = (0..N).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(done.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

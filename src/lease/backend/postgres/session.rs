//! The connection a PostgreSQL registry leases on: opened, checked to be
//! the primary's, its tables created and its swaps prepared, once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Statement};

use super::super::client::remote::{Connected, Failure, Remote};
use super::PostgresRegistry;
use super::statements::{READ, SENTINEL, SWAP_ADOPT, SWAP_INSERT, SWAP_UPDATE};
use crate::lease::backend::LeaseError;

/// A connection, and whether it was made ready to lease on: the server
/// found to be a primary, and the tables there.
pub(super) struct Session {
    client: Arc<Client>,
    /// The storage steps' statements, prepared once the connection is
    /// ready: a renewal, and a read, is one round trip and no planning (a
    /// statement sent as text is parsed, described and planned every time:
    /// twice the cost).
    swaps: Option<Arc<Swaps>>,
    /// Whether its commits were made durable ([`durable!`]): with the
    /// swaps, or by a look.
    durable: bool,
}

/// The storage steps' statements, prepared on one connection.
pub(super) struct Swaps {
    /// A read: the clock, the marker, the high-water mark and the records.
    pub(super) read: Statement,
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
            Ok(Connected {
                client: Session {
                    client: Arc::new(client),
                    swaps: None,
                    durable: false,
                },
                driver: Some(driver),
            })
        };
        let address = &self.remote.address;
        let result = self.remote.run(open, |mut session| async move {
            if ready && session.swaps.is_none() {
                match prepare(&session.client, address).await {
                    Ok(swaps) => {
                        session.swaps = Some(Arc::new(swaps));
                        session.durable = true;
                    }
                    Err(e) => return (session, Err(e)),
                }
            }
            if !session.durable {
                match session.client.batch_execute(DURABLE).await {
                    Ok(()) => session.durable = true,
                    Err(e) => return (session, Err(e.into())),
                }
            }
            let call = call(Arc::clone(&session.client), session.swaps.clone());
            (session, call.await)
        });
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }
}

/// Makes the session's commits wait for the server's own disk where the
/// server's default (`synchronous_commit = off`) would not, since a renewal
/// the server confirmed must outlive its crash; any other value already
/// does, and a stronger one (waiting for replicas) is kept.
macro_rules! durable {
    () => {
        "(SELECT set_config('synchronous_commit', 'local', false) \
          WHERE current_setting('synchronous_commit') = 'off')"
    };
}

/// [`durable!`] alone: for a session that only looks, so that what it
/// reports of the commits is what a leasing session's are.
const DURABLE: &str = concat!("SELECT ", durable!());

/// A new session's checks, in one query: whether the server is a standby
/// (in recovery); and [`durable!`].
const CHECKS: &str = concat!(
    "SELECT pg_is_in_recovery() AS standby, ",
    durable!(),
    " AS durable"
);

/// Makes a connection ready to lease on: the server must be the primary,
/// and the tables are created if they are missing (they say nothing of any
/// namespace: each is marked on its first use). Then prepares the swaps.
///
/// One round trip where the tables are there, as they are but the first
/// time: the checks and the statements go out together, pipelined.
async fn prepare(client: &Client, address: &str) -> Result<Swaps, Failure<tokio_postgres::Error>> {
    let (checks, swaps) = both(client.query_one(CHECKS, &[]), prepare_swaps(client)).await;
    let checks = checks?;
    if checks.try_get::<_, bool>("standby")? {
        // Its writes fail, and its timeline changes when it is promoted:
        // a session opened here is of no use to leasing.
        return Err(Failure::Lease(LeaseError::ReadOnly {
            address: address.to_owned(),
            role: "a standby, in recovery".to_owned(),
        }));
    }
    // Whether the tables are there is what preparing the statements, which
    // name both, found. A check beside them could say otherwise: the client
    // prepares a query's statement first and runs it a round trip later,
    // after the statements were prepared, and tables another client created
    // in between were there for the check and not for them.
    match swaps {
        Ok(swaps) => return Ok(swaps),
        Err(Failure::Client(e)) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {}
        Err(e) => return Err(e),
    }
    create(client).await?;
    prepare_swaps(client).await
}

/// The storage steps' statements, prepared together: the client pipelines
/// them, one round trip for all.
async fn prepare_swaps(client: &Client) -> Result<Swaps, Failure<tokio_postgres::Error>> {
    let statements = all([&*READ, &*SWAP_UPDATE, &*SWAP_ADOPT, &*SWAP_INSERT].map(
        |sql| -> Pin<Box<dyn Future<Output = _> + Send + '_>> { Box::pin(client.prepare(sql)) },
    ))
    .await;
    let mut prepared = Vec::with_capacity(statements.len());
    for statement in statements {
        prepared.push(statement?);
    }
    let [read, update, adopt, insert]: [Statement; 4] = prepared
        .try_into()
        .unwrap_or_else(|_| unreachable!("four statements prepared"));
    Ok(Swaps {
        read,
        update,
        adopt,
        insert,
    })
}

/// Creates the tables, under a lock, where no other client did meanwhile.
async fn create(client: &Client) -> Result<(), Failure<tokio_postgres::Error>> {
    let present = "SELECT to_regclass('flakegen_leases') IS NOT NULL \
                   AND to_regclass('flakegen_namespaces') IS NOT NULL";
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

/// Two futures polled together until both are done, so that a client that
/// pipelines sends their requests in one round trip.
async fn both<A, B>(
    a: impl Future<Output = A> + Send,
    b: impl Future<Output = B> + Send,
) -> (A, B) {
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    let (mut done_a, mut done_b) = (None, None);
    std::future::poll_fn(|cx| {
        if done_a.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                done_a = Some(v);
            }
        }
        if done_b.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                done_b = Some(v);
            }
        }
        if done_a.is_some() && done_b.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    (
        done_a.expect("polled to the end"),
        done_b.expect("polled to the end"),
    )
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

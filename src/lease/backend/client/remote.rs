//! A registry server at the end of a connection, with a bound on every call.
//!
//! Each remote registry drives its async client from a small current-thread
//! runtime of its own, so that a call's bound is one `tokio::time::timeout`
//! around connecting and asking: a frozen server, dropped packets or a
//! server that is starting up cost the timeout, never more. A server-side
//! timeout (`statement_timeout`) cannot do that, since the server is the part
//! that is stuck.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::task::JoinHandle;

use super::super::error::{LeaseError, said};
use super::budget;
use super::probe::{self, Speaks};
use crate::process::Generation;

/// A connection and the task that drives it, if it has one.
pub(crate) struct Connected<C> {
    pub(crate) client: C,
    pub(crate) driver: Option<Driver>,
}

/// A connection's driving task, stopped when the connection is dropped.
pub(crate) struct Driver(JoinHandle<()>);

impl Drop for Driver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Why a call failed, before the backend says it as a [`LeaseError`].
pub(crate) enum Failure<E> {
    /// The client's error; the connection may be broken.
    Client(E),
    /// No answer within the timeout; `open`, on a connection already open
    /// (one that may have died, or a registry slower than the bound).
    TimedOut { after: Duration, open: bool },
    /// The server answers at its address, but setting up a connection took
    /// longer than the timeout: slow, or far, not gone.
    TooSlow(Duration),
    /// A reply the backend could not read, or a server that is not one.
    Lease(LeaseError),
}

impl<E> Failure<E> {
    /// The failure as a [`LeaseError`]; `client` says the client's own errors.
    pub(crate) fn into_lease(
        self,
        address: &str,
        client: impl FnOnce(E) -> LeaseError,
    ) -> LeaseError {
        match self {
            Failure::Client(e) => client(e),
            Failure::TimedOut { after, open: false } => LeaseError::Unreachable {
                address: address.to_owned(),
                source: said(format!("no answer within {after:?}")),
            },
            Failure::TimedOut { after, open: true } => LeaseError::Unreachable {
                address: address.to_owned(),
                source: said(format!(
                    "no answer within {after:?} on a connection already open: it died, or \
                     the registry answers slower than that (then raise Lease::call_timeout, \
                     or the TTL); the next call opens a new connection"
                )),
            },
            Failure::TooSlow(allowed) => LeaseError::TooSlow {
                address: address.to_owned(),
                allowed,
            },
            Failure::Lease(e) => e,
        }
    }
}

impl<E> From<E> for Failure<E> {
    fn from(e: E) -> Self {
        Failure::Client(e)
    }
}

/// One server: its address for messages, a runtime, its idle connections.
///
/// While generators run, only their leases' threads call it, so the
/// runtime never blocks a caller's thread; a direct call from inside
/// another runtime runs on a scoped thread. A call takes an idle
/// connection for itself and gives it back when done, so the generators
/// that share a registry never wait for each other's calls: one stuck on
/// a locked row or a dead connection holds up no other renewal. Dropping
/// it never blocks nor panics, wherever the last owner lets go (a task, a
/// runtime's worker).
pub(crate) struct Remote<C> {
    /// `host:port`, for messages: never the password.
    pub(crate) address: String,
    /// What the server must speak at the address, from the first byte.
    speaks: Speaks,
    /// Always `Some` until dropped.
    runtime: Option<Runtime>,
    /// At most [`MAX_IDLE`], the last one given back on top.
    idle: Mutex<Vec<Connected<C>>>,
    /// How much longer than a call's bound opening a connection may take:
    /// a login the server makes slow on purpose.
    login: Duration,
    /// The process whose sockets and runtime these are: a forked child
    /// sends nothing on its parent's connections, nor waits on its runtime.
    generation: Generation,
}

/// The idle connections a registry keeps: calls rarely overlap (each
/// lease renews a few times per TTL), so one more than a single caller
/// needs covers a call that overlaps a slow one without a new handshake.
const MAX_IDLE: usize = 2;

impl<C: Send> Remote<C> {
    /// A server at `address` that must speak `speaks` there.
    pub(crate) fn new(address: String, speaks: Speaks) -> Result<Self, LeaseError> {
        let runtime = Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LeaseError::Unreachable {
                address: address.clone(),
                source: Arc::new(e),
            })?;
        Ok(Remote {
            address,
            speaks,
            runtime: Some(runtime),
            idle: Mutex::new(Vec::new()),
            login: Duration::ZERO,
            generation: Generation::now(),
        })
    }

    /// Gives opening a connection `allowance` more than a call's bound, for
    /// a login that costs the server a password hash: many clients logging
    /// in at once queue on its CPU, and each would time out together.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn with_login(mut self, allowance: Duration) -> Self {
        self.login = allowance;
        self
    }

    /// Runs `call` on an idle connection, or on one it opens with `open`,
    /// all within the call's timeout (its [budget](budget), or
    /// [`Lease::DEFAULT_TIMEOUT`](super::budget::DEFAULT_TIMEOUT)). A connection that timed out
    /// or failed is dropped, and the next call opens another.
    pub(crate) fn run<T, E, O, F>(
        &self,
        open: impl FnOnce() -> O + Send,
        call: impl FnOnce(C) -> F + Send,
    ) -> Result<T, Failure<E>>
    where
        T: Send,
        E: Send,
        O: Future<Output = Result<Connected<C>, E>> + Send,
        F: Future<Output = (C, Result<T, Failure<E>>)> + Send,
    {
        if self.generation.is_past() {
            return Err(Failure::Lease(LeaseError::Copied {
                address: self.address.clone(),
            }));
        }
        // The lock is held only to take the connection, never across the call.
        let taken = self.idle().pop();
        let opening = taken.is_none();
        let opened = std::sync::atomic::AtomicBool::new(false);
        let work = async {
            let Connected { client, driver } = match taken {
                Some(connected) => connected,
                None => match open().await {
                    Ok(connected) => connected,
                    Err(e) => return (None, Err(Failure::Client(e))),
                },
            };
            // Relaxed: read on this thread, after the future is done.
            opened.store(true, std::sync::atomic::Ordering::Relaxed);
            let (client, result) = call(client).await;
            (Some(Connected { client, driver }), result)
        };
        let timeout = budget::timeout(opening) + if opening { self.login } else { Duration::ZERO };
        // A set-up still under way at half its bound is asked about, on a
        // thread of its own, while it goes on: what answers at the port is
        // known by the bound, at no extra wait.
        let half = timeout / 2;
        let address = &self.address;
        let bounded = async {
            let mut work = std::pin::pin!(work);
            match tokio::time::timeout(half, &mut work).await {
                Ok(done) => (Ok(done), None),
                Err(_) => {
                    let asking = opening.then(|| {
                        let (address, within) = (address.clone(), timeout - half);
                        std::thread::spawn(move || probe::speaks_within(&address, within))
                    });
                    (tokio::time::timeout(timeout - half, work).await, asking)
                }
            }
        };
        let (outcome, asking) = self.block_on(bounded);
        let opened = opened.load(std::sync::atomic::Ordering::Relaxed);
        // A connection that never opened may be to another server's port:
        // its client says so as a hang or a parse error. Ask the port (or
        // take the answer asked for meanwhile); and a set-up that ran out
        // of time at a port where the right server still answers is slow,
        // or far, not gone. (A connection that opened proves nothing: its
        // server may have died since.)
        let mut answers = false;
        if opening {
            let speaks = match asking {
                Some(asking) if asking.is_finished() => asking.join().ok().flatten(),
                // Still asking: nothing known yet, and no wait for it.
                Some(_) => None,
                None if !opened => probe::speaks_within(&self.address, probe::PROBE_TIME),
                None => None,
            };
            match speaks {
                Some(other) if other != self.speaks && !opened => {
                    return Err(Failure::Lease(LeaseError::WrongServer {
                        address: self.address.clone(),
                        speaks: other.name(),
                        wanted: self.speaks.name(),
                    }));
                }
                Some(other) => answers = other == self.speaks && outcome.is_err(),
                None => {}
            }
        }
        match outcome {
            Ok((connected, result)) => {
                // A connection that failed may be broken: the next call opens another.
                if let Some(connected) =
                    connected.filter(|_| !matches!(result, Err(Failure::Client(_))))
                {
                    let mut idle = self.idle();
                    if idle.len() < MAX_IDLE {
                        idle.push(connected);
                    }
                }
                result
            }
            // Dropping the call dropped its connection too.
            Err(_) => {
                if !opening {
                    budget::gave_up_open();
                }
                if answers {
                    Err(Failure::TooSlow(timeout))
                } else {
                    Err(Failure::TimedOut {
                        after: timeout,
                        open: !opening,
                    })
                }
            }
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connected<C>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `future` on this registry's runtime for at most `within`, apart
    /// from its connection: a probe that tells one failure from another.
    /// `None` if it took longer.
    #[cfg_attr(not(any(feature = "mysql", feature = "etcd")), allow(dead_code))]
    pub(crate) fn probe<T: Send>(
        &self,
        within: Duration,
        future: impl Future<Output = T> + Send,
    ) -> Option<T> {
        if self.generation.is_past() {
            return None;
        }
        self.block_on(async { tokio::time::timeout(within, future).await.ok() })
    }

    /// Spawns a connection's driver on this registry's runtime (call from
    /// within `open`).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn spawn(future: impl Future<Output = ()> + Send + 'static) -> Driver {
        Driver(tokio::spawn(future))
    }

    /// Runs `future` to completion on the runtime. From inside another tokio
    /// runtime, whose thread may not block on a second one, it runs on a
    /// scoped thread of its own.
    fn block_on<T: Send>(&self, future: impl Future<Output = T> + Send) -> T {
        let runtime = self
            .runtime
            .as_ref()
            .expect("a remote's runtime lives as long as it");
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|scope| {
                scope
                    .spawn(|| runtime.block_on(future))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        } else {
            runtime.block_on(future)
        }
    }
}

impl<C> Drop for Remote<C> {
    fn drop(&mut self) {
        if self.generation.is_past() {
            // The parent's: its connections' tasks and runtime are left as
            // they are, unrun, so nothing is sent or closed on its sockets.
            std::mem::forget(self.runtime.take());
            std::mem::forget(std::mem::take(
                self.idle.get_mut().unwrap_or_else(PoisonError::into_inner),
            ));
            return;
        }
        // The connections' tasks first, inside the runtime they belong to.
        let idle = self.idle.get_mut().map(std::mem::take);
        drop(idle);
        if let Some(runtime) = self.runtime.take() {
            // A plain drop waits for the runtime's blocking pool, and panics
            // when that happens inside another runtime (as when a generator
            // is dropped from a task). Nothing here needs waiting for.
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call that timed out on a connection already open may have met a
    /// slow registry, not a gone one: the error says both, and what to
    /// raise; one that could not even set a connection up says only that.
    #[test]
    fn a_timeout_on_an_open_connection_is_not_said_to_be_a_registry_gone() {
        let said = |open| {
            Failure::<()>::TimedOut {
                after: Duration::from_millis(75),
                open,
            }
            .into_lease("127.0.0.1:6379", |()| unreachable!())
            .to_string()
        };
        let open = said(true);
        assert!(
            open.contains("on a connection already open")
                && open.contains("raise Lease::call_timeout"),
            "{open}"
        );
        let new = said(false);
        assert!(new.contains("no answer within 75ms"), "{new}");
        assert!(!new.contains("already open"), "{new}");
    }
}

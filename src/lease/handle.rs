//! The generator's end of its lease: the build's wait for the first
//! acquisition, the handle a generator keeps, and the release it returns.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::backend::LeaseError;
use super::claim::Claim;
use super::error::Refused;
use super::status::{ClaimId, LeaseStatus, Shared, Stop};

/// The build's end of the first acquisition, under way on the lease's
/// thread. Dropping it (a build that failed, a build future cancelled)
/// gives the lease back, once acquired.
pub(crate) struct Pending {
    handle: LeaseHandle,
    /// How long the build may wait for the lease's start (`Lease::start_wait`).
    pub(crate) start_wait: Duration,
}

/// Starts the lease again, on a registry reopened and a thread of its own,
/// as a new holder: `None` when the registry cannot be reopened.
pub(crate) type Restart = Box<dyn Fn() -> Result<Option<Pending>, Refused> + Send + Sync>;

impl Pending {
    pub(crate) fn new(
        shared: Arc<Shared>,
        start_wait: Duration,
        release_wait: Duration,
        restart: Restart,
    ) -> Pending {
        Pending {
            handle: LeaseHandle {
                namespace: shared.namespace.clone(),
                shared: RwLock::new(shared),
                release_wait,
                restart,
            },
            start_wait,
        }
    }

    /// Blocks until the lease's thread has acquired or given up. Bounded by
    /// the registry's timeouts: the thread never waits for anything else.
    pub(crate) fn wait(self) -> Result<LeaseHandle, Refused> {
        let acquired = self.handle.shared().acquired.wait(None, Option::take);
        self.acquired(acquired.flatten())
    }

    /// [`wait`](Self::wait), without blocking a runtime's thread.
    #[cfg(feature = "tokio")]
    pub(crate) async fn wait_async(self) -> Result<LeaseHandle, Refused> {
        let shared = self.handle.shared();
        let acquired = std::future::poll_fn(|cx| shared.acquired.poll(cx, Option::take)).await;
        self.acquired(acquired)
    }

    fn acquired(self, acquired: Option<Result<(), LeaseError>>) -> Result<LeaseHandle, Refused> {
        match acquired {
            Some(Ok(())) => Ok(self.handle),
            Some(Err(e)) => Err(Refused::Lease(e)),
            None => Err(Refused::Spawn(std::io::Error::other(
                "the lease's thread stopped before it acquired a worker id (see the panic above)",
            ))),
        }
    }
}

/// A generator's handle on its lease's thread. Dropping it tells the thread
/// to release the lease as acquired (nothing issued), unless
/// [`release`](Self::release) said how far the generator got.
pub(crate) struct LeaseHandle {
    /// What the lease's thread shares with the generator: another thread's
    /// once a restored process leased again ([`restart`](Self::restart)).
    shared: RwLock<Arc<Shared>>,
    /// The lease's namespace, which no restart changes.
    namespace: String,
    /// How long a dropped generator waits for its release (`Lease::release_wait`).
    release_wait: Duration,
    restart: Restart,
}

impl LeaseHandle {
    /// The lease's thread's state in force.
    fn shared(&self) -> Arc<Shared> {
        Arc::clone(&self.shared.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The newest lease's claim: the one in force, or the one the generator
    /// moves to once it may.
    pub(crate) fn latest(&self) -> Arc<Claim> {
        self.shared().latest()
    }

    pub(crate) fn status(&self) -> LeaseStatus {
        self.shared().status()
    }

    /// The lease's namespace.
    pub(crate) fn namespace(&self) -> &str {
        &self.namespace
    }

    /// How long a dropped generator may wait for its release here: its
    /// `release_wait`, or nothing on an async runtime's thread, which a
    /// drop must never hold.
    pub(crate) fn release_wait(&self) -> Duration {
        // Whatever this build's features: a registry on a server brings
        // tokio in, and a service may drop its generator on a runtime's
        // thread without the `tokio` feature.
        #[cfg(any(feature = "tokio", feature = "remote"))]
        if tokio::runtime::Handle::try_current().is_ok() {
            return Duration::ZERO;
        }
        self.release_wait
    }

    /// Whether the lease was lost for good (re-acquiring off).
    pub(crate) fn lost_for_good(&self) -> bool {
        self.shared().lost_for_good()
    }

    /// The error of a lease lost for good.
    pub(crate) fn lost(&self) -> LeaseError {
        LeaseError::Lost {
            namespace: self.namespace.clone(),
            worker: self.latest().worker(),
        }
    }

    /// Tells the thread to give the lease up, its fence back where the
    /// previous holder left it: nothing was issued (a build that failed).
    pub(crate) fn give_back(self) -> Release {
        let shared = self.shared();
        shared.stop(Stop::Release(None));
        Release {
            shared: Some(shared),
        }
    }

    /// Tells the thread to give the lease up: the generator has stopped
    /// issuing, and issued up to `last_tick` under `claim`. Returns at once;
    /// the first call decides where the fence goes.
    pub(crate) fn release(&self, claim: &Claim, last_tick: u64) -> Release {
        let shared = self.shared();
        shared.stop(Stop::Release(Some((ClaimId::of(claim), last_tick))));
        Release {
            shared: Some(shared),
        }
    }

    /// Leaves the lease in force without a word to the registry: this
    /// process was restored from a snapshot, and the lease is every
    /// copy's. Its thread, if it runs in this process, stops renewing it
    /// and writes nothing (a release would lower a fence the other copies
    /// issue below); one of the parent's (in a forked child) is left alone.
    /// Whatever follows (a drop, a release) finds it stopped already.
    pub(crate) fn abandon(&self) {
        let shared = self.shared();
        if !shared.generation.is_past() {
            shared.stop(Stop::Abandon);
        }
    }

    /// Leases again as a new holder, for a process restored from a
    /// snapshot, once the old lease was [abandoned](Self::abandon): a new
    /// thread, a new holder token, a registry reopened on connections of
    /// its own; waits for the acquisition. Returns how long the generator
    /// may wait for the new lease's start (`Lease::start_wait`); `None`:
    /// the registry cannot be reopened, and nothing changed.
    pub(crate) fn restart(&self) -> Result<Option<Duration>, Refused> {
        let Some(pending) = (self.restart)()? else {
            return Ok(None);
        };
        let start_wait = pending.start_wait;
        let fresh = pending.wait()?;
        // Its thread is now this handle's: the fresh handle must not stop it,
        // so it is never dropped (a few words, once per restore).
        let fresh = std::mem::ManuallyDrop::new(fresh);
        let shared = fresh.shared();
        *self.shared.write().unwrap_or_else(PoisonError::into_inner) = shared;
        Ok(Some(start_wait))
    }
}

impl Drop for LeaseHandle {
    fn drop(&mut self) {
        let shared = self.shared();
        if shared.generation.is_past() {
            // A forked child's copy: the thread and its locks are the parent's.
            return;
        }
        // A no-op after `release`: only a generator never built gets here first.
        shared.stop(Stop::Release(None));
    }
}

/// The release of a generator's lease, under way on the lease's thread:
/// [`IdGenerator::shutdown`](crate::IdGenerator::shutdown) returns it.
///
/// Dropping it does not stop the release; waiting tells whether the
/// registry confirmed it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use flakegen::{Builder, IdGenerator, lease::{Lease, MemoryRegistry}};
///
/// let registry = MemoryRegistry::new();
/// let generator = Builder::new().lease(Lease::new(registry.clone(), "orders")).build_atomic()?;
/// generator.next_id()?;
/// generator.shutdown().wait(Duration::from_secs(3))?;
/// assert!(generator.next_id().is_err(), "a generator that shut down issues nothing");
/// # Ok::<(), flakegen::Error>(())
/// ```
#[must_use = "the release goes on without waiting; call `wait` to know it was confirmed"]
pub struct Release {
    /// `None`: no lease, nothing to release.
    shared: Option<Arc<Shared>>,
}

impl Release {
    /// Nothing to release: a generator without a lease.
    pub(crate) const fn nothing() -> Release {
        Release { shared: None }
    }

    /// Blocks until the registry confirmed the release, for at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`LeaseError::ReleaseTimedOut`] when no answer came within `timeout`
    /// (the release goes on, bounded by the registry's own timeout);
    /// [`LeaseError::Lost`] when the lease was no longer this generator's
    /// to give back; the registry's error when the release failed. In each
    /// case the lease expires after its TTL, and the next holder of the id
    /// starts at its fence: nothing is ever issued twice.
    pub fn wait(self, timeout: Duration) -> Result<(), LeaseError> {
        let Some(shared) = self.shared else {
            return Ok(());
        };
        let deadline = Instant::now().checked_add(timeout);
        let outcome = shared.released.wait(deadline, |outcome| outcome.clone());
        outcome_of(&shared, outcome.flatten(), timeout)
    }

    /// [`wait`](Self::wait) for async code: waits with tokio's timer, never
    /// blocking a runtime's thread.
    ///
    /// # Errors
    ///
    /// As for [`wait`](Self::wait).
    #[cfg(feature = "tokio")]
    pub async fn wait_async(self, timeout: Duration) -> Result<(), LeaseError> {
        let Some(shared) = self.shared else {
            return Ok(());
        };
        let released = std::future::poll_fn(|cx| shared.released.poll(cx, |o| o.clone()));
        let outcome = tokio::time::timeout(timeout, released).await.ok();
        outcome_of(&shared, outcome.flatten(), timeout)
    }
}

/// What [`Release`] reports: `outcome`, or why there is none.
fn outcome_of(
    shared: &Shared,
    outcome: Option<Result<(), LeaseError>>,
    waited: Duration,
) -> Result<(), LeaseError> {
    outcome.unwrap_or_else(|| {
        Err(LeaseError::ReleaseTimedOut {
            namespace: shared.namespace.clone(),
            worker: shared.latest().worker(),
            waited,
        })
    })
}

impl std::fmt::Debug for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Release");
        if let Some(shared) = &self.shared {
            d.field("namespace", &shared.namespace)
                .field("worker", &shared.latest().worker());
        }
        d.finish_non_exhaustive()
    }
}

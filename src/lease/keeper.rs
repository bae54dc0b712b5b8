//! The lease's own thread: after acquiring, it renews the lease, confirms
//! each new fence to the generator, reports each change of state as a
//! `tracing` event, and releases the lease when the generator shuts down.
//!
//! The generator only ever signals it: a drop or a shutdown returns at once,
//! and every registry call runs here, bounded by the registry's timeout.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::acquire::{Acquired, Refused};
use super::fence::{self, Fence};
use super::protocol::{Holding, Terms, Unconfirmed};
use super::slot::{Done, Slot};
use super::{Lease, LeaseError};
use crate::clock::Clock;
use crate::layout::Layout;
use tracing::Level;

/// One lease event at `level` (a constant), with the fields every lease
/// event carries, and the error if there is one.
macro_rules! event {
    ($level:expr, $shared:expr, $fence_ms:expr, $error:expr, $message:expr) => {
        match $error {
            None => tracing::event!(
                target: "flakegen::lease",
                $level,
                namespace = %$shared.lease.namespace,
                worker = $shared.worker,
                fence_unix_ms = $fence_ms,
                "{}",
                $message
            ),
            Some(error) => tracing::event!(
                target: "flakegen::lease",
                $level,
                namespace = %$shared.lease.namespace,
                worker = $shared.worker,
                fence_unix_ms = $fence_ms,
                error = %error,
                "{}",
                $message
            ),
        }
    };
}

/// Where a lease stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaseState {
    /// The last renewal succeeded, and the fence is ahead of the clock.
    Held,
    /// The last renewal failed (the registry is unreachable or erring, or
    /// this clock runs too far ahead), or one is overdue; the thread keeps
    /// trying, and the generator runs on to its fence.
    Renewing,
    /// The registry no longer has this lease: another holder took the id, or
    /// the record is gone. The generator runs on to its fence and then
    /// refuses to issue; it never takes the lease back.
    Lost,
    /// The generator shut down: it issues nothing more, and its lease is
    /// given back (see [`IdGenerator::shutdown`](crate::IdGenerator::shutdown)).
    Released,
}

/// A leased generator's lease: [`IdGenerator::lease`](crate::IdGenerator::lease).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseStatus {
    /// The leased worker id.
    pub worker: u64,
    /// Where the lease stands.
    pub state: LeaseState,
    /// The confirmed fence: every ID the generator issues has a timestamp before it.
    pub fence: SystemTime,
    /// How long the lease lasts, from the last successful renewal, by this
    /// process's monotonic clock; zero once lost, released or overdue.
    pub time_left: Duration,
    /// Why the generator may refuse, while [`Renewing`](LeaseState::Renewing)
    /// or [`Lost`](LeaseState::Lost).
    pub last_error: Option<String>,
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
        shared.outcome(outcome.flatten(), timeout)
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
        shared.outcome(outcome.flatten(), timeout)
    }
}

impl std::fmt::Debug for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Release");
        if let Some(shared) = &self.shared {
            d.field("namespace", &shared.lease.namespace)
                .field("worker", &shared.worker);
        }
        d.finish_non_exhaustive()
    }
}

/// The generator's handle on the lease's thread. Dropping it tells the
/// thread to release the lease as acquired (nothing issued), unless
/// [`release`](Self::release) said how far the generator got.
pub(crate) struct Keeper {
    shared: Arc<Shared>,
    /// The last tick the previous holder may have issued.
    acquired_at_tick: u64,
}

struct Shared {
    lease: Lease,
    layout: Layout,
    clock: Arc<dyn Clock>,
    worker: u64,
    renew_every: Duration,
    fence: Arc<Fence>,
    status: Mutex<Status>,
    control: Mutex<Control>,
    wake: Condvar,
    /// The release's outcome, once the thread is done.
    released: Slot<Result<(), LeaseError>>,
}

#[derive(Debug)]
struct Status {
    state: LeaseState,
    renewed_at: Instant,
    last_error: Option<String>,
}

#[derive(Debug, Default)]
struct Control {
    stop: bool,
    /// Where to lower the fence on release: the generator's high-water mark.
    release_at_ms: Option<u64>,
}

/// What a lease is kept on: its terms, the generator's layout and clock,
/// and how often to renew.
pub(crate) struct Keeping {
    pub(crate) lease: Lease,
    pub(crate) layout: Layout,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) renew_every: Duration,
}

/// What has been said of the current trouble, so each event is said once.
#[derive(Default)]
struct Said {
    failing: bool,
    fence_reached: bool,
}

impl Keeper {
    /// The handle for a lease `holding`, renewed since `renewed_at`; the
    /// previous holder may have issued up to `acquired_at_tick`.
    pub(crate) fn new(
        keeping: Keeping,
        holding: &Holding,
        renewed_at: Instant,
        acquired_at_tick: u64,
    ) -> Keeper {
        let Keeping {
            lease,
            layout,
            clock,
            renew_every,
        } = keeping;
        let shared = Arc::new(Shared {
            lease,
            layout,
            clock,
            worker: holding.worker,
            renew_every,
            fence: Arc::new(Fence::at(&layout, holding.fence_ms)),
            status: Mutex::new(Status {
                state: LeaseState::Held,
                renewed_at,
                last_error: None,
            }),
            control: Mutex::new(Control::default()),
            wake: Condvar::new(),
            released: Slot::new(),
        });
        Keeper {
            shared,
            acquired_at_tick,
        }
    }

    /// The confirmed fence, which the generator's hot path reads.
    pub(crate) fn fence(&self) -> Arc<Fence> {
        Arc::clone(&self.shared.fence)
    }

    pub(crate) fn status(&self) -> LeaseStatus {
        let shared = &*self.shared;
        let fence_ms = shared.fence.unix_ms();
        let now_ms = shared.now_ms();
        let status = lock(&shared.status);
        let (mut state, mut last_error) = (status.state, status.last_error.clone());
        if shared.fence.is_closed() {
            state = LeaseState::Released;
        } else if state == LeaseState::Held && now_ms >= fence_ms {
            // The generator refuses at its fence: say so even before a renewal has failed.
            state = LeaseState::Renewing;
            last_error = Some(format!(
                "the clock reached the fence before a renewal was confirmed (last one {:?} ago)",
                status.renewed_at.elapsed()
            ));
        }
        let time_left = match state {
            LeaseState::Lost | LeaseState::Released => Duration::ZERO,
            _ => shared.lease.ttl.saturating_sub(status.renewed_at.elapsed()),
        };
        LeaseStatus {
            worker: shared.worker,
            state,
            fence: UNIX_EPOCH + Duration::from_millis(fence_ms),
            time_left,
            last_error,
        }
    }

    /// The error of a lease that was lost.
    pub(crate) fn lost(&self) -> LeaseError {
        self.shared.terms().lost(self.shared.worker)
    }

    /// Tells the thread to give the lease up, its fence lowered to the start
    /// of the unit after `last_tick`: the generator has stopped issuing.
    /// Returns at once; the first call decides where the fence goes.
    pub(crate) fn release(&self, last_tick: u64) -> Release {
        let high_water = fence::high_water_ms(&self.shared.layout, last_tick);
        let mut control = lock(&self.shared.control);
        if !control.stop {
            control.stop = true;
            control.release_at_ms = Some(high_water);
            self.shared.wake.notify_all();
        }
        Release {
            shared: Some(Arc::clone(&self.shared)),
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // A no-op after `release`: only a generator never built gets here first.
        let _ = self.release(self.acquired_at_tick);
    }
}

/// On the lease's thread: hands the acquisition to the build, then keeps
/// the lease until the generator shuts down.
pub(crate) fn hand_over(
    acquired: Result<(Acquired, Holding), Refused>,
    reply: &Slot<Result<Acquired, Refused>>,
) {
    let (acquired, holding) = match acquired {
        Ok(pair) => pair,
        Err(refused) => {
            // The id, if granted, was given back already.
            let _ = reply.fill(Err(refused));
            return;
        }
    };
    let shared = Arc::clone(&acquired.keeper.shared);
    // Whatever happens below, by return or by panic, a shutdown's wait ends.
    let _done = Done(&shared.released);
    let fence_ms = shared.fence.unix_ms();
    event!(
        Level::INFO,
        shared,
        fence_ms,
        None::<&LeaseError>,
        "lease acquired"
    );
    // A build that went away (a cancelled future) drops what it would have
    // got: its keeper then asks for the release, which `keep` makes.
    drop(reply.fill(Ok(acquired)));
    shared.keep(holding);
}

impl Shared {
    fn terms(&self) -> Terms<'_> {
        self.lease.terms(&self.layout)
    }

    fn now_ms(&self) -> u64 {
        fence::floor_millis(self.clock.unix_nanos())
    }

    /// Renews every `renew_every` (sooner after a failure) until told to
    /// stop, then releases; stops renewing, for good, once the lease is lost.
    fn keep(&self, mut holding: Holding) {
        let retry = (self.renew_every / 4).max(Duration::from_millis(10));
        let mut next = lock(&self.status).renewed_at + self.renew_every;
        let mut lost = false;
        let mut said = Said::default();
        loop {
            let release_at_ms = {
                let mut control = lock(&self.control);
                loop {
                    if control.stop {
                        break Some(control.release_at_ms);
                    }
                    let Some(left) = next.checked_duration_since(Instant::now()) else {
                        break None;
                    };
                    control = self
                        .wake
                        .wait_timeout(control, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            };
            if let Some(release_at_ms) = release_at_ms {
                let outcome = if lost {
                    Err(self.terms().lost(self.worker))
                } else {
                    // Not lowered unless the generator said how far it got.
                    self.release(&mut holding, release_at_ms.unwrap_or(u64::MAX))
                };
                // Nobody may wait: the outcome is kept for whoever does.
                let _ = self.released.fill(outcome);
                return;
            }
            if lost {
                // Only to say when the generator stops issuing.
                next = Instant::now() + retry;
                if said.fence_reached || self.fence_reached(&mut said) {
                    next = Instant::now() + Duration::from_secs(3600);
                }
                continue;
            }
            let asked_at = Instant::now();
            let outcome = holding.renew(&*self.lease.registry, &self.terms(), self.now_ms());
            next = match outcome {
                Ok(fence_ms) => {
                    self.fence.confirm(&self.layout, fence_ms);
                    if said.failing || said.fence_reached {
                        event!(
                            Level::INFO,
                            self,
                            fence_ms,
                            None::<&LeaseError>,
                            "lease recovered"
                        );
                    }
                    said = Said::default();
                    // The server extended the lease no earlier than the request left.
                    self.set(LeaseState::Held, None, Some(asked_at));
                    asked_at + self.renew_every
                }
                Err(Unconfirmed::Lost(e)) => {
                    event!(
                        Level::ERROR,
                        self,
                        self.fence.unix_ms(),
                        Some(&e),
                        "lease lost: the generator issues up to its fence, then refuses; \
                         build a new generator to lease a worker id again"
                    );
                    self.set(LeaseState::Lost, Some(e), None);
                    lost = true;
                    self.fence_reached(&mut said);
                    Instant::now() + retry
                }
                Err(Unconfirmed::Failed(e)) => {
                    if !said.failing {
                        said.failing = true;
                        event!(
                            Level::WARN,
                            self,
                            self.fence.unix_ms(),
                            Some(&e),
                            "lease renewals failing: the generator issues up to its fence \
                             while they are retried"
                        );
                    }
                    self.set(LeaseState::Renewing, Some(e), None);
                    self.fence_reached(&mut said);
                    Instant::now() + retry
                }
            };
        }
    }

    /// Says, once, that the clock reached the fence: the generator refuses.
    fn fence_reached(&self, said: &mut Said) -> bool {
        let fence_ms = self.fence.unix_ms();
        if said.fence_reached || self.now_ms() < fence_ms {
            return said.fence_reached;
        }
        said.fence_reached = true;
        event!(
            Level::ERROR,
            self,
            fence_ms,
            None::<&LeaseError>,
            "lease fence reached: the generator refuses IDs until a renewal is confirmed"
        );
        true
    }

    fn release(&self, holding: &mut Holding, to_ms: u64) -> Result<(), LeaseError> {
        let fence_ms = to_ms.min(holding.fence_ms);
        match holding.release(&*self.lease.registry, &self.terms(), to_ms) {
            Ok(true) => {
                event!(
                    Level::INFO,
                    self,
                    fence_ms,
                    None::<&LeaseError>,
                    "lease released"
                );
                Ok(())
            }
            Ok(false) => {
                let e = self.terms().lost(self.worker);
                let message = "lease not released: it was no longer held";
                event!(Level::WARN, self, fence_ms, Some(&e), message);
                Err(e)
            }
            Err(e) => {
                let message = "lease not released: it expires after its TTL";
                event!(Level::WARN, self, fence_ms, Some(&e), message);
                Err(e)
            }
        }
    }

    fn set(&self, state: LeaseState, error: Option<LeaseError>, renewed_at: Option<Instant>) {
        let mut status = lock(&self.status);
        status.state = state;
        status.last_error = error.map(|e| e.to_string());
        if let Some(at) = renewed_at {
            status.renewed_at = at;
        }
    }

    /// What [`Release`] reports: `outcome`, or why there is none.
    fn outcome(
        &self,
        outcome: Option<Result<(), LeaseError>>,
        waited: Duration,
    ) -> Result<(), LeaseError> {
        outcome.unwrap_or_else(|| {
            Err(LeaseError::ReleaseTimedOut {
                namespace: self.lease.namespace.clone(),
                worker: self.worker,
                waited,
            })
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update leaves the data whole: a panic elsewhere cannot tear it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

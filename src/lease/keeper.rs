//! The lease's own thread: it renews the lease, confirms each new fence to
//! the generator, and releases the lease when the generator is dropped.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::fence::{self, Fence};
use super::protocol::{Holding, Terms, Unconfirmed};
use super::{Lease, LeaseError};
use crate::clock::Clock;
use crate::layout::Layout;

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
    /// process's monotonic clock; zero once lost or overdue.
    pub time_left: Duration,
    /// Why the generator may refuse, while [`Renewing`](LeaseState::Renewing)
    /// or [`Lost`](LeaseState::Lost).
    pub last_error: Option<String>,
}

/// The lease's thread and what it shares with the generator. Dropping it
/// stops the thread, which releases the lease.
pub(crate) struct Keeper {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
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
}

struct Status {
    state: LeaseState,
    renewed_at: Instant,
    last_error: Option<String>,
}

#[derive(Default)]
struct Control {
    stop: bool,
    /// Where to lower the fence on release: the generator's high-water mark.
    release_at_ms: Option<u64>,
}

impl Keeper {
    /// Starts the thread for `holding`, renewed since `renewed_at`.
    pub(crate) fn spawn(
        lease: Lease,
        layout: Layout,
        clock: Arc<dyn Clock>,
        renew_every: Duration,
        holding: Holding,
        renewed_at: Instant,
        fence: Arc<Fence>,
    ) -> std::io::Result<Keeper> {
        let shared = Arc::new(Shared {
            lease,
            layout,
            clock,
            worker: holding.worker,
            renew_every,
            fence,
            status: Mutex::new(Status {
                state: LeaseState::Held,
                renewed_at,
                last_error: None,
            }),
            control: Mutex::new(Control::default()),
            wake: Condvar::new(),
        });
        let for_thread = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name("flakegen-lease".into())
            .spawn(move || for_thread.run(holding))?;
        Ok(Keeper {
            shared,
            thread: Some(thread),
        })
    }

    pub(crate) fn status(&self) -> LeaseStatus {
        let shared = &*self.shared;
        let fence_ms = shared.fence.unix_ms();
        let now_ms = fence::floor_millis(shared.clock.unix_nanos());
        let status = lock(&shared.status);
        let (mut state, mut last_error) = (status.state, status.last_error.clone());
        // The generator refuses at its fence: say so even before a renewal has failed.
        if state == LeaseState::Held && now_ms >= fence_ms {
            state = LeaseState::Renewing;
            last_error = Some(format!(
                "the clock reached the fence before a renewal was confirmed (last one {:?} ago)",
                status.renewed_at.elapsed()
            ));
        }
        let time_left = match state {
            LeaseState::Lost => Duration::ZERO,
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

    /// Stops the thread, which gives the lease up with its fence lowered to
    /// the start of the unit after `last_tick`: the generator has stopped
    /// issuing. Bounded by the registry's timeout.
    pub(crate) fn release(self, last_tick: u64) {
        let high_water = fence::high_water_ms(&self.shared.layout, last_tick);
        lock(&self.shared.control).release_at_ms = Some(high_water);
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        lock(&self.shared.control).stop = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A panic there was already reported by the panic hook.
            let _ = thread.join();
        }
    }
}

impl Shared {
    fn terms(&self) -> Terms<'_> {
        self.lease.terms(&self.layout)
    }

    fn now_ms(&self) -> u64 {
        fence::floor_millis(self.clock.unix_nanos())
    }

    /// Renews every `renew_every` (sooner after a failure) until told to
    /// stop; stops renewing, for good, once the lease is lost.
    fn run(&self, mut holding: Holding) {
        let retry = (self.renew_every / 4).max(Duration::from_millis(10));
        let mut next = Some(Instant::now() + self.renew_every);
        loop {
            let release_at_ms = {
                let mut control = lock(&self.control);
                while !control.stop {
                    let Some(at) = next else {
                        control = self
                            .wake
                            .wait(control)
                            .unwrap_or_else(PoisonError::into_inner);
                        continue;
                    };
                    let Some(left) = at.checked_duration_since(Instant::now()) else {
                        break;
                    };
                    control = self
                        .wake
                        .wait_timeout(control, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                control.stop.then_some(control.release_at_ms)
            };
            if let Some(release_at_ms) = release_at_ms {
                if next.is_some() {
                    // Best effort: if the registry cannot be reached, the lease
                    // expires after its TTL with its fence where it was, which
                    // is also safe. Not lowered unless the generator said how far it got.
                    let to = release_at_ms.unwrap_or(u64::MAX);
                    let _ = holding.release(&*self.lease.registry, &self.terms(), to);
                }
                return;
            }
            let asked_at = Instant::now();
            let outcome = holding.renew(&*self.lease.registry, &self.terms(), self.now_ms());
            next = match outcome {
                Ok(fence_ms) => {
                    self.fence.confirm(&self.layout, fence_ms);
                    // The server extended the lease no earlier than the request left.
                    self.set(LeaseState::Held, None, Some(asked_at));
                    Some(asked_at + self.renew_every)
                }
                Err(Unconfirmed::Lost(e)) => {
                    self.set(LeaseState::Lost, Some(e), None);
                    None
                }
                Err(Unconfirmed::Failed(e)) => {
                    self.set(LeaseState::Renewing, Some(e), None);
                    Some(Instant::now() + retry)
                }
            };
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
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update leaves the data whole: a panic elsewhere cannot tear it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

//! Where a lease stands: what the lease's thread writes and the generator
//! reads, and how the generator tells the thread to stop.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::backend::LeaseError;
use super::claim::Claim;
use super::protocol::StartCause;
use super::slot::Slot;
use crate::clock::Clock;
use crate::clock::units::{Moment, floor_millis};
use crate::layout::Layout;
use crate::meter;
use crate::process::Generation;

/// Where a lease stands. The [lifecycle](super#the-lifecycle) shows how
/// one leads to another.
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
    /// refuses to issue; it never takes that lease back. With
    /// [`Lease::reacquire`](super::Lease::reacquire) on (the default) this
    /// lasts no longer than it takes to say so: the state is
    /// [`Reacquiring`](Self::Reacquiring).
    Lost,
    /// The lease was lost, and the lease's thread is leasing a worker id
    /// again, its old one if free: a new lease, under the protocol's
    /// ordinary rules. Until the new lease's IDs may start, the generator
    /// refuses as at its fence; then it issues again, with no call from the
    /// service. `last_error` says why the lease was lost, what the last
    /// attempt met, or when the new lease's IDs start.
    Reacquiring,
    /// The generator shut down: it issues nothing more, and its lease is
    /// given back (see [`IdGenerator::shutdown`](crate::IdGenerator::shutdown)).
    Released,
}

impl LeaseState {
    /// Every state, with the name the `flakegen_lease_state` metric gives it.
    const NAMED: [(LeaseState, &'static str); 5] = [
        (LeaseState::Held, "held"),
        (LeaseState::Renewing, "renewing"),
        (LeaseState::Lost, "lost"),
        (LeaseState::Reacquiring, "reacquiring"),
        (LeaseState::Released, "released"),
    ];

    /// Each state's name, and whether it is `self`: what the metric reports.
    pub(crate) fn named(self) -> [(&'static str, bool); 5] {
        Self::NAMED.map(|(state, name)| (name, state == self))
    }
}

/// A leased generator's lease: [`IdGenerator::lease`](crate::IdGenerator::lease).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseStatus {
    /// The namespace the lease is held in.
    pub namespace: String,
    /// The worker id of the newest lease: the one the generator issues
    /// under, or will once a re-acquired lease's IDs may start.
    pub worker: u64,
    /// Where the lease stands.
    pub state: LeaseState,
    /// Where this lease's IDs start: its previous holder's fence (or, for an
    /// id the registry lost, the loss rule's). Every ID issued under this
    /// lease has a timestamp at or after it, and before `fence`.
    pub starts: SystemTime,
    /// Which bound set `starts`: why a generator waited, or waits, for it.
    pub start_cause: StartCause,
    /// The confirmed fence: every ID the generator issues under this lease
    /// has a timestamp before it.
    pub fence: SystemTime,
    /// How long the lease lasts, from the last successful renewal, by this
    /// process's monotonic clock; zero once lost, released or overdue.
    pub time_left: Duration,
    /// How long dropping the generator, or the process's exit for the
    /// process's own generator, waits for the registry to confirm the
    /// release ([`Lease::release_wait`](super::Lease::release_wait)).
    pub release_wait: Duration,
    /// Why the generator may refuse, while [`Renewing`](LeaseState::Renewing),
    /// [`Lost`](LeaseState::Lost) or [`Reacquiring`](LeaseState::Reacquiring).
    pub last_error: Option<String>,
}

/// What a generator and its lease's thread share.
pub(crate) struct Shared {
    pub(crate) namespace: String,
    /// The process the lease's thread runs in: in a forked child, the
    /// parent's, whose thread and locks the child must leave alone.
    pub(crate) generation: Generation,
    pub(crate) ttl: Duration,
    pub(crate) release_wait: Duration,
    pub(crate) layout: Layout,
    pub(crate) clock: Arc<dyn Clock>,
    status: Mutex<Status>,
    control: Mutex<Option<Stop>>,
    wake: Condvar,
    /// The first acquisition's outcome, which the build waits for.
    pub(crate) acquired: Slot<Result<(), LeaseError>>,
    /// The release's outcome, once the thread is done.
    pub(crate) released: Slot<Result<(), LeaseError>>,
}

struct Status {
    state: LeaseState,
    renewed_at: Instant,
    last_error: Option<String>,
    /// The newest lease's claim; `None` until the first acquisition.
    claim: Option<Arc<Claim>>,
    /// Its predecessor's fence, in ms since 1970: its IDs start there.
    starts_unix_millis: u64,
    /// Which bound set that start.
    start_cause: StartCause,
    /// It was acquired again after a loss, not for the build.
    reacquired: bool,
}

/// What the generator tells its lease's thread when it stops issuing.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stop {
    /// Give the lease back: the claim it last issued under and the last
    /// tick it may have issued under it; `None`: nothing was issued (a
    /// build that failed).
    Release(Option<(ClaimId, u64)>),
    /// Leave the lease without a word to the registry: this process was
    /// restored from a snapshot, every copy of which holds the lease, and
    /// a release by one would lower a fence the others issued below. It
    /// expires after its TTL.
    Abandon,
}

/// A claim's identity: its address, only ever compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClaimId(usize);

impl ClaimId {
    pub(crate) fn of(claim: &Claim) -> ClaimId {
        ClaimId(std::ptr::from_ref(claim).addr())
    }
}

impl Shared {
    pub(crate) fn new(
        namespace: String,
        (ttl, release_wait): (Duration, Duration),
        layout: Layout,
        clock: Arc<dyn Clock>,
    ) -> Shared {
        Shared {
            namespace,
            generation: Generation::now(),
            ttl,
            release_wait,
            layout,
            clock,
            status: Mutex::new(Status {
                state: LeaseState::Reacquiring,
                renewed_at: Instant::now(),
                last_error: None,
                claim: None,
                starts_unix_millis: 0,
                start_cause: StartCause::Predecessor,
                reacquired: false,
            }),
            control: Mutex::new(None),
            wake: Condvar::new(),
            acquired: Slot::new(),
            released: Slot::new(),
        }
    }

    pub(crate) fn now_ms(&self) -> u64 {
        floor_millis(self.clock.unix_nanos())
    }

    /// The newest lease's claim. Only asked once the first acquisition
    /// succeeded.
    pub(crate) fn latest(&self) -> Arc<Claim> {
        let claim = lock(&self.status).claim.clone();
        claim.expect("a lease is handed to its generator once acquired")
    }

    /// Whether the lease was lost for good (re-acquiring off).
    pub(crate) fn lost_for_good(&self) -> bool {
        lock(&self.status).state == LeaseState::Lost
    }

    /// The lease as the generator reports it.
    pub(crate) fn status(&self) -> LeaseStatus {
        let now_ms = self.now_ms();
        let stopped = lock(&self.control).is_some();
        let status = lock(&self.status);
        let Some(claim) = status.claim.as_ref() else {
            unreachable!("a lease is handed to its generator once acquired")
        };
        let fence_unix_millis = claim.fence().unix_millis();
        let (mut state, mut last_error) = (status.state, status.last_error.clone());
        if stopped {
            state = LeaseState::Released;
        } else if state == LeaseState::Held
            && status.reacquired
            && now_ms < status.starts_unix_millis
        {
            // The generator refuses until the new lease's IDs may start.
            state = LeaseState::Reacquiring;
            last_error = Some(format!(
                "worker id {} leased again; its IDs start at {}",
                claim.worker(),
                Moment {
                    unix_millis: status.starts_unix_millis,
                    now_millis: now_ms,
                }
            ));
        } else if state == LeaseState::Held && now_ms >= fence_unix_millis {
            // The generator refuses at its fence: say so even before a
            // renewal has failed (rule 8: a refusal always has its why).
            state = LeaseState::Renewing;
            last_error = Some(format!(
                "the clock reached the fence before a renewal was confirmed (last one {:?} ago)",
                status.renewed_at.elapsed()
            ));
        }
        let time_left = match state {
            LeaseState::Lost | LeaseState::Released => Duration::ZERO,
            _ => self.ttl.saturating_sub(status.renewed_at.elapsed()),
        };
        LeaseStatus {
            namespace: self.namespace.clone(),
            worker: claim.worker(),
            state,
            starts: UNIX_EPOCH + Duration::from_millis(status.starts_unix_millis),
            start_cause: status.start_cause,
            fence: UNIX_EPOCH + Duration::from_millis(fence_unix_millis),
            time_left,
            release_wait: self.release_wait,
            last_error,
        }
    }

    /// On the lease's thread: a lease was acquired, renewed since
    /// `renewed_at`; its IDs start at `starts_unix_millis`, for `start_cause`.
    pub(crate) fn hold(
        &self,
        claim: Arc<Claim>,
        starts_unix_millis: u64,
        start_cause: StartCause,
        renewed_at: Instant,
        reacquired: bool,
    ) {
        meter::lease_state(&self.namespace, LeaseState::Held.named());
        let mut status = lock(&self.status);
        status.state = LeaseState::Held;
        status.renewed_at = renewed_at;
        status.last_error = None;
        status.claim = Some(claim);
        status.starts_unix_millis = starts_unix_millis;
        status.start_cause = start_cause;
        status.reacquired = reacquired;
    }

    /// On the lease's thread: the lease is in `state`, for `reason`; a
    /// renewal confirmed at `renewed_at`, if any.
    pub(crate) fn set(
        &self,
        state: LeaseState,
        reason: Option<String>,
        renewed_at: Option<Instant>,
    ) {
        meter::lease_state(&self.namespace, state.named());
        let mut status = lock(&self.status);
        status.state = state;
        status.last_error = reason;
        if let Some(at) = renewed_at {
            status.renewed_at = at;
        }
    }

    /// Tells the lease's thread to stop; the first call decides how.
    pub(crate) fn stop(&self, stop: Stop) {
        let mut control = lock(&self.control);
        if control.is_none() {
            *control = Some(stop);
            self.wake.notify_all();
        }
    }

    /// On the lease's thread: waits until `deadline` or a stop, whichever
    /// comes first; returns the stop, if any.
    pub(crate) fn wait_stop(&self, deadline: Instant) -> Option<Stop> {
        let mut control = lock(&self.control);
        loop {
            if let Some(stop) = *control {
                return Some(stop);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            control = self
                .wake
                .wait_timeout(control, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update leaves the data whole: a panic elsewhere cannot tear it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

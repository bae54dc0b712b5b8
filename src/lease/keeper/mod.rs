//! The lease's own thread: it acquires the lease for the build, renews it,
//! confirms each new fence to the generator, leases again when the lease
//! is lost (healing), reports each change of state as a `tracing` event, and
//! releases the lease when the generator shuts down.
//!
//! The generator only ever signals it: a drop or a shutdown returns at once,
//! and every registry call runs here, bounded by the registry's timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::backend::client::budget::{self, Budget, DEFAULT_TIMEOUT};
use super::backend::{LeaseError, Registry};
use super::claim::Claim;
use super::fence;
use super::protocol::{self, Lost, Terms, Unconfirmed};
use super::slot::Done;
use super::status::{ClaimId, LeaseState, Shared, Stop};
use crate::clock::units::{lead_millis, millis};
use crate::meter;

mod held;
mod report;

use self::held::{Held, Said};
use self::report::{
    UNTIL_LEASED, UNTIL_REBUILT, UNTIL_RENEWED, abandoned, announce, fence_reached, issues_again,
};

/// What the lease's thread keeps a lease on: the registry and the terms.
pub(crate) struct Keeping {
    pub(crate) registry: Arc<dyn Registry>,
    pub(crate) ttl: Duration,
    pub(crate) skew: Duration,
    pub(crate) renew_every: Duration,
    /// How soon to try again after a failed renewal or acquisition.
    pub(crate) retry_every: Duration,
    /// How long to sleep once a lost lease has nothing left to say.
    pub(crate) quiet_when_lost: Duration,
    /// Lease again when the lease is lost.
    pub(crate) reacquire: bool,
    /// Every grant waits out the TTL and the skew past its read.
    pub(crate) wait_out_rollbacks: bool,
    /// How long a call on an open connection may take (`Lease::call_timeout`).
    pub(crate) call_timeout: Duration,
}

/// Where the thread is in the [lifecycle](super#the-lifecycle).
enum Phase {
    Held(Held),
    /// Leasing again, its old id preferred; `old` is the claim lost, which
    /// the generator runs on to the fence of, and `lost` what the registry
    /// knew of its lease.
    Reacquiring {
        old: Arc<Claim>,
        lost: Lost,
    },
    /// Lost for good (re-acquiring off); the generator runs to the fence.
    Lost {
        old: Arc<Claim>,
    },
}

/// The lease's thread: acquires for the build, then keeps the lease until
/// the generator shuts down.
pub(crate) fn run(keeping: Keeping, shared: &Shared) {
    // Whatever happens here, by return or by panic, no wait outlives the thread.
    let _released = Done(&shared.released);
    let held = {
        let _acquired = Done(&shared.acquired);
        match keeping.acquire_for_the_build(shared) {
            Ok(held) => {
                announce((keeping.ttl, keeping.skew), shared, &held, None);
                // A build that went away (a cancelled future) has asked for
                // the release already: `keep` makes it.
                shared.acquired.fill(Ok(()));
                held
            }
            Err(e) => {
                shared.acquired.fill(Err(e));
                return;
            }
        }
    };
    keeping.keep(shared, held);
}

impl Keeping {
    fn terms<'a>(&self, shared: &'a Shared) -> Terms<'a> {
        Terms {
            namespace: &shared.namespace,
            workers: shared.layout.max_worker() + 1,
            ttl_millis: millis(self.ttl),
            skew_millis: millis(self.skew),
            wait_out_rollbacks: self.wait_out_rollbacks,
        }
    }

    /// The bound of an acquisition's or a release's calls, which no fence
    /// hurries: the registry's own on an open connection, so that a
    /// registry slow to answer costs them time rather than a failure and a
    /// retry that adds to its load; and the TTL, at least that, to open
    /// one, whose set-up (a handshake, TLS, a login) is several round
    /// trips: a registry 300 ms away is slow to reach, not gone.
    fn budget(&self) -> Budget {
        Budget {
            reused: DEFAULT_TIMEOUT,
            fresh: self.open_timeout(),
        }
    }

    /// How long opening a connection may take outside a renewal.
    fn open_timeout(&self) -> Duration {
        open_room(self.ttl)
    }

    /// The bound of a renewal's call, `left` before the fence: on an open
    /// connection, half of that (or the call timeout, if sooner), so that a
    /// retry on a new connection has the other half to land in; on a new
    /// connection, the time left before the fence, at least the registry's
    /// own. A handshake (TLS, a password's hashing) cut short would fail
    /// again at every retry, and a slow one that lands late still beats
    /// refusing until the registry is quick.
    fn renewal_budget(&self, left: Duration) -> Budget {
        Budget {
            reused: self.call_timeout.min((left / 2).max(self.call_timeout / 8)),
            fresh: left.max(DEFAULT_TIMEOUT),
        }
    }

    /// The build's acquisition: tried again at once on a new connection if
    /// an open one (another generator's, on a shared registry) did not
    /// answer in time, so that a connection that died without a word costs
    /// the build a reconnection, not an error.
    fn acquire_for_the_build(&self, shared: &Shared) -> Result<Held, LeaseError> {
        let (acquired, gave_up) =
            budget::within_noting(self.budget(), || self.acquire(shared, None));
        match acquired {
            Err(_) if gave_up => self.acquire(shared, None),
            acquired => acquired,
        }
    }

    /// Takes a worker id as a new lease: after a loss (`lost`), the old id
    /// if it is free. An acquisition that took a renewal interval (a slow
    /// server) renews before it hands the lease over: it may have expired
    /// and been taken.
    fn acquire(&self, shared: &Shared, lost: Option<&Lost>) -> Result<Held, LeaseError> {
        let registry = &*self.registry;
        let terms = self.terms(shared);
        let asked_at = Instant::now();
        let token = protocol::holder_token();
        let mut grant = budget::within(self.budget(), || {
            protocol::acquire(registry, &terms, &token, || shared.now_ms(), lost)
        })?;
        let mut renewed_at = asked_at;
        if asked_at.elapsed() >= self.renew_every {
            renewed_at = Instant::now();
            let renewed = budget::within(self.budget(), || {
                grant.renew(registry, &terms, shared.now_ms())
            });
            if let Err(Unconfirmed::Lost(e) | Unconfirmed::Failed(e)) = renewed {
                // Nothing was issued: the fence goes back to the previous
                // holder's. Best effort: if this fails too, the lease expires.
                let start = grant.previous_fence_unix_millis;
                let _ = grant.release(registry, &terms, start);
                return Err(e);
            }
        }
        let claim = Claim::leased(
            &shared.layout,
            grant.worker,
            grant.previous_fence_unix_millis,
            grant.fence_unix_millis,
        );
        Ok(Held {
            grant,
            claim: Arc::new(claim),
            renewed_at,
            issues_again_at: None,
        })
    }

    /// Renews every `renew_every` (sooner after a failure), and leases
    /// again after a loss, until told to stop; then releases.
    fn keep(&self, shared: &Shared, held: Held) {
        let retry = self.retry_every;
        let mut next = held.renewed_at + self.renew_every;
        let mut phase = Phase::Held(held);
        let mut said = Said::default();
        loop {
            let wake = match &phase {
                Phase::Held(held) => held.issues_again_at.map_or(next, |at| at.min(next)),
                _ => next,
            };
            if let Some(stop) = shared.wait_stop(wake) {
                let outcome = match (&mut phase, stop) {
                    (_, Stop::Abandon) => {
                        abandoned(shared);
                        Ok(())
                    }
                    (Phase::Held(held), Stop::Release(issued)) => {
                        self.release(shared, held, issued)
                    }
                    (Phase::Reacquiring { old, .. } | Phase::Lost { old }, _) => {
                        Err(self.terms(shared).lost(old.worker()))
                    }
                };
                // Nobody may wait: the outcome is kept for whoever does.
                shared.released.fill(outcome);
                return;
            }
            if let Phase::Held(held) = &mut phase {
                if held.issues_again_at.is_some_and(|at| Instant::now() >= at) {
                    held.issues_again_at = issues_again(shared, held);
                }
            }
            if Instant::now() < next {
                // Woken only to say that the generator issues again.
                continue;
            }
            (phase, next) = match phase {
                Phase::Held(held) => self.renew(shared, held, &mut said, retry),
                Phase::Reacquiring { old, lost } => {
                    self.reacquire(shared, old, lost, &mut said, retry)
                }
                Phase::Lost { old } => {
                    // Only to say when the generator stops issuing.
                    let quiet =
                        said.fence_reached || fence_reached(shared, &old, &mut said, UNTIL_REBUILT);
                    let wait = if quiet { self.quiet_when_lost } else { retry };
                    (Phase::Lost { old }, Instant::now() + wait)
                }
            };
        }
    }

    /// One renewal: the phase after it, and when to look again.
    fn renew(
        &self,
        shared: &Shared,
        mut held: Held,
        said: &mut Said,
        retry: Duration,
    ) -> (Phase, Instant) {
        let terms = self.terms(shared);
        let asked_at = Instant::now();
        let worker = held.grant.worker;
        let now_ms = shared.now_ms();
        let left = Duration::from_millis(held.claim.fence().unix_millis().saturating_sub(now_ms));
        let renewed = budget::within(self.renewal_budget(left), || {
            held.grant.renew(&*self.registry, &terms, now_ms)
        });
        match renewed {
            Ok(fence_unix_millis) => {
                held.claim
                    .fence()
                    .confirm(&shared.layout, fence_unix_millis);
                let lead = lead_millis(fence_unix_millis, shared.now_ms());
                meter::renewed(&shared.namespace, asked_at.elapsed(), lead);
                if said.failing || said.fence_reached {
                    report::recovered(shared, worker, fence_unix_millis);
                }
                *said = Said::default();
                // The server extended the lease no earlier than the request left.
                shared.set(LeaseState::Held, None, Some(asked_at));
                held.renewed_at = asked_at;
                (Phase::Held(held), asked_at + self.renew_every)
            }
            Err(Unconfirmed::Lost(e)) => {
                meter::count(meter::LOSSES, &shared.namespace);
                let fence = held.claim.fence().unix_millis();
                let starts = held.grant.previous_fence_unix_millis;
                let lost = held.grant.as_lost();
                let old = held.claim;
                report::lost(shared, (worker, fence, starts), &e, self.reacquire);
                if self.reacquire {
                    let why = format!("lost ({e}); leasing a worker id again");
                    shared.set(LeaseState::Reacquiring, Some(why), None);
                    *said = Said::default();
                    fence_reached(shared, &old, said, UNTIL_LEASED);
                    // At once: every moment counts towards the new lease's start.
                    (Phase::Reacquiring { old, lost }, Instant::now())
                } else {
                    shared.set(LeaseState::Lost, Some(e.to_string()), None);
                    fence_reached(shared, &old, said, UNTIL_REBUILT);
                    (Phase::Lost { old }, Instant::now() + retry)
                }
            }
            Err(Unconfirmed::Failed(e)) => {
                meter::count(meter::RENEWALS_FAILED, &shared.namespace);
                // The first failure of an outage is tried again at once: a
                // call that timed out dropped its connection, and the next
                // one, on a new connection, may take the rest of the time
                // before the fence.
                let again = if said.failing { retry } else { Duration::ZERO };
                if !said.failing {
                    said.failing = true;
                    report::renewals_failing(shared, worker, held.claim.fence().unix_millis(), &e);
                }
                shared.set(LeaseState::Renewing, Some(e.to_string()), None);
                fence_reached(shared, &held.claim, said, UNTIL_RENEWED);
                (Phase::Held(held), Instant::now() + again)
            }
        }
    }

    /// One attempt to lease again after a loss, the old id preferred.
    fn reacquire(
        &self,
        shared: &Shared,
        old: Arc<Claim>,
        lost: Lost,
        said: &mut Said,
        retry: Duration,
    ) -> (Phase, Instant) {
        match self.acquire(shared, Some(&lost)) {
            Ok(mut held) => {
                announce((self.ttl, self.skew), shared, &held, Some(old.worker()));
                *said = Said::default();
                let starts = held.grant.previous_fence_unix_millis;
                let now = shared.now_ms();
                held.issues_again_at =
                    (now < starts).then(|| Instant::now() + Duration::from_millis(starts - now));
                let next = held.renewed_at + self.renew_every;
                (Phase::Held(held), next)
            }
            Err(e) => {
                // As for a renewal, the first failure is tried again at once.
                let again = if said.failing { retry } else { Duration::ZERO };
                if !said.failing {
                    said.failing = true;
                    report::reacquisition_failing(shared, &old, &e);
                }
                let why = format!("leasing a worker id again after a loss: {e}");
                shared.set(LeaseState::Reacquiring, Some(why), None);
                fence_reached(shared, &old, said, UNTIL_LEASED);
                (Phase::Reacquiring { old, lost }, Instant::now() + again)
            }
        }
    }

    /// Gives the lease up: its fence lowered to the unit after the last
    /// tick the generator issued under it, or back to its predecessor's if
    /// it issued nothing under it.
    fn release(
        &self,
        shared: &Shared,
        held: &mut Held,
        issued: Option<(ClaimId, u64)>,
    ) -> Result<(), LeaseError> {
        let to_ms = match issued {
            Some((claim, last_tick)) if claim == ClaimId::of(&held.claim) => {
                fence::high_water_ms(&shared.layout, last_tick)
            }
            _ => held.grant.previous_fence_unix_millis,
        };
        let worker = held.grant.worker;
        let fence_unix_millis = to_ms.min(held.grant.fence_unix_millis);
        let terms = self.terms(shared);
        let released = budget::within(self.budget(), || {
            held.grant.release(&*self.registry, &terms, to_ms)
        });
        let outcome = match released {
            Ok(true) => Ok(()),
            Ok(false) => Err((
                terms.lost(worker),
                "lease not released: it was no longer held",
            )),
            Err(e) => Err((e, "lease not released: it expires after its TTL")),
        };
        meter::lease_state(&shared.namespace, LeaseState::Released.named());
        report::released(shared, worker, fence_unix_millis, outcome.as_ref().err());
        outcome.map_err(|(e, _)| e)
    }
}

/// How long opening a connection may take outside a renewal (a build's, a
/// release's): the TTL, at least [`Lease::DEFAULT_TIMEOUT`](crate::lease::Lease::DEFAULT_TIMEOUT). A set-up is
/// several round trips, and a registry 300 ms away is slow, not gone.
pub(crate) fn open_room(ttl: Duration) -> Duration {
    ttl.max(DEFAULT_TIMEOUT)
}

/// The least time a renewal has to open a new connection and land before
/// its fence, when its open connection died without a word: its first try
/// comes `renew_every` after the fence was confirmed a TTL ahead, so
/// `ttl - renew_every` is left, and the dead connection costs at most half
/// of that ([`Keeping::renewal_budget`]).
#[cfg_attr(not(feature = "inspect"), allow(dead_code))]
pub(crate) fn reconnect_room(ttl: Duration, renew_every: Duration) -> Duration {
    ttl.saturating_sub(renew_every) / 2
}

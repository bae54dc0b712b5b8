//! What the lease's thread reports as it goes: the generator's view of its
//! lease, the `tracing` events that say each change, and the metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Level;

use super::held::{Held, Said};
use crate::clock::units::{Moment, Span, lead_millis, millis};
use crate::lease::backend::LeaseError;
use crate::lease::claim::Claim;
use crate::lease::protocol::StartCause;
use crate::lease::status::Shared;
use crate::meter;

/// One lease event at `level` (a constant), with the fields every lease
/// event carries, the error if there is one, and any fields of its own.
macro_rules! event {
    ($level:expr, $shared:expr, $worker:expr, $fence_unix_millis:expr, $error:expr, $message:expr
     $(, $field:ident = $value:expr)* $(,)?) => {
        // An `Option` field is recorded only when it is `Some`, so events
        // without an error carry no `error` field at all.
        tracing::event!(
            target: "flakegen::lease",
            $level,
            namespace = %$shared.namespace,
            worker = $worker,
            fence_unix_millis = $fence_unix_millis,
            $($field = $value,)*
            error = $error.map(tracing::field::display),
            "{}",
            $message
        )
    };
}

/// Puts `held` in force: the generator's view of its lease, and the event
/// that says so. `previous`: the worker of the lease lost, for a lease
/// taken again (healing).
pub(super) fn announce(
    (ttl, skew): (Duration, Duration),
    shared: &Shared,
    held: &Held,
    previous: Option<u64>,
) {
    let (worker, fence) = (held.grant.worker, held.grant.fence_unix_millis);
    let starts = held.grant.previous_fence_unix_millis;
    shared.hold(
        Arc::clone(&held.claim),
        starts,
        held.grant.cause,
        held.renewed_at,
        previous.is_some(),
    );
    meter::fence_lead(&shared.namespace, lead_millis(fence, shared.now_ms()));
    meter::worker(&shared.namespace, worker);
    if previous.is_some() {
        meter::count(meter::REACQUISITIONS, &shared.namespace);
    }
    let none = None::<&LeaseError>;
    let waits = shared.now_ms() < starts;
    let cause = held.grant.cause;
    match previous {
        None if waits => {
            let message = match cause {
                StartCause::Marker { marker_unix_millis } => format!(
                    "lease acquired, and the build waits {} (the TTL, {}, and the skew \
                     allowance, {}, past namespace {:?}'s marker, {}), until {}: {cause}. \
                     `flakegen leases init`, run once before services start, pays this wait \
                     for them",
                    Span(starts.saturating_sub(shared.now_ms())),
                    Span(millis(ttl)),
                    Span(millis(skew)),
                    shared.namespace,
                    when(shared, marker_unix_millis),
                    when(shared, starts),
                ),
                _ => format!(
                    "lease acquired: its IDs start at {}: {cause}",
                    when(shared, starts)
                ),
            };
            event!(
                Level::INFO,
                shared,
                worker,
                fence,
                none,
                message,
                starts_unix_millis = starts
            );
        }
        None => event!(
            Level::INFO,
            shared,
            worker,
            fence,
            none,
            "lease acquired",
            starts_unix_millis = starts
        ),
        Some(previous) => {
            let message = if waits {
                format!(
                    "lease reacquired: its IDs start at {} ({cause}); the generator refuses \
                     until then",
                    when(shared, starts)
                )
            } else {
                "lease reacquired: the generator issues again".to_owned()
            };
            event!(
                Level::INFO,
                shared,
                worker,
                fence,
                none,
                message,
                previous_worker = previous,
                starts_unix_millis = starts,
            );
        }
    }
}

/// What a generator at its fence waits for, said in its event.
/// Says that the lease was left without a release, in a process restored
/// from a snapshot: the copies that hold it too rely on its fence.
pub(super) fn abandoned(shared: &Shared) {
    let claim = shared.latest();
    let message = "lease abandoned, not released: this process was restored from a snapshot, \
                   and its other copies hold the lease too; it expires after its TTL";
    event!(
        Level::WARN,
        shared,
        claim.worker(),
        claim.fence().unix_millis(),
        None::<&LeaseError>,
        message
    );
}

pub(super) const UNTIL_RENEWED: &str = "until a renewal is confirmed";
pub(super) const UNTIL_LEASED: &str = "until it has leased a worker id again";
pub(super) const UNTIL_REBUILT: &str =
    "for good (Lease::reacquire is off): build a new generator to lease again";

/// Says, once, that the clock reached `claim`'s fence: the generator
/// refuses `until` (see the constants above).
pub(super) fn fence_reached(shared: &Shared, claim: &Claim, said: &mut Said, until: &str) -> bool {
    let fence_unix_millis = claim.fence().unix_millis();
    if said.fence_reached || shared.now_ms() < fence_unix_millis {
        return said.fence_reached;
    }
    said.fence_reached = true;
    let message = format!("lease fence reached: the generator refuses IDs {until}");
    event!(
        Level::ERROR,
        shared,
        claim.worker(),
        fence_unix_millis,
        None::<&LeaseError>,
        message
    );
    true
}

/// Says that a renewal was confirmed after failures, or after the fence.
pub(super) fn recovered(shared: &Shared, worker: u64, fence_unix_millis: u64) {
    let none = None::<&LeaseError>;
    event!(
        Level::INFO,
        shared,
        worker,
        fence_unix_millis,
        none,
        "lease recovered"
    );
}

/// Says that the lease of `worker`, fenced at `fence` and started at
/// `starts` (ms), was lost for `e`, and what the generator does next: lease
/// again (`reacquire`), or refuse for good past its fence.
pub(super) fn lost(
    shared: &Shared,
    (worker, fence, starts): (u64, u64, u64),
    e: &LeaseError,
    reacquire: bool,
) {
    if reacquire {
        let message = format!(
            "lease lost: the generator issues up to its fence ({}), then refuses until it has \
             leased a worker id again, which it does meanwhile",
            when(shared, fence)
        );
        let e = Some(e);
        event!(
            Level::WARN,
            shared,
            worker,
            fence,
            e,
            message,
            starts_unix_millis = starts
        );
    } else {
        let message = format!(
            "lease lost: the generator issues up to its fence ({}), then refuses for good \
             (Lease::reacquire is off): build a new generator to lease a worker id again",
            when(shared, fence)
        );
        let e = Some(e);
        event!(
            Level::ERROR,
            shared,
            worker,
            fence,
            e,
            message,
            starts_unix_millis = starts
        );
    }
}

/// Says, at the first failure of an outage, that renewals are failing.
pub(super) fn renewals_failing(shared: &Shared, worker: u64, fence: u64, e: &LeaseError) {
    let message = format!(
        "lease renewals failing: the generator issues up to its fence ({}) while they are \
         retried, then refuses until one is confirmed",
        when(shared, fence)
    );
    event!(Level::WARN, shared, worker, fence, Some(e), message);
}

/// Says, at its first failure, that leasing again after the loss of `old`
/// is failing.
pub(super) fn reacquisition_failing(shared: &Shared, old: &Claim, e: &LeaseError) {
    let fence = old.fence().unix_millis();
    let message = if shared.now_ms() < fence {
        format!(
            "lease reacquisition failing: the generator issues up to its old lease's fence ({}) \
             while it is retried, then refuses",
            when(shared, fence)
        )
    } else {
        "lease reacquisition failing: the generator refuses while it is retried".to_owned()
    };
    event!(Level::WARN, shared, old.worker(), fence, Some(e), message);
}

/// Says how a release ended: released, or not (`failed`: why, and what
/// that means).
pub(super) fn released(
    shared: &Shared,
    worker: u64,
    fence_unix_millis: u64,
    failed: Option<&(LeaseError, &str)>,
) {
    match failed {
        None => {
            meter::count(meter::RELEASES, &shared.namespace);
            let none = None::<&LeaseError>;
            event!(
                Level::INFO,
                shared,
                worker,
                fence_unix_millis,
                none,
                "lease released"
            );
        }
        Some((e, message)) => {
            event!(
                Level::WARN,
                shared,
                worker,
                fence_unix_millis,
                Some(e),
                message
            );
        }
    }
}

/// `2026-12-01T19:05:31.808Z, in 12.0 s`, by the generator's clock.
pub(super) fn when(shared: &Shared, at_unix_millis: u64) -> Moment {
    Moment {
        unix_millis: at_unix_millis,
        now_millis: shared.now_ms(),
    }
}

/// Says that a lease taken again after a loss lets the generator issue
/// again, once its IDs may start; returns when to look again if the
/// generator's clock is not there yet.
pub(super) fn issues_again(shared: &Shared, held: &Held) -> Option<Instant> {
    let starts = held.grant.previous_fence_unix_millis;
    let now = shared.now_ms();
    if now < starts {
        return Some(Instant::now() + Duration::from_millis(starts - now));
    }
    event!(
        Level::INFO,
        shared,
        held.grant.worker,
        held.grant.fence_unix_millis,
        None::<&LeaseError>,
        "lease issuing again: the new lease's IDs may start now",
        starts_unix_millis = starts
    );
    None
}

//! What flakegen reports through the `metrics` facade (feature `metrics`;
//! the names are listed in the [crate docs](crate#metrics)). Without the
//! feature every function here is empty, and inlined away.
//!
//! Only what happens off the path of an ID that does not wait is counted:
//! refusals, waits, and the lease's thread. An issued ID costs nothing here.

use std::time::Duration;

use crate::IssueError;

#[cfg(feature = "metrics")]
mod on {
    use std::time::Duration;

    use crate::IssueError;

    pub(super) fn lease_state(namespace: &str, states: [(&'static str, bool); 5]) {
        // One series per state, 1 for the state in force: a dashboard sums
        // or filters them without knowing an encoding.
        for (name, current) in states {
            let value = if current { 1.0 } else { 0.0 };
            ::metrics::gauge!("flakegen_lease_state", "namespace" => namespace.to_owned(), "state" => name)
                .set(value);
        }
    }

    pub(super) fn renewed(namespace: &str, round_trip: Duration, fence_lead_millis: i64) {
        ::metrics::histogram!("flakegen_lease_renewal_seconds", "namespace" => namespace.to_owned())
            .record(round_trip.as_secs_f64());
        fence_lead(namespace, fence_lead_millis);
    }

    pub(super) fn fence_lead(namespace: &str, fence_lead_millis: i64) {
        ::metrics::gauge!("flakegen_lease_fence_lead_seconds", "namespace" => namespace.to_owned())
            .set(fence_lead_millis as f64 / 1e3);
    }

    pub(super) fn count(name: &'static str, namespace: &str) {
        ::metrics::counter!(name, "namespace" => namespace.to_owned()).increment(1);
    }

    pub(super) fn refused(e: &IssueError) {
        let kind = match e {
            IssueError::WouldBlock { .. } => "would_block",
            IssueError::ClockBehind { .. } => "clock_behind",
            IssueError::TimestampExhausted { .. } => "timestamp_exhausted",
            IssueError::LeaseLost { .. } => "lease_lost",
            IssueError::ShutDown => "shut_down",
        };
        ::metrics::counter!("flakegen_refusals_total", "kind" => kind).increment(1);
    }

    pub(super) fn waited(cause: &'static str, waited: Duration) {
        ::metrics::histogram!("flakegen_wait_seconds", "cause" => cause)
            .record(waited.as_secs_f64());
    }
}

/// Why a call waits: the unit's IDs are used up (`Unit`), its IDs lie
/// further ahead of the clock (`Ahead`: the clock stepped back, a
/// `resume_after` ID, a lease's start), or they lie at the lease's fence
/// until a renewal or a new lease (`Fence`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    Unit,
    Ahead,
    Fence,
}

impl Cause {
    /// The cause of a wait for `unit`, asked in unit `now`.
    pub(crate) fn of_unit(unit: u64, now: u64) -> Self {
        if unit <= now.saturating_add(1) {
            Cause::Unit
        } else {
            Cause::Ahead
        }
    }

    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    fn name(self) -> &'static str {
        match self {
            Cause::Unit => "unit",
            Cause::Ahead => "ahead",
            Cause::Fence => "fence",
        }
    }
}

/// The lease of `namespace` is now in the state marked `true` of `states`
/// (each state's name, from `LeaseState::named`).
#[inline(always)]
pub(crate) fn lease_state(namespace: &str, states: [(&'static str, bool); 5]) {
    #[cfg(feature = "metrics")]
    on::lease_state(namespace, states);
    let _ = (namespace, states);
}

/// A renewal confirmed a fence `fence_lead_millis` ahead of the holder's
/// clock, its call taking `round_trip`.
#[inline(always)]
pub(crate) fn renewed(namespace: &str, round_trip: Duration, fence_lead_millis: i64) {
    #[cfg(feature = "metrics")]
    on::renewed(namespace, round_trip, fence_lead_millis);
    let _ = (namespace, round_trip, fence_lead_millis);
}

/// A lease was acquired (or acquired again) with its fence this far ahead.
#[inline(always)]
pub(crate) fn fence_lead(namespace: &str, fence_lead_millis: i64) {
    #[cfg(feature = "metrics")]
    on::fence_lead(namespace, fence_lead_millis);
    let _ = (namespace, fence_lead_millis);
}

/// One more of a lease's events: `flakegen_lease_renewals_failed_total`,
/// `flakegen_lease_losses_total`, `flakegen_lease_reacquisitions_total`,
/// `flakegen_lease_releases_total`.
#[inline(always)]
pub(crate) fn count(name: &'static str, namespace: &str) {
    #[cfg(feature = "metrics")]
    on::count(name, namespace);
    let _ = (name, namespace);
}

/// A call returns `e`: only refusals come here, off the path of an ID.
#[cfg_attr(feature = "metrics", cold, inline(never))]
#[cfg_attr(not(feature = "metrics"), inline(always))]
pub(crate) fn refused(e: IssueError) -> IssueError {
    #[cfg(feature = "metrics")]
    on::refused(&e);
    e
}

/// A wait under way. Timed only with the `metrics` feature: without it,
/// waiting reads no clock for this.
pub(crate) struct Waiting {
    #[cfg(feature = "metrics")]
    began: std::time::Instant,
}

impl Waiting {
    #[inline(always)]
    pub(crate) fn begin() -> Self {
        Waiting {
            #[cfg(feature = "metrics")]
            began: std::time::Instant::now(),
        }
    }

    /// The wait is over: count it under `cause`.
    #[inline(always)]
    pub(crate) fn end(self, cause: Cause) {
        #[cfg(feature = "metrics")]
        on::waited(cause.name(), self.began.elapsed());
        let _ = (self, cause);
    }
}

/// A call giving its ticks back was told to wait `waited` (it waits, if
/// at all, outside the generator).
#[inline(always)]
pub(crate) fn waited(cause: Cause, waited: Duration) {
    #[cfg(feature = "metrics")]
    on::waited(cause.name(), waited);
    let _ = (cause, waited);
}

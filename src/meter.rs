//! What flakegen reports through the `metrics` facade (feature `metrics`):
//! every metric's name, kind and help in one table, [`METRICS`], which
//! the [crate docs](crate#metrics) show. Without the feature every function
//! here is empty, and inlined away.
//!
//! Only what happens off the path of an ID that does not wait is counted:
//! refusals, waits, and the lease's thread. An issued ID costs nothing here.

use core::time::Duration;

use crate::IssueError;

/// A metric's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

pub(crate) const LEASE_STATE: &str = "flakegen_lease_state";
pub(crate) const LEASE_WORKER: &str = "flakegen_lease_worker";
pub(crate) const FENCE_LEAD: &str = "flakegen_lease_fence_lead_seconds";
pub(crate) const RENEWAL: &str = "flakegen_lease_renewal_seconds";
pub(crate) const RENEWALS_FAILED: &str = "flakegen_lease_renewals_failed_total";
pub(crate) const LOSSES: &str = "flakegen_lease_losses_total";
pub(crate) const REACQUISITIONS: &str = "flakegen_lease_reacquisitions_total";
pub(crate) const RELEASES: &str = "flakegen_lease_releases_total";
pub(crate) const REFUSALS: &str = "flakegen_refusals_total";
pub(crate) const WAITS: &str = "flakegen_wait_seconds";

/// Every metric: its name, kind and help (the `# HELP` line an exporter
/// writes). Every series carries a `namespace` label: the lease's, empty
/// for a generator without one.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) const METRICS: [(&str, Kind, &str); 10] = [
    (
        LEASE_STATE,
        Kind::Gauge,
        "1 for the lease's state (label state: held, renewing, lost, reacquiring, released), 0 for the others",
    ),
    (
        LEASE_WORKER,
        Kind::Gauge,
        "The worker id of the lease in force; it changes when a lost lease heals onto another id",
    ),
    (
        FENCE_LEAD,
        Kind::Gauge,
        "How far the confirmed fence led the holder's clock at the last renewal or acquisition: how long the generator can issue with its registry gone",
    ),
    (
        RENEWAL,
        Kind::Histogram,
        "The round trip of each confirmed renewal",
    ),
    (
        RENEWALS_FAILED,
        Kind::Counter,
        "Renewals that failed (the lease is kept, and retried)",
    ),
    (
        LOSSES,
        Kind::Counter,
        "Leases lost: taken, or gone with the registry's data or history",
    ),
    (
        REACQUISITIONS,
        Kind::Counter,
        "Leases taken again after a loss (healing)",
    ),
    (RELEASES, Kind::Counter, "Leases given back at shutdown"),
    (
        REFUSALS,
        Kind::Counter,
        "Calls refused (label kind: clock_behind, copied, lease_lost, shut_down, timestamp_exhausted, would_block)",
    ),
    (
        WAITS,
        Kind::Histogram,
        "Waits, and their time (label cause: unit, the unit's IDs used up; ahead, IDs ahead of the clock; fence, at the lease's fence)",
    ),
];

#[cfg(feature = "metrics")]
mod on {
    use std::sync::Once;
    use std::time::Duration;

    use super::{Kind, METRICS};
    use crate::IssueError;

    /// Says each metric's help once, before the first is reported.
    fn describe() {
        static DESCRIBED: Once = Once::new();
        DESCRIBED.call_once(|| {
            for (name, kind, help) in METRICS {
                match kind {
                    Kind::Counter => ::metrics::describe_counter!(name, help),
                    Kind::Gauge => ::metrics::describe_gauge!(name, help),
                    Kind::Histogram => ::metrics::describe_histogram!(name, help),
                }
            }
        });
    }

    pub(super) fn lease_state(namespace: &str, states: [(&'static str, bool); 5]) {
        describe();
        // One series per state, 1 for the state in force: a dashboard sums
        // or filters them without knowing an encoding.
        for (name, current) in states {
            let value = if current { 1.0 } else { 0.0 };
            ::metrics::gauge!(super::LEASE_STATE, "namespace" => namespace.to_owned(), "state" => name)
                .set(value);
        }
    }

    pub(super) fn worker(namespace: &str, worker: u64) {
        describe();
        ::metrics::gauge!(super::LEASE_WORKER, "namespace" => namespace.to_owned())
            .set(worker as f64);
    }

    pub(super) fn renewed(namespace: &str, round_trip: Duration, fence_lead_millis: i64) {
        describe();
        ::metrics::histogram!(super::RENEWAL, "namespace" => namespace.to_owned())
            .record(round_trip.as_secs_f64());
        fence_lead(namespace, fence_lead_millis);
    }

    pub(super) fn fence_lead(namespace: &str, fence_lead_millis: i64) {
        describe();
        ::metrics::gauge!(super::FENCE_LEAD, "namespace" => namespace.to_owned())
            .set(fence_lead_millis as f64 / 1e3);
    }

    pub(super) fn count(name: &'static str, namespace: &str) {
        describe();
        ::metrics::counter!(name, "namespace" => namespace.to_owned()).increment(1);
    }

    pub(super) fn refused(e: &IssueError, namespace: &str) {
        describe();
        let kind = match e {
            IssueError::WouldBlock { .. } => "would_block",
            IssueError::ClockBehind { .. } => "clock_behind",
            IssueError::TimestampExhausted { .. } => "timestamp_exhausted",
            IssueError::LeaseLost { .. } => "lease_lost",
            IssueError::ShutDown => "shut_down",
            IssueError::Copied => "copied",
        };
        ::metrics::counter!(super::REFUSALS, "namespace" => namespace.to_owned(), "kind" => kind)
            .increment(1);
    }

    pub(super) fn waited(cause: &'static str, namespace: &str, waited: Duration) {
        describe();
        ::metrics::histogram!(super::WAITS, "namespace" => namespace.to_owned(), "cause" => cause)
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
#[cfg(feature = "std")]
pub(crate) fn lease_state(namespace: &str, states: [(&'static str, bool); 5]) {
    #[cfg(feature = "metrics")]
    on::lease_state(namespace, states);
    let _ = (namespace, states);
}

/// A renewal confirmed a fence `fence_lead_millis` ahead of the holder's
/// clock, its call taking `round_trip`.
#[inline(always)]
#[cfg(feature = "std")]
pub(crate) fn renewed(namespace: &str, round_trip: Duration, fence_lead_millis: i64) {
    #[cfg(feature = "metrics")]
    on::renewed(namespace, round_trip, fence_lead_millis);
    let _ = (namespace, round_trip, fence_lead_millis);
}

/// A lease was acquired (or acquired again) with its fence this far ahead.
#[inline(always)]
#[cfg(feature = "std")]
pub(crate) fn fence_lead(namespace: &str, fence_lead_millis: i64) {
    #[cfg(feature = "metrics")]
    on::fence_lead(namespace, fence_lead_millis);
    let _ = (namespace, fence_lead_millis);
}

/// The lease of `namespace` is on worker id `worker` now.
#[inline(always)]
#[cfg(feature = "std")]
pub(crate) fn worker(namespace: &str, worker: u64) {
    #[cfg(feature = "metrics")]
    on::worker(namespace, worker);
    let _ = (namespace, worker);
}

/// One more of a lease's events: [`RENEWALS_FAILED`], [`LOSSES`],
/// [`REACQUISITIONS`], [`RELEASES`].
#[inline(always)]
#[cfg(feature = "std")]
pub(crate) fn count(name: &'static str, namespace: &str) {
    #[cfg(feature = "metrics")]
    on::count(name, namespace);
    let _ = (name, namespace);
}

/// A call of a generator in `namespace` (its lease's; empty without one)
/// returns `e`: only refusals come here, off the path of an ID.
#[cfg_attr(feature = "metrics", cold, inline(never))]
#[cfg_attr(not(feature = "metrics"), inline(always))]
pub(crate) fn refused(e: IssueError, namespace: &str) -> IssueError {
    #[cfg(feature = "metrics")]
    on::refused(&e, namespace);
    let _ = namespace;
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

    /// The wait of a generator in `namespace` is over: count it under `cause`.
    #[inline(always)]
    pub(crate) fn end(self, cause: Cause, namespace: &str) {
        #[cfg(feature = "metrics")]
        on::waited(cause.name(), namespace, self.began.elapsed());
        let _ = (self, cause, namespace);
    }
}

/// A call giving its ticks back was told to wait `waited` (it waits, if
/// at all, outside the generator).
#[inline(always)]
pub(crate) fn waited(cause: Cause, namespace: &str, waited: Duration) {
    #[cfg(feature = "metrics")]
    on::waited(cause.name(), namespace, waited);
    let _ = (cause, namespace, waited);
}

#[cfg(test)]
mod tests {
    use super::METRICS;

    /// The crate docs' table is what users read: it must name every metric
    /// reported, and no other.
    #[test]
    fn the_crate_docs_list_every_metric_and_only_those() {
        let docs = include_str!("lib.rs");
        let listed: Vec<&str> = docs
            .lines()
            .filter_map(|line| line.strip_prefix("//! | `flakegen_"))
            .filter_map(|rest| rest.split('`').next())
            .collect();
        let reported: Vec<&str> = METRICS
            .iter()
            .map(|(name, _, _)| name.strip_prefix("flakegen_").unwrap())
            .collect();
        assert_eq!(listed, reported);
    }
}

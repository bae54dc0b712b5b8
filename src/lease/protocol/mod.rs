//! Every decision of the lease protocol, made once, over a registry's three
//! storage steps (read, mark, swap): one decision a file. The [lease
//! docs](super#the-contract) state the rules; each is cited where it is
//! kept.
//!
//! - here: the terms, and the fence arithmetic every rule rests on (the
//!   lead bound, rule 3; the loss rule's bound, rule 6);
//! - `start.rs`: where a new lease's IDs start, and which id it takes
//!   (rules 2 and 6);
//! - `acquire.rs`: the acquisition's race against others (rules 7 and 9);
//! - `grant.rs`: what a granted lease writes: renewals and the release
//!   (rules 1, 4 and 5);
//! - `verdict.rs`: a holder's clock against the registry's (rule 6's skew
//!   allowance);
//! - `sighting.rs`: when a record expires on a registry with no clock of
//!   its own (a host whose clock runs ahead takes no live lease early);
//! - `ids.rs`: holder tokens and record versions.

mod acquire;
mod grant;
mod ids;
mod sighting;
mod start;
mod verdict;

pub(crate) use self::acquire::acquire;
#[cfg(feature = "inspect")]
pub(crate) use self::grant::test_write;
pub(crate) use self::grant::{Grant, Unconfirmed};
pub(crate) use self::ids::holder_token;
pub(crate) use self::start::Lost;
#[cfg(feature = "inspect")]
pub use self::start::Readiness;
pub use self::start::StartCause;
#[cfg(feature = "inspect")]
pub(crate) use self::start::readiness;
#[cfg(feature = "inspect")]
pub use self::verdict::ClockVerdict;

use super::backend::{LeaseError, Snapshot};

/// The terms every generator of a namespace leases under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Terms<'a> {
    pub(crate) namespace: &'a str,
    /// Ids `0..workers` may be leased.
    pub(crate) workers: u64,
    /// The lease's time to live, which also bounds how far a confirmed fence
    /// leads its holder's clock (rule 3).
    pub(crate) ttl_millis: u64,
    /// How far a holder's clock may read ahead of the server's.
    pub(crate) skew_millis: u64,
    /// Every grant starts a TTL and the skew allowance past the read that
    /// chose it ([`Lease::wait_out_rollbacks`](super::Lease::wait_out_rollbacks)).
    pub(crate) wait_out_rollbacks: bool,
}

impl Terms<'_> {
    /// Where an id with no record trustworthy under `marker_unix_millis` is fenced:
    /// past anything a holder may have confirmed before the loss (rule 6).
    /// A fence led its holder's clock by at most the TTL (rule 3), and that
    /// clock led the server's by at most the skew, and the server's read no
    /// later than the marker.
    pub(crate) fn unrecorded_fence(&self, marker_unix_millis: u64) -> u64 {
        marker_unix_millis
            .saturating_add(self.ttl_millis)
            .saturating_add(self.skew_millis)
    }

    /// The fence a holder whose clock reads `now_ms` may confirm, starting
    /// from `floor_ms` (its own confirmed fence, or its predecessor's): a
    /// TTL ahead of its clock, never lower than the floor. A floor further
    /// ahead is kept, not extended, so no confirmed fence leads by more
    /// than the TTL (rule 3) except one that already did when written.
    pub(crate) fn fence_from(&self, floor_ms: u64, now_ms: u64) -> u64 {
        floor_ms.max(now_ms.saturating_add(self.ttl_millis))
    }

    pub(crate) fn lost(&self, worker: u64) -> LeaseError {
        LeaseError::Lost {
            namespace: self.namespace.to_owned(),
            worker,
        }
    }
}

/// When `snapshot` was read, in ms since 1970 by the registry's clock,
/// rounded up: no earlier than anything the read did not see.
pub(super) fn seen(snapshot: &Snapshot) -> u64 {
    snapshot.server_unix_millis.saturating_add(1)
}

/// What the protocol's tests share: terms, records and snapshots.
#[cfg(test)]
pub(super) mod fixtures {
    use super::*;
    use crate::lease::backend::Record;

    pub(crate) fn terms() -> Terms<'static> {
        Terms {
            namespace: "n",
            workers: 4,
            ttl_millis: 10_000,
            skew_millis: 2_000,
            wait_out_rollbacks: false,
        }
    }

    pub(crate) fn record(
        worker: u64,
        holder: &str,
        expires_unix_millis: u64,
        fence_unix_millis: u64,
    ) -> Record {
        Record {
            worker,
            holder: holder.to_owned(),
            version: 7 + worker,
            marker_unix_millis: 100,
            expires_unix_millis,
            fence_unix_millis,
        }
    }

    /// A registry's read of `records` (all of them) under marker 100, with
    /// a high-water mark past the highest, read at 1 000.
    pub(crate) fn snapshot(records: Vec<Record>) -> Snapshot {
        let high_water = records.iter().map(|r| r.worker + 1).max().unwrap_or(0);
        Snapshot {
            server_unix_millis: 1_000,
            marker_unix_millis: Some(100),
            records,
            high_water,
        }
    }

    /// The ids below `snapshot`'s high-water mark with no record under its
    /// marker: what a probe of all of them finds.
    pub(crate) fn gone(snapshot: &Snapshot) -> Vec<u64> {
        (0..snapshot.high_water)
            .filter(|&w| {
                !snapshot.records.iter().any(|r| {
                    w == r.worker && Some(r.marker_unix_millis) == snapshot.marker_unix_millis
                })
            })
            .collect()
    }

    pub(crate) fn relic_at(worker: u64, fence_unix_millis: u64) -> Record {
        Record {
            marker_unix_millis: 50,
            ..record(worker, "a", 0, fence_unix_millis)
        }
    }

    pub(crate) fn now_ms() -> u64 {
        crate::clock::units::unix_millis(std::time::SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::terms;

    #[test]
    fn a_fence_leads_by_the_ttl_and_never_goes_back() {
        let t = terms();
        assert_eq!(t.fence_from(0, 1_000), 11_000);
        // A floor further ahead is kept, not extended by a TTL.
        assert_eq!(t.fence_from(60_000, 1_000), 60_000);
        assert_eq!(t.fence_from(5_000, u64::MAX), u64::MAX);
    }

    #[test]
    fn the_loss_rule_covers_the_lead_bound_and_the_skew() {
        let t = terms();
        assert_eq!(t.unrecorded_fence(1_000), 1_000 + 10_000 + 2_000);
        assert_eq!(t.unrecorded_fence(u64::MAX - 5), u64::MAX);
        // A holder at most the skew ahead of the server, writing before the
        // loss, confirms no fence past the rule.
        let (server_at_write, marker) = (5_000, 5_000);
        let holder_now = server_at_write + t.skew_millis;
        assert!(t.fence_from(0, holder_now) <= t.unrecorded_fence(marker));
    }
}

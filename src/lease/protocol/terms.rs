//! The terms every generator of a namespace leases under, and the fence
//! arithmetic every rule rests on: the lead bound (rule 3) and the loss
//! rule's bound (rule 6).

use crate::lease::backend::{LeaseError, Snapshot};

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
    /// chose it ([`Lease::wait_out_rollbacks`](crate::lease::Lease::wait_out_rollbacks)).
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::terms;

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

//! A claim: what one lease lets a generator issue, as its hot path reads it.

use super::fence::{self, Fence};
use crate::id::Snowflake;
use crate::layout::Layout;
use crate::process::Owner;

/// A worker id and the ticks a generator may issue with it: those after
/// [`last`](Self::last) and below the fence's cap.
///
/// One lease is one claim, and a claim never changes its worker: a call
/// reads its worker and its cap from the claim it started with, so no ID
/// combines one lease's worker with a tick judged under another's fence. A
/// generator without a lease has one claim for its whole life, capped only
/// by the layout's end. A lease that heals onto a new id, or onto its old
/// id under a new lease, is a new claim (see the generator's `claims.rs`).
///
/// Aligned to a cache line of its own: the hot path reads the cap and the
/// worker field together, and the cap is written only by renewals.
#[repr(align(64))]
pub struct Claim {
    /// The cap, which the hot path reads beside `worker_field`.
    fence: Fence,
    /// The worker id moved to its place in an ID.
    worker_field: u64,
    worker: u64,
    /// The last tick this claim may not issue: its predecessor's.
    last: u64,
    /// The process it belongs to: in a forked child, every claim is the
    /// parent's, and in a process restored from a snapshot, none that it
    /// held then (see `process.rs`).
    owner: Owner,
}

impl core::fmt::Debug for Claim {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Claim")
            .field("worker", &self.worker)
            .field("last", &self.last)
            .field("cap", &self.cap())
            .finish()
    }
}

impl Claim {
    /// A claim on `worker` with no lease: capped only by the layout's end.
    pub(crate) fn unleased(layout: &Layout, worker: u64) -> Claim {
        Claim {
            fence: Fence::none(layout),
            worker_field: layout.worker_field(worker),
            worker,
            last: 0,
            owner: Owner::now(),
        }
    }

    /// A lease's claim on `worker`: nothing at or below the previous
    /// holder's fence (`previous_fence_unix_millis`) is its, nor anything at or past
    /// its own confirmed fence (`fence_unix_millis`).
    pub(crate) fn leased(
        layout: &Layout,
        worker: u64,
        previous_fence_unix_millis: u64,
        fence_unix_millis: u64,
    ) -> Claim {
        Claim {
            fence: Fence::at(layout, fence_unix_millis),
            worker_field: layout.worker_field(worker),
            worker,
            last: fence::last_before(layout, previous_fence_unix_millis),
            owner: Owner::now(),
        }
    }

    /// Whether this claim belongs to another copy of the process (the
    /// parent of this forked child, or every copy of a snapshot this
    /// process was restored from): nothing may be issued under it here.
    #[inline]
    pub(crate) fn is_copy(&self) -> bool {
        self.owner.is_other()
    }

    /// Makes it every copy's and no copy's: this process was restored from
    /// a snapshot that holds it.
    pub(crate) fn disown(&self) {
        self.owner.disown();
    }

    /// The worker id.
    pub(crate) fn worker(&self) -> u64 {
        self.worker
    }

    /// The last tick this claim may not issue.
    pub(crate) fn last(&self) -> u64 {
        self.last
    }

    /// The fence, which renewals move and a shutdown closes.
    pub(crate) fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The first tick this claim may not issue.
    #[inline]
    pub(crate) fn cap(&self) -> u64 {
        self.fence.cap()
    }

    /// The ID of `tick` under this claim.
    #[inline]
    pub(crate) fn id(&self, layout: &Layout, tick: u64) -> Snowflake {
        Snowflake::from_u64(layout.compose_tick(tick, self.worker_field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leased_claim_starts_after_its_predecessor_and_stops_at_its_fence() {
        let layout = Layout::SONYFLAKE; // 10 ms units
        let at = |unit: u64| layout.unit_start_nanos(unit) / 1_000_000;
        let claim = Claim::leased(&layout, 3, at(40) + 3, at(50));
        // A fence 3 ms into unit 40: unit 40 was the predecessor's.
        assert_eq!(claim.last(), layout.first_tick(41) - 1);
        assert_eq!(claim.cap(), layout.first_tick(50));
        let id = claim.id(&layout, layout.first_tick(41));
        assert_eq!(layout.decode(id).unwrap().worker, 3);
        assert_eq!(claim.worker(), 3);
    }

    #[test]
    fn an_unleased_claim_is_capped_by_the_layout_alone() {
        let layout = Layout::TWITTER;
        let claim = Claim::unleased(&layout, 7);
        assert_eq!(claim.cap(), layout.max_tick() + 1);
        assert_eq!(claim.last(), 0);
    }
}

//! A lease the thread holds, and what it has said of its trouble.

use std::sync::Arc;
use std::time::Instant;

use crate::lease::claim::Claim;
use crate::lease::protocol::Grant;

/// A lease this thread holds, and the claim it gives the generator.
pub(super) struct Held {
    pub(super) grant: Grant,
    pub(super) claim: Arc<Claim>,
    pub(super) renewed_at: Instant,
    /// A lease taken again after a loss whose IDs start later: when to say
    /// that the generator issues again.
    pub(super) issues_again_at: Option<Instant>,
}

/// What has been said of the current trouble, so each event is said once.
#[derive(Default)]
pub(super) struct Said {
    pub(super) failing: bool,
    pub(super) fence_reached: bool,
}

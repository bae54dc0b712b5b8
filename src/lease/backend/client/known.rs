//! How long what a client knows of a record may be written over without
//! reading it again: one rule for the stores whose versions a restore can
//! give again to other writes (etcd restored without `--bump-revision`
//! reuses revisions, and Kubernetes' `resourceVersion` is etcd's).

use std::time::{Duration, Instant};

/// When a client read or wrote a record, and the TTL of the lease it
/// wrote it for (zero for a read).
#[derive(Clone, Copy, Debug)]
pub(in crate::lease::backend) struct Since {
    at: Instant,
    ttl: Duration,
}

impl Since {
    /// Read at `at`.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(in crate::lease::backend) fn read(at: Instant) -> Self {
        Since {
            at,
            ttl: Duration::ZERO,
        }
    }

    /// Written at `at`, for a lease of `ttl`.
    pub(in crate::lease::backend) fn written(at: Instant, ttl: Duration) -> Self {
        Since { at, ttl }
    }

    /// Whether a write for a lease of `ttl` may still name what is known:
    /// no more than the longer of the two TTLs has passed. A restore takes
    /// the store down, and one that took longer than that may have given
    /// the version to another write; after such a gap the record is read,
    /// and its holder and version compared, before a write names it. A
    /// restore that took less is told by each store's own sign (a cluster
    /// id, a raft term, a version gone down).
    pub(in crate::lease::backend) fn recent(&self, ttl: Duration) -> bool {
        self.at.elapsed() <= self.ttl.max(ttl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_known_is_recent_within_the_longer_ttl() {
        let two_s_ago = Instant::now().checked_sub(Duration::from_secs(2)).unwrap();
        let read = Since::read(two_s_ago);
        assert!(read.recent(Duration::from_secs(3)));
        assert!(
            !read.recent(Duration::from_secs(1)),
            "read longer than the TTL ago"
        );
        let written = Since::written(two_s_ago, Duration::from_secs(3));
        assert!(
            written.recent(Duration::from_secs(1)),
            "its own lease's TTL counts"
        );
        assert!(!Since::written(two_s_ago, Duration::from_secs(1)).recent(Duration::ZERO));
    }
}

//! What a client knows of a store whose versions a restore can give again
//! to other writes (etcd restored without `--bump-revision` reuses
//! revisions, and Kubernetes' `resourceVersion` is etcd's): how long what
//! it knows of a record may be written over without reading it again, and
//! the numbers whose going down tells a restore.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
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

/// The highest value seen of each of a store's numbers that only rise for
/// as long as its history holds (a raft term, an object's
/// `resourceVersion`): one found lower tells a restore that nothing else
/// may show.
#[derive(Debug)]
pub(in crate::lease::backend) struct Highest<K> {
    seen: HashMap<K, u64>,
}

impl<K> Default for Highest<K> {
    fn default() -> Self {
        Highest {
            seen: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> Highest<K> {
    /// Notes `value` of `key`; whether it went down, below the highest
    /// noted, which then stays.
    pub(in crate::lease::backend) fn went_down(&mut self, key: K, value: u64) -> bool {
        match self.seen.entry(key) {
            Entry::Occupied(highest) if value < *highest.get() => true,
            Entry::Occupied(mut highest) => {
                highest.insert(value);
                false
            }
            Entry::Vacant(first) => {
                first.insert(value);
                false
            }
        }
    }

    /// Judges `key` from `value` on: a restore was told and dealt with.
    #[cfg_attr(not(feature = "kubernetes"), allow(dead_code))]
    pub(in crate::lease::backend) fn restart(&mut self, key: K, value: u64) {
        self.seen.insert(key, value);
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

    #[test]
    fn a_number_that_goes_down_is_told_and_the_highest_stays() {
        let mut highest = Highest::default();
        assert!(!highest.went_down("a", 5), "first seen");
        assert!(!highest.went_down("a", 5), "the same again");
        assert!(!highest.went_down("b", 1), "each key on its own");
        assert!(highest.went_down("a", 4));
        assert!(highest.went_down("a", 4), "still below 5: 4 was not noted");
        assert!(!highest.went_down("a", 7));
        assert!(highest.went_down("a", 6));
        highest.restart("a", 2);
        assert!(!highest.went_down("a", 3), "judged from the restart");
    }
}

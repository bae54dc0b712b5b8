//! What this client has seen of each namespace's Lease objects: the
//! versions a write names, and what tells an etcd restore under the API
//! server, which nothing else shows: an object whose uid is the same as
//! before and whose `resourceVersion` went down.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::super::client::known::{Highest, Since};
use super::objects::{Filed, Marker};

/// One client's memory of its namespaces' objects.
#[derive(Default)]
pub(super) struct Seen {
    markers: HashMap<String, MarkerSeen>,
    records: HashMap<(String, u64), RecordSeen>,
}

struct MarkerSeen {
    /// The marker's Lease, as last read or written; `None` once found gone.
    marker: Option<Marker>,
    /// The highest marker it has seen, to date the next one after.
    highest_marker: u64,
    /// The highest `resourceVersion` seen of the marker's Lease and of the
    /// namespace's records, by uid.
    highest: Highest<String>,
    /// A marker value found rolled back (a restore): not in force, though
    /// its Lease says it, until a new marker replaces it.
    void: Option<u64>,
}

/// A record's Lease as this client last confirmed it.
#[derive(Clone, Debug)]
pub(super) struct RecordSeen {
    pub(super) filed: Filed,
    /// When, and for a lease of which TTL.
    pub(super) since: Since,
}

impl Seen {
    fn namespace(&mut self, namespace: &str) -> &mut MarkerSeen {
        self.markers
            .entry(namespace.to_owned())
            .or_insert_with(|| MarkerSeen {
                marker: None,
                highest_marker: 0,
                highest: Highest::default(),
                void: None,
            })
    }

    /// Notes an object's version; `true` if it went down since (a
    /// restore). The highest version seen is kept, unless `reset`: an
    /// object whose content changed is judged from its new version on.
    fn went_down(&mut self, namespace: &str, uid: &str, version: Option<u64>, reset: bool) -> bool {
        let Some(version) = version else {
            return false;
        };
        let highest = &mut self.namespace(namespace).highest;
        if reset {
            highest.restart(uid.to_owned(), version);
            return false;
        }
        highest.went_down(uid.to_owned(), version)
    }

    /// Notes the namespace's marker as read (`None`: it has none), and
    /// returns the one in force.
    pub(super) fn marker_read(
        &mut self,
        namespace: &str,
        marker: Option<&Marker>,
    ) -> Option<Marker> {
        let Some(marker) = marker else {
            self.namespace(namespace).marker = None;
            return None;
        };
        let value = marker.marker_unix_millis;
        let seen = self.namespace(namespace);
        // The same marker as before, in the same Lease: a version below
        // one seen is a restore. A new marker (replaced in place after a
        // restore, or after a loss) is judged from its own versions on.
        let same = seen
            .marker
            .as_ref()
            .is_some_and(|m| m.stored.uid == marker.stored.uid && m.marker_unix_millis == value);
        let down = self.went_down(
            namespace,
            &marker.stored.uid,
            marker.stored.version_number(),
            !same,
        );
        let seen = self.namespace(namespace);
        if down {
            seen.void = Some(value);
        } else if !same {
            seen.void = None;
        }
        seen.highest_marker = seen.highest_marker.max(value);
        seen.marker = Some(marker.clone());
        (seen.void != Some(value)).then(|| marker.clone())
    }

    /// Notes a marker this client wrote: in force.
    pub(super) fn marker_written(&mut self, namespace: &str, marker: &Marker) {
        let seen = self.namespace(namespace);
        seen.void = None;
        seen.highest_marker = seen.highest_marker.max(marker.marker_unix_millis);
        seen.highest.restart(
            marker.stored.uid.clone(),
            marker.stored.version_number().unwrap_or(0),
        );
        seen.marker = Some(marker.clone());
    }

    /// The marker in force as last seen, if any.
    pub(super) fn marker(&mut self, namespace: &str) -> Option<Marker> {
        let seen = self.namespace(namespace);
        seen.marker
            .clone()
            .filter(|m| seen.void != Some(m.marker_unix_millis))
    }

    /// The highest marker this client has seen in the namespace.
    pub(super) fn highest_marker(&mut self, namespace: &str) -> u64 {
        self.namespace(namespace).highest_marker
    }

    /// Notes a record as read or written: a record of the marker in force
    /// rolled back voids that marker, which must then be replaced.
    pub(super) fn record_seen(&mut self, namespace: &str, filed: &Filed, ttl: Duration) {
        let down = self.went_down(
            namespace,
            &filed.stored.uid,
            filed.stored.version_number(),
            false,
        );
        if down {
            let seen = self.namespace(namespace);
            let in_force = seen.marker.as_ref().map(|m| m.marker_unix_millis);
            if in_force == Some(filed.record.marker_unix_millis) {
                seen.void = in_force;
            }
            // Seen once: judged from this version on.
            seen.highest.restart(
                filed.stored.uid.clone(),
                filed.stored.version_number().unwrap_or(0),
            );
        }
        self.records.insert(
            (namespace.to_owned(), filed.record.worker),
            RecordSeen {
                filed: filed.clone(),
                since: Since::written(Instant::now(), ttl),
            },
        );
    }

    /// The record of `worker` as last seen.
    pub(super) fn record(&self, namespace: &str, worker: u64) -> Option<RecordSeen> {
        self.records.get(&(namespace.to_owned(), worker)).cloned()
    }

    /// Forgets the record of `worker`: gone, or written by another.
    pub(super) fn forget_record(&mut self, namespace: &str, worker: u64) {
        self.records.remove(&(namespace.to_owned(), worker));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::backend::Record;
    use crate::lease::backend::kubernetes::objects::Stored;

    fn marker(value: u64, rv: u64) -> Marker {
        Marker {
            stored: Stored {
                uid: "m".into(),
                resource_version: rv.to_string(),
            },
            marker_unix_millis: value,
            high_water: 1,
        }
    }

    fn record(marker: u64, rv: u64) -> Filed {
        Filed {
            stored: Stored {
                uid: "r".into(),
                resource_version: rv.to_string(),
            },
            record: Record {
                marker_unix_millis: marker,
                ..Record::default()
            },
            marker_uid: "m".into(),
            transitions: 0,
            acquired: None,
            ttl_millis: 0,
        }
    }

    /// A Lease seen at a lower version than before, with the same uid, is
    /// a restore: the marker is void until replaced, and the marker that
    /// replaces it (in the same Lease, at versions below those seen before
    /// the restore) is in force, however many times it is read.
    #[test]
    fn a_version_gone_down_voids_the_marker_once() {
        let mut seen = Seen::default();
        assert!(seen.marker_read("ns", Some(&marker(100, 50))).is_some());
        seen.record_seen("ns", &record(100, 60), Duration::ZERO);
        // The restore: the record's version goes down.
        seen.record_seen("ns", &record(100, 40), Duration::ZERO);
        assert!(seen.marker_read("ns", Some(&marker(100, 30))).is_none());
        // Replaced in place, by another client: a new marker.
        assert!(seen.marker_read("ns", Some(&marker(200, 35))).is_some());
        seen.record_seen("ns", &record(100, 40), Duration::ZERO);
        assert!(seen.marker_read("ns", Some(&marker(200, 36))).is_some());
        // The marker's own version going down voids it too.
        assert!(seen.marker_read("ns", Some(&marker(200, 20))).is_none());
    }

    /// A restore in steady state: every id lies below the high-water
    /// mark, so the marker's Lease was not written between the snapshot
    /// and the restore, and only a record's version goes down. That alone
    /// voids the marker, read again at the very version it had.
    #[test]
    fn a_record_gone_down_voids_the_marker_its_lease_kept() {
        let mut seen = Seen::default();
        assert!(seen.marker_read("ns", Some(&marker(100, 50))).is_some());
        seen.record_seen("ns", &record(100, 60), Duration::ZERO);
        seen.record_seen("ns", &record(100, 61), Duration::ZERO);
        assert!(seen.marker("ns").is_some());
        seen.record_seen("ns", &record(100, 55), Duration::ZERO);
        assert!(seen.marker("ns").is_none(), "the restore went unseen");
        assert!(
            seen.marker_read("ns", Some(&marker(100, 50))).is_none(),
            "the marker's Lease, unchanged by the restore, was taken as in force"
        );
        // A record of another marker going down voids nothing of this one.
        assert!(seen.marker_read("ns", Some(&marker(200, 51))).is_some());
        seen.record_seen("ns", &record(100, 54), Duration::ZERO);
        assert!(seen.marker("ns").is_some());
    }
}

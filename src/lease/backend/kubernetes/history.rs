//! What this client has seen of each namespace's Lease objects: the
//! versions a write names, and what tells an etcd restore under the API
//! server, which nothing else shows: an object whose uid is the same as
//! before and whose `resourceVersion` went down.

use std::collections::HashMap;
use std::time::{Duration, Instant};

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
    highest: HashMap<String, u64>,
    /// A marker value found rolled back (a restore): not in force, though
    /// its Lease says it, until a new marker replaces it.
    void: Option<u64>,
}

/// A record's Lease as this client last confirmed it.
#[derive(Clone, Debug)]
pub(super) struct RecordSeen {
    pub(super) filed: Filed,
    /// When it was read or written.
    at: Instant,
    /// Its lease's TTL, when it has a holder.
    ttl: Duration,
}

impl RecordSeen {
    /// Whether it is recent enough to write over without reading it again.
    /// A version older than the lease's TTL may have been rolled back by a
    /// restore, and given again to another write (etcd restored without
    /// `--bump-revision` reuses revisions): after such a gap the record is
    /// read, and its holder and version compared, before a write names it.
    pub(super) fn recent(&self, ttl: Duration) -> bool {
        self.at.elapsed() <= self.ttl.max(ttl)
    }
}

impl Seen {
    fn namespace(&mut self, namespace: &str) -> &mut MarkerSeen {
        self.markers
            .entry(namespace.to_owned())
            .or_insert_with(|| MarkerSeen {
                marker: None,
                highest_marker: 0,
                highest: HashMap::new(),
                void: None,
            })
    }

    /// Notes an object's version; `true` if it went down since (a restore).
    fn went_down(&mut self, namespace: &str, uid: &str, version: Option<u64>) -> bool {
        let Some(version) = version else {
            return false;
        };
        let highest = self
            .namespace(namespace)
            .highest
            .entry(uid.to_owned())
            .or_insert(version);
        let down = version < *highest;
        *highest = (*highest).max(version);
        down
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
        let down = self.went_down(
            namespace,
            &marker.stored.uid,
            marker.stored.version_number(),
        );
        let seen = self.namespace(namespace);
        let same = seen
            .marker
            .as_ref()
            .is_some_and(|m| m.marker_unix_millis == marker.marker_unix_millis);
        if down && same {
            seen.void = Some(marker.marker_unix_millis);
        } else if seen.void != Some(marker.marker_unix_millis) {
            seen.void = None;
        }
        seen.highest_marker = seen.highest_marker.max(marker.marker_unix_millis);
        seen.marker = Some(marker.clone());
        (seen.void != Some(marker.marker_unix_millis)).then(|| marker.clone())
    }

    /// Notes a marker this client wrote: in force.
    pub(super) fn marker_written(&mut self, namespace: &str, marker: &Marker) {
        let seen = self.namespace(namespace);
        seen.void = None;
        seen.highest_marker = seen.highest_marker.max(marker.marker_unix_millis);
        seen.highest.insert(
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

    /// Notes a record as read or written: a record rolled back voids the
    /// marker it sits under, which must then be replaced.
    pub(super) fn record_seen(&mut self, namespace: &str, filed: &Filed, ttl: Duration) {
        let down = self.went_down(namespace, &filed.stored.uid, filed.stored.version_number());
        if down {
            let seen = self.namespace(namespace);
            if let Some(marker) = &seen.marker {
                seen.void = Some(marker.marker_unix_millis);
            }
        }
        self.records.insert(
            (namespace.to_owned(), filed.record.worker),
            RecordSeen {
                filed: filed.clone(),
                at: Instant::now(),
                ttl,
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

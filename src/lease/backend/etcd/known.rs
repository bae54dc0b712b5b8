//! What this client knows of the records it read and wrote, as it read or
//! wrote them: what its next write of a record compares, in one
//! transaction, without reading the record and the namespace's history
//! again (a build's grant names what its read saw; a renewal and a release
//! name what the holder wrote), and the mark a namespace's next read
//! expects, so that one transaction reads all it needs.
//!
//! A write that names only what this client knew could land in a cluster
//! restored since, where a revision it names may have been given again to
//! another write: so what is known is used only while it is younger than
//! the lease's TTL (a restore takes the cluster down, and one that took
//! longer is read through), and an answer from another cluster, or with a
//! raft term below the one this client saw, tells a restore that took less
//! (the write is then said not to have happened, and the record it left is
//! void for every reader past the restore).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::super::client::known::Since;
use super::EtcdRegistry;
use super::history::{Head, Mark};
use super::keys::Keys;
use crate::lease::backend::{Expect, Record};

/// A record as this client last knew it, and the history it knew it under:
/// what a write over it compares.
#[derive(Clone, Debug)]
pub(super) struct Basis {
    /// The epoch's value.
    pub(super) epoch: String,
    /// The cluster that answered.
    pub(super) cluster: u64,
    /// The namespace's mark in force.
    pub(super) mark: Mark,
    /// The record, or `None` where there was none.
    pub(super) record: Option<Stored>,
    /// When it was read or written, and for a lease of which TTL.
    pub(super) since: Since,
}

/// A record as stored: its version, the revision that wrote it, and the
/// index entry that files it.
#[derive(Clone, Debug)]
pub(super) struct Stored {
    pub(super) version: u64,
    pub(super) mod_revision: u64,
    pub(super) index_key: String,
}

impl Stored {
    /// `record` as a read found it, written at `mod_revision`.
    pub(super) fn of(keys: &Keys, record: &Record, mod_revision: u64) -> Self {
        Stored {
            version: record.version,
            mod_revision,
            index_key: EtcdRegistry::index_key(
                keys,
                record.worker,
                record.marker_unix_millis,
                &record.holder,
                record.expires_unix_millis,
                record.fence_unix_millis,
            ),
        }
    }
}

impl Basis {
    /// What a read at `at` saw: the history `head` tells, the namespace's
    /// `mark` in force, and a record as stored (or none).
    pub(super) fn read(head: &Head, mark: Mark, record: Option<Stored>, at: Instant) -> Self {
        Basis {
            epoch: head.epoch_text().unwrap_or_default().to_owned(),
            cluster: head.header.cluster,
            mark,
            record,
            since: Since::read(at),
        }
    }

    /// Whether a write expecting `expect`, for a lease of `ttl_millis`, may
    /// name it without reading the record first: it is what the write
    /// expects, and no TTL has passed since it was known.
    fn serves(&self, expect: &Expect, ttl_millis: u64) -> bool {
        self.mark.marker == expect.marker_unix_millis
            && self.record.as_ref().map(|r| r.version) == expect.version
            && self.since.recent(Duration::from_millis(ttl_millis))
    }
}

/// A namespace's last read: the mark it found in force, and each record it
/// saw (or saw absent).
struct Read {
    mark: Mark,
    records: HashMap<u64, Basis>,
}

/// What this client knows: the records its holders wrote (one per lease it
/// holds), and each namespace's last read.
#[derive(Default)]
pub(super) struct Known {
    writes: Mutex<HashMap<(String, u64), Basis>>,
    reads: Mutex<HashMap<String, Read>>,
}

impl Known {
    /// What a write of `worker`'s record expecting `expect` may compare:
    /// the holder's own last write, else what the last read saw.
    pub(super) fn basis(
        &self,
        namespace: &str,
        worker: u64,
        expect: &Expect,
        ttl_millis: u64,
    ) -> Option<Basis> {
        let written = lock(&self.writes)
            .get(&(namespace.to_owned(), worker))
            .filter(|b| b.serves(expect, ttl_millis))
            .cloned();
        written.or_else(|| {
            lock(&self.reads)
                .get(namespace)?
                .records
                .get(&worker)
                .filter(|b| b.serves(expect, ttl_millis))
                .cloned()
        })
    }

    /// Notes a write of `worker`'s record: the last read's view of it is
    /// past, and a mark it raised is the one the next read expects.
    pub(super) fn wrote(&self, namespace: &str, worker: u64, basis: Basis) {
        if let Some(read) = lock(&self.reads).get_mut(namespace) {
            read.records.remove(&worker);
            if read.mark.marker == basis.mark.marker && read.mark.high_water < basis.mark.high_water
            {
                read.mark = basis.mark;
            }
        }
        lock(&self.writes).insert((namespace.to_owned(), worker), basis);
    }

    /// Forgets `worker`'s record: the next write of it reads first.
    pub(super) fn forget(&self, namespace: &str, worker: u64) {
        lock(&self.writes).remove(&(namespace.to_owned(), worker));
        self.forget_read(namespace, worker);
    }

    fn forget_read(&self, namespace: &str, worker: u64) {
        if let Some(read) = lock(&self.reads).get_mut(namespace) {
            read.records.remove(&worker);
        }
    }

    /// Notes a read of `namespace` that found `mark` in force and saw
    /// `records`; `None` forgets the last (no mark was in force).
    pub(super) fn read(&self, namespace: &str, seen: Option<(Mark, Vec<(u64, Basis)>)>) {
        let mut reads = lock(&self.reads);
        match seen {
            Some((mark, records)) => {
                let records = records.into_iter().collect();
                reads.insert(namespace.to_owned(), Read { mark, records });
            }
            None => {
                reads.remove(namespace);
            }
        }
    }

    /// The mark the last read of `namespace` found in force.
    pub(super) fn mark(&self, namespace: &str) -> Option<Mark> {
        lock(&self.reads).get(namespace).map(|read| read.mark)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record known at version 7 under marker 5, read `ago`.
    fn known(ago: Duration) -> Basis {
        let mark = Mark {
            epoch: 1,
            marker: 5,
            high_water: 0,
            create_revision: 1,
            mod_revision: 1,
        };
        let record = Stored {
            version: 7,
            mod_revision: 9,
            index_key: String::new(),
        };
        Basis {
            epoch: "1".to_owned(),
            cluster: 1,
            mark,
            record: Some(record),
            since: Since::read(Instant::now().checked_sub(ago).unwrap()),
        }
    }

    fn expect(marker: u64, version: Option<u64>) -> Expect {
        Expect {
            marker_unix_millis: marker,
            version,
        }
    }

    /// What was known serves a write only if it is what the write expects,
    /// and no TTL has passed since: a cluster restored meanwhile may have
    /// given the revisions it names to other writes.
    #[test]
    fn what_was_known_serves_only_the_write_it_matches_within_a_ttl() {
        let basis = known(Duration::from_secs(2));
        assert!(basis.serves(&expect(5, Some(7)), 3_000));
        assert!(
            !basis.serves(&expect(5, Some(7)), 1_000),
            "known longer than the TTL ago"
        );
        assert!(!basis.serves(&expect(6, Some(7)), 3_000), "another marker");
        assert!(!basis.serves(&expect(5, Some(8)), 3_000), "another version");
        assert!(!basis.serves(&expect(5, None), 3_000), "no record expected");
        // The lease it was written for counts, where longer.
        let written = Basis {
            since: Since::written(
                Instant::now() - Duration::from_secs(2),
                Duration::from_secs(3),
            ),
            ..basis
        };
        assert!(written.serves(&expect(5, Some(7)), 1_000));
    }
}

//! The records this client wrote, as it wrote them: what its holder's next
//! write (a renewal, a release) compares, in one transaction, without
//! reading the record and the namespace's history first.
//!
//! A write that names only what it wrote could land in a cluster restored
//! since, where a revision it names may have been given again to another
//! write: so a remembered write is used only while it is younger than its
//! lease's TTL (a restore takes the cluster down, and one that took longer
//! is read through), and the answer's raft term, below the one this client
//! saw, tells a restore that took less (the write is then said not to have
//! happened, and the record it left is void for every reader past the
//! restore).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A record this client wrote, and the history it wrote it under.
#[derive(Clone, Debug)]
pub(super) struct Written {
    /// The record's version, as written.
    pub(super) version: u64,
    /// The marker it was written under.
    pub(super) marker: u64,
    /// The revision the write was given: the record's `mod_revision`.
    pub(super) mod_revision: u64,
    /// The epoch's value the write compared.
    pub(super) epoch: String,
    /// The namespace's mark: its creation, and the high-water mark.
    pub(super) mark_created: u64,
    pub(super) high_water: u64,
    /// The index entry it filed the record under.
    pub(super) index_key: String,
    /// When it was written, and its lease's TTL.
    pub(super) at: Instant,
    pub(super) ttl: Duration,
}

impl Written {
    /// Whether a write may name it without reading the record first: its
    /// lease's TTL has not passed since (nor the next write's).
    pub(super) fn recent(&self, ttl_millis: u64) -> bool {
        self.at.elapsed() <= self.ttl.max(Duration::from_millis(ttl_millis))
    }
}

/// The records this client wrote, by namespace and worker id: one per
/// lease it holds.
#[derive(Default)]
pub(super) struct Writes(Mutex<HashMap<(String, u64), Written>>);

impl Writes {
    pub(super) fn get(&self, namespace: &str, worker: u64) -> Option<Written> {
        self.lock().get(&(namespace.to_owned(), worker)).cloned()
    }

    pub(super) fn note(&self, namespace: &str, worker: u64, written: Written) {
        self.lock().insert((namespace.to_owned(), worker), written);
    }

    pub(super) fn forget(&self, namespace: &str, worker: u64) {
        self.lock().remove(&(namespace.to_owned(), worker));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u64), Written>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

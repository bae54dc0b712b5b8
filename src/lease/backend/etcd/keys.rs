//! Where an etcd prefix keeps things: the prefix's own keys and each
//! namespace's, its numbers zero-padded so that keys sort as numbers.

use super::{EtcdRegistry, percent_encode};
use crate::lease::backend::LeaseError;

/// A number as keys hold it: zero-padded to 20 digits, so that keys sort
/// as numbers.
pub(super) fn pad(n: u64) -> String {
    format!("{n:020}")
}

/// A namespace's keys, and the prefix's.
pub(super) struct Keys {
    /// `<ms> <cluster id>`: the epoch.
    pub(super) epoch: String,
    /// The highest raft term the prefix saw, zero-padded.
    pub(super) witness: String,
    /// The highest namespace marker the prefix gave: markers never repeat.
    pub(super) last_mark: String,
    /// The namespace's name, kept among those the prefix has seen.
    pub(super) name: String,
    /// `<epoch ms> <marker ms> <high-water mark>`: the namespace's mark.
    pub(super) mark: String,
    /// Every key of the namespace starts with this.
    pub(super) base: String,
}

impl Keys {
    pub(super) fn record(&self, worker: u64) -> String {
        format!("{}w/{}", self.base, pad(worker))
    }

    pub(super) fn records(&self) -> String {
        format!("{}w/", self.base)
    }

    /// The free records under `marker`, by fence.
    pub(super) fn free(&self, marker: u64) -> String {
        format!("{}free/{}/", self.base, pad(marker))
    }

    /// The held records under `marker`, by expiry.
    pub(super) fn held(&self, marker: u64) -> String {
        format!("{}held/{}/", self.base, pad(marker))
    }
}

impl EtcdRegistry {
    pub(super) fn keys(&self, namespace: &str) -> Result<Keys, LeaseError> {
        super::super::check_namespace(namespace)?;
        let ns = percent_encode(namespace);
        let base = format!("{}/ns/{ns}/", self.prefix);
        Ok(Keys {
            epoch: format!("{}/epoch", self.prefix),
            witness: format!("{}/witness", self.prefix),
            last_mark: format!("{}/last-mark", self.prefix),
            name: format!("{}/names/{ns}", self.prefix),
            mark: format!("{base}mark"),
            base,
        })
    }
}

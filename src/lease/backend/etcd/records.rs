//! A record's JSON, and the index entries that file it: free records
//! under their marker by fence, held ones by expiry. A read finds records
//! through their entries and checks each against the record it names.

use std::collections::BTreeSet;

use serde_json::Value;

use super::EtcdRegistry;
use super::gateway::{Kv, Txn};
use super::keys::{Keys, pad};
use super::known::Stored;
use crate::lease::backend::LeaseError;
use crate::lease::backend::{NewRecord, Record};

/// A record's JSON value, as [`EtcdRegistry::record`] reads it.
pub(super) fn value(record: &NewRecord<'_>, marker: u64, expires: u64) -> String {
    serde_json::json!({
        "holder": record.holder,
        "version": record.version,
        "marker": marker,
        "expires": expires,
        "fence": record.fence_unix_millis,
    })
    .to_string()
}

/// The records of a snapshot, each id once, and the revision each was
/// read at; the ids seen with no record.
#[derive(Default)]
pub(super) struct Found {
    pub(super) records: Vec<Record>,
    revisions: Vec<u64>,
    absent: Vec<u64>,
    listed: BTreeSet<u64>,
}

impl Found {
    /// Adds what a key read for `worker` held, a record or none.
    pub(super) fn saw(
        &mut self,
        registry: &EtcdRegistry,
        worker: u64,
        kv: Option<&Kv>,
    ) -> Result<(), LeaseError> {
        match kv {
            Some(kv) => self.add(registry.record_of(kv)?, kv.mod_revision),
            // A record another range finds (read later) still counts.
            None if !self.listed.contains(&worker) && !self.absent.contains(&worker) => {
                self.absent.push(worker);
            }
            None => {}
        }
        Ok(())
    }

    pub(super) fn add(&mut self, record: Record, mod_revision: u64) {
        if self.listed.insert(record.worker) {
            self.absent.retain(|&w| w != record.worker);
            self.records.push(record);
            self.revisions.push(mod_revision);
        }
    }

    /// Each id seen, as stored: what a write over it compares.
    pub(super) fn stored(&self, keys: &Keys) -> Vec<(u64, Option<Stored>)> {
        let records = self
            .records
            .iter()
            .zip(&self.revisions)
            .map(|(r, &rev)| (r.worker, Some(Stored::of(keys, r, rev))));
        records
            .chain(self.absent.iter().map(|&w| (w, None)))
            .collect()
    }
}

impl EtcdRegistry {
    pub(super) fn corrupt(&self, detail: String) -> LeaseError {
        LeaseError::Corrupt {
            address: self.remote.address.clone(),
            detail,
        }
    }

    /// A record from its JSON value.
    pub(super) fn record(&self, worker: u64, value: &[u8]) -> Result<Record, LeaseError> {
        let corrupt = |detail: String| self.corrupt(format!("worker {worker}'s record: {detail}"));
        let v: Value = serde_json::from_slice(value).map_err(|e| corrupt(e.to_string()))?;
        let field = |name: &str| {
            v[name]
                .as_u64()
                .ok_or_else(|| corrupt(format!("its {name} is missing or not a number")))
        };
        Ok(Record {
            worker,
            holder: v["holder"]
                .as_str()
                .ok_or_else(|| corrupt("it has no holder".into()))?
                .to_owned(),
            version: field("version")?,
            marker_unix_millis: field("marker")?,
            expires_unix_millis: field("expires")?,
            fence_unix_millis: field("fence")?,
        })
    }

    /// The record a key holds, its worker id read from the key.
    pub(super) fn record_of(&self, kv: &Kv) -> Result<Record, LeaseError> {
        self.record(self.worker_of(&kv.key)?, &kv.value)
    }

    /// The worker id at the end of a key.
    pub(super) fn worker_of(&self, key: &str) -> Result<u64, LeaseError> {
        key.rsplit('/')
            .next()
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| self.corrupt(format!("the key {key:?} names no worker id")))
    }

    /// The index key a record is filed under.
    pub(super) fn index_key(
        keys: &Keys,
        worker: u64,
        marker: u64,
        holder: &str,
        expires: u64,
        fence: u64,
    ) -> String {
        if holder.is_empty() {
            format!("{}{}/{}", keys.free(marker), pad(fence), pad(worker))
        } else {
            format!("{}{}/{}", keys.held(marker), pad(expires), pad(worker))
        }
    }

    /// Drops index entries whose records are gone or written since: each
    /// only while the record is as it was read, so that an entry filed
    /// again meanwhile stays. Best effort: a read finds a stale one again.
    pub(super) fn drop_stale(
        &self,
        keys: &Keys,
        stale: &[(String, u64, u64)],
    ) -> Result<(), LeaseError> {
        for (index_key, worker, revision) in stale {
            let mut txn = Txn::new();
            match revision {
                0 => txn.created_at(&keys.record(*worker), 0),
                &revision => txn.modified_at(&keys.record(*worker), revision),
            }
            txn.delete(index_key);
            self.txn(&txn)?;
        }
        Ok(())
    }
}

/// What an index entry must match to file its record: the namespace's
/// keys and the marker in force.
pub(super) struct Filed<'a> {
    pub(super) keys: &'a Keys,
    pub(super) marker: u64,
}

impl EtcdRegistry {
    /// Checks each index entry (its worker id and key) against the record
    /// read for it: one that files its record adds it to `found`; one that
    /// does not is dropped, and its record, if any, added all the same: a
    /// probe finds an id whose record is gone.
    pub(super) fn reconcile(
        &self,
        filed: &Filed<'_>,
        entries: Vec<((u64, String), Option<Kv>)>,
        found: &mut Found,
    ) -> Result<(), LeaseError> {
        let Filed { keys, marker } = *filed;
        let mut stale = Vec::new();
        for ((worker, index_key), kv) in entries {
            let record = kv.as_ref().map(|kv| self.record_of(kv)).transpose()?;
            let revision = kv.map_or(0, |kv| kv.mod_revision);
            let files = record.as_ref().is_some_and(|r| {
                r.marker_unix_millis == marker
                    && index_key
                        == Self::index_key(
                            keys,
                            worker,
                            marker,
                            &r.holder,
                            r.expires_unix_millis,
                            r.fence_unix_millis,
                        )
            });
            if !files {
                stale.push((index_key, worker, revision));
            }
            if let Some(record) = record {
                found.add(record, revision);
            }
        }
        self.drop_stale(keys, &stale)
    }
}

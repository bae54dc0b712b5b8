//! Leases in an etcd cluster (feature `etcd`): the storage steps.

mod errors;
mod gateway;
mod history;
#[cfg(feature = "inspect")]
mod inspect;
mod keys;
mod known;
mod records;
mod session;
mod url;

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use self::gateway::{Gateway, Txn};
use self::history::Seen;
use self::known::{Writes, Written};
use self::records::{Filed, Found};
use self::url::percent_encode;
use super::remote::Remote;
use super::{Expect, LeaseError, NewRecord, ReadRequest, Registry, Snapshot, TimeBase};
use crate::clock::units::{ceil_millis, floor_millis};
use crate::clock::{Clock, SystemClock};

/// Worker-id leases kept in an etcd cluster, under a key prefix.
///
/// ```text
/// <prefix>/epoch                       <ms> <cluster id>: the history the marks belong to
/// <prefix>/witness                     the highest raft term seen, zero-padded
/// <prefix>/last-mark                   the highest namespace marker given: none repeats
/// <prefix>/names/<namespace>           the namespaces ever marked
/// <prefix>/ns/<namespace>/mark         <epoch ms> <marker ms> <high-water mark>
/// <prefix>/ns/<namespace>/w/<id>       the record: JSON holder, version, marker, expires, fence
/// <prefix>/ns/<namespace>/free/<m>/<fence>/<id>    free records under marker m, by fence
/// <prefix>/ns/<namespace>/held/<m>/<expires>/<id>  held ones, by expiry
/// ```
///
/// (Numbers are zero-padded to 20 digits, so keys sort as numbers; a
/// namespace's `/` and `%` are percent-encoded.)
///
/// A [`swap`](Registry::swap) reads the record, then writes it in one
/// transaction that compares the epoch, the namespace's mark (its revision
/// when the write raises the high-water mark, its creation otherwise) and
/// the record's revision: the index keys it moves are those of the record
/// it compared. A holder's own next write (a renewal, its release), within
/// its lease's TTL, skips the read: it compares what it wrote, and the
/// answer's raft term tells a restore it missed. A
/// [`read`](Registry::read) is three transactions, each a consistent view
/// at one revision, bounded whatever the number of records: the free
/// record with the earliest fence, the four soonest-expiring holders, the
/// id at the high-water mark, and the ids flakegen probes. Every request is
/// linearizable (served through the leader), and every call, connecting
/// included, finishes or fails within its timeout on the client. The
/// client speaks etcd's JSON gateway (`/v3/...` on the client port, served
/// by every member since etcd 3.4): no gRPC stack, no protobuf compiler.
///
/// # Time
///
/// etcd has no clock a client can read, so this registry's times are its
/// host's ([`TimeBase::Client`]): a record's expiry is its writer's clock
/// plus the TTL, judged by the reader's clock, and a marker is the clock of
/// the host that wrote it. The fences that keep holders' IDs apart need no
/// clock at all. What a server clock would check becomes an assumption:
/// **every two hosts that lease from one prefix keep their clocks within
/// the skew allowance of each other** (NTP does, by orders of magnitude).
/// A host further off is not refused, as it is by the other registries; its
/// successors wait for its fences, and after a loss its IDs could meet a
/// successor's.
///
/// # What counts as a loss
///
/// etcd forgets nothing it confirmed while a majority of its members stands:
/// a leader killed, frozen or partitioned away, and a member restarted or
/// replaced, cost a renewal's retry at most, and no generator refuses. Its
/// losses are a **restore from a snapshot** and **keys deleted**. A restore
/// that gives the cluster a new id (a new `--initial-cluster-token` or new
/// member URLs) voids the epoch, which names the cluster; one that keeps
/// the id restarts raft's term at 2, below the highest term the prefix saw
/// (`<prefix>/witness`), and the first client to notice starts a new
/// epoch. Every namespace's mark under the old epoch is void, so every id
/// waits the TTL and the skew. Keys deleted (`etcdctl del --prefix`): a
/// namespace with no mark gets its host's clock now, later than any marker
/// the prefix gave; it is new, or was emptied, and nothing in an empty
/// prefix tells which (see [`Registry::mark`]). A record deleted under a
/// mark that stays is found below the high-water mark, or through its
/// index entry, and its id waits from the moment it was seen gone.
///
/// Not detected: a snapshot taken while the cluster was still in its first
/// leader term, restored under the same token (nothing in the restored
/// cluster differs from the moment of the snapshot; `flakegen leases check`
/// says when a cluster is there). Turn on
/// [`Lease::wait_out_rollbacks`](crate::lease::Lease::wait_out_rollbacks)
/// where that can happen.
///
/// # Examples
///
/// ```no_run
/// use flakegen::{Builder, IdGenerator, lease::{EtcdRegistry, Lease}};
///
/// let registry = EtcdRegistry::new("etcd://app:secret@10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/flakegen")?;
/// let generator = Builder::new().lease(Lease::new(registry, "orders")).build_atomic()?;
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct EtcdRegistry {
    /// `host:port` of each member the URL names.
    endpoints: Vec<String>,
    /// The keys' prefix, without a trailing `/`.
    prefix: String,
    credentials: Option<(String, String)>,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    /// The member the next connection tries first: after a failure, the
    /// next one in the URL.
    next: AtomicUsize,
    /// The cluster this client has talked to, the epoch it found there, and
    /// the highest raft term it saw under that epoch: a lower term under the
    /// same epoch later means the cluster was restored.
    seen: Mutex<Option<Seen>>,
    /// The auth token of the last login, which new connections carry.
    token: session::Token,
    /// The records its holders wrote: what their next writes compare.
    writes: Writes,
    remote: Remote<Gateway>,
}

/// The clock this registry's times are read from: its host's.
fn now_ms() -> u64 {
    floor_millis(SystemClock.unix_nanos())
}

impl EtcdRegistry {
    /// Writes `record` over the record this client wrote last (`written`),
    /// in one transaction that compares the epoch, the mark's creation and
    /// the record's revision as they were then. `Some` with the swap's
    /// outcome, or `None` when the record or the history moved since (or
    /// nothing is known), and the swap must read them first.
    fn swap_again(
        &self,
        keys: &keys::Keys,
        namespace: &str,
        worker: u64,
        written: &Written,
        record: &NewRecord<'_>,
    ) -> Result<Option<Option<u64>>, LeaseError> {
        let key = keys.record(worker);
        let now = now_ms();
        let expires = if record.ttl_millis == 0 {
            0
        } else {
            now.saturating_add(record.ttl_millis)
        };
        let new_index = Self::index_key(
            keys,
            worker,
            written.marker,
            record.holder,
            expires,
            record.fence_unix_millis,
        );
        let mut txn = Txn::new();
        txn.value_is(&keys.epoch, &written.epoch);
        txn.created_at(&keys.mark, written.mark_created);
        txn.modified_at(&key, written.mod_revision);
        if written.index_key != new_index {
            txn.delete(&written.index_key);
        }
        txn.put(&key, &records::value(record, written.marker, expires));
        txn.put(&new_index, "");
        // Forgotten first: after a call that failed, the record's state is
        // in doubt, and the next write reads it.
        self.writes.forget(namespace, worker);
        let answer = self.txn(&txn)?;
        if self.rewound(answer.header, Some(&written.epoch)) {
            // A restore this client saw past: whatever landed is under an
            // epoch no reader past the restore keeps.
            return Ok(Some(None));
        }
        if !answer.succeeded {
            return Ok(None);
        }
        self.writes.note(
            namespace,
            worker,
            Written {
                version: record.version,
                mod_revision: answer.header.revision,
                index_key: new_index,
                at: Instant::now(),
                ttl: Duration::from_millis(record.ttl_millis),
                ..written.clone()
            },
        );
        Ok(Some(Some(now)))
    }
}

impl Registry for EtcdRegistry {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        let keys = self.keys(namespace)?;
        let workers = request.workers;
        let mut txn = Txn::new();
        let head_gets = Self::head_gets(&mut txn, &keys);
        let preferred = request
            .prefer
            .filter(|&w| w < workers)
            .map(|w| txn.get(&keys.record(w)));
        let first = (workers > 0).then(|| txn.get(&keys.record(0)));
        let answer = self.txn(&txn)?;
        let head = self.head(&answer, &head_gets)?;
        let mut found = Found::default();
        for get in [preferred, first].into_iter().flatten() {
            if let Some(kv) = self.kv(&answer, get)? {
                found.add(self.record_of(&kv)?);
            }
        }
        let Some(mark) = head.in_force() else {
            // No mark in force: every record is from before it, and the
            // high-water mark is 0.
            return Ok(Snapshot {
                server_unix_millis: now_ms(),
                marker_unix_millis: None,
                records: found.records,
                ..Snapshot::default()
            });
        };
        self.raise_witness(&head, &keys)?;
        let (marker, high) = (mark.marker, mark.high_water);
        let probed = request.probed();

        let mut txn = Txn::new();
        let free = txn.scan(&keys.free(marker), None, 1, true);
        let held = txn.scan(&keys.held(marker), None, 4, true);
        let at_mark = (high < workers).then(|| txn.get(&keys.record(high)));
        let probe = (!probed.is_empty()).then(|| {
            txn.scan(
                &keys.records(),
                Some(&keys.record(probed.start)),
                probed.end - probed.start,
                false,
            )
        });
        let answer = self.txn(&txn)?;
        let now = now_ms();
        // Index entries: free at the head, held past their expiry.
        let mut entries = Vec::new();
        for kv in self.kvs(&answer, free)? {
            entries.push((self.worker_of(&kv.key)?, kv.key));
        }
        for kv in self.kvs(&answer, held)? {
            let expires = kv
                .key
                .rsplit('/')
                .nth(1)
                .and_then(|e| e.parse::<u64>().ok());
            if expires.is_some_and(|e| e <= now) {
                entries.push((self.worker_of(&kv.key)?, kv.key));
            }
        }
        if let Some(get) = at_mark {
            if let Some(kv) = self.kv(&answer, get)? {
                found.add(self.record_of(&kv)?);
            }
        }
        // The probe: every record from its first id, as many keys as it
        // has ids (keys sort as numbers), those past it left out.
        for kv in probe
            .map(|get| self.kvs(&answer, get))
            .transpose()?
            .unwrap_or_default()
        {
            let record = self.record_of(&kv)?;
            if probed.contains(&record.worker) {
                found.add(record);
            }
        }

        // The entries' records.
        if !entries.is_empty() {
            let mut txn = Txn::new();
            let gets: Vec<_> = entries
                .iter()
                .map(|(w, _)| txn.get(&keys.record(*w)))
                .collect();
            let answer = self.txn(&txn)?;
            let filed = Filed {
                keys: &keys,
                marker,
            };
            self.reconcile(&filed, &answer, entries.into_iter().zip(gets), &mut found)?;
        }
        Ok(Snapshot {
            server_unix_millis: now,
            marker_unix_millis: Some(marker),
            records: found.records,
            high_water: high,
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        let keys = self.keys(namespace)?;
        // A few tries: another client may write between the read and the
        // write, and its marker is then the one in force.
        for _ in 0..4 {
            let mut txn = Txn::new();
            let head_gets = Self::head_gets(&mut txn, &keys);
            let last = txn.get(&keys.last_mark);
            let answer = self.txn(&txn)?;
            let head = self.head(&answer, &head_gets)?;
            if let Some(mark) = head.in_force() {
                self.raise_witness(&head, &keys)?;
                return Ok(mark.marker);
            }
            let Some(epoch) = head.epoch_in_force else {
                self.new_epoch(&head, &keys)?;
                continue;
            };
            // Later than any marker the prefix gave, and than the
            // namespace's own old one: none repeats.
            let last = self.kv(&answer, last)?;
            let given = last
                .as_ref()
                .and_then(|kv| std::str::from_utf8(&kv.value).ok()?.parse::<u64>().ok());
            let marker = ceil_millis(SystemClock.unix_nanos())
                .max(given.map_or(0, |g| g + 1))
                .max(head.mark.map_or(0, |m| m.marker + 1));
            let mut txn = Txn::new();
            txn.value_is(&keys.epoch, head.epoch_text().unwrap_or_default());
            match head.mark {
                Some(mark) => txn.modified_at(&keys.mark, mark.mod_revision),
                None => txn.created_at(&keys.mark, 0),
            }
            match &last {
                Some(kv) => txn.modified_at(&keys.last_mark, kv.mod_revision),
                None => txn.created_at(&keys.last_mark, 0),
            }
            txn.put(&keys.mark, &format!("{epoch} {marker} 0"));
            txn.put(&keys.last_mark, &marker.to_string());
            txn.put(&keys.name, "");
            if self.txn(&txn)?.succeeded {
                return Ok(marker);
            }
        }
        Err(LeaseError::Contended {
            namespace: namespace.to_owned(),
            attempts: 4,
        })
    }

    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        let keys = self.keys(namespace)?;
        let key = keys.record(worker);
        // A holder's own next write (a renewal, its release): one
        // transaction, comparing what it wrote last.
        if let Some(written) = self
            .writes
            .get(namespace, worker)
            .filter(|w| Some(w.version) == expect.version)
            .filter(|w| w.marker == expect.marker_unix_millis && worker < w.high_water)
            .filter(|w| w.recent(record.ttl_millis))
        {
            if let Some(done) = self.swap_again(&keys, namespace, worker, &written, record)? {
                return Ok(done);
            }
        }
        let mut txn = Txn::new();
        let head_gets = Self::head_gets(&mut txn, &keys);
        let old = txn.get(&key);
        let answer = self.txn(&txn)?;
        let head = self.head(&answer, &head_gets)?;
        // A cluster restored since the mark was written (its term went
        // back), or another cluster: the mark is not in force, whatever its
        // value says.
        let Some(mark) = head
            .in_force()
            .filter(|m| m.marker == expect.marker_unix_millis)
        else {
            return Ok(None);
        };
        let old = match self.kv(&answer, old)? {
            Some(kv) => Some((self.record(worker, &kv.value)?, kv.mod_revision)),
            None => None,
        };
        if old.as_ref().map(|(r, _)| r.version) != expect.version {
            return Ok(None);
        }
        let marker = mark.marker;
        let now = now_ms();
        let expires = if record.ttl_millis == 0 {
            0
        } else {
            now.saturating_add(record.ttl_millis)
        };
        let value = records::value(record, marker, expires);
        let new_index = Self::index_key(
            &keys,
            worker,
            marker,
            record.holder,
            expires,
            record.fence_unix_millis,
        );
        let mut txn = Txn::new();
        txn.value_is(&keys.epoch, head.epoch_text().unwrap_or_default());
        if worker >= mark.high_water {
            txn.modified_at(&keys.mark, mark.mod_revision);
            txn.put(
                &keys.mark,
                &format!("{} {marker} {}", mark.epoch, worker + 1),
            );
        } else {
            // Renewals leave the mark alone: only its creation is compared,
            // so that one raising it does not fail them.
            txn.created_at(&keys.mark, mark.create_revision);
        }
        match &old {
            Some((old, revision)) => {
                txn.modified_at(&key, *revision);
                let old_index = Self::index_key(
                    &keys,
                    worker,
                    old.marker_unix_millis,
                    &old.holder,
                    old.expires_unix_millis,
                    old.fence_unix_millis,
                );
                // One transaction may not name a key twice.
                if old_index != new_index {
                    txn.delete(&old_index);
                }
            }
            None => txn.created_at(&key, 0),
        }
        txn.put(&key, &value);
        txn.put(&new_index, "");
        let answer = self.txn(&txn)?;
        if !answer.succeeded {
            self.writes.forget(namespace, worker);
            return Ok(None);
        }
        let high_water = mark.high_water.max(worker + 1);
        self.writes.note(
            namespace,
            worker,
            Written {
                version: record.version,
                marker,
                mod_revision: answer.header.revision,
                epoch: head.epoch_text().unwrap_or_default().to_owned(),
                mark_created: mark.create_revision,
                high_water,
                index_key: new_index,
                at: Instant::now(),
                ttl: Duration::from_millis(record.ttl_millis),
            },
        );
        // The clock the expiry was reckoned from: the write's time, as the
        // contract has a server say it.
        Ok(Some(now))
    }

    fn time_base(&self) -> TimeBase {
        TimeBase::Client
    }

    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn super::Inspect> {
        Some(self)
    }
}

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

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use self::gateway::{Gateway, Get, Kv, Txn};
use self::history::{Mark, Terms};
use self::keys::Keys;
use self::known::{Basis, Known, Stored};
use self::records::{Filed, Found};
use self::url::percent_encode;
use super::client::known::Since;
use super::client::remote::Remote;
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
/// A [`swap`](Registry::swap) writes the record in one transaction that
/// compares the epoch, the namespace's mark (its revision when the write
/// raises the high-water mark, its creation otherwise) and the record's
/// revision, as this client last knew them: the index keys it moves are
/// those of the record it compared. What it knew is the holder's own last
/// write (a renewal, a release) or the read the build chose from, within a
/// TTL; the answer's cluster and raft term tell a restore it missed.
/// Knowing nothing, or finding that something moved, it reads the record
/// first. A [`read`](Registry::read) is one transaction where the
/// namespace's mark is the one this client last read (two where it moved,
/// and one more for index entries whose records it did not read), each a
/// consistent view at one revision, bounded whatever the number of
/// records: the free record with the earliest fence, the four
/// soonest-expiring holders, the id at the high-water mark, and the ids
/// flakegen probes. Every request is
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
/// successor's. A host whose clock runs ahead takes no live lease early:
/// a held record another process wrote expires no earlier than a TTL
/// after this process first saw its version (the protocol's rule, as on
/// every registry whose times are its clients').
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
    /// The highest raft term this client saw in each cluster under each
    /// epoch: a lower term under the same epoch later means the cluster
    /// was restored.
    terms: Mutex<Terms>,
    /// The auth token of the last login, which new connections carry.
    token: session::Token,
    /// The records it read and wrote: what its next writes compare.
    known: Known,
    remote: Remote<Gateway>,
}

/// The clock this registry's times are read from: its host's.
fn now_ms() -> u64 {
    floor_millis(SystemClock.unix_nanos())
}

/// What a write over a known record came to.
enum Outcome {
    /// It landed: the clock its expiry was reckoned from.
    Landed(u64),
    /// The record or the history moved since: read them again.
    Moved,
    /// It landed in a cluster restored since, or in another: it did not
    /// happen.
    Void,
}

/// The ranges a read takes under a namespace's mark.
struct Ranges {
    /// The free record with the earliest fence.
    free: Get,
    /// The four soonest-expiring holders.
    held: Get,
    /// The id at the high-water mark.
    at_mark: Option<(u64, Get)>,
    /// The ids probed, from the first, as many keys as ids (keys sort as
    /// numbers).
    probe: Option<(Range<u64>, Get)>,
}

impl EtcdRegistry {
    /// Adds to `txn` the ranges a read of `request` takes under `mark`.
    fn ranges(txn: &mut Txn, keys: &Keys, mark: &Mark, request: &ReadRequest) -> Ranges {
        let probed = request.probed();
        let free = txn.scan(&keys.free(mark.marker), None, 1, true);
        let held = txn.scan(&keys.held(mark.marker), None, 4, true);
        let high = mark.high_water;
        let at_mark = (high < request.workers).then(|| (high, txn.get(&keys.record(high))));
        let probe = (!probed.is_empty()).then(|| {
            let from = keys.record(probed.start);
            let get = txn.scan(
                &keys.records(),
                Some(&from),
                probed.end - probed.start,
                false,
            );
            (probed, get)
        });
        Ranges {
            free,
            held,
            at_mark,
            probe,
        }
    }

    /// Writes `record` over `worker`'s record as `basis` knew it, in one
    /// transaction that compares the epoch, the namespace's mark (its
    /// revision when the write raises the high-water mark, its creation
    /// otherwise) and the record's revision: the index entry it moves is
    /// the one of the record it compared.
    fn write(
        &self,
        keys: &Keys,
        namespace: &str,
        worker: u64,
        basis: &Basis,
        record: &NewRecord<'_>,
    ) -> Result<Outcome, LeaseError> {
        let key = keys.record(worker);
        let mark = basis.mark;
        let now = now_ms();
        let expires = if record.ttl_millis == 0 {
            0
        } else {
            now.saturating_add(record.ttl_millis)
        };
        let new_index = Self::index_key(
            keys,
            worker,
            mark.marker,
            record.holder,
            expires,
            record.fence_unix_millis,
        );
        let mut txn = Txn::new();
        txn.value_is(&keys.epoch, &basis.epoch);
        let raises = worker >= mark.high_water;
        if raises {
            txn.modified_at(&keys.mark, mark.mod_revision);
            txn.put(
                &keys.mark,
                &format!("{} {} {}", mark.epoch, mark.marker, worker + 1),
            );
        } else {
            // Writes below the high-water mark leave the mark alone: its
            // creation, epoch and marker are compared, not its high-water
            // mark, so that a write raising it does not fail them, and one
            // that replaced the marker in place (`mark` over a mark of
            // another epoch, a put by hand) does.
            txn.created_at(&keys.mark, mark.create_revision);
            txn.value_begins(&keys.mark, &format!("{} {}", mark.epoch, mark.marker));
        }
        match &basis.record {
            Some(old) => {
                txn.modified_at(&key, old.mod_revision);
                // One transaction may not name a key twice.
                if old.index_key != new_index {
                    txn.delete(&old.index_key);
                }
            }
            None => txn.created_at(&key, 0),
        }
        txn.put(&key, &records::value(record, mark.marker, expires));
        txn.put(&new_index, "");
        // Forgotten first: after a call that failed, the record's state is
        // in doubt, and the next write reads it.
        self.known.forget(namespace, worker);
        let sent = Instant::now();
        let answer = self.txn(&txn)?;
        if !answer.succeeded {
            return Ok(Outcome::Moved);
        }
        if answer.header.cluster != basis.cluster || self.rewound(answer.header, Some(&basis.epoch))
        {
            // A restore this client saw past: whatever landed is under an
            // epoch no reader past the restore keeps.
            return Ok(Outcome::Void);
        }
        let revision = answer.header.revision;
        self.known.wrote(
            namespace,
            worker,
            Basis {
                mark: Mark {
                    high_water: mark.high_water.max(worker + 1),
                    mod_revision: if raises { revision } else { mark.mod_revision },
                    ..mark
                },
                record: Some(Stored {
                    version: record.version,
                    mod_revision: revision,
                    index_key: new_index,
                }),
                since: Since::written(sent, Duration::from_millis(record.ttl_millis)),
                ..basis.clone()
            },
        );
        // The clock the expiry was reckoned from: the write's time, as the
        // contract has a server say it.
        Ok(Outcome::Landed(now))
    }
}

impl Registry for EtcdRegistry {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        let keys = self.keys(namespace)?;
        let workers = request.workers;
        let started = Instant::now();
        // The mark the last read found: its ranges ride in the first
        // transaction, and a second is needed only where the mark moved.
        let expected = self.known.mark(namespace);
        let mut txn = Txn::new();
        let head_gets = Self::head_gets(&mut txn, &keys);
        let mut singles = Vec::new();
        if let Some(w) = request.prefer.filter(|&w| w < workers) {
            singles.push((w, txn.get(&keys.record(w))));
        }
        if workers > 0 {
            singles.push((0, txn.get(&keys.record(0))));
        }
        let guessed = expected.map(|mark| (mark, Self::ranges(&mut txn, &keys, &mark, request)));
        let answer = self.txn(&txn)?;
        let head = self.head(&answer, &head_gets)?;
        let mut found = Found::default();
        // The records this answer read, or saw absent, by id.
        let mut in_hand: HashMap<u64, Option<Kv>> = HashMap::new();
        for (worker, get) in singles {
            let kv = self.kv(&answer, get)?;
            found.saw(self, worker, kv.as_ref())?;
            in_hand.insert(worker, kv);
        }
        let Some(mark) = head.in_force() else {
            // No mark in force: every record is from before it, and the
            // high-water mark is 0.
            self.known.read(namespace, None);
            return Ok(Snapshot {
                server_unix_millis: now_ms(),
                marker_unix_millis: None,
                records: found.records,
                ..Snapshot::default()
            });
        };
        self.raise_witness(&head, &keys)?;
        let (answer, ranges) = match guessed {
            Some((guess, ranges))
                if (guess.marker, guess.high_water) == (mark.marker, mark.high_water) =>
            {
                (answer, ranges)
            }
            _ => {
                in_hand.clear();
                let mut txn = Txn::new();
                let ranges = Self::ranges(&mut txn, &keys, &mark, request);
                (self.txn(&txn)?, ranges)
            }
        };
        let now = now_ms();
        // Index entries: free at the head, held past their expiry.
        let mut entries = Vec::new();
        for kv in self.kvs(&answer, ranges.free)? {
            entries.push((self.worker_of(&kv.key)?, kv.key));
        }
        for kv in self.kvs(&answer, ranges.held)? {
            let expires = kv
                .key
                .rsplit('/')
                .nth(1)
                .and_then(|e| e.parse::<u64>().ok());
            if expires.is_some_and(|e| e <= now) {
                entries.push((self.worker_of(&kv.key)?, kv.key));
            }
        }
        if let Some((high, get)) = ranges.at_mark {
            let kv = self.kv(&answer, get)?;
            found.saw(self, high, kv.as_ref())?;
            in_hand.insert(high, kv);
        }
        if let Some((probed, get)) = ranges.probe {
            for w in probed.clone() {
                in_hand.insert(w, None);
            }
            // Those past the probe left out.
            for kv in self.kvs(&answer, get)? {
                let record = self.record_of(&kv)?;
                if probed.contains(&record.worker) {
                    found.add(record.clone(), kv.mod_revision);
                    in_hand.insert(record.worker, Some(kv));
                }
            }
        }

        // The entries' records: those this answer read, and the others in
        // one more transaction.
        let (near, far): (Vec<_>, Vec<_>) = entries
            .into_iter()
            .partition(|(w, _)| in_hand.contains_key(w));
        let mut checked: Vec<_> = near
            .into_iter()
            .map(|entry| {
                let kv = in_hand[&entry.0].clone();
                (entry, kv)
            })
            .collect();
        if !far.is_empty() {
            let mut txn = Txn::new();
            let gets: Vec<_> = far.iter().map(|(w, _)| txn.get(&keys.record(*w))).collect();
            let answer = self.txn(&txn)?;
            for (entry, get) in far.into_iter().zip(gets) {
                checked.push((entry, self.kv(&answer, get)?));
            }
        }
        let filed = Filed {
            keys: &keys,
            marker: mark.marker,
        };
        self.reconcile(&filed, checked, &mut found)?;
        let seen = found
            .stored(&keys)
            .into_iter()
            .map(|(worker, stored)| (worker, Basis::read(&head, mark, stored, started)))
            .collect();
        self.known.read(namespace, Some((mark, seen)));
        Ok(Snapshot {
            server_unix_millis: now,
            marker_unix_millis: Some(mark.marker),
            records: found.records,
            high_water: mark.high_water,
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
        // What this client knows of the record (its holder's last write, or
        // the read the choice came from): one transaction names it.
        if let Some(basis) = self
            .known
            .basis(namespace, worker, &expect, record.ttl_millis)
        {
            match self.write(&keys, namespace, worker, &basis, record)? {
                Outcome::Landed(now) => return Ok(Some(now)),
                Outcome::Void => return Ok(None),
                Outcome::Moved => {}
            }
        }
        let key = keys.record(worker);
        let mut txn = Txn::new();
        let head_gets = Self::head_gets(&mut txn, &keys);
        let old = txn.get(&key);
        let read = Instant::now();
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
        let old = old.map(|(old, revision)| Stored::of(&keys, &old, revision));
        let basis = Basis::read(&head, mark, old, read);
        Ok(
            match self.write(&keys, namespace, worker, &basis, record)? {
                Outcome::Landed(now) => Some(now),
                Outcome::Moved | Outcome::Void => None,
            },
        )
    }

    fn time_base(&self) -> TimeBase {
        TimeBase::Client
    }

    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn super::Inspect> {
        Some(self)
    }
}

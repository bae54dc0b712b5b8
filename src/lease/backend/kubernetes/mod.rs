//! Leases on Kubernetes `Lease` objects (feature `kubernetes`): the
//! storage steps.

mod api;
mod errors;
#[cfg(feature = "inspect")]
mod inspect;
mod known;
mod objects;
mod session;
mod url;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use self::api::Token;
use self::known::Seen;
use self::objects::{Filed, Marker, Names, Object};
use super::client::remote::Remote;
use super::{
    Expect, LeaseError, MarkerCheck, NewRecord, ReadCost, ReadRequest, Registry, Snapshot,
    TimeBase, check_namespace,
};
use crate::clock::units::{ceil_millis, floor_millis};
use crate::clock::{Clock, SystemClock};

/// Worker-id leases on Kubernetes `Lease` objects (`coordination.k8s.io/v1`),
/// in one Kubernetes namespace: worker ids for a Deployment, or anything
/// autoscaled, with no database, from the store the cluster already runs.
///
/// ```text
/// <prefix>-<h>-marker   the namespace's marker: marker ms, high-water mark
/// <prefix>-<h>-<id>     a worker id's record: holder, version, marker (and
///                       its Lease's uid), expiry, fence
/// ```
///
/// `<h>` is 10 base32 characters of a hash of the flakegen namespace, whose
/// real name is in each object's annotation `flakegen.io/namespace` and is
/// checked on every read. flakegen's truth is in annotations
/// (`flakegen.io/fence`, `/expires`, `/version`, `/marker`, `/marker-uid`);
/// the `spec` is filled as client-go's leader election fills it, so
/// `kubectl get leases` shows each id's holder. Every object carries the
/// labels `app.kubernetes.io/managed-by=flakegen` and `flakegen.io/ns=<h>`.
///
/// A [`read`](Registry::read) is one `LIST` of the namespace's objects (a
/// consistent view, read from etcd, never from the server's cache). A
/// [`swap`](Registry::swap) is a compare-and-set on the record's Lease: a
/// `PUT` naming the `resourceVersion` **and the uid** this client saw (a
/// `PUT` naming a deleted Lease's version alone would create it anew), or a
/// `POST`, which fails if the Lease exists. A write that raises the
/// high-water mark first raises it on the marker's Lease, by the same
/// compare-and-set. A renewal is one `PUT`; a build, a `LIST`, then the
/// marker confirmed (a `GET`, or the `PUT` that raises the high-water
/// mark) and the record written: 3 round trips.
///
/// # Without a transaction across objects
///
/// Kubernetes compares one object at a time, so a swap cannot check the
/// marker in the same step as the record, as the trait asks
/// ([`MarkerCheck::ConfirmedFirst`]). What
/// keeps IDs apart instead:
///
/// - A write of a record that is not its own holder's renewal, and every
///   write of a new record, first confirms the marker on the server (a
///   `GET`, or the compare-and-set that raises the high-water mark).
/// - A holder whose marker was replaced while its record stayed (a restore
///   noticed, a marker deleted by hand) may go on renewing it; every reader
///   sees the record as void, and the loss rule fences it. Whoever takes it
///   over does so by a compare-and-set on the same Lease: if the old holder
///   renewed first, the takeover fails and reads the new fence; if the
///   takeover wins, the old holder's next renewal fails, and it stops at a
///   fence the taker already starts past.
///
/// # Time
///
/// The API server shows no clock but its `Date` header, to the second, so
/// this registry's times are its host's ([`TimeBase::Client`]), as etcd's
/// are: every two hosts that lease from one prefix keep their clocks within
/// the skew allowance of each other. `flakegen leases check` compares this
/// host's clock with the server's `Date`. And, as on every registry whose
/// times are its clients', a held record another process wrote expires no
/// earlier than a TTL after this process first saw its version (the
/// protocol's rule): a host whose clock runs ahead cannot take a live lease
/// early.
///
/// # What counts as a loss
///
/// Leases deleted (the marker, a record, every object of the namespace, or
/// the Kubernetes namespace itself): a namespace with no marker gets its
/// host's clock now, and an id whose record is gone waits from the moment
/// that was seen. An etcd restore under the API server, which brings back
/// objects with their old uids and lower `resourceVersion`s: a client that
/// saw an object's later version notices, and replaces the marker. A
/// restore that no running client saw before is invisible (the restored
/// store is consistent, and nothing in it differs from the moment of the
/// snapshot): restore with the API servers stopped for longer than the TTL
/// and the skew allowance, as Kubernetes' own procedure stops them, or turn
/// on [`Lease::wait_out_rollbacks`](crate::lease::Lease::wait_out_rollbacks).
///
/// An API server that restarts is out of reach meanwhile, and nothing is
/// lost: behind a single one (a one-node control plane, a development
/// cluster), a restart leaves the registry silent for a few seconds, which
/// a lease rides out as it rides out any registry out of reach (see
/// [Choosing a TTL](crate::lease#choosing-a-ttl)); a shorter TTL may not,
/// and the generator then refuses IDs until a renewal lands. Behind
/// several API servers and a load balancer, a client whose connection one
/// of them closed opens another, to a server still up.
///
/// Renewals write to the cluster's own etcd: at the default TTL of 10 s,
/// renewed every third of it, a pod writes 0.3 Leases a second (100 pods,
/// 30 a second). Keep the TTL at 10 s or more, as the kubelet's node
/// leases do (40 s).
///
/// # Examples
///
/// ```no_run
/// use flakegen::{Builder, IdGenerator, lease::{KubernetesRegistry, Lease}};
///
/// // In a pod whose service account may get, list, create, update and
/// // delete Leases in its own namespace.
/// let registry = KubernetesRegistry::new("kube:///flakegen")?;
/// let lease = Lease::new(registry, "orders").ttl(std::time::Duration::from_secs(10));
/// let generator = Builder::new().lease(lease).build_atomic()?;
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct KubernetesRegistry {
    /// `host:port` of the API server.
    endpoint: String,
    /// The Kubernetes namespace of the Leases.
    namespace: String,
    /// The Leases' name prefix.
    prefix: String,
    token: Token,
    tls: Arc<rustls::ClientConfig>,
    /// The objects this client has seen: what its writes name, and what
    /// tells a restore.
    seen: Mutex<Seen>,
    remote: Remote<api::Api>,
}

/// The clock this registry's times are read from: its host's.
fn now_ms() -> u64 {
    floor_millis(SystemClock.unix_nanos())
}

impl KubernetesRegistry {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn names(&self, namespace: &str) -> Result<Names, LeaseError> {
        check_namespace(namespace)?;
        Ok(Names::new(&self.prefix, namespace))
    }

    fn object(&self, item: &Value, names: &Names) -> Result<Object, LeaseError> {
        objects::parse(item, names, &self.endpoint)
    }

    /// The server's answer as a Lease: `Ok(None)` for 404 and 409 (gone, or
    /// changed since), the server's refusal for any other status but `ok`.
    fn written(
        &self,
        verb: &str,
        reply: &api::Reply,
        ok: u16,
        names: &Names,
    ) -> Result<Option<Object>, LeaseError> {
        match reply.status {
            status if status == ok || (ok == 200 && status == 201) => {
                self.object(&reply.body, names).map(Some)
            }
            404 | 409 => Ok(None),
            _ => Err(self.refused(verb, reply)),
        }
    }

    /// Every object of a namespace, in one consistent read: its marker's
    /// Lease, if any, and its records'. No `resourceVersion`: read from
    /// etcd, never from the server's cache.
    fn objects(&self, names: &Names) -> Result<(Option<Marker>, Vec<Filed>), LeaseError> {
        let path = format!(
            "{}?labelSelector={}",
            self.leases(),
            names.selector().replace('/', "%2F").replace('=', "%3D")
        );
        let reply = self.request("GET", &path, None)?;
        if reply.status != 200 {
            return Err(self.refused("list", &reply));
        }
        let mut marker = None;
        let mut filed = Vec::new();
        for item in reply.body["items"].as_array().into_iter().flatten() {
            match self.object(item, names)? {
                Object::Marker(m) => marker = Some(m),
                Object::Record(f) => filed.push(f),
            }
        }
        Ok((marker, filed))
    }

    /// Notes what a read found, and returns the marker in force: none if a
    /// restore rolled the marker or a record back.
    fn judge(&self, namespace: &str, marker: Option<&Marker>, filed: &[Filed]) -> Option<Marker> {
        let mut seen = self.seen();
        let in_force = seen.marker_read(namespace, marker);
        for f in filed {
            seen.record_seen(namespace, f, Duration::ZERO);
        }
        in_force.and_then(|_| seen.marker(namespace))
    }

    /// The records as the protocol reads them: one written under another
    /// marker's Lease (one deleted and written again) is void, whatever its
    /// marker's time says, and is said to be under marker 0. (When a held
    /// one expires, with no server clock, is the protocol's to judge.)
    fn records_under(&self, in_force: Option<&Marker>, filed: Vec<Filed>) -> Vec<super::Record> {
        filed
            .into_iter()
            .map(|f| {
                let mut record = f.record.clone();
                if in_force.is_some_and(|m| m.stored.uid != f.marker_uid) {
                    record.marker_unix_millis = 0;
                }
                record
            })
            .collect()
    }

    /// The marker's Lease as the server has it now; `None` if there is none.
    fn get_marker(&self, names: &Names) -> Result<Option<Marker>, LeaseError> {
        let path = format!("{}/{}", self.leases(), names.marker());
        let reply = self.request("GET", &path, None)?;
        match self.written("get", &reply, 200, names)? {
            Some(Object::Marker(marker)) => Ok(Some(marker)),
            Some(Object::Record(_)) => Err(LeaseError::Corrupt {
                address: self.endpoint.clone(),
                detail: format!("Lease {} is labelled a record", names.marker()),
            }),
            None => Ok(None),
        }
    }

    /// Confirms on the server that `marker_unix_millis` is the marker in
    /// force, raising the high-water mark past `worker` if it is not yet:
    /// the marker's Lease's uid, or `None` if another marker is in force.
    fn confirm_marker(
        &self,
        names: &Names,
        marker_unix_millis: u64,
        worker: u64,
    ) -> Result<Option<String>, LeaseError> {
        let ns = &names.namespace;
        let mut known = self.seen().marker(ns);
        for _ in 0..4 {
            let marker = match known.take() {
                Some(marker) => marker,
                None => {
                    let read = self.get_marker(names)?;
                    match self.seen().marker_read(ns, read.as_ref()) {
                        Some(marker) => marker,
                        None => return Ok(None),
                    }
                }
            };
            if marker.marker_unix_millis != marker_unix_millis {
                return Ok(None);
            }
            if worker < marker.high_water {
                // Read from the server just now, or about to be: a cached
                // marker proves nothing of now.
                let read = self.get_marker(names)?;
                let in_force = self.seen().marker_read(ns, read.as_ref());
                return Ok(in_force
                    .filter(|m| m.marker_unix_millis == marker_unix_millis)
                    .map(|m| m.stored.uid));
            }
            // Raised by a compare-and-set on the marker's Lease, which
            // proves it in force at once.
            let body =
                objects::marker_body(names, marker_unix_millis, worker + 1, Some(&marker.stored));
            let path = format!("{}/{}", self.leases(), names.marker());
            let reply = self.request("PUT", &path, Some(&body))?;
            if let Some(Object::Marker(raised)) = self.written("update", &reply, 200, names)? {
                self.seen().marker_written(ns, &raised);
                return Ok(Some(raised.stored.uid));
            }
            // Raised or replaced by another meanwhile: read it again.
        }
        Err(LeaseError::Contended {
            namespace: ns.clone(),
            attempts: 4,
        })
    }
}

/// How long a lease of `ttl_millis` lasts, as a [`Duration`].
fn ttl(ttl_millis: u64) -> Duration {
    Duration::from_millis(ttl_millis)
}

impl Registry for KubernetesRegistry {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        let names = self.names(namespace)?;
        let (marker, filed) = self.objects(&names)?;
        let now = now_ms();
        let in_force = self.judge(namespace, marker.as_ref(), &filed);
        let filed = filed
            .into_iter()
            .filter(|f| f.record.worker < request.workers)
            .collect();
        Ok(Snapshot {
            server_unix_millis: now,
            marker_unix_millis: in_force.as_ref().map(|m| m.marker_unix_millis),
            records: self.records_under(in_force.as_ref(), filed),
            high_water: in_force.map_or(0, |m| m.high_water),
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        let names = self.names(namespace)?;
        let path = format!("{}/{}", self.leases(), names.marker());
        // A few tries: another client may write between the read and the
        // write, and its marker is then the one in force.
        for _ in 0..4 {
            let read = self.get_marker(&names)?;
            let mut seen = self.seen();
            if let Some(marker) = seen.marker_read(namespace, read.as_ref()) {
                return Ok(marker.marker_unix_millis);
            }
            // Later than any marker this client saw here: none repeats.
            let marker = ceil_millis(SystemClock.unix_nanos())
                .max(seen.highest_marker(namespace) + 1)
                .max(read.as_ref().map_or(0, |m| m.marker_unix_millis + 1));
            drop(seen);
            let body = objects::marker_body(&names, marker, 0, read.as_ref().map(|m| &m.stored));
            let reply = match &read {
                // A marker rolled back by a restore: replaced in place.
                Some(_) => self.request("PUT", &path, Some(&body))?,
                None => self.request("POST", &self.leases(), Some(&body))?,
            };
            let verb = if read.is_some() { "update" } else { "create" };
            if let Some(Object::Marker(written)) = self.written(verb, &reply, 200, &names)? {
                self.seen().marker_written(namespace, &written);
                return Ok(written.marker_unix_millis);
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
        let names = self.names(namespace)?;
        let path = format!("{}/{}", self.leases(), names.record(worker));
        // The record as it stands: as this client last confirmed it, if
        // recently; else as the server has it now.
        let old: Option<Filed> = match expect.version {
            None => None,
            Some(version) => {
                let cached = self.seen().record(namespace, worker).filter(|c| {
                    c.filed.record.version == version && c.since.recent(ttl(record.ttl_millis))
                });
                let filed = match cached {
                    Some(cached) => cached.filed,
                    None => {
                        let reply = self.request("GET", &path, None)?;
                        match self.written("get", &reply, 200, &names)? {
                            Some(Object::Record(filed)) => {
                                self.seen().record_seen(namespace, &filed, Duration::ZERO);
                                filed
                            }
                            _ => return Ok(None),
                        }
                    }
                };
                if filed.record.version != version {
                    return Ok(None);
                }
                Some(filed)
            }
        };
        // The marker: a holder renewing under the marker it was granted
        // under, as this client last saw it in force, writes at once; any
        // other write confirms the marker on the server first.
        let known = self.seen().marker(namespace);
        let renewal = match (&old, &known) {
            (Some(old), Some(marker)) => {
                old.record.marker_unix_millis == expect.marker_unix_millis
                    && marker.marker_unix_millis == expect.marker_unix_millis
                    && old.marker_uid == marker.stored.uid
                    && worker < marker.high_water
                    // The holder's own write: a renewal, or its release.
                    && !old.record.holder.is_empty()
                    && (record.holder == old.record.holder || record.holder.is_empty())
            }
            _ => false,
        };
        let marker_uid = match (renewal, &old) {
            (true, Some(old)) => old.marker_uid.clone(),
            _ => match self.confirm_marker(&names, expect.marker_unix_millis, worker)? {
                Some(uid) => uid,
                None => return Ok(None),
            },
        };
        let now = now_ms();
        let body = objects::record_body(
            &names,
            worker,
            record,
            (expect.marker_unix_millis, &marker_uid),
            now,
            old.as_ref(),
        );
        let (reply, verb) = match &old {
            Some(_) => (self.request("PUT", &path, Some(&body))?, "update"),
            None => (self.request("POST", &self.leases(), Some(&body))?, "create"),
        };
        match self.written(verb, &reply, 200, &names)? {
            Some(Object::Record(written)) => {
                self.seen()
                    .record_seen(namespace, &written, ttl(record.ttl_millis));
                // The clock the expiry was reckoned from: the write's time,
                // as the contract has a server say it.
                Ok(Some(now))
            }
            Some(Object::Marker(_)) => Err(LeaseError::Corrupt {
                address: self.endpoint.clone(),
                detail: format!("Lease {} is labelled a marker", names.record(worker)),
            }),
            None => {
                self.seen().forget_record(namespace, worker);
                Ok(None)
            }
        }
    }

    fn time_base(&self) -> TimeBase {
        TimeBase::Client
    }

    // One object per compare-and-set: see `swap`.
    fn marker_check(&self) -> MarkerCheck {
        MarkerCheck::ConfirmedFirst
    }

    // A LIST of the namespace's Leases: the API's label selectors cannot
    // ask for the earliest fence or an expiry, which live in annotations.
    fn read_cost(&self) -> ReadCost {
        ReadCost::EveryRecord
    }

    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn super::Inspect> {
        Some(self)
    }
}

//! flakegen's Lease objects: their names, labels and annotations, and the
//! JSON the API server takes and gives.
//!
//! A Lease's `spec` is filled as client-go's leader election fills it, so
//! that `kubectl get leases` reads right; what flakegen relies on is in its
//! annotations, which only flakegen writes.

use serde_json::{Map, Value, json};

use super::super::{LeaseError, NewRecord, Record};
use crate::clock::units::Rfc3339;

/// The label every object of flakegen's carries.
pub(super) const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "flakegen");
/// The label naming a flakegen namespace's objects, by its name's hash.
pub(super) const NS_LABEL: &str = "flakegen.io/ns";

/// The annotation holding a flakegen namespace's real name.
pub(super) const NAMESPACE_ANNOTATION: &str = "flakegen.io/namespace";
const KIND: &str = "flakegen.io/kind";
const STATE: &str = "flakegen.io/state";
const MARKER: &str = "flakegen.io/marker";
const HIGH_WATER: &str = "flakegen.io/high-water";
const WORKER: &str = "flakegen.io/worker";
const HOLDER: &str = "flakegen.io/holder";
const VERSION: &str = "flakegen.io/version";
const EXPIRES: &str = "flakegen.io/expires";
const TTL: &str = "flakegen.io/ttl";
const FENCE: &str = "flakegen.io/fence";
const MARKER_UID: &str = "flakegen.io/marker-uid";

/// A flakegen namespace's name in Kubernetes' names and labels: 10 base32
/// characters of a hash of it (any namespace flakegen takes, in the
/// characters a name may hold), its real name kept in an annotation and
/// checked on every read.
pub(super) fn hashed(namespace: &str) -> String {
    // FNV-1a: stable across builds and platforms, as a name must be.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in namespace.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    (0..10)
        .map(|i| char::from(ALPHABET[(hash >> (i * 5)) as usize & 31]))
        .collect()
}

/// The names of one flakegen namespace's objects.
pub(super) struct Names {
    /// The flakegen namespace.
    pub(super) namespace: String,
    /// Its hash, in names and the label.
    pub(super) hash: String,
    /// The objects' name prefix: `<prefix>-<hash>`.
    base: String,
}

impl Names {
    pub(super) fn new(prefix: &str, namespace: &str) -> Names {
        let hash = hashed(namespace);
        Names {
            namespace: namespace.to_owned(),
            base: format!("{prefix}-{hash}"),
            hash,
        }
    }

    /// The marker's Lease.
    pub(super) fn marker(&self) -> String {
        format!("{}-marker", self.base)
    }

    /// A worker id's Lease.
    pub(super) fn record(&self, worker: u64) -> String {
        format!("{}-{worker}", self.base)
    }

    /// The label selector of the namespace's objects.
    pub(super) fn selector(&self) -> String {
        format!("{NS_LABEL}={}", self.hash)
    }
}

/// The identity of an object as the server keeps it: what a write names
/// to be a compare-and-set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Stored {
    pub(super) uid: String,
    pub(super) resource_version: String,
}

impl Stored {
    /// The resource version as a number: Kubernetes 1.35 and later promise
    /// they increase (KEP-5504); `None` where one is not a number.
    pub(super) fn version_number(&self) -> Option<u64> {
        self.resource_version.parse().ok()
    }
}

/// A namespace's marker, as its Lease holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Marker {
    pub(super) stored: Stored,
    pub(super) marker_unix_millis: u64,
    pub(super) high_water: u64,
}

/// A worker id's record, as its Lease holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Filed {
    pub(super) stored: Stored,
    pub(super) record: Record,
    /// The uid of the marker's Lease it was written under.
    pub(super) marker_uid: String,
    /// How many holders it has had: `spec.leaseTransitions`.
    pub(super) transitions: u64,
    /// When its holder took it: `spec.acquireTime`.
    pub(super) acquired: Option<String>,
    /// Its lease's TTL, in ms (0 when free).
    pub(super) ttl_millis: u64,
}

/// One of flakegen's objects, read.
#[derive(Clone, Debug)]
pub(super) enum Object {
    Marker(Marker),
    Record(Filed),
}

/// The metadata of a new object: its name and labels; `stored` when it
/// replaces one (a compare-and-set on its version and uid).
fn metadata(
    names: &Names,
    name: &str,
    kind: &str,
    state: Option<&str>,
    annotations: Map<String, Value>,
    stored: Option<&Stored>,
) -> Value {
    let mut labels = json!({
        MANAGED_BY.0: MANAGED_BY.1,
        NS_LABEL: names.hash,
        KIND: kind,
    });
    if let Some(state) = state {
        labels[STATE] = json!(state);
    }
    let mut annotations = annotations;
    annotations.insert(NAMESPACE_ANNOTATION.into(), json!(names.namespace));
    let mut meta = json!({ "name": name, "labels": labels, "annotations": annotations });
    if let Some(stored) = stored {
        // The uid too: a PUT naming a deleted object's version alone
        // creates it anew (Leases allow create on update).
        meta["uid"] = json!(stored.uid);
        meta["resourceVersion"] = json!(stored.resource_version);
    }
    meta
}

fn lease(meta: Value, spec: Value) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": spec,
    })
}

/// A marker's Lease.
pub(super) fn marker_body(
    names: &Names,
    marker_unix_millis: u64,
    high_water: u64,
    stored: Option<&Stored>,
) -> Value {
    let mut annotations = Map::new();
    annotations.insert(MARKER.into(), json!(marker_unix_millis.to_string()));
    annotations.insert(HIGH_WATER.into(), json!(high_water.to_string()));
    let meta = metadata(names, &names.marker(), "marker", None, annotations, stored);
    lease(meta, json!({}))
}

/// MicroTime, as the Lease API wants its times.
fn micro_time(unix_millis: u64) -> String {
    let text = Rfc3339(unix_millis).to_string();
    format!("{}000Z", text.trim_end_matches('Z'))
}

/// A worker id's Lease, written under the marker `marker` (whose Lease's
/// uid is `marker_uid`) at `now`, over `old` if there is one.
pub(super) fn record_body(
    names: &Names,
    worker: u64,
    record: &NewRecord<'_>,
    marker: (u64, &str),
    now_unix_millis: u64,
    old: Option<&Filed>,
) -> Value {
    let expires = if record.ttl_millis == 0 {
        0
    } else {
        now_unix_millis.saturating_add(record.ttl_millis)
    };
    let mut annotations = Map::new();
    annotations.insert(WORKER.into(), json!(worker.to_string()));
    annotations.insert(HOLDER.into(), json!(record.holder));
    annotations.insert(VERSION.into(), json!(record.version.to_string()));
    annotations.insert(MARKER.into(), json!(marker.0.to_string()));
    annotations.insert(MARKER_UID.into(), json!(marker.1));
    annotations.insert(EXPIRES.into(), json!(expires.to_string()));
    annotations.insert(TTL.into(), json!(record.ttl_millis.to_string()));
    annotations.insert(FENCE.into(), json!(record.fence_unix_millis.to_string()));
    let held = !record.holder.is_empty();
    let meta = metadata(
        names,
        &names.record(worker),
        "record",
        Some(if held { "held" } else { "free" }),
        annotations,
        old.map(|o| &o.stored),
    );
    // What `kubectl get leases` shows: the holder, and client-go's
    // bookkeeping of holders.
    let same_holder = old.is_some_and(|o| o.record.holder == record.holder);
    let transitions = old.map_or(0, |o| o.transitions) + u64::from(held && !same_holder);
    let mut spec = json!({ "leaseTransitions": transitions });
    if held {
        spec["holderIdentity"] = json!(record.holder);
        spec["leaseDurationSeconds"] = json!(record.ttl_millis.div_ceil(1_000).max(1));
        spec["renewTime"] = json!(micro_time(now_unix_millis));
        spec["acquireTime"] = match old.and_then(|o| o.acquired.as_ref()) {
            Some(acquired) if same_holder => json!(acquired),
            _ => json!(micro_time(now_unix_millis)),
        };
    }
    lease(meta, spec)
}

/// Reads one of flakegen's objects; `what` says where, for an error.
pub(super) fn parse(item: &Value, names: &Names, address: &str) -> Result<Object, LeaseError> {
    let corrupt = |detail: String| LeaseError::Corrupt {
        address: address.to_owned(),
        detail,
    };
    let meta = &item["metadata"];
    let name = meta["name"].as_str().unwrap_or("?");
    let annotations = &meta["annotations"];
    let text = |key: &str| annotations[key].as_str();
    let number = |key: &str| {
        text(key)
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| corrupt(format!("Lease {name}: no number in its annotation {key}")))
    };
    match text(NAMESPACE_ANNOTATION) {
        Some(ns) if ns == names.namespace => {}
        other => {
            return Err(corrupt(format!(
                "Lease {name} belongs to the flakegen namespace {other:?}, not {:?}: two \
                 namespaces whose names hash alike ({}), or a Lease written by hand; name \
                 one of them otherwise",
                names.namespace, names.hash
            )));
        }
    }
    let stored = Stored {
        uid: meta["uid"].as_str().unwrap_or_default().to_owned(),
        resource_version: meta["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    };
    if stored.uid.is_empty() || stored.resource_version.is_empty() {
        return Err(corrupt(format!("Lease {name}: no uid or resourceVersion")));
    }
    match meta["labels"][KIND].as_str() {
        Some("marker") => Ok(Object::Marker(Marker {
            stored,
            marker_unix_millis: number(MARKER)?,
            high_water: number(HIGH_WATER)?,
        })),
        Some("record") => Ok(Object::Record(Filed {
            stored,
            record: Record {
                worker: number(WORKER)?,
                holder: text(HOLDER).unwrap_or_default().to_owned(),
                version: number(VERSION)?,
                marker_unix_millis: number(MARKER)?,
                expires_unix_millis: number(EXPIRES)?,
                fence_unix_millis: number(FENCE)?,
            },
            marker_uid: text(MARKER_UID).unwrap_or_default().to_owned(),
            transitions: item["spec"]["leaseTransitions"].as_u64().unwrap_or(0),
            acquired: item["spec"]["acquireTime"].as_str().map(str::to_owned),
            ttl_millis: number(TTL)?,
        })),
        other => Err(corrupt(format!(
            "Lease {name}: its label {KIND} is {other:?}, neither a marker nor a record"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_kubernetes_rules_for_any_namespace() {
        for ns in ["orders", "Orders/EU", "ünïcödé", &"x".repeat(200)] {
            let names = Names::new("flakegen", ns);
            assert_eq!(names.hash.len(), 10);
            for name in [names.marker(), names.record(65_535)] {
                assert!(name.len() <= 63, "{name}");
                assert!(
                    name.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                    "{name}"
                );
            }
        }
        assert_ne!(hashed("orders"), hashed("Orders"));
        assert_eq!(hashed("orders"), hashed("orders"));
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let names = Names::new("flakegen", "orders");
        let written = NewRecord {
            holder: "h-1",
            version: 7,
            ttl_millis: 1_500,
            fence_unix_millis: 2_000,
        };
        let mut body = record_body(&names, 3, &written, (1_000, "uid-m"), 1_234, None);
        body["metadata"]["uid"] = json!("uid-r");
        body["metadata"]["resourceVersion"] = json!("42");
        let Object::Record(filed) = parse(&body, &names, "here").unwrap() else {
            panic!("not a record")
        };
        assert_eq!(
            filed.record,
            Record {
                worker: 3,
                holder: "h-1".into(),
                version: 7,
                marker_unix_millis: 1_000,
                expires_unix_millis: 2_734,
                fence_unix_millis: 2_000,
            }
        );
        assert_eq!((filed.marker_uid.as_str(), filed.transitions), ("uid-m", 1));
        assert_eq!(body["spec"]["leaseDurationSeconds"], 2);
        assert_eq!(body["spec"]["renewTime"], "1970-01-01T00:00:01.234000Z");
        // Another namespace's object, under a colliding hash, is refused.
        let other = Names::new("flakegen", "payments");
        assert!(matches!(
            parse(&body, &other, "here"),
            Err(LeaseError::Corrupt { .. })
        ));
    }
}

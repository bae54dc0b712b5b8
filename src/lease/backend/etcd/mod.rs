//! Leases in an etcd cluster (feature `etcd`): storage steps only.

mod gateway;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use self::gateway::{Gateway, base64, code, number, unbase64};
use super::remote::{Connected, Failure, Remote};
use super::tls::{self, Verify};
use super::{
    Caveat, Expect, Inspect, LeaseError, Listing, NewRecord, Record, Registry, Severity, Snapshot,
    Survey, TimeBase, Transport, Verified, said,
};
use crate::clock::units::{ceil_millis, floor_millis};
use crate::clock::{Clock, SystemClock};

/// Worker-id leases kept in an etcd cluster, under a key prefix.
///
/// ```text
/// <prefix>/marker                        <ms> <cluster id>: when the data began, and where
/// <prefix>/witness                       the highest raft term seen, zero-padded
/// <prefix>/names/<namespace>             the namespaces that have records
/// <prefix>/ns/<namespace>/w/<id>         the record: JSON holder, version, marker, expires, fence
/// <prefix>/ns/<namespace>/free/<m>/<fence>/<id>    free records under marker m, by fence
/// <prefix>/ns/<namespace>/held/<m>/<expires>/<id>  held ones, by expiry
/// <prefix>/ns/<namespace>/rec/<m>/<id>   the ids with a record under marker m
/// <prefix>/ns/<namespace>/cursor         how far reads have found every id recorded
/// ```
///
/// (Numbers are zero-padded to 20 digits, so keys sort as numbers; a
/// namespace's `/` and `%` are percent-encoded.)
///
/// A [`swap`](Registry::swap) reads the record, then writes it in one
/// transaction that compares the marker and the record's revision: the
/// index keys it moves are those of the record it compared. A
/// [`read`](Registry::read) is three transactions, each a consistent view
/// at one revision, bounded whatever the number of records: the free record
/// with the earliest fence, the four soonest-expiring holders, and the
/// lowest id never recorded, from a cursor. Every request is linearizable
/// (served through the leader), and every call, connecting included,
/// finishes or fails within [`DEFAULT_TIMEOUT`](super::DEFAULT_TIMEOUT) on
/// the client. The client speaks etcd's JSON gateway (`/v3/...` on the
/// client port, served by every member since etcd 3.4): no gRPC stack, no
/// protobuf compiler.
///
/// # Time
///
/// etcd has no clock a client can read, so this registry's times are its
/// host's ([`TimeBase::Client`]): a record's expiry is its writer's clock
/// plus the TTL, judged by the reader's clock, and a marker written after a
/// loss is the clock of the host that found the loss. The fences that keep
/// holders' IDs apart need no clock at all. What a server clock would check
/// becomes an assumption: **every two hosts that lease from one prefix keep
/// their clocks within the skew allowance of each other** (NTP does, by
/// orders of magnitude). A host further off is not refused, as it is by the
/// other registries; its successors wait for its fences, and after a
/// restore its IDs could meet a successor's.
///
/// # What counts as a loss
///
/// etcd forgets nothing it confirmed while a majority of its members stands:
/// a leader killed, frozen or partitioned away, and a member restarted or
/// replaced, cost a renewal's retry at most, and no generator refuses. The
/// only loss is a **restore from a snapshot**, which brings back records
/// older than fences their holders use. It is detected two ways: a restore
/// that gives the cluster a new id (a new `--initial-cluster-token` or new
/// member URLs) voids the marker, which names the cluster; one that keeps
/// the id restarts raft's term at 2, below the highest term the prefix saw
/// (`<prefix>/witness`), and the first client to notice writes a new
/// marker, its clock now, so that every id waits the TTL and the skew.
///
/// Not detected, so never done under running generators (and why):
/// restoring a snapshot taken while the cluster was still in its first
/// leader term, under the same token (nothing in the restored cluster
/// differs from the moment of the snapshot; `flakegen leases check` says
/// when a cluster is there); deleting flakegen's keys by hand (nothing is
/// left to tell). A prefix that has no marker yet is new: its first
/// holders start at once.
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
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The member the next connection tries first: after a failure, the
    /// next one in the URL.
    next: AtomicUsize,
    /// The cluster this client has talked to, the marker it found there,
    /// and the highest raft term it saw under that marker: a lower term
    /// under the same marker later means the cluster was restored (a new
    /// marker starts the count again).
    seen: Mutex<Option<Seen>>,
    remote: Remote<Gateway>,
}

/// How many ids a read looks through, at most, for the fresh one (see
/// [`Snapshot::more`]).
const FRESH_SLICE: u64 = 256;

/// What each failure's message tells a user to check, in this registry's
/// own URL terms.
const TLS_FIX: &str = "check the CA file (sslrootcert=<file>; the system's CAs without one), \
     that the members' certificates name the hosts in the URL, and that the ports take TLS";
const TLS_REQUIRED_FIX: &str = "use an etcds:// URL";
const CREDENTIALS_FIX: &str = "check the user name and password in the URL \
     (etcd://user:password@host:port,host:port/prefix; percent-encode special characters)";

/// A member's answer header: which cluster, which member, and the raft term.
#[derive(Clone, Copy, Debug)]
struct Header {
    cluster: u64,
    term: u64,
}

impl Header {
    fn of(answer: &Value) -> Header {
        let header = &answer["header"];
        Header {
            cluster: number(&header["cluster_id"]).unwrap_or(0),
            term: number(&header["raft_term"]).unwrap_or(0),
        }
    }
}

/// What a client remembers of the cluster: see [`EtcdRegistry::rewound`].
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    cluster: u64,
    marker: Option<String>,
    term: u64,
}

/// One key as a range returned it.
struct Kv {
    key: String,
    value: Vec<u8>,
    mod_revision: u64,
}

/// The marker and witness keys as read, judged against the answer's header.
struct Head {
    header: Header,
    /// The marker key's value and revision, if it exists.
    marker: Option<(String, u64)>,
    /// The witness key's term and revision, if it exists.
    witness: Option<(u64, u64)>,
    /// The marker in force: written in this cluster, and not rewound since.
    in_force: Option<u64>,
}

impl EtcdRegistry {
    /// A registry at `url`: `etcd://[user:password@]host:port[,host:port...][/prefix]`,
    /// the members to try in turn, and the prefix of flakegen's keys
    /// (default `/flakegen`). Nothing is sent until the first call.
    ///
    /// TLS (rustls): `etcds://`, verifying each member's certificate and
    /// host name against the system's CAs, or against those in the PEM file
    /// `?sslrootcert=<file>` names. With credentials, the client
    /// authenticates (etcd's auth); the user's role needs `readwrite` on
    /// the prefix.
    ///
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        let invalid = |reason: String| LeaseError::InvalidUrl { reason };
        let (url, params) = tls::take_params(url, &["sslrootcert"]);
        let (scheme, rest) = url.split_once("://").ok_or_else(|| {
            invalid("an etcd URL is etcd://host:port[,host:port...]/prefix".into())
        })?;
        let over_tls = match scheme.to_ascii_lowercase().as_str() {
            "etcd" => false,
            "etcds" => true,
            other => return Err(invalid(format!("{other}:// is not an etcd URL"))),
        };
        if let Some(rest) = rest.split_once('?').map(|(_, q)| q) {
            return Err(invalid(format!(
                "unknown parameters {rest:?}: an etcd URL takes sslrootcert=<file> only"
            )));
        }
        let (credentials, rest) = match rest.rsplit_once('@') {
            Some((userinfo, rest)) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let decode = |part: &str| {
                    percent_decode(part).ok_or_else(|| {
                        invalid("the user or password is badly percent-encoded".into())
                    })
                };
                (Some((decode(user)?, decode(password)?)), rest)
            }
            None => (None, rest),
        };
        let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
        let endpoints: Vec<String> = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(|h| {
                if h.rsplit_once(':')
                    .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
                {
                    h.to_owned()
                } else {
                    format!("{h}:2379")
                }
            })
            .collect();
        if endpoints.is_empty() {
            return Err(invalid(
                "an etcd URL names at least one member: etcd://host:port/prefix".into(),
            ));
        }
        let path = path.trim_end_matches('/');
        let prefix = if path.is_empty() {
            "/flakegen".to_owned()
        } else {
            format!("/{path}")
        };
        let ca_file = params.first().map(|(_, file)| file.clone());
        let tls = match (over_tls, ca_file) {
            (false, Some(_)) => {
                return Err(invalid(
                    "a CA file (sslrootcert=) is for TLS: use an etcds:// URL".to_owned(),
                ));
            }
            (false, None) => None,
            (true, ca_file) => {
                tls::ensure_default_provider();
                let config =
                    tls::client_config(Verify::Full, ca_file.as_deref().map(std::path::Path::new))
                        .map_err(invalid)?;
                Some(Arc::new(config))
            }
        };
        Ok(EtcdRegistry {
            remote: Remote::new(endpoints.join(","), super::probe::Speaks::Http)?,
            endpoints,
            prefix,
            credentials,
            tls,
            next: AtomicUsize::new(0),
            seen: Mutex::new(None),
        })
    }

    /// Runs `call` with a connection to a member, opening one first if need
    /// be: each member in turn from the one after the last that failed.
    fn run<T, F>(&self, call: impl FnOnce(Gateway) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: Future<Output = (Gateway, Result<T, Failure<gateway::Error>>)> + Send,
    {
        let open = || async move {
            Ok(Connected {
                client: self.open_any().await?,
                driver: None,
            })
        };
        let result = self.remote.run(open, call);
        if matches!(result, Err(Failure::Client(_) | Failure::TimedOut(_))) {
            // The next call starts at the next member.
            self.next.fetch_add(1, Ordering::Relaxed);
        }
        if let Err(Failure::TimedOut(_)) = result {
            // A member without a leader holds a request until one is
            // elected: its status, which needs none, tells that apart from
            // a member that is gone.
            if let Some(said) = self.leaderless() {
                return Err(LeaseError::NoQuorum {
                    address: self.remote.address.clone(),
                    source: said,
                });
            }
        }
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }

    /// What the members that answer at once say, if none knows a leader.
    /// All are asked at once, each for at most [`PROBE_TIME`], so that the
    /// question adds one `PROBE_TIME` to the call's timeout however many
    /// members are gone.
    ///
    /// [`PROBE_TIME`]: super::probe::PROBE_TIME
    fn leaderless(&self) -> Option<super::Source> {
        use super::probe::PROBE_TIME;
        let asked = self.remote.probe(PROBE_TIME + PROBE_TIME / 4, async {
            let mut members = tokio::task::JoinSet::new();
            for endpoint in &self.endpoints {
                let (endpoint, tls) = (endpoint.clone(), self.tls.clone());
                members.spawn(tokio::time::timeout(PROBE_TIME, async move {
                    let mut member = Gateway::connect(&endpoint, tls.as_ref()).await?;
                    member.call("/v3/maintenance/status", &json!({})).await
                }));
            }
            let mut answered = 0;
            while let Some(joined) = members.join_next().await {
                if let Ok(Ok(Ok(status))) = joined {
                    if number(&status["leader"]).unwrap_or(0) != 0 {
                        return None;
                    }
                    answered += 1;
                }
            }
            // None answering is a cluster out of reach, not one without a
            // leader.
            (answered > 0).then_some(answered)
        });
        let answered = asked.flatten()?;
        Some(said(format!(
            "no leader: {answered} of the {} members the URL names answer, none with a leader",
            self.endpoints.len()
        )))
    }

    /// A connection to the first member that takes one, from the one after
    /// the last that failed.
    async fn open_any(&self) -> Result<Gateway, gateway::Error> {
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let mut last = None;
        for i in 0..self.endpoints.len() {
            let endpoint = &self.endpoints[(first + i) % self.endpoints.len()];
            match self.open(endpoint).await {
                Ok(gateway) => return Ok(gateway),
                // A refusal of the credentials, or of TLS, is the same at
                // every member.
                Err(e @ (gateway::Error::Status { .. } | gateway::Error::Tls(_))) => {
                    return Err(e);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("an etcd URL names at least one member"))
    }

    async fn open(&self, endpoint: &str) -> Result<Gateway, gateway::Error> {
        let mut gateway = Gateway::connect(endpoint, self.tls.as_ref()).await?;
        if let Some((user, password)) = &self.credentials {
            gateway.authenticate(user, password).await?;
        }
        Ok(gateway)
    }

    /// Posts `body` to `path` on a connection: an expired auth token is
    /// renewed once.
    async fn call(
        &self,
        gateway: &mut Gateway,
        path: &str,
        body: &Value,
    ) -> Result<Value, gateway::Error> {
        match gateway.call(path, body).await {
            Err(gateway::Error::Status { message, .. })
                if message.contains("invalid auth token") && self.credentials.is_some() =>
            {
                let (user, password) = self.credentials.as_ref().expect("checked");
                gateway.authenticate(user, password).await?;
                gateway.call(path, body).await
            }
            answer => answer,
        }
    }

    /// Runs one transaction: `compare`, then `success` or `failure`.
    fn txn(
        &self,
        compare: Vec<Value>,
        success: Vec<Value>,
        failure: Vec<Value>,
    ) -> Result<Value, LeaseError> {
        let body = json!({"compare": compare, "success": success, "failure": failure});
        self.run(|mut gateway| async move {
            let mut answer = self.call(&mut gateway, "/v3/kv/txn", &body).await;
            if let Err(gateway::Error::Stale) = answer {
                // Nothing was sent: the request goes on a new connection.
                match self.open_any().await {
                    Ok(fresh) => {
                        gateway = fresh;
                        answer = self.call(&mut gateway, "/v3/kv/txn", &body).await;
                    }
                    Err(e) => answer = Err(e),
                }
            }
            (gateway, answer.map_err(Failure::Client))
        })
    }

    /// The client's error, said as a [`LeaseError`].
    fn error(&self, e: gateway::Error) -> LeaseError {
        let address = self.remote.address.clone();
        match e {
            gateway::Error::Stale => LeaseError::Unreachable {
                address,
                source: said("every member closed the connection"),
            },
            gateway::Error::Io(e) => {
                // A TLS port closes a connection that speaks plain text; so
                // does a member going away. Only the first answers in TLS.
                let dropped = matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                );
                let tls_port = dropped
                    && self.tls.is_none()
                    && self.endpoints[0]
                        .rsplit_once(':')
                        .is_some_and(|(host, port)| {
                            port.parse().is_ok_and(|port| {
                                tls::speaks_tls(host, port, super::probe::PROBE_TIME)
                            })
                        });
                if tls_port {
                    return LeaseError::TlsRequired {
                        address,
                        source: Arc::new(e),
                        fix: TLS_REQUIRED_FIX,
                    };
                }
                LeaseError::Unreachable {
                    address,
                    source: Arc::new(e),
                }
            }
            gateway::Error::Tls(e) => {
                // A plain port does not answer a TLS handshake; it answers
                // the gateway's own request in plain text.
                let plain = self.remote.probe(super::probe::PROBE_TIME, async {
                    let endpoint = &self.endpoints[0];
                    let mut member = Gateway::connect(endpoint, None).await.ok()?;
                    let status = member.call("/v3/maintenance/status", &json!({})).await;
                    Some(status.is_ok_and(|s| s.get("header").is_some()))
                });
                if plain.flatten() == Some(true) {
                    return LeaseError::WrongServer {
                        address,
                        speaks: "plain HTTP (etcd without TLS)",
                        wanted: "TLS",
                    };
                }
                LeaseError::Tls {
                    address,
                    reason: tls::tls_failure(&e).unwrap_or_else(|| e.to_string()),
                    fix: TLS_FIX,
                }
            }
            gateway::Error::Protocol(what)
                if what.contains("HTTPS server") || what.contains("\\x15\\x03") =>
            {
                LeaseError::TlsRequired {
                    address,
                    source: said(what),
                    fix: TLS_REQUIRED_FIX,
                }
            }
            gateway::Error::Protocol(what) => LeaseError::Server {
                address,
                source: said(format!("{what}: is this an etcd member's client port?")),
            },
            gateway::Error::Status { code, message } => {
                let source = said(message.clone());
                match code {
                    code::UNAUTHENTICATED => LeaseError::Unauthorized {
                        address,
                        source,
                        fix: CREDENTIALS_FIX,
                    },
                    code::INVALID_ARGUMENT | code::FAILED_PRECONDITION
                        if message.contains("authentication failed")
                            || message.contains("user name is empty")
                            || message.contains("authentication is not enabled") =>
                    {
                        LeaseError::Unauthorized {
                            address,
                            source,
                            fix: CREDENTIALS_FIX,
                        }
                    }
                    code::PERMISSION_DENIED => LeaseError::Server {
                        address,
                        source: said(format!(
                            "{message}: the URL's user may not use the keys under {prefix}: grant \
                             its role readwrite there (etcdctl role grant-permission <role> \
                             --prefix=true readwrite {prefix})",
                            prefix = self.prefix
                        )),
                    },
                    code::UNAVAILABLE => LeaseError::NoQuorum { address, source },
                    _ => LeaseError::Server { address, source },
                }
            }
        }
    }

    fn corrupt(&self, detail: String) -> LeaseError {
        LeaseError::Corrupt {
            address: self.remote.address.clone(),
            detail,
        }
    }

    fn marker_key(&self) -> String {
        format!("{}/marker", self.prefix)
    }

    fn witness_key(&self) -> String {
        format!("{}/witness", self.prefix)
    }

    /// The keys of `namespace` start with this.
    fn base(&self, namespace: &str) -> Result<String, LeaseError> {
        super::check_namespace(namespace)?;
        Ok(format!("{}/ns/{}/", self.prefix, percent_encode(namespace)))
    }

    /// The marker's value: its ms and the cluster it was written in.
    fn marker_text(marker: u64, cluster: u64) -> String {
        format!("{marker} {cluster}")
    }

    /// Judges the marker and witness keys of `answer`'s first two ranges
    /// against its header; notes the term seen.
    fn head(&self, answer: &Value) -> Result<Head, LeaseError> {
        let header = Header::of(answer);
        let marker = self
            .kvs(&answer["responses"][0]["response_range"])?
            .into_iter()
            .next();
        let witness = self
            .kvs(&answer["responses"][1]["response_range"])?
            .into_iter()
            .next();
        let witness = match witness {
            Some(kv) => {
                let term = std::str::from_utf8(&kv.value)
                    .ok()
                    .and_then(|t| t.parse::<u64>().ok())
                    .ok_or_else(|| self.corrupt(format!("the witness {:?}", kv.value)))?;
                Some((term, kv.mod_revision))
            }
            None => None,
        };
        let marker = match marker {
            Some(kv) => Some((
                String::from_utf8(kv.value)
                    .map_err(|e| self.corrupt(format!("the marker: {e}")))?,
                kv.mod_revision,
            )),
            None => None,
        };
        let text = marker.as_ref().map(|(text, _)| text.as_str());
        let rewound =
            self.rewound(header, text) || witness.is_some_and(|(term, _)| header.term < term);
        let in_force = match &marker {
            Some((text, _)) if !rewound => {
                let (ms, cluster) = text
                    .split_once(' ')
                    .and_then(|(ms, c)| Some((ms.parse::<u64>().ok()?, c.parse::<u64>().ok()?)))
                    .ok_or_else(|| self.corrupt(format!("the marker {text:?}")))?;
                (cluster == header.cluster).then_some(ms)
            }
            _ => None,
        };
        Ok(Head {
            header,
            marker,
            witness,
            in_force,
        })
    }

    /// Whether the cluster's term went back since this client last saw it
    /// under the marker `marker` (the cluster was restored); notes the term
    /// seen.
    fn rewound(&self, header: Header, marker: Option<&str>) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *seen {
            Some(last) if last.cluster == header.cluster && last.marker.as_deref() == marker => {
                if header.term < last.term {
                    return true;
                }
                last.term = header.term;
            }
            _ => {
                *seen = Some(Seen {
                    cluster: header.cluster,
                    marker: marker.map(str::to_owned),
                    term: header.term,
                });
            }
        }
        false
    }

    /// The keys and values of a range's answer.
    fn kvs(&self, range: &Value) -> Result<Vec<Kv>, LeaseError> {
        let Some(kvs) = range.get("kvs").and_then(Value::as_array) else {
            return Ok(Vec::new());
        };
        kvs.iter()
            .map(|kv| {
                let bytes = |field: &str| {
                    kv[field]
                        .as_str()
                        .map_or(Some(Vec::new()), unbase64)
                        .ok_or_else(|| self.corrupt(format!("a key's {field} is not base64: {kv}")))
                };
                Ok(Kv {
                    key: String::from_utf8(bytes("key")?)
                        .map_err(|e| self.corrupt(format!("a key is not UTF-8: {e}")))?,
                    value: bytes("value")?,
                    mod_revision: number(&kv["mod_revision"]).unwrap_or(0),
                })
            })
            .collect()
    }

    /// A record from its JSON value.
    fn record(&self, worker: u64, value: &[u8]) -> Result<Record, LeaseError> {
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

    /// The worker id at the end of a key.
    fn worker_of(&self, key: &str) -> Result<u64, LeaseError> {
        key.rsplit('/')
            .next()
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| self.corrupt(format!("the key {key:?} names no worker id")))
    }

    /// The ranges that read the marker and the witness.
    fn head_ranges(&self) -> [Value; 2] {
        [range(&self.marker_key()), range(&self.witness_key())]
    }

    /// Writes the witness up to the term `head` saw, where it is below:
    /// best effort, as any later read does it too.
    fn raise_witness(&self, head: &Head) -> Result<(), LeaseError> {
        if head
            .witness
            .is_some_and(|(term, _)| term >= head.header.term)
        {
            return Ok(());
        }
        let key = self.witness_key();
        let compare = match head.witness {
            Some((_, revision)) => compare_mod(&key, revision),
            None => compare_absent(&key),
        };
        self.txn(
            vec![compare],
            vec![put(&key, &pad(head.header.term))],
            vec![],
        )?;
        Ok(())
    }
}

/// The clock this registry's times are read from: its host's.
fn now_ms() -> u64 {
    floor_millis(SystemClock.unix_nanos())
}

/// A number as keys hold it: zero-padded to 20 digits, so that keys sort
/// as numbers.
fn pad(n: u64) -> String {
    format!("{n:020}")
}

fn range(key: &str) -> Value {
    json!({"request_range": {"key": base64(key.as_bytes())}})
}

/// A range over every key that starts with `prefix`, from `from` (a key
/// with that prefix) on, ascending, at most `limit` (0: all).
fn range_prefix(prefix: &str, from: Option<&str>, limit: u64, keys_only: bool) -> Value {
    let mut end = prefix.as_bytes().to_vec();
    // The first key past the prefix: its last byte plus one (never 0xff
    // here: keys are text).
    *end.last_mut().expect("a prefix is never empty") += 1;
    json!({"request_range": {
        "key": base64(from.unwrap_or(prefix).as_bytes()),
        "range_end": base64(&end),
        "limit": limit.to_string(),
        "keys_only": keys_only,
        "sort_order": "ASCEND",
        "sort_target": "KEY",
    }})
}

fn put(key: &str, value: &str) -> Value {
    json!({"request_put": {"key": base64(key.as_bytes()), "value": base64(value.as_bytes())}})
}

fn delete(key: &str) -> Value {
    json!({"request_delete_range": {"key": base64(key.as_bytes())}})
}

fn compare_value(key: &str, value: &str) -> Value {
    json!({"key": base64(key.as_bytes()), "target": "VALUE", "result": "EQUAL",
           "value": base64(value.as_bytes())})
}

fn compare_mod(key: &str, revision: u64) -> Value {
    json!({"key": base64(key.as_bytes()), "target": "MOD", "result": "EQUAL",
           "mod_revision": revision.to_string()})
}

fn compare_absent(key: &str) -> Value {
    json!({"key": base64(key.as_bytes()), "target": "CREATE", "result": "EQUAL",
           "create_revision": "0"})
}

fn succeeded(answer: &Value) -> bool {
    answer["succeeded"].as_bool().unwrap_or(false)
}

/// A namespace in a key: `%` and `/` percent-encoded.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            c => out.push(c),
        }
    }
    out
}

/// `%XX` sequences decoded; `None` for a bad one.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl Registry for EtcdRegistry {
    fn read(
        &self,
        namespace: &str,
        workers: u64,
        prefer: Option<u64>,
    ) -> Result<Snapshot, LeaseError> {
        let base = self.base(namespace)?;
        let record_key = |worker: u64| format!("{base}w/{}", pad(worker));
        let cursor_key = format!("{base}cursor");
        let [marker, witness] = self.head_ranges();
        let mut first = vec![marker, witness, range(&cursor_key)];
        if let Some(worker) = prefer.filter(|&w| w < workers) {
            first.push(range(&record_key(worker)));
        }
        let answer = self.txn(vec![], first, vec![])?;
        let head = self.head(&answer)?;
        let mut records = Vec::new();
        let mut listed = std::collections::BTreeSet::new();
        let mut list = |records: &mut Vec<Record>, record: Record| {
            if listed.insert(record.worker) {
                records.push(record);
            }
        };
        if let Some(kv) = self
            .kvs(&answer["responses"][3]["response_range"])?
            .into_iter()
            .next()
        {
            let worker = self.worker_of(&kv.key)?;
            list(&mut records, self.record(worker, &kv.value)?);
        }
        let Some(marker) = head.in_force else {
            // No marker in force: every record is from before it, and the
            // lowest id is the fresh one.
            if workers > 0 {
                let answer = self.txn(vec![], vec![range(&record_key(0))], vec![])?;
                if let Some(kv) = self
                    .kvs(&answer["responses"][0]["response_range"])?
                    .into_iter()
                    .next()
                {
                    list(&mut records, self.record(0, &kv.value)?);
                }
            }
            return Ok(Snapshot {
                server_unix_millis: now_ms(),
                marker_unix_millis: None,
                records,
                fresh: (workers > 0).then_some(0),
                more: false,
            });
        };
        self.raise_witness(&head)?;
        let cursor = self
            .kvs(&answer["responses"][2]["response_range"])?
            .into_iter()
            .next()
            .map(|kv| {
                let text = String::from_utf8_lossy(&kv.value).into_owned();
                text.split_once(' ')
                    .and_then(|(m, at)| {
                        Some((
                            m.parse::<u64>().ok()?,
                            at.parse::<u64>().ok()?,
                            kv.mod_revision,
                        ))
                    })
                    .ok_or_else(|| self.corrupt(format!("the cursor {text:?}")))
            })
            .transpose()?;
        let (start, cursor_revision) = match cursor {
            Some((m, at, revision)) if m == marker => (at, Some(revision)),
            Some((_, _, revision)) => (0, Some(revision)),
            None => (0, None),
        };
        let start = start.min(workers);
        let stop = start.saturating_add(FRESH_SLICE).min(workers);
        let m = pad(marker);
        let recorded = format!("{base}rec/{m}/");
        let second = vec![
            range_prefix(&format!("{base}free/{m}/"), None, 1, false),
            range_prefix(&format!("{base}held/{m}/"), None, 4, false),
            range_prefix(
                &recorded,
                Some(&format!("{recorded}{}", pad(start))),
                FRESH_SLICE,
                true,
            ),
        ];
        let answer = self.txn(vec![], second, vec![])?;
        let now = now_ms();
        for kv in self.kvs(&answer["responses"][0]["response_range"])? {
            let worker = self.worker_of(&kv.key)?;
            if worker < workers {
                list(&mut records, self.record(worker, &kv.value)?);
            }
        }
        for kv in self.kvs(&answer["responses"][1]["response_range"])? {
            let worker = self.worker_of(&kv.key)?;
            let record = self.record(worker, &kv.value)?;
            if worker < workers && record.expires_unix_millis <= now {
                list(&mut records, record);
            }
        }
        // The lowest id from the cursor on with no record under the marker.
        let mut fresh = start;
        for kv in self.kvs(&answer["responses"][2]["response_range"])? {
            let worker = self.worker_of(&kv.key)?;
            if worker != fresh {
                break;
            }
            fresh += 1;
        }
        let gap = fresh < stop;
        let fresh = fresh.min(stop);
        let more = !gap && stop < workers;
        if fresh < workers {
            // Its record from before the marker, if it has one; the cursor
            // moves up to it (every id below has a record under the marker).
            let key = record_key(fresh);
            let moved = put(&cursor_key, &format!("{marker} {fresh}"));
            let compare = match cursor_revision {
                Some(revision) => compare_mod(&cursor_key, revision),
                None => compare_absent(&cursor_key),
            };
            let success = if fresh > start {
                vec![range(&key), moved]
            } else {
                vec![range(&key)]
            };
            let answer = self.txn(vec![compare], success, vec![range(&key)])?;
            if let Some(kv) = self
                .kvs(&answer["responses"][0]["response_range"])?
                .into_iter()
                .next()
            {
                list(&mut records, self.record(fresh, &kv.value)?);
            }
        }
        Ok(Snapshot {
            server_unix_millis: now,
            marker_unix_millis: Some(marker),
            records,
            fresh: (fresh < workers).then_some(fresh),
            more,
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        // A few tries: another client may write a marker between the read
        // and the write, and its marker is then the one in force.
        for _ in 0..3 {
            let answer = self.txn(vec![], self.head_ranges().to_vec(), vec![])?;
            let head = self.head(&answer)?;
            if let Some(marker) = head.in_force {
                self.raise_witness(&head)?;
                return Ok(marker);
            }
            let key = self.marker_key();
            let (marker, compare) = match (&head.marker, head.witness) {
                // Nothing of flakegen's here yet: a new prefix, nothing lost.
                (None, None) => (0, compare_absent(&key)),
                (None, Some(_)) => (ceil_millis(SystemClock.unix_nanos()), compare_absent(&key)),
                (Some((text, revision)), _) => {
                    let before = text
                        .split_once(' ')
                        .and_then(|(ms, _)| ms.parse::<u64>().ok());
                    let now = ceil_millis(SystemClock.unix_nanos());
                    (
                        before.map_or(now, |b| now.max(b + 1)),
                        compare_mod(&key, *revision),
                    )
                }
            };
            let text = Self::marker_text(marker, head.header.cluster);
            let success = vec![
                put(&key, &text),
                put(&self.witness_key(), &pad(head.header.term)),
            ];
            if succeeded(&self.txn(vec![compare], success, vec![])?) {
                // The count of terms starts again under the new marker.
                self.rewound(head.header, Some(&text));
                return Ok(marker);
            }
        }
        Err(LeaseError::Contended {
            namespace: namespace.to_owned(),
            attempts: 3,
        })
    }

    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        let base = self.base(namespace)?;
        let key = format!("{base}w/{}", pad(worker));
        let [marker_range, witness_range] = self.head_ranges();
        let answer = self.txn(
            vec![],
            vec![marker_range, witness_range, range(&key)],
            vec![],
        )?;
        let head = self.head(&answer)?;
        // A cluster restored since the marker was written (its term went
        // back), or another cluster: the marker is not in force, whatever
        // its value says.
        if head.in_force != Some(expect.marker_unix_millis) {
            return Ok(None);
        }
        let cluster = head.header.cluster;
        let old = match self
            .kvs(&answer["responses"][2]["response_range"])?
            .into_iter()
            .next()
        {
            Some(kv) => Some((self.record(worker, &kv.value)?, kv.mod_revision)),
            None => None,
        };
        if old.as_ref().map(|(r, _)| r.version) != expect.version {
            return Ok(None);
        }
        let marker = expect.marker_unix_millis;
        let m = pad(marker);
        let now = now_ms();
        let expires = if record.ttl_millis == 0 {
            0
        } else {
            now.saturating_add(record.ttl_millis)
        };
        let value = json!({
            "holder": record.holder,
            "version": record.version,
            "marker": marker,
            "expires": expires,
            "fence": record.fence_unix_millis,
        })
        .to_string();
        let index_key = |holder: &str, marker: &str, expires: u64, fence: u64| {
            if holder.is_empty() {
                format!("{base}free/{marker}/{}/{}", pad(fence), pad(worker))
            } else {
                format!("{base}held/{marker}/{}/{}", pad(expires), pad(worker))
            }
        };
        let new_index = index_key(record.holder, &m, expires, record.fence_unix_millis);
        let mut compare = vec![compare_value(
            &self.marker_key(),
            &Self::marker_text(marker, cluster),
        )];
        let mut success = Vec::new();
        match &old {
            Some((old, revision)) => {
                compare.push(compare_mod(&key, *revision));
                let old_index = index_key(
                    &old.holder,
                    &pad(old.marker_unix_millis),
                    old.expires_unix_millis,
                    old.fence_unix_millis,
                );
                // One transaction may not name a key twice.
                if old_index != new_index {
                    success.push(delete(&old_index));
                }
            }
            None => {
                compare.push(compare_absent(&key));
                success.push(put(
                    &format!("{}/names/{}", self.prefix, percent_encode(namespace)),
                    "",
                ));
            }
        }
        success.push(put(&key, &value));
        success.push(put(&new_index, &value));
        success.push(put(&format!("{base}rec/{m}/{}", pad(worker)), ""));
        let answer = self.txn(compare, success, vec![])?;
        // The clock the expiry was reckoned from: the write's time, as the
        // contract has a server say it.
        Ok(succeeded(&answer).then_some(now))
    }

    fn time_base(&self) -> TimeBase {
        TimeBase::Client
    }

    fn inspect(&self) -> Option<&dyn Inspect> {
        Some(self)
    }
}

impl Inspect for EtcdRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let base = self.base(namespace)?;
        let [marker, witness] = self.head_ranges();
        let answer = self.txn(
            vec![],
            vec![
                marker,
                witness,
                range_prefix(&format!("{base}w/"), None, 0, false),
            ],
            vec![],
        )?;
        let head = self.head(&answer)?;
        if head.marker.is_none() && head.witness.is_none() {
            return Err(LeaseError::NoLeases {
                address: self.remote.address.clone(),
            });
        }
        let records = self
            .kvs(&answer["responses"][2]["response_range"])?
            .into_iter()
            .map(|kv| self.record(self.worker_of(&kv.key)?, &kv.value))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Listing {
            server_unix_millis: now_ms(),
            marker_unix_millis: head.in_force,
            records,
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        let names = format!("{}/names/", self.prefix);
        let answer = self.txn(vec![], vec![range_prefix(&names, None, 0, true)], vec![])?;
        let mut namespaces = self
            .kvs(&answer["responses"][0]["response_range"])?
            .into_iter()
            .filter_map(|kv| kv.key.strip_prefix(&names).and_then(percent_decode))
            .collect::<Vec<_>>();
        namespaces.sort();
        Ok(namespaces)
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        let endpoints = self.endpoints.clone();
        // Each member the URL names, asked on a connection of its own.
        let statuses: Vec<(String, Result<Value, String>)> =
            self.run(|mut gateway| async move {
                let members = self
                    .call(&mut gateway, "/v3/cluster/member/list", &json!({}))
                    .await;
                let mut statuses = Vec::new();
                for endpoint in &endpoints {
                    let status = async {
                        let mut member = self.open(endpoint).await?;
                        self.call(&mut member, "/v3/maintenance/status", &json!({}))
                            .await
                    }
                    .await
                    .map_err(|e| e.to_string());
                    statuses.push((endpoint.clone(), status));
                }
                let members = members.map(|m| {
                    let mut all = vec![("members".to_owned(), Ok(m))];
                    all.extend(statuses);
                    all
                });
                (gateway, members.map_err(Failure::Client))
            })?;
        let transport = match self.tls {
            Some(_) => Transport::Tls(Verified::Full),
            None => Transport::Plain,
        };
        let mut caveats = Vec::new();
        let names: Vec<String> = statuses[0]
            .1
            .as_ref()
            .ok()
            .and_then(|m| m["members"].as_array())
            .map(|members| {
                members
                    .iter()
                    .map(|m| m["name"].as_str().unwrap_or("(unnamed)").to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let mut indexes = Vec::new();
        let mut down = Vec::new();
        let mut leader = None;
        let mut term = 0;
        for (endpoint, status) in &statuses[1..] {
            match status {
                Ok(status) => {
                    indexes.push((endpoint.clone(), number(&status["raftIndex"]).unwrap_or(0)));
                    term = term.max(number(&status["raftTerm"]).unwrap_or(0));
                    if number(&status["leader"]) == number(&status["header"]["member_id"]) {
                        leader = Some(endpoint.clone());
                    }
                }
                Err(e) => down.push(format!("{endpoint} ({e})")),
            }
        }
        let majority = names.len() / 2 + 1;
        caveats.push(Caveat {
            topic: "topology",
            setting: format!(
                "{} members ({}), leader at {}, raft term {term}",
                names.len(),
                names.join(", "),
                leader.as_deref().unwrap_or("none the URL names"),
            ),
            severity: Severity::Note,
            advice: format!(
                "a consensus store: while {majority} of {} members stand, a member or a leader \
                 lost costs generators nothing; a restore from a snapshot is a detected loss \
                 (generators wait the TTL and the skew allowance)",
                names.len()
            ),
        });
        if !down.is_empty() {
            caveats.push(Caveat {
                topic: "topology",
                setting: format!(
                    "members the URL names that did not answer: {}",
                    down.join(", ")
                ),
                severity: Severity::Warning,
                advice: "generators use the others; one more member lost may cost the cluster its \
                         quorum, and generators then refuse once their fences pass: bring it back"
                    .to_owned(),
            });
        }
        if let Some(&(_, top)) = indexes.iter().max_by_key(|(_, index)| *index) {
            for (endpoint, index) in &indexes {
                if top - index > 1_000 {
                    caveats.push(Caveat {
                        topic: "topology",
                        setting: format!("{endpoint} is {} raft entries behind", top - index),
                        severity: Severity::Warning,
                        advice: "a member that falls behind cannot stand in for the leader: \
                                 check its disk and network"
                            .to_owned(),
                    });
                }
            }
        }
        if term <= 2 {
            caveats.push(Caveat {
                topic: "durability",
                setting: format!("raft term {term}: no leader change since the cluster began"),
                severity: Severity::Warning,
                advice: "a restore of a snapshot taken now would not be detected unless it gives \
                         the cluster a new id (a new --initial-cluster-token): restore with a new \
                         token, or let the leader change once (etcdctl move-leader)"
                    .to_owned(),
            });
        }
        Ok(Survey::new(transport, caveats))
    }
}

impl fmt::Debug for EtcdRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdRegistry")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.prefix)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_members_a_prefix_and_credentials() {
        let r =
            EtcdRegistry::new("etcd://u:p%40ss@10.0.0.1:2379,10.0.0.2,[::1]:2380/leases/").unwrap();
        assert_eq!(
            r.endpoints,
            ["10.0.0.1:2379", "10.0.0.2:2379", "[::1]:2380"]
        );
        assert_eq!(r.prefix, "/leases");
        assert_eq!(r.credentials, Some(("u".to_owned(), "p@ss".to_owned())));
        let r = EtcdRegistry::new("ETCD://127.0.0.1:2379").unwrap();
        assert_eq!(r.prefix, "/flakegen");
        assert_eq!(r.credentials, None);
        for bad in [
            "etcd://",
            "etcd://h:1/p?ssl=1",
            "etcd://h:1?sslrootcert=/ca.pem",
            "http://h:1",
        ] {
            assert!(
                matches!(EtcdRegistry::new(bad), Err(LeaseError::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn namespaces_are_one_key_segment() {
        assert_eq!(percent_encode("a/b%c"), "a%2Fb%25c");
        assert_eq!(percent_decode("a%2Fb%25c").as_deref(), Some("a/b%c"));
        assert_eq!(percent_decode("%zz"), None);
    }
}

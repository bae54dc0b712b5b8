//! etcd's v3 API through the gateway every member serves beside gRPC: JSON
//! over HTTP/1.1 on the client port (`POST /v3/kv/txn`). A small client of
//! its own, so that the `etcd` feature needs no gRPC stack, no protobuf
//! compiler at build time, and no more than the other registries: tokio's
//! sockets, rustls, and `serde_json`.
//!
//! The gateway speaks protobuf's JSON mapping: 64-bit integers are strings,
//! bytes are base64, and a field at its zero value is left out (`"succeeded"`
//! is absent when a transaction's compares failed). A transaction is typed
//! here as etcd's own clients type it: each operation added returns a
//! handle, and the answer is read through the handle, never by position.

use std::sync::Arc;

use serde_json::{Value, json};

use super::super::client::{budget, http};

/// What went wrong on one call: the HTTP client's error, whose `Status` is
/// the gateway's gRPC code and message.
pub(super) use super::super::client::http::Error;

/// gRPC's codes that the registry tells apart.
pub(super) mod code {
    pub(in super::super) const INVALID_ARGUMENT: i64 = 3;
    pub(in super::super) const DEADLINE_EXCEEDED: i64 = 4;
    pub(in super::super) const PERMISSION_DENIED: i64 = 7;
    pub(in super::super) const FAILED_PRECONDITION: i64 = 9;
    pub(in super::super) const UNAVAILABLE: i64 = 14;
    pub(in super::super) const UNAUTHENTICATED: i64 = 16;
}

/// One connection to one member, authenticated if the URL had credentials.
pub(super) struct Gateway {
    connection: http::Connection,
    /// The auth token, once authenticated.
    pub(super) token: Option<Arc<str>>,
}

impl Gateway {
    /// Connects to `endpoint` (`host:port`), over TLS with `tls`.
    pub(super) async fn connect(
        endpoint: &str,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Gateway, Error> {
        Ok(Gateway {
            connection: http::Connection::open(endpoint, tls).await?,
            token: None,
        })
    }

    /// The member's `host:port`.
    pub(super) fn endpoint(&self) -> &str {
        self.connection.endpoint()
    }

    /// Logs in as `user`: every later call carries the token, which any
    /// member takes where the cluster issues signed tokens (`--auth-token
    /// jwt`), and this member alone otherwise.
    pub(super) async fn authenticate(
        &mut self,
        user: &str,
        password: &str,
    ) -> Result<Arc<str>, Error> {
        // A login carries no token: the member refuses one it does not know.
        self.token = None;
        let reply = self
            .call(
                "/v3/auth/authenticate",
                &json!({"name": user, "password": password}),
            )
            .await?;
        let token: Arc<str> = reply["token"]
            .as_str()
            .ok_or_else(|| Error::Protocol("authenticate: no token in the answer".into()))?
            .into();
        self.token = Some(Arc::clone(&token));
        Ok(token)
    }

    /// Posts `body` to `path` and returns the answer: the server's error as
    /// [`Error::Status`], another server's answer as [`Error::Protocol`].
    pub(super) async fn call(&mut self, path: &str, body: &Value) -> Result<Value, Error> {
        let token = self.token.clone();
        // The request's own bound, told to the member: one that cannot
        // commit a write (its leader just died, unknown to it) answers
        // within it, where it would hold the write for its own request
        // timeout (7 s at etcd's default election timeout), past the bound
        // a call on a new connection has for its set-up, and past the fence.
        let deadline = format!("{}m", budget::timeout(false).as_millis().max(1));
        let headers: Vec<(&str, &str)> = token
            .iter()
            .map(|t| ("Authorization", &**t))
            .chain([("Grpc-Timeout", &*deadline)])
            .collect();
        let body = body.to_string();
        let answer = self
            .connection
            .request("POST", path, &headers, body.as_bytes())
            .await?;
        let value: Option<Value> = serde_json::from_slice(&answer.body).ok();
        // The gateway's own errors carry a gRPC code, whatever the status.
        if let Some(value) = value.as_ref().filter(|v| v.get("header").is_none()) {
            if let Some(code) = value.get("code").and_then(Value::as_i64) {
                let message = value["message"]
                    .as_str()
                    .or_else(|| value["error"].as_str())
                    .unwrap_or("an error without a message")
                    .to_owned();
                return Err(Error::Status { code, message });
            }
        }
        match (answer.status, value) {
            (200, Some(value)) => Ok(value),
            (status, _) => Err(Error::Protocol(format!(
                "not etcd's JSON gateway at this port: HTTP {status}, {}",
                String::from_utf8_lossy(&answer.body[..answer.body.len().min(80)])
            ))),
        }
    }
}

/// A transaction: compares, then the operations of one branch or the other.
#[derive(Debug, Default)]
pub(super) struct Txn {
    compare: Vec<Value>,
    success: Vec<Value>,
    failure: Vec<Value>,
}

/// A range added to a [`Txn`]: its answer is read through it.
#[derive(Clone, Copy, Debug)]
#[must_use = "a range's answer is read through its handle"]
pub(super) struct Get(usize);

/// A key as a range returned it.
#[derive(Clone, Debug)]
pub(super) struct Kv {
    pub(super) key: String,
    pub(super) value: Vec<u8>,
    pub(super) create_revision: u64,
    pub(super) mod_revision: u64,
}

impl Txn {
    pub(super) fn new() -> Txn {
        Txn::default()
    }

    /// Reads `key`, in either branch.
    pub(super) fn get(&mut self, key: &str) -> Get {
        self.range(json!({"key": base64(key.as_bytes())}))
    }

    /// Reads the keys that start with `prefix`, from `from` (a key with that
    /// prefix) on, ascending, at most `limit` (0: all), in either branch.
    pub(super) fn scan(
        &mut self,
        prefix: &str,
        from: Option<&str>,
        limit: u64,
        keys_only: bool,
    ) -> Get {
        let mut end = prefix.as_bytes().to_vec();
        // The first key past the prefix: its last byte plus one (never 0xff
        // here: keys are text).
        *end.last_mut().expect("a prefix is never empty") += 1;
        self.range(json!({
            "key": base64(from.unwrap_or(prefix).as_bytes()),
            "range_end": base64(&end),
            "limit": limit.to_string(),
            "keys_only": keys_only,
            "sort_order": "ASCEND",
            "sort_target": "KEY",
        }))
    }

    fn range(&mut self, request: Value) -> Get {
        // Reads come first in both branches, so a handle means the same
        // answer in either.
        assert_eq!(
            self.success.len(),
            self.failure.len(),
            "reads before writes"
        );
        let op = json!({ "request_range": request });
        self.success.push(op.clone());
        self.failure.push(op);
        Get(self.success.len() - 1)
    }

    /// Writes `value` at `key` if the compares hold.
    pub(super) fn put(&mut self, key: &str, value: &str) {
        self.success.push(json!({"request_put": {
            "key": base64(key.as_bytes()), "value": base64(value.as_bytes())}}));
    }

    /// Deletes `key` if the compares hold.
    pub(super) fn delete(&mut self, key: &str) {
        self.success
            .push(json!({"request_delete_range": {"key": base64(key.as_bytes())}}));
    }

    /// Holds if `key`'s value is `value`.
    pub(super) fn value_is(&mut self, key: &str, value: &str) {
        self.compare
            .push(json!({"key": base64(key.as_bytes()), "target": "VALUE",
            "result": "EQUAL", "value": base64(value.as_bytes())}));
    }

    /// Holds if `key`'s value begins with `prefix` followed by a space:
    /// it lies above `prefix` and below `prefix` followed by `!`, the byte
    /// after the space, which etcd compares byte by byte.
    pub(super) fn value_begins(&mut self, key: &str, prefix: &str) {
        for (result, bound) in [
            ("GREATER", prefix.to_owned()),
            ("LESS", format!("{prefix}!")),
        ] {
            self.compare
                .push(json!({"key": base64(key.as_bytes()), "target": "VALUE",
                "result": result, "value": base64(bound.as_bytes())}));
        }
    }

    /// Holds if `key` was last written at `revision`.
    pub(super) fn modified_at(&mut self, key: &str, revision: u64) {
        self.compare
            .push(json!({"key": base64(key.as_bytes()), "target": "MOD",
            "result": "EQUAL", "mod_revision": revision.to_string()}));
    }

    /// Holds if `key` was created at `revision`; 0: if there is no such key.
    pub(super) fn created_at(&mut self, key: &str, revision: u64) {
        self.compare
            .push(json!({"key": base64(key.as_bytes()), "target": "CREATE",
            "result": "EQUAL", "create_revision": revision.to_string()}));
    }

    /// Whether it only reads: asking it again changes nothing.
    pub(super) fn reads_only(&self) -> bool {
        let reads = |ops: &[Value]| ops.iter().all(|op| op.get("request_range").is_some());
        reads(&self.success) && reads(&self.failure)
    }

    pub(super) fn body(&self) -> Value {
        json!({"compare": self.compare, "success": self.success, "failure": self.failure})
    }
}

/// A member's answer header: which cluster, the raft term, and the
/// store's revision (a write's: every key a transaction puts has it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) cluster: u64,
    pub(super) term: u64,
    pub(super) revision: u64,
}

/// A transaction's answer.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) header: Header,
    /// Whether the compares held (the success branch ran).
    pub(super) succeeded: bool,
    value: Value,
}

impl Answer {
    pub(super) fn of(value: Value) -> Answer {
        let header = &value["header"];
        Answer {
            header: Header {
                cluster: number(&header["cluster_id"]).unwrap_or(0),
                term: number(&header["raft_term"]).unwrap_or(0),
                revision: number(&header["revision"]).unwrap_or(0),
            },
            succeeded: value["succeeded"].as_bool().unwrap_or(false),
            value,
        }
    }

    /// The keys a range found, by its handle; `Err` names what was unreadable.
    pub(super) fn kvs(&self, get: Get) -> Result<Vec<Kv>, String> {
        let range = &self.value["responses"][get.0]["response_range"];
        let Some(kvs) = range.get("kvs").and_then(Value::as_array) else {
            return Ok(Vec::new());
        };
        kvs.iter()
            .map(|kv| {
                let bytes = |field: &str| {
                    kv[field]
                        .as_str()
                        .map_or(Some(Vec::new()), unbase64)
                        .ok_or_else(|| format!("a key's {field} is not base64: {kv}"))
                };
                Ok(Kv {
                    key: String::from_utf8(bytes("key")?)
                        .map_err(|e| format!("a key is not UTF-8: {e}"))?,
                    value: bytes("value")?,
                    create_revision: number(&kv["create_revision"]).unwrap_or(0),
                    mod_revision: number(&kv["mod_revision"]).unwrap_or(0),
                })
            })
            .collect()
    }

    /// The one key a `get` found, if any.
    pub(super) fn kv(&self, get: Get) -> Result<Option<Kv>, String> {
        Ok(self.kvs(get)?.into_iter().next())
    }
}

/// A 64-bit integer of an answer: a string of digits, a number, or absent
/// (zero, which protobuf's JSON leaves out).
pub(super) fn number(value: &Value) -> Option<u64> {
    match value {
        Value::Null => Some(0),
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Bytes as protobuf's JSON has them: base64, padded.
pub(super) fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The bytes of a base64 string; `None` if it is not one.
pub(super) fn unbase64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut bits = 0u32;
    let mut held = 0;
    for c in text.bytes() {
        let value = ALPHABET.iter().position(|&a| a == c)? as u32;
        bits = bits << 6 | value;
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_length() {
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"/flakegen/ready"), "L2ZsYWtlZ2VuL3JlYWR5");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"a"), "YQ==");
        for n in 0..20u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(unbase64(&base64(&bytes)).unwrap(), bytes);
        }
        assert_eq!(unbase64("not base64!"), None);
    }

    #[test]
    fn numbers_come_as_strings_or_not_at_all() {
        assert_eq!(number(&json!("42")), Some(42));
        assert_eq!(number(&json!(7)), Some(7));
        assert_eq!(number(&Value::Null), Some(0));
        assert_eq!(number(&json!("x")), None);
    }

    #[test]
    fn a_range_is_read_through_its_handle_in_either_branch() {
        let mut txn = Txn::new();
        let a = txn.get("/a");
        let b = txn.scan("/p/", None, 2, true);
        txn.modified_at("/a", 3);
        txn.put("/a", "x");
        let body = txn.body();
        assert_eq!(body["success"].as_array().unwrap().len(), 3);
        assert_eq!(body["failure"].as_array().unwrap().len(), 2);
        let answer = Answer::of(json!({
            "header": {"cluster_id": "9", "raft_term": "4", "revision": "17"},
            "responses": [
                {"response_range": {"kvs": [{"key": base64(b"/a"), "value": base64(b"1"),
                    "create_revision": "2", "mod_revision": "3"}]}},
                {"response_range": {}},
            ],
        }));
        assert_eq!(
            answer.header,
            Header {
                cluster: 9,
                term: 4,
                revision: 17
            }
        );
        assert!(!answer.succeeded);
        let kv = answer.kv(a).unwrap().unwrap();
        assert_eq!(
            (
                kv.key.as_str(),
                kv.value.as_slice(),
                kv.create_revision,
                kv.mod_revision
            ),
            ("/a", &b"1"[..], 2, 3)
        );
        assert!(answer.kvs(b).unwrap().is_empty());
    }
}

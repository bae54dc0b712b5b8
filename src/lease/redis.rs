//! Leases in Redis keys (feature `redis`): storage steps only.

use std::fmt;
use std::sync::Arc;

use redis::aio::MultiplexedConnection;
use redis::{Client, ErrorKind, RedisError, Script, TlsCertificates, Value};

use super::backend::{Expect, Record, Registry, Snapshot, Write};
use super::error::LeaseError;
use super::error::said;
use super::remote::{Connected, Failure, Remote};
use super::tls;

/// Worker-id leases kept in Redis: a hash per worker id and a marker per
/// namespace.
///
/// ```text
/// flakegen:{<namespace>}:marker     string: <run_id>:<ms>, when the data began (server clock)
/// flakegen:{<namespace>}:w:<id>     hash: holder, version, marker, expires, fence
/// ```
///
/// Each step is a Lua script, which Redis runs atomically, and expiry is
/// judged by the server's `TIME`. A [`swap`](Registry::swap) compares the
/// marker and the record's version and writes in one script: it holds no
/// policy. Reading a namespace reads every id of the layout, a few
/// milliseconds for a 10-bit worker field (about 50 ms for Sonyflake's 16
/// bits), once per build. A namespace's keys share a hash tag, so Redis
/// Cluster keeps them on one shard. Every call, connecting included,
/// finishes or fails within [`DEFAULT_TIMEOUT`](super::DEFAULT_TIMEOUT) on the client.
///
/// # What counts as a loss
///
/// **Every restart of the server process**, whatever its persistence, and a
/// failover to a replica. The marker names the server process (`run_id`)
/// that wrote it, and a marker from another process is replaced by the
/// server's clock now. Persistence cannot be trusted here: `appendfsync
/// everysec` loses the last second of writes, and a replica lags its
/// primary, so a renewal its holder already used may be gone, and an older
/// fence in its place. After a restart, the first TTL and skew wait.
///
/// A namespace that has no marker yet gets the moment its server started,
/// rounded up to a second: a server that has run for longer than a TTL and
/// the skew makes nobody wait. Not detected, so never done under running
/// generators: deleting keys by hand (`DEL`, `FLUSHDB`, `FLUSHALL`), or
/// letting Redis evict them. A `maxmemory-policy` of `allkeys-*` is refused.
///
/// # Examples
///
/// ```no_run
/// use flakegen::{Builder, IdGenerator, lease::{Lease, RedisRegistry}};
///
/// let registry = RedisRegistry::new("redis://:secret@127.0.0.1:6379/0")?;
/// let generator = Builder::new().lease(Lease::new(registry, "orders")).build_atomic()?;
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct RedisRegistry {
    client: Client,
    remote: Remote<MultiplexedConnection>,
    read: Script,
    mark: Script,
    swap: Script,
}

/// How long the probe that tells a TLS-only port from a server going away
/// may take: it runs only on a dropped connection, on the lease's thread.
const TLS_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The server's clock (`now`, ms rounded down) and process (`run`), at the
/// top of every script.
macro_rules! lua_server {
    () => {
        "local t = redis.call('TIME')\n\
         local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n\
         local info = redis.call('INFO', 'server')\n\
         local run = string.match(info, 'run_id:(%x+)')\n"
    };
}

/// KEYS: marker. ARGV: record key prefix, workers.
/// Returns `{now, marker or '', [worker, holder, version, marker, expires, fence]...}`.
const READ: &str = concat!(
    lua_server!(),
    r#"
local policy = string.match(redis.call('INFO', 'memory'), 'maxmemory_policy:([%w%-]+)')
if policy and string.sub(policy, 1, 8) == 'allkeys-' then
  return redis.error_reply('FLAKEGEN_EVICTS ' .. policy)
end
local marker = ''
local m = redis.call('GET', KEYS[1])
if m then
  local r, ms = string.match(m, '^(%x+):(%d+)$')
  if not r then return redis.error_reply('FLAKEGEN_CORRUPT marker ' .. KEYS[1]) end
  if r == run then marker = ms end
end
local out = {now, marker}
for w = 0, tonumber(ARGV[2]) - 1 do
  local r = redis.call('HMGET', ARGV[1] .. w, 'holder', 'version', 'marker', 'expires', 'fence')
  if r[1] or r[2] or r[3] or r[4] or r[5] then
    table.insert(out, w)
    for i = 1, 5 do table.insert(out, r[i] or '') end
  end
end
return out
"#
);

/// KEYS: marker. Returns the marker in force, in ms, writing one if need be.
const MARK: &str = concat!(
    lua_server!(),
    r#"
local ceil_now = tonumber(t[1]) * 1000 + math.ceil(tonumber(t[2]) / 1000)
local m = redis.call('GET', KEYS[1])
local began
if m then
  local r, ms = string.match(m, '^(%x+):(%d+)$')
  if not r then return redis.error_reply('FLAKEGEN_CORRUPT marker ' .. KEYS[1]) end
  if r == run then return ms end
  -- Written by another server process: whatever came after it may be lost.
  began = math.max(ceil_now, tonumber(ms) + 1)
else
  -- Uptime counts whole seconds: the start lies within the second after.
  local up = tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or 0
  began = math.min(ceil_now, (tonumber(t[1]) - up + 1) * 1000)
end
local text = string.format('%.0f', began)
redis.call('SET', KEYS[1], run .. ':' .. text)
return text
"#
);

/// KEYS: marker, record. ARGV: expected marker ms, expected version ('' for
/// no record), holder, version, ttl ms, fence ms. Returns `now`, or nil.
const SWAP: &str = concat!(
    lua_server!(),
    r#"
if redis.call('GET', KEYS[1]) ~= run .. ':' .. ARGV[1] then return false end
if ARGV[2] == '' then
  if redis.call('EXISTS', KEYS[2]) == 1 then return false end
elseif redis.call('HGET', KEYS[2], 'version') ~= ARGV[2] then
  return false
end
local ttl = tonumber(ARGV[5])
local expires = 0
if ttl > 0 then expires = now + ttl end
redis.call('HSET', KEYS[2], 'holder', ARGV[3], 'version', ARGV[4], 'marker', ARGV[1],
  'expires', string.format('%.0f', expires), 'fence', ARGV[6])
return now
"#
);

impl RedisRegistry {
    /// A registry at `url` (`redis://:password@host:port/db`). Nothing is
    /// sent until the first call.
    ///
    /// TLS (rustls): `rediss://`, verifying the server's certificate and host
    /// name against the system's CAs, or against those in the PEM file
    /// `?sslrootcert=<file>` names.
    ///
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        let invalid = |reason: String| LeaseError::InvalidUrl { reason };
        let (url, params) = tls::take_params(url, &["sslrootcert"]);
        let over_tls = url.to_ascii_lowercase().starts_with("rediss://");
        if over_tls {
            tls::ensure_default_provider();
        }
        let client = match params.first() {
            Some(_) if !over_tls => {
                return Err(invalid(
                    "a CA file (sslrootcert=) is for TLS: use a rediss:// URL".to_owned(),
                ));
            }
            Some((_, ca_file)) => {
                let root_cert = std::fs::read(ca_file)
                    .map_err(|e| invalid(format!("cannot read the CA file {ca_file} ({e})")))?;
                let certificates = TlsCertificates {
                    client_tls: None,
                    root_cert: Some(root_cert),
                };
                Client::build_with_tls(url.as_str(), certificates)
            }
            None => Client::open(url.as_str()),
        };
        let client = client.map_err(|e| invalid(e.to_string()))?;
        let address = client.get_connection_info().addr.to_string();
        Ok(RedisRegistry {
            client,
            remote: Remote::new(address)?,
            read: Script::new(READ),
            mark: Script::new(MARK),
            swap: Script::new(SWAP),
        })
    }

    /// Runs `invocation` on a connection, opening one first if need be.
    fn invoke(&self, invocation: &redis::ScriptInvocation<'_>) -> Result<Value, LeaseError> {
        let client = &self.client;
        let open = || async move {
            let connection = client.get_multiplexed_async_connection().await?;
            // The connection drives itself on this registry's runtime.
            Ok(Connected {
                client: connection,
                driver: None,
            })
        };
        let result = self.remote.run(open, |mut connection| async move {
            let reply = invocation.invoke_async(&mut connection).await;
            (connection, reply.map_err(Failure::Client))
        });
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }

    /// The client's error, said as a [`LeaseError`].
    fn error(&self, e: RedisError) -> LeaseError {
        let address = self.remote.address.clone();
        // A server that wants a password rejects a long command sent without
        // one as a protocol error ("unauthenticated multibulk length").
        if e.kind() == ErrorKind::AuthenticationFailed
            || e.code()
                .is_some_and(|code| code == "NOAUTH" || code == "WRONGPASS")
            || e.to_string().contains("unauthenticated")
        {
            return LeaseError::Unauthorized {
                address,
                source: Arc::new(e),
            };
        }
        if e.code() == Some("FLAKEGEN_CORRUPT") {
            return LeaseError::Corrupt {
                address,
                detail: e.detail().unwrap_or("a record").to_owned(),
            };
        }
        if e.code() == Some("FLAKEGEN_EVICTS") {
            let policy = e.detail().unwrap_or("allkeys-*");
            return LeaseError::Server {
                address,
                source: said(format!(
                    "maxmemory-policy {policy} may evict lease records, which would let two \
                     holders share an id: set maxmemory-policy to noeviction"
                )),
            };
        }
        if let Some(reason) = tls::tls_failure(&e) {
            return LeaseError::Tls { address, reason };
        }
        if e.is_connection_dropped() {
            // A TLS-only port closes a connection that speaks plain text;
            // so does a server going away. Only the first answers in TLS.
            if let redis::ConnectionAddr::Tcp(host, port) = &self.client.get_connection_info().addr
            {
                if tls::speaks_tls(host, *port, TLS_PROBE_TIMEOUT) {
                    return LeaseError::TlsRequired {
                        address,
                        source: Arc::new(e),
                    };
                }
            }
        }
        if e.is_io_error()
            || e.is_timeout()
            || e.is_connection_refusal()
            || e.is_connection_dropped()
            || e.code() == Some("LOADING")
        {
            LeaseError::Unreachable {
                address,
                source: Arc::new(e),
            }
        } else {
            LeaseError::Server {
                address,
                source: Arc::new(e),
            }
        }
    }

    fn corrupt(&self, reply: &Value) -> LeaseError {
        LeaseError::Corrupt {
            address: self.remote.address.clone(),
            detail: format!("unexpected script reply {reply:?}"),
        }
    }
}

fn keys(namespace: &str) -> (String, String) {
    (
        format!("flakegen:{{{namespace}}}:marker"),
        format!("flakegen:{{{namespace}}}:w:"),
    )
}

/// A reply item as a number: an integer, or a string of digits; `None` for
/// an empty string.
fn number(value: &Value) -> Result<Option<u64>, ()> {
    match value {
        Value::Int(n) => u64::try_from(*n).map(Some).map_err(drop),
        Value::BulkString(bytes) if bytes.is_empty() => Ok(None),
        Value::BulkString(bytes) => std::str::from_utf8(bytes)
            .map_err(drop)?
            .parse()
            .map(Some)
            .map_err(drop),
        _ => Err(()),
    }
}

fn text(value: &Value) -> Result<String, ()> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).map_err(drop),
        _ => Err(()),
    }
}

impl fmt::Debug for RedisRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRegistry")
            .field("address", &self.remote.address)
            .finish_non_exhaustive()
    }
}

impl Registry for RedisRegistry {
    fn read(&self, namespace: &str, workers: u64) -> Result<Snapshot, LeaseError> {
        super::backend::check_namespace(namespace)?;
        let (marker, prefix) = keys(namespace);
        let reply = self.invoke(self.read.key(marker).arg(prefix).arg(workers))?;
        let corrupt = || self.corrupt(&reply);
        let Value::Array(items) = &reply else {
            return Err(corrupt());
        };
        let (head, rest) = items.split_at_checked(2).ok_or_else(corrupt)?;
        let server_ms = number(&head[0]).ok().flatten().ok_or_else(corrupt)?;
        let marker_ms = number(&head[1]).map_err(|()| corrupt())?;
        let mut records = Vec::with_capacity(rest.len() / 6);
        for fields in rest.chunks(6) {
            let [worker, holder, version, marker, expires, fence] = fields else {
                return Err(corrupt());
            };
            let field = |v: &Value, name: &str| {
                number(v).ok().flatten().ok_or_else(|| LeaseError::Corrupt {
                    address: self.remote.address.clone(),
                    detail: format!("a record's {name} is missing or not a number ({v:?})"),
                })
            };
            records.push(Record {
                worker: field(worker, "worker id")?,
                holder: text(holder).map_err(|()| corrupt())?,
                version: field(version, "version")?,
                marker_ms: field(marker, "marker")?,
                expires_ms: field(expires, "expiry")?,
                fence_ms: field(fence, "fence")?,
            });
        }
        Ok(Snapshot {
            server_ms,
            marker_ms,
            records,
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        super::backend::check_namespace(namespace)?;
        let (marker, _) = keys(namespace);
        let reply = self.invoke(&self.mark.key(marker))?;
        number(&reply)
            .ok()
            .flatten()
            .ok_or_else(|| self.corrupt(&reply))
    }

    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        write: &Write<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        super::backend::check_namespace(namespace)?;
        let (marker, prefix) = keys(namespace);
        let version = expect.version.map_or(String::new(), |v| v.to_string());
        let mut invocation = self.swap.key(marker);
        invocation
            .key(format!("{prefix}{worker}"))
            .arg(expect.marker_ms)
            .arg(version)
            .arg(write.holder)
            .arg(write.version)
            .arg(write.ttl_ms)
            .arg(write.fence_ms);
        let reply = self.invoke(&invocation)?;
        match reply {
            Value::Nil => Ok(None),
            ref other => number(other)
                .ok()
                .flatten()
                .map(Some)
                .ok_or_else(|| self.corrupt(&reply)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_keeps_its_keys_on_one_cluster_slot() {
        let (marker, prefix) = keys("orders");
        assert_eq!(marker, "flakegen:{orders}:marker");
        assert_eq!(prefix, "flakegen:{orders}:w:");
    }

    #[test]
    fn reply_numbers_are_integers_or_digits() {
        assert_eq!(number(&Value::Int(5)), Ok(Some(5)));
        assert_eq!(number(&Value::BulkString(b"12".to_vec())), Ok(Some(12)));
        assert_eq!(number(&Value::BulkString(Vec::new())), Ok(None));
        assert!(number(&Value::BulkString(b"x".to_vec())).is_err());
        assert!(number(&Value::Int(-1)).is_err());
    }
}

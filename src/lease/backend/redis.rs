//! Leases in Redis keys (feature `redis`): storage steps only.

use std::fmt;
use std::sync::Arc;

use redis::aio::MultiplexedConnection;
use redis::{Client, ErrorKind, RedisError, Script, TlsCertificates, Value};

use super::probe::Speaks;
use super::remote::{Connected, Failure, Remote};
use super::tls;
use super::{
    Caveat, Expect, Inspect, LeaseError, Listing, NewRecord, Record, Registry, Severity, Snapshot,
    Survey, Transport, Verified, said,
};

/// Worker-id leases kept in Redis: a hash per worker id and a marker per
/// namespace.
///
/// ```text
/// flakegen:{<namespace>}:marker     string: <run_id>:<ms>, when the data began (server clock)
/// flakegen:{<namespace>}:w:<id>     hash: holder, version, marker, expires, fence
/// flakegen:{<namespace>}:free       sorted set: free ids by fence
/// flakegen:{<namespace>}:held       sorted set: held ids by expiry
/// flakegen:{<namespace>}:recorded   bitmap: the ids with a record under the marker
/// ```
///
/// Each step is a Lua script, which Redis runs atomically, and expiry is
/// judged by the server's `TIME`. A [`swap`](Registry::swap) compares the
/// marker and the record's version and writes in one script: it holds no
/// policy, and files the record in the index, which counts under the
/// marker in force (a new marker starts an empty one). A read finds what an
/// acquisition chooses from through the index, in a bounded number of
/// steps whatever the size of the id space or the number of records: the
/// free id with the earliest fence, expired holders (16 per read), and the
/// lowest id never recorded (`BITPOS`). Ids must fit a
/// Redis bitmap: worker fields up to 32 bits. A namespace's keys share a
/// hash tag, so Redis Cluster keeps them on one shard. Every call,
/// connecting included, finishes or fails within
/// [`DEFAULT_TIMEOUT`](super::DEFAULT_TIMEOUT) on the client.
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
/// rounded up to a second, on a server that has been a primary since it
/// started: one that has run for longer than a TTL and the skew makes
/// nobody wait. On a replica since promoted, the namespace may have begun
/// on the old primary after the replica's last sync, its records lost with
/// it: there it gets the moment it is marked, and its first holders wait. Not detected, so never done under running
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
    head: Script,
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

/// The namespace's index, for the scripts that keep it: `index(id, holder,
/// expires, fence)` files a record written under the marker in force
/// (KEYS[2]..KEYS[4]: free, held, recorded). Members are zero-padded ids,
/// so ties in a sorted set order as numbers.
macro_rules! lua_index {
    () => {
        "local function member(id) return string.format('%020d', id) end\n\
         local function index(id, holder, expires, fence)\n\
           redis.call('SETBIT', KEYS[4], id, 1)\n\
           if holder == '' then\n\
             redis.call('ZREM', KEYS[3], member(id))\n\
             redis.call('ZADD', KEYS[2], fence, member(id))\n\
           else\n\
             redis.call('ZREM', KEYS[2], member(id))\n\
             redis.call('ZADD', KEYS[3], expires, member(id))\n\
           end\n\
         end\n"
    };
}

/// KEYS: marker, free, held, recorded. ARGV: record key prefix, workers,
/// preferred id ('' for none). Returns `{now, marker or '', fresh or -1,
/// 0, [worker, holder, version, marker, expires, fence]...}`.
///
/// Bounded: a slice of expired holders moved to `free`, the `free` head,
/// and one `BITPOS` for the lowest id never recorded under the marker.
const READ: &str = concat!(
    lua_server!(),
    lua_index!(),
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
local workers = tonumber(ARGV[2])
local function record(id)
  return redis.call('HMGET', ARGV[1] .. id, 'holder', 'version', 'marker', 'expires', 'fence')
end
local out = {now, marker, -1, 0}
local listed = {}
local function list(id, r)
  if listed[id] or not (r[1] or r[2] or r[3] or r[4] or r[5]) then return end
  listed[id] = true
  table.insert(out, id)
  for i = 1, 5 do table.insert(out, r[i] or '') end
end
if ARGV[3] ~= '' then list(tonumber(ARGV[3]), record(ARGV[3])) end
if marker == '' then
  -- No marker: every record is from before it; the lowest id is the fresh one.
  out[3] = 0
  list(0, record(0))
  return out
end
-- Holders whose lease expired are free: a slice per read.
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 16)) do
  local n = tonumber(id)
  local r = record(n)
  if r[3] == marker then
    if r[1] == '' or tonumber(r[4]) <= now then
      index(n, '', 0, tonumber(r[5]))
    else
      index(n, r[1], tonumber(r[4]), tonumber(r[5]))
    end
  else
    redis.call('ZREM', KEYS[3], id)
  end
end
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, 3)) do
  local n = tonumber(id)
  list(n, record(n))
end
-- The fresh id, with its record from before the marker if it has one.
local fresh = redis.call('BITPOS', KEYS[4], 0)
if fresh < workers then
  out[3] = fresh
  list(fresh, record(fresh))
end
return out
"#
);

/// KEYS: marker. Returns `{now, marker or ''}`, writing nothing.
const HEAD: &str = concat!(
    lua_server!(),
    r#"
local m = redis.call('GET', KEYS[1])
if m then
  local r, ms = string.match(m, '^(%x+):(%d+)$')
  if not r then return redis.error_reply('FLAKEGEN_CORRUPT marker ' .. KEYS[1]) end
  if r == run then return {now, ms} end
end
return {now, ''}
"#
);

/// KEYS: marker, free, held, recorded. Returns the marker in force, in ms,
/// writing one (and starting an empty index under it) if need be.
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
  local repl = redis.call('INFO', 'replication')
  local promoted = tonumber(string.match(repl, 'second_repl_offset:(%-?%d+)')) or 0
  if promoted == -1 then
    -- A primary since it started: nothing of this namespace was written
    -- here before then. Uptime counts whole seconds: the start lies within
    -- the second after.
    local up = tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or 0
    began = math.min(ceil_now, (tonumber(t[1]) - up + 1) * 1000)
  else
    -- A replica promoted: the namespace's marker and records may have been
    -- written on the old primary after its last sync, and lost.
    began = ceil_now
  end
end
local text = string.format('%.0f', began)
redis.call('SET', KEYS[1], run .. ':' .. text)
redis.call('UNLINK', KEYS[2], KEYS[3], KEYS[4])
return text
"#
);

/// KEYS: marker, free, held, recorded, record. ARGV: expected marker ms,
/// expected version ('' for no record), holder, version, ttl ms, fence ms,
/// worker id. Returns `now`, or nil.
const SWAP: &str = concat!(
    lua_server!(),
    lua_index!(),
    r#"
if redis.call('GET', KEYS[1]) ~= run .. ':' .. ARGV[1] then return false end
if ARGV[2] == '' then
  if redis.call('EXISTS', KEYS[5]) == 1 then return false end
elseif redis.call('HGET', KEYS[5], 'version') ~= ARGV[2] then
  return false
end
local ttl = tonumber(ARGV[5])
local expires = 0
if ttl > 0 then expires = now + ttl end
redis.call('HSET', KEYS[5], 'holder', ARGV[3], 'version', ARGV[4], 'marker', ARGV[1],
  'expires', string.format('%.0f', expires), 'fence', ARGV[6])
index(tonumber(ARGV[7]), ARGV[3], expires, tonumber(ARGV[6]))
return now
"#
);

/// What each failure's message tells a user to check, in this registry's
/// own URL terms.
const TLS_FIX: &str = "check the CA file (sslrootcert=<file>; the system's CAs without one), \
     that the server's certificate names the host in the URL, and that the port takes TLS";
const TLS_REQUIRED_FIX: &str = "use a rediss:// URL, at the server's TLS port";
const CREDENTIALS_FIX: &str = "check the password in the URL (redis://:password@host:port/db, \
     or redis://user:password@host:port/db with ACLs; percent-encode special characters)";

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
            remote: Remote::new(address, if over_tls { Speaks::Tls } else { Speaks::Redis })?,
            read: Script::new(READ),
            mark: Script::new(MARK),
            swap: Script::new(SWAP),
            head: Script::new(HEAD),
        })
    }

    /// Runs `invocation` on a connection, opening one first if need be.
    fn invoke(&self, invocation: &redis::ScriptInvocation<'_>) -> Result<Value, LeaseError> {
        self.run(|mut connection| async move {
            let reply = invocation.invoke_async(&mut connection).await;
            (connection, reply)
        })
    }

    /// Runs `call` on a connection, opening one first if need be.
    fn run<T, F>(
        &self,
        call: impl FnOnce(MultiplexedConnection) -> F + Send,
    ) -> Result<T, LeaseError>
    where
        T: Send,
        F: Future<Output = (MultiplexedConnection, Result<T, RedisError>)> + Send,
    {
        let client = &self.client;
        let open = || async move {
            let connection = client.get_multiplexed_async_connection().await?;
            // The connection drives itself on this registry's runtime.
            Ok(Connected {
                client: connection,
                driver: None,
            })
        };
        let result = self.remote.run(open, |connection| async move {
            let (connection, reply) = call(connection).await;
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
                fix: CREDENTIALS_FIX,
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
            return LeaseError::Tls {
                address,
                reason,
                fix: TLS_FIX,
            };
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
                        fix: TLS_REQUIRED_FIX,
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

    /// A record from its hash's fields: holder, version, marker, expires, fence.
    fn record(&self, worker: u64, fields: &[Value]) -> Result<Record, LeaseError> {
        let corrupt = |detail: String| LeaseError::Corrupt {
            address: self.remote.address.clone(),
            detail: format!("worker {worker}'s record: {detail}"),
        };
        let [holder, version, marker, expires, fence] = fields else {
            return Err(corrupt(format!("{} fields, not 5", fields.len())));
        };
        let field = |v: &Value, name: &str| {
            number(v)
                .ok()
                .flatten()
                .ok_or_else(|| corrupt(format!("its {name} is missing or not a number ({v:?})")))
        };
        Ok(Record {
            worker,
            holder: text(holder).map_err(|()| corrupt(format!("its holder is {holder:?}")))?,
            version: field(version, "version")?,
            marker_unix_millis: field(marker, "marker")?,
            expires_unix_millis: field(expires, "expiry")?,
            fence_unix_millis: field(fence, "fence")?,
        })
    }

    fn corrupt(&self, reply: &Value) -> LeaseError {
        LeaseError::Corrupt {
            address: self.remote.address.clone(),
            detail: format!("unexpected script reply {reply:?}"),
        }
    }
}

/// A namespace's keys: the marker, then its index (the free records by
/// fence, the held ones by expiry, the recorded ids), then the prefix of
/// its records. A namespace with a brace would
/// move the keys' hash tag.
fn keys(namespace: &str) -> Result<([String; 4], String), LeaseError> {
    super::check_namespace(namespace)?;
    let key = |name: &str| format!("flakegen:{{{namespace}}}:{name}");
    Ok((["marker", "free", "held", "recorded"].map(key), key("w:")))
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
    fn read(
        &self,
        namespace: &str,
        workers: u64,
        prefer: Option<u64>,
    ) -> Result<Snapshot, LeaseError> {
        let (index, prefix) = keys(namespace)?;
        let prefer = prefer.map_or(String::new(), |w| w.to_string());
        let reply = self.invoke(self.read.key(&index).arg(prefix).arg(workers).arg(prefer))?;
        let corrupt = || self.corrupt(&reply);
        let Value::Array(items) = &reply else {
            return Err(corrupt());
        };
        let (head, rest) = items.split_at_checked(4).ok_or_else(corrupt)?;
        let server_unix_millis = number(&head[0]).ok().flatten().ok_or_else(corrupt)?;
        let marker_unix_millis = number(&head[1]).map_err(|()| corrupt())?;
        let fresh = match &head[2] {
            Value::Int(-1) => None,
            other => Some(number(other).ok().flatten().ok_or_else(corrupt)?),
        };
        let mut records = Vec::with_capacity(rest.len() / 6);
        for fields in rest.chunks(6) {
            let [worker, record @ ..] = fields else {
                return Err(corrupt());
            };
            let worker = number(worker).ok().flatten().ok_or_else(corrupt)?;
            records.push(self.record(worker, record)?);
        }
        Ok(Snapshot {
            server_unix_millis,
            marker_unix_millis,
            records,
            fresh,
            more: false,
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        let (index, _) = keys(namespace)?;
        let reply = self.invoke(&self.mark.key(&index))?;
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
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        let (index, prefix) = keys(namespace)?;
        let version = expect.version.map_or(String::new(), |v| v.to_string());
        let mut invocation = self.swap.key(&index);
        invocation
            .key(format!("{prefix}{worker}"))
            .arg(expect.marker_unix_millis)
            .arg(version)
            .arg(record.holder)
            .arg(record.version)
            .arg(record.ttl_millis)
            .arg(record.fence_unix_millis)
            .arg(worker);
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

    fn inspect(&self) -> Option<&dyn Inspect> {
        Some(self)
    }
}

impl Inspect for RedisRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let (index, prefix) = keys(namespace)?;
        let head = self.invoke(&self.head.key(&index[0]))?;
        let corrupt = || self.corrupt(&head);
        let Value::Array(items) = &head else {
            return Err(corrupt());
        };
        let [now, marker] = items.as_slice() else {
            return Err(corrupt());
        };
        let server_unix_millis = number(now).ok().flatten().ok_or_else(corrupt)?;
        let marker_unix_millis = number(marker).map_err(|()| corrupt())?;
        // The records' keys a page at a time (SCAN never holds the server),
        // each page's fields in one round trip.
        let pattern = format!("{prefix}*");
        let pages = self.run(|mut connection| async move {
            let scanned = async {
                let mut cursor = 0u64;
                let mut found: Vec<(String, Value)> = Vec::new();
                loop {
                    let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut connection)
                        .await?;
                    let mut fields = redis::pipe();
                    for key in &keys {
                        fields
                            .cmd("HMGET")
                            .arg(key)
                            .arg(&["holder", "version", "marker", "expires", "fence"]);
                    }
                    let values: Vec<Value> = fields.query_async(&mut connection).await?;
                    found.extend(keys.into_iter().zip(values));
                    if next == 0 {
                        return Ok(found);
                    }
                    cursor = next;
                }
            }
            .await;
            (connection, scanned)
        })?;
        let mut records = Vec::with_capacity(pages.len());
        for (key, value) in &pages {
            let worker = key[prefix.len()..]
                .parse()
                .map_err(|_| LeaseError::Corrupt {
                    address: self.remote.address.clone(),
                    detail: format!("the key {key} names no worker id"),
                })?;
            let Value::Array(fields) = value else {
                return Err(self.corrupt(value));
            };
            // Gone between the page and its fields.
            if fields.iter().all(|f| *f == Value::Nil) {
                continue;
            }
            records.push(self.record(worker, fields)?);
        }
        records.sort_by_key(|r| r.worker);
        Ok(Listing {
            server_unix_millis,
            marker_unix_millis,
            records,
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        // A namespace has a marker once anything leased in it.
        let keys = self.run(|mut connection| async move {
            let scanned = async {
                let mut cursor = 0u64;
                let mut found: Vec<String> = Vec::new();
                loop {
                    let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg("flakegen:{*}:marker")
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut connection)
                        .await?;
                    found.extend(keys);
                    if next == 0 {
                        return Ok(found);
                    }
                    cursor = next;
                }
            }
            .await;
            (connection, scanned)
        })?;
        let mut namespaces: Vec<String> = keys
            .iter()
            .filter_map(|k| k.strip_prefix("flakegen:{")?.strip_suffix("}:marker"))
            .map(str::to_owned)
            .collect();
        namespaces.sort();
        Ok(namespaces)
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        let (replication, memory): (String, String) = self.run(|mut connection| async move {
            let info = async {
                let replication: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut connection)
                    .await?;
                let memory: String = redis::cmd("INFO")
                    .arg("memory")
                    .query_async(&mut connection)
                    .await?;
                Ok((replication, memory))
            }
            .await;
            (connection, info)
        })?;
        let field = |info: &str, name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(|v| v.trim().to_owned())
        };
        let info = self.client.get_connection_info();
        let transport = match &info.addr {
            redis::ConnectionAddr::TcpTls { insecure: true, .. } => {
                Transport::Tls(Verified::Nothing)
            }
            redis::ConnectionAddr::TcpTls { .. } => Transport::Tls(Verified::Full),
            _ => Transport::Plain,
        };
        let mut caveats = vec![Caveat {
            topic: "durability",
            setting: "every restart of the server is a detected loss".to_owned(),
            severity: Severity::Note,
            advice: "whatever the persistence, generators wait the TTL and the skew allowance \
                     after a restart, then lease again by themselves"
                .to_owned(),
        }];
        if let Some(policy) =
            field(&memory, "maxmemory_policy").filter(|p| p.starts_with("allkeys-"))
        {
            caveats.push(Caveat {
                topic: "eviction",
                setting: format!("maxmemory-policy {policy}"),
                severity: Severity::Danger,
                advice: "Redis may evict lease records, which would let two holders share an \
                         id; generators are refused: set maxmemory-policy to noeviction"
                    .to_owned(),
            });
        }
        let role = field(&replication, "role").unwrap_or_default();
        let replicas: u64 = field(&replication, "connected_slaves")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        caveats.push(if role == "slave" {
            Caveat {
                topic: "topology",
                setting: format!(
                    "a replica of {}:{}",
                    field(&replication, "master_host").unwrap_or_default(),
                    field(&replication, "master_port").unwrap_or_default()
                ),
                severity: Severity::Danger,
                advice: "generators cannot lease here (it takes no writes): point them at the \
                         primary, through an address that follows a failover"
                    .to_owned(),
            }
        } else {
            Caveat {
                topic: "topology",
                setting: format!("a primary with {replicas} replica(s)"),
                severity: Severity::Note,
                advice: "a failover to a replica (Sentinel, or REPLICAOF NO ONE) is a detected \
                         loss (another server process), whether it missed the last renewals \
                         or not: generators wait the TTL and the skew allowance, then lease \
                         again by themselves. Clients must follow the failover (an address \
                         that moves)"
                    .to_owned(),
            }
        });
        Ok(Survey::new(transport, caveats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_keeps_its_keys_on_one_cluster_slot() {
        let (index, prefix) = keys("orders").unwrap();
        assert_eq!(index[0], "flakegen:{orders}:marker");
        assert_eq!(index[3], "flakegen:{orders}:recorded");
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

//! Leases in Redis keys (feature `redis`).

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::{Client, Connection, ErrorKind, RedisError, Script, Value};

use super::{AcquireRequest, DEFAULT_TIMEOUT, Grant, LeaseError, LeaseKey, Registry};

/// Worker-id leases kept in Redis: a hash per worker id and one marker.
///
/// ```text
/// flakegen:marker                 string: when the data began, ms (server clock)
/// flakegen:{<namespace>}:w:<id>   hash: holder, expires (ms, server clock), fence (ms)
/// ```
///
/// Every check and write that must be one step is a Lua script, which Redis
/// runs atomically; expiry is judged by the server's `TIME`. Acquiring reads
/// every id of the layout, so it is a script of a few milliseconds for a
/// 10-bit worker field (about 50 ms for Sonyflake's 16 bits), run once per
/// generator. The scripts touch the marker and a namespace's keys together,
/// so the registry needs a single Redis (with replicas or Sentinel if you
/// like), not Redis Cluster.
///
/// # Persistence
///
/// A Redis that restarts empty is safe, at the price of a wait. Ids with no
/// record are fenced one TTL plus the skew allowance past the marker (see
/// [the lease docs](super#a-registry-that-loses-its-data)). When the marker
/// is missing, the first acquisition writes the server's start time (from
/// `TIME` and `INFO`'s uptime), since that is when an empty Redis's data
/// began: only the first TTL after a restart waits, and a Redis that has run
/// for longer than that does not make its first users wait at all. Data
/// removed by hand while Redis runs (`FLUSHALL`, `DEL`) is not detected: do
/// not do that under running generators. Replication is asynchronous too, so
/// a failover to a replica can lose an acquisition. Use one Redis, or make
/// failover a restart (the new primary starts empty) rather than a promotion.
///
/// To avoid the wait after restarts, run Redis with `appendonly yes` and
/// `appendfsync everysec`, which loses at most a second of writes. A renewal
/// lost that way is harmless, because the holder had not used the new fence
/// yet.
///
/// Connecting, and each request, may take [`DEFAULT_TIMEOUT`].
///
/// # Examples
///
/// ```no_run
/// use flakegen::{Builder, IdGenerator, lease::RedisRegistry};
///
/// let registry = RedisRegistry::new("redis://:secret@127.0.0.1:6379/0")?;
/// let generator = Builder::new().lease(registry, "orders").build_atomic()?;
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct RedisRegistry {
    client: Client,
    address: String,
    connection: Mutex<Option<Connection>>,
    acquire: Script,
    renew: Script,
    release: Script,
}

/// The server's clock in ms, at the top of every script.
macro_rules! lua_now {
    () => {
        "local t = redis.call('TIME')\n\
         local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    };
}

/// KEYS: marker. ARGV: record key prefix, workers, holder, ttl ms, fence ms,
/// holder's now ms, skew ms. The same choice as `lease::choose`.
const ACQUIRE: &str = concat!(
    lua_now!(),
    r#"
local marker = redis.call('GET', KEYS[1])
if marker then
  marker = tonumber(marker)
  if not marker then return redis.error_reply('FLAKEGEN_CORRUPT marker ' .. KEYS[1]) end
else
  -- Data vanishes on a restart: the server's start is when it began.
  local up = string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)')
  marker = now - (tonumber(up) or 0) * 1000
  redis.call('SET', KEYS[1], marker)
end
local workers, ttl, fence = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5])
local holder_now, skew = tonumber(ARGV[6]), tonumber(ARGV[7])
local unknown = marker + ttl + skew
local best, best_fence, best_later, held = nil, nil, nil, 0
for w = 0, workers - 1 do
  local key = ARGV[1] .. w
  local r = redis.call('HMGET', key, 'holder', 'expires', 'fence')
  local f, free
  if not r[3] then
    if r[1] or r[2] then return redis.error_reply('FLAKEGEN_CORRUPT no fence in ' .. key) end
    f, free = unknown, true
  else
    f = tonumber(r[3])
    local e = tonumber(r[2] or '0')
    if not f or not e then return redis.error_reply('FLAKEGEN_CORRUPT ' .. key) end
    free = (not r[1]) or r[1] == '' or e <= now
  end
  if free then
    local later = f > holder_now
    if best == nil or (best_later and not later) or (later == best_later and f < best_fence) then
      best, best_fence, best_later = w, f, later
    end
  else
    held = held + 1
  end
end
if best == nil then return {'held', held} end
local granted = math.max(best_fence, fence)
redis.call('HSET', ARGV[1] .. best, 'holder', ARGV[3], 'expires', now + ttl, 'fence', granted)
return {'granted', best, best_fence, granted}
"#
);

/// ARGV: record key, holder, ttl ms, fence ms.
const RENEW: &str = concat!(
    lua_now!(),
    r#"
local key = ARGV[1]
local r = redis.call('HMGET', key, 'holder', 'expires', 'fence')
local ttl, fence = tonumber(ARGV[3]), tonumber(ARGV[4])
if not r[3] then
  if r[1] or r[2] then return redis.error_reply('FLAKEGEN_CORRUPT no fence in ' .. key) end
  -- Redis lost the record, and nobody has taken the id since (that would
  -- have written one): it is still ours.
  redis.call('HSET', key, 'holder', ARGV[2], 'expires', now + ttl, 'fence', fence)
  return {'renewed', fence}
end
if r[1] ~= ARGV[2] then return {'lost'} end
local f = tonumber(r[3])
if not f then return redis.error_reply('FLAKEGEN_CORRUPT ' .. key) end
local renewed = math.max(f, fence)
redis.call('HSET', key, 'expires', now + ttl, 'fence', renewed)
return {'renewed', renewed}
"#
);

/// ARGV: record key, holder, fence ms.
const RELEASE: &str = r#"
local key = ARGV[1]
local r = redis.call('HMGET', key, 'holder', 'fence')
if r[1] ~= ARGV[2] then return 0 end
local f = tonumber(r[2])
if not f then return redis.error_reply('FLAKEGEN_CORRUPT ' .. key) end
redis.call('HSET', key, 'holder', '', 'expires', 0, 'fence', math.min(f, tonumber(ARGV[3])))
return 1
"#;

impl RedisRegistry {
    /// A registry at `url` (`redis://:password@host:port/db`). Nothing is
    /// sent until the first call.
    ///
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        let client = Client::open(url).map_err(|e| LeaseError::InvalidUrl {
            reason: e.to_string(),
        })?;
        let address = client.get_connection_info().addr.to_string();
        Ok(RedisRegistry {
            client,
            address,
            connection: Mutex::new(None),
            acquire: Script::new(ACQUIRE),
            renew: Script::new(RENEW),
            release: Script::new(RELEASE),
        })
    }

    /// Runs `f` on a connection, opening one first if need be; drops a
    /// connection that broke.
    fn with_connection<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, RedisError>,
    ) -> Result<T, LeaseError> {
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let connection = match slot.take() {
            Some(connection) => slot.insert(connection),
            None => {
                let connection = self
                    .client
                    .get_connection_with_timeout(DEFAULT_TIMEOUT)
                    .and_then(|c| {
                        c.set_read_timeout(Some(DEFAULT_TIMEOUT))?;
                        c.set_write_timeout(Some(DEFAULT_TIMEOUT))?;
                        Ok(c)
                    })
                    .map_err(|e| self.error(e))?;
                slot.insert(connection)
            }
        };
        f(connection).map_err(|e| {
            if e.is_io_error() || e.is_unrecoverable_error() || e.is_timeout() {
                *slot = None;
            }
            self.error(e)
        })
    }

    fn error(&self, e: RedisError) -> LeaseError {
        let address = self.address.clone();
        if e.kind() == ErrorKind::AuthenticationFailed
            || e.code()
                .is_some_and(|code| code == "NOAUTH" || code == "WRONGPASS")
        {
            return LeaseError::Unauthorized {
                address,
                source: Box::new(e),
            };
        }
        if e.code() == Some("FLAKEGEN_CORRUPT") {
            return LeaseError::Corrupt {
                address,
                detail: e.detail().unwrap_or("a record").to_owned(),
            };
        }
        if e.is_io_error()
            || e.is_timeout()
            || e.is_connection_refusal()
            || e.is_connection_dropped()
        {
            LeaseError::Unreachable {
                address,
                source: Box::new(e),
            }
        } else {
            LeaseError::Server {
                address,
                source: Box::new(e),
            }
        }
    }

    fn corrupt(&self, reply: &Value) -> LeaseError {
        LeaseError::Corrupt {
            address: self.address.clone(),
            detail: format!("unexpected script reply {reply:?}"),
        }
    }
}

fn key_prefix(namespace: &str) -> String {
    format!("flakegen:{{{namespace}}}:w:")
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The integers of a script's reply table after its first (status) word.
fn numbers(reply: &[Value]) -> Option<Vec<u64>> {
    reply[1..]
        .iter()
        .map(|v| match v {
            Value::Int(n) => u64::try_from(*n).ok(),
            _ => None,
        })
        .collect()
}

fn status(reply: &Value) -> Option<(&str, &[Value])> {
    let Value::Array(items) = reply else {
        return None;
    };
    match items.first()? {
        Value::BulkString(word) => Some((std::str::from_utf8(word).ok()?, items)),
        Value::SimpleString(word) => Some((word, items)),
        _ => None,
    }
}

impl fmt::Debug for RedisRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRegistry")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Registry for RedisRegistry {
    fn acquire(&self, request: &AcquireRequest<'_>) -> Result<Grant, LeaseError> {
        super::check_namespace(request.namespace)?;
        let marker = "flakegen:marker";
        let reply: Value = self.with_connection(|c| {
            self.acquire
                .key(marker)
                .arg(key_prefix(request.namespace))
                .arg(request.workers)
                .arg(request.holder)
                .arg(millis(request.ttl))
                .arg(request.fence_unix_ms)
                .arg(request.now_unix_ms)
                .arg(millis(request.skew))
                .invoke(c)
        })?;
        match status(&reply).and_then(|(word, items)| Some((word, numbers(items)?))) {
            Some(("granted", n)) if n.len() == 3 => Ok(Grant {
                worker: n[0],
                previous_fence_unix_ms: n[1],
                fence_unix_ms: n[2],
            }),
            Some(("held", n)) if n.len() == 1 => Err(LeaseError::AllHeld {
                namespace: request.namespace.to_owned(),
                held: n[0],
            }),
            _ => Err(self.corrupt(&reply)),
        }
    }

    fn renew(
        &self,
        lease: &LeaseKey<'_>,
        fence_unix_ms: u64,
        ttl: Duration,
    ) -> Result<u64, LeaseError> {
        let key = format!("{}{}", key_prefix(lease.namespace), lease.worker);
        let reply: Value = self.with_connection(|c| {
            self.renew
                .arg(&key)
                .arg(lease.holder)
                .arg(millis(ttl))
                .arg(fence_unix_ms)
                .invoke(c)
        })?;
        match status(&reply).and_then(|(word, items)| Some((word, numbers(items)?))) {
            Some(("renewed", n)) if n.len() == 1 => Ok(n[0]),
            Some(("lost", _)) => Err(LeaseError::Lost {
                namespace: lease.namespace.to_owned(),
                worker: lease.worker,
            }),
            _ => Err(self.corrupt(&reply)),
        }
    }

    fn release(&self, lease: &LeaseKey<'_>, fence_unix_ms: u64) -> Result<(), LeaseError> {
        let key = format!("{}{}", key_prefix(lease.namespace), lease.worker);
        self.with_connection(|c| {
            self.release
                .arg(&key)
                .arg(lease.holder)
                .arg(fence_unix_ms)
                .invoke::<i64>(c)
        })?;
        Ok(())
    }
}

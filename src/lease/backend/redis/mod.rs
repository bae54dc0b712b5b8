//! Leases in Redis keys (feature `redis`): the storage steps.

mod errors;
#[cfg(feature = "inspect")]
mod inspect;
mod url;

use std::fmt;

use redis::aio::MultiplexedConnection;
use redis::{Client, RedisError, Script, Value};

use super::client::remote::{Connected, Failure, Remote};
use super::{Expect, LeaseError, NewRecord, ReadRequest, Record, Registry, Snapshot};

/// Worker-id leases kept in Redis: a hash per worker id and a mark per
/// namespace.
///
/// ```text
/// flakegen:{<namespace>}:mark     string: <run_id>:<marker ms>:<high-water mark>
/// flakegen:{<namespace>}:w:<id>   hash: holder, version, marker, expires, fence
/// flakegen:{<namespace>}:free     sorted set: free ids by fence
/// flakegen:{<namespace>}:held     sorted set: held ids by expiry
/// ```
///
/// Each step is a Lua script, which Redis runs atomically, and expiry is
/// judged by the server's `TIME`. A [`swap`](Registry::swap) compares the
/// mark and the record's version, writes, files the record in the index
/// (which counts under the marker in force: a new marker starts an empty
/// one) and raises the high-water mark, in one script: it holds no
/// policy. A read finds what an acquisition chooses from in a bounded
/// number of steps, whatever the size of the id space or the number of
/// records: the free id with the earliest fence, expired holders (16 per
/// read), the id at the high-water mark, and the ids flakegen probes (at
/// most 64). A namespace's keys share a hash tag, so Redis
/// Cluster keeps them on one shard. Every call, connecting included,
/// finishes or fails within its timeout on the client.
///
/// # What counts as a loss
///
/// **Every restart of the server process**, whatever its persistence, and a
/// failover to a replica: the mark names the server process (`run_id`)
/// that wrote it, and a mark from another process is replaced by the
/// server's clock now. Persistence cannot be trusted here: `appendfsync
/// everysec` loses the last second of writes, and a replica lags its
/// primary, so a renewal its holder already used may be gone, and an older
/// fence in its place.
///
/// **Keys deleted**: a `FLUSHALL` or `FLUSHDB`, a namespace's keys deleted,
/// or eviction. A namespace with no mark gets the server's clock now: it is
/// new, or was emptied, and nothing in an empty store tells which (see
/// [`Registry::mark`]). A record deleted under a mark that stays is found
/// below the high-water mark, and its id waits from the moment it was seen
/// gone. A `maxmemory-policy` of `allkeys-*` is refused all the same: it
/// would cost every generator a wait now and then.
///
/// After any of these the first TTL and skew wait. Not detected: a
/// namespace's keys restored from an old snapshot (`RESTORE`, a dump loaded
/// into the same server process): turn on
/// [`Lease::wait_out_rollbacks`](crate::lease::Lease::wait_out_rollbacks)
/// where that can happen.
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
    scripts: Scripts,
}

/// Each step's script, with the shared lines it begins with.
struct Scripts {
    read: Script,
    mark: Script,
    swap: Script,
    #[cfg(feature = "inspect")]
    head: Script,
}

/// The scripts' shared beginnings: the server's clock and process, the
/// namespace's mark, and its index.
macro_rules! lua {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("prelude.lua"),
            include_str!("index.lua"),
            include_str!($file)
        ))
    };
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            read: lua!("read.lua"),
            mark: lua!("mark.lua"),
            swap: lua!("swap.lua"),
            #[cfg(feature = "inspect")]
            head: lua!("head.lua"),
        }
    }
}

impl RedisRegistry {
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

/// A namespace's keys: the mark and its index (the free records by fence,
/// the held ones by expiry), then the prefix of its records. A namespace
/// with a brace would move the keys' hash tag.
fn keys(namespace: &str) -> Result<([String; 3], String), LeaseError> {
    super::check_namespace(namespace)?;
    let key = |name: &str| format!("flakegen:{{{namespace}}}:{name}");
    Ok((["mark", "free", "held"].map(key), key("w:")))
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
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        let (index, prefix) = keys(namespace)?;
        let prefer = request.prefer.map_or(String::new(), |w| w.to_string());
        let probed = request.probed();
        let mut invocation = self.scripts.read.key(&index);
        invocation
            .arg(prefix)
            .arg(request.workers)
            .arg(prefer)
            .arg(probed.start)
            .arg(probed.end);
        let reply = self.invoke(&invocation)?;
        let corrupt = || self.corrupt(&reply);
        let Value::Array(items) = &reply else {
            return Err(corrupt());
        };
        let (head, rest) = items.split_at_checked(3).ok_or_else(corrupt)?;
        let count = |v: &Value| number(v).ok().flatten().ok_or_else(corrupt);
        let server_unix_millis = count(&head[0])?;
        let marker_unix_millis = number(&head[1]).map_err(|()| corrupt())?;
        let high_water = count(&head[2])?;
        let mut records = Vec::with_capacity(rest.len() / 6);
        for fields in rest.chunks(6) {
            let [worker, record @ ..] = fields else {
                return Err(corrupt());
            };
            records.push(self.record(count(worker)?, record)?);
        }
        Ok(Snapshot {
            server_unix_millis,
            marker_unix_millis,
            records,
            high_water,
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        let (index, _) = keys(namespace)?;
        let reply = self.invoke(&self.scripts.mark.key(&index))?;
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
        let mut invocation = self.scripts.swap.key(&index);
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

    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn super::Inspect> {
        Some(self)
    }
}

impl RedisRegistry {
    /// The keys that match `pattern`, a page at a time (`SCAN` never holds
    /// the server), up to `limit` of them (0: all).
    #[cfg(feature = "inspect")]
    fn scan(&self, pattern: &str, limit: usize) -> Result<Vec<String>, LeaseError> {
        self.run(|mut connection| async move {
            let scanned = async {
                let mut cursor = 0u64;
                let mut found: Vec<String> = Vec::new();
                loop {
                    let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut connection)
                        .await?;
                    found.extend(keys);
                    if next == 0 || (limit > 0 && found.len() >= limit) {
                        return Ok(found);
                    }
                    cursor = next;
                }
            }
            .await;
            (connection, scanned)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_keeps_its_keys_on_one_cluster_slot() {
        let (index, prefix) = keys("orders").unwrap();
        assert_eq!(index[0], "flakegen:{orders}:mark");
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

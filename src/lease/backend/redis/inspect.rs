//! What a Redis registry shows an operator.

use redis::Value;

use super::super::inspect::{Caveat, Inspect, Listing, Severity, Survey, Transport, Verified};
use super::{RedisRegistry, keys, number};
use crate::lease::backend::LeaseError;

impl Inspect for RedisRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let (index, prefix) = keys(namespace)?;
        let head = self.invoke(&self.scripts.head.key(&index[0]))?;
        let corrupt = || self.corrupt(&head);
        let Value::Array(items) = &head else {
            return Err(corrupt());
        };
        let [now, marker, high] = items.as_slice() else {
            return Err(corrupt());
        };
        let server_unix_millis = number(now).ok().flatten().ok_or_else(corrupt)?;
        let marker_unix_millis = number(marker).map_err(|()| corrupt())?;
        let high_water = number(high).ok().flatten().ok_or_else(corrupt)?;
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
            high_water,
            records,
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        // A namespace has a mark once anything leased in it.
        let keys = self.scan("flakegen:{*}:mark", 0)?;
        let mut namespaces: Vec<String> = keys
            .iter()
            .filter_map(|k| k.strip_prefix("flakegen:{")?.strip_suffix("}:mark"))
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

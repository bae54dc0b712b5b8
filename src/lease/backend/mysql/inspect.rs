//! What a MySQL or MariaDB registry shows an operator: a namespace's
//! records, and the server's durability and replication.

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};

use super::super::client::remote::Failure;
use super::super::inspect::{Caveat, Inspect, Listing, Severity, Survey, Transport};
use super::MysqlRegistry;
use super::statements::{COLUMNS, MARK_IN_FORCE, NOW_MS};
use crate::lease::backend::LeaseError;

/// Whether both tables exist, in a statement's result.
const TABLES_PRESENT: &str = "((SELECT COUNT(*) FROM information_schema.TABLES \
     WHERE TABLE_SCHEMA = DATABASE() \
     AND TABLE_NAME IN ('flakegen_leases', 'flakegen_namespaces')) = 2)";

impl Inspect for MysqlRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let ns = namespace.to_owned();
        self.look(|mut conn| async move {
            let result = async {
                let head: (i64, i64) = conn
                    .query_first(format!("SELECT {NOW_MS}, {TABLES_PRESENT}"))
                    .await?
                    .ok_or_else(|| self.corrupt("no clock reading".into()))?;
                let (now, tables) = head;
                if tables == 0 {
                    return Err(Failure::Lease(LeaseError::NoLeases {
                        address: self.remote.address.clone(),
                    }));
                }
                let mark: Option<(i64, i64)> = conn.exec_first(MARK_IN_FORCE, (&ns,)).await?;
                let rows: Vec<Row> = conn
                    .exec(
                        format!(
                            "SELECT {COLUMNS} FROM flakegen_leases \
                             WHERE namespace = ? AND worker >= 0 ORDER BY worker"
                        ),
                        (&ns,),
                    )
                    .await?;
                let records = self.records(rows)?;
                Ok(Listing {
                    server_unix_millis: u64::try_from(now).unwrap_or(0),
                    marker_unix_millis: mark.and_then(|(m, _)| u64::try_from(m).ok()),
                    high_water: mark.map_or(0, |(_, high)| high.unsigned_abs()),
                    records,
                })
            }
            .await;
            (conn, result)
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        self.look(|mut conn| async move {
            let result = async {
                let tables: Option<i64> =
                    conn.query_first(format!("SELECT {TABLES_PRESENT}")).await?;
                if tables.unwrap_or(0) == 0 {
                    return Err(Failure::Lease(LeaseError::NoLeases {
                        address: self.remote.address.clone(),
                    }));
                }
                let names: Vec<String> = conn
                    .query(
                        "SELECT namespace FROM flakegen_namespaces UNION \
                         SELECT namespace FROM flakegen_leases WHERE worker >= 0 ORDER BY 1",
                    )
                    .await?;
                Ok(names)
            }
            .await;
            (conn, result)
        })
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        let verified = self.verified;
        self.look(|mut conn| async move {
            let result = async {
                let cipher: Option<(String, String)> = conn
                    .query_first("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
                    .await?;
                let transport = match cipher {
                    Some((_, cipher)) if !cipher.is_empty() => Transport::Tls(verified),
                    _ => Transport::Plain,
                };
                let mut caveats = Vec::new();
                // A global setting only: a session cannot make its own
                // commits more durable than the server's.
                let flush: Option<String> = conn
                    .query_first("SELECT CAST(@@GLOBAL.innodb_flush_log_at_trx_commit AS CHAR)")
                    .await?;
                let setting = |value: &str| format!("innodb_flush_log_at_trx_commit = {value}");
                match flush.as_deref() {
                    Some("0") => caveats.push(Caveat {
                        topic: "durability",
                        setting: setting("0"),
                        severity: Severity::Danger,
                        advice: "the server writes its log about once a second, so a crash of \
                                 the server forgets up to a second of renewals it confirmed, \
                                 and two holders could share an id: set it to 1 (the default)"
                            .to_owned(),
                    }),
                    Some("2") => caveats.push(Caveat {
                        topic: "durability",
                        setting: setting("2"),
                        severity: Severity::Warning,
                        advice: "the log reaches the disk about once a second, so a crash of \
                                 the server's machine (not of the server alone) forgets up to \
                                 a second of renewals it confirmed, and two holders could \
                                 share an id: set it to 1 (the default)"
                            .to_owned(),
                    }),
                    value => caveats.push(Caveat {
                        topic: "durability",
                        setting: setting(value.unwrap_or("1")),
                        severity: Severity::Note,
                        advice: "no server setting lets a crash forget a renewal the registry \
                                 confirmed: every commit reaches the disk before it is confirmed"
                            .to_owned(),
                    }),
                }
                caveats.push(self.topology(&mut conn).await?);
                Ok(Survey::new(transport, caveats))
            }
            .await;
            (conn, result)
        })
    }
}

impl MysqlRegistry {
    /// The server's place among the servers it replicates with, as leasing
    /// sees it: the same judgement a connection makes before it leases.
    async fn topology(&self, conn: &mut Conn) -> Result<Caveat, Failure<mysql_async::Error>> {
        let read_only: Option<i64> = conn.query_first("SELECT @@read_only").await?;
        let galera: Option<String> = match conn.query_first("SELECT @@wsrep_on").await {
            Ok(on) => on,
            Err(mysql_async::Error::Server(_)) => None,
            Err(e) => return Err(e.into()),
        };
        let caveat = |setting: String, severity, advice: &str| Caveat {
            topic: "topology",
            setting,
            severity,
            advice: advice.to_owned(),
        };
        if read_only == Some(1) {
            return Ok(caveat(
                "read_only = ON: a replica".to_owned(),
                Severity::Danger,
                "generators cannot lease here (it takes no writes): point them at the server \
                 that does",
            ));
        }
        if matches!(galera.as_deref(), Some("1" | "ON")) {
            return Ok(caveat(
                "a Galera cluster member".to_owned(),
                Severity::Note,
                "moving to another member counts as a loss (another server): generators wait \
                 the TTL and the skew allowance, then lease again by themselves. Point every \
                 generator at one member at a time",
            ));
        }
        let visible = match conn.query::<Row, _>("SHOW ALL SLAVES STATUS").await {
            Ok(_) => true,
            Err(mysql_async::Error::Server(e)) if e.code == 1064 => {
                conn.query::<Row, _>("SHOW REPLICA STATUS").await.is_ok()
            }
            Err(mysql_async::Error::Server(_)) => false,
            Err(e) => return Err(e.into()),
        };
        if !visible {
            return Ok(caveat(
                "replication not visible to this user".to_owned(),
                Severity::Warning,
                "flakegen cannot see whether this server replicates from another that takes \
                 writes (two masters would each grant leases alone): grant the user REPLICA \
                 MONITOR (MariaDB) or REPLICATION CLIENT (MySQL), or make sure yourself that \
                 generators lease from one writable server only",
            ));
        }
        // The first peer that takes writes, or could not be asked; else any.
        let mut upstream = None;
        for peer in self.upstreams(conn).await? {
            let answer = self.peer_read_only(&peer).await;
            let worse = !matches!(answer, Ok(true));
            if upstream.is_none() || worse {
                upstream = Some((peer, answer));
            }
            if worse {
                break;
            }
        }
        Ok(match upstream {
            Some((upstream, answer)) => match answer {
                Ok(true) => caveat(
                    format!(
                        "takes writes, and replicates from {}:{}, which is read-only",
                        upstream.0, upstream.1
                    ),
                    Severity::Note,
                    "a switch to the other server is a detected loss (another server): \
                     generators wait the TTL and the skew allowance, then lease again by \
                     themselves. Keep the other server read-only while this one takes writes",
                ),
                Ok(false) => caveat(
                    format!(
                        "takes writes, and replicates from {}:{}, which takes writes too",
                        upstream.0, upstream.1
                    ),
                    Severity::Danger,
                    "two writable masters each grant leases alone, and two generators could \
                     share an id: generators are refused here. Point every generator at one \
                     side, and set read_only = ON on the other",
                ),
                Err(why) => caveat(
                    format!(
                        "takes writes, and replicates from {}:{}, which could not be asked ({why})",
                        upstream.0, upstream.1
                    ),
                    Severity::Danger,
                    "if it takes writes too, each side grants leases alone: generators are \
                     refused here until it can be asked. Let this URL's user connect to it, \
                     or stop replicating from it",
                ),
            },
            None => caveat(
                "takes writes, and replicates from no other server".to_owned(),
                Severity::Note,
                "a failover to a replica of this server is a detected loss (another server), \
                 whether it missed the last renewals or not: generators run to the fences \
                 this one confirmed, wait the TTL and the skew allowance, then lease again by \
                 themselves. Clients must follow the failover (an address that moves)",
            ),
        })
    }
}

//! What a PostgreSQL registry shows an operator: a namespace's records,
//! and the server's durability and replication.

use super::super::client::remote::Failure;
use super::super::inspect::{Caveat, Inspect, Listing, Severity, Survey, Transport};
use super::PostgresRegistry;
use super::statements::{MARK_IN_FORCE, NOW_MS};
use crate::lease::backend::LeaseError;

impl Inspect for PostgresRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        self.look(|client| async move {
            let head = client
                .query_one(
                    &format!(
                        "SELECT {NOW_MS} AS now_ms, \
                         to_regclass('flakegen_leases') IS NOT NULL \
                         AND to_regclass('flakegen_namespaces') IS NOT NULL AS tables"
                    ),
                    &[],
                )
                .await?;
            if !head.try_get::<_, bool>("tables")? {
                return Err(Failure::Lease(LeaseError::NoLeases {
                    address: self.remote.address.clone(),
                }));
            }
            let now: i64 = head.try_get("now_ms")?;
            // Only once both tables are known to be there.
            let mark = client.query_opt(&*MARK_IN_FORCE, &[&namespace]).await?;
            let (marker, high_water) = match mark {
                Some(row) => (
                    Some(self.unsigned(&row, "marker_ms")?),
                    self.unsigned(&row, "high_water")?,
                ),
                None => (None, 0),
            };
            let rows = client
                .query(
                    "SELECT worker, coalesce(holder, '') AS holder, version, marker_ms, \
                     expires_ms, fence_ms FROM flakegen_leases \
                     WHERE namespace = $1 AND worker >= 0 ORDER BY worker",
                    &[&namespace],
                )
                .await?;
            let mut records = Vec::with_capacity(rows.len());
            for row in &rows {
                records.push(self.record(row)?);
            }
            Ok(Listing {
                server_unix_millis: u64::try_from(now).unwrap_or(0),
                marker_unix_millis: marker,
                high_water,
                records,
            })
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        self.look(|client| async move {
            let present: bool = client
                .query_one(
                    "SELECT to_regclass('flakegen_leases') IS NOT NULL \
                     AND to_regclass('flakegen_namespaces') IS NOT NULL",
                    &[],
                )
                .await?
                .get(0);
            if !present {
                return Err(Failure::Lease(LeaseError::NoLeases {
                    address: self.remote.address.clone(),
                }));
            }
            let rows = client
                .query(
                    "SELECT namespace FROM flakegen_namespaces UNION \
                     SELECT namespace FROM flakegen_leases WHERE worker >= 0 ORDER BY 1",
                    &[],
                )
                .await?;
            rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
        })
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        let verified = self.verified;
        self.look(|client| async move {
            let row = client
                .query_one(
                    "SELECT coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), \
                     false), current_setting('fsync'), current_setting('synchronous_commit'), \
                     pg_is_in_recovery(), current_setting('synchronous_standby_names'), \
                     (SELECT count(*) FROM pg_stat_replication)",
                    &[],
                )
                .await?;
            let ssl: bool = row.try_get(0)?;
            let (fsync, commit): (String, String) = (row.try_get(1)?, row.try_get(2)?);
            let (standby, sync_names): (bool, String) = (row.try_get(3)?, row.try_get(4)?);
            let replicas: i64 = row.try_get(5)?;
            let transport = if ssl {
                Transport::Tls(verified)
            } else {
                Transport::Plain
            };
            let mut caveats = Vec::new();
            if commit == "off" {
                // The registry's sessions set it; a connection pooler that
                // does not keep session settings loses that.
                caveats.push(Caveat {
                    topic: "durability",
                    setting: "synchronous_commit = off".to_owned(),
                    severity: Severity::Danger,
                    advice: "the registry's session commits without waiting for the disk, \
                             so a crash of the server forgets the last renewals it confirmed \
                             and two holders could share an id: connect without a pooler \
                             that drops session settings, or set synchronous_commit = on \
                             for the role (ALTER ROLE ... SET synchronous_commit = on)"
                        .to_owned(),
                });
            }
            if fsync == "off" {
                caveats.push(Caveat {
                    topic: "durability",
                    setting: "fsync = off".to_owned(),
                    severity: Severity::Warning,
                    advice: "a crash of the server's machine forgets renewals it confirmed \
                             (and may corrupt the database), and two holders could share an \
                             id: set fsync = on where generators lease"
                        .to_owned(),
                });
            }
            if caveats.is_empty() {
                caveats.push(Caveat {
                    topic: "durability",
                    setting: format!("fsync = {fsync}, synchronous_commit = {commit}"),
                    severity: Severity::Note,
                    advice: "no server setting lets a crash forget a renewal the registry \
                             confirmed: every commit reaches the disk before it is confirmed"
                        .to_owned(),
                });
            }
            caveats.push(topology(standby, replicas, &sync_names));
            Ok(Survey::new(transport, caveats))
        })
    }
}

/// The server's place among its replicas, as leasing sees it.
fn topology(standby: bool, replicas: i64, sync_names: &str) -> Caveat {
    let (setting, severity, advice) = if standby {
        (
            "a standby, in recovery".to_owned(),
            Severity::Danger,
            "generators cannot lease here (it takes no writes): point them at the primary"
                .to_owned(),
        )
    } else if replicas == 0 {
        (
            "a primary with no standby streaming from it".to_owned(),
            Severity::Note,
            "a restore, or a standby promoted later, starts a new timeline: a detected loss, \
             after which generators wait the TTL and the skew allowance, then lease again by \
             themselves"
                .to_owned(),
        )
    } else {
        let kind = if sync_names.trim().is_empty() {
            "asynchronous"
        } else {
            "synchronous or asynchronous (synchronous_standby_names is set)"
        };
        (
            format!("a primary with {replicas} standby(s) streaming, {kind}"),
            Severity::Note,
            "a failover to a standby starts a new timeline: a detected loss, whether the \
             standby missed the last renewals or not. Generators run to the fences the old \
             primary confirmed, wait the TTL and the skew allowance, then lease again by \
             themselves; nothing is undetected. Clients must follow the failover (an address \
             that moves, or every host in the URL with target_session_attrs=read-write)"
                .to_owned(),
        )
    };
    Caveat {
        topic: "topology",
        setting,
        severity,
        advice,
    }
}

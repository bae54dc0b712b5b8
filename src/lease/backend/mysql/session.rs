//! The connection a MySQL or MariaDB registry leases on: opened, checked
//! to be the one server that takes writes, and its tables created, once.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder, Row};

use super::super::remote::{Connected, Failure};
use super::{MysqlRegistry, SENTINEL};
use crate::lease::LeaseError;

/// How long asking the server this one replicates from whether it takes
/// writes may take: once per connection, and only on a replicating server.
const PEER_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// A connection, and whether it was made ready to lease on: the server
/// found to take writes, alone, and the tables there.
pub(super) struct Session {
    conn: Conn,
    ready: bool,
}

impl MysqlRegistry {
    /// Runs `call` with a connection ready to lease on (the server takes
    /// writes, alone; the tables are there), opening one first if need be.
    pub(super) fn run<T, F>(&self, call: impl FnOnce(Conn) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        self.session(true, call)
    }

    /// Runs `call` with a connection as it is: for a look that writes
    /// nothing, on any server.
    pub(super) fn look<T, F>(&self, call: impl FnOnce(Conn) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        self.session(false, call)
    }

    fn session<T, F>(
        &self,
        ready: bool,
        call: impl FnOnce(Conn) -> F + Send,
    ) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        let opts = &self.opts;
        let open = || async move {
            let conn = Conn::new(opts.clone()).await?;
            Ok(Connected {
                client: Session { conn, ready: false },
                driver: None,
            })
        };
        let result = self.remote.run(open, |mut session| async move {
            if ready && !session.ready {
                if let Err(e) = self.prepare(&mut session.conn).await {
                    return (session, Err(e));
                }
                session.ready = true;
            }
            let (conn, result) = call(session.conn).await;
            (
                Session {
                    conn,
                    ready: session.ready,
                },
                result,
            )
        });
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }

    /// Makes a connection ready to lease on: the server must take writes,
    /// and be the only one that does among those it replicates from; the
    /// tables are created if they are missing (they say nothing of any
    /// namespace: each is marked on its first use).
    async fn prepare(&self, conn: &mut Conn) -> Result<(), Failure<mysql_async::Error>> {
        let read_only: Option<(i64, String)> =
            conn.query_first("SELECT @@read_only, VERSION()").await?;
        if let Some((1, _)) = read_only {
            return Err(Failure::Lease(LeaseError::ReadOnly {
                address: self.remote.address.clone(),
                role: "read_only = ON: a replica, or a server set aside".to_owned(),
            }));
        }
        if let Some(upstream) = self.upstream(conn).await? {
            let found = match self.peer_read_only(&upstream).await {
                Ok(true) => None,
                Ok(false) => Some("takes writes too (read_only = OFF)".to_owned()),
                Err(why) => Some(format!(
                    "could not be asked whether it takes writes ({why}): it may"
                )),
            };
            if let Some(found) = found {
                return Err(Failure::Lease(LeaseError::MultiWriter {
                    address: self.remote.address.clone(),
                    peer: format!("{}:{}", upstream.0, upstream.1),
                    found,
                }));
            }
        }
        let present = || {
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME IN ('flakegen_leases', 'flakegen_namespaces')"
        };
        let tables: Option<i64> = conn.query_first(present()).await?;
        if tables == Some(2) {
            return Ok(());
        }
        // One client creates them: others wait for it, then find them there.
        let locked: Option<i64> = conn
            .query_first("SELECT GET_LOCK('flakegen_leases_create', 3)")
            .await?;
        if locked != Some(1) {
            return Err(self.corrupt("could not take the lock that creates the tables".into()));
        }
        let created = async {
            let tables: Option<i64> = conn.query_first(present()).await?;
            if tables != Some(2) {
                conn.query_drop(include_str!("leases.sql")).await?;
                conn.query_drop(include_str!("namespaces.sql")).await?;
                conn.query_drop(SENTINEL).await?;
            }
            Ok::<(), mysql_async::Error>(())
        }
        .await;
        let _ = conn
            .query_drop("DO RELEASE_LOCK('flakegen_leases_create')")
            .await;
        Ok(created?)
    }

    /// The server this one replicates from, if it does (a channel whose
    /// threads run, or try to); `None` too when the user may not see it.
    pub(super) async fn upstream(
        &self,
        conn: &mut Conn,
    ) -> Result<Option<(String, u16)>, Failure<mysql_async::Error>> {
        // MariaDB: every channel; MySQL 8: SHOW REPLICA STATUS; older: SLAVE.
        for statement in [
            "SHOW ALL SLAVES STATUS",
            "SHOW REPLICA STATUS",
            "SHOW SLAVE STATUS",
        ] {
            let rows: Vec<Row> = match conn.query(statement).await {
                Ok(rows) => rows,
                // Not this server's syntax: try the next.
                Err(mysql_async::Error::Server(e)) if e.code == 1064 => continue,
                // No right to see replication (1227): nothing to go on.
                Err(mysql_async::Error::Server(e)) if e.code == 1227 || e.code == 1142 => {
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            };
            for row in rows {
                let text = |names: &[&str]| {
                    names
                        .iter()
                        .find_map(|name| row.get_opt::<String, _>(*name).and_then(Result::ok))
                };
                let io = text(&["Slave_IO_Running", "Replica_IO_Running"]).unwrap_or_default();
                let sql = text(&["Slave_SQL_Running", "Replica_SQL_Running"]).unwrap_or_default();
                if io == "No" && sql == "No" {
                    continue;
                }
                let host = text(&["Master_Host", "Source_Host"]).unwrap_or_default();
                let port = text(&["Master_Port", "Source_Port"])
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(3306);
                if !host.is_empty() {
                    return Ok(Some((host, port)));
                }
            }
            return Ok(None);
        }
        Ok(None)
    }

    /// Whether the server at `peer` is read-only, asked with this
    /// registry's credentials and TLS; why it could not be asked, if not.
    pub(super) async fn peer_read_only(&self, peer: &(String, u16)) -> Result<bool, String> {
        let opts = OptsBuilder::from_opts(self.opts.clone())
            .ip_or_hostname(peer.0.clone())
            .tcp_port(peer.1);
        let ask = async {
            let mut conn = Conn::new(opts).await?;
            let read_only: Option<i64> = conn.query_first("SELECT @@read_only").await?;
            let _ = conn.disconnect().await;
            Ok::<_, mysql_async::Error>(read_only == Some(1))
        };
        match tokio::time::timeout(PEER_PROBE_TIMEOUT, ask).await {
            Ok(Ok(read_only)) => Ok(read_only),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {PEER_PROBE_TIMEOUT:?}")),
        }
    }
}

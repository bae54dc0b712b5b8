//! The connection a MySQL or MariaDB registry leases on: opened, checked
//! to be the one server that takes writes, and its tables created, once.

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder, Row};

use super::super::client::remote::{Connected, Failure};
use super::MysqlRegistry;
use super::statements::SENTINEL;
use crate::lease::backend::LeaseError;

/// How long asking a server this one replicates from whether it takes
/// writes may take: only on a replicating server.
const PEER_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How often a connection that renews asks again whether it is still the
/// one server that takes writes: a peer made writable later (a second
/// master switched on by hand) must not go unseen for as long as the
/// connection lives. Every acquisition asks.
const WRITERS_EVERY: Duration = Duration::from_secs(10);

/// A connection, whether it was made ready to lease on (the tables there),
/// and when it last found its server the one that takes writes.
pub(super) struct Session {
    conn: Conn,
    ready: bool,
    alone_at: Option<Instant>,
}

/// What a call needs of its connection.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    /// Nothing: a look that writes nothing, on any server.
    Look,
    /// The tables, and a server that takes writes alone, asked at most
    /// [`WRITERS_EVERY`] ago.
    Lease,
    /// The same, asked now: an acquisition.
    Acquire,
}

impl MysqlRegistry {
    /// Runs `call` with a connection ready to lease on (the server takes
    /// writes, alone; the tables are there), opening one first if need be.
    pub(super) fn run<T, F>(&self, call: impl FnOnce(Conn) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        self.session(Need::Lease, call)
    }

    /// [`run`](Self::run), the server asked again whether it takes writes
    /// alone: for an acquisition.
    pub(super) fn run_acquiring<T, F>(
        &self,
        call: impl FnOnce(Conn) -> F + Send,
    ) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        self.session(Need::Acquire, call)
    }

    /// Runs `call` with a connection as it is: for a look that writes
    /// nothing, on any server.
    #[cfg(feature = "inspect")]
    pub(super) fn look<T, F>(&self, call: impl FnOnce(Conn) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: std::future::Future<Output = (Conn, Result<T, Failure<mysql_async::Error>>)> + Send,
    {
        self.session(Need::Look, call)
    }

    fn session<T, F>(
        &self,
        need: Need,
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
                client: Session {
                    conn,
                    ready: false,
                    alone_at: None,
                },
                driver: None,
            })
        };
        let result = self.remote.run(open, |mut session| async move {
            let stale = session
                .alone_at
                .is_none_or(|at| need == Need::Acquire || at.elapsed() >= WRITERS_EVERY);
            if need != Need::Look && stale {
                if let Err(e) = self.alone(&mut session.conn).await {
                    return (session, Err(e));
                }
                session.alone_at = Some(Instant::now());
            }
            if need != Need::Look && !session.ready {
                if let Err(e) = self.prepare(&mut session.conn).await {
                    return (session, Err(e));
                }
                session.ready = true;
            }
            let (conn, result) = call(session.conn).await;
            let Session {
                ready, alone_at, ..
            } = session;
            (
                Session {
                    conn,
                    ready,
                    alone_at,
                },
                result,
            )
        });
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }

    /// Whether the server takes writes, and is the only one that does
    /// among those it replicates from, on any channel.
    async fn alone(&self, conn: &mut Conn) -> Result<(), Failure<mysql_async::Error>> {
        // MariaDB's every channel, asked in the same round trip; other
        // servers' syntax after it, where that one is not theirs.
        let (read_only, upstreams) =
            match results(conn, "SELECT @@read_only; SHOW ALL SLAVES STATUS").await {
                Ok(sets) => {
                    let mut sets = sets.into_iter();
                    let read_only = sets.next().and_then(|rows| rows.into_iter().next());
                    let read_only = read_only.and_then(|row| mysql_async::from_row_opt(row).ok());
                    (
                        read_only,
                        running_upstreams(sets.next().unwrap_or_default()),
                    )
                }
                Err(mysql_async::Error::Server(e)) if [1064, 1142, 1227].contains(&e.code) => {
                    let read_only = conn.query_first("SELECT @@read_only").await?;
                    (read_only, self.upstreams(conn).await?)
                }
                Err(e) => return Err(e.into()),
            };
        if let Some(1_i64) = read_only {
            return Err(Failure::Lease(LeaseError::ReadOnly {
                address: self.remote.address.clone(),
                role: "read_only = ON: a replica, or a server set aside".to_owned(),
            }));
        }
        for upstream in upstreams {
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
        Ok(())
    }

    /// Makes a connection ready to lease on: the tables are created if they
    /// are missing (they say nothing of any namespace: each is marked on
    /// its first use).
    async fn prepare(&self, conn: &mut Conn) -> Result<(), Failure<mysql_async::Error>> {
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

    /// The servers this one replicates from, on every channel whose threads
    /// run, or try to; none when the user may not see them.
    pub(super) async fn upstreams(
        &self,
        conn: &mut Conn,
    ) -> Result<Vec<(String, u16)>, Failure<mysql_async::Error>> {
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
                    return Ok(Vec::new());
                }
                Err(e) => return Err(e.into()),
            };
            return Ok(running_upstreams(rows));
        }
        Ok(Vec::new())
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

/// The upstreams of the channels among `rows` (a `SHOW … STATUS`) whose
/// threads run, or try to.
fn running_upstreams(rows: Vec<Row>) -> Vec<(String, u16)> {
    let mut upstreams = Vec::new();
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
            upstreams.push((host, port));
        }
    }
    upstreams
}

/// Every result set of a text query of several statements, in order: one
/// (perhaps without rows) per statement; or the error of the first that
/// failed (the server runs none after it). Several statements in one text
/// query cost one round trip.
pub(super) async fn results(
    conn: &mut Conn,
    sql: &str,
) -> Result<Vec<Vec<Row>>, mysql_async::Error> {
    let mut result = conn.query_iter(sql).await?;
    let mut sets = Vec::new();
    while !result.is_empty() {
        sets.push(result.collect::<Row>().await?);
    }
    // A statement that failed after others succeeded is still to be read:
    // read it here, or the connection's next query would meet its error.
    result.drop_result().await?;
    Ok(sets)
}

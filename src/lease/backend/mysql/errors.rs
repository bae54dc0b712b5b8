//! The MySQL client's failures, said as [`LeaseError`]s.

use std::sync::Arc;
use std::time::Duration;

use mysql_async::{Conn, OptsBuilder, SslOpts};

use super::super::client::tls;
use super::MysqlRegistry;
use super::url::{CREDENTIALS_FIX, TLS_FIX, TLS_REQUIRED_FIX};
use crate::lease::backend::LeaseError;

/// How long the probe that tells a user who needs TLS from a wrong
/// password may take: it runs only when a plain login was refused.
const TLS_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How many times a call InnoDB chose as a deadlock's victim is made
/// again, within its timeout: writes race on one namespace's rows only
/// while builds contend for its ids.
pub(super) const DEADLOCK_RETRIES: u32 = 5;

/// Whether InnoDB chose the statement as a deadlock's victim (1213). Each
/// statement of flakegen's commits alone, so it rolled back that one
/// statement, and nothing else.
pub(super) fn deadlocked(e: &mysql_async::Error) -> bool {
    matches!(e, mysql_async::Error::Server(e) if e.code == 1213)
}

impl MysqlRegistry {
    /// The client's error, said as a [`LeaseError`].
    pub(super) fn error(&self, e: mysql_async::Error) -> LeaseError {
        let address = self.remote.address.clone();
        let mysql_async::Error::Server(server) = &e else {
            if let Some(reason) = tls::tls_failure(&e) {
                return LeaseError::Tls {
                    address,
                    reason,
                    fix: TLS_FIX,
                };
            }
            return LeaseError::Unreachable {
                address,
                source: Arc::new(e),
            };
        };
        match server.code {
            // Access denied: a wrong password, or a user that must use TLS
            // (MariaDB and MySQL say the same to both).
            1045 if self.opts.ssl_opts().is_none() && self.tls_logs_in() => {
                LeaseError::TlsRequired {
                    address,
                    source: Arc::new(e),
                    fix: TLS_REQUIRED_FIX,
                }
            }
            1045 => LeaseError::Unauthorized {
                address,
                source: Arc::new(e),
                fix: CREDENTIALS_FIX,
            },
            1049 => LeaseError::UnknownDatabase {
                address,
                database: self.opts.db_name().unwrap_or("").to_owned(),
            },
            // No right to the database, or to create or use the table.
            1044 | 1142 | 1143 => LeaseError::Forbidden {
                address,
                registry: "MysqlRegistry",
                source: Arc::new(e),
            },
            // Running with --read-only.
            1290 | 1836 => LeaseError::ReadOnly {
                address,
                role: format!("it said: {}", server.message),
            },
            // The server is going away, or not ready yet.
            1053 | 1077 | 1152 | 2006 | 2013 => LeaseError::Unreachable {
                address,
                source: Arc::new(e),
            },
            _ => LeaseError::Server {
                address,
                source: Arc::new(e),
            },
        }
    }

    /// Whether the URL's credentials log in over TLS (the certificate
    /// unchecked): then a refused plain login was a user that must use TLS.
    fn tls_logs_in(&self) -> bool {
        tls::ensure_default_provider();
        let ssl = SslOpts::default()
            .with_danger_accept_invalid_certs(true)
            .with_danger_skip_domain_validation(true);
        let opts = OptsBuilder::from_opts(self.opts.clone()).ssl_opts(ssl);
        let login = async move { Conn::new(opts).await?.disconnect().await };
        self.remote
            .probe(TLS_PROBE_TIMEOUT, login)
            .is_some_and(|r| r.is_ok())
    }
}

//! The PostgreSQL client's failures, said as [`LeaseError`]s.

use std::sync::Arc;

use tokio_postgres::error::SqlState;

use super::super::client::tls;
use super::PostgresRegistry;
use super::url::{CREDENTIALS_FIX, TLS_FIX, TLS_REQUIRED_FIX};
use crate::lease::backend::LeaseError;

impl PostgresRegistry {
    /// The client's error, said as a [`LeaseError`].
    pub(super) fn error(&self, e: tokio_postgres::Error) -> LeaseError {
        let address = self.remote.address.clone();
        // The server's own words ("password authentication failed for user
        // ..."), not the client's "db error".
        let Some(db) = e.as_db_error() else {
            if let Some(reason) = tls::tls_failure(&e) {
                return LeaseError::Tls {
                    address,
                    reason,
                    fix: TLS_FIX,
                };
            }
            // No SQLSTATE: the connection itself failed.
            return LeaseError::Unreachable {
                address,
                source: Arc::new(e),
            };
        };
        let source = Arc::new(db.clone());
        let code = db.code();
        if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            && db.message().contains("no encryption")
        {
            // pg_hba.conf takes this role over TLS only.
            LeaseError::TlsRequired {
                address,
                source,
                fix: TLS_REQUIRED_FIX,
            }
        } else if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            LeaseError::Unauthorized {
                address,
                source,
                fix: CREDENTIALS_FIX,
            }
        } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
            LeaseError::Forbidden {
                address,
                registry: "PostgresRegistry",
                source,
            }
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            LeaseError::UnknownDatabase {
                address,
                database: self.config.get_dbname().unwrap_or("").to_owned(),
            }
        } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
            LeaseError::ReadOnly {
                address,
                role: format!("it said: {}", db.message()),
            }
        } else if *code == SqlState::CANNOT_CONNECT_NOW
            || *code == SqlState::ADMIN_SHUTDOWN
            || *code == SqlState::CRASH_SHUTDOWN
        {
            // Starting up or shutting down: it will answer, just not now.
            LeaseError::Unreachable { address, source }
        } else {
            LeaseError::Server { address, source }
        }
    }
}

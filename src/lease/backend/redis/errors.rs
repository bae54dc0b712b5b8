//! The Redis client's failures, said as [`LeaseError`]s.

use std::sync::Arc;

use redis::{ErrorKind, RedisError};

use super::super::client::tls;
use super::super::said;
use super::RedisRegistry;
use super::url::{CREDENTIALS_FIX, TLS_FIX, TLS_REQUIRED_FIX};
use crate::lease::backend::LeaseError;

/// How long the probe that tells a TLS-only port from a server going away
/// may take: it runs only on a dropped connection, on the lease's thread.
const TLS_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

impl RedisRegistry {
    /// The client's error, said as a [`LeaseError`].
    pub(super) fn error(&self, e: RedisError) -> LeaseError {
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
}

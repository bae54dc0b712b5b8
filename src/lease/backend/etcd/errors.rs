//! The etcd client's failures, said as [`LeaseError`]s.

use std::sync::Arc;

use serde_json::json;

use super::super::client::tls;
use super::super::said;
use super::EtcdRegistry;
use super::gateway::{self, Gateway, code};
use super::url::{CREDENTIALS_FIX, TLS_FIX, TLS_REQUIRED_FIX};
use crate::lease::backend::LeaseError;

impl EtcdRegistry {
    /// The client's error, said as a [`LeaseError`].
    pub(super) fn error(&self, e: gateway::Error) -> LeaseError {
        let address = self.remote.address.clone();
        match e {
            gateway::Error::Stale => LeaseError::Unreachable {
                address,
                source: said("every member closed the connection"),
            },
            gateway::Error::Unanswered => LeaseError::Unreachable {
                address,
                source: said("no member answers"),
            },
            gateway::Error::Io(e) => {
                // A TLS port closes a connection that speaks plain text; so
                // does a member going away. Only the first answers in TLS.
                let dropped = matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                );
                let tls_port = dropped
                    && self.tls.is_none()
                    && self.endpoints[0]
                        .rsplit_once(':')
                        .is_some_and(|(host, port)| {
                            port.parse().is_ok_and(|port| {
                                tls::speaks_tls(host, port, super::super::client::probe::PROBE_TIME)
                            })
                        });
                if tls_port {
                    return LeaseError::TlsRequired {
                        address,
                        source: Arc::new(e),
                        fix: TLS_REQUIRED_FIX,
                    };
                }
                LeaseError::Unreachable {
                    address,
                    source: Arc::new(e),
                }
            }
            gateway::Error::Tls(e) => {
                // A plain port does not answer a TLS handshake; it answers
                // the gateway's own request in plain text.
                let plain = self
                    .remote
                    .probe(super::super::client::probe::PROBE_TIME, async {
                        let endpoint = &self.endpoints[0];
                        let mut member = Gateway::connect(endpoint, None).await.ok()?;
                        let status = member.call("/v3/maintenance/status", &json!({})).await;
                        Some(status.is_ok_and(|s| s.get("header").is_some()))
                    });
                if plain.flatten() == Some(true) {
                    return LeaseError::WrongServer {
                        address,
                        speaks: "plain HTTP (etcd without TLS)",
                        wanted: "TLS",
                    };
                }
                LeaseError::Tls {
                    address,
                    reason: tls::tls_failure(&e).unwrap_or_else(|| e.to_string()),
                    fix: TLS_FIX,
                }
            }
            gateway::Error::Protocol(what)
                if what.contains("HTTPS server") || what.contains("\\x15\\x03") =>
            {
                LeaseError::TlsRequired {
                    address,
                    source: said(what),
                    fix: TLS_REQUIRED_FIX,
                }
            }
            gateway::Error::Protocol(what) => LeaseError::Server {
                address,
                source: said(format!("{what}: is this an etcd member's client port?")),
            },
            // Its credentials are in the URL, never in a file.
            gateway::Error::Credential(what) => LeaseError::Unauthorized {
                address,
                source: said(what),
                fix: CREDENTIALS_FIX,
            },
            gateway::Error::Status { code, message } => {
                let source = said(message.clone());
                match code {
                    code::UNAUTHENTICATED => LeaseError::Unauthorized {
                        address,
                        source,
                        fix: CREDENTIALS_FIX,
                    },
                    code::INVALID_ARGUMENT | code::FAILED_PRECONDITION
                        if message.contains("authentication failed")
                            || message.contains("user name is empty")
                            || message.contains("authentication is not enabled") =>
                    {
                        LeaseError::Unauthorized {
                            address,
                            source,
                            fix: CREDENTIALS_FIX,
                        }
                    }
                    code::PERMISSION_DENIED => LeaseError::Server {
                        address,
                        source: said(format!(
                            "{message}: the URL's user may not use the keys under {prefix}: grant \
                             its role readwrite there (etcdctl role grant-permission <role> \
                             --prefix=true readwrite {prefix})",
                            prefix = self.prefix
                        )),
                    },
                    code::UNAVAILABLE => LeaseError::NoQuorum { address, source },
                    // The call's bound, which the member was told, passed
                    // before a leader took the request.
                    code::DEADLINE_EXCEEDED => LeaseError::NoQuorum {
                        address,
                        source: said(format!(
                            "{message}: no leader took the request within the call's bound"
                        )),
                    },
                    _ => LeaseError::Server { address, source },
                }
            }
        }
    }
}

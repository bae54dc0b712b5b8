//! The Kubernetes client's failures, and the API server's refusals, said
//! as [`LeaseError`]s.

use std::sync::Arc;

use super::super::client::tls;
use super::super::said;
use super::KubernetesRegistry;
use super::api::{self, Reply};
use super::url::{TLS_FIX, TOKEN_FIX};
use crate::lease::backend::LeaseError;

impl KubernetesRegistry {
    /// The client's error, said as a [`LeaseError`].
    pub(super) fn error(&self, e: api::Error) -> LeaseError {
        let address = self.endpoint.clone();
        match e {
            api::Error::Io(e) => LeaseError::Unreachable {
                address,
                source: Arc::new(e),
            },
            // The client asks one server: none answering is its closing.
            api::Error::Stale | api::Error::Unanswered => LeaseError::Unreachable {
                address,
                source: said("the API server closed the connection"),
            },
            api::Error::Tls(e) => LeaseError::Tls {
                address,
                reason: tls::tls_failure(&e).unwrap_or_else(|| e.to_string()),
                fix: TLS_FIX,
            },
            api::Error::Protocol(what) => LeaseError::Server {
                address,
                source: said(format!("{what}: is this a Kubernetes API server's port?")),
            },
            // Its refusals are HTTP statuses, said by `refused`.
            api::Error::Status { message, .. } => LeaseError::Server {
                address,
                source: said(message),
            },
            api::Error::Credential(what) => LeaseError::Unauthorized {
                address,
                source: said(what),
                fix: TOKEN_FIX,
            },
        }
    }

    /// The API server's refusal of `verb` on Leases, said as a
    /// [`LeaseError`]: a token refused (401) or a verb not granted (403)
    /// is configuration to fix; throttling (429) and the server's own
    /// errors (5xx) pass, and the lease's renewals try again.
    pub(super) fn refused(&self, verb: &str, reply: &Reply) -> LeaseError {
        let address = self.endpoint.clone();
        let message = reply.message();
        let namespace = &self.namespace;
        match reply.status {
            401 => LeaseError::Unauthorized {
                address,
                source: said(message),
                fix: TOKEN_FIX,
            },
            403 => LeaseError::Server {
                address,
                source: said(format!(
                    "{message}: the token's user may not {verb} leases in the namespace \
                     {namespace}. Bind it to a Role that allows get, list, create, update and \
                     delete on leases (coordination.k8s.io) there, as flakegen's Kubernetes \
                     guide shows; `flakegen leases check` says which verbs it lacks"
                )),
            },
            404 => LeaseError::Server {
                address,
                source: said(format!(
                    "{message}: is the namespace {namespace} there, and does the server \
                     serve coordination.k8s.io/v1 Leases (Kubernetes 1.14 and later)?"
                )),
            },
            429 => LeaseError::Server {
                address,
                source: said(format!(
                    "the API server throttled the request (429: {message}); renewals try \
                     again. If it lasts, the cluster's API is overloaded: a longer TTL \
                     renews less often"
                )),
            },
            status => LeaseError::Server {
                address,
                source: said(format!("HTTP {status} to {verb} a Lease: {message}")),
            },
        }
    }
}

//! The connection a Kubernetes registry calls through, as `etcd/session.rs`
//! is etcd's: for each request, one from the registry's pool (or a new
//! one), the current token, and the two retries a client owes the server:
//! a connection it closed while idle, and a token it refused that the file
//! has since replaced.

use serde_json::Value;

use super::super::client::remote::{Connected, Failure};
use super::KubernetesRegistry;
use super::api::{self, Api, Reply};
use crate::lease::backend::LeaseError;

impl KubernetesRegistry {
    /// The path of the Leases in the registry's Kubernetes namespace.
    pub(super) fn leases(&self) -> String {
        format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
            self.namespace
        )
    }

    /// Sends `method` to `path`, with `body`, and returns what the server
    /// answered, whatever its status, but a token it still refuses (401).
    pub(super) fn request(
        &self,
        method: &'static str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Reply, LeaseError> {
        let mut retried = false;
        loop {
            let token = self.token.current().map_err(|e| self.error(e))?;
            let open = || async {
                Ok(Connected {
                    client: Api::connect(&self.endpoint, &self.tls).await?,
                    driver: None,
                })
            };
            let sent = &token;
            let result = self.remote.run(open, |mut api: Api| async move {
                let reply = api.call(method, path, sent, body).await;
                (api, reply.map_err(Failure::Client))
            });
            match result {
                // Nothing was sent: a new connection sends it.
                Err(Failure::Client(api::Error::Stale)) if !retried => {}
                Ok(reply) if reply.status == 401 && !retried => {
                    // The kubelet may have rotated the token since it was
                    // read: read it again, and ask once more if it changed.
                    self.token.forget();
                    if self.token.current().ok().as_ref() == Some(&token) {
                        return Err(self.refused(verb(method, path), &reply));
                    }
                }
                Ok(reply) if reply.status == 401 => {
                    return Err(self.refused(verb(method, path), &reply));
                }
                Ok(reply) => return Ok(reply),
                Err(failure) => {
                    return Err(failure.into_lease(&self.endpoint, |e| self.error(e)));
                }
            }
            retried = true;
        }
    }
}

/// The RBAC verb a request needs.
pub(super) fn verb(method: &str, path: &str) -> &'static str {
    match method {
        "GET" if path.contains('?') || path.ends_with("/leases") => "list",
        "GET" => "get",
        "POST" => "create",
        "PUT" => "update",
        "DELETE" => "delete",
        _ => "use",
    }
}

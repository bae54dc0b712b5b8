//! A Kubernetes URL: the API server, the Kubernetes namespace, the prefix
//! of flakegen's Lease names, the token and the CA; in a pod, all of it
//! from the pod's own service account.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::super::client::probe::Speaks;
use super::super::client::remote::Remote;
use super::super::client::tls::{self, Verify};
use super::KubernetesRegistry;
use super::api::Token;
use crate::lease::backend::LeaseError;

/// Where a pod's service account is mounted (its token, CA and namespace).
const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

pub(super) const TLS_FIX: &str = "check the CA file (ca_file=<file>; in a pod, the service \
     account's ca.crt) and that the API server's certificate names the host in the URL";
pub(super) const TOKEN_FIX: &str = "check the token in the token file \
     (kube://host:port/namespace/prefix?token_file=<file>; in a pod, the service account's \
     token, which the kubelet rotates)";

impl KubernetesRegistry {
    /// A registry at `url`, in one of two forms:
    ///
    /// - `kube:///PREFIX` in a pod: the API server at
    ///   `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`, verified
    ///   against the service account's `ca.crt` (by the certificate's IP
    ///   names where the host is an address), the service account's token,
    ///   and Leases in the pod's own namespace;
    /// - `kube://HOST:PORT/NAMESPACE/PREFIX?token_file=<file>&ca_file=<file>`
    ///   anywhere else: the API server, the Kubernetes namespace the Leases
    ///   live in, a file holding a bearer token, and the PEM file of the CAs
    ///   to verify the server with (the system's without one).
    ///
    /// `PREFIX` (default `flakegen`) begins every Lease's name: lower-case
    /// letters, digits and `-`, at most 30. The token is read again every
    /// minute and at once when the server refuses it, so a rotated token
    /// is taken up; it never appears in a message. Nothing is sent until
    /// the first call.
    ///
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed, names
    /// files that cannot be read, or is `kube:///` outside a pod.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        super::super::client::url::check_shape(url)?;
        let invalid = |reason: String| LeaseError::InvalidUrl { reason };
        let (url, params) = tls::take_params(url, &["token_file", "ca_file"]);
        let (scheme, rest) = url.split_once("://").ok_or_else(|| {
            invalid("a Kubernetes URL is kube:///PREFIX in a pod, or kube://host:port/namespace/prefix?token_file=<file>&ca_file=<file>".into())
        })?;
        if !scheme.eq_ignore_ascii_case("kube") {
            return Err(invalid(format!("{scheme}:// is not a Kubernetes URL")));
        }
        if let Some((_, query)) = rest.split_once('?') {
            return Err(invalid(format!(
                "unknown parameters {query:?}: a Kubernetes URL takes token_file=<file> and \
                 ca_file=<file>"
            )));
        }
        if rest.contains('@') {
            return Err(invalid(
                "a Kubernetes URL carries no credentials: name a token file (token_file=<file>)"
                    .into(),
            ));
        }
        let param = |name: &str| {
            params
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| PathBuf::from(v))
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (endpoint, namespace, prefix, token_file, ca_file) = if authority.is_empty() {
            // In a pod.
            let account = Path::new(SERVICE_ACCOUNT);
            let (host, port) = match (
                std::env::var("KUBERNETES_SERVICE_HOST"),
                std::env::var("KUBERNETES_SERVICE_PORT"),
            ) {
                (Ok(host), Ok(port)) if !host.is_empty() && !port.is_empty() => (host, port),
                _ => {
                    return Err(invalid(
                        "kube:///PREFIX is for a pod, and KUBERNETES_SERVICE_HOST and \
                         KUBERNETES_SERVICE_PORT are not both set here: outside a cluster, \
                         name the API server (kube://host:port/namespace/prefix?token_file=\
                         <file>&ca_file=<file>)"
                            .into(),
                    ));
                }
            };
            let host = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]")
            } else {
                host
            };
            let (namespace, prefix) = match segments[..] {
                [] => (None, None),
                [prefix] => (None, Some(prefix)),
                [namespace, prefix] => (Some(namespace.to_owned()), Some(prefix)),
                _ => {
                    return Err(invalid(
                        "kube:///[NAMESPACE/]PREFIX has at most two parts".into(),
                    ));
                }
            };
            let namespace = match namespace {
                Some(namespace) => namespace,
                None => {
                    let file = account.join("namespace");
                    std::fs::read_to_string(&file)
                        .map_err(|e| {
                            invalid(format!(
                                "cannot read the pod's namespace from {} ({e}): name it \
                                 (kube:///NAMESPACE/PREFIX)",
                                file.display()
                            ))
                        })?
                        .trim()
                        .to_owned()
                }
            };
            (
                format!("{host}:{port}"),
                namespace,
                prefix,
                param("token_file").unwrap_or_else(|| account.join("token")),
                Some(param("ca_file").unwrap_or_else(|| account.join("ca.crt"))),
            )
        } else {
            let [namespace, rest @ ..] = &segments[..] else {
                return Err(invalid(
                    "a Kubernetes URL names the namespace of its Leases: \
                     kube://host:port/namespace/prefix"
                        .into(),
                ));
            };
            let prefix = match rest {
                [] => None,
                [prefix] => Some(*prefix),
                _ => {
                    return Err(invalid(
                        "kube://host:port/NAMESPACE/PREFIX has two parts".into(),
                    ));
                }
            };
            let endpoint = if authority
                .rsplit_once(':')
                .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
            {
                authority.to_owned()
            } else {
                format!("{authority}:443")
            };
            let token_file = param("token_file").ok_or_else(|| {
                invalid(
                    "a Kubernetes URL outside a pod names a file holding its bearer token: \
                     ?token_file=<file>"
                        .into(),
                )
            })?;
            (
                endpoint,
                (*namespace).to_owned(),
                prefix,
                token_file,
                param("ca_file"),
            )
        };
        let prefix = prefix.unwrap_or("flakegen");
        let label = |text: &str| {
            !text.is_empty()
                && text.len() <= 63
                && text
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !text.starts_with('-')
                && !text.ends_with('-')
        };
        if !label(prefix) || prefix.len() > 30 {
            return Err(invalid(format!(
                "the prefix {prefix:?} cannot begin a Lease's name: use lower-case letters, \
                 digits and '-', at most 30"
            )));
        }
        if !label(&namespace) {
            return Err(invalid(format!(
                "{namespace:?} is not a Kubernetes namespace's name"
            )));
        }
        tls::ensure_default_provider();
        let config = tls::client_config(Verify::Full, ca_file.as_deref()).map_err(invalid)?;
        let token = Token::new(token_file);
        // A token that cannot be read is a mistake to say now, not at the
        // first lease.
        token.current().map_err(|e| invalid(e.to_string()))?;
        Ok(KubernetesRegistry {
            remote: Remote::new(endpoint.clone(), Speaks::Tls)?,
            endpoint,
            namespace,
            prefix: prefix.to_owned(),
            token,
            tls: Arc::new(config),
            seen: Mutex::default(),
        })
    }
}

impl std::fmt::Debug for KubernetesRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesRegistry")
            .field("endpoint", &self.endpoint)
            .field("namespace", &self.namespace)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(url: &str) -> String {
        match KubernetesRegistry::new(url) {
            Err(LeaseError::InvalidUrl { reason }) => reason,
            Err(other) => panic!("{url}: {other}"),
            Ok(_) => panic!("{url}: taken"),
        }
    }

    #[test]
    fn bad_urls_say_what_a_good_one_is() {
        let token = std::env::temp_dir().join("flakegen-kube-url-test.token");
        std::fs::write(&token, "t0ken\n").unwrap();
        let t = token.display();
        assert!(reason(&format!("kube://127.0.0.1:6443?token_file={t}")).contains("namespace"));
        assert!(reason("kube://127.0.0.1:6443/flakegen/p").contains("token_file"));
        assert!(reason(&format!("kube://h:1/ns/Bad_Prefix?token_file={t}")).contains("prefix"));
        assert!(reason(&format!("kube://h:1/ns/p?token_file={t}&x=1")).contains("unknown"));
        assert!(reason("kube://h:1/ns/p?token_file=/nonexistent/token").contains("cannot read"));
        assert!(reason(&format!("kube://u:p@h:1/ns/p?token_file={t}")).contains("no credentials"));
        if std::env::var_os("KUBERNETES_SERVICE_HOST").is_none() {
            assert!(reason("kube:///ids").contains("is for a pod"));
        }
        let registry =
            KubernetesRegistry::new(&format!("kube://[::1]:6443/flakegen/ids?token_file={t}"));
        let registry = registry.unwrap();
        assert_eq!(
            (
                registry.endpoint.as_str(),
                registry.namespace.as_str(),
                registry.prefix.as_str()
            ),
            ("[::1]:6443", "flakegen", "ids")
        );
    }
}

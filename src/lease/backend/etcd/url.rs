//! An etcd URL: the members, the prefix, the credentials and TLS, and
//! what its failures tell a user to check in its terms.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::super::client::probe::Speaks;
use super::super::client::remote::Remote;
use super::super::client::tls::{self, Verify};
use super::super::client::url::percent_decode;
use super::EtcdRegistry;
use super::known::Known;
use crate::lease::backend::LeaseError;

/// How much longer than a call's bound a connection that logs in may take
/// to open. A login costs the member a bcrypt hash of the password, and
/// logins at once share the members' cores, so each takes about as long as
/// all: a fleet's first builds, all at once, would otherwise time out
/// together at the call's bound.
// Measured on a 2-core VM running all three members: 128 logins at once
// took about 6 s, against the call's bound of 3 s.
const LOGIN_ALLOWANCE: Duration = Duration::from_secs(12);

// What each failure's message tells a user to check, in this registry's own
// URL terms.
pub(super) const TLS_FIX: &str = "check the CA file (sslrootcert=<file>; the system's CAs without one), \
     that the members' certificates name the hosts in the URL, and that the ports take TLS";
pub(super) const TLS_REQUIRED_FIX: &str = "use an etcds:// URL";
pub(super) const CREDENTIALS_FIX: &str = "check the user name and password in the URL \
     (etcd://user:password@host:port,host:port/prefix; percent-encode special characters)";

impl EtcdRegistry {
    /// A registry at `url`: `etcd://[user:password@]host:port[,host:port...][/prefix]`,
    /// the members to try in turn, and the prefix of flakegen's keys
    /// (default `/flakegen`). Nothing is sent until the first call.
    ///
    /// TLS (rustls): `etcds://`, verifying each member's certificate and
    /// host name against the system's CAs, or against those in the PEM file
    /// `?sslrootcert=<file>` names. With credentials, the client
    /// authenticates (etcd's auth); the user's role needs `readwrite` on
    /// the prefix. It logs in once, and its new connections carry the token
    /// where the cluster signs them (`--auth-token jwt,...`). A login costs
    /// the member a bcrypt hash of the password, so many clients that start
    /// at once queue on it: a login may take 12 s past the call's timeout
    /// while the cluster has a leader. etcd's JSON gateway takes no client
    /// certificate in place of a login.
    ///
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        super::super::client::url::check_shape(url)?;
        let given = url;
        let invalid = |reason: String| LeaseError::InvalidUrl {
            reason: super::super::client::url::scrub(&reason, given),
        };
        let (url, params) = tls::take_params(url, &["sslrootcert"]);
        let (scheme, rest) = url.split_once("://").ok_or_else(|| {
            invalid("an etcd URL is etcd://host:port[,host:port...]/prefix".into())
        })?;
        let over_tls = match scheme.to_ascii_lowercase().as_str() {
            "etcd" => false,
            "etcds" => true,
            other => return Err(invalid(format!("{other}:// is not an etcd URL"))),
        };
        if let Some(rest) = rest.split_once('?').map(|(_, q)| q) {
            return Err(invalid(format!(
                "unknown parameters {rest:?}: an etcd URL takes sslrootcert=<file> only"
            )));
        }
        let (credentials, rest) = match rest.rsplit_once('@') {
            Some((userinfo, rest)) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let decode = |part: &str| {
                    percent_decode(part).ok_or_else(|| {
                        invalid("the user or password is badly percent-encoded".into())
                    })
                };
                (Some((decode(user)?, decode(password)?)), rest)
            }
            None => (None, rest),
        };
        let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
        let endpoints: Vec<String> = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(|h| {
                if h.rsplit_once(':')
                    .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
                {
                    h.to_owned()
                } else {
                    format!("{h}:2379")
                }
            })
            .collect();
        if endpoints.is_empty() {
            return Err(invalid(
                "an etcd URL names at least one member: etcd://host:port/prefix".into(),
            ));
        }
        let path = path.trim_end_matches('/');
        let prefix = if path.is_empty() {
            "/flakegen".to_owned()
        } else {
            format!("/{path}")
        };
        let ca_file = params.first().map(|(_, file)| file.clone());
        let tls = match (over_tls, ca_file) {
            (false, Some(_)) => {
                return Err(invalid(
                    "a CA file (sslrootcert=) is for TLS: use an etcds:// URL".to_owned(),
                ));
            }
            (false, None) => None,
            (true, ca_file) => {
                tls::ensure_default_provider();
                let config =
                    tls::client_config(Verify::Full, ca_file.as_deref().map(std::path::Path::new))
                        .map_err(invalid)?;
                Some(Arc::new(config))
            }
        };
        let mut remote = Remote::new(endpoints.join(","), Speaks::Http)?;
        if credentials.is_some() {
            remote = remote.with_login(LOGIN_ALLOWANCE);
        }
        Ok(EtcdRegistry {
            remote,
            endpoints,
            prefix,
            credentials,
            tls,
            next: AtomicUsize::new(0),
            terms: Mutex::default(),
            known: Known::default(),
            token: Mutex::new(None),
        })
    }
}

/// A namespace in a key: `%` and `/` percent-encoded.
pub(super) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            c => out.push(c),
        }
    }
    out
}

impl std::fmt::Debug for EtcdRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdRegistry")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.prefix)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_members_a_prefix_and_credentials() {
        let r =
            EtcdRegistry::new("etcd://u:p%40ss@10.0.0.1:2379,10.0.0.2,[::1]:2380/leases/").unwrap();
        assert_eq!(
            r.endpoints,
            ["10.0.0.1:2379", "10.0.0.2:2379", "[::1]:2380"]
        );
        assert_eq!(r.prefix, "/leases");
        assert_eq!(r.credentials, Some(("u".to_owned(), "p@ss".to_owned())));
        let r = EtcdRegistry::new("ETCD://127.0.0.1:2379").unwrap();
        assert_eq!(r.prefix, "/flakegen");
        assert_eq!(r.credentials, None);
        for bad in [
            "etcd://",
            "etcd://h:1/p?ssl=1",
            "etcd://h:1?sslrootcert=/ca.pem",
            "http://h:1",
        ] {
            assert!(
                matches!(EtcdRegistry::new(bad), Err(LeaseError::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn namespaces_are_one_key_segment() {
        assert_eq!(percent_encode("a/b%c"), "a%2Fb%25c");
        assert_eq!(percent_decode("a%2Fb%25c").as_deref(), Some("a/b%c"));
        assert_eq!(percent_decode("%zz"), None);
    }
}

//! A Redis URL, and what its failures tell a user to check in its terms.

use redis::{Client, TlsCertificates};

use super::super::client::probe::Speaks;
use super::super::client::remote::Remote;
use super::super::client::tls;
use super::{RedisRegistry, Scripts};
use crate::lease::backend::LeaseError;

/// What each failure's message tells a user to check, in this registry's
/// own URL terms.
pub(super) const TLS_FIX: &str = "check the CA file (sslrootcert=<file>; the system's CAs without one), \
     that the server's certificate names the host in the URL, and that the port takes TLS";
pub(super) const TLS_REQUIRED_FIX: &str = "use a rediss:// URL, at the server's TLS port";
pub(super) const CREDENTIALS_FIX: &str = "check the password in the URL (redis://:password@host:port/db, \
     or redis://user:password@host:port/db with ACLs; percent-encode special characters)";

impl RedisRegistry {
    /// A registry at `url` (`redis://:password@host:port/db`). Nothing is
    /// sent until the first call.
    ///
    /// TLS (rustls): `rediss://`, verifying the server's certificate and host
    /// name against the system's CAs, or against those in the PEM file
    /// `?sslrootcert=<file>` names.
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
        let over_tls = url.to_ascii_lowercase().starts_with("rediss://");
        if over_tls {
            tls::ensure_default_provider();
        }
        let client = match params.first() {
            Some(_) if !over_tls => {
                return Err(invalid(
                    "a CA file (sslrootcert=) is for TLS: use a rediss:// URL".to_owned(),
                ));
            }
            Some((_, ca_file)) => {
                let root_cert = std::fs::read(ca_file)
                    .map_err(|e| invalid(format!("cannot read the CA file {ca_file} ({e})")))?;
                let certificates = TlsCertificates {
                    client_tls: None,
                    root_cert: Some(root_cert),
                };
                Client::build_with_tls(url.as_str(), certificates)
            }
            None => Client::open(url.as_str()),
        };
        let client = client.map_err(|e| invalid(e.to_string()))?;
        let address = client.get_connection_info().addr.to_string();
        Ok(RedisRegistry {
            client,
            remote: Remote::new(address, if over_tls { Speaks::Tls } else { Speaks::Redis })?,
            scripts: Scripts::new(),
        })
    }
}

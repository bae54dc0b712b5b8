//! A PostgreSQL URL as libpq takes it, TLS included, and what its
//! failures tell a user to check in its terms.

use tokio_postgres::Config;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::super::client::budget::DEFAULT_TIMEOUT;
use super::super::client::probe::Speaks;
use super::super::client::remote::Remote;
use super::super::client::tls::{self, Verify};
use super::super::inspect::Verified;
use super::PostgresRegistry;
use crate::lease::backend::LeaseError;

/// What each failure's message tells a user to check, in this registry's
/// own URL terms.
pub(super) const TLS_FIX: &str = "check the CA file (sslrootcert=<file>; the system's CAs without one), \
     that the server's certificate names the host in the URL (or verify the CA alone: \
     sslmode=verify-ca), and that the server takes TLS";
pub(super) const TLS_REQUIRED_FIX: &str =
    "add sslmode=verify-full (with sslrootcert=<CA file>) to the URL";
pub(super) const CREDENTIALS_FIX: &str = "check the user name and password in the URL \
     (postgres://user:password@host:port/db; percent-encode special characters)";

impl PostgresRegistry {
    /// A registry at `url` (`postgres://user:password@host:port/database`).
    /// Nothing is sent until the first call.
    ///
    /// TLS (rustls) as libpq takes it, in the URL's query: `sslmode=disable`
    /// (the default here, unlike libpq's), `require` (TLS, unverified; with
    /// a CA file, the chain is verified), `verify-ca` (the chain),
    /// `verify-full` (the chain and the host name); `sslrootcert=<PEM file>`
    /// names the CAs to trust, the system's otherwise. A managed database
    /// wants `?sslmode=verify-full&sslrootcert=/path/to/its-ca.pem`.
    /// `prefer` and `allow` (libpq's default, TLS if the server offers it)
    /// are refused: they fall back to plain text unseen, and leave the
    /// certificate unchecked.
    ///
    /// # Errors
    ///
    /// [`LeaseError::InvalidUrl`] when the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, LeaseError> {
        super::super::client::url::check_shape(url)?;
        let given = url;
        let url = lowercase_scheme(url);
        // libpq's TLS parameters, some of which the client does not know.
        let (url, params) = tls::take_params(&url, &["sslmode", "sslrootcert"]);
        let param = |name| {
            params
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        let ca_file = param("sslrootcert").map(std::path::Path::new);
        let (ssl_mode, verify) = match param("sslmode").unwrap_or("disable") {
            "disable" => (SslMode::Disable, None),
            mode @ ("allow" | "prefer") => {
                return Err(LeaseError::InvalidUrl {
                    reason: format!(
                        "sslmode={mode} would fall back to plain text unseen, with the \
                         certificate unchecked: use sslmode=verify-full (with \
                         sslrootcert=<CA file>), or sslmode=disable"
                    ),
                });
            }
            // As libpq: with a CA file, `require` checks the chain.
            "require" if ca_file.is_some() => (SslMode::Require, Some(Verify::Chain)),
            "require" => (SslMode::Require, Some(Verify::Nothing)),
            "verify-ca" => (SslMode::Require, Some(Verify::Chain)),
            "verify-full" => (SslMode::Require, Some(Verify::Full)),
            other => {
                return Err(LeaseError::InvalidUrl {
                    reason: format!(
                        "sslmode={other} is none of disable, require, verify-ca, verify-full"
                    ),
                });
            }
        };
        let verified = match verify {
            None | Some(Verify::Nothing) => Verified::Nothing,
            Some(Verify::Chain) => Verified::Chain,
            Some(Verify::Full) => Verified::Full,
        };
        let tls = verify
            .map(|verify| tls::client_config(verify, ca_file))
            .transpose()
            .map_err(|reason| LeaseError::InvalidUrl { reason })?
            .map(MakeRustlsConnect::new);
        let mut config: Config = url.parse().map_err(|e| LeaseError::InvalidUrl {
            reason: super::super::client::url::scrub(&format!("{e}"), given),
        })?;
        config.ssl_mode(ssl_mode);
        // The client takes any text for a host name, and reports one that
        // cannot be as a failed connection: say it here, for what it is.
        for host in config.get_hosts() {
            if let tokio_postgres::config::Host::Tcp(host) = host {
                let name = host.trim_start_matches('[').trim_end_matches(']');
                let fits = |c: char| c.is_ascii_alphanumeric() || "-._:".contains(c);
                if name.is_empty() || !name.chars().all(fits) {
                    return Err(LeaseError::InvalidUrl {
                        reason: format!(
                            "{host:?} is not a host name or an IP address \
                             (percent-encode special characters in the user name and password)"
                        ),
                    });
                }
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_TIMEOUT);
        }
        // The server gives up too, so a stuck statement frees its locks.
        let timeout_ms = DEFAULT_TIMEOUT.as_millis();
        let options = format!(
            "{} -c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}",
            config.get_options().unwrap_or("")
        );
        config.options(options.trim());
        config.application_name("flakegen-lease");
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
            #[cfg(unix)]
            Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => "localhost".to_owned(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        Ok(PostgresRegistry {
            config,
            tls,
            verified,
            remote: Remote::new(format!("{host}:{port}"), Speaks::Postgres)?,
        })
    }
}

/// `url` with its scheme in lower case: schemes are case-insensitive
/// (RFC 3986), and not every client knows it.
fn lowercase_scheme(url: &str) -> std::borrow::Cow<'_, str> {
    match url.split_once("://") {
        Some((scheme, rest)) if scheme.bytes().any(|b| b.is_ascii_uppercase()) => {
            format!("{}://{rest}", scheme.to_ascii_lowercase()).into()
        }
        _ => url.into(),
    }
}

impl std::fmt::Debug for PostgresRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresRegistry")
            .field("address", &self.remote.address)
            .finish_non_exhaustive()
    }
}

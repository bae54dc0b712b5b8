//! A MySQL or MariaDB URL, TLS included as MySQL's clients take it, and
//! what its failures tell a user to check in its terms.

use mysql_async::{Opts, OptsBuilder, SslOpts};

use super::super::client::budget::DEFAULT_TIMEOUT;
use super::super::client::probe::Speaks;
use super::super::client::remote::Remote;
use super::super::client::tls;
use super::super::inspect::Verified;
use super::MysqlRegistry;
use crate::lease::backend::LeaseError;

/// What each failure's message tells a user to check, in this registry's
/// own URL terms.
pub(super) const TLS_FIX: &str = "check the CA file (ssl-ca=<file>; the Mozilla roots without one), that \
     the server's certificate names the host in the URL (or verify the CA alone: \
     ssl-mode=VERIFY_CA), and that the server takes TLS";
pub(super) const TLS_REQUIRED_FIX: &str =
    "add ssl-mode=VERIFY_IDENTITY (with ssl-ca=<CA file>) to the URL";
pub(super) const CREDENTIALS_FIX: &str = "check the user name and password in the URL \
     (mysql://user:password@host:port/db; percent-encode special characters)";

impl MysqlRegistry {
    /// A registry at `url` (`mysql://user:password@host:port/database`, or
    /// `mariadb://`).
    /// Nothing is sent until the first call.
    ///
    /// TLS (rustls) as MySQL's clients take it, in the URL's query:
    /// `ssl-mode=DISABLED` (the default), `REQUIRED` (TLS, the certificate
    /// unchecked), `VERIFY_CA` (its chain), `VERIFY_IDENTITY` (its chain and
    /// the host name); `ssl-ca=<PEM file>` names the CAs to trust, the
    /// Mozilla roots otherwise. A managed database wants
    /// `?ssl-mode=VERIFY_IDENTITY&ssl-ca=/path/to/its-ca.pem`.
    /// `PREFERRED` (TLS if the server offers it) is refused: say which.
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
        // The client knows one scheme; MariaDB's name is as good.
        let url = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("mariadb") => {
                format!("mysql://{rest}")
            }
            _ => url.to_owned(),
        };
        let (url, params) = tls::take_params(&url, &["ssl-mode", "ssl-ca"]);
        let param = |name| {
            params
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        let opts = Opts::from_url(&url).map_err(|e| invalid(e.to_string()))?;
        if opts.db_name().is_none_or(str::is_empty) {
            return Err(invalid(
                "the URL names no database: add /<database> (mysql://user:password@host:port/db)"
                    .to_owned(),
            ));
        }
        let mode = param("ssl-mode").unwrap_or("DISABLED").to_ascii_uppercase();
        let ssl = match mode.as_str() {
            "DISABLED" => None,
            "REQUIRED" => Some(
                SslOpts::default()
                    .with_danger_accept_invalid_certs(true)
                    .with_danger_skip_domain_validation(true),
            ),
            "VERIFY_CA" => Some(SslOpts::default().with_danger_skip_domain_validation(true)),
            "VERIFY_IDENTITY" => Some(SslOpts::default()),
            "PREFERRED" => {
                return Err(invalid(
                    "ssl-mode=PREFERRED would fall back to plain text unseen: use \
                     VERIFY_IDENTITY (or REQUIRED, VERIFY_CA), or DISABLED"
                        .to_owned(),
                ));
            }
            other => {
                return Err(invalid(format!(
                    "ssl-mode={other} is none of DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
                )));
            }
        };
        let ssl = match (ssl, param("ssl-ca")) {
            (None, Some(_)) => {
                return Err(invalid(
                    "a CA file (ssl-ca=) is for TLS: add ssl-mode=VERIFY_IDENTITY".to_owned(),
                ));
            }
            (Some(ssl), Some(ca_file)) => {
                std::fs::metadata(ca_file)
                    .map_err(|e| invalid(format!("cannot read the CA file {ca_file} ({e})")))?;
                Some(
                    ssl.with_root_certs(vec![std::path::PathBuf::from(ca_file).into()])
                        .with_disable_built_in_roots(true),
                )
            }
            (ssl, None) => ssl,
        };
        if ssl.is_some() {
            tls::ensure_default_provider();
        }
        let timeout = DEFAULT_TIMEOUT.as_secs().max(1);
        let opts = OptsBuilder::from_opts(opts)
            .ssl_opts(ssl)
            .client_found_rows(true)
            .prefer_socket(false)
            .init(vec![
                // The server gives up too, so a stuck statement frees its locks.
                format!("SET SESSION innodb_lock_wait_timeout = {timeout}"),
                format!("SET SESSION lock_wait_timeout = {timeout}"),
                // UNIX_TIMESTAMP(NOW(6)) through a zone with daylight saving
                // is ambiguous for an hour a year; through UTC it never is.
                "SET SESSION time_zone = '+00:00'".to_owned(),
            ]);
        let opts = Opts::from(opts);
        let address = format!("{}:{}", opts.ip_or_hostname(), opts.tcp_port());
        let verified = match mode.as_str() {
            "VERIFY_IDENTITY" => Verified::Full,
            "VERIFY_CA" => Verified::Chain,
            _ => Verified::Nothing,
        };
        Ok(MysqlRegistry {
            opts,
            verified,
            remote: Remote::new(address, Speaks::Mysql)?,
        })
    }
}

impl std::fmt::Debug for MysqlRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlRegistry")
            .field("address", &self.remote.address)
            .finish_non_exhaustive()
    }
}

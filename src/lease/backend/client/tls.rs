//! TLS to a registry server, with rustls: how much of the server's
//! certificate to check (PostgreSQL, etcd; the Redis and MySQL clients
//! check their own), which CAs to trust, and what a failure means.

use rustls::Error as TlsError;
use rustls::crypto::CryptoProvider;

#[cfg(any(feature = "postgres", feature = "etcd", feature = "kubernetes"))]
pub(crate) use self::config::{Verify, client_config};

/// Makes `ring` the process's default provider if there is none: clients
/// that build their own configuration (Redis's) need one.
#[cfg_attr(
    not(any(feature = "redis", feature = "etcd", feature = "kubernetes")),
    allow(dead_code)
)]
pub(crate) fn ensure_default_provider() {
    if CryptoProvider::get_default().is_none() {
        // Another thread may have installed one meanwhile: that one stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The certificate checks flakegen makes itself, for PostgreSQL's `sslmode`s
/// and the Redis probe (MySQL's client makes its own).
#[cfg(any(
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "kubernetes"
))]
mod lenient {
    use std::sync::Arc;

    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, Error as TlsError, SignatureScheme};

    /// The crypto flakegen uses, whatever other crates enable.
    pub(super) fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    /// A verifier that checks less than rustls's own: nothing of the
    /// certificate (`require`, and the probe, which asks only whether a server
    /// speaks TLS), or its chain but not its name (`verify-ca`). The
    /// handshake's signatures are checked against the certificate either way.
    #[derive(Debug)]
    pub(super) struct Lenient {
        pub(super) provider: Arc<CryptoProvider>,
        /// `Some`: the chain is checked against these roots.
        pub(super) chain: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    }

    impl ServerCertVerifier for Lenient {
        fn verify_server_cert(
            &self,
            end_entity: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            server_name: &ServerName<'_>,
            ocsp: &[u8],
            now: UnixTime,
        ) -> Result<ServerCertVerified, TlsError> {
            let Some(chain) = &self.chain else {
                return Ok(ServerCertVerified::assertion());
            };
            match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
                Err(TlsError::InvalidCertificate(
                    rustls::CertificateError::NotValidForName
                    | rustls::CertificateError::NotValidForNameContext { .. },
                )) => Ok(ServerCertVerified::assertion()),
                other => other,
            }
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, TlsError> {
            verify_tls12_signature(message, cert, dss, self.algorithms())
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, TlsError> {
            verify_tls13_signature(message, cert, dss, self.algorithms())
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.algorithms().supported_schemes()
        }
    }

    impl Lenient {
        fn algorithms(&self) -> &rustls::crypto::WebPkiSupportedAlgorithms {
            &self.provider.signature_verification_algorithms
        }
    }
}

#[cfg(any(
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "kubernetes"
))]
use self::lenient::{Lenient, provider};

/// Whether the server at `host`:`port` answers a TLS handshake, within
/// `within`. A server that drops a plain connection is TLS-only if it does;
/// if it does not (or does not answer), it was going away: a restart, a
/// crash, a failover, not a request for TLS.
#[cfg(any(feature = "redis", feature = "etcd"))]
pub(crate) fn speaks_tls(host: &str, port: u16, within: std::time::Duration) -> bool {
    use std::net::{TcpStream, ToSocketAddrs};
    use std::sync::Arc;

    use rustls::pki_types::ServerName;
    use rustls::{ClientConfig, ClientConnection};

    let probe = || -> Option<bool> {
        let address = (host, port).to_socket_addrs().ok()?.next()?;
        let mut stream = TcpStream::connect_timeout(&address, within).ok()?;
        stream.set_read_timeout(Some(within)).ok()?;
        stream.set_write_timeout(Some(within)).ok()?;
        let config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .ok()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Lenient {
                provider: provider(),
                chain: None,
            }))
            .with_no_client_auth();
        let name = ServerName::try_from(host.to_owned()).ok()?;
        let mut tls = ClientConnection::new(Arc::new(config), name).ok()?;
        while tls.is_handshaking() {
            if let Err(e) = tls.complete_io(&mut stream) {
                // A TLS alert is an answer in TLS; bytes that are no TLS
                // record, or no bytes, are not.
                let alert = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<TlsError>())
                    .is_some_and(|e| matches!(e, TlsError::AlertReceived(_)));
                return Some(alert);
            }
        }
        Some(true)
    };
    probe().unwrap_or(false)
}

/// The client configuration for PostgreSQL's `sslmode`s (and etcd's,
/// always `verify-full`).
#[cfg(any(feature = "postgres", feature = "etcd", feature = "kubernetes"))]
mod config {
    use std::path::Path;
    use std::sync::Arc;

    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use rustls::{ClientConfig, RootCertStore};

    use super::{Lenient, provider};

    /// How much of the server's certificate is checked, by libpq's names.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) enum Verify {
        /// `require` (and `prefer`): encrypted, the certificate unchecked.
        Nothing,
        /// `verify-ca`: signed by a trusted CA, for any host name.
        Chain,
        /// `verify-full`: signed by a trusted CA, for the host in the URL.
        Full,
    }

    /// The CAs to trust: those in `ca_file` (PEM), or the system's.
    fn roots(ca_file: Option<&Path>) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        match ca_file {
            Some(path) => {
                let unreadable = |e: &dyn std::fmt::Display| {
                    format!("cannot read the CA file {} ({e})", path.display())
                };
                for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(&e))? {
                    let cert = cert.map_err(|e| unreadable(&e))?;
                    roots.add(cert).map_err(|e| unreadable(&e))?;
                }
            }
            None => {
                for cert in rustls_native_certs::load_native_certs().certs {
                    // A system store may hold certificates rustls cannot use: skip them.
                    let _ = roots.add(cert);
                }
            }
        }
        if roots.is_empty() {
            return Err(
                "no CA certificate to verify the server with: give a CA file (sslrootcert=<file>)"
                    .to_owned(),
            );
        }
        Ok(roots)
    }

    /// A client configuration that checks `verify` of the server's certificate,
    /// trusting the CAs in `ca_file`, or the system's.
    pub(crate) fn client_config(
        verify: Verify,
        ca_file: Option<&Path>,
    ) -> Result<ClientConfig, String> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let verifier: Arc<dyn ServerCertVerifier> = match verify {
            Verify::Full => {
                let roots = roots(ca_file)?;
                return Ok(builder.with_root_certificates(roots).with_no_client_auth());
            }
            Verify::Chain => {
                let roots = Arc::new(roots(ca_file)?);
                let chain =
                    WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                        .build()
                        .map_err(|e| e.to_string())?;
                Arc::new(Lenient {
                    provider,
                    chain: Some(chain),
                })
            }
            Verify::Nothing => Arc::new(Lenient {
                provider,
                chain: None,
            }),
        };
        Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth())
    }
}

/// Takes the query parameters `names` out of `url`: the URL without them,
/// and their values (the last of each name wins).
pub(crate) fn take_params<'a>(url: &str, names: &[&'a str]) -> (String, Vec<(&'a str, String)>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), Vec::new());
    };
    let (query, fragment) = query
        .split_once('#')
        .map_or((query, None), |(q, f)| (q, Some(f)));
    let mut taken = Vec::new();
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match names.iter().find(|&&name| name == key) {
                Some(&name) => {
                    taken.retain(|(n, _)| *n != name);
                    taken.push((name, value.to_owned()));
                    false
                }
                None => true,
            }
        })
        .collect();
    let mut rebuilt = base.to_owned();
    if !kept.is_empty() {
        rebuilt.push('?');
        rebuilt.push_str(&kept.join("&"));
    }
    if let Some(fragment) = fragment {
        rebuilt.push('#');
        rebuilt.push_str(fragment);
    }
    (rebuilt, taken)
}

/// Whether `e`, or an error it was caused by, is a TLS failure, and which.
pub(crate) fn tls_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<TlsError>() {
            return Some(tls.to_string());
        }
        if let Some(tls) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<TlsError>())
        {
            return Some(tls.to_string());
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_taken_out_and_the_rest_kept() {
        let (url, taken) = take_params(
            "postgres://u@h/db?sslmode=verify-full&application_name=x&sslrootcert=/ca.pem",
            &["sslmode", "sslrootcert"],
        );
        assert_eq!(url, "postgres://u@h/db?application_name=x");
        assert_eq!(
            taken,
            [
                ("sslmode", "verify-full".to_owned()),
                ("sslrootcert", "/ca.pem".to_owned())
            ]
        );
        let (url, taken) = take_params(
            "rediss://h:1/0?sslrootcert=/ca.pem#insecure",
            &["sslrootcert"],
        );
        assert_eq!(url, "rediss://h:1/0#insecure");
        assert_eq!(taken.len(), 1);
        assert_eq!(take_params("redis://h/0", &["x"]).0, "redis://h/0");
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_missing_ca_file_is_said_plainly() {
        let path = std::path::Path::new("/nonexistent/ca.pem");
        let e = client_config(Verify::Full, Some(path)).unwrap_err();
        assert!(
            e.contains("cannot read the CA file /nonexistent/ca.pem"),
            "{e}"
        );
    }
}

//! TLS to every registry, against the real servers and the throwaway CA
//! that `scripts/services.sh` makes: verified leases work; an unknown CA, or
//! a plain client where TLS is wanted, is refused with an error that says
//! so; and a connection a restarting server drops is not called a TLS problem.
//!
//! One test stops a server, so the tests of this file run one at a time.

#![cfg(feature = "remote")]

mod common;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use common::server::ALL;
use common::services::unknown_ca;
use flakegen::lease::backend::ReadRequest;
use flakegen::lease::{self, Lease, LeaseError};
use flakegen::{Builder, IdGenerator, Layout};

const ONE_ID_PER_TEST: Layout = Layout::builder().worker_bits(4).build_const();

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn a_verified_lease_over_tls_issues_and_releases() {
    let _serial = serial();
    for backend in ALL {
        let registry = lease::connect(&backend.tls_url()).unwrap();
        let lease = Lease::new(registry, "tls").ttl(Duration::from_secs(2));
        let generator = Builder::new()
            .layout(ONE_ID_PER_TEST)
            .lease(lease)
            .build_atomic()
            .unwrap_or_else(|e| panic!("{}: {e}", backend.name));
        generator.next_id().unwrap();
        generator.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    }
}

/// The first call's error, for a registry at `url`.
fn first_error(url: &str) -> LeaseError {
    let registry = lease::connect(url).unwrap();
    registry.read("tls", &ReadRequest::new(1)).unwrap_err()
}

#[test]
fn a_certificate_from_an_unknown_ca_is_refused_by_name() {
    let _serial = serial();
    for backend in ALL {
        let url = backend.tls_url();
        let ca = if url.starts_with("mysql") {
            "ssl-ca="
        } else if url.starts_with("kube") {
            "ca_file="
        } else {
            "sslrootcert="
        };
        let (base, rest) = url.split_once(ca).unwrap();
        let after = rest
            .split_once('&')
            .map_or(String::new(), |(_, r)| format!("&{r}"));
        let e = first_error(&format!("{base}{ca}{}{after}", unknown_ca()));
        assert!(
            matches!(e, LeaseError::Tls { .. }),
            "{}: {e:?}",
            backend.name
        );
        let message = e.to_string();
        assert!(message.contains("UnknownIssuer"), "{message}");
        assert!(message.contains(ca), "{message}");
    }
}

#[test]
fn a_plain_client_where_tls_is_wanted_is_told_so() {
    let _serial = serial();
    // Kubernetes' client has no plain form to be wrong with.
    for backend in ALL.iter().filter(|b| b.name != "kubernetes") {
        let url = backend.tls_url();
        // The same server, role and port, without TLS.
        let plain = match url.split_once("://") {
            Some(("rediss", rest)) => format!("redis://{}", rest.split('?').next().unwrap()),
            Some(("mysql", _)) => url.split('?').next().unwrap().to_owned(),
            Some(("etcds", rest)) => format!("etcd://{}", rest.split('?').next().unwrap()),
            _ => url.replace("sslmode=verify-full", "sslmode=disable"),
        };
        let e = first_error(&plain);
        assert!(
            matches!(e, LeaseError::TlsRequired { .. }),
            "{}: {e:?}",
            backend.name
        );
        let message = e.to_string();
        assert!(message.contains("TLS"), "{message}");
        assert!(!message.contains("check that the server runs"), "{message}");
    }
}

/// A server that goes away drops its connections, as a TLS-only port drops
/// a plain client: the two are told apart, and the restart is said as an
/// unreachable server, never as "use TLS".
#[test]
fn a_connection_dropped_by_a_stopping_server_is_not_a_tls_problem() {
    let _serial = serial();
    for backend in ALL {
        let registry = lease::connect(&backend.url()).unwrap();
        registry.read("reset", &ReadRequest::new(1)).unwrap();
        backend.services("stop", &[]);
        let dropped = registry.read("reset", &ReadRequest::new(1));
        backend.services("start", &[]);
        let e = dropped.unwrap_err();
        assert!(
            matches!(e, LeaseError::Unreachable { .. }),
            "{}: {e:?}",
            backend.name
        );
        let message = e.to_string();
        assert!(message.contains("check that the server runs"), "{message}");
        assert!(!message.contains("TLS"), "{message}");
        // And the next call connects again.
        registry.read("reset", &ReadRequest::new(1)).unwrap();
    }
}

//! Kubernetes' own traps, on a real kube-apiserver (`scripts/services.sh`):
//! many pods starting at once, a renewal that would bring a deleted Lease
//! back, and a token rotated or revoked under a running generator. The
//! lease contract and the fault test run on this registry too
//! (`tests/lease_contract.rs`, `tests/lease_faults`).
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --features kubernetes,inspect --test lease_kubernetes
//! ```

#![cfg(feature = "kubernetes")]

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::kubernetes::SERVER;
use flakegen::lease::backend::{ReadRequest, Registry};
use flakegen::lease::{self, Lease, LeaseError, LeaseState};
use flakegen::{Builder, IdGenerator, Layout};

fn namespace(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("kube-{what}-{}-{nanos}", std::process::id())
}

/// The test URL with its token read from `file`.
fn with_token(file: &str) -> String {
    let url = SERVER.url();
    let (base, query) = url.split_once('?').unwrap();
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some(("token_file", _)) => format!("token_file={file}"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// Waits until `condition` holds, for at most `within`.
fn eventually(what: &str, within: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// 64 pods starting at once in a new namespace: each gets a worker id of
/// its own, the compare-and-sets on one marker and on each record sorting
/// out the races (409 Conflict, then a read again).
#[test]
fn sixty_four_builds_at_once_each_get_their_own_id() {
    let ns = namespace("crowd");
    let url = SERVER.url();
    // Marked and aged first: the build's wait for a new namespace is not
    // what this measures.
    common::ready(&[&Lease::new(lease::connect(&url).unwrap(), ns.as_str())]);
    let start = Arc::new(Barrier::new(64));
    let builds: Vec<_> = (0..64)
        .map(|_| {
            let (url, ns, start) = (url.clone(), ns.clone(), Arc::clone(&start));
            thread::spawn(move || {
                let registry = lease::connect(&url).unwrap();
                let lease = Lease::new(registry, ns.as_str());
                start.wait();
                Builder::new()
                    .layout(Layout::TWITTER)
                    .lease(lease)
                    .build_atomic()
                    .unwrap()
            })
        })
        .collect();
    let generators: Vec<_> = builds.into_iter().map(|b| b.join().unwrap()).collect();
    let workers: BTreeSet<u64> = generators.iter().map(|g| g.worker()).collect();
    assert_eq!(workers.len(), 64, "{workers:?}");
    for g in generators {
        g.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    }
}

/// A holder's record deleted under it: its next renewal names the Lease's
/// uid, so the API server refuses it (409) rather than create the Lease
/// anew, as a PUT naming a deleted Lease's `resourceVersion` alone does
/// (201 Created). The record stays gone, and the holder knows it lost.
#[test]
fn a_renewal_never_brings_a_deleted_lease_back() {
    let ns = namespace("resurrect");
    let registry = lease::connect(&SERVER.url()).unwrap();
    let lease = Lease::new(Arc::clone(&registry), ns.as_str())
        .ttl(Duration::from_millis(1_500))
        .renew_every(Duration::from_millis(100))
        .reacquire(false);
    let g = Builder::new()
        .layout(Layout::TWITTER)
        .lease(lease)
        .build_atomic()
        .unwrap();
    let worker = g.worker();
    SERVER.services("wipe", &[&ns, &worker.to_string()]);
    eventually(
        "the holder to know its lease lost",
        Duration::from_secs(5),
        || g.lease().unwrap().state == LeaseState::Lost,
    );
    // Renewals would have come four times over by now.
    thread::sleep(Duration::from_millis(400));
    let snapshot = registry.read(&ns, &ReadRequest::new(1024)).unwrap();
    assert!(
        snapshot.records.iter().all(|r| r.worker != worker),
        "the deleted record came back: {:?}",
        snapshot.records
    );
}

/// The token file replaced, and every token the ServiceAccount had before
/// revoked (the ServiceAccount made again): the first renewal refused
/// (401) reads the file again and asks once more, and the lease never
/// lapses. A client that read it only every minute would lose the lease.
#[test]
fn a_token_rotated_and_revoked_is_read_again_at_the_first_refusal() {
    let file = SERVER.services("rotate-token", &["flakegen-rotate"]);
    let old = format!("{file}.old");
    std::fs::copy(&file, &old).unwrap();
    let ns = namespace("rotate");
    let registry = lease::connect(&with_token(&file)).unwrap();
    let lease = Lease::new(Arc::clone(&registry), ns.as_str())
        .ttl(Duration::from_millis(3_000))
        .renew_every(Duration::from_millis(200));
    let g = Builder::new()
        .layout(Layout::TWITTER)
        .lease(lease)
        .build_atomic()
        .unwrap();
    SERVER.services("rotate-token", &["flakegen-rotate"]);
    // The API server caches a token it accepted (about 10 s): the old one
    // is refused only once that has passed.
    let with_old = lease::connect(&with_token(&old)).unwrap();
    eventually("the old token refused", Duration::from_secs(30), || {
        matches!(
            with_old.read(&ns, &ReadRequest::new(1)),
            Err(LeaseError::Unauthorized { .. })
        )
    });
    let refused = SystemTime::now();
    // Renewals confirmed under the new token move the fence on, past
    // where the old token's last renewal could have put it, before the
    // lease could lapse (its TTL).
    eventually(
        "a renewal under the new token",
        Duration::from_secs(3),
        || g.lease().unwrap().fence > refused + Duration::from_millis(3_000),
    );
    let status = g.lease().unwrap();
    assert_eq!(status.state, LeaseState::Held, "{status:?}");
    g.next_id().unwrap();
    g.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
}

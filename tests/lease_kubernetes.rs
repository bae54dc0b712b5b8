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
use flakegen::lease::backend::{Expect, NewRecord, ReadRequest, Registry};
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
    let _serial = serial();
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
    let _serial = serial();
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
    let _serial = serial();
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

/// The tests that restore the API server's etcd stop it for everyone:
/// they, and the others of this file, run one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn held(holder: &str, version: u64, ttl_millis: u64, fence_unix_millis: u64) -> NewRecord<'_> {
    NewRecord {
        holder,
        version,
        ttl_millis,
        fence_unix_millis,
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The resourceVersion the API server gave the record of `worker`.
fn resource_version(ns: &str, worker: u64) -> u64 {
    let rv = SERVER.services("resource-version", &[ns, &worker.to_string()]);
    rv.trim()
        .parse()
        .unwrap_or_else(|_| panic!("no resourceVersion for {ns}/{worker}: {rv:?}"))
}

/// An etcd restore without `--bump-revision` gives revisions again (the
/// reference's R4): a holder whose last write got revision X, a restore
/// from before it, and another holder's write given X again. The stale
/// holder names X and the same uid, which the API server would take (200),
/// overwriting the new holder. Its last write is older than the TTL (the
/// outage was longer), so it reads the record first, finds another
/// version, and writes nothing.
#[test]
fn a_revision_given_again_after_a_restore_never_lets_a_stale_holder_write() {
    let _serial = serial();
    const TTL: u64 = 1_000;
    for _attempt in 0..3 {
        let ns = namespace("aba");
        let a = lease::connect(&SERVER.url()).unwrap();
        let marker = a.mark(&ns).unwrap();
        let expect = |version| Expect {
            marker_unix_millis: marker,
            version,
        };
        // The id handed out and given back: free, as the snapshot keeps it.
        assert!(
            a.swap(&ns, 0, expect(None), &held("a", 1, TTL, now_ms()))
                .unwrap()
                .is_some()
        );
        assert!(
            a.swap(&ns, 0, expect(Some(1)), &held("", 2, 0, now_ms()))
                .unwrap()
                .is_some()
        );
        SERVER.services("snapshot", &[]);
        // Taken again, and renewed: many revisions past the snapshot's.
        let mut version = 2;
        for next in 3..40 {
            let fence = now_ms() + TTL;
            assert!(
                a.swap(&ns, 0, expect(Some(version)), &held("a", next, TTL, fence))
                    .unwrap()
                    .is_some()
            );
            version = next;
        }
        let given = resource_version(&ns, 0);
        // Longer than the TTL: the stale holder's last write is older.
        SERVER.services("restore", &[&(TTL * 2).to_string()]);
        // The store brought to one revision short of `given`, and the id
        // (free again, as restored) taken by another holder: its write is
        // given `given` again, unless the server wrote meanwhile.
        if std::panic::catch_unwind(|| {
            SERVER.services("bump-revision", &[&(given - 1).to_string()])
        })
        .is_err()
        {
            continue;
        }
        let b = lease::connect(&SERVER.url()).unwrap();
        let snapshot = b.read(&ns, &ReadRequest::new(1)).unwrap();
        let free = snapshot
            .records
            .iter()
            .find(|r| r.worker == 0)
            .unwrap()
            .version;
        assert_eq!(free, 2, "the restore did not bring the free record back");
        let fence = now_ms() + 60_000;
        assert!(
            b.swap(&ns, 0, expect(Some(2)), &held("b", 100, 60_000, fence))
                .unwrap()
                .is_some()
        );
        if resource_version(&ns, 0) != given {
            continue;
        }
        let written = a.swap(
            &ns,
            0,
            expect(Some(version)),
            &held("a", 101, TTL, now_ms() + TTL),
        );
        assert_eq!(
            written.unwrap(),
            None,
            "the stale holder wrote over the new one"
        );
        let record = b.read(&ns, &ReadRequest::new(1)).unwrap().records;
        assert_eq!(record[0].holder, "b", "{record:?}");
        return;
    }
    panic!("in 3 tries, another holder's write was never given the revision again");
}

/// The documented limit of a restore (the reference's R1): the restored
/// store is consistent and old, and a new holder that never saw its later
/// versions cannot tell. Here the snapshot holds the only id free; a
/// holder A takes it and issues; the restore frees it again, and a new
/// holder B takes it at once. It is safe when the API server stays stopped
/// for the TTL and the skew allowance (A has stopped at its fence by then),
/// or when new holders wait that long themselves
/// (`Lease::wait_out_rollbacks`): B starts above every ID of A's. (With
/// neither, at a TTL longer than the restore takes, B issues A's IDs
/// again: the limit the docs state.)
#[test]
fn a_restore_nobody_saw_issues_no_id_twice_after_the_ttl_and_the_skew() {
    let _serial = serial();
    let one = Layout::builder().worker_bits(0).build().unwrap();
    // (TTL, outage the restore keeps at least, wait_out_rollbacks): the
    // restore itself stops the API server for about 4 s here, shorter
    // than the second case's TTL and skew.
    for (ttl, outage, wait_out) in [(2_000, 2_500, false), (10_000, 0, true)] {
        let ns = namespace("restore");
        let skew = 500;
        let lease = |reacquire| {
            Lease::new(lease::connect(&SERVER.url()).unwrap(), ns.as_str())
                .ttl(Duration::from_millis(ttl))
                .skew(Duration::from_millis(skew))
                .renew_every(Duration::from_millis(ttl / 10))
                .reacquire(reacquire)
                .wait_out_rollbacks(wait_out)
        };
        let build = |reacquire| {
            Builder::new()
                .layout(one)
                .lease(lease(reacquire))
                .build_atomic()
                .unwrap()
        };
        // The id handed out once and given back: free, as the snapshot
        // keeps it.
        common::ready(&[&lease(false)]);
        build(false)
            .shutdown()
            .wait(Lease::DEFAULT_TIMEOUT)
            .unwrap();
        SERVER.services("snapshot", &[]);
        let a = build(false);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (a_ids, b_ids) = thread::scope(|scope| {
            let issuing = scope.spawn(|| {
                let mut ids = vec![];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Ok(id) = a.try_next_id() {
                        ids.push(id);
                    }
                    thread::sleep(Duration::from_micros(500));
                }
                ids
            });
            thread::sleep(Duration::from_millis(300));
            SERVER.services("restore", &[&outage.to_string()]);
            let b = build(true);
            let mut b_ids = vec![];
            let until = Instant::now() + Duration::from_millis(500);
            while Instant::now() < until {
                b_ids.push(b.next_id().unwrap());
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            (issuing.join().unwrap(), b_ids)
        });
        let a_last = a_ids.iter().max().expect("A issued");
        assert!(
            b_ids.iter().all(|b| b > a_last),
            "TTL {ttl} ms, outage {outage} ms, wait_out_rollbacks {wait_out}: B issued at or \
             below A's last ID, {a_last}: {:?}",
            b_ids
                .iter()
                .filter(|b| *b <= a_last)
                .take(3)
                .collect::<Vec<_>>()
        );
    }
}

/// A host whose clock runs ahead takes no live lease early (see
/// `common::held_a_ttl_from_its_first_sight`).
#[test]
fn a_lease_that_looks_expired_is_held_a_ttl_from_its_first_sight() {
    let _serial = serial();
    common::held_a_ttl_from_its_first_sight(&SERVER.url(), &namespace("sighted"));
}

//! Leases on the etcd cluster of `scripts/services.sh` (three members):
//! what a consensus store buys, a member lost at no cost, and what it
//! costs, a restore from a snapshot detected as a loss; and what a client
//! is told when the cluster or its URL is wrong.
//!
//! ```text
//! eval "$(scripts/services.sh start etcd)"
//! cargo test --features etcd --test lease_etcd
//! ```
//!
//! The tests kill, freeze and restore members, so they run one at a time.

#![cfg(feature = "etcd")]

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::etcd::{MEMBERS, SERVER};
use common::replicated::Replicated;
use common::services::unknown_ca;
use flakegen::lease::backend::{Expect, NewRecord, ReadRequest, Registry};
use flakegen::lease::{self, Lease, LeaseError};
use flakegen::{Builder, IdGenerator, IssueError, Layout, Snowflake};

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The cluster, made whole: every member running, a leader change behind
/// it, and a snapshot to restore.
fn cluster() -> Replicated {
    Replicated::new(&SERVER)
}

fn namespace(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

/// Three generators in one namespace, each issuing on a thread of its own
/// until told to stop: every ID, and every refusal.
struct Issuers {
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<(Vec<Snowflake>, Vec<IssueError>)>>,
}

impl Issuers {
    fn start(lease: &Lease, count: usize) -> Issuers {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let generator = Builder::new()
                    .layout(Layout::TWITTER)
                    .lease(lease.clone())
                    .build_atomic()
                    .unwrap();
                let stop = Arc::clone(&stop);
                thread::spawn(move || {
                    let (mut ids, mut refused) = (Vec::new(), Vec::new());
                    while !stop.load(Ordering::Relaxed) {
                        match generator.next_id() {
                            Ok(id) => ids.push(id),
                            Err(e) => refused.push(e),
                        }
                        // About 20,000 IDs a second each: enough to see a gap.
                        if ids.len() % 20 == 0 {
                            thread::sleep(Duration::from_millis(1));
                        }
                    }
                    let _ = generator.shutdown().wait(Lease::DEFAULT_TIMEOUT);
                    (ids, refused)
                })
            })
            .collect();
        Issuers { stop, threads }
    }

    /// Stops them: every ID, and every refusal.
    fn stop(self) -> (Vec<Snowflake>, Vec<IssueError>) {
        self.stop.store(true, Ordering::Relaxed);
        let (mut ids, mut refused) = (Vec::new(), Vec::new());
        for thread in self.threads {
            let (i, r) = thread.join().unwrap();
            ids.extend(i);
            refused.extend(r);
        }
        (ids, refused)
    }
}

fn duplicates(ids: &[Snowflake]) -> usize {
    ids.len() - ids.iter().collect::<HashSet<_>>().len()
}

/// The leader killed while three generators issue, then started again:
/// a majority stands throughout, so no generator is refused even once,
/// and no ID repeats, at a TTL of 3 s: an election and a reconnection
/// (which carries the token, not a new login) fit well within the fence's
/// lead.
#[test]
fn the_leader_killed_costs_no_refusal() {
    let _serial = serial();
    let cluster = cluster();
    let lease = Lease::new(lease::connect(&SERVER.url()).unwrap(), namespace("leader"))
        .ttl(Duration::from_secs(3))
        .skew(Duration::from_secs(1));
    let issuers = Issuers::start(&lease, 3);
    thread::sleep(Duration::from_secs(1));
    let leader = cluster.services("leader", &[]);
    cluster.services("kill", &[&leader]);
    thread::sleep(Duration::from_secs(5));
    let after = cluster.services("leader", &[]);
    cluster.services("revive", &[&leader]);
    thread::sleep(Duration::from_secs(2));
    let (ids, refused) = issuers.stop();
    println!(
        "etcd: leader {leader} killed for 5 s ({after} led meanwhile): {} IDs, {} refusals, \
         {} duplicates",
        ids.len(),
        refused.len(),
        duplicates(&ids)
    );
    assert_ne!(after, leader, "no new leader was elected");
    assert!(
        refused.is_empty(),
        "refused: {:?}",
        &refused[..refused.len().min(3)]
    );
    assert_eq!(duplicates(&ids), 0);
}

/// A restore from a snapshot brings back records older than the fences
/// their holders use: a detected loss. The holders run to their fences,
/// lease again once the TTL and the skew have passed since the loss was
/// found, and issue again; a build after the restore waits as long; no ID
/// repeats.
#[test]
fn a_snapshot_restore_is_a_detected_loss() {
    let _serial = serial();
    let cluster = cluster();
    let ttl = Duration::from_secs(3);
    let skew = Duration::from_secs(1);
    let lease = Lease::new(lease::connect(&SERVER.url()).unwrap(), namespace("restore"))
        .ttl(ttl)
        .skew(skew);
    let issuers = Issuers::start(&lease, 2);
    thread::sleep(Duration::from_secs(2));
    let restored_at = SystemTime::now();
    cluster.services("restore", &[]);
    let restored = Instant::now();
    // A build right after: it must not start below the holders' fences.
    let late = Builder::new()
        .layout(Layout::TWITTER)
        .max_wait(Duration::from_secs(10))
        .lease(lease.clone())
        .build_atomic()
        .unwrap_or_else(|e| panic!("a build after the restore: {e}"));
    let first = late.next_id().unwrap();
    let first_at = Layout::TWITTER.time_of(Layout::TWITTER.decode(first).unwrap().timestamp);
    // The holders heal: they issue again within the TTL, the skew and 2 s.
    let bound = ttl + skew + Duration::from_secs(2);
    thread::sleep(bound.saturating_sub(restored.elapsed()) + Duration::from_millis(500));
    let mut ids = vec![first];
    for _ in 0..1_000 {
        ids.push(late.next_id().unwrap());
    }
    let (held, refused) = issuers.stop();
    ids.extend(&held);
    let after_loss = held
        .iter()
        .filter(|id| {
            let ms = Layout::TWITTER.time_of(Layout::TWITTER.decode(**id).unwrap().timestamp);
            ms >= restored_at + ttl
        })
        .count();
    println!(
        "etcd: restore: the build after it started {} ms after the restore; {} IDs from the \
         holders, {after_loss} after the loss, {} refusals; {} duplicates",
        first_at
            .duration_since(restored_at)
            .map_or(0, |d| d.as_millis()),
        held.len(),
        refused.len(),
        duplicates(&ids)
    );
    assert!(
        first_at >= restored_at + ttl,
        "a build after the restore started {:?} after it, before the TTL",
        first_at.duration_since(restored_at)
    );
    assert!(
        !refused.is_empty(),
        "the holders were never refused: no loss seen"
    );
    assert!(
        after_loss > 0,
        "the holders did not issue again after the loss"
    );
    assert_eq!(duplicates(&ids), 0);
    drop(late);
}

/// A write that names what this client last knew of a record (a
/// renewal, a build's grant), without reading it first, can land in a
/// cluster restored since: the restore brings back the record, the
/// revision that wrote it and the history it was written under, just as
/// the write knew them. Only the answer tells: its raft term below the one
/// this client saw before the restore, or another cluster's id. The write
/// is then not taken for done.
fn a_write_into_a_restored_cluster_is_not_taken_for_done(new_term: bool, token: &[&str]) {
    let _serial = serial();
    let cluster = cluster();
    let registry = lease::connect(&SERVER.url()).unwrap();
    let ns = namespace("rewound");
    let request = ReadRequest::new(4);
    let marker = match registry.read(&ns, &request).unwrap().marker_unix_millis {
        Some(marker) => marker,
        None => registry.mark(&ns).unwrap(),
    };
    let held = |version| NewRecord {
        holder: "holder",
        version,
        ttl_millis: 60_000,
        fence_unix_millis: 1,
    };
    let at = |version| Expect {
        marker_unix_millis: marker,
        version,
    };
    assert!(registry.swap(&ns, 0, at(None), &held(1)).unwrap().is_some());
    // The cluster with the record in it; maybe a new term, which this
    // client sees; then the cluster as it was.
    cluster.services("snapshot", &[]);
    if new_term {
        cluster.services("elect", &[]);
        registry.read(&ns, &request).unwrap();
    }
    cluster.services("restore", token);
    assert_eq!(
        registry.swap(&ns, 0, at(Some(1)), &held(2)).unwrap(),
        None,
        "a renewal that landed in the restored cluster was taken for done"
    );
}

#[test]
fn a_write_into_a_cluster_restored_to_an_earlier_term_is_not_taken_for_done() {
    a_write_into_a_restored_cluster_is_not_taken_for_done(true, &[]);
}

#[test]
fn a_write_into_a_cluster_restored_under_a_new_id_is_not_taken_for_done() {
    let token = namespace("flakegen-rebuilt");
    a_write_into_a_restored_cluster_is_not_taken_for_done(false, &[&token]);
}

/// A lease over TLS, verified against the test CA; an unknown CA refused by
/// name; each side told when the other speaks no TLS.
#[test]
fn tls_is_verified_and_a_mismatch_is_said() {
    let _serial = serial();
    let _cluster = cluster();
    let registry = lease::connect(&SERVER.tls_url()).unwrap();
    let generator = Builder::new()
        .layout(Layout::TWITTER)
        .lease(Lease::new(registry, namespace("tls")))
        .build_atomic()
        .unwrap();
    generator.next_id().unwrap();
    generator.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();

    let unknown = SERVER.tls_url().replace(
        &SERVER
            .tls_url()
            .split("sslrootcert=")
            .nth(1)
            .unwrap()
            .to_owned(),
        &unknown_ca(),
    );
    let e = lease::connect(&unknown)
        .unwrap()
        .read("tls", &ReadRequest::new(1))
        .unwrap_err();
    assert!(matches!(e, LeaseError::Tls { .. }), "{e:?}");
    assert!(e.to_string().contains("UnknownIssuer"), "{e}");

    // TLS asked of the plain ports.
    let tls_at_plain = format!(
        "{}?sslrootcert={}",
        SERVER.url().replace("etcd://", "etcds://"),
        SERVER.tls_url().split("sslrootcert=").nth(1).unwrap()
    );
    let e = lease::connect(&tls_at_plain)
        .unwrap()
        .read("tls", &ReadRequest::new(1))
        .unwrap_err();
    assert!(
        matches!(e, LeaseError::WrongServer { wanted: "TLS", .. }),
        "{e:?}"
    );
    // A plain client at the TLS ports.
    let plain_at_tls = SERVER
        .tls_url()
        .replace("etcds://", "etcd://")
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    let e = lease::connect(&plain_at_tls)
        .unwrap()
        .read("tls", &ReadRequest::new(1))
        .unwrap_err();
    assert!(matches!(e, LeaseError::TlsRequired { .. }), "{e:?}");
    assert!(e.to_string().contains("etcds://"), "{e}");
}

/// A wrong password, and a cluster without a majority: each said as such,
/// with what to do, within the call's bound.
#[test]
fn credentials_and_quorum_are_said() {
    let _serial = serial();
    let cluster = cluster();
    let wrong = SERVER.url().replace(":flakegen-test@", ":wrong@");
    let e = lease::connect(&wrong)
        .unwrap()
        .read("errors", &ReadRequest::new(1))
        .unwrap_err();
    assert!(matches!(e, LeaseError::Unauthorized { .. }), "{e:?}");
    assert!(e.to_string().contains("user name and password"), "{e}");
    assert!(
        !e.to_string().contains("wrong"),
        "the password was printed: {e}"
    );

    let leader = cluster.services("leader", &[]);
    let follower = MEMBERS.iter().find(|&&m| m != leader).unwrap();
    cluster.services("kill", &[&leader]);
    cluster.services("kill", &[follower]);
    let started = Instant::now();
    let e = lease::connect(&SERVER.url())
        .unwrap()
        .read("errors", &ReadRequest::new(1))
        .unwrap_err();
    let took = started.elapsed();
    cluster.services("revive", &[follower]);
    cluster.services("revive", &[&leader]);
    assert!(matches!(e, LeaseError::NoQuorum { .. }), "{e:?}");
    assert!(e.to_string().contains("majority"), "{e}");
    assert!(took < Lease::DEFAULT_TIMEOUT * 2, "took {took:?}");
}

/// A host whose clock runs ahead takes no live lease early (see
/// `common::held_a_ttl_from_its_first_sight`).
#[test]
fn a_lease_that_looks_expired_is_held_a_ttl_from_its_first_sight() {
    let _serial = serial();
    common::held_a_ttl_from_its_first_sight(&SERVER.url(), &namespace("sighted"));
}

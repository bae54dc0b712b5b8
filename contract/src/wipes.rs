//! Rule 6 against data deleted by hand, while generators run: everything of
//! flakegen's (`FLUSHALL`, both tables dropped, the prefix deleted), one
//! namespace, one record. Nothing in an emptied store can prove it was never
//! used, so nothing is issued twice, whatever was deleted: new holders and
//! healing ones wait the TTL and the skew; and every id can be leased again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use flakegen::lease::{LeaseError, StartCause};
use flakegen::{IdGenerator, IssueError, Layout, Snowflake};

use crate::store::{SKEW, Store, TTL, namespace, now_ms};
use crate::support::assert_strictly_increasing;
use crate::{Fixture, Wipe};

/// Four ids, 1 ms units.
const FOUR: Layout = Layout::builder().worker_bits(2).build_const();

fn unix_ms(id: Snowflake) -> u64 {
    FOUR.unix_millis_of(FOUR.decode(id).unwrap().timestamp)
}

fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// What a generator issued while a wipe happened, by generator.
struct Issued {
    ids: Mutex<Vec<Vec<Snowflake>>>,
}

/// Issues with every generator of `generators` (those added later too,
/// through `more`) until `stop`, each on a thread of its own.
fn issue_all(generators: &[&dyn IdGenerator], stop: &AtomicBool, issued: &Issued, name: &str) {
    thread::scope(|scope| {
        for (i, g) in generators.iter().enumerate() {
            scope.spawn(move || {
                let mut ids = vec![];
                while !stop.load(Ordering::Relaxed) {
                    match g.try_next_id() {
                        Ok(id) => ids.push(id),
                        Err(IssueError::LeaseLost { .. } | IssueError::WouldBlock { .. }) => {}
                        Err(e) => panic!("{name}: generator {i}: {e}"),
                    }
                    thread::sleep(Duration::from_micros(300));
                }
                let mut all = issued.ids.lock().unwrap_or_else(PoisonError::into_inner);
                all[i] = ids;
            });
        }
    });
}

/// Generators A and B hold ids and issue; `wipe` deletes data under them;
/// C builds at once and issues. No ID is issued twice among the three; A's
/// lease is gone, and its heal waits the TTL and the skew from the wipe; a
/// build right after a wipe of its namespace waits as long.
fn wipe_under_generators(fixture: &dyn Fixture, kind: &str) {
    let store = Store::new(fixture);
    let name = store.name();
    let ns = namespace(&format!("wipe-{kind}"));
    let build = || {
        store
            .leased(FOUR, &ns)
            .max_wait(Duration::from_secs(2))
            .build_atomic()
            .unwrap()
    };
    let (a, b) = (build(), build());
    let wipe = match kind {
        "everything" => Wipe::Everything,
        "namespace" => Wipe::Namespace(&ns),
        _ => Wipe::Record(&ns, a.worker()),
    };
    let stop = AtomicBool::new(false);
    let issued = Issued {
        ids: Mutex::new(vec![vec![]; 3]),
    };
    let mut before = 0;
    let mut wiped = 0;
    let c = std::sync::OnceLock::new();
    thread::scope(|scope| {
        let issuers = scope.spawn(|| issue_all(&[&a, &b], &stop, &issued, name));
        thread::sleep(Duration::from_millis(150));
        before = now_ms();
        store.wipe(wipe);
        wiped = now_ms();
        let c = c.get_or_init(build);
        let c_ids = scope.spawn(|| {
            let mut ids = vec![];
            while !stop.load(Ordering::Relaxed) {
                if let Ok(id) = c.try_next_id() {
                    ids.push(id);
                }
                thread::sleep(Duration::from_micros(300));
            }
            ids
        });
        thread::sleep(TTL * 3 + SKEW * 3 + Duration::from_secs(1));
        stop.store(true, Ordering::Relaxed);
        issuers.join().unwrap();
        let c_ids = c_ids.join().unwrap();
        issued.ids.lock().unwrap_or_else(PoisonError::into_inner)[2] = c_ids;
    });
    let c = c.get().expect("built in the scope");
    let ids = issued
        .ids
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let waited = before + millis(TTL + SKEW);
    // A: below its old lease's fence, or past the wait. That fence is not
    // what `a.lease()` says after the wipe: a renewal that landed just
    // before the wipe may still be on its way back to A, which then issues
    // up to it. But it lies at most a TTL past the wipe (rule 3: written
    // before the wipe, at most a TTL ahead of A's clock then), so an ID at
    // or past that is a new lease's.
    let old_lease_ends = wiped + millis(TTL);
    let healed: Vec<u64> = ids[0]
        .iter()
        .map(|&id| unix_ms(id))
        .filter(|&ms| ms >= old_lease_ends)
        .collect();
    assert!(
        !healed.is_empty(),
        "{name}: after a wipe of {kind}, the holder whose lease it took never issued again \
         (its lease: {:?})",
        a.lease()
    );
    assert!(
        healed.iter().all(|&ms| ms >= waited),
        "{name}: after a wipe of {kind}, the holder whose lease it took issued at unix ms {} \
         under a new lease, before the TTL and the skew had passed since the wipe ({waited}): \
         it trusted an emptied registry",
        healed[0]
    );
    if kind != "record" {
        let first = ids[2].iter().map(|&id| unix_ms(id)).min();
        assert!(
            first.is_some_and(|ms| ms >= waited),
            "{name}: a build right after a wipe of {kind} issued at unix ms {first:?}, before \
             the TTL and the skew had passed since the wipe ({waited}): it trusted an emptied \
             registry ({:?})",
            c.lease()
        );
    }
    let mut all: Vec<Snowflake> = vec![];
    for (i, ids) in ids.iter().enumerate() {
        assert_strictly_increasing(ids, name);
        assert!(!ids.is_empty(), "{name}: generator {i} issued nothing");
        all.extend(ids);
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        count,
        "{name}: {} IDs issued twice after a wipe of {kind}",
        count - all.len()
    );
}

/// Everything of flakegen's deleted under running generators (`FLUSHALL`,
/// both tables dropped, the prefix deleted): nothing is issued twice.
pub fn a_wipe_of_everything_issues_no_id_twice(fixture: &dyn Fixture) {
    wipe_under_generators(fixture, "everything");
}

/// A namespace deleted under its running generators: nothing is issued
/// twice.
pub fn a_wipe_of_a_namespace_issues_no_id_twice(fixture: &dyn Fixture) {
    wipe_under_generators(fixture, "namespace");
}

/// A holder's record deleted under it: nothing is issued twice, and the
/// holder waits before it issues again.
pub fn a_wipe_of_a_record_issues_no_id_twice(fixture: &dyn Fixture) {
    wipe_under_generators(fixture, "record");
}

/// After each kind of wipe, every id of the namespace can be leased again:
/// none is lost for good, and no acquisition loses its races on a record
/// that no longer exists.
pub fn every_id_can_be_leased_again_after_a_wipe(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    for kind in ["record", "namespace", "everything"] {
        let ns = namespace(&format!("again-{kind}"));
        let build = || store.leased(FOUR, &ns).build_atomic();
        let all: Vec<_> = (0..4).map(|_| build().unwrap()).collect();
        for g in &all {
            g.next_id().unwrap();
            g.shutdown().wait(flakegen::lease::DEFAULT_TIMEOUT).unwrap();
        }
        store.wipe(match kind {
            "record" => Wipe::Record(&ns, 2),
            "namespace" => Wipe::Namespace(&ns),
            _ => Wipe::Everything,
        });
        let again: Vec<_> = (0..4)
            .map(|i| {
                build().unwrap_or_else(|e| {
                    panic!("{name}: after a wipe of {kind}, build {i} of 4 was refused: {e}")
                })
            })
            .collect();
        let mut workers: Vec<u64> = again.iter().map(|g| g.worker()).collect();
        workers.sort_unstable();
        assert_eq!(workers, [0, 1, 2, 3], "{name}: after a wipe of {kind}");
        for g in &again {
            g.next_id().unwrap();
        }
    }
}

/// A namespace declared new before its first build starts at once, and
/// cannot be declared new again once used; where the registry cannot tell
/// a new namespace from an emptied one, it refuses, and the first build
/// waits the TTL and the skew.
pub fn a_namespace_declared_new_starts_at_once(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let ns = namespace("declared");
    let declared = registry.declare_new(&ns);
    let before = now_ms();
    let g = store.leased(FOUR, &ns).build_atomic().unwrap();
    let status = g.lease().unwrap();
    let starts = millis(status.starts.duration_since(std::time::UNIX_EPOCH).unwrap());
    match declared {
        Ok(()) => {
            assert!(
                starts <= before,
                "{name}: a namespace declared new waited until unix ms {starts} ({:?})",
                status.start_cause
            );
            g.next_id().unwrap();
            assert!(
                matches!(registry.declare_new(&ns), Err(LeaseError::NotNew { .. })),
                "{name}: a namespace in use was declared new"
            );
        }
        Err(LeaseError::NotNew { .. }) => {
            // Past the marker the build wrote, or one a loss left earlier
            // (another test's, on a registry shared by a suite).
            assert!(
                matches!(status.start_cause, StartCause::Marker { marker_unix_millis }
                    if marker_unix_millis > 0 && starts >= marker_unix_millis + millis(TTL + SKEW)),
                "{name}: a registry that cannot declare a namespace new let its first build \
                 start at unix ms {starts}, before the TTL and the skew past its marker \
                 ({status:?})"
            );
        }
        Err(e) => panic!("{name}: declaring a namespace new failed: {e}"),
    }
}

/// A namespace wiped under two holders just after B renewed, then declared
/// new (an operator's mistake the registry cannot refuse: nothing of the
/// namespace is left), and a build taking A's id at once, as a declared
/// namespace lets it. A, displaced, heals at its fence onto B's id, whose
/// record the wipe took while B still issues below its own, later fence.
/// The declaration's marker vouches for every id, so only rule 6's other
/// half keeps A off B's IDs: a holder that saw its lease gone trusts no
/// emptied registry, and its next lease starts the TTL and the skew past
/// the moment it saw it ([`StartCause::Healing`]). A registry that refuses
/// the declaration (it keeps a trace of the namespace, as `MemoryRegistry`
/// does) keeps them apart by its marker: then no ID may be issued twice
/// either. A TTL of 6 s, renewed every 2 s: the wipe, the declaration and
/// the build land before A's fence on a busy machine too.
pub fn holders_from_before_a_wipe_trust_no_declaration_after_it(fixture: &dyn Fixture) {
    const TWO: Layout = Layout::builder().worker_bits(1).build_const();
    const TTL_HERE: Duration = Duration::from_secs(6);
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let lease = |ns: &str| {
        store
            .lease(ns)
            .ttl(TTL_HERE)
            .renew_every(Duration::from_secs(2))
    };
    for _attempt in 0..3 {
        let ns = namespace("declared-after-wipe");
        let build = |lease: flakegen::lease::Lease| {
            flakegen::Builder::new()
                .layout(TWO)
                .lease(lease)
                .build_atomic()
                .unwrap()
        };
        let a = build(lease(&ns));
        // B stays down once it loses its lease: A is the only one to heal.
        let b = build(lease(&ns).reacquire(false));
        let stop = AtomicBool::new(false);
        let issued = Issued {
            ids: Mutex::new(vec![vec![]; 2]),
        };
        let (mut arranged, mut refused) = (false, false);
        thread::scope(|scope| {
            let issuers = scope.spawn(|| issue_all(&[&a, &b], &stop, &issued, name));
            // Right after one of B's renewals: B's fence is then the later
            // one, so that A, healing when it reaches its own, would issue
            // on B's id while B still does.
            let renewed = b.lease().unwrap().fence;
            let deadline = std::time::Instant::now() + TTL_HERE * 5;
            while b.lease().unwrap().fence == renewed {
                if std::time::Instant::now() > deadline {
                    // The issuers stop first: the scope waits for them.
                    stop.store(true, Ordering::Relaxed);
                    panic!(
                        "{name}: B renewed nothing in {:?} ({:?})",
                        TTL_HERE * 5,
                        b.lease()
                    );
                }
                thread::sleep(Duration::from_millis(5));
            }
            store.wipe(Wipe::Namespace(&ns));
            let c = match registry.declare_new(&ns) {
                Ok(()) => Some(build(lease(&ns))),
                Err(LeaseError::NotNew { .. }) => {
                    refused = true;
                    None
                }
                Err(e) => panic!("{name}: declaring a wiped namespace new failed: {e}"),
            };
            arranged = c.as_ref().is_some_and(|c| c.worker() == a.worker());
            thread::sleep(TTL_HERE * 2 + SKEW + Duration::from_millis(500));
            stop.store(true, Ordering::Relaxed);
            issuers.join().unwrap();
        });
        let ids = issued
            .ids
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let b_ids: std::collections::HashSet<Snowflake> = ids[1].iter().copied().collect();
        let twice = ids[0].iter().filter(|id| b_ids.contains(id)).count();
        assert_eq!(
            twice, 0,
            "{name}: {twice} IDs issued by both holders from before a wipe, after the \
             namespace was declared new: a healing holder trusted the declaration"
        );
        if refused {
            return;
        }
        if arranged {
            let healed = ids[0]
                .iter()
                .any(|&id| TWO.decode(id).unwrap().worker == b.worker());
            assert!(
                healed,
                "{name}: A never healed onto B's id ({:?})",
                a.lease()
            );
            return;
        }
    }
    panic!(
        "{name}: three times, the build after the declaration did not take A's id: the \
         scenario could not be arranged"
    );
}

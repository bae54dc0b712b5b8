//! Rule 6 against data deleted by hand, while generators run: everything of
//! flakegen's (`FLUSHALL`, both tables dropped, the prefix deleted), one
//! namespace, one record. Nothing in an emptied store can prove it was never
//! used, so nothing is issued twice, whatever was deleted: new holders and
//! healing ones wait the TTL and the skew; and every id can be leased again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use flakegen::lease::backend::{Expect, NewRecord};
use flakegen::lease::{Lease, Readiness};
use flakegen::{AtomicGenerator, IdGenerator, IssueError, Layout, Snowflake};

use crate::store::{SKEW, Store, TTL, namespace, now_ms, patiently};
use crate::support::{StopOnDrop, assert_strictly_increasing};
use crate::{Fixture, Wipe};

/// Four ids, 1 ms units.
const FOUR: Layout = Layout::builder().worker_bits(2).build_const();
/// One worker id: a new build must take the holder's.
const ONE: Layout = Layout::builder().worker_bits(0).build_const();

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

/// Every ID `generator` issues, one about every 300 µs, until `stop`.
fn issue_until(generator: &dyn IdGenerator, stop: &AtomicBool) -> Vec<Snowflake> {
    let mut ids = vec![];
    while !stop.load(Ordering::Relaxed) {
        if let Ok(id) = generator.try_next_id() {
            ids.push(id);
        }
        thread::sleep(Duration::from_micros(300));
    }
    ids
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

/// A generator leased in `ns`, its build asked again while the registry
/// stalls, that waits at most 2 s for a unit.
fn patient_build(store: &Store<'_>, layout: Layout, ns: &str) -> AtomicGenerator {
    patiently(store.name(), "a build", || {
        store
            .leased(layout, ns)
            .max_wait(Duration::from_secs(2))
            .build_atomic()
    })
}

/// Generators A and B hold ids and issue; `wipe` deletes data under them;
/// C builds at once and issues. No ID is issued twice among the three; A's
/// lease is gone, and its heal waits the TTL and the skew from the wipe; a
/// build right after a wipe of its namespace waits as long.
fn wipe_under_generators(fixture: &dyn Fixture, kind: &str) {
    let store = Store::new(fixture);
    let name = store.name();
    let ns = namespace(&format!("wipe-{kind}"));
    let build = || patient_build(&store, FOUR, &ns);
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
        // A build that fails ends the rule, not only this closure.
        let _stop = StopOnDrop(&stop);
        let issuers = scope.spawn(|| issue_all(&[&a, &b], &stop, &issued, name));
        thread::sleep(Duration::from_millis(150));
        before = now_ms();
        store.wipe(wipe);
        wiped = now_ms();
        let c = c.get_or_init(build);
        let c_ids = scope.spawn(|| issue_until(c, &stop));
        thread::sleep(TTL * 3 + SKEW * 3 + Duration::from_secs(1));
        stop.store(true, Ordering::Relaxed);
        issuers.join().unwrap();
        let c_ids = c_ids.join().unwrap();
        issued.ids.lock().unwrap_or_else(PoisonError::into_inner)[2] = c_ids;
    });
    let c = c.get().expect("built in the scope");
    let mut ids = issued
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
    // A heals by itself, on a busy machine later than the others stopped:
    // it is given 30 s more, alone.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ids[0].iter().any(|&id| unix_ms(id) >= old_lease_ends) && Instant::now() < deadline {
        if let Ok(id) = a.try_next_id() {
            ids[0].push(id);
        }
        thread::sleep(Duration::from_millis(1));
    }
    let healed: Vec<u64> = ids[0]
        .iter()
        .map(|&id| unix_ms(id))
        .filter(|&ms| ms >= old_lease_ends)
        .collect();
    assert!(
        !healed.is_empty(),
        "{name}: after a wipe of {kind}, the holder whose lease it took did not issue again \
         within 30 s (its lease: {:?})",
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

/// A namespace's marker deleted under its holder, its records kept, and a
/// new build for the same id (a layout of one): no ID is issued twice.
///
/// A registry whose swap checks the marker with the record, in one step,
/// ends the holder's lease at its next renewal. One that cannot
/// (`MarkerCheck::ConfirmedFirst`: Kubernetes) lets the
/// holder renew its record, now void, until the new build takes it over
/// by a compare-and-set on that same record, past the fence the holder
/// last confirmed; the holder's next renewal then fails, and it stops at
/// that fence. A takeover that wrote around the record, or that started
/// below its fence, issues IDs twice here.
pub fn a_marker_deleted_under_its_holder_issues_no_id_twice(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let ns = namespace("wipe-marker");
    let build = || patient_build(&store, ONE, &ns);
    let a = build();
    let stop = AtomicBool::new(false);
    let issued = Issued {
        ids: Mutex::new(vec![vec![]; 2]),
    };
    thread::scope(|scope| {
        // A build that fails ends the rule, not only this closure.
        let _stop = StopOnDrop(&stop);
        let holder = scope.spawn(|| issue_all(&[&a], &stop, &issued, name));
        thread::sleep(Duration::from_millis(150));
        store.wipe(Wipe::Marker(&ns));
        let b = build();
        let stop = &stop;
        let b_ids = scope.spawn(move || issue_until(&b, stop));
        thread::sleep(TTL * 3 + SKEW * 3);
        stop.store(true, Ordering::Relaxed);
        holder.join().unwrap();
        let b_ids = b_ids.join().unwrap();
        issued.ids.lock().unwrap_or_else(PoisonError::into_inner)[1] = b_ids;
    });
    let ids = issued
        .ids
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let mut all: Vec<Snowflake> = vec![];
    for ids in &ids {
        assert_strictly_increasing(ids, name);
        all.extend(ids);
    }
    assert!(
        !ids[1].is_empty(),
        "{name}: the build after the marker was deleted issued nothing"
    );
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        count,
        "{name}: {} IDs issued twice after the marker was deleted under its holder",
        count - all.len()
    );
}

/// Every id of a namespace held, and one record far below the high-water
/// mark deleted: a build finds it, moving its probe through the ids below
/// the mark a window at a time (`Registry::read`, obligation 5), and takes
/// it once the loss rule's wait is over (rule 6). A registry that leaves
/// out the probe's records, or a protocol that probes one window only,
/// finds nothing free.
pub fn a_record_gone_far_below_the_mark_is_leased_again(fixture: &dyn Fixture) {
    // 512 ids: a single window of 64 misses the gone one 7 times in 8.
    const MANY: Layout = Layout::builder().worker_bits(9).build_const();
    const GONE: u64 = 300;
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let ns = namespace("gone-far");
    let marker = registry.mark(&ns).unwrap();
    let expect = Expect {
        marker_unix_millis: marker,
        version: None,
    };
    // The highest first: the high-water mark rises once.
    for worker in (0..MANY.max_worker() + 1).rev() {
        let held = NewRecord {
            holder: "another",
            version: 1,
            ttl_millis: 600_000,
            fence_unix_millis: now_ms() + 600_000,
        };
        let written = registry.swap(&ns, worker, expect, &held).unwrap();
        assert!(written.is_some(), "{name}: could not write id {worker}");
    }
    store.wipe(Wipe::Record(&ns, GONE));
    let generator = store
        .leased(MANY, &ns)
        .max_wait((TTL + SKEW) * 4)
        .build_atomic()
        .unwrap_or_else(|e| {
            panic!(
                "{name}: with every id held but {GONE}, whose record was deleted, a build \
                 found none free: {e}"
            )
        });
    assert_eq!(generator.worker(), GONE, "{name}");
    generator.next_id().unwrap();
}

/// After a wipe of a record or of a namespace, every id of the namespace
/// can be leased again: none is lost for good, and no acquisition loses
/// its races on a record that no longer exists.
pub fn every_id_can_be_leased_again_after_a_wipe(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    for kind in ["record", "namespace"] {
        lease_every_id_again(&store, kind);
    }
}

/// After a wipe of everything of flakegen's, every id of a namespace can
/// be leased again, as after a wipe of less.
pub fn every_id_can_be_leased_again_after_a_wipe_of_everything(fixture: &dyn Fixture) {
    lease_every_id_again(&Store::new(fixture), "everything");
}

/// Every id of a namespace written, `kind` wiped, and every id leased
/// again: on terms a busy machine cannot break, since a lease lost to a
/// late renewal would be taken again on another id, and the ids counted
/// would move under the rule.
fn lease_every_id_again(store: &Store<'_>, kind: &str) {
    let name = store.name();
    let ns = namespace(&format!("again-{kind}"));
    let build = || store.leased_steadily(FOUR, &ns).build_atomic();
    // Every id's record written, free, as holders leave it when they
    // release: nothing to wait for before the wipe.
    for worker in 0..4 {
        store.put(&ns, worker, "", 0, 0);
    }
    store.wipe(match kind {
        "record" => Wipe::Record(&ns, 2),
        "namespace" => Wipe::Namespace(&ns),
        _ => Wipe::Everything,
    });
    let again: Vec<_> = (0..4)
        .map(|i| {
            patiently(
                name,
                &format!("after a wipe of {kind}, build {i} of 4"),
                build,
            )
        })
        .collect();
    let mut workers: Vec<u64> = again.iter().map(|g| g.worker()).collect();
    workers.sort_unstable();
    assert_eq!(workers, [0, 1, 2, 3], "{name}: after a wipe of {kind}");
    for g in &again {
        g.next_id().unwrap();
    }
}

/// Calls [`Lease::prepare`] until it says builds start at once, sleeping
/// the wait it names, as `flakegen leases init` does.
fn prepare_until_ready(lease: &Lease, name: &str) -> Readiness {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let readiness = patiently(name, "preparing a namespace", || lease.prepare());
        if readiness.wait().is_zero() {
            return readiness;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: a prepared namespace was not ready within 30 s ({readiness:?})"
        );
        thread::sleep(readiness.wait());
    }
}

/// A namespace made ready before its first build ([`Lease::prepare`], what
/// `flakegen leases init` does) starts at once: its marker ages the TTL and
/// the skew once, and a build after that takes a fresh id without waiting.
/// Preparing it again, in use, changes nothing.
pub fn a_prepared_namespace_starts_at_once(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let ns = namespace("prepared");
    let lease = store.lease(&ns);
    let first = lease.prepare().unwrap();
    assert_eq!(
        first.ready_unix_millis,
        first.marker_unix_millis + millis(TTL + SKEW),
        "{name}: a prepared namespace's builds start the TTL and the skew past its marker"
    );
    let ready = prepare_until_ready(&lease, name);
    assert_eq!(
        ready.marker_unix_millis, first.marker_unix_millis,
        "{name}: preparing a marked namespace moved its marker"
    );
    assert!(!ready.marked, "{name}: a marked namespace was marked again");
    let g = store.leased(FOUR, &ns).build_atomic().unwrap();
    let built = now_ms();
    let status = g.lease().unwrap();
    let starts = millis(status.starts.duration_since(std::time::UNIX_EPOCH).unwrap());
    assert!(
        starts <= built,
        "{name}: a build in a prepared namespace waited until {starts}, past {built} ({:?})",
        status.start_cause
    );
    g.next_id().unwrap();
    let again = lease.prepare().unwrap();
    assert!(
        again.wait().is_zero()
            && !again.marked
            && again.marker_unix_millis == first.marker_unix_millis,
        "{name}: preparing a namespace in use changed it: {again:?}"
    );
}

/// The operator's advice after a wipe, followed at once: a namespace
/// deleted under two running holders, made ready at once with
/// [`Lease::prepare`] (what `flakegen leases init` does, once the tools
/// say the namespace lost its records), and a new generator built the
/// moment it is ready. Nothing is issued twice among the three: the
/// preparation's marker is no earlier than the wipe, so its wait outlasts
/// every fence confirmed before it. A step that took anyone's word that
/// the emptied namespace was new (a declaration) let the new generator
/// take an old holder's id while that holder still issued below its fence.
pub fn a_namespace_prepared_after_a_wipe_issues_no_id_twice(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let ns = namespace("prepared-after-wipe");
    let build = || patient_build(&store, FOUR, &ns);
    let (a, b) = (build(), build());
    let stop = AtomicBool::new(false);
    let issued = Issued {
        ids: Mutex::new(vec![vec![]; 3]),
    };
    let mut before = 0;
    let c = std::sync::OnceLock::new();
    thread::scope(|scope| {
        // A build that fails ends the rule, not only this closure.
        let _stop = StopOnDrop(&stop);
        let issuers = scope.spawn(|| issue_all(&[&a, &b], &stop, &issued, name));
        thread::sleep(Duration::from_millis(150));
        before = now_ms();
        store.wipe(Wipe::Namespace(&ns));
        prepare_until_ready(&store.lease(&ns), name);
        let c = c.get_or_init(build);
        let c_ids = scope.spawn(|| issue_until(c, &stop));
        thread::sleep(TTL * 3 + SKEW * 3);
        stop.store(true, Ordering::Relaxed);
        issuers.join().unwrap();
        let c_ids = c_ids.join().unwrap();
        issued.ids.lock().unwrap_or_else(PoisonError::into_inner)[2] = c_ids;
    });
    let ids = issued
        .ids
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let first = ids[2].iter().map(|&id| unix_ms(id)).min();
    let waited = before + millis(TTL + SKEW);
    assert!(
        first.is_some_and(|ms| ms >= waited),
        "{name}: a build in a namespace prepared after a wipe issued at {first:?}, before the \
         TTL and the skew had passed since the wipe ({waited})"
    );
    let mut all: Vec<Snowflake> = ids.iter().flatten().copied().collect();
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        count,
        "{name}: {} IDs issued twice after a namespace was prepared right after a wipe",
        count - all.len()
    );
}

//! A process forked after its generators issued: the child holds a copy of
//! each (worker id, lease, last tick), and issues none of its parent's IDs.
//! Every generator refuses there with `IssueError::Copied`, at once, never
//! waiting on anything of the parent's, while the parent goes on issuing.
//!
//! ```text
//! cargo test --test fork
//! eval "$(scripts/services.sh start redis)"
//! cargo test --features redis --test fork   # and a lease on a real Redis
//! ```

#![cfg(unix)]

mod common;

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use common::fork::side_by_side;
use flakegen::lease::{Lease, LeaseState, MemoryRegistry};
use flakegen::{Builder, IdGenerator, IssueError, Snowflake, Strategy};

/// How long each side issues.
const SIDE_BY_SIDE: Duration = Duration::from_millis(300);
/// How long a child may take, from the fork to its exit: a child that
/// waited on its parent's threads or locks would take for ever.
const BOUND: Duration = Duration::from_secs(20);

/// What a child did with a generator: the IDs it issued, and how many
/// calls were refused as a copy's. Anything else it met is an error.
#[derive(Debug, Default)]
struct Child {
    ids: Vec<u64>,
    copied: u64,
}

impl Child {
    fn said(text: &str) -> Child {
        let mut child = Child::default();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("id", id)) => child.ids.push(id.parse().unwrap()),
                Some(("copied", n)) => child.copied += n.parse::<u64>().unwrap(),
                _ => panic!("the child met something else: {line}"),
            }
        }
        child
    }
}

/// Issues with every call of `generator` for `span`: IDs and refusals,
/// as a child says them.
fn issue_for(generator: &dyn IdGenerator, span: Duration) -> String {
    let mut said = String::new();
    let mut copied = 0;
    let mut note = |issued: Result<Vec<Snowflake>, IssueError>| match issued {
        Ok(ids) => ids
            .iter()
            .for_each(|id| writeln!(said, "id {}", id.as_u64()).unwrap()),
        Err(IssueError::Copied) => copied += 1,
        Err(other) => writeln!(said, "error {other:?}: {other}").unwrap(),
    };
    let start = Instant::now();
    while start.elapsed() < span {
        note(generator.next_id().map(|id| vec![id]));
        note(generator.try_next_id().map(|id| vec![id]));
        let mut batch = [Snowflake::default(); 8];
        note(generator.next_ids(&mut batch).map(|()| batch.to_vec()));
        note(generator.try_next_ids(&mut batch).map(|()| batch.to_vec()));
    }
    writeln!(said, "copied {copied}").unwrap();
    said
}

/// The parent's side: IDs for `span`, every one issued.
fn parent_issues(generator: &dyn IdGenerator, span: Duration) -> Vec<u64> {
    let start = Instant::now();
    let mut ids = Vec::new();
    while start.elapsed() < span {
        ids.push(
            generator
                .next_id()
                .expect("the parent was refused")
                .as_u64(),
        );
    }
    ids
}

/// Neither side issued an ID twice, nor one the other issued; the child
/// issued none, and was refused as a copy.
fn none_twice(parent: &[u64], child: &Child) {
    let mut seen = HashSet::new();
    let twice = parent
        .iter()
        .chain(&child.ids)
        .filter(|id| !seen.insert(**id));
    assert_eq!(twice.count(), 0, "IDs issued twice");
    assert!(
        child.ids.is_empty(),
        "the child issued {} IDs",
        child.ids.len()
    );
    assert!(child.copied > 0, "the child was never refused");
    assert!(!parent.is_empty(), "the parent issued nothing");
}

#[test]
fn a_forked_child_issues_nothing_with_any_strategy() {
    for (worker, strategy) in (70..).zip(Strategy::ALL) {
        let generator = Builder::new().worker(worker).build(strategy).unwrap();
        generator.next_id().unwrap();
        // Dropped in the child only (each process has its own copy).
        let generator = RefCell::new(Some(generator));
        let (parent, child) = side_by_side(
            || {
                let generator = generator.borrow_mut().take().unwrap();
                let mut said = issue_for(&*generator, SIDE_BY_SIDE);
                // A copy has no lease to show, and a drop here leaves the
                // parent's worker id alone, waiting on nothing.
                assert!(generator.lease().is_none());
                drop(generator);
                // The parent still issues on worker 70: a new generator on
                // it here would repeat the parent's IDs.
                match Builder::new().worker(worker).build(strategy) {
                    Err(flakegen::BuildError::WorkerInUse { .. }) => {}
                    other => writeln!(said, "built again: {:?}", other.map(|_| ())).unwrap(),
                }
                said
            },
            |_| parent_issues(&**generator.borrow().as_ref().unwrap(), SIDE_BY_SIDE),
            BOUND,
        );
        none_twice(&parent, &Child::said(&child));
        let generator = generator.into_inner().unwrap();
        assert!(
            generator.next_id().is_ok(),
            "{strategy:?}: the parent stopped"
        );
    }
}

#[test]
fn a_forked_child_of_a_leased_generator_issues_nothing_and_releases_nothing() {
    let registry = MemoryRegistry::new();
    let lease = Lease::new(registry.clone(), "forked");
    let generator = Builder::new().lease(lease).build_atomic().unwrap();
    generator.next_id().unwrap();
    let generator = RefCell::new(Some(generator));
    let (parent, child) = side_by_side(
        || {
            let generator = generator.borrow_mut().take().unwrap();
            let said = issue_for(&generator, SIDE_BY_SIDE);
            // Its shutdown and its drop are the parent's lease's: the child
            // neither sends them to a thread it does not have nor waits.
            let _ = generator.shutdown();
            drop(generator);
            said
        },
        |_| parent_issues(generator.borrow().as_ref().unwrap(), SIDE_BY_SIDE),
        BOUND,
    );
    none_twice(&parent, &Child::said(&child));
    let generator = generator.into_inner().unwrap();
    assert_eq!(generator.lease().unwrap().state, LeaseState::Held);
}

/// On a real Redis: the child's copy of the connection, the lease and its
/// thread are the parent's. The child issues nothing with the parent's
/// generator, and its exit (exit handlers included) gives nothing back:
/// the parent's lease stays held. Following the refusal's advice, the
/// child builds a generator of its own: on the parent's registry it is
/// refused at once (that registry's sockets are the parent's, and nothing
/// is sent on them); on a registry it connected itself, it leases an id of
/// its own and issues none of the parent's IDs.
#[cfg(feature = "redis")]
#[test]
fn a_forked_child_of_a_generator_leased_from_redis_issues_nothing_twice() {
    use flakegen::lease::LeaseError;
    let url = common::services::env("FLAKEGEN_TEST_REDIS_URL");
    let namespace = format!("fork-{}", std::process::id());
    let lease = |registry| {
        Lease::new(registry, namespace.as_str())
            .ttl(Duration::from_secs(3))
            .skew(Duration::from_secs(1))
    };
    common::ready(&[&lease(flakegen::lease::connect(&url).unwrap())]);
    let registry = flakegen::lease::connect(&url).unwrap();
    let generator = Builder::new()
        .lease(lease(std::sync::Arc::clone(&registry)))
        .build_atomic()
        .unwrap();
    let worker = generator.worker();
    generator.next_id().unwrap();
    let generator = RefCell::new(Some(generator));
    // Longer than the renewals' period: the parent's renewals go on.
    let span = Duration::from_secs(2);
    let (parent, child) = side_by_side(
        || {
            let generator = generator.borrow_mut().take().unwrap();
            let mut said = issue_for(&generator, span);
            drop(generator);
            let parents = Builder::new().lease(lease(std::sync::Arc::clone(&registry)));
            match parents.build_atomic() {
                Err(flakegen::BuildError::Lease(LeaseError::Copied { .. })) => {}
                other => writeln!(said, "built on the parent's registry: {other:?}").unwrap(),
            }
            let own = flakegen::lease::connect(&url).unwrap();
            let own = Builder::new().lease(lease(own)).build_atomic().unwrap();
            if own.worker() == worker {
                writeln!(said, "leased the parent's id {worker}").unwrap();
            }
            for _ in 0..1000 {
                writeln!(said, "own {}", own.next_id().unwrap().as_u64()).unwrap();
            }
            said
        },
        |_| parent_issues(generator.borrow().as_ref().unwrap(), span),
        BOUND,
    );
    let (own, child): (Vec<&str>, Vec<&str>) =
        child.lines().partition(|line| line.starts_with("own "));
    none_twice(&parent, &Child::said(&child.join("\n")));
    let before: HashSet<u64> = parent.into_iter().collect();
    assert_eq!(own.len(), 1000);
    assert!(
        own.iter()
            .all(|line| !before.contains(&line[4..].parse().unwrap()))
    );
    // After the child's exit, the parent's lease is still its own, renewed.
    let generator = generator.into_inner().unwrap();
    let after = parent_issues(&generator, Duration::from_millis(1500));
    assert!(after.iter().all(|id| !before.contains(id)));
    // Not given back: held, or renewing if a busy machine made a renewal late.
    let status = generator.lease().unwrap();
    assert!(
        matches!(status.state, LeaseState::Held | LeaseState::Renewing),
        "{status:?}"
    );
    assert_eq!(generator.worker(), worker);
}

/// A fork standing in for a snapshot restored twice, on a real Redis: both
/// copies hold the snapshot's lease, and both call the restore hook. Each
/// leases again as a new holder, on connections of its own (the child's
/// copy of the registry's runtime has no thread to drive it), and leaves
/// the snapshot's lease alone; then both issue, and no ID is issued twice.
#[cfg(feature = "redis")]
#[test]
fn copies_that_call_their_restore_hook_lease_again_and_share_no_id() {
    let url = common::services::env("FLAKEGEN_TEST_REDIS_URL");
    let namespace = format!("restore-{}", std::process::id());
    let lease = || {
        Lease::new(flakegen::lease::connect(&url).unwrap(), namespace.as_str())
            .ttl(Duration::from_secs(3))
            .skew(Duration::from_secs(1))
    };
    common::ready(&[&lease()]);
    let generator = Builder::new().lease(lease()).build_atomic().unwrap();
    let snapshots = generator.worker();
    let snapshots_fence = generator.lease().unwrap().fence;
    generator.next_id().unwrap();
    let span = Duration::from_secs(1);
    let restored = |generator: &dyn IdGenerator| {
        generator.after_restore().expect("the restore hook failed");
        let worker = generator.worker();
        assert_ne!(worker, snapshots, "leased the snapshot's own id again");
        (worker, parent_issues(generator, span))
    };
    let ((parents_worker, parent), child) = side_by_side(
        || {
            let (worker, ids) = restored(&generator);
            let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
            format!("{worker}\n{}", ids.join("\n"))
        },
        |_| restored(&generator),
        BOUND,
    );
    let mut lines = child.lines();
    let childs_worker: u64 = lines.next().unwrap().parse().unwrap();
    let child: Vec<u64> = lines.map(|id| id.parse().unwrap()).collect();
    assert_ne!(childs_worker, parents_worker, "both copies leased one id");
    assert!(!child.is_empty() && !parent.is_empty());
    let mut seen = HashSet::new();
    let twice = parent.iter().chain(&child).filter(|id| !seen.insert(**id));
    assert_eq!(twice.count(), 0, "IDs issued twice");
    // The snapshot's lease was left to expire, not given back: a release
    // would have lowered its fence below what the copies issued before
    // their hooks ran, and a new holder would start there.
    let third = Builder::new().lease(lease()).build_atomic().unwrap();
    let status = third.lease().unwrap();
    assert!(
        status.worker != snapshots || status.starts >= snapshots_fence,
        "a new holder took the snapshot's id at once: {status:?}"
    );
}

/// A generator on a worker id of its own refuses once restored: the id is
/// every copy's.
#[test]
fn a_restored_generator_on_a_worker_id_refuses() {
    for (worker, strategy) in (80..).zip(Strategy::ALL) {
        let generator = Builder::new().worker(worker).build(strategy).unwrap();
        generator.next_id().unwrap();
        match generator.after_restore() {
            Err(flakegen::Error::Issue(IssueError::Copied)) => {}
            other => panic!("{strategy:?}: {other:?}"),
        }
        assert_eq!(generator.next_id(), Err(IssueError::Copied));
        assert_eq!(generator.try_next_id(), Err(IssueError::Copied));
        // The seat stays taken: another copy issues on worker 80.
        assert!(matches!(
            Builder::new().worker(worker).build(strategy),
            Err(flakegen::BuildError::WorkerInUse { .. })
        ));
    }
}

/// A registry of one's own that cannot be opened again (`Registry::reopen`
/// left as it is): a restored generator on it refuses, and neither it nor
/// its drop gives the snapshot's lease back, which the other copies issue
/// under; the lease is left to expire.
#[test]
fn a_restored_generator_whose_registry_cannot_reopen_leaves_its_lease_alone() {
    use flakegen::lease::LeaseError;
    use flakegen::lease::backend::{Expect, NewRecord, ReadRequest, Registry, Snapshot};

    struct Own(MemoryRegistry);
    impl Registry for Own {
        fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
            self.0.read(namespace, request)
        }
        fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
            self.0.mark(namespace)
        }
        fn swap(
            &self,
            namespace: &str,
            worker: u64,
            expect: Expect,
            record: &NewRecord<'_>,
        ) -> Result<Option<u64>, LeaseError> {
            self.0.swap(namespace, worker, expect, record)
        }
    }

    let registry = MemoryRegistry::new();
    let lease = Lease::new(Own(registry.clone()), "own").ttl(Duration::from_secs(30));
    let generator = Builder::new().lease(lease).build_atomic().unwrap();
    let worker = generator.worker();
    generator.next_id().unwrap();
    let held = registry.record("own", worker).unwrap();
    match generator.after_restore() {
        Err(flakegen::Error::Issue(IssueError::Copied)) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(generator.next_id(), Err(IssueError::Copied));
    drop(generator);
    // A release would come from the lease's thread at once: a second is
    // ample on any machine, and the TTL (30 s) far from over.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        let now = registry.record("own", worker).unwrap();
        assert_eq!(
            now.holder, held.holder,
            "the snapshot's lease was given back"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

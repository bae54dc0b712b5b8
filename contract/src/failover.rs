//! The rules of a failover (capability `failover`): a registry whose
//! replica is promoted after it missed the last renewals must treat the
//! promotion as a loss, or two holders share an id for as long as the
//! replica lagged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use flakegen::lease::backend::ReadRequest;
use flakegen::lease::{LeaseError, LeaseState};
use flakegen::{BuildError, IdGenerator, IssueError, Layout, Snowflake};

use crate::store::{SKEW, Store, TTL, namespace};
use crate::support::{StopOnDrop, assert_strictly_increasing};
use crate::{Failover, Fixture};

/// Two ids, 1 ms units: one for the holder that fails over, one held by
/// another, so that a new build takes a holder's id.
const TWO: Layout = Layout::builder().worker_bits(1).build_const();

/// How soon after a promotion every holder must issue again, under a new
/// lease: the TTL, the skew allowance and 5 s. A heal takes 0.4–0.7 s on a
/// quiet machine; on CI, beside builds writing gigabytes while PostgreSQL
/// fsyncs its promotion and every commit, one took 2.4 s. The five seconds
/// tell a heal on a busy machine from one that waits out a default TTL
/// (10 s) or never comes.
const HEAL_BOUND: Duration = TTL
    .saturating_add(SKEW)
    .saturating_add(Duration::from_secs(5));

/// How long B issues at least from the promotion, so that its IDs and the
/// healed holder's share time: the TTL, the skew allowance and 2.3 s.
const B_ISSUES_FOR: Duration = TTL
    .saturating_add(SKEW)
    .saturating_add(Duration::from_millis(2_300));

/// The pair made whole again when a rule ends, however it ends.
struct Rejoin<'a>(&'a dyn Failover);

impl Drop for Rejoin<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // A second panic here would abort every test after this one:
            // the rule's own failure is the one to report.
            let pair = std::panic::AssertUnwindSafe(self.0);
            let _ = std::panic::catch_unwind(move || pair.rejoin());
        } else {
            self.0.rejoin();
        }
    }
}

fn failover<'a>(store: &Store<'a>) -> &'a dyn Failover {
    store.failover().unwrap_or_else(|| {
        panic!(
            "{}: this fixture has no replica to fail over to, and this test needs one: \
             implement Fixture::failover, or leave `failover` out of suite!'s capabilities",
            store.name()
        )
    })
}

fn unix_ms(id: Snowflake) -> u64 {
    TWO.unix_millis_of(TWO.decode(id).unwrap().timestamp)
}

fn system_ms(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What a holder issued until `stop`: each ID and when it came, and the
/// last fence its first lease had confirmed. (That fence shows in its
/// status from its renewal until a new lease replaces it, which cannot be
/// before the failover: far longer than between two looks here.) `healed`
/// is set once it issued under a new lease.
fn issue(
    g: &dyn IdGenerator,
    stop: &AtomicBool,
    healed: &AtomicBool,
    name: &str,
) -> (Vec<(Snowflake, Instant)>, u64) {
    let first = g.lease().unwrap().starts;
    let (mut ids, mut fence) = (vec![], 0);
    while !stop.load(Ordering::Relaxed) {
        let issued = match g.next_id() {
            Ok(id) => {
                ids.push((id, Instant::now()));
                true
            }
            // At its fence while it heals.
            Err(IssueError::LeaseLost { .. }) => false,
            Err(e) => panic!("{name}: {e}"),
        };
        let status = g.lease().unwrap();
        if status.starts == first {
            fence = fence.max(system_ms(status.fence));
        } else if issued {
            healed.store(true, Ordering::Relaxed);
        }
        thread::sleep(Duration::from_micros(300));
    }
    (ids, fence)
}

/// Builds as soon as the new primary lets it: every id held, or the
/// registry between primaries, is tried again.
fn build_when_possible(store: &Store<'_>, ns: &str) -> Box<dyn IdGenerator> {
    let deadline = Instant::now() + HEAL_BOUND * 2;
    loop {
        let built = store
            .leased(TWO, ns)
            .max_wait(HEAL_BOUND)
            .build(flakegen::Strategy::Atomic);
        match built {
            Ok(g) => return g,
            Err(BuildError::Lease(
                LeaseError::AllHeld { .. }
                | LeaseError::Unreachable { .. }
                | LeaseError::ReadOnly { .. },
            )) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("{}: no build after the failover: {e}", store.name()),
        }
    }
}

/// The main rule: holders renew on the primary while its replica misses
/// it; the replica is promoted; a new build takes a holder's id at once.
/// Its IDs start past every fence the old primary confirmed, nothing is
/// issued twice, and every holder issues again under a new lease within
/// the TTL, the skew allowance and 5 s of the promotion.
pub fn a_failover_to_a_lagging_replica_grants_no_id_below_a_confirmed_fence(fixture: &dyn Fixture) {
    lagging_failover(fixture, When::AfterTheLeases);
}

/// As [`a_failover_to_a_lagging_replica_grants_no_id_below_a_confirmed_fence`],
/// with a namespace begun on the primary after the replica's last sync: the
/// promoted replica knows nothing of it, neither records nor marker, and
/// must not take it for a namespace that never had a holder.
pub fn a_namespace_begun_after_the_replicas_last_sync_is_no_new_one_after_a_failover(
    fixture: &dyn Fixture,
) {
    lagging_failover(fixture, When::BeforeTheLeases);
}

/// When replication is cut, in [`lagging_failover`].
#[derive(Clone, Copy, PartialEq)]
enum When {
    /// Once the holders leased: the replica has their first records.
    AfterTheLeases,
    /// Before anything is written in the namespace.
    BeforeTheLeases,
}

fn lagging_failover(fixture: &dyn Fixture, cut: When) {
    let store = Store::new(fixture);
    let name = store.name();
    let pair = failover(&store);
    let _rejoin = Rejoin(pair);
    let ns = namespace("failover");
    if cut == When::BeforeTheLeases {
        // A replica rebuilt a moment ago looks new; one that has run for a
        // while is what a failover promotes, and what must not be trusted
        // with a namespace it never saw.
        thread::sleep(Duration::from_secs(3));
        pair.cut();
    }
    let a = store.leased(TWO, &ns).build_atomic().unwrap();
    // The other id's holder does not lease again once its lease is lost:
    // two ids are left for A and for B.
    let other = store.leased_once(TWO, &ns).build_atomic().unwrap();
    let stop = AtomicBool::new(false);
    let (a_healed, other_healed) = (AtomicBool::new(false), AtomicBool::new(false));
    let ((a_ids, a_fence), (other_ids, other_fence), b_ids, promoted_at) = thread::scope(|scope| {
        let _stop = StopOnDrop(&stop);
        let a_calls = scope.spawn(|| issue(&a, &stop, &a_healed, name));
        let other_calls = scope.spawn(|| issue(&other, &stop, &other_healed, name));
        if cut == When::AfterTheLeases {
            pair.cut();
        }
        // Two renewals each on the primary, which the replica misses.
        for g in [&a, &other] {
            let mut fence = g.lease().unwrap().fence;
            for _ in 0..2 {
                // A precondition, not a bound: generous, for a busy machine.
                let deadline = Instant::now() + Duration::from_secs(10);
                while g.lease().unwrap().fence == fence {
                    assert!(
                        Instant::now() < deadline,
                        "{name}: no renewal after the cut"
                    );
                    thread::sleep(Duration::from_millis(5));
                }
                fence = g.lease().unwrap().fence;
            }
        }
        pair.promote();
        let promoted_at = Instant::now();
        let b = build_when_possible(&store, &ns);
        let b_ids = issue_for_the_heal(&*b, promoted_at, &a_healed, name);
        stop.store(true, Ordering::Relaxed);
        (
            a_calls.join().unwrap(),
            other_calls.join().unwrap(),
            b_ids,
            promoted_at,
        )
    });
    // Every fence the old primary confirmed.
    let confirmed = a_fence.max(other_fence);
    let b_first = b_ids.first().expect("B issued").0;
    assert!(
        unix_ms(b_first) >= confirmed,
        "{name}: after a failover to a lagging replica, an id was granted below a fence the \
         old primary confirmed: B's first ID is at {}, the old fence at {confirmed}",
        unix_ms(b_first)
    );
    let mut all = vec![];
    for (who, ids) in [
        ("A", &a_ids),
        ("the other holder", &other_ids),
        ("B", &b_ids),
    ] {
        let only: Vec<Snowflake> = ids.iter().map(|i| i.0).collect();
        assert_strictly_increasing(&only, format!("{name}: {who}"));
        all.extend(only);
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        count,
        "{name}: {} IDs issued twice across the failover",
        count - all.len()
    );
    // A, lost at the failover, leased again by itself.
    let again = a_ids
        .iter()
        .find(|(id, _)| unix_ms(*id) >= confirmed)
        .map(|(_, at)| at.saturating_duration_since(promoted_at))
        .unwrap_or_else(|| panic!("{name}: A never issued again after the failover"));
    assert!(
        again <= HEAL_BOUND,
        "{name}: A issued again {again:?} after the promotion, past {HEAL_BOUND:?}"
    );
}

/// B issues from the promotion for [`B_ISSUES_FOR`], and on until A has
/// healed, or for the heal's bound and a little more.
fn issue_for_the_heal(
    b: &dyn IdGenerator,
    promoted_at: Instant,
    a_healed: &AtomicBool,
    name: &str,
) -> Vec<(Snowflake, Instant)> {
    let mut ids = vec![];
    loop {
        let elapsed = promoted_at.elapsed();
        let enough = elapsed >= B_ISSUES_FOR && a_healed.load(Ordering::Relaxed);
        if enough || elapsed >= HEAL_BOUND + Duration::from_millis(300) {
            break;
        }
        match b.next_id() {
            Ok(id) => ids.push((id, Instant::now())),
            // At its fence, its renewal late: on a machine busy enough, a
            // renewal can take longer than the time a short TTL leaves.
            Err(IssueError::LeaseLost { .. }) => {}
            Err(e) => panic!("{name}: B: {e}"),
        }
        thread::sleep(Duration::from_micros(300));
    }
    ids
}

/// A promotion is a loss though the replica missed nothing: the server's
/// history changed, and the registry cannot prove that every confirmed
/// renewal reached it. The marker changes, a holder from before can no
/// longer renew, and a new holder waits out the loss rule.
pub fn a_failover_is_a_loss_though_the_replica_missed_nothing(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let pair = failover(&store);
    let _rejoin = Rejoin(pair);
    let ns = namespace("failover-caught-up");
    let a = store.leased_once(TWO, &ns).build_atomic().unwrap();
    let before = store
        .registry()
        .read(&ns, &ReadRequest::new(2))
        .unwrap()
        .marker_unix_millis
        .expect("a marker after a lease");
    // Let the replica catch up with everything.
    thread::sleep(Duration::from_millis(200));
    pair.promote();
    let promoted_at = system_ms(SystemTime::now());
    let deadline = Instant::now() + HEAL_BOUND;
    let after = loop {
        match store.registry().read(&ns, &ReadRequest::new(2)) {
            Ok(snapshot) => break snapshot.marker_unix_millis,
            Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("{name}: the new primary does not answer: {e}"),
        }
    };
    assert_ne!(
        after,
        Some(before),
        "{name}: the marker in force is the same after a failover: the registry did not \
         detect that its history changed, and a replica that missed renewals would hand out \
         ids below their fences"
    );
    let deadline = Instant::now() + HEAL_BOUND;
    while a.lease().unwrap().state != LeaseState::Lost {
        assert!(
            Instant::now() < deadline,
            "{name}: a holder from before the failover still renews: {:?}",
            a.lease()
        );
        thread::sleep(Duration::from_millis(10));
    }
    let b = build_when_possible(&store, &ns);
    let first = b.next_id().unwrap();
    let rule = promoted_at + (TTL + SKEW).as_millis() as u64;
    assert!(
        unix_ms(first) >= rule,
        "{name}: a new holder after the failover started at {}, before the loss rule's {rule}",
        unix_ms(first)
    );
}

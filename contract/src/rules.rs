//! The lease contract's rules, one test each, over one registry: the
//! functions [`suite!`](crate::suite) turns into tests. Each builds its own
//! state: none depends on how long ago a server started.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakegen::clock::ManualClock;
use flakegen::lease::backend::{
    Expect, MarkerCheck, NewRecord, ReadCost, ReadRequest, Registry, Snapshot, TimeBase,
};
use flakegen::lease::inspect::Listing;
use flakegen::lease::{Lease, LeaseError, LeaseState};
use flakegen::{
    BuildError, Builder, Clock, IdGenerator, IssueError, Layout, Snowflake, Strategy, SystemClock,
};

use crate::Fixture;
use crate::store::{RENEW, SKEW, Store, TTL, namespace, now_ms};
use crate::support::{StopOnDrop, assert_strictly_increasing, build};

/// Four ids, 1 ms units.
const FOUR: Layout = Layout::builder().worker_bits(2).build_const();
/// One id.
const ONE: Layout = Layout::builder().worker_bits(0).build_const();
/// One id, 4 IDs per 1 ms unit: refusals that consumed ticks would show.
const ONE_NARROW: Layout = Layout::builder()
    .worker_bits(0)
    .sequence_bits(2)
    .build_const();

fn unix_ms(layout: &Layout, id: Snowflake) -> u64 {
    layout.unix_millis_of(layout.decode(id).unwrap().timestamp)
}

/// Waits (at most 5 s) for `condition`.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Asserts that `g`'s lease is in force: held, or retrying a renewal that a
/// busy server answered late (the fence still ahead). A rule that asserts
/// `Held` alone fails on a machine busy enough to delay one renewal.
fn assert_in_force(g: &dyn IdGenerator, name: &str) {
    let state = g.lease().unwrap().state;
    assert!(
        matches!(state, LeaseState::Held | LeaseState::Renewing),
        "{name}: the lease is {state:?}"
    );
}

/// The next ID from `g`, a refusal at its fence waited out (within 5 s):
/// at the suite's 300 ms TTL a renewal late on a busy machine leaves a
/// call at its fence, which a short `max_wait` rightly refuses. For rules
/// about something other than renewals.
fn next_id_once_renewed(g: &dyn IdGenerator, name: &str) -> Snowflake {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match g.next_id() {
            Ok(id) => return id,
            Err(IssueError::LeaseLost { .. }) if Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
}

/// Issues with `g` until it refuses with `LeaseLost` (at most `within`).
fn run_to_fence(g: &dyn IdGenerator, within: Duration) -> Vec<Snowflake> {
    let deadline = Instant::now() + within;
    let mut ids = vec![];
    loop {
        match g.next_id() {
            Ok(id) => ids.push(id),
            Err(IssueError::LeaseLost { .. }) => return ids,
            Err(e) => panic!("expected ids, then LeaseLost: {e}"),
        }
        assert!(
            Instant::now() < deadline,
            "never reached the fence: the lease outlived the loss (did a renewal write a lost \
             record back?)"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

pub fn each_generator_gets_its_own_id_until_all_are_held(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("distinct");
    // On terms a busy machine cannot break: a lease lost to a late renewal
    // frees its id for the build that must find all of them held.
    let generators: Vec<_> = Strategy::ALL
        .iter()
        .cycle()
        .take(4)
        .map(|&s| store.leased_steadily(FOUR, &ns).build(s).unwrap())
        .collect();
    let mut workers: Vec<u64> = generators.iter().map(|g| g.worker()).collect();
    workers.sort();
    assert_eq!(workers, [0, 1, 2, 3], "{}", store.name());
    for g in &generators {
        let id = g.next_id().unwrap();
        assert_eq!(FOUR.decode(id).unwrap().worker, g.worker());
        assert_in_force(g, store.name());
    }
    match store.leased_steadily(FOUR, &ns).build_atomic() {
        Err(e @ BuildError::Lease(LeaseError::AllHeld { held: 4, .. })) => {
            assert!(e.to_string().contains("all 4 worker ids"), "{e}")
        }
        other => panic!("{}: expected AllHeld, got {other:?}", store.name()),
    }
}

/// Builds that race in one namespace each get an id of their own, never a
/// refusal while ids are free: a read that is not one atomic step may see
/// the fresh id taken between its steps, and must not say all are held.
pub fn builds_racing_in_a_new_namespace_each_get_an_id(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    for _ in 0..8 {
        let ns = namespace("racing");
        let start = std::sync::Barrier::new(4);
        let generators: Vec<_> = thread::scope(|scope| {
            let builds: Vec<_> = (0..4)
                .map(|_| {
                    // A rule of which ids are free: at the suite's 300 ms a
                    // renewal late on a busy machine loses a lease, whose
                    // generator then shows the id it is taking again.
                    let builder = store.leased_steadily(FOUR, &ns);
                    let start = &start;
                    scope.spawn(move || {
                        start.wait();
                        builder.build_atomic()
                    })
                })
                .collect();
            builds
                .into_iter()
                .map(|b| match b.join().unwrap() {
                    Ok(generator) => generator,
                    Err(e) => panic!("{}: a racing build was refused: {e}", store.name()),
                })
                .collect()
        });
        let workers: Vec<u64> = generators.iter().map(|g| g.worker()).collect();
        let mut sorted = workers.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3], "{}: {workers:?}", store.name());
    }
}

pub fn a_released_id_is_taken_over_at_once_above_the_last_id(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("release");
    let first = store.leased(ONE, &ns).build_ticker().unwrap();
    let last = (0..1000).map(|_| first.next_id().unwrap()).max().unwrap();
    first.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    // Without the release lowering the fence, the successor would face
    // a fence a TTL ahead, more than this max_wait.
    let successor = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_millis(50))
        .build_mutex()
        .unwrap();
    let taken = next_id_once_renewed(&successor, store.name());
    assert!(taken > last, "{}", store.name());
}

/// A generator restarted after its predecessor gave its id back takes
/// that id again, not a fresh one, though a fresh one could start at once
/// too: the registry keeps as many records as generators ran at once, and
/// an operator listing the leases sees the id a service had come back.
pub fn a_restarted_generator_takes_back_the_id_it_released(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("restart");
    let first = store.leased(FOUR, &ns).build_atomic().unwrap();
    let worker = first.worker();
    first.next_id().unwrap();
    first.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    drop(first);
    // Past the wait a fresh id has after the namespace's marker.
    thread::sleep(TTL + SKEW);
    for restart in 1..=8 {
        let g = store.leased(FOUR, &ns).build_atomic().unwrap();
        assert_eq!(
            g.worker(),
            worker,
            "{}: restart {restart} took id {} while {worker} lay released",
            store.name(),
            g.worker()
        );
        g.next_id().unwrap();
        g.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    }
}

/// Rule 5 through `&self`: a shutdown while callers are issuing lowers the
/// fence above every ID any of them got, whichever order they ran in.
pub fn a_shutdown_racing_callers_lowers_the_fence_above_every_id_issued(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    for strategy in Strategy::ALL {
        let ns = namespace("race");
        let generator = store.leased(ONE_NARROW, &ns).build(strategy).unwrap();
        let issued = std::sync::atomic::AtomicUsize::new(0);
        let ids: Vec<Snowflake> = thread::scope(|scope| {
            let callers: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        let mut ids = Vec::new();
                        loop {
                            match generator.next_id() {
                                Ok(id) => {
                                    ids.push(id);
                                    issued.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                                Err(IssueError::ShutDown) => return ids,
                                // A renewal late at the fence (a busy
                                // machine, a 300 ms TTL): refused, not
                                // what this rule is about; ask again.
                                Err(IssueError::LeaseLost { .. }) => {
                                    thread::sleep(Duration::from_millis(1))
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                    })
                })
                .collect();
            // Under way, whenever the lease's IDs start (a loss just before
            // puts the start ahead).
            let deadline = Instant::now() + Duration::from_secs(5);
            while issued.load(std::sync::atomic::Ordering::Relaxed) < 30
                && Instant::now() < deadline
            {
                thread::sleep(Duration::from_millis(1));
            }
            generator.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
            callers
                .into_iter()
                .flat_map(|c| c.join().unwrap())
                .collect()
        });
        let at = format!("{} {strategy}", store.name());
        assert!(!ids.is_empty(), "{at}: no ID within 5 s of the build");
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "{at}: an ID issued twice");
        let fence = store.record(&ns, 0).unwrap().fence_unix_millis;
        let last = ids
            .iter()
            .map(|&id| unix_ms(&ONE_NARROW, id))
            .max()
            .unwrap();
        assert!(
            last < fence,
            "{at}: an ID at {last} at or past the fence {fence}"
        );
        assert_eq!(
            generator.lease().unwrap().state,
            LeaseState::Released,
            "{at}"
        );
    }
}

pub fn an_expired_lease_is_taken_over_at_or_after_its_fence(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("expired");
    // A live holder: its id is not free, however slow this machine is.
    store.put(&ns, 0, "crashed", 60_000, now_ms() + 60_000);
    assert!(matches!(
        store.leased(ONE, &ns).build_atomic(),
        Err(BuildError::Lease(LeaseError::AllHeld { held: 1, .. }))
    ));
    // Its last renewal, then its crash: the lease runs out at once, its
    // fence a TTL ahead.
    let fence = now_ms() + 300;
    store.put(&ns, 0, "crashed", 1, fence);
    thread::sleep(Duration::from_millis(5));
    let successor = match store.leased(ONE, &ns).build_atomic() {
        Ok(successor) => successor,
        // With no server clock, a version seen for the first time is held
        // the namespace's TTL from then: this process cannot tell that its
        // writer's clock did not run behind (the protocol's first sight).
        Err(BuildError::Lease(LeaseError::AllHeld { .. }))
            if store.registry().time_base() == TimeBase::Client =>
        {
            thread::sleep(TTL + Duration::from_millis(100));
            store.leased(ONE, &ns).build_atomic().unwrap()
        }
        Err(e) => panic!("{}: the expired lease was not taken: {e}", store.name()),
    };
    let id = successor.next_id().unwrap();
    assert!(unix_ms(&ONE, id) >= fence, "{}", store.name());
}

pub fn a_fence_beyond_max_wait_is_an_error_and_the_id_is_given_back(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("ahead");
    let far = now_ms() + 60_000;
    store.put(&ns, 0, "", 0, far);
    match store.leased(ONE, &ns).build_atomic() {
        Err(
            e @ BuildError::FenceAhead {
                worker: 0,
                wait_nanos,
            },
        ) => {
            assert!(wait_nanos > 50_000_000_000, "{e}");
            assert!(e.to_string().contains("raise max_wait"), "{e}");
        }
        other => panic!("{}: expected FenceAhead, got {other:?}", store.name()),
    }
    // Given back, free, with its fence where it was.
    let record = store.record(&ns, 0).unwrap();
    assert_eq!(
        (record.holder.as_str(), record.fence_unix_millis),
        ("", far)
    );
}

/// Rule 3, and a renewal never lowers a fence: a fence inherited 60 s ahead
/// stays where it is, neither extended by a TTL nor lowered to the clock's.
pub fn a_renewal_never_lowers_a_fence_nor_extends_one_beyond_the_ttl(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("lower");
    let far = now_ms() + 60_000;
    store.put(&ns, 0, "", 0, far);
    let g = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_secs(120))
        .build_atomic()
        .unwrap();
    let version = store.record(&ns, 0).unwrap().version;
    eventually("a renewal", || {
        store.record(&ns, 0).unwrap().version != version
    });
    let record = store.record(&ns, 0).unwrap();
    assert_eq!(record.fence_unix_millis, far, "{}", store.name());
    assert_eq!(
        g.lease().unwrap().fence,
        UNIX_EPOCH + Duration::from_millis(far)
    );
}

/// A fence a few ms into a 10 ms unit: that unit was the previous holder's.
pub fn a_fence_inside_a_unit_starts_the_successor_at_the_next_unit(fixture: &dyn Fixture) {
    let layout = Layout::builder()
        .timestamp_bits(39)
        .worker_bits(0)
        .unit(Duration::from_millis(10))
        .build_const();
    let store = Store::new(fixture);
    let ns = namespace("unit");
    let unit = layout.timestamp_at(SystemTime::now() - Duration::from_secs(1));
    let unit_ms = layout.unix_millis_of(unit);
    store.put(&ns, 0, "", 0, unit_ms + 3);
    let g = store
        .leased(layout, &ns)
        .clock(ManualClock::from_unix_millis(unit_ms))
        .build_atomic()
        .unwrap();
    assert_eq!(
        g.try_next_id().unwrap_err(),
        IssueError::WouldBlock {
            wait_nanos: 10_000_000
        },
        "{}",
        store.name()
    );
}

/// The lease recovered at its fence: the refusals consumed no ticks, for
/// every strategy and both calls, so the generator issues again at once.
/// At the fence the non-blocking calls refuse at once; a blocking call
/// waits for the renewal (within `max_wait`) and then issues the fence's
/// own first tick.
pub fn a_refusal_at_the_fence_consumes_nothing(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    for (i, strategy) in Strategy::ALL.into_iter().enumerate() {
        let ns = namespace("refusal");
        store.fresh(&ns);
        let clock = ManualClock::new(SystemTime::now());
        // Room for a renewal late on a busy machine: the clock stands still,
        // so only the lease can make a call wait.
        let leased = store.leased(ONE_NARROW, &ns).clock(clock.clone());
        let g = build(strategy, leased.max_wait(Duration::from_secs(10)));
        let fence = refused_at_the_fence(&*g, &clock)
            .unwrap_or_else(|| panic!("{}/{strategy}: {INTERRUPTED}", store.name()));
        // ... and the next renewal moves the fence a TTL past this clock,
        // which a blocking call waits for.
        let issued = if i % 2 == 0 {
            g.next_id()
        } else {
            let mut batch = [Snowflake::default(); 3];
            g.next_ids(&mut batch).map(|()| batch[0])
        };
        let id = issued.unwrap_or_else(|e| {
            panic!(
                "{}/{strategy}: refused though a renewal was on its way: {e}",
                store.name()
            )
        });
        assert!(g.lease().unwrap().fence > fence);
        assert_eq!(
            ONE_NARROW.time_of(ONE_NARROW.decode(id).unwrap().timestamp),
            fence
        );
    }
}

const INTERRUPTED: &str = "a renewal landed in each of 50 rounds of refusals at the fence";

/// Stands `clock` at `g`'s fence and has both non-blocking calls refused
/// there, 8 times each: twice the 4 ticks of a [`ONE_NARROW`] unit, so
/// refusals that consumed ticks would show. Returns that fence.
///
/// A renewal lands every [`RENEW`] and lawfully lifts the fence past a
/// clock standing at it. A round it interrupts proves nothing and is made
/// again at the new fence (`None` after 50 such rounds); an ID issued
/// while the fence stood where it was read is a failure.
fn refused_at_the_fence(g: &dyn IdGenerator, clock: &ManualClock) -> Option<SystemTime> {
    'round: for _ in 0..50 {
        let fence = g.lease().unwrap().fence;
        clock.set(fence);
        for _ in 0..8 {
            let mut batch = [Snowflake::default(); 3];
            for refused in [g.try_next_id().map(drop), g.try_next_ids(&mut batch)] {
                match refused {
                    Err(IssueError::LeaseLost { .. }) => {}
                    Ok(()) if g.lease().unwrap().fence > fence => continue 'round,
                    other => panic!("at the fence {fence:?}: {other:?}"),
                }
            }
        }
        // lease() says why (rule 8), unless a renewal has just lifted it.
        let lease = g.lease().unwrap();
        if lease.fence > fence {
            continue 'round;
        }
        assert_ne!(lease.state, LeaseState::Held);
        return Some(fence);
    }
    None
}

/// Rule 1 over several TTLs: a healthy lease's confirmed fence keeps ahead
/// of the generator, which is never refused.
///
/// Its terms are its own, a TTL of 1.5 s renewed every 150 ms: a renewal
/// must land within the TTL, and on a busy machine a server that fsyncs
/// (etcd's three members on one disk) can take longer than the suite's
/// 300 ms. A renewal late by more than a second is a fault, and the rules
/// of faults have their tests; here every renewal arrives.
pub fn a_healthy_lease_is_never_refused(fixture: &dyn Fixture) {
    const HEALTHY_TTL: Duration = Duration::from_millis(1_500);
    let store = Store::new(fixture);
    let ns = namespace("healthy");
    let lease = store
        .lease(&ns)
        .ttl(HEALTHY_TTL)
        .renew_every(HEALTHY_TTL / 10);
    let g = Builder::new()
        .layout(FOUR)
        .lease(lease)
        .build_atomic()
        .unwrap();
    let until = Instant::now() + HEALTHY_TTL * 2;
    let mut count = 0;
    while Instant::now() < until {
        g.next_id()
            .unwrap_or_else(|e| panic!("{}: refused: {e}", store.name()));
        count += 1;
        thread::sleep(Duration::from_micros(200));
    }
    assert!(count > 100);
    assert_in_force(&g, store.name());
}

/// Rule 4 and rule 8, with re-acquiring off: a lost lease runs to its
/// fence, refuses, says why, and stays lost even once its record is gone.
pub fn a_lost_lease_runs_to_its_fence_and_is_never_taken_back(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    for strategy in Strategy::ALL {
        let ns = namespace("lost");
        store.fresh(&ns);
        let clock = ManualClock::new(SystemTime::now());
        let g = build(strategy, store.leased_once(FOUR, &ns).clock(clock.clone()));
        store.steal(&ns, g.worker());
        eventually("the lease to be lost", || {
            g.lease().unwrap().state == LeaseState::Lost
        });
        let status = g.lease().unwrap();
        assert!(status.last_error.unwrap().contains("no longer held"));
        let id = g.next_id().unwrap();
        assert!(FOUR.time_of(FOUR.decode(id).unwrap().timestamp) < status.fence);
        clock.set(status.fence);
        for result in [g.next_id(), g.try_next_id()] {
            match result {
                Err(e @ IssueError::LeaseLost { .. }) => {
                    assert!(e.to_string().contains("build a new generator"), "{e}")
                }
                other => panic!(
                    "{}/{strategy}: expected LeaseLost, got {other:?}",
                    store.name()
                ),
            }
        }
        // The record goes: nobody writes it back, least of all the loser.
        store.lose_data();
        thread::sleep(RENEW * 4);
        assert_eq!(g.lease().unwrap().state, LeaseState::Lost);
        assert!(store.record(&ns, g.worker()).is_none(), "{}", store.name());
    }
}

/// Mechanism 1 of the duplicates: a holder displaced by a loss must not get
/// its lease back, and its release must not lower the fence of whoever
/// holds the id now.
pub fn a_displaced_holder_neither_resurrects_nor_lowers_after_a_loss(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("displaced");
    // Slow renewals, so the release below comes before A notices; not
    // healing, so that B takes the id (the race has a test of its own).
    let slow = store.lease(&ns).renew_every(TTL / 2).reacquire(false);
    let a = Builder::new()
        .layout(ONE)
        .lease(slow)
        .build_atomic()
        .unwrap();
    let a_ids = run_to_fence_or(&a, 50);
    store.lose_data();
    let b = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_secs(2))
        .build_atomic()
        .unwrap();
    let taken = store.record(&ns, 0).unwrap();
    // Its release names its own lease, which is gone: refused (or, on a
    // connection the restart broke, failed), and nothing written.
    let released = a.shutdown().wait(Lease::DEFAULT_TIMEOUT);
    assert!(released.is_err(), "{}: {released:?}", store.name());
    let record = store.record(&ns, 0).unwrap();
    assert_eq!(
        record.holder,
        taken.holder,
        "{}: A's release freed B's id",
        store.name()
    );
    assert!(
        record.fence_unix_millis >= taken.fence_unix_millis,
        "{}: A's release lowered B's fence",
        store.name()
    );
    let b_first = b.next_id().unwrap();
    assert!(b_first > *a_ids.iter().max().unwrap());
}

fn run_to_fence_or(g: &dyn IdGenerator, count: usize) -> Vec<Snowflake> {
    (0..count).map(|_| g.next_id().unwrap()).collect()
}

/// Mechanism 2: two losses within a TTL. The holder after the first loss
/// inherits a fence past the marker rule, and must not have extended it by
/// a TTL: the holder after the second loss starts above all it issued.
pub fn two_losses_within_a_ttl_keep_holders_apart(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("double");
    let a = store.leased_once(ONE, &ns).build_atomic().unwrap();
    let mut ids = run_to_fence_or(&a, 20);
    store.lose_data();
    std::mem::forget(a); // paused for good: it never releases
    let b = store
        .leased_once(ONE, &ns)
        .max_wait(Duration::from_secs(2))
        .build_atomic()
        .unwrap();
    store.lose_data();
    ids.extend(run_to_fence(&b, Duration::from_secs(3)));
    let c = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_secs(2))
        .build_atomic()
        .unwrap();
    let c_first = c.next_id().unwrap();
    assert!(c_first > *ids.iter().max().unwrap(), "{}", store.name());
}

/// The loss rule with a holder whose clock is ahead within the skew: the
/// successor starts past everything the holder may still issue.
pub fn a_loss_fences_a_holder_whose_clock_is_ahead_within_the_skew(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("ahead-skew");
    let clock = Ahead::default();
    clock.by(SKEW * 4 / 5);
    let a = store
        .leased_once(ONE, &ns)
        .clock(clock)
        .build_atomic()
        .unwrap();
    let mut a_ids = run_to_fence_or(&a, 20);
    thread::sleep(RENEW * 2);
    store.lose_data();
    a_ids.extend(run_to_fence(&a, TTL * 4));
    let b = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_secs(2))
        .build_atomic()
        .unwrap();
    let b_first = b.next_id().unwrap();
    assert!(b_first > *a_ids.iter().max().unwrap(), "{}", store.name());
}

/// A clock a settable distance ahead of the system's.
#[derive(Clone, Default)]
struct Ahead(Arc<std::sync::atomic::AtomicU64>);

impl Ahead {
    fn by(&self, ahead: Duration) {
        let nanos = u64::try_from(ahead.as_nanos()).unwrap_or(u64::MAX);
        self.0.store(nanos, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Clock for Ahead {
    fn unix_nanos(&self) -> u64 {
        SystemClock.unix_nanos() + self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The skew check, against the server's own clock: a holder further ahead
/// of it than the skew is refused, at acquisition and at every renewal, or
/// its fences could lead the server by more than the loss rule covers. A
/// registry that reports its clock late (rounded up to the second, say)
/// lets such a holder through. Restated for a store without a clock: the
/// registry's times are its host's, so a generator whose own clock runs
/// ahead of its host's (a clock of its own, set wrong) is refused the same
/// way; hosts' clocks against each other are the operator's to keep.
pub fn a_holder_whose_clock_is_ahead_beyond_the_skew_is_refused(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let against = match store.registry().time_base() {
        TimeBase::Client => "its host's (the store has no clock)",
        _ => "the server's",
    };
    let beyond = SKEW * 3 / 2;
    // A registry whose clock reads late lets some of these through.
    for _ in 0..5 {
        let clock = Ahead::default();
        clock.by(beyond);
        let built = store
            .leased(ONE, &namespace("beyond-skew"))
            .clock(clock)
            .build_atomic();
        match built {
            Err(BuildError::Lease(LeaseError::ClockAhead { .. })) => {}
            other => panic!(
                "{}: a clock {beyond:?} ahead of {against}, with a skew of {SKEW:?}, \
                 was not refused: {other:?}",
                store.name()
            ),
        }
    }
    let clock = Ahead::default();
    let g = store
        .leased(ONE, &namespace("beyond-skew-renewal"))
        .clock(clock.clone())
        .build_atomic()
        .unwrap();
    clock.by(beyond);
    // Renewing, or lost already where a busy machine let the TTL pass
    // before this looked: either way refused, and the fence stays put.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let status = g.lease().unwrap();
        if matches!(
            status.state,
            LeaseState::Renewing | LeaseState::Lost | LeaseState::Reacquiring
        ) && status
            .last_error
            .as_ref()
            .is_some_and(|e| e.contains("ahead"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}: renewals from a clock {beyond:?} ahead were not refused within 5 s: \
             the lease is {:?}, its last error {:?}",
            store.name(),
            status.state,
            status.last_error
        );
        thread::sleep(Duration::from_millis(10));
    }
    let confirmed = g.lease().unwrap().fence;
    thread::sleep(RENEW * 4);
    assert_eq!(
        g.lease().unwrap().fence,
        confirmed,
        "{}: a renewal from a clock beyond the skew moved the fence",
        store.name()
    );
}

/// Loses the store's data so that the loss (a restart, for Redis) begins and
/// ends late in one second, where a marker in whole seconds would be early;
/// returns when it began. A loss that takes most of a second (a cluster
/// restored from a snapshot on a busy machine) cannot fit: then the last
/// one stands, and the rule checks the marker against its start alone.
fn lose_late_in_a_second(store: &Store<'_>) -> u64 {
    let mut took = 0;
    let mut last = 0;
    for _ in 0..20 {
        let begin_at = 980u64.saturating_sub(took + 20);
        while !(begin_at..begin_at + 10).contains(&(now_ms() % 1_000)) {
            thread::sleep(Duration::from_micros(500));
        }
        let lost_at = now_ms();
        store.lose_data();
        let done = now_ms();
        took = done - lost_at;
        if done / 1_000 == lost_at / 1_000 && done % 1_000 >= 900 {
            return lost_at;
        }
        last = lost_at;
        if took >= 900 {
            break;
        }
    }
    println!(
        "{}: a loss took {took} ms here, too long to fit late in one second",
        store.name()
    );
    last
}

/// Rule 6: the marker is never earlier than the loss it marks, to the
/// millisecond, even when the loss falls late in a second.
pub fn the_marker_is_no_earlier_than_the_loss(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("marker");
    let generator = store.leased(ONE, &ns).build_atomic().unwrap();
    generator.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    let lost_at = lose_late_in_a_second(&store);
    // Marked at once, most often in the second of the loss: a marker in
    // whole seconds (the clock's, or a table's creation time) is early.
    let early = namespace("marker-at-once");
    let at_once = store.registry().mark(&early).unwrap();
    // Marked in the next second: a marker counted in whole seconds of
    // uptime would now be up to a second early.
    thread::sleep(Duration::from_millis(1_030 - now_ms() % 1_000));
    let marker = store.registry().mark(&ns).unwrap();
    for marker in [at_once, marker] {
        assert!(
            marker >= lost_at,
            "{}: marker {marker} < loss {lost_at}",
            store.name()
        );
    }
    // And an id with no record is fenced a TTL and the skew past it.
    let g = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_secs(2))
        .build_atomic()
        .unwrap();
    let first = g.next_id().unwrap();
    let rule = marker + (TTL + SKEW).as_millis() as u64;
    assert!(unix_ms(&ONE, first) >= rule, "{}", store.name());
}

/// A service started right after a loss comes up without a retry loop: its
/// build waits out the marker rule (renewing the lease meanwhile), though
/// that is longer than the generator's `max_wait`.
pub fn a_build_right_after_a_loss_waits_for_its_fence(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("after-loss");
    store.fresh(&ns); // the registry has data to lose, whatever ran before
    let lost_at = now_ms();
    store.lose_data();
    let started = Instant::now();
    let g = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_millis(50))
        .build_atomic()
        .unwrap_or_else(|e| panic!("{}: {e}", store.name()));
    assert!(started.elapsed() < store.lease(&ns).start_wait());
    let id = next_id_once_renewed(&g, store.name());
    let rule = lost_at + (TTL + SKEW).as_millis() as u64;
    assert!(unix_ms(&ONE, id) >= rule, "{}", store.name());
    assert_in_force(&g, store.name());
}

/// The namespace's listing, through the registry's `Inspect`.
fn list(store: &Store<'_>, ns: &str) -> Listing {
    let registry = store.registry();
    let inspect = registry.inspect().unwrap_or_else(|| {
        panic!(
            "{}: the registry shows nothing to a tool (Registry::inspect is None): implement \
             Inspect, or leave `inspect` out of suite!'s capabilities",
            store.name()
        )
    });
    inspect.list(ns).unwrap()
}

/// What an operator's tool reads ([`Inspect::list`]): every record of the
/// namespace by worker id, as written, the marker in force and the
/// server's clock; none of another namespace; and after a loss, no record
/// that claims the marker in force. A listing writes nothing.
///
/// [`Inspect::list`]: flakegen::lease::inspect::Inspect::list
pub fn a_listing_shows_every_record_and_the_marker(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("listing");
    let held = store.leased(FOUR, &ns).build_atomic().unwrap();
    let released = store.leased(FOUR, &ns).build_atomic().unwrap();
    let released_worker = released.worker();
    released.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    store.put(&namespace("listing-other"), 3, "other", 60_000, now_ms());

    let before = now_ms();
    let listing = list(&store, &ns);
    let after = now_ms();
    let name = store.name();
    let slack = SKEW.as_millis() as u64;
    assert!(
        (before.saturating_sub(slack)..=after + slack).contains(&listing.server_unix_millis),
        "{name}: the server's clock {} is not this host's ({before}..{after})",
        listing.server_unix_millis
    );
    let marker = listing.marker_unix_millis.expect("a marker after a lease");
    let workers: Vec<u64> = listing.records.iter().map(|r| r.worker).collect();
    let mut expected = vec![held.worker(), released_worker];
    expected.sort();
    assert_eq!(workers, expected, "{name}: {listing:?}");
    for record in &listing.records {
        assert_eq!(record.marker_unix_millis, marker, "{name}: {record:?}");
        let read = store.record(&ns, record.worker).unwrap();
        assert_eq!(
            record.holder, read.holder,
            "{name}: listed {record:?}, read {read:?}"
        );
        if record.worker == held.worker() {
            assert!(!record.holder.is_empty(), "{name}: {record:?}");
            assert!(record.expires_unix_millis > listing.server_unix_millis);
            assert!(record.fence_unix_millis > listing.server_unix_millis);
        } else {
            // Nobody writes a free record meanwhile: it reads as listed.
            assert_eq!(*record, read, "{name}");
            assert!(record.holder.is_empty(), "{name}: {record:?}");
            assert_eq!(record.expires_unix_millis, 0, "{name}: {record:?}");
        }
    }
    drop(held);

    store.lose_data();
    let listing = list(&store, &ns);
    for record in &listing.records {
        assert_ne!(
            Some(record.marker_unix_millis),
            listing.marker_unix_millis,
            "{name}: a record from before the loss claims the marker in force: {listing:?}"
        );
    }
}

/// Rule 7: a registry that stops answering costs the timeout, no more, and
/// `lease()` says why while the generator runs on to its fence.
pub fn a_frozen_registry_costs_the_timeout_and_lease_says_why(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("frozen");
    let g = store.leased(ONE, &ns).build_atomic().unwrap();
    {
        let _frozen = store.freeze();
        let started = Instant::now();
        let built = store.leased(ONE, &namespace("frozen-new")).build_atomic();
        let took = started.elapsed();
        assert!(
            matches!(
                built,
                Err(BuildError::Lease(LeaseError::Unreachable { .. }))
            ),
            "{}: {built:?}",
            store.name()
        );
        assert!(
            took < Lease::DEFAULT_TIMEOUT + Duration::from_millis(500),
            "{took:?}"
        );
        eventually("the lease to report the outage", || {
            g.lease().unwrap().state == LeaseState::Renewing
        });
        assert!(g.lease().unwrap().last_error.is_some());
    }
    eventually("the lease to recover", || {
        g.lease().unwrap().state == LeaseState::Held
    });
    g.next_id().unwrap();
}

/// A registry whose first swap is slow to answer, as when it queues
/// behind another transaction's lock.
struct SlowSwap(Arc<dyn Registry>, std::sync::atomic::AtomicBool);

impl Registry for SlowSwap {
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
        let swapped = self.0.swap(namespace, worker, expect, record);
        if self.1.swap(false, std::sync::atomic::Ordering::Relaxed) {
            thread::sleep(TTL * 2);
        }
        swapped
    }
    fn time_base(&self) -> TimeBase {
        self.0.time_base()
    }
    fn marker_check(&self) -> MarkerCheck {
        self.0.marker_check()
    }
    fn read_cost(&self) -> ReadCost {
        self.0.read_cost()
    }
}

/// Rule 7: a build whose acquisition outlived a renewal interval renews
/// before it returns, so it never hands back a generator past its fence.
pub fn a_slow_build_renews_before_it_returns(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("slow");
    store.fresh(&ns);
    let slow = SlowSwap(store.registry(), true.into());
    let lease = Lease::new(slow, &ns).ttl(TTL).renew_every(RENEW).skew(SKEW);
    let g = Builder::new()
        .layout(ONE)
        .lease(lease)
        .build_atomic()
        .unwrap();
    let status = g.lease().unwrap();
    assert!(
        status.fence > SystemTime::now(),
        "{}: built past its fence",
        store.name()
    );
    g.next_id().unwrap();
}

pub fn bad_terms_get_clear_errors(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("bad");
    let expect = |built: Result<flakegen::AtomicGenerator, BuildError>, says: &str| {
        let message = built.map(drop).unwrap_err().to_string();
        assert!(
            message.contains(says),
            "{}: {message:?} lacks {says:?}",
            store.name()
        );
    };
    expect(
        store.leased(FOUR, "a{b}").build_atomic(),
        "invalid lease namespace",
    );
    let short = Builder::new()
        .layout(FOUR)
        .lease(store.lease(&ns).ttl(Duration::from_millis(50)));
    expect(short.build_atomic(), "the least a renewal can keep up with");
    let slow = Builder::new()
        .layout(FOUR)
        .lease(store.lease(&ns).renew_every(Duration::from_millis(200)));
    expect(slow.build_atomic(), "not well inside the TTL");
    let no_skew = Builder::new()
        .layout(FOUR)
        .lease(store.lease(&ns).skew(Duration::ZERO));
    expect(no_skew.build_atomic(), "skew allowance of 0");
    expect(
        store
            .leased(FOUR, &ns)
            .max_lead(Duration::from_millis(260))
            .build_atomic(),
        "max_lead",
    );
    expect(
        store.leased(FOUR, &ns).worker(1).build_atomic(),
        "drop Builder::worker",
    );
    // The clock may be set after the lease: the lease's thread reads it too.
    store.fresh(&ns);
    let clock = ManualClock::new(SystemTime::now());
    let g = Builder::new()
        .lease(store.lease(&ns))
        .clock(clock.clone())
        .build_atomic()
        .unwrap();
    clock.set(g.lease().unwrap().fence);
    eventually("a renewal on the new clock", || {
        g.lease().unwrap().fence > clock.now()
    });
}

/// Rule 4 with healing: generators that lose their registry (a Redis
/// crash, a `TRUNCATE`, `lose_data`) each issue again without a rebuild,
/// under a new lease, within the TTL, the skew and five seconds of the
/// loss (of the registry's return without its data); and no ID is issued
/// twice on the way. At the issue's terms: TTL 1 s, skew 500 ms. A heal
/// takes 1.5–1.7 s on a quiet machine; beside two CPU hogs one took
/// 3.8 s: the five seconds tell a heal on a busy machine from one that
/// waits for a default TTL (10 s) or never comes.
pub fn generators_that_lose_their_registry_issue_again_without_a_rebuild(fixture: &dyn Fixture) {
    let (ttl, skew) = (Duration::from_secs(1), Duration::from_millis(500));
    let bound = ttl + skew + Duration::from_secs(5);
    let store = Store::new(fixture);
    let ns = namespace("heal");
    let lease = Lease::new(store.registry(), &ns).ttl(ttl).skew(skew);
    let generators: Vec<_> = Strategy::ALL
        .iter()
        .map(|&s| {
            Builder::new()
                .layout(FOUR)
                .lease(lease.clone())
                .max_wait(Duration::from_secs(2))
                .build(s)
                .unwrap()
        })
        .collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let healed = std::sync::atomic::AtomicUsize::new(0);
    let lost_at = std::sync::OnceLock::<(Instant, u64)>::new();
    let results: Vec<(Vec<Snowflake>, Option<Duration>)> = thread::scope(|scope| {
        // A loss that fails ends the rule, not only this closure.
        let _stop = StopOnDrop(&stop);
        let callers: Vec<_> = generators
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let (stop, lost_at, healed, name) = (&stop, &lost_at, &healed, store.name());
                scope.spawn(move || {
                    let (mut ids, mut again) = (vec![], None);
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        // One caller asks without waiting: it is told
                        // to retry, never given an ID it may not have.
                        let issued = if i == 0 { g.try_next_id() } else { g.next_id() };
                        match issued {
                            Ok(id) => {
                                ids.push(id);
                                // Past every fence confirmed before the
                                // loss: under a new lease.
                                if let Some((at, ms)) = lost_at.get() {
                                    if again.is_none() && unix_ms(&FOUR, id) >= ms + 1_000 {
                                        again = Some(at.elapsed());
                                        healed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    }
                                }
                            }
                            Err(IssueError::LeaseLost { .. } | IssueError::WouldBlock { .. }) => {}
                            Err(e) => panic!("{name}: {e}"),
                        }
                        thread::sleep(Duration::from_micros(300));
                    }
                    (ids, again)
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(200));
        // Timed from the registry's return without its data: how long the
        // fixture takes to lose it (a restart, a restore) is its own, and
        // grows with the machine's load.
        let before = now_ms();
        store.lose_data();
        lost_at.set((Instant::now(), before)).unwrap();
        let deadline = Instant::now() + bound + Duration::from_secs(1);
        while Instant::now() < deadline
            && healed.load(std::sync::atomic::Ordering::Relaxed) < generators.len()
        {
            thread::sleep(Duration::from_millis(10));
        }
        thread::sleep(Duration::from_millis(100));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        callers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut all = vec![];
    for (i, (ids, again)) in results.into_iter().enumerate() {
        let again = again.unwrap_or_else(|| {
            panic!(
                "{}: generator {i} never issued again after the loss",
                store.name()
            )
        });
        println!(
            "{}: generator {i} issued again {again:?} after the loss",
            store.name()
        );
        assert!(again <= bound, "{}: {again:?} past {bound:?}", store.name());
        assert_strictly_increasing(&ids, store.name());
        all.extend(ids);
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "{}: an ID issued twice", store.name());
    let mut workers: Vec<u64> = generators.iter().map(|g| g.worker()).collect();
    workers.sort_unstable();
    workers.dedup();
    assert_eq!(
        workers.len(),
        3,
        "{}: two generators share an id",
        store.name()
    );
}

/// Rule 4 with healing: a holder displaced while it could not renew never
/// writes its old lease back; it leases a free id instead, and its IDs go
/// on increasing across the change of worker.
pub fn a_displaced_holder_heals_onto_a_free_id_and_writes_nothing_back(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("displaced-heal");
    store.fresh(&ns);
    let g = store.leased(FOUR, &ns).build_atomic().unwrap();
    let old = g.worker();
    let before = g.next_id().unwrap();
    store.steal(&ns, old);
    eventually("a lease on another id", || g.lease().unwrap().worker != old);
    let after = {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match g.next_id() {
                Ok(id) if FOUR.decode(id).unwrap().worker != old => break id,
                Ok(_) | Err(IssueError::LeaseLost { .. }) => {}
                Err(e) => panic!("{}: {e}", store.name()),
            }
            assert!(
                Instant::now() < deadline,
                "{}: never moved on",
                store.name()
            );
            thread::sleep(Duration::from_millis(1));
        }
    };
    assert!(
        after > before,
        "{}: IDs went back with the new worker",
        store.name()
    );
    assert_eq!(g.worker(), FOUR.decode(after).unwrap().worker);
    let thief = store.record(&ns, old).unwrap();
    assert_eq!(
        thief.holder,
        "thief",
        "{}: the old lease was written back",
        store.name()
    );
    // Held, once its next renewal lands: at the suite's 300 ms TTL, one
    // can be overdue on a busy machine, and the lease says `Renewing`.
    eventually("the new lease held", || {
        g.lease().unwrap().state == LeaseState::Held
    });
}

/// Two generators after a loss, one id: the healing holder and a new build
/// race for it; whichever wins, the other does not issue with it, and the
/// IDs of the two never meet.
pub fn a_healing_holder_and_a_new_build_race_for_one_id(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("race-heal");
    store.fresh(&ns);
    let a = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_secs(2))
        .build_atomic()
        .unwrap();
    let mut a_ids = run_to_fence_or(&a, 20);
    store.lose_data();
    let b = thread::scope(|scope| {
        let b = scope.spawn(|| {
            store
                .leased(ONE, &ns)
                .max_wait(Duration::from_secs(2))
                .build_atomic()
        });
        let deadline = Instant::now() + Duration::from_secs(4);
        while Instant::now() < deadline {
            if let Ok(id) = a.try_next_id() {
                a_ids.push(id);
            }
            thread::sleep(Duration::from_millis(1));
        }
        b.join().unwrap()
    });
    match b {
        // The new build won: the healing holder keeps asking, refused.
        Ok(b) => {
            let b_ids = run_to_fence_or(&b, 20);
            assert_eq!(
                a.lease().unwrap().state,
                LeaseState::Reacquiring,
                "{}",
                store.name()
            );
            assert!(matches!(a.try_next_id(), Err(IssueError::LeaseLost { .. })));
            let a_last = *a_ids.iter().max().unwrap();
            assert!(b_ids.iter().all(|&id| id > a_last), "{}", store.name());
        }
        // The holder won its id back: the build found every id held.
        Err(BuildError::Lease(LeaseError::AllHeld { held: 1, .. })) => {
            assert_in_force(&a, store.name());
            a.next_id().unwrap();
        }
        Err(e) => panic!("{}: {e}", store.name()),
    }
    assert_strictly_increasing(&a_ids, store.name());
}

/// Rule 4 with healing, its first half, kept deterministically: a
/// generator that healed issues nothing below its new lease's start, though
/// it is asked for IDs all the while it waits to get there.
pub fn a_healed_generator_issues_nothing_below_its_new_start(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("heal-start");
    store.fresh(&ns);
    let g = store
        .leased(ONE, &ns)
        .max_wait(Duration::from_secs(2))
        .build_atomic()
        .unwrap();
    let mut ids = run_to_fence_or(&g, 20);
    store.lose_data();
    // The lost lease's fence: it issues below it, and a new lease at or past
    // its own start, which the loss rule puts beyond it. That fence is not
    // what `g.lease()` says now: a renewal written just before the loss may
    // still be on its way back, and the generator then issues up to its
    // fence (rule 1), while its status may already show the new lease. But
    // it lies at most a TTL past the loss (rule 3), so an ID at or past
    // that is the new lease's.
    let old_lease_ends = SystemTime::now() + TTL;
    // Asked without waiting, every moment, until it issues again.
    let deadline = Instant::now() + TTL * 4 + SKEW * 4 + Duration::from_secs(2);
    loop {
        match g.try_next_id() {
            Ok(id) => {
                ids.push(id);
                let at = ONE.time_of(ONE.decode(id).unwrap().timestamp);
                if at >= old_lease_ends {
                    let starts = g.lease().unwrap().starts;
                    assert!(
                        at >= starts,
                        "{}: a healed generator issued {id} ({at:?}) below its new lease's \
                         start {starts:?}",
                        store.name()
                    );
                    break;
                }
            }
            Err(IssueError::LeaseLost { .. } | IssueError::WouldBlock { .. }) => {}
            Err(e) => panic!("{}: {e}", store.name()),
        }
        assert!(
            Instant::now() < deadline,
            "{}: never issued again after the loss",
            store.name()
        );
        thread::sleep(Duration::from_micros(200));
    }
    assert_strictly_increasing(&ids, store.name());
}

/// Rule 5 with healing: a generator that healed, and shuts down before it
/// issued anything under its new lease, gives that lease back at its start
/// (the fence its predecessor left), never lower: not at the unit after the
/// last ID it issued under the lease it lost.
pub fn a_release_after_a_heal_lowers_only_the_new_lease(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("heal-release");
    store.fresh(&ns);
    let g = store.leased(ONE, &ns).build_atomic().unwrap();
    let first_lease = g.lease().unwrap().starts;
    run_to_fence_or(&g, 20);
    store.lose_data();
    let deadline = Instant::now() + TTL * 4 + Duration::from_secs(2);
    let starts = loop {
        let status = g.lease().unwrap();
        if status.starts != first_lease && status.worker == 0 {
            break status.starts;
        }
        assert!(
            Instant::now() < deadline,
            "{}: no new lease after the loss: {status:?}",
            store.name()
        );
        thread::sleep(Duration::from_millis(2));
    };
    // Nothing was asked of it since the loss: nothing issued under it.
    g.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    let record = store.record(&ns, 0).unwrap();
    let starts_ms = starts.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    assert!(
        record.holder.is_empty() && record.fence_unix_millis >= starts_ms,
        "{}: the release after a heal lowered the new lease's fence to {} (its start is \
         {starts_ms}): {record:?}",
        store.name(),
        record.fence_unix_millis
    );
}

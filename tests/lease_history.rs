//! Registries that forget part of their history, with generators running:
//! a failover to a replica that missed renewals, on each backend, through
//! an address that follows the primary (and, for PostgreSQL, a URL that
//! lists both servers); two writable masters; a dropped lease table; and a
//! first install, which must not wait.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --features postgres,redis,mysql --test lease_history -- --nocapture
//! scripts/services.sh stop
//! ```
//!
//! The failover scenario: a layout of one worker bit; the other id held
//! by a generator that does not lease again; A holds one id and issues
//! throughout, with a TTL of 3 s. Replication to the replica is cut, A
//! renews twice on the primary, the primary stops and the replica is
//! promoted; B builds as soon as it can, on A's id or the other. Before
//! the marker named the server's history, both issued most of the IDs a
//! millisecond holds for the whole of the replica's lag (138,694–178,188
//! duplicates per run). Each run prints its figures.

#![cfg(remote)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakegen::lease::{self, DEFAULT_SKEW, Lease, LeaseError};
use flakegen::{BuildError, Builder, IdGenerator, IssueError, Layout, Snowflake};

use common::backend::ALL;
use common::pair::Pair;
use flakegen_contract::Failover;

/// One worker bit: A's id and the other.
const TWO: Layout = Layout::builder().worker_bits(1).build_const();
const TTL: Duration = Duration::from_secs(3);
/// How soon after the promotion every generator issues again: 5.1 s on a
/// quiet machine and beside two CPU hogs alone, 8.3 s once in a whole
/// suite beside them. A bound that a busy machine keeps, and that still
/// tells a heal from none.
const HEAL_BOUND: Duration = TTL
    .saturating_add(DEFAULT_SKEW)
    .saturating_add(Duration::from_secs(5));

/// The pairs are shared: one scenario at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unix_ms(id: Snowflake) -> u64 {
    TWO.unix_millis_of(TWO.decode(id).unwrap().timestamp)
}

fn system_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn namespace(test: &str) -> String {
    format!(
        "{test}-{}-{}",
        std::process::id(),
        system_ms(SystemTime::now())
    )
}

fn lease(url: &str, ns: &str) -> Lease {
    Lease::new(lease::connect(url).unwrap(), ns).ttl(TTL)
}

/// Stops the issuing threads when a scenario ends, however it ends: a
/// scope whose threads never stop would hold the test until CI's limit.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What a generator issued until `stop`, and the last fence its first
/// lease confirmed (it shows in its status until a new lease replaces it).
fn issue(g: &dyn IdGenerator, stop: &AtomicBool) -> (Vec<(Snowflake, Instant)>, u64) {
    let first = g.lease().unwrap().starts;
    let (mut ids, mut fence) = (vec![], 0);
    while !stop.load(Ordering::Relaxed) {
        match g.next_id() {
            Ok(id) => ids.push((id, Instant::now())),
            Err(IssueError::LeaseLost { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        let status = g.lease().unwrap();
        if status.starts == first {
            fence = fence.max(system_ms(status.fence));
        }
        thread::sleep(Duration::from_micros(200));
    }
    (ids, fence)
}

/// The failover scenario over `url`, where `promote` fails the pair over
/// and makes clients follow; returns the duplicates, how long after the
/// promotion A issued again, and B's first ID against A's last fence.
fn failover(name: &str, pair: &str, url: &str, promote: impl FnOnce()) -> usize {
    let ns = namespace("failover");
    let other = Builder::new()
        .layout(TWO)
        .lease(lease(url, &ns).reacquire(false))
        .build_atomic()
        .unwrap();
    let a = Builder::new()
        .layout(TWO)
        .lease(lease(url, &ns))
        .max_wait(HEAL_BOUND)
        .build_atomic()
        .unwrap();
    let stop = AtomicBool::new(false);
    let ((a_ids, a_fence), (other_ids, other_fence), b_ids, promoted_at) = thread::scope(|scope| {
        let _stop = StopOnDrop(&stop);
        let a_calls = scope.spawn(|| issue(&a, &stop));
        let other_calls = scope.spawn(|| issue(&other, &stop));
        common::backend::services(&["cut", pair]);
        // A renews twice on the primary, which the replica misses. Each
        // renewal is due a third of a TTL after the last; a busy machine
        // may delay it, which changes nothing here but the wait. (Beside
        // two CPU hogs, calls through the forwarder once timed out for
        // 10 s after the cut while the primary's log showed it up.)
        let mut fence = a.lease().unwrap().fence;
        for _ in 0..2 {
            let deadline = Instant::now() + Duration::from_secs(30);
            while a.lease().unwrap().fence == fence {
                assert!(
                    Instant::now() < deadline,
                    "{name}: no renewal within 30 s after the cut: {:?}",
                    a.lease().unwrap()
                );
                thread::sleep(Duration::from_millis(10));
            }
            fence = a.lease().unwrap().fence;
        }
        promote();
        let promoted_at = Instant::now();
        // B, as soon as the new primary grants it an id.
        let b = loop {
            let built = Builder::new()
                .layout(TWO)
                .lease(lease(url, &ns))
                .max_wait(HEAL_BOUND)
                .build_atomic();
            match built {
                Ok(b) => break b,
                Err(BuildError::Lease(
                    LeaseError::AllHeld { .. }
                    | LeaseError::Unreachable { .. }
                    | LeaseError::ReadOnly { .. },
                )) if promoted_at.elapsed() < HEAL_BOUND => {
                    thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("{name}: B: {e}"),
            }
        };
        let mut b_ids = vec![];
        // Until A's heal is due, and B has issued: on a busy machine B may
        // get its id late, and start later still.
        while (promoted_at.elapsed() < HEAL_BOUND + Duration::from_millis(500) || b_ids.is_empty())
            && promoted_at.elapsed() < Duration::from_secs(30)
        {
            match b.next_id() {
                Ok(id) => b_ids.push((id, Instant::now())),
                // On a busy machine B's renewals may come late and its lease
                // lapse: it stops at its fence, as a holder must.
                Err(IssueError::LeaseLost { .. } | IssueError::WouldBlock { .. }) => {}
                Err(e) => panic!("{name}: B: {e}"),
            }
            thread::sleep(Duration::from_micros(200));
        }
        stop.store(true, Ordering::Relaxed);
        (
            a_calls.join().unwrap(),
            other_calls.join().unwrap(),
            b_ids,
            promoted_at,
        )
    });
    let confirmed = a_fence.max(other_fence);
    let mut all: Vec<Snowflake> = [&a_ids, &other_ids, &b_ids]
        .iter()
        .flat_map(|ids| ids.iter().map(|i| i.0))
        .collect();
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    let duplicates = count - all.len();
    let (b_first, _) = *b_ids
        .first()
        .unwrap_or_else(|| panic!("{name}: B issued nothing within 30 s of the promotion"));
    let b_first = unix_ms(b_first);
    let again = a_ids
        .iter()
        .find(|(id, _)| unix_ms(*id) >= a_fence)
        .map(|(_, at)| at.saturating_duration_since(promoted_at));
    println!(
        "{name}: {count} IDs, {duplicates} duplicates; B's first ID {} ms past the last fence \
         the old primary confirmed; A issued again {again:?} after the promotion (bound \
         {HEAL_BOUND:?})",
        i128::from(b_first) - i128::from(confirmed)
    );
    assert_eq!(
        duplicates, 0,
        "{name}: IDs issued twice across the failover"
    );
    assert!(
        b_first >= confirmed,
        "{name}: B started at {b_first}, below the fence {confirmed} the old primary confirmed"
    );
    let again = again.unwrap_or_else(|| panic!("{name}: A never issued again"));
    assert!(
        again <= HEAL_BOUND,
        "{name}: A issued again {again:?} after"
    );
    duplicates
}

/// The scenario on each backend's pair, clients following the primary
/// through a forwarder.
#[test]
fn a_failover_to_a_lagging_replica_issues_no_id_twice() {
    let _serial = serial();
    for &backend in ALL {
        let pair = Pair::new(backend);
        let name = format!("{}-pair", backend.service);
        failover(&name, &name, &pair.url(), || Failover::promote(&pair));
        pair.services("rejoin");
    }
}

/// PostgreSQL's own way to follow a failover: every server in the URL,
/// and the client connects to the one that takes writes.
#[cfg(feature = "postgres")]
#[test]
fn a_failover_followed_by_a_multi_host_url_issues_no_id_twice() {
    let _serial = serial();
    let backend = &common::postgres::BACKEND;
    let address = |member: &str| {
        let url = backend.member_url(member);
        let rest = url.split_once('@').unwrap().1;
        rest.split('/').next().unwrap().to_owned()
    };
    let first = backend.member_url("a");
    let (base, _) = first.split_once('@').unwrap();
    let url = format!(
        "{base}@{},{}/postgres?target_session_attrs=read-write",
        address("a"),
        address("b")
    );
    let pair = Pair::new(backend);
    failover("postgres, multi-host URL", "postgres-pair", &url, || {
        pair.services("promote");
    });
    pair.services("rejoin");
}

/// Two masters that both take writes cannot give a compare-and-set: a
/// generator is refused on either side, and told why and what to do.
#[cfg(feature = "mysql")]
#[test]
fn two_writable_masters_are_refused_with_what_to_do() {
    let _serial = serial();
    let pair = Pair::new(&common::mysql::BACKEND);
    common::backend::services(&["writable", "mariadb-pair", "both"]);
    let refused = (|| {
        for member in ["a", "b"] {
            let url = common::mysql::BACKEND.member_url(member);
            let built = Builder::new()
                .layout(TWO)
                .lease(lease(&url, &namespace("two-masters")))
                .build_atomic();
            let e = match built {
                Err(BuildError::Lease(e @ LeaseError::MultiWriter { .. })) => e,
                other => return Err(format!("{member}: {other:?}")),
            };
            let message = e.to_string();
            for words in [
                "takes writes and replicates from 127.0.0.1:",
                "which takes writes too (read_only = OFF)",
                "with two writable masters each side grants leases alone",
                "Point every generator at one side, and set read_only = ON on the other",
            ] {
                if !message.contains(words) {
                    return Err(format!("{member}: {message:?} lacks {words:?}"));
                }
            }
        }
        Ok(())
    })();
    common::backend::services(&["writable", "mariadb-pair", "one"]);
    refused.unwrap();
    // One writable side again: leases there.
    let g = Builder::new()
        .layout(TWO)
        .lease(lease(&pair.url(), &namespace("one-master")))
        .build_atomic()
        .unwrap();
    g.next_id().unwrap();
}

/// A first install takes no wait: the tables flakegen creates together say
/// nothing was lost. Dropping the lease table under running generators is
/// a loss: they lease again, and a new build waits the TTL and the skew.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[test]
fn a_first_install_builds_at_once_and_a_dropped_table_is_a_loss() {
    let _serial = serial();
    for &backend in ALL.iter().filter(|b| b.admin.is_some()) {
        let fresh = fresh_database(backend);
        let ns = namespace("install");
        let started = Instant::now();
        let g = Builder::new()
            .layout(TWO)
            .lease(lease(&fresh, &ns))
            .build_atomic()
            .unwrap();
        let id = g.next_id().unwrap();
        let took = started.elapsed();
        println!(
            "{}: a first build on an empty database took {took:?}",
            backend.name
        );
        assert!(
            g.lease().unwrap().starts <= SystemTime::now() && took < Duration::from_secs(2),
            "{}: a first install waited: {took:?}, {:?}",
            backend.name,
            g.lease()
        );

        let dropped_at = system_ms(SystemTime::now());
        backend.sql(&fresh, "DROP TABLE flakegen_leases");
        // The holder loses its lease, and leases again under the new marker.
        let deadline = Instant::now() + HEAL_BOUND;
        while g.lease().unwrap().starts <= UNIX_EPOCH + Duration::from_millis(dropped_at) {
            assert!(
                Instant::now() < deadline,
                "{}: the holder never noticed the drop: {:?}",
                backend.name,
                g.lease()
            );
            thread::sleep(Duration::from_millis(20));
        }
        let rule = dropped_at + (TTL + DEFAULT_SKEW).as_millis() as u64;
        let starts = system_ms(g.lease().unwrap().starts);
        assert!(starts >= rule, "{}: {starts} < {rule}", backend.name);
        // A new build waits for the loss rule too.
        let h = Builder::new()
            .layout(TWO)
            .lease(lease(&fresh, &ns))
            .max_wait(HEAL_BOUND)
            .build_atomic()
            .unwrap();
        let first = h.next_id().unwrap();
        assert!(unix_ms(first) >= rule, "{}", backend.name);
        assert!(first > id, "{}", backend.name);
        assert_eq!(
            g.lease().unwrap().state,
            flakegen::lease::LeaseState::Held,
            "{}",
            backend.name
        );
    }
}

/// A database of its own on the backend's server: nothing of flakegen's in it.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn fresh_database(backend: &common::backend::Backend) -> String {
    let url = backend.url();
    let name = format!(
        "flakegen_fresh_{}_{}",
        std::process::id(),
        system_ms(SystemTime::now())
    );
    backend.sql(&url, &format!("CREATE DATABASE {name}"));
    let (base, _) = url.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}

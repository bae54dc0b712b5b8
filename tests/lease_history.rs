//! Registries that forget part of their history, with generators running:
//! a failover to a replica that missed renewals, on each registry's pair,
//! through an address that follows the primary (and, for PostgreSQL, a URL
//! that lists both servers); two writable masters; a dropped lease table;
//! a lease table or a data directory restored, each told apart by one part
//! of the marker's stamp alone; a restore in place that nothing tells, which
//! only `Lease::wait_out_rollbacks` survives; and a new namespace, which
//! waits once unless made ready first (`flakegen leases init`).
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --all-features --test lease_history -- --nocapture
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

#![cfg(feature = "remote")]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakegen::lease::{self, Lease, LeaseError};
use flakegen::{BuildError, Builder, IdGenerator, IssueError, Layout, Snowflake};

use common::replicated::Replicated;
use common::server::{ALL, pairs};
use common::services::services;
use flakegen_contract::Failover;

/// One worker bit: A's id and the other.
const TWO: Layout = Layout::builder().worker_bits(1).build_const();
const TTL: Duration = Duration::from_secs(3);
/// How soon after the promotion every generator issues again: 5.1 s on a
/// quiet machine and beside two CPU hogs alone, 8.3 s once in a whole
/// suite beside them. A bound that a busy machine keeps, and that still
/// tells a heal from none.
const HEAL_BOUND: Duration = TTL
    .saturating_add(Lease::DEFAULT_SKEW)
    .saturating_add(Duration::from_secs(5));

/// The services are shared: one scenario at a time on each (a
/// `scripts/services.sh` service's name), and scenarios on different
/// services side by side, since most of a scenario is waiting out TTLs.
fn serial(service: &str) -> MutexGuard<'static, ()> {
    static SERVICES: Mutex<Vec<(String, &'static Mutex<()>)>> = Mutex::new(Vec::new());
    let one = {
        let mut all = SERVICES.lock().unwrap_or_else(PoisonError::into_inner);
        match all.iter().find(|(name, _)| name == service) {
            Some((_, one)) => *one,
            None => {
                let one: &'static Mutex<()> = Box::leak(Box::new(Mutex::new(())));
                all.push((service.to_owned(), one));
                one
            }
        }
    };
    one.lock().unwrap_or_else(PoisonError::into_inner)
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
        services(&["cut", pair]);
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

/// The scenario on each registry's pair, clients following the primary
/// through a forwarder.
#[test]
fn a_failover_to_a_lagging_replica_issues_no_id_twice() {
    for server in pairs() {
        let _serial = serial(server.replicated);
        let pair = Replicated::new(server);
        let name = server.replicated;
        failover(name, name, &pair.url(), || Failover::promote(&pair));
        pair.services("rejoin", &[]);
    }
}

/// PostgreSQL's own way to follow a failover: every server in the URL,
/// and the client connects to the one that takes writes.
#[cfg(feature = "postgres")]
#[test]
fn a_failover_followed_by_a_multi_host_url_issues_no_id_twice() {
    let server = &common::postgres::SERVER;
    let _serial = serial(server.replicated);
    let address = |member: &str| {
        let url = server.member_url(member);
        let rest = url.split_once('@').unwrap().1;
        rest.split('/').next().unwrap().to_owned()
    };
    let first = server.member_url("a");
    let (base, _) = first.split_once('@').unwrap();
    let url = format!(
        "{base}@{},{}/postgres?target_session_attrs=read-write",
        address("a"),
        address("b")
    );
    let pair = Replicated::new(server);
    failover("postgres, multi-host URL", "postgres-pair", &url, || {
        pair.services("promote", &[]);
    });
    pair.services("rejoin", &[]);
}

/// Two masters that both take writes cannot give a compare-and-set: a
/// generator is refused on either side, and told why and what to do.
#[cfg(feature = "mysql")]
#[test]
fn two_writable_masters_are_refused_with_what_to_do() {
    let server = &common::mysql::SERVER;
    let _serial = serial(server.replicated);
    let pair = Replicated::new(server);
    pair.services("writable", &["both"]);
    let refused = (|| {
        for member in ["a", "b"] {
            let url = server.member_url(member);
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
    pair.services("writable", &["one"]);
    refused.unwrap();
    // One writable side again: leases there.
    let g = Builder::new()
        .layout(TWO)
        .lease(lease(&pair.url(), &namespace("one-master")))
        .build_atomic()
        .unwrap();
    g.next_id().unwrap();
}

/// A second master made writable while a connection to the first is open
/// and leasing: the next acquisition on that connection is refused, as a
/// new connection's would be, and renewals on it within 10 s.
#[cfg(feature = "mysql")]
#[test]
fn a_peer_made_writable_later_is_seen_by_connections_already_open() {
    let server = &common::mysql::SERVER;
    let _serial = serial(server.replicated);
    let pair = Replicated::new(server);
    let url = server.member_url(&pair.primary());
    let registry = lease::connect(&url).unwrap();
    let ns = namespace("later");
    let lease = Lease::new(std::sync::Arc::clone(&registry), &ns).ttl(TTL);
    common::ready(&[&lease]);
    let g = Builder::new()
        .layout(TWO)
        .lease(lease.clone())
        .build_atomic()
        .unwrap();
    g.next_id().unwrap();
    pair.services("writable", &["both"]);
    let again = Builder::new().layout(TWO).lease(lease).build_atomic();
    // The holder's renewals on the open connection see it within 10 s.
    let deadline = Instant::now() + Duration::from_secs(15);
    let renewing = loop {
        let status = g.lease().unwrap();
        if status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("takes writes too"))
        {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        thread::sleep(Duration::from_millis(50));
    };
    pair.services("writable", &["one"]);
    match again {
        Err(BuildError::Lease(LeaseError::MultiWriter { .. })) => {}
        other => panic!("an acquisition on an open connection was not refused: {other:?}"),
    }
    assert!(
        renewing,
        "renewals on the open connection never saw the second master: {:?}",
        g.lease()
    );
}

/// A namespace the registry has no trace of is new or was emptied, and
/// nothing tells which: its first build waits the TTL and the skew once,
/// and says why. Made ready first (`flakegen leases init`, which pays
/// that wait itself), it builds at once. On every registry's own server,
/// at the default TTL and skew; each run prints the two first builds'
/// times.
#[test]
fn a_new_namespace_waits_once_unless_made_ready() {
    let (ttl, skew) = (flakegen::lease::Lease::DEFAULT_TTL, Lease::DEFAULT_SKEW);
    // The registries side by side: each waits 12 s.
    thread::scope(|scope| {
        for server in ALL {
            scope.spawn(move || {
                let _serial = serial(server.service());
                let url = server.url();
                let build = |ns: &str| {
                    let started = Instant::now();
                    let g = Builder::new()
                        .layout(TWO)
                        .lease(Lease::new(lease::connect(&url).unwrap(), ns))
                        .build_atomic()
                        .unwrap();
                    g.next_id().unwrap();
                    (g, started.elapsed())
                };
                // Marked now: ready by the time the wait below is over.
                let prepared = namespace("ready");
                let preparing = Lease::new(lease::connect(&url).unwrap(), prepared.as_str());
                assert!(preparing.prepare().unwrap().marked, "{}", server.name);
                let undeclared = namespace("new");
                let (g, waited) = build(&undeclared);
                let status = g.lease().unwrap();
                assert!(
                    matches!(
                        status.start_cause,
                        flakegen::lease::StartCause::Marker { .. }
                    ) && waited >= ttl + skew - Duration::from_millis(50),
                    "{}: an undeclared new namespace's first build took {waited:?}: {status:?}",
                    server.name
                );
                let said = status.start_cause.to_string();
                assert!(said.contains("marker"), "{said}");
                // Once the marker's wait is over, the namespace's next build does
                // not wait again.
                let (_, next) = build(&undeclared);
                assert!(next < Duration::from_secs(2), "{}: {next:?}", server.name);

                common::ready(&[&preparing]);
                let (g, at_once) = build(&prepared);
                assert!(
                    g.lease().unwrap().starts <= SystemTime::now(),
                    "{}: a namespace made ready waited {at_once:?}: {:?}",
                    server.name,
                    g.lease()
                );
                println!(
                    "{}: a new namespace's first build took {waited:?} (TTL {ttl:?} + skew \
                     {skew:?}), {at_once:?} made ready first, {next:?} once the marker's wait \
                     was over",
                    server.name
                );
            });
        }
    });
}

/// Dropping the lease table under running generators is a loss: they
/// lease again, and a new build waits the TTL and the skew.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[test]
fn a_dropped_lease_table_is_a_loss() {
    for server in ALL
        .iter()
        .filter(|s| matches!(s.loss, common::server::Loss::Sql(_)))
    {
        let _serial = serial(server.service());
        let url = server.url();
        let ns = namespace("dropped");
        common::ready(&[&lease(&url, &ns)]);
        let g = Builder::new()
            .layout(TWO)
            .lease(lease(&url, &ns))
            .build_atomic()
            .unwrap();
        let id = g.next_id().unwrap();
        let dropped_at = system_ms(SystemTime::now());
        server.services("sql", &["DROP TABLE flakegen_leases"]);
        // The holder loses its lease, and leases again under the new marker.
        let deadline = Instant::now() + HEAL_BOUND;
        while g.lease().unwrap().starts <= UNIX_EPOCH + Duration::from_millis(dropped_at) {
            assert!(
                Instant::now() < deadline,
                "{}: the holder never noticed the drop: {:?}",
                server.name,
                g.lease()
            );
            thread::sleep(Duration::from_millis(20));
        }
        let rule = dropped_at + (TTL + Lease::DEFAULT_SKEW).as_millis() as u64;
        let starts = system_ms(g.lease().unwrap().starts);
        assert!(starts >= rule, "{}: {starts} < {rule}", server.name);
        // A new build waits for the loss rule too.
        let h = Builder::new()
            .layout(TWO)
            .lease(lease(&url, &ns))
            .max_wait(HEAL_BOUND)
            .build_atomic()
            .unwrap();
        let first = h.next_id().unwrap();
        assert!(unix_ms(first) >= rule, "{}", server.name);
        assert!(first > id, "{}", server.name);
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
/// One id: A holds it and issues; a copy of the registry is taken
/// (`save`); A renews for longer than a TTL; the copy comes back
/// (`restore`: a lease table from its dump, a data directory copied,
/// a clone promoted); B builds on the only id as soon as it can, and both
/// issue. Returns the IDs issued twice.
fn restored(
    name: &str,
    pair: &Replicated,
    (ttl, rollbacks): (Duration, bool),
    save: impl FnOnce(),
    restore: impl FnOnce(),
) -> usize {
    let url = pair.url();
    let ns = namespace("restored");
    let terms = |ns: &str| lease(&url, ns).ttl(ttl).wait_out_rollbacks(rollbacks);
    common::ready(&[&terms(&ns)]);
    // A does not lease again once lost: the one id is B's to take, and a
    // busy machine cannot hand A's heal the race against B's build.
    let a = Builder::new()
        .layout(ONE)
        .lease(terms(&ns).reacquire(false))
        .build_atomic()
        .unwrap();
    let stop = AtomicBool::new(false);
    let b = std::sync::OnceLock::new();
    let (a_ids, b_ids) = thread::scope(|scope| {
        let _stop = StopOnDrop(&stop);
        let a_calls = scope.spawn(|| issue(&a, &stop));
        thread::sleep(Duration::from_millis(500));
        save();
        // Past a TTL: the copy's record of A has expired by the time it
        // comes back, and its fence is far behind A's.
        thread::sleep(ttl + Duration::from_millis(700));
        restore();
        let restored_at = Instant::now();
        let b = loop {
            match Builder::new()
                .layout(ONE)
                .lease(terms(&ns))
                .max_wait(HEAL_BOUND)
                .build_atomic()
            {
                Ok(built) => break b.get_or_init(|| built),
                Err(BuildError::Lease(
                    LeaseError::AllHeld { .. }
                    | LeaseError::Unreachable { .. }
                    | LeaseError::ReadOnly { .. },
                )) if restored_at.elapsed() < Duration::from_secs(30) => {
                    thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("{name}: B: {e}"),
            }
        };
        let stop = &stop;
        let b_calls = scope.spawn(move || issue(b, stop));
        thread::sleep(ttl + Lease::DEFAULT_SKEW + Duration::from_secs(1));
        stop.store(true, Ordering::Relaxed);
        (a_calls.join().unwrap().0, b_calls.join().unwrap().0)
    });
    let mut all: Vec<Snowflake> = a_ids.iter().chain(&b_ids).map(|i| i.0).collect();
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    let duplicates = count - all.len();
    println!(
        "{name}{}: {} IDs from A, {} from B, {duplicates} issued twice",
        if rollbacks {
            ", waiting out rollbacks"
        } else {
            ""
        },
        a_ids.len(),
        b_ids.len()
    );
    duplicates
}

/// One id, 1 ms units.
#[cfg(any(feature = "postgres", feature = "mysql"))]
const ONE: Layout = Layout::builder().worker_bits(0).build_const();

/// Each part of a marker's stamp is the only one to tell some restore,
/// and tells it: removing it from the stamp lets the scenario of
/// [`restored`] issue IDs twice.
///
/// - PostgreSQL, the lease table's oid: the table restored from a dump
///   with its sentinel row (the same cluster, timeline and sentinel).
/// - MariaDB, the table's creation time: the same, on the same server;
///   and its data directory restored in place from a copy (the same
///   server, sentinel and rows: but MariaDB reads a table's creation time
///   from its files, and a restore writes them anew).
/// - MariaDB, the server's identity: a failover to a lagging replica
///   whose lease table was created, by replication, in the same second as
///   the primary's (the same sentinel too), as a replica set up before
///   flakegen's first use has it.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[test]
fn each_part_of_a_stamp_alone_tells_a_restore() {
    // Every scenario runs, and the failures are told together: a part
    // taken out shows each restore that only it tells.
    let mut untold = vec![];
    let mut run = |pair: &Replicated, witness: &str, what: &str, save: &str, restore: &str| {
        let name = flakegen_contract::Fixture::name(pair);
        let twice = restored(
            &format!("{name}, {what}"),
            pair,
            (TTL, false),
            || drop(pair.services(save, &[])),
            || match restore {
                "promote" => Failover::promote(pair),
                verb => drop(pair.services(verb, &[])),
            },
        );
        pair.services("rejoin", &[]);
        if twice > 0 {
            untold.push(format!(
                "{name}: {witness} did not tell {what} ({twice} IDs issued twice)"
            ));
        }
    };
    #[cfg(feature = "postgres")]
    {
        let _serial = serial(common::postgres::SERVER.replicated);
        let pair = Replicated::new(&common::postgres::SERVER);
        let what = "the lease table restored from a dump";
        run(&pair, "the lease table's oid", what, "dump", "undump");
    }
    #[cfg(feature = "mysql")]
    {
        let _serial = serial(common::mysql::SERVER.replicated);
        let pair = Replicated::new(&common::mysql::SERVER);
        let created = "the lease table's creation time";
        run(
            &pair,
            created,
            "the lease table restored from a dump",
            "dump",
            "undump",
        );
        let what = "its data directory restored in place";
        run(&pair, created, what, "backup", "unbackup");
        twin_tables(&pair);
        let what = "a lagging replica whose table was created with the primary's, promoted";
        run(&pair, "the server's identity", what, "cut", "promote");
    }
    assert!(untold.is_empty(), "{}", untold.join("\n"));
}

/// Both of flakegen's tables dropped and created anew on the primary of
/// `pair` while its replica copies them, until the replica's lease table
/// is dated the same second as the primary's: after a failover, only the
/// server tells the two apart.
#[cfg(feature = "mysql")]
fn twin_tables(pair: &Replicated) {
    let created = "SELECT UNIX_TIMESTAMP(CREATE_TIME) FROM information_schema.TABLES \
                   WHERE TABLE_SCHEMA = 'flakegen' AND TABLE_NAME = 'flakegen_leases'";
    let primary = pair.primary();
    let replica = if primary == "a" { "b" } else { "a" };
    for _ in 0..10 {
        pair.services("wipe", &[]);
        lease::connect(&pair.url()).unwrap().mark("twin").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut copied = String::new();
        while copied.is_empty() && Instant::now() < deadline {
            copied = pair.services("sql", &[created, replica]);
            thread::sleep(Duration::from_millis(50));
        }
        if copied == pair.services("sql", &[created, &primary]) {
            return;
        }
    }
    panic!("mysql: the replica's lease table was never dated as the primary's");
}

/// A restore in place that nothing in the registry can tell: a copy of
/// PostgreSQL's data directory put back on the same host and port (the
/// same cluster, timeline, tables and sentinel: only older), as a disk
/// snapshot rolled back would be on any registry. By default the copy's
/// records are trusted, and IDs are issued twice; with
/// `Lease::wait_out_rollbacks`, every grant waits the TTL and the skew
/// past its read, and none is. At a TTL of 8 s: the server's restart for
/// the restore takes seconds, and A must still be issuing below its fence
/// when it is back.
#[cfg(feature = "postgres")]
#[test]
fn a_restore_in_place_needs_waiting_out_rollbacks() {
    let _serial = serial(common::postgres::SERVER.replicated);
    let pair = Replicated::new(&common::postgres::SERVER);
    let run = |rollbacks| {
        let twice = restored(
            "postgres, its data directory restored in place",
            &pair,
            (Duration::from_secs(8), rollbacks),
            || drop(pair.services("backup", &[])),
            || drop(pair.services("unbackup", &[])),
        );
        pair.services("rejoin", &[]);
        twice
    };
    assert!(
        run(false) > 0,
        "postgres: a data directory restored in place was told from the original: this \
         scenario no longer shows what the rollback mode is for"
    );
    assert_eq!(
        run(true),
        0,
        "postgres: IDs issued twice while waiting out rollbacks"
    );
}

//! Renewals that land in time, on every registry's own server: a connection
//! that dies without a word (a peer gone, a NAT entry expired) while new
//! connections are held for a second costs a retry on a new connection,
//! never a refusal, when the registry answers that new connection well
//! before the fence. Each registry is reached through forwarders (one per
//! member of the etcd cluster) that can leave their connections open and
//! silent. A renewal's expiry lies the TTL past the time it says it wrote,
//! however long the server is held while it writes. And on MariaDB, a
//! write InnoDB rolls back as a deadlock's victim is made again.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --all-features --test lease_renewals -- --nocapture
//! ```

#![cfg(feature = "remote")]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::forwarder::forwarded;
use common::server::ALL;
use flakegen::lease::{self, Lease};
use flakegen::{Builder, IdGenerator, Layout, Snowflake};

/// The terms of the issue that found it: a TTL of 3 s, a skew of 500 ms.
const TTL: Duration = Duration::from_secs(3);
const SKEW: Duration = Duration::from_millis(500);
/// How long new connections wait once the open ones went dead.
const HOLD: Duration = Duration::from_secs(1);

fn namespace() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("renewals-{}-{nanos}", std::process::id())
}

/// A namespace on each server of `ALL`, in its order, made ready for builds
/// that start at once: all waited out together.
fn namespaces_ready() -> Vec<String> {
    let namespaces: Vec<String> = ALL.iter().map(|_| namespace()).collect();
    let leases: Vec<Lease> = ALL
        .iter()
        .zip(&namespaces)
        .map(|(server, ns)| {
            Lease::new(lease::connect(&server.url()).unwrap(), ns.as_str())
                .ttl(TTL)
                .skew(SKEW)
        })
        .collect();
    common::ready(&leases.iter().collect::<Vec<_>>());
    namespaces
}

/// A connection gone dead right after a renewal, new ones held a second:
/// on every registry, no call refused, no ID twice.
#[test]
fn a_connection_that_dies_silently_costs_no_refusal() {
    for (server, ns) in ALL.iter().zip(namespaces_ready()) {
        let (url, forwarders) = forwarded(&server.url());
        let registry = lease::connect(&url).unwrap();
        let g = Builder::new()
            .layout(Layout::TWITTER)
            .lease(Lease::new(registry, &ns).ttl(TTL).skew(SKEW))
            .build_atomic()
            .unwrap();
        let stop = AtomicBool::new(false);
        let (ids, refused) = thread::scope(|scope| {
            let calls = scope.spawn(|| {
                let (mut ids, mut refused) = (Vec::<Snowflake>::new(), 0u64);
                while !stop.load(Ordering::Relaxed) {
                    match g.try_next_id() {
                        Ok(id) => ids.push(id),
                        Err(_) => refused += 1,
                    }
                    thread::sleep(Duration::from_micros(500));
                }
                (ids, refused)
            });
            // Right after a renewal: the fence as far ahead as it gets.
            let fence = g.lease().unwrap().fence;
            let deadline = Instant::now() + TTL * 3;
            while g.lease().unwrap().fence == fence && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(5));
            }
            for forwarder in &forwarders {
                forwarder.go_dead(HOLD);
            }
            thread::sleep(TTL + SKEW + Duration::from_secs(1));
            stop.store(true, Ordering::Relaxed);
            calls.join().unwrap()
        });
        let status = g.lease().unwrap();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        println!(
            "{}: a connection dead, new ones held {HOLD:?}, TTL {TTL:?}: {} IDs, {refused} \
             refused; the lease {:?}, its fence {:?} ahead",
            server.name,
            ids.len(),
            status.state,
            status
                .fence
                .duration_since(SystemTime::now())
                .unwrap_or_default()
        );
        assert_eq!(sorted.len(), ids.len(), "{}: IDs issued twice", server.name);
        assert_eq!(
            refused, 0,
            "{}: {refused} calls refused though the registry answered new connections \
             {HOLD:?} after the old one died, well before the fence: {status:?}",
            server.name
        );
    }
}

/// A build on a registry whose open connection (another generator's)
/// died without a word: the build gives that connection up within the
/// call timeout and leases on a new one, rather than failing.
#[test]
fn a_build_on_a_connection_that_died_silently_leases_on_a_new_one() {
    for (server, ns) in ALL.iter().zip(namespaces_ready()) {
        let (url, forwarders) = forwarded(&server.url());
        let registry = lease::connect(&url).unwrap();
        let lease = Lease::new(registry, &ns).ttl(TTL).skew(SKEW);
        let first = Builder::new()
            .layout(Layout::TWITTER)
            .lease(lease.clone())
            .build_atomic()
            .unwrap();
        // Before the first generator's next renewal, which would find the
        // connection dead and replace it.
        for forwarder in &forwarders {
            forwarder.go_dead(Duration::ZERO);
        }
        let second = Builder::new()
            .layout(Layout::TWITTER)
            .lease(lease)
            .build_atomic()
            .unwrap_or_else(|e| panic!("{}: {e}", server.name));
        assert_ne!(first.worker(), second.worker(), "{}", server.name);
        second.next_id().unwrap();
    }
}

/// A statement that locks `worker`'s record of `namespace` for `seconds`,
/// on the registries whose records are rows.
fn hold_row(server: &str, namespace: &str, worker: u64, seconds: u64) -> Option<String> {
    let row = format!(
        "SELECT 1 FROM flakegen_leases WHERE namespace = '{namespace}' AND worker = {worker} \
         FOR UPDATE"
    );
    match server {
        "postgres" => Some(format!("BEGIN; {row}; SELECT pg_sleep({seconds}); COMMIT")),
        "mysql" => Some(format!("BEGIN; {row}; DO SLEEP({seconds}); COMMIT")),
        _ => None,
    }
}

/// Two generators on one registry, the first one's record locked by
/// another session for twice the TTL: its renewals hang on the lock and
/// time out, again and again, while the second's, on the same registry,
/// land as if nothing happened. Calls share no lock of the client's.
#[test]
fn a_stuck_renewal_holds_up_no_other_on_the_same_registry() {
    for (server, ns) in ALL.iter().zip(namespaces_ready()) {
        let Some(hold) = hold_row(server.name, &ns, 0, 2 * TTL.as_secs()) else {
            continue;
        };
        let registry = lease::connect(&server.url()).unwrap();
        let lease = Lease::new(registry, &ns).ttl(TTL).skew(SKEW);
        let build = || {
            let g = Builder::new().layout(Layout::TWITTER).lease(lease.clone());
            g.build_atomic().unwrap()
        };
        let (stuck, other) = (build(), build());
        assert_eq!(stuck.worker(), 0, "{}", server.name);
        let (ids, refused) = thread::scope(|scope| {
            let locked = scope.spawn(|| server.services("sql", &[&hold]));
            let (mut ids, mut refused) = (Vec::<Snowflake>::new(), 0u64);
            while !locked.is_finished() {
                match other.try_next_id() {
                    Ok(id) => ids.push(id),
                    Err(_) => refused += 1,
                }
                thread::sleep(Duration::from_micros(500));
            }
            locked.join().unwrap();
            (ids, refused)
        });
        println!(
            "{}: the first generator's record locked {:?}: the second issued {} IDs, {refused} \
             refused; the first {:?}",
            server.name,
            2 * TTL,
            ids.len(),
            stuck.lease().unwrap().state
        );
        assert_eq!(
            refused,
            0,
            "{}: the second generator refused while the first one's renewals hung: {:?}",
            server.name,
            other.lease()
        );
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{}", server.name);
    }
}

/// A write says when it wrote by the clock reading its expiry counts from:
/// a renewal's expiry lies the TTL past the time it returns, however long
/// the server is held in between. PostgreSQL read its clock again to
/// return it, and a loaded server, held between the two, stored an expiry
/// short of the TTL past the time it gave (5 ms, in the contract's suite
/// beside other suites). A trigger that sleeps holds it here.
#[cfg(feature = "postgres")]
#[test]
fn a_write_says_the_time_its_expiry_counts_from() {
    use flakegen::lease::backend::{Expect, NewRecord, ReadRequest, Registry};

    let postgres = &common::postgres::SERVER;
    let registry = flakegen::lease::PostgresRegistry::new(&postgres.url()).unwrap();
    let ns = namespace();
    let marker = registry.mark(&ns).unwrap();
    let stall = format!("flakegen_stall_{}", std::process::id());
    postgres.services(
        "sql",
        &[&format!(
            "CREATE OR REPLACE FUNCTION {stall}() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$; \
             CREATE TRIGGER {stall} BEFORE INSERT OR UPDATE ON flakegen_leases FOR EACH ROW \
             WHEN (NEW.namespace = '{ns}') EXECUTE FUNCTION {stall}()"
        )],
    );
    // The first write inserts the record, the second updates it.
    let mut found = vec![];
    for version in [None, Some(1)] {
        let record = NewRecord {
            holder: "a",
            version: version.unwrap_or(0) + 1,
            ttl_millis: 5_000,
            fence_unix_millis: 1_000,
        };
        let expect = Expect {
            marker_unix_millis: marker,
            version,
        };
        let written = registry.swap(&ns, 0, expect, &record).unwrap();
        let stored = registry
            .read(&ns, &ReadRequest::new(1).prefer(Some(0)))
            .unwrap()
            .records
            .into_iter()
            .find(|r| r.worker == 0)
            .map(|r| r.expires_unix_millis);
        found.push((written, stored));
    }
    postgres.services(
        "sql",
        &[&format!(
            "DROP TRIGGER {stall} ON flakegen_leases; DROP FUNCTION {stall}()"
        )],
    );
    for (written, stored) in found {
        let written = written.expect("written");
        assert_eq!(
            stored,
            Some(written + 5_000),
            "a write said it wrote at {written}, and stored an expiry other than the TTL past it"
        );
    }
}

/// Runs `call` on a thread while another session on MariaDB holds the
/// rows `first` locks, in a transaction that has changed rows (which
/// InnoDB weighs when it picks a victim); once `call` waits on that
/// session, the session runs `then`, which waits on `call`: a cycle, of
/// which InnoDB rolls back the lighter side, `call`. The session then
/// rolls back, and `call`'s answer is returned.
#[cfg(feature = "mysql")]
fn as_deadlocks_victim<R: Send>(first: &str, then: &str, call: impl FnOnce() -> R + Send) -> R {
    use mysql_async::prelude::Queryable;

    let url = common::mysql::SERVER.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let connect = || {
        runtime
            .block_on(mysql_async::Conn::from_url(url.as_str()))
            .unwrap()
    };
    let (mut session, mut watcher) = (connect(), connect());
    let number = |conn: &mut mysql_async::Conn, sql: &str| -> i64 {
        let found: Option<(String, i64)> = runtime.block_on(conn.query_first(sql)).unwrap();
        found.map_or(0, |(_, n)| n)
    };
    let deadlocks =
        |conn: &mut mysql_async::Conn| number(conn, "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'");
    let before = deadlocks(&mut watcher);
    let mut sql = |statement: &str| runtime.block_on(session.query_drop(statement));
    sql("BEGIN").unwrap();
    sql(first).unwrap();
    let blocked_by_session = format!(
        "SELECT 'waits', COUNT(*) FROM information_schema.INNODB_LOCK_WAITS w \
         JOIN information_schema.INNODB_TRX t ON t.trx_id = w.blocking_trx_id \
         WHERE t.trx_mysql_thread_id = {}",
        session.id()
    );
    let answer = thread::scope(|scope| {
        let call = scope.spawn(call);
        while number(&mut watcher, &blocked_by_session) == 0 {
            assert!(
                !call.is_finished(),
                "the call never waited on the session's rows"
            );
            // InnoDB's tables of transactions are refreshed only when they
            // were not read for 0.1 s.
            thread::sleep(Duration::from_millis(150));
        }
        let mut sql = |statement: &str| runtime.block_on(session.query_drop(statement));
        sql(then).expect("InnoDB rolled back the session, not the call");
        sql("ROLLBACK").unwrap();
        call.join().unwrap()
    });
    assert!(
        deadlocks(&mut watcher) > before,
        "InnoDB found no deadlock: the call did not hold a row the session then waited on"
    );
    answer
}

/// A renewal InnoDB rolls back as a deadlock's victim is made again: each
/// of its statements commits alone, so the one rolled back wrote nothing,
/// and the write lands. The renewal takes its record's row, then waits on
/// the marker's, which another session holds; that session then asks for
/// the record's. Found where builds raced after a failover: the deadlock
/// failed a build.
#[cfg(feature = "mysql")]
#[test]
fn a_renewal_chosen_as_a_deadlocks_victim_is_made_again() {
    use flakegen::lease::backend::{Expect, NewRecord, Registry};

    let registry = flakegen::lease::MysqlRegistry::new(&common::mysql::SERVER.url()).unwrap();
    let ns = namespace();
    let marker = registry.mark(&ns).unwrap();
    let write = |version: u64| NewRecord {
        holder: "a",
        version,
        ttl_millis: 60_000,
        fence_unix_millis: 1_000,
    };
    let expect = |version| Expect {
        marker_unix_millis: marker,
        version,
    };
    registry
        .swap(&ns, 0, expect(None), &write(1))
        .unwrap()
        .expect("the record inserted");
    let renewed = as_deadlocks_victim(
        &format!(
            "UPDATE flakegen_namespaces SET high_water = high_water + 1 WHERE namespace = '{ns}'"
        ),
        &format!(
            "UPDATE flakegen_leases SET fence_ms = fence_ms + 1 WHERE namespace = '{ns}' AND worker = 0"
        ),
        || registry.swap(&ns, 0, expect(Some(1)), &write(2)),
    );
    assert!(
        matches!(renewed, Ok(Some(_))),
        "a renewal rolled back as a deadlock's victim was not made again: {renewed:?}"
    );
    // Confirmed only if it landed: a renewal reported landed that left the
    // record at its old version leaves its holder past the fence stored.
    let snapshot = registry
        .read(
            &ns,
            &flakegen::lease::backend::ReadRequest::new(1).prefer(Some(0)),
        )
        .unwrap();
    let record = snapshot.records.iter().find(|r| r.worker == 0).unwrap();
    assert_eq!(
        record.version, 2,
        "a renewal reported landed after a deadlock left the record as it was: {record:?}"
    );
}

/// A namespace's marker written while InnoDB rolls back its statement as
/// a deadlock's victim is written again: writing a marker in force again
/// changes nothing. The marking statement reads the table's sentinel row
/// (the history's stamp) and waits on the marker's row, which another
/// session holds; that session then asks for the sentinel's.
#[cfg(feature = "mysql")]
#[test]
fn a_marker_chosen_as_a_deadlocks_victim_is_written_again() {
    use flakegen::lease::backend::Registry;

    let registry = flakegen::lease::MysqlRegistry::new(&common::mysql::SERVER.url()).unwrap();
    let ns = namespace();
    let first = registry.mark(&ns).unwrap();
    let marked = as_deadlocks_victim(
        &format!(
            "UPDATE flakegen_namespaces SET high_water = high_water + 1 WHERE namespace = '{ns}'"
        ),
        "UPDATE flakegen_leases SET fence_ms = fence_ms WHERE namespace = '' AND worker = -1",
        || registry.mark(&ns),
    );
    assert_eq!(
        marked.ok(),
        Some(first),
        "a marker rolled back as a deadlock's victim was not written again"
    );
}

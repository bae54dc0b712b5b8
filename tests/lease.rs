//! Leases against real servers: every backend whose feature is on, at the URL
//! in `FLAKEGEN_TEST_POSTGRES_URL` / `FLAKEGEN_TEST_REDIS_URL`.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --features postgres,redis --test lease
//! scripts/services.sh stop
//! ```
//!
//! A backend whose feature is on and whose URL is missing fails its tests:
//! they never pass by skipping. Tests that wipe a registry's data hold a lock
//! so that they do not pull leases from under the others.

#![cfg(any(feature = "postgres", feature = "redis"))]

mod common;

use common::backend::Backend;

use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakegen::lease::{self, AcquireRequest, LeaseError, LeaseKey, LeaseState, Registry};
use flakegen::{BuildError, Builder, IdGenerator, IssueError, Layout, ManualClock, Strategy};

/// Four ids, one millisecond units.
const FOUR: Layout = Layout::builder().worker_bits(2).build_const();
/// One id.
const ONE: Layout = Layout::builder().worker_bits(0).build_const();

/// Serialises the tests of this file: some wipe a registry's data.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

impl Backend {
    fn registry(self) -> std::sync::Arc<dyn Registry> {
        lease::connect(&self.url()).unwrap()
    }

    /// The URL with its password replaced.
    fn url_with_password(self, password: &str) -> String {
        let url = self.url();
        let (scheme, rest) = url.split_once("://").unwrap();
        let (credentials, host) = rest.split_once('@').unwrap();
        let user = credentials.split_once(':').map_or("", |(user, _)| user);
        format!("{scheme}://{user}:{password}@{host}")
    }

    /// Runs a command on the server directly, as an operator (or an accident) would.
    fn poke(self, namespace: &str, worker: u64, how: Poke) {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => {
                let mut client = postgres::Client::connect(&self.url(), postgres::NoTls).unwrap();
                let sql = match how {
                    Poke::Steal => {
                        "UPDATE flakegen_leases SET holder = 'thief' WHERE namespace = $1 AND worker = $2"
                    }
                    Poke::Garble => {
                        "UPDATE flakegen_leases SET fence_ms = -5 WHERE namespace = $1 AND worker = $2"
                    }
                    Poke::WipeAll => {
                        "DELETE FROM flakegen_leases WHERE namespace IN ($1, '') AND $2::bigint >= 0"
                    }
                };
                client
                    .execute(sql, &[&namespace, &(worker as i64)])
                    .unwrap();
            }
            #[cfg(feature = "redis")]
            Backend::Redis => {
                let client = redis::Client::open(self.url()).unwrap();
                let mut c = client.get_connection().unwrap();
                let key = format!("flakegen:{{{namespace}}}:w:{worker}");
                let _: () = match how {
                    Poke::Steal => redis::cmd("HSET")
                        .arg(&key)
                        .arg("holder")
                        .arg("thief")
                        .query(&mut c),
                    Poke::Garble => redis::cmd("HSET")
                        .arg(&key)
                        .arg("fence")
                        .arg("garbage")
                        .query(&mut c),
                    // Redis loses its data by restarting: lease_faults does that.
                    #[cfg(feature = "postgres")]
                    Poke::WipeAll => panic!("only PostgreSQL's rows are wiped by hand"),
                }
                .unwrap();
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Poke {
    /// Another holder's name in the record.
    Steal,
    /// A fence that is not a time.
    Garble,
    /// The namespace's rows and the marker, gone.
    #[cfg(feature = "postgres")]
    WipeAll,
}

fn namespace(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A leased builder with short timings, on the system clock.
fn leased(backend: Backend, layout: Layout, namespace: &str) -> Builder {
    Builder::new()
        .layout(layout)
        .lease(backend.registry(), namespace)
        .lease_ttl(Duration::from_millis(600))
        .lease_renew_every(Duration::from_millis(100))
        .lease_skew(Duration::from_millis(200))
}

/// Waits (at most 5 s) for `condition`.
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn each_generator_gets_its_own_id_until_all_are_held() {
    let _serial = serial();
    for backend in Backend::all() {
        let ns = namespace("distinct");
        let generators: Vec<_> = Strategy::ALL
            .iter()
            .cycle()
            .take(4)
            .map(|&s| leased(backend, FOUR, &ns).build(s).unwrap())
            .collect();
        let mut workers: Vec<u64> = generators.iter().map(|g| g.worker()).collect();
        workers.sort();
        assert_eq!(workers, [0, 1, 2, 3], "{backend:?}");
        for g in &generators {
            let id = g.next_id().unwrap();
            assert_eq!(FOUR.decode(id).unwrap().worker, g.worker());
            assert_eq!(g.lease().unwrap().state, LeaseState::Held);
        }
        match leased(backend, FOUR, &ns).build_atomic() {
            Err(e @ BuildError::Lease(LeaseError::AllHeld { held: 4, .. })) => {
                assert!(e.to_string().contains("all 4 worker ids"), "{e}")
            }
            other => panic!("{backend:?}: expected AllHeld, got {other:?}"),
        }
    }
}

#[test]
fn a_released_id_is_taken_over_at_once_above_the_last_id() {
    let _serial = serial();
    for backend in Backend::all() {
        let ns = namespace("release");
        let first = leased(backend, ONE, &ns).build_ticker().unwrap();
        let last = (0..1000).map(|_| first.next_id().unwrap()).max().unwrap();
        drop(first);
        // Without the release lowering the fence, the successor would face a
        // fence a TTL ahead: more than its max_wait (the default second would
        // not do, as the TTL is 600 ms, so make it strict).
        let successor = leased(backend, ONE, &ns)
            .max_wait(Duration::from_millis(50))
            .build_mutex()
            .unwrap();
        assert!(successor.next_id().unwrap() > last, "{backend:?}");
    }
}

#[test]
fn an_expired_lease_is_taken_over_at_or_after_its_fence() {
    let _serial = serial();
    for backend in Backend::all() {
        let ns = namespace("expired");
        // A holder that crashes right after acquiring: it never renews.
        let registry = backend.registry();
        let fence = now_ms() + 1_500;
        let crashed = registry
            .acquire(&AcquireRequest {
                namespace: &ns,
                workers: 1,
                holder: "crashed",
                ttl: Duration::from_millis(1_500),
                fence_unix_ms: fence,
                now_unix_ms: now_ms(),
                skew: Duration::from_millis(200),
            })
            .unwrap();
        assert!(crashed.fence_unix_ms >= fence);
        assert!(matches!(
            leased(backend, ONE, &ns).build_atomic(),
            Err(BuildError::Lease(LeaseError::AllHeld { held: 1, .. }))
        ));
        thread::sleep(Duration::from_millis(1_600));
        let successor = leased(backend, ONE, &ns)
            .max_wait(Duration::from_secs(2))
            .build_atomic()
            .unwrap();
        let id = successor.next_id().unwrap();
        let at = ONE.time_of(ONE.decode(id).unwrap().timestamp);
        let fence = UNIX_EPOCH + Duration::from_millis(crashed.fence_unix_ms);
        assert!(at >= fence, "{backend:?}");
    }
}

#[test]
fn a_fence_beyond_max_wait_is_an_error_and_the_id_is_given_back() {
    let _serial = serial();
    for backend in Backend::all() {
        let ns = namespace("ahead");
        // A holder whose clock ran a minute fast, then crashed.
        let registry = backend.registry();
        let request = AcquireRequest {
            namespace: &ns,
            workers: 1,
            holder: "fast",
            ttl: Duration::from_millis(100),
            fence_unix_ms: now_ms() + 60_000,
            now_unix_ms: now_ms() + 60_000,
            skew: Duration::ZERO,
        };
        registry.acquire(&request).unwrap();
        thread::sleep(Duration::from_millis(400)); // past the 100 ms TTL, with room
        match leased(backend, ONE, &ns).build_atomic() {
            Err(
                e @ BuildError::FenceAhead {
                    worker: 0,
                    wait_nanos,
                },
            ) => {
                assert!(wait_nanos > 50_000_000_000, "{e}");
                assert!(e.to_string().contains("raise max_wait"), "{e}");
            }
            other => panic!("{backend:?}: expected FenceAhead, got {other:?}"),
        }
        // Given back: free again, with its fence where it was.
        let again = registry
            .acquire(&AcquireRequest {
                holder: "again",
                ..request
            })
            .unwrap();
        assert_eq!(again.previous_fence_unix_ms, request.fence_unix_ms);
        // A generator allowed to wait that long takes it (and would wait).
        registry
            .release(
                &LeaseKey {
                    namespace: &ns,
                    worker: 0,
                    holder: "again",
                },
                u64::MAX,
            )
            .unwrap();
        let patient = leased(backend, ONE, &ns)
            .lease_ttl(Duration::from_secs(90))
            .lease_renew_every(Duration::from_secs(30))
            .max_wait(Duration::from_secs(120))
            .build_atomic()
            .unwrap();
        assert_eq!(patient.worker(), 0);
    }
}

#[test]
fn renewals_move_the_fence_forward() {
    let _serial = serial();
    for backend in Backend::all() {
        let ns = namespace("renew");
        let g = leased(backend, FOUR, &ns).build_atomic().unwrap();
        let before = g.lease().unwrap();
        assert!(before.time_left > Duration::ZERO);
        eventually("a renewal", || g.lease().unwrap().fence > before.fence);
        let after = g.lease().unwrap();
        assert_eq!(
            (after.state, after.worker),
            (LeaseState::Held, before.worker)
        );
        assert!(after.last_error.is_none());
    }
}

#[test]
fn a_lost_lease_runs_to_its_fence_then_refuses() {
    let _serial = serial();
    for backend in Backend::all() {
        let ns = namespace("lost");
        let clock = ManualClock::new(SystemTime::now());
        let g = Builder::new()
            .layout(FOUR)
            .clock(clock.clone())
            .lease(backend.registry(), &ns)
            .lease_ttl(Duration::from_millis(600))
            .lease_renew_every(Duration::from_millis(100))
            .build_atomic()
            .unwrap();
        backend.poke(&ns, g.worker(), Poke::Steal);
        eventually("the keeper to see the lease lost", || {
            g.lease().unwrap().state == LeaseState::Lost
        });
        let status = g.lease().unwrap();
        assert!(status.last_error.unwrap().contains("no longer held"));
        // Below the fence it still issues...
        let id = g.next_id().unwrap();
        let fence = status.fence;
        assert!(FOUR.time_of(FOUR.decode(id).unwrap().timestamp) < fence);
        // ...and at the fence it refuses, whatever the call.
        clock.set(fence);
        for result in [g.next_id(), g.try_next_id()] {
            match result {
                Err(e @ IssueError::LeaseLost { .. }) => {
                    assert!(e.to_string().contains("build a new generator"), "{e}")
                }
                other => panic!("{backend:?}: expected LeaseLost, got {other:?}"),
            }
        }
    }
}

#[test]
fn bad_settings_and_credentials_get_clear_errors() {
    let _serial = serial();
    for backend in Backend::all() {
        let ns = namespace("bad");
        let build = |b: Builder| b.build_atomic().map(drop).unwrap_err();
        let expect = |e: BuildError, says: &str| {
            let message = e.to_string();
            assert!(
                message.contains(says),
                "{backend:?}: {message:?} lacks {says:?}"
            );
            assert!(
                !message.contains("flakegen-test"),
                "the password leaked: {message}"
            );
        };

        let wrong = lease::connect(&backend.url_with_password("wrong")).unwrap();
        let e = build(Builder::new().lease(wrong, &ns));
        assert!(
            matches!(e, BuildError::Lease(LeaseError::Unauthorized { .. })),
            "{e:?}"
        );
        expect(e, "refused the credentials");

        let scheme = backend.url().split_once("://").unwrap().0.to_owned();
        let closed = lease::connect(&format!("{scheme}://u:p@127.0.0.1:1/0")).unwrap();
        let started = Instant::now();
        let e = build(Builder::new().lease(closed, &ns));
        assert!(started.elapsed() < lease::DEFAULT_TIMEOUT + Duration::from_secs(2));
        assert!(
            matches!(e, BuildError::Lease(LeaseError::Unreachable { .. })),
            "{e:?}"
        );
        expect(e, "127.0.0.1:1 is unreachable");

        let e = build(leased(backend, FOUR, "a{b}"));
        expect(e, "invalid lease namespace");
        let e = build(leased(backend, FOUR, &ns).lease_ttl(Duration::from_micros(500)));
        expect(e, "shorter than one unit");
        let e = build(leased(backend, FOUR, &ns).lease_renew_every(Duration::from_millis(400)));
        expect(e, "not well inside the TTL");
        let e = build(leased(backend, FOUR, &ns).max_lead(Duration::from_millis(550)));
        expect(e, "max_lead");
        let e = build(leased(backend, FOUR, &ns).worker(1));
        expect(e, "drop Builder::worker");
        let e = Builder::new()
            .lease(backend.registry(), &ns)
            .clock(ManualClock::new(SystemTime::now()))
            .build_atomic()
            .map(drop)
            .unwrap_err();
        expect(e, "call Builder::clock before Builder::lease");
    }
}

#[test]
fn a_garbage_record_is_an_error_not_a_panic() {
    let _serial = serial();
    for backend in Backend::all() {
        let ns = namespace("garbage");
        drop(leased(backend, ONE, &ns).build_atomic().unwrap());
        backend.poke(&ns, 0, Poke::Garble);
        match leased(backend, ONE, &ns).build_atomic() {
            Err(e @ BuildError::Lease(LeaseError::Corrupt { .. })) => {
                assert!(e.to_string().contains("did not write"), "{e}")
            }
            other => panic!("{backend:?}: expected Corrupt, got {other:?}"),
        }
    }
}

/// A truncated table. A holder that is still renewing writes its record back
/// (nobody else can have taken the id). An id whose holder stopped renewing
/// has no record, so it is fenced a TTL plus the skew allowance past the
/// moment the loss was noticed, beyond anything that holder may have issued.
#[cfg(feature = "postgres")]
#[test]
fn a_table_that_lost_its_rows_fences_every_unrecorded_id() {
    let _serial = serial();
    let backend = Backend::Postgres;

    let ns = namespace("wiped-live");
    let live = leased(backend, ONE, &ns).build_atomic().unwrap();
    let before = live.next_id().unwrap();
    backend.poke(&ns, 0, Poke::WipeAll);
    // Watch the table, not acquire: an acquisition before the holder's next
    // renewal would rightly take the unrecorded id.
    let mut client = postgres::Client::connect(&backend.url(), postgres::NoTls).unwrap();
    eventually("the holder to write its record back", || {
        client
            .query_opt(
                "SELECT holder FROM flakegen_leases WHERE namespace = $1 AND worker = 0 \
                 AND holder IS NOT NULL",
                &[&ns],
            )
            .unwrap()
            .is_some()
    });
    assert!(matches!(
        leased(backend, ONE, &ns).build_atomic(),
        Err(BuildError::Lease(LeaseError::AllHeld { held: 1, .. }))
    ));
    assert_eq!(live.lease().unwrap().state, LeaseState::Held);
    assert!(live.next_id().unwrap() > before);

    // A holder that stopped renewing (paused, or partitioned away) and whose
    // fence is a TTL ahead: the loss wipes that fence from the registry.
    let ns = namespace("wiped-stopped");
    let registry = backend.registry();
    let ttl = Duration::from_millis(600);
    let stopped_fence = now_ms() + 600;
    registry
        .acquire(&AcquireRequest {
            namespace: &ns,
            workers: 1,
            holder: "stopped",
            ttl,
            fence_unix_ms: stopped_fence,
            now_unix_ms: now_ms(),
            skew: Duration::from_millis(200),
        })
        .unwrap();
    backend.poke(&ns, 0, Poke::WipeAll);
    match leased(backend, ONE, &ns)
        .max_wait(Duration::from_millis(100))
        .build_atomic()
    {
        Err(BuildError::FenceAhead { wait_nanos, .. }) => {
            assert!(wait_nanos > 600_000_000, "{wait_nanos}")
        }
        other => panic!("expected FenceAhead, got {other:?}"),
    }
    let patient = leased(backend, ONE, &ns)
        .max_wait(Duration::from_secs(5))
        .build_atomic()
        .unwrap();
    let first = patient.next_id().unwrap();
    let at = ONE.time_of(ONE.decode(first).unwrap().timestamp);
    assert!(at >= UNIX_EPOCH + Duration::from_millis(stopped_fence + 200));
}

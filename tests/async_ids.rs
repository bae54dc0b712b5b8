//! Issuing from async code (feature `tokio`): every wait a tokio sleep,
//! every wait bounded, the same uniqueness as the blocking calls.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::heartbeat::moving_clock;
use common::{NARROW, STRATEGIES, clock_units, manual, timestamp};
use flakegen::{AsyncIdGenerator, Builder, Fields, IssueError, Layout, Snowflake};
use tokio::runtime::Builder as Runtime;

fn current_thread() -> tokio::runtime::Runtime {
    Runtime::new_current_thread().enable_all().build().unwrap()
}

/// 512 IDs per 1 ms unit: a cap that 1,000 tasks exceed even in a debug
/// build, so they do saturate it and wait.
const CAPPED: Layout = Layout::builder().sequence_bits(9).build_const();

/// 1,000 tasks on one thread saturate one generator whose clock only the
/// runtime's heartbeat moves: every call gets its IDs, so none held the
/// thread while it waited (one that did would keep the clock still and fail
/// after `max_wait`), and no ID repeats.
///
/// `max_wait` is long: a task can lose the race for many units in a row,
/// and on a busy machine each unit (a heartbeat) takes longer in real time,
/// while `max_wait` is real time. Only a call that holds the thread waits
/// that long, as it stops the heartbeat for good.
#[test]
fn a_saturated_generator_never_holds_a_current_thread_runtime() {
    for strategy in STRATEGIES {
        current_thread().block_on(async {
            let (clock, builder) = manual(CAPPED, 1);
            let builder = builder.max_wait(Duration::from_secs(30));
            let generator = Arc::new(builder.build(strategy).unwrap());
            // The first failure stops every task: a generator that held the
            // thread costs one `max_wait`, not one for each of 1,000 tasks.
            let failed = Arc::new(AtomicBool::new(false));
            let work = async {
                let mut tasks = Vec::with_capacity(1000);
                for n in 0..1000 {
                    let (generator, failed) = (Arc::clone(&generator), Arc::clone(&failed));
                    tasks.push(tokio::spawn(async move {
                        let mut ids = Vec::with_capacity(100);
                        while ids.len() < 100 && !failed.load(Ordering::Relaxed) {
                            let id = generator.next_id_async().await;
                            failed.fetch_or(id.is_err(), Ordering::Relaxed);
                            ids.push(id);
                        }
                        ids
                    }));
                    if n % 100 == 99 {
                        // Spawning is this test's work, not the generator's:
                        // it lets the heartbeat in too.
                        tokio::task::yield_now().await;
                    }
                }
                let mut all = Vec::new();
                for task in tasks {
                    all.extend(task.await.unwrap());
                }
                all
            };
            let issued = moving_clock(&clock, work).await;
            let ids: Vec<Snowflake> = issued
                .into_iter()
                .map(|id| id.unwrap_or_else(|e| panic!("{strategy}: {e}")))
                .collect();
            let unique: HashSet<Snowflake> = ids.iter().copied().collect();
            assert_eq!(unique.len(), 100_000, "{strategy}: an ID issued twice");
            // The cap did bind: 100,000 IDs at 512 a unit need 196 units.
            let units: HashSet<u64> = ids.iter().map(|&id| timestamp(&CAPPED, id)).collect();
            assert!(units.len() >= 196, "{strategy}: {} units", units.len());
        });
    }
}

/// A generator told to resume after an ID 200 ms ahead of its clock, a clock
/// that only the runtime's heartbeat moves: the call gets its ID after the
/// resume point, so its wait gave the thread back (the blocking call held it
/// for all of it).
#[test]
fn a_wait_for_the_clock_is_a_sleep() {
    for strategy in STRATEGIES {
        current_thread().block_on(async {
            let layout = Layout::TWITTER;
            let (clock, builder) = manual(layout, 2);
            let now = clock_units(&layout, &clock);
            // Another worker's ID 200 ms ahead of the clock.
            let fields = Fields {
                timestamp: now + 200,
                worker: 1,
                sequence: 0,
            };
            let resume = layout.compose(fields).unwrap();
            let generator = builder.resume_after(resume).build(strategy).unwrap();
            let id = moving_clock(&clock, generator.next_id_async()).await;
            let id = id.unwrap_or_else(|e| panic!("{strategy}: {e}"));
            assert!(id > resume, "{strategy}");
            assert!(timestamp(&layout, id) > now + 200, "{strategy}");
            assert!(clock_units(&layout, &clock) > now + 200, "{strategy}");
        });
    }
}

/// A clock that stops while a call waits: the call gives up after
/// `max_wait` by the monotonic clock, issuing nothing; a clock that moves
/// lets it through.
#[test]
fn a_stopped_clock_costs_max_wait_and_a_moving_one_nothing_more() {
    for strategy in STRATEGIES {
        current_thread().block_on(async {
            let (clock, builder) = manual(NARROW, 3);
            let generator = common::build(strategy, builder.max_wait(Duration::from_millis(50)));
            for _ in 0..4 {
                generator.next_id_async().await.unwrap();
            }
            // The unit's four IDs are gone, and the clock stands still.
            let asked = Instant::now();
            let refused = generator.next_id_async().await;
            assert!(
                matches!(refused, Err(IssueError::ClockBehind { .. })),
                "{strategy}: {refused:?}"
            );
            let took = asked.elapsed();
            assert!(took >= Duration::from_millis(50), "{strategy}: {took:?}");
            assert!(took < Duration::from_millis(500), "{strategy}: {took:?}");

            let mover = tokio::spawn({
                let clock = clock.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    clock.advance(Duration::from_millis(1));
                }
            });
            let mut ids = [Snowflake::default(); 4];
            generator.next_ids_async(&mut ids).await.unwrap();
            mover.await.unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{strategy}");
        });
    }
}

/// A ticker whose thread never publishes (here, one built without it): a
/// waiting call that finds the clock already there publishes the unit
/// itself instead of sleeping again.
#[test]
fn a_ticker_without_its_thread_still_moves_on() {
    current_thread().block_on(async {
        let generator = Builder::new()
            .worker(1)
            .layout(NARROW)
            .build_ticker_without_thread()
            .unwrap();
        let mut last = Snowflake::default();
        // Five units' worth at four IDs per unit.
        for _ in 0..20 {
            let id = generator.next_id_async().await.unwrap();
            assert!(id > last);
            last = id;
        }
    });
}

/// A call at its lease's fence, while the lease's thread renews it (a
/// process thawed past its TTL): the async call awaits the renewal, within
/// `max_wait`, and issues. With the registry out of reach no renewal
/// comes, and after `max_wait` the call says the fence, not the clock.
#[test]
fn a_call_at_the_fence_awaits_the_renewal() {
    use flakegen::IdGenerator;
    use flakegen::lease::{Lease, MemoryRegistry};
    for strategy in STRATEGIES {
        current_thread().block_on(async {
            let registry = MemoryRegistry::new();
            let lease = Lease::new(registry.clone(), "fence")
                .ttl(Duration::from_millis(300))
                .skew(Duration::from_millis(50));
            let clock = flakegen::clock::ManualClock::new(std::time::SystemTime::now());
            let builder = Builder::new().lease(lease).clock(clock.clone());
            let generator = common::build(strategy, builder.max_wait(Duration::from_secs(10)));
            generator.next_id_async().await.unwrap();
            let fence = generator.lease().unwrap().fence;
            clock.set(fence);
            let id = generator.next_id_async().await;
            assert!(id.is_ok(), "{strategy}: {id:?}");
            assert!(generator.lease().unwrap().fence > fence, "{strategy}");

            // Out of reach: no renewal comes.
            let registry = MemoryRegistry::new();
            let lease = Lease::new(registry.clone(), "cut off")
                .ttl(Duration::from_millis(300))
                .skew(Duration::from_millis(50));
            let builder = Builder::new().lease(lease).clock(clock.clone());
            let generator = common::build(strategy, builder.max_wait(Duration::from_millis(50)));
            generator.next_id_async().await.unwrap();
            registry.set_reachable(false);
            clock.set(generator.lease().unwrap().fence);
            let refused = generator.next_id_async().await;
            assert!(
                matches!(refused, Err(IssueError::LeaseLost { .. })),
                "{strategy}: {refused:?}"
            );
        });
    }
}

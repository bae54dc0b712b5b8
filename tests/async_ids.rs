//! Issuing from async code (feature `tokio`): every wait a tokio sleep,
//! every wait bounded, the same uniqueness as the blocking calls.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::heartbeat::worst_gap;
use common::{NARROW, STRATEGIES, manual, timestamp};
use flakegen::{AsyncIdGenerator, Builder, Fields, IdGenerator, IssueError, Layout, Snowflake};
use tokio::runtime::Builder as Runtime;

fn current_thread() -> tokio::runtime::Runtime {
    Runtime::new_current_thread().enable_all().build().unwrap()
}

/// 512 IDs per 1 ms unit: a cap that 1,000 tasks exceed even in a debug
/// build, so they do saturate it and wait.
const CAPPED: Layout = Layout::builder().sequence_bits(9).build_const();

/// The longest the heartbeat may go unpolled: 5 ms, in the release build
/// that `.ci/run` also tests this in. A debug build runs tokio's scheduler
/// and this crate 5 to 10 times slower, and gets 15 ms.
const GAP_LIMIT: Duration = if cfg!(debug_assertions) {
    Duration::from_millis(15)
} else {
    Duration::from_millis(5)
};

/// 1,000 tasks on one thread saturate one generator: the thread is never
/// held, and no ID repeats.
#[test]
fn a_saturated_generator_never_holds_a_current_thread_runtime() {
    for strategy in STRATEGIES {
        current_thread().block_on(async {
            let generator: Arc<Box<dyn IdGenerator>> =
                Arc::new(Builder::new().layout(CAPPED).build(strategy).unwrap());
            let work = async {
                let mut tasks = Vec::with_capacity(1000);
                for n in 0..1000 {
                    let generator = Arc::clone(&generator);
                    tasks.push(tokio::spawn(async move {
                        let mut ids = Vec::with_capacity(100);
                        for _ in 0..100 {
                            ids.push(generator.next_id_async().await.unwrap());
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
            let (ids, gap) = worst_gap(work).await;
            println!(
                "{strategy}: worst heartbeat gap {gap:?} over {} IDs",
                ids.len()
            );
            let unique: HashSet<Snowflake> = ids.iter().copied().collect();
            assert_eq!(unique.len(), 100_000, "{strategy}: an ID issued twice");
            assert!(gap < GAP_LIMIT, "{strategy}: {gap:?}");
        });
    }
}

/// A generator told to resume after an ID 200 ms ahead of the clock waits
/// for it without holding the runtime (the blocking call held it for all of it).
#[test]
fn a_wait_for_the_clock_is_a_sleep() {
    for strategy in STRATEGIES {
        current_thread().block_on(async {
            let layout = Layout::TWITTER;
            let now = timestamp(
                &layout,
                Builder::new().build_atomic().unwrap().next_id().unwrap(),
            );
            let start = Instant::now();
            // Another worker's ID 200 ms ahead of the clock.
            let fields = Fields {
                timestamp: now + 200,
                worker: 1,
                sequence: 0,
            };
            let resume = layout.compose(fields).unwrap();
            let generator = Builder::new()
                .worker(2)
                .resume_after(resume)
                .build(strategy)
                .unwrap();
            let (id, gap) = worst_gap(generator.next_id_async()).await;
            let id = id.unwrap();
            assert!(id > resume, "{strategy}");
            assert!(start.elapsed() >= Duration::from_millis(150), "{strategy}");
            assert!(timestamp(&layout, id) > now + 200, "{strategy}");
            assert!(gap < Duration::from_millis(20), "{strategy}: {gap:?}");
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

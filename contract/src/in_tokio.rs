//! The lease contract in tokio services (feature `tokio`): builds, drops
//! and shutdowns on both runtime flavours. None may panic, block a
//! runtime's thread, or keep an id it let go.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flakegen::lease::Lease;
use flakegen::{IdGenerator, IssueError, Layout, Strategy};
use tokio::runtime::{Builder, Runtime};

use crate::Fixture;
use crate::heartbeat::beats;
use crate::store::{Store, namespace, now_ms};

/// One id: a successor must take the very id its predecessor let go.
const ONE: Layout = Layout::builder().worker_bits(0).build_const();

/// Both flavours of runtime a service may run.
fn runtimes() -> [(&'static str, Runtime); 2] {
    let current = Builder::new_current_thread().enable_all().build().unwrap();
    let multi = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    [("current_thread", current), ("multi_thread", multi)]
}

/// Well inside the request timeout that a call waiting on a frozen registry
/// would take, and far beyond a hypervisor's pauses.
const AT_ONCE: Duration = Lease::DEFAULT_TIMEOUT.checked_div(10).unwrap();

/// Waits (bounded) until id 0 of `namespace` is free: a release the
/// generator did not wait for has landed.
async fn released(store: &Store<'_>, namespace: &str) {
    let give_up = Instant::now() + Lease::DEFAULT_TIMEOUT + Duration::from_secs(1);
    loop {
        let record = store.record(namespace, 0);
        if record.as_ref().is_some_and(|r| r.holder.is_empty()) {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "{}: id 0 still held after the drop: {record:?}",
            store.name()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn a_build_and_a_drop_inside_a_runtime_neither_panic_nor_keep_the_id(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    for (flavour, runtime) in runtimes() {
        let at = format!("{} on {flavour}", store.name());
        runtime.block_on(async {
            let ns = namespace("tokio");
            // The plain build, which once panicked inside a runtime.
            let sync = store.leased(ONE, &ns).build_atomic().unwrap();
            sync.shutdown()
                .wait_async(Lease::DEFAULT_TIMEOUT)
                .await
                .unwrap();
            drop(sync);

            let generator = store
                .leased(ONE, &ns)
                .max_wait(Duration::from_millis(50))
                .build_async(Strategy::Atomic)
                .await
                .unwrap();
            let generator = Arc::new(generator);
            let tasks: Vec<_> = (0..100)
                .map(|_| {
                    let generator = Arc::clone(&generator);
                    tokio::spawn(async move {
                        (0..100)
                            .map(|_| generator.next_id().unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let mut ids = HashSet::new();
            for task in tasks {
                for id in task.await.unwrap() {
                    assert!(ids.insert(id), "{at}: {id} issued twice");
                }
            }
            let last = *ids.iter().max().unwrap();
            // The last owner lets go from inside a task, as a service's
            // state is dropped at its graceful shutdown.
            tokio::spawn(async move { drop(generator) }).await.unwrap();
            released(&store, &ns).await;
            // At once: the fence was lowered to the unit after the last ID.
            let successor = store
                .leased(ONE, &ns)
                .max_wait(Duration::from_millis(50))
                .build_async(Strategy::Mutex)
                .await
                .unwrap();
            assert!(successor.next_id().unwrap() > last, "{at}");
            successor
                .shutdown()
                .wait_async(Lease::DEFAULT_TIMEOUT)
                .await
                .unwrap();
        });
    }
}

pub fn a_cancelled_build_gives_its_lease_back(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let runtime = Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let ns = namespace("cancelled");
        // The previous holder's fence 1 s ahead: the build waits for it
        // (within the start wait, TTL + skew + 1 s).
        store.put(&ns, 0, "", 0, now_ms() + 1_000);
        let build = store
            .leased(ONE, &ns)
            .max_wait(Duration::from_millis(50))
            .build_async(Strategy::Ticker);
        let waited = tokio::time::timeout(Duration::from_millis(300), build).await;
        assert!(waited.is_err(), "{}: the build did not wait", store.name());
        released(&store, &ns).await;
    });
}

/// The registry server stops answering (`SIGSTOP`) across the drop: the
/// drop still returns at once, and a bounded wait says what happened.
pub fn a_drop_with_the_registry_frozen_returns_at_once(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    for (flavour, runtime) in runtimes() {
        let at = format!("{} on {flavour}", store.name());
        runtime.block_on(async {
            let ns = namespace("frozen");
            let shut = store.leased(ONE, &ns).build_async(Strategy::Atomic);
            let shut = shut.await.unwrap();
            let dropped = store.leased(ONE, &namespace("frozen-drop"));
            let dropped = dropped.build_async(Strategy::Mutex).await.unwrap();
            let thaw = store.freeze();

            let asked = Instant::now();
            let outcome = shut.shutdown().wait_async(Duration::from_millis(100)).await;
            assert!(
                matches!(
                    outcome,
                    Err(flakegen::lease::LeaseError::ReleaseTimedOut { .. })
                ),
                "{at}: {outcome:?}"
            );
            let asked = asked.elapsed();
            assert!(
                asked < Duration::from_millis(100) + AT_ONCE,
                "{at}: {asked:?}"
            );

            let took = tokio::spawn(async move {
                let started = Instant::now();
                drop(dropped);
                started.elapsed()
            });
            let took = took.await.unwrap();
            drop(thaw);
            println!("{at}: a drop with the registry frozen took {took:?}");
            assert!(took < AT_ONCE, "{at}: {took:?}");
        });
    }
}

/// A build that must wait 1 s for the previous holder's fence waits on the
/// runtime's timer: a 1 ms heartbeat beside it keeps beating, where a build
/// that held the thread through that wait would let it beat only before,
/// a few dozen times at most.
pub fn a_build_that_waits_for_a_fence_leaves_the_runtime_beating(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let runtime = Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let ns = namespace("heartbeat");
        store.put(&ns, 0, "", 0, now_ms() + 1_000);
        let build = store
            .leased(ONE, &ns)
            .max_wait(Duration::from_millis(50))
            .build_async(Strategy::Atomic);
        let (generator, beats) = beats(build).await;
        let generator = generator.unwrap();
        println!("{}: {beats} beats during build_async", store.name());
        // About 400 beats (tokio's timer makes a 1 ms sleep nearer 2);
        // 100 leaves room for a hypervisor that takes the CPU away for
        // half the wait.
        assert!(beats >= 100, "{}: {beats} beats", store.name());
        // It issues once its lease is renewed: at the suite's 300 ms TTL a
        // renewal late on a busy machine leaves a call at the fence, which
        // the 50 ms max_wait refuses, rightly.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match generator.next_id() {
                Ok(_) => break,
                Err(IssueError::LeaseLost { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => panic!("{}: no ID after the build: {e}", store.name()),
            }
        }
        drop(generator);
        released(&store, &ns).await;
    });
}

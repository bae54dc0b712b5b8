//! Real threads against every strategy: 2 and 8 callers (more than this
//! machine's cores is the interesting case), with the system clock and with a
//! manual clock that another thread keeps moving forward and back.
//!
//! With the system clock, each caller also reads the clock after every call
//! returns: with `max_lead` zero no ID may carry a later timestamp (invariant
//! 3), which is what catches a wait that ends before its boundary.
//!
//! Each run takes a fixed number of IDs in all, so its verdict does not depend
//! on timing, and its duration is bounded by the layout's rate (1,000,000 IDs
//! at 4,096 per ms is at least 244 ms with the system clock).

mod common;

use std::sync::Arc;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use common::*;
use flakegen::clock::ManualClock;
use flakegen::{Builder, Clock, IdGenerator, Layout, Snowflake, Strategy};

const TOTAL: usize = 1_000_000;

/// One call: its ID, its place in a global order of call starts and ends,
/// and the clock's unit read just after it returned.
#[derive(Clone, Copy)]
struct Call {
    id: Snowflake,
    start: u64,
    end: u64,
    unit_after: u64,
}

/// Runs `threads` callers taking `TOTAL` IDs in all; returns each thread's
/// calls, with `clock` read after each one returns.
fn hammer(generator: &dyn IdGenerator, clock: &dyn Clock, threads: usize) -> Vec<Vec<Call>> {
    let layout = *generator.layout();
    let unit_now =
        || layout.timestamp_at(std::time::UNIX_EPOCH + Duration::from_nanos(clock.unix_nanos()));
    // SeqCst: a call that ends before another starts in this order
    // happens-before it, which is what the linearizability check relies on.
    let order = AtomicU64::new(0);
    let barrier = Barrier::new(threads);
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (order, barrier) = (&order, &barrier);
                s.spawn(move || {
                    let n = TOTAL / threads + usize::from(t < TOTAL % threads);
                    let mut calls = Vec::with_capacity(n);
                    barrier.wait();
                    let mut batch = [Snowflake::default(); 8];
                    while calls.len() < n {
                        // Mostly singles, with a batch now and then.
                        let start = order.fetch_add(1, Ordering::SeqCst);
                        if calls.len() % 64 == 0 && calls.len() + batch.len() <= n {
                            generator.next_ids(&mut batch).unwrap();
                            let unit_after = unit_now();
                            let end = order.fetch_add(1, Ordering::SeqCst);
                            calls.extend(batch.iter().map(|&id| Call {
                                id,
                                start,
                                end,
                                unit_after,
                            }));
                        } else {
                            let id = generator.next_id().unwrap();
                            let unit_after = unit_now();
                            let end = order.fetch_add(1, Ordering::SeqCst);
                            calls.push(Call {
                                id,
                                start,
                                end,
                                unit_after,
                            });
                        }
                    }
                    calls
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn check(per_thread: &[Vec<Call>], context: &str) {
    for calls in per_thread {
        let ids: Vec<_> = calls.iter().map(|c| c.id).collect();
        assert_strictly_increasing(&ids, context);
    }
    let mut all: Vec<Call> = per_thread.iter().flatten().copied().collect();
    assert_eq!(all.len(), TOTAL, "{context}");

    let mut ids: Vec<_> = all.iter().map(|c| c.id).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        panic!("{context}: {} issued twice", w[0]);
    }

    // Linearizability: if call A ended before call B started, A's ID is smaller.
    // Sort by end; for each call, every call that ended before it started is a
    // prefix of that order, and the prefix's largest ID must be below its own.
    all.sort_unstable_by_key(|c| c.end);
    let ends: Vec<u64> = all.iter().map(|c| c.end).collect();
    let mut prefix_max = Vec::with_capacity(all.len());
    let mut max = None;
    for c in &all {
        max = max.max(Some(c.id));
        prefix_max.push(max);
    }
    for c in &all {
        let before = ends.partition_point(|&e| e < c.start);
        if before > 0 {
            let earlier = prefix_max[before - 1].unwrap();
            assert!(
                earlier < c.id,
                "{context}: {} returned after {earlier} had, yet is smaller",
                c.id
            );
        }
    }
}

/// Invariant 3 with `max_lead` zero: no ID's timestamp is later than the
/// clock read after its call returned. (For the ticker the promise is about
/// its published view of the clock, which lags the clock, so it holds here too.)
fn check_not_ahead(layout: &Layout, per_thread: &[Vec<Call>], context: &str) {
    for call in per_thread.iter().flatten() {
        let timestamp = layout.decode(call.id).unwrap().timestamp;
        assert!(
            timestamp <= call.unit_after,
            "{context}: {} has timestamp {timestamp}, but the clock read {} after it returned",
            call.id,
            call.unit_after
        );
    }
}

fn each_strategy(mut run: impl FnMut(Strategy)) {
    for strategy in STRATEGIES {
        run(strategy);
    }
}

fn real_thread(
    strategy: Strategy,
    builder: Builder<impl Clock + Clone + 'static>,
) -> Box<dyn IdGenerator> {
    // Here the ticker runs with its thread: starving it is part of the test.
    builder.build(strategy).unwrap()
}

#[test]
fn system_clock_two_and_eight_threads() {
    each_strategy(|strategy| {
        for threads in [2, 8] {
            let generator = real_thread(strategy, Builder::new().worker(1));
            let calls = hammer(&*generator, &flakegen::SystemClock, threads);
            let context = format!("{strategy}/system/{threads}");
            check(&calls, &context);
            check_not_ahead(generator.layout(), &calls, &context);
        }
    });
}

#[test]
fn manual_clock_moving_forward_and_back_two_and_eight_threads() {
    each_strategy(|strategy| {
        for threads in [2, 8] {
            let (clock, builder) = manual(Layout::TWITTER, 1);
            let generator = real_thread(strategy, builder);
            let done = AtomicBool::new(false);
            let calls = thread::scope(|s| {
                let mover = s.spawn(|| mover(&clock, &done));
                let calls = hammer(&*generator, &clock, threads);
                done.store(true, Ordering::Relaxed);
                mover.join().unwrap();
                calls
            });
            check(&calls, &format!("{strategy}/manual/{threads}"));
        }
    });
}

/// Moves the clock 1 ms forward at a time, and 3 ms back every tenth step.
fn mover(clock: &ManualClock, done: &AtomicBool) {
    let mut step = 0u64;
    while !done.load(Ordering::Relaxed) {
        step += 1;
        if step % 10 == 0 {
            clock.rewind(millis(3));
        } else {
            clock.advance(millis(1));
        }
        thread::sleep(Duration::from_micros(20));
    }
}

#[test]
fn a_panicking_caller_does_not_poison_or_wedge_the_generator() {
    each_strategy(|strategy| {
        let generator: Arc<dyn IdGenerator> =
            Arc::from(real_thread(strategy, Builder::new().worker(2)));
        let doomed = {
            let generator = Arc::clone(&generator);
            thread::spawn(move || {
                let mut ids = [Snowflake::default(); 100];
                generator.next_ids(&mut ids).unwrap();
                panic!("a caller's bug, after taking IDs");
            })
        };
        assert!(doomed.join().is_err());
        let ids: Vec<_> = (0..10_000).map(|_| generator.next_id().unwrap()).collect();
        assert_strictly_increasing(&ids, strategy);
    });
}

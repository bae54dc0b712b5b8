//! Loom models of the lock-free strategies: every interleaving of two or three
//! callers (and the ticker's update) within the preemption bound.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom
//! ```
//!
//! The clock is a `ManualClock`, whose atomic is loom's too (every atomic of
//! the crate goes through one facade), set before threads start or moved by
//! one of them. Every generator has a lead that covers the model's IDs, so no
//! caller ever waits for time to pass, which a model cannot do.

#![cfg(loom)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use flakegen::clock::ManualClock;
use flakegen::{Builder, IdGenerator, Layout, Snowflake};
use loom::thread;

const START_MS: u64 = 1_704_067_200_000;

/// 4 IDs per unit, so the models cross unit boundaries.
const NARROW: Layout = Layout::builder()
    .timestamp_bits(41)
    .worker_bits(4)
    .sequence_bits(2)
    .build_const();

fn builder(clock: &ManualClock, lead_ms: u64) -> Builder<ManualClock> {
    Builder::new()
        .layout(NARROW)
        .worker(5)
        .clock(clock.clone())
        .max_lead(Duration::from_millis(lead_ms))
}

/// Each thread's IDs strictly increase; no ID appears twice across threads.
fn check(per_thread: &[Vec<Snowflake>]) {
    let mut seen = HashSet::new();
    for ids in per_thread {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "not increasing: {ids:?}"
        );
        for id in ids {
            assert!(seen.insert(*id), "duplicate {id} in {per_thread:?}");
            assert_eq!(NARROW.decode(*id).unwrap().worker, 5);
        }
    }
}

#[test]
fn atomic_singles_and_batches_race_across_a_clock_step() {
    loom::model(|| {
        let clock = ManualClock::from_unix_millis(START_MS);
        let generator = Arc::new(builder(&clock, 8).build_atomic().unwrap());

        let other = Arc::clone(&generator);
        let batcher = thread::spawn(move || {
            let mut ids = vec![other.next_id().unwrap()];
            let mut batch = [Snowflake::default(); 3];
            other.next_ids(&mut batch).unwrap();
            ids.extend(batch);
            ids
        });

        // This thread moves the clock between its calls, so the other one
        // races the claim of the new unit (`fetch_max`) with stale ticks.
        let mut mine = vec![generator.next_id().unwrap()];
        clock.advance(Duration::from_millis(2));
        mine.push(generator.next_id().unwrap());
        mine.push(generator.try_next_id().unwrap());

        check(&[mine, batcher.join().unwrap()]);
    });
}

#[test]
fn atomic_three_callers() {
    loom::model(|| {
        let clock = ManualClock::from_unix_millis(START_MS);
        let generator = Arc::new(builder(&clock, 4).build_atomic().unwrap());
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let generator = Arc::clone(&generator);
                thread::spawn(move || {
                    vec![
                        generator.next_id().unwrap(),
                        generator.try_next_id().unwrap(),
                    ]
                })
            })
            .collect();
        let mine = vec![generator.next_id().unwrap()];
        let mut all: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        all.push(mine);
        check(&all);
    });
}

#[test]
fn ticker_callers_race_its_update() {
    loom::model(|| {
        let clock = ManualClock::from_unix_millis(START_MS);
        let generator = Arc::new(builder(&clock, 0).build_ticker_without_thread().unwrap());
        // The clock has moved on; the ticker's refresh races two callers.
        clock.advance(Duration::from_millis(1));

        let ticker = {
            let generator = Arc::clone(&generator);
            thread::spawn(move || generator.refresh())
        };
        let caller = {
            let generator = Arc::clone(&generator);
            thread::spawn(move || {
                let mut batch = [Snowflake::default(); 2];
                generator.next_ids(&mut batch).unwrap();
                batch.to_vec()
            })
        };
        let mine = vec![
            generator.next_id().unwrap(),
            generator.try_next_id().unwrap(),
        ];
        ticker.join().unwrap();
        let theirs = caller.join().unwrap();

        // With max_lead 0, nothing is later than the clock, whoever won.
        let now = NARROW.timestamp_at(clock.now());
        for id in mine.iter().chain(&theirs) {
            assert!(NARROW.decode(*id).unwrap().timestamp <= now);
        }
        check(&[mine, theirs]);
    });
}

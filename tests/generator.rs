//! Generator behaviour under a `ManualClock`, for every strategy: exhaustion,
//! stalls, regressions, batches, `try_next_id` and `resume_after`.

mod common;

use std::thread;
use std::time::Duration;

use common::*;
use flakegen::clock::ManualClock;
use flakegen::{BuildError, Builder, Fields, IdGenerator, IssueError, Layout, Snowflake};

#[test]
fn exhausting_a_unit_waits_for_the_next_and_says_how_long() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(NARROW, 3);
        clock.advance(Duration::from_micros(300)); // 0.3 of the way into a unit
        let generator = build(strategy, builder);
        let mut ids: Vec<Snowflake> = (0..4).map(|_| generator.try_next_id().unwrap()).collect();
        match generator.try_next_id() {
            Err(IssueError::WouldBlock { wait_nanos }) => {
                assert_eq!(wait_nanos, 700_000, "{strategy}")
            }
            other => panic!("{strategy}: expected WouldBlock, got {other:?}"),
        }
        clock.advance(millis(1));
        ids.push(generator.try_next_id().unwrap());
        assert_strictly_increasing(&ids, strategy);
        let now = clock_units(&NARROW, &clock);
        assert_eq!(timestamp(&NARROW, ids[0]), now - 1, "{strategy}");
        assert_eq!(timestamp(&NARROW, ids[4]), now, "{strategy}");
        for id in &ids {
            assert_eq!(NARROW.decode(*id).unwrap().worker, 3, "{strategy}");
        }
    }
}

#[test]
fn a_lead_lets_a_burst_borrow_future_units_and_no_further() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(NARROW, 0);
        let generator = build(strategy, builder.max_lead(millis(10)));
        let start = clock_units(&NARROW, &clock);
        // 11 units (this one and 10 ahead) of 4 IDs each, with the clock frozen.
        let ids: Vec<Snowflake> = (0..44).map(|_| generator.next_id().unwrap()).collect();
        assert_strictly_increasing(&ids, strategy);
        assert_eq!(timestamp(&NARROW, ids[43]), start + 10, "{strategy}");
        assert!(
            matches!(generator.try_next_id(), Err(IssueError::WouldBlock { .. })),
            "{strategy}"
        );
    }
}

#[test]
fn a_stalled_clock_blocks_next_id_until_it_moves() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(NARROW, 0);
        let generator = build(strategy, builder);
        for _ in 0..4 {
            generator.next_id().unwrap();
        }
        let mover = {
            let clock = clock.clone();
            thread::spawn(move || {
                thread::sleep(millis(30));
                clock.advance(millis(1));
            })
        };
        let id = generator.next_id().unwrap(); // waits for the mover
        mover.join().unwrap();
        assert_eq!(
            timestamp(&NARROW, id),
            clock_units(&NARROW, &clock),
            "{strategy}"
        );
    }
}

#[test]
fn a_clock_stepping_back_never_repeats_or_reorders_ids() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(Layout::TWITTER, 5);
        let generator = build(strategy, builder.max_wait(Duration::from_secs(10)));
        let mut ids = vec![generator.next_id().unwrap()];
        clock.rewind(Duration::from_secs(5));
        match generator.try_next_id() {
            Err(e @ IssueError::WouldBlock { .. }) => {
                let wait = e.retry_after().unwrap();
                assert!(
                    wait > Duration::from_millis(4_999) && wait <= Duration::from_secs(5),
                    "{strategy}: {wait:?}"
                )
            }
            other => panic!("{strategy}: expected WouldBlock, got {other:?}"),
        }
        // Back to where it was, and a little further.
        clock.advance(Duration::from_secs(5) + millis(2));
        ids.push(generator.next_id().unwrap());
        let mut batch = [Snowflake::default(); 10];
        generator.next_ids(&mut batch).unwrap();
        ids.extend(batch);
        assert_strictly_increasing(&ids, strategy);
        let now = clock_units(&Layout::TWITTER, &clock);
        assert!(
            ids.iter().all(|id| timestamp(&Layout::TWITTER, *id) <= now),
            "{strategy}"
        );
    }
}

#[test]
fn a_clock_further_behind_than_max_wait_fails_at_once_and_issues_nothing() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(Layout::TWITTER, 5);
        let generator = build(strategy, builder); // max_wait: the default second
        let before = generator.next_id().unwrap();
        clock.rewind(Duration::from_secs(3));
        let behind = |result: Result<(), IssueError>| match result {
            Err(IssueError::ClockBehind { behind_nanos }) => {
                assert!(behind_nanos > 2_999_000_000, "{strategy}: {behind_nanos}")
            }
            other => panic!("{strategy}: expected ClockBehind, got {other:?}"),
        };
        // The blocking calls return at once (this test would hang otherwise).
        behind(generator.next_id().map(drop));
        behind(generator.next_ids(&mut [Snowflake::default(); 3]));
        behind(generator.try_next_id().map(drop));
        clock.advance(Duration::from_secs(3) + millis(1));
        assert!(generator.next_id().unwrap() > before, "{strategy}");
    }
}

#[test]
fn a_lead_rides_out_small_regressions_without_waiting() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(Layout::TWITTER, 1);
        let generator = build(strategy, builder.max_lead(millis(50)));
        let first = generator.next_id().unwrap();
        clock.rewind(millis(20));
        let second = generator.try_next_id().expect("within the lead: no wait");
        assert!(second > first, "{strategy}");
        let ahead = timestamp(&Layout::TWITTER, second) - clock_units(&Layout::TWITTER, &clock);
        assert!(ahead <= 50, "{strategy}: {ahead} units ahead");
        clock.rewind(millis(100));
        assert!(
            matches!(generator.try_next_id(), Err(IssueError::WouldBlock { .. })),
            "{strategy}"
        );
    }
}

#[test]
fn batches_cross_units_and_stay_ordered() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(NARROW, 9);
        let generator = build(strategy, builder.max_lead(millis(100)));
        let mut ids = vec![generator.next_id().unwrap()];
        let mut batch = [Snowflake::default(); 37];
        generator.next_ids(&mut batch).unwrap();
        ids.extend(batch);
        generator.next_ids(&mut []).unwrap();
        ids.push(generator.next_id().unwrap());
        assert_strictly_increasing(&ids, strategy);
        let first = timestamp(&NARROW, ids[0]);
        assert_eq!(
            timestamp(&NARROW, ids[38]),
            first + 38 / 4,
            "{strategy}: dense, no gaps"
        );
        assert!(ids.iter().all(|id| NARROW.decode(*id).unwrap().worker == 9));
        let _ = clock;
    }
}

#[test]
fn a_batch_larger_than_the_lead_waits_for_the_clock() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(NARROW, 0);
        let generator = build(strategy, builder);
        let mover = {
            let clock = clock.clone();
            thread::spawn(move || {
                for _ in 0..3 {
                    thread::sleep(millis(10));
                    clock.advance(millis(1));
                }
            })
        };
        let mut batch = [Snowflake::default(); 12]; // three units' worth
        generator.next_ids(&mut batch).unwrap();
        mover.join().unwrap();
        assert_strictly_increasing(&batch, strategy);
        let last = timestamp(&NARROW, batch[11]);
        assert!(last <= clock_units(&NARROW, &clock), "{strategy}");
    }
}

#[test]
fn resume_after_never_reissues_across_a_restart_with_a_slower_clock() {
    for strategy in STRATEGIES {
        let (clock, builder) = manual(Layout::TWITTER, 4);
        let before = build(strategy, builder.clone());
        let mut last = before.next_id().unwrap();
        for _ in 0..100 {
            last = before.next_id().unwrap();
        }
        drop(before);

        // The process restarts on a host whose clock is 2 s behind: past the
        // default max_wait, so it does not build; with a longer one, it waits.
        clock.rewind(Duration::from_secs(2));
        let refused = builder.clone().resume_after(last).build(strategy);
        assert!(
            matches!(refused, Err(flakegen::BuildError::ResumeAhead { .. })),
            "{strategy}"
        );
        let after = build(
            strategy,
            builder
                .clone()
                .max_wait(Duration::from_secs(5))
                .resume_after(last),
        );
        assert!(
            matches!(after.try_next_id(), Err(IssueError::WouldBlock { .. })),
            "{strategy}"
        );
        clock.advance(Duration::from_secs(2));
        assert!(after.next_id().unwrap() > last, "{strategy}");
        // Each restart comes after the process before it has gone.
        drop(after);

        // With a lead that covers the gap, it carries straight on.
        clock.rewind(Duration::from_secs(2));
        let lenient = build(
            strategy,
            builder
                .clone()
                .max_lead(Duration::from_secs(3))
                .resume_after(last),
        );
        assert!(lenient.try_next_id().unwrap() > last, "{strategy}");
        drop(lenient);

        // Resuming after another worker's ID skips that ID's whole unit.
        let other = Layout::TWITTER
            .compose(Fields {
                worker: 1000,
                ..Layout::TWITTER.decode(last).unwrap()
            })
            .unwrap();
        let successor = build(
            strategy,
            builder
                .clone()
                .max_lead(Duration::from_secs(3))
                .resume_after(other),
        );
        let id = successor.next_id().unwrap();
        assert!(id > other, "{strategy}");
        assert_eq!(
            timestamp(&Layout::TWITTER, id),
            timestamp(&Layout::TWITTER, other) + 1
        );
    }
}

#[test]
fn a_clock_past_the_layout_end_is_an_error_not_a_wrap() {
    let short = Layout::builder()
        .timestamp_bits(20)
        .worker_bits(10)
        .sequence_bits(12)
        .epoch_unix_millis(START_MS)
        .build()
        .unwrap();
    for strategy in STRATEGIES {
        let clock = ManualClock::from_unix_millis(START_MS + (1 << 20) - 1);
        let generator = build(
            strategy,
            Builder::new()
                .worker(1)
                .layout(short)
                .clock(clock.clone())
                .max_lead(millis(5)),
        );
        let mut ids = vec![];
        // The last unit's 4096 IDs, then nothing.
        for _ in 0..4096 {
            ids.push(generator.next_id().unwrap());
        }
        assert_strictly_increasing(&ids, strategy);
        for result in [
            generator.next_id(),
            generator.try_next_id(),
            generator
                .next_ids(&mut [Snowflake::default(); 2])
                .map(|_| Snowflake::default()),
        ] {
            assert!(
                matches!(result, Err(IssueError::TimestampExhausted { .. })),
                "{strategy}: {result:?}"
            );
        }
        clock.advance(Duration::from_secs(10));
        assert!(
            matches!(
                generator.next_id(),
                Err(IssueError::TimestampExhausted { .. })
            ),
            "{strategy}"
        );
        let err = generator.next_id().unwrap_err();
        assert!(
            err.to_string().contains("check that the clock is right"),
            "{err}"
        );
    }
}

#[test]
fn builders_reject_bad_settings() {
    let (_, builder) = manual(Layout::TWITTER, 1024);
    assert!(matches!(
        builder.clone().build_mutex(),
        Err(BuildError::WorkerOutOfRange {
            worker: 1024,
            max: 1023
        })
    ));
    assert!(matches!(
        builder.clone().build_atomic(),
        Err(BuildError::WorkerOutOfRange { .. })
    ));
    assert!(matches!(
        builder.build_ticker(),
        Err(BuildError::WorkerOutOfRange { .. })
    ));

    let future = Layout::builder()
        .epoch_unix_millis(START_MS + 1)
        .build()
        .unwrap();
    let (_, builder) = manual(future, 0);
    assert!(matches!(
        builder.build_mutex(),
        Err(BuildError::EpochInFuture { .. })
    ));

    let (_, builder) = manual(Layout::TWITTER, 0);
    let foreign = Snowflake::from_u64(1 << 63);
    assert!(matches!(
        builder.resume_after(foreign).build_atomic(),
        Err(BuildError::ResumeAfterOtherLayout(_))
    ));
}

#[test]
fn ticker_without_its_thread_still_follows_the_clock_once_a_unit_is_used_up() {
    let (clock, builder) = manual(NARROW, 0);
    let generator = builder.build_ticker_without_thread().unwrap();
    assert!(!generator.has_thread());
    let start = clock_units(&NARROW, &clock);
    clock.advance(millis(7)); // nobody publishes this
    let ids: Vec<Snowflake> = (0..5).map(|_| generator.next_id().unwrap()).collect();
    assert_strictly_increasing(&ids, "ticker");
    // The published unit's four IDs carry the stale time. The fifth borrowed the
    // next unit, found the clock past it and kept it; it also published the clock,
    // so the sixth is current.
    assert_eq!(timestamp(&NARROW, ids[3]), start);
    assert_eq!(timestamp(&NARROW, ids[4]), start + 1);
    assert_eq!(timestamp(&NARROW, generator.next_id().unwrap()), start + 7);
    clock.advance(millis(1));
    generator.refresh();
    assert_eq!(timestamp(&NARROW, generator.next_id().unwrap()), start + 8);
}

#[test]
fn ticker_thread_publishes_the_clock_by_itself() {
    let (clock, builder) = manual(Layout::TWITTER, 0);
    let generator = builder.build_ticker().unwrap();
    assert!(generator.has_thread());
    clock.advance(millis(500));
    let target = clock_units(&Layout::TWITTER, &clock);
    // The thread polls a frozen manual clock once per unit (1 ms); give it up to 10 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let id = generator.next_id().unwrap();
        if timestamp(&Layout::TWITTER, id) == target {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the ticker thread never published"
        );
        thread::sleep(millis(1));
    }
}

#[test]
fn dropping_a_ticker_does_not_sleep_out_its_unit() {
    // A one-hour unit: a drop that waited for the next tick would hang the test.
    let hourly = Layout::builder()
        .timestamp_bits(20)
        .unit(Duration::from_secs(3600))
        .build()
        .unwrap();
    let generator = Builder::new()
        .worker(1)
        .layout(hourly)
        .build_ticker()
        .unwrap();
    generator.next_id().unwrap();
    thread::sleep(millis(20)); // let the thread go to sleep
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        drop(generator);
        done_tx.send(()).unwrap();
    });
    done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("drop did not join the ticker thread promptly");
}

#[test]
fn generators_work_behind_pointers_and_as_trait_objects() {
    let (_, builder) = manual(Layout::TWITTER, 2);
    let shared = std::sync::Arc::new(builder.build_atomic().unwrap());
    let by_ref: &dyn IdGenerator = &*shared;
    let a = by_ref.next_id().unwrap();
    let b = IdGenerator::next_id(&shared).unwrap();
    assert!(a < b);
    assert_eq!(IdGenerator::worker(&shared), 2);
    assert_eq!(IdGenerator::layout(&&*shared), &Layout::TWITTER);
    assert!(format!("{shared:?}").contains("AtomicGenerator"));
}

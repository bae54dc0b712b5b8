//! The ends of time and of patience: a layout that has run out issues
//! nothing after a restart, and no blocking call waits longer than
//! `max_wait` by the monotonic clock, whatever the generator's clock does.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{NARROW, STRATEGIES, build, manual, millis};
use flakegen::clock::ManualClock;
use flakegen::{BuildError, Builder, IssueError, Layout, SystemClock};

/// Twitter's epoch with 30 timestamp bits: it ran out in November 2010.
const RAN_OUT: Layout = Layout::builder().timestamp_bits(30).build_const();

#[test]
fn a_layout_that_has_run_out_issues_nothing_after_a_restart() {
    for strategy in STRATEGIES {
        for _restart in 0..2 {
            match Builder::new()
                .worker(1)
                .layout(RAN_OUT)
                .clock(SystemClock)
                .build(strategy)
            {
                Err(e @ BuildError::LayoutExhausted { .. }) => {
                    assert!(e.to_string().contains("ran out of time"), "{e}")
                }
                Ok(_) => panic!("{strategy}: built a generator on a layout that ran out"),
                Err(e) => panic!("{strategy}: {e}"),
            }
        }
    }
}

/// At exactly `exhausted_at()` the clock reads the first unit past the
/// layout: a generator built there could only issue the last unit again,
/// which an earlier one may have issued. A millisecond before, the last
/// unit is still the clock's, and a build issues it.
#[test]
fn a_build_at_exactly_the_end_is_an_error_and_one_before_it_issues() {
    let end = Layout::TWITTER.exhausted_at();
    for strategy in STRATEGIES {
        let at_end = ManualClock::new(end);
        match Builder::new().worker(1).clock(at_end).build(strategy) {
            Err(BuildError::LayoutExhausted { end_unix_millis }) => {
                let end_ms = end
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis();
                assert_eq!(u128::from(end_unix_millis), end_ms, "{strategy}");
            }
            other => panic!(
                "{strategy}: a build at exhausted_at(): {:?}",
                other.map(|_| ())
            ),
        }
        let before = ManualClock::new(end - Duration::from_millis(1));
        let g = build(strategy, Builder::new().worker(2).clock(before));
        let id = g.next_id().unwrap();
        let fields = Layout::TWITTER.decode(id).unwrap();
        assert_eq!(
            fields.timestamp,
            Layout::TWITTER.max_timestamp(),
            "{strategy}"
        );
    }
}

#[test]
fn a_clock_past_the_end_at_build_is_an_error() {
    let past_end = ManualClock::new(Layout::TWITTER.exhausted_at() + Duration::from_millis(1));
    for strategy in STRATEGIES {
        let built = Builder::new()
            .worker(1)
            .clock(past_end.clone())
            .build(strategy);
        assert!(
            matches!(built, Err(BuildError::LayoutExhausted { .. })),
            "{strategy}"
        );
    }
}

/// How long a call that must wait for a frozen clock takes, and what it says.
fn frozen_wait(step_back: bool) {
    let max_wait = millis(50);
    for strategy in STRATEGIES {
        let (clock, builder) = manual(NARROW, 1);
        let g = build(strategy, builder.max_wait(max_wait));
        for _ in 0..=NARROW.max_sequence() {
            g.next_id().unwrap(); // the unit, used up
        }
        let stepper = step_back.then(|| {
            let clock = clock.clone();
            thread::spawn(move || {
                thread::sleep(millis(10));
                clock.rewind(Duration::from_secs(1));
            })
        });
        let started = Instant::now();
        let result = g.next_id();
        let took = started.elapsed();
        if let Some(stepper) = stepper {
            stepper.join().unwrap();
        }
        assert!(
            matches!(result, Err(IssueError::ClockBehind { .. })),
            "{strategy}: {result:?}"
        );
        assert!(took >= max_wait, "{strategy}: gave up after {took:?}");
        // Generous: a loaded 2-core machine may run the waiter late.
        assert!(took < max_wait + millis(500), "{strategy}: waited {took:?}");
    }
}

#[test]
fn a_frozen_clock_cannot_hold_a_blocking_call() {
    frozen_wait(false);
}

#[test]
fn a_clock_stepped_back_mid_wait_cannot_hold_a_blocking_call() {
    frozen_wait(true);
}

#[test]
fn a_resume_point_within_max_wait_builds_and_one_beyond_does_not() {
    let (clock, builder) = manual(Layout::TWITTER, 1);
    let ahead = |by: Duration| {
        let layout = Layout::TWITTER;
        layout
            .compose(flakegen::Fields {
                timestamp: layout.timestamp_at(clock.now() + by),
                worker: 1,
                sequence: 0,
            })
            .unwrap()
    };
    let near = builder.clone().max_wait(Duration::from_secs(1));
    assert!(near.resume_after(ahead(millis(500))).build_atomic().is_ok());
    let far = builder.max_wait(Duration::from_secs(1));
    match far
        .resume_after(ahead(Duration::from_secs(60)))
        .build_atomic()
    {
        Err(e @ BuildError::ResumeAhead { wait_nanos }) => {
            assert!(wait_nanos >= 59_000_000_000, "{e}");
            assert!(e.to_string().contains("raise max_wait"), "{e}");
        }
        other => panic!("expected ResumeAhead, got {other:?}"),
    }
}

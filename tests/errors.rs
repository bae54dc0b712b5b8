//! Every error path of the public API, in one table: each bad input gives its
//! own error (never a panic, never a wrong ID), and its message says what to do.

mod common;

use std::error::Error as _;
use std::net::Ipv4Addr;
use std::time::Duration;

use common::*;
use flakegen::clock::ManualClock;
use flakegen::lease::{self, LeaseError};
use flakegen::{
    BuildError, Builder, Error, Field, Fields, IdError, IdGenerator, IssueError, Layout,
    LayoutError, Snowflake, Strategy, worker,
};

/// A case's name, what it produced, the error it must be, and a phrase of
/// advice its message must contain.
type Case = (String, Result<(), Error>, fn(&Error) -> bool, &'static str);

fn err<T, E: Into<Error>>(r: Result<T, E>) -> Result<(), Error> {
    r.map(|_| ()).map_err(Into::into)
}

fn clock() -> ManualClock {
    ManualClock::from_unix_millis(START_MS)
}

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = vec![];
    let mut case = |name: &str, result, is: fn(&Error) -> bool, advice| {
        cases.push((name.to_owned(), result, is, advice));
    };

    for (name, layout) in [
        ("twitter", Layout::TWITTER),
        ("discord", Layout::DISCORD),
        ("sonyflake", Layout::SONYFLAKE),
        ("instagram", Layout::INSTAGRAM),
    ] {
        for strategy in Strategy::ALL {
            let too_large = layout.max_worker() + 1;
            let builder = Builder::new()
                .worker(0)
                .layout(layout)
                .worker(too_large)
                .clock(clock());
            case(
                &format!("{name} {strategy}: worker too large"),
                err(builder.build(strategy)),
                |e| matches!(e, Error::Build(BuildError::WorkerOutOfRange { .. })),
                "more worker bits",
            );
        }
    }

    let layout = |b: flakegen::LayoutBuilder| err(b.build());
    case(
        "widths over 64",
        layout(Layout::builder().timestamp_bits(50)),
        |e| matches!(e, Error::Layout(LayoutError::TooManyBits { total: 72 })),
        "must fit in 64",
    );
    case(
        "no timestamp",
        layout(Layout::builder().timestamp_bits(0)),
        |e| matches!(e, Error::Layout(LayoutError::NoTimestampBits)),
        "at least 1",
    );
    case(
        "no headroom",
        layout(
            Layout::builder()
                .timestamp_bits(44)
                .worker_bits(0)
                .sequence_bits(20),
        ),
        |e| matches!(e, Error::Layout(LayoutError::NoHeadroom)),
        "63 at most",
    );
    case(
        "zero unit",
        layout(Layout::builder().unit(Duration::ZERO)),
        |e| matches!(e, Error::Layout(LayoutError::ZeroUnit)),
        "at least 1 ns",
    );
    case(
        "unit over u64 ns",
        layout(Layout::builder().unit(Duration::from_secs(u64::MAX))),
        |e| matches!(e, Error::Layout(LayoutError::UnitTooLarge)),
        "584 years",
    );
    case(
        "outlives the clock",
        layout(Layout::builder().timestamp_bits(48).worker_bits(4)),
        |e| matches!(e, Error::Layout(LayoutError::OutlivesClock)),
        "fewer timestamp bits",
    );
    case(
        "epoch in the future",
        err(Builder::new()
            .worker(1)
            .layout(
                Layout::builder()
                    .epoch_unix_millis(START_MS + 60_000)
                    .build()
                    .unwrap(),
            )
            .clock(clock())
            .build_atomic()),
        |e| matches!(e, Error::Build(BuildError::EpochInFuture { .. })),
        "epoch in the past",
    );
    case(
        "no worker id",
        err(Builder::new().clock(clock()).build_atomic()),
        |e| matches!(e, Error::Build(BuildError::NoWorker)),
        "(Builder::worker)",
    );
    case(
        "a worker id a live generator of this process has",
        {
            let clock = clock();
            let first = Builder::new().worker(9).clock(clock.clone()).build_atomic();
            let second = err(Builder::new().worker(9).clock(clock).build_mutex());
            drop(first);
            second
        },
        |e| matches!(e, Error::Build(BuildError::WorkerInUse { worker: 9 })),
        "share that one",
    );
    case(
        "clock past the layout's end at build",
        {
            let past_end =
                ManualClock::new(Layout::TWITTER.exhausted_at() + Duration::from_secs(1));
            err(Builder::new().worker(0).clock(past_end).build_mutex())
        },
        |e| matches!(e, Error::Build(BuildError::LayoutExhausted { .. })),
        "check that the clock is right",
    );
    case(
        "timestamp past the layout's end while running",
        {
            let last_unit =
                ManualClock::new(Layout::TWITTER.exhausted_at() - Duration::from_millis(1));
            let g = Builder::new()
                .worker(0)
                .clock(last_unit.clone())
                .build_mutex()
                .unwrap();
            last_unit.advance(Duration::from_secs(1));
            // The last unit's sequence first, then the error, never a wrap.
            (0..=4096).try_for_each(|_| err(g.next_id()))
        },
        |e| matches!(e, Error::Issue(IssueError::TimestampExhausted { .. })),
        "check that the clock is right",
    );
    case(
        "resume after an id further ahead than max_wait",
        err(Builder::new()
            .worker(0)
            .clock(clock())
            .resume_after(
                Layout::TWITTER
                    .compose(Fields {
                        timestamp: Layout::TWITTER
                            .timestamp_at(clock().now() + Duration::from_secs(60)),
                        worker: 0,
                        sequence: 0,
                    })
                    .unwrap(),
            )
            .build_mutex()),
        |e| matches!(e, Error::Build(BuildError::ResumeAhead { .. })),
        "raise max_wait",
    );
    case(
        "resume after an id from another layout",
        err(Builder::new()
            .worker(0)
            .clock(clock())
            .resume_after(Snowflake::from_u64(u64::MAX))
            .build_mutex()),
        |e| matches!(e, Error::Build(BuildError::ResumeAfterOtherLayout(_))),
        "decode it with that one",
    );
    case(
        "resume after the layout's last id",
        err(Builder::new()
            .worker(0)
            .clock(clock())
            .resume_after(Snowflake::from_u64((1 << 63) - 1))
            .build_mutex()),
        |e| matches!(e, Error::Build(BuildError::ResumeAfterExhausted { .. })),
        "later epoch",
    );
    case(
        "would block",
        {
            let (_clock, builder) = manual(NARROW, 0);
            let g = builder.build_atomic().unwrap();
            (0..5).try_for_each(|_| err(g.try_next_id()))
        },
        |e| matches!(e, Error::Issue(IssueError::WouldBlock { .. })),
        "retry in",
    );
    case(
        "clock stepped back further than max_wait",
        {
            let (clock, builder) = manual(Layout::TWITTER, 0);
            let g = builder
                .max_wait(Duration::from_millis(50))
                .build_ticker_without_thread()
                .unwrap();
            g.next_id().unwrap();
            clock.rewind(Duration::from_millis(80));
            g.refresh();
            err(g.next_id())
        },
        |e| matches!(e, Error::Issue(IssueError::ClockBehind { behind_nanos }) if *behind_nanos > 79_000_000),
        "raise max_wait",
    );
    case(
        "compose a sequence too large",
        err(Layout::SONYFLAKE.compose(Fields {
            timestamp: 0,
            worker: 0,
            sequence: 256,
        })),
        |e| {
            matches!(
                e,
                Error::Id(IdError::FieldOutOfRange {
                    field: Field::Sequence,
                    value: 256,
                    max: 255
                })
            )
        },
        "at most 255",
    );
    case(
        "decode an id wider than the layout",
        err(Layout::SONYFLAKE.decode(Snowflake::from_u64(1 << 63))),
        |e| matches!(e, Error::Id(IdError::OutsideLayout { bits: 63, .. })),
        "another layout",
    );
    for (input, advice) in [
        ("", "expected decimal digits"),
        ("12ab", "byte 2 is not a decimal digit"),
        ("-5", "no sign"),
        ("99999999999999999999", "at most 18446744073709551615"),
    ] {
        case(
            &format!("parse {input:?}"),
            err(input.parse::<Snowflake>()),
            |e| matches!(e, Error::ParseId(_)),
            advice,
        );
    }
    case(
        "parse a strategy",
        err("spin".parse::<Strategy>()),
        |e| matches!(e, Error::ParseStrategy(_)),
        "atomic, mutex, ticker",
    );
    case(
        "i64 above i64::MAX",
        err(i64::try_from(Snowflake::from_u64(u64::MAX))),
        |e| matches!(e, Error::Id(IdError::AboveI64 { .. })),
        "NUMERIC(20)",
    );
    case(
        "negative i64",
        err(Snowflake::try_from(-7i64)),
        |e| matches!(e, Error::Id(IdError::Negative { value: -7 })),
        "wrong column",
    );
    case(
        "worker from a /32 address",
        err(worker::from_ipv4(
            Ipv4Addr::new(10, 0, 0, 9),
            32,
            &Layout::TWITTER,
        )),
        |e| matches!(e, Error::Worker(_)),
        "set FLAKEGEN_WORKER_ID",
    );
    case(
        "worker from a public address",
        err(worker::from_ipv4(
            Ipv4Addr::new(8, 8, 8, 8),
            24,
            &Layout::TWITTER,
        )),
        |e| matches!(e, Error::Worker(_)),
        "set FLAKEGEN_WORKER_ID",
    );
    case(
        "a registry URL of no known scheme",
        err(lease::connect("zookeeper://app@db/app")),
        |e| matches!(e, Error::Lease(LeaseError::UnsupportedUrl { .. })),
        "use mysql:// (or mariadb://), postgres://",
    );
    #[cfg(not(feature = "mysql"))]
    case(
        "a mysql URL without the feature",
        err(lease::connect("mysql://app@db/app")),
        |e| matches!(e, Error::Lease(LeaseError::FeatureOff { .. })),
        "flakegen's \"mysql\" feature",
    );
    #[cfg(not(feature = "postgres"))]
    case(
        "a postgres URL without the feature",
        err(lease::connect("Postgres://app@db/app")),
        |e| {
            matches!(
                e,
                Error::Lease(LeaseError::FeatureOff {
                    feature: "postgres",
                    ..
                })
            )
        },
        "need flakegen's \"postgres\" feature",
    );
    #[cfg(not(feature = "redis"))]
    case(
        "a redis URL without the feature",
        err(lease::connect("redis://db:6379/0")),
        |e| {
            matches!(
                e,
                Error::Lease(LeaseError::FeatureOff {
                    feature: "redis",
                    ..
                })
            )
        },
        "need flakegen's \"redis\" feature",
    );
    #[cfg(feature = "postgres")]
    case(
        "a postgres URL with no host name in it",
        err(lease::connect("postgres://%%%")),
        |e| matches!(e, Error::Lease(LeaseError::InvalidUrl { .. })),
        "not a host name or an IP address",
    );
    cases
}

/// Schemes are case-insensitive (RFC 3986): nothing is sent until the
/// first call, so a URL that parses is enough here.
#[cfg(feature = "postgres")]
#[test]
fn registry_url_schemes_are_case_insensitive() {
    for url in [
        "Postgres://app@127.0.0.1/app",
        "POSTGRESQL://app@127.0.0.1/app",
    ] {
        lease::connect(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    }
}

/// `fn main() -> Result<(), flakegen::Error>` prints `Debug`: it must carry
/// the message that says what to do.
#[test]
fn debug_of_error_carries_the_message() {
    let e = Error::from(BuildError::FenceAhead {
        worker: 0,
        wait_nanos: 5_000_699_047,
    });
    let debug = format!("{e:?}");
    assert!(debug.starts_with(&e.to_string()), "{debug}");
    assert!(debug.contains("FenceAhead"), "{debug}");
    // The alternate form is the structure alone.
    let structure = format!("{e:#?}");
    assert!(
        structure.starts_with("Build(\n    FenceAhead {"),
        "{structure}"
    );
    assert!(!structure.contains(&e.to_string()), "{structure}");
}

#[test]
fn every_error_path_gives_its_error_and_advice() {
    for (name, result, is_expected, advice) in cases() {
        let e = result.expect_err(&name);
        assert!(is_expected(&e), "{name}: got {e:?}");
        let message = e.to_string();
        assert!(
            message.contains(advice),
            "{name}: {message:?} lacks {advice:?}"
        );
        assert!(
            message.starts_with(char::is_lowercase),
            "{name}: {message:?}"
        );
    }
}

#[test]
fn ticker_spawn_failure_reports_its_source() {
    let e = Error::from(BuildError::TickerSpawn(std::io::Error::other(
        "thread limit reached",
    )));
    assert!(e.source().is_some());
    assert!(e.to_string().contains("use the atomic strategy"), "{e}");
}

#[test]
fn issue_errors_say_when_to_retry() {
    assert_eq!(
        IssueError::WouldBlock { wait_nanos: 7 }.retry_after(),
        Some(Duration::from_nanos(7))
    );
    assert_eq!(
        IssueError::ClockBehind { behind_nanos: 9 }.retry_after(),
        Some(Duration::from_nanos(9))
    );
    assert_eq!(
        IssueError::TimestampExhausted { end_unix_millis: 0 }.retry_after(),
        None
    );
}

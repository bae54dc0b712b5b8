//! Every error path of the public API, in one table: each bad input gives its
//! own `Error` variant (never a panic, never a wrong ID), and its message says
//! what to do.

mod common;

use std::error::Error as _;
use std::time::Duration;

use common::*;
use flakegen::{
    Builder, Error, IdGenerator, Layout, LayoutError, ManualClock, Part, Parts, Snowflake,
};

/// What a case produced, and a word its message must contain (the advice).
type Case = (
    &'static str,
    Result<(), Error>,
    fn(&Error) -> bool,
    &'static str,
);

fn err<T>(r: Result<T, Error>) -> Result<(), Error> {
    r.map(|_| ())
}

fn cases() -> Vec<Case> {
    let clock = || ManualClock::from_unix_millis(START_MS);
    let mut cases: Vec<Case> = vec![];

    for (name, layout) in [
        ("twitter", Layout::TWITTER),
        ("discord", Layout::DISCORD),
        ("sonyflake", Layout::SONYFLAKE),
        ("instagram", Layout::INSTAGRAM),
    ] {
        let too_large = layout.max_worker() + 1;
        let b = Builder::new()
            .layout(layout)
            .worker(too_large)
            .clock(clock());
        cases.push((
            name,
            err(b.clone().build_mutex()),
            |e| matches!(e, Error::WorkerOutOfRange { .. }),
            "more worker bits",
        ));
        cases.push((
            name,
            err(b.clone().build_atomic()),
            |e| matches!(e, Error::WorkerOutOfRange { .. }),
            "use 0 to",
        ));
        cases.push((
            name,
            err(b.build_ticker()),
            |e| matches!(e, Error::WorkerOutOfRange { .. }),
            "use 0 to",
        ));
    }

    let layout_case = |b: flakegen::LayoutBuilder| err(b.build());
    cases.extend([
        (
            "widths over 64",
            layout_case(Layout::builder().timestamp_bits(50)),
            (|e| {
                matches!(
                    e,
                    Error::InvalidLayout(LayoutError::TooManyBits { total: 72 })
                )
            }) as fn(&Error) -> bool,
            "must fit in 64",
        ),
        (
            "no timestamp",
            layout_case(Layout::builder().timestamp_bits(0)),
            |e| matches!(e, Error::InvalidLayout(LayoutError::NoTimestampBits)),
            "at least 1",
        ),
        (
            "no headroom",
            layout_case(
                Layout::builder()
                    .timestamp_bits(44)
                    .worker_bits(0)
                    .sequence_bits(20),
            ),
            |e| matches!(e, Error::InvalidLayout(LayoutError::NoHeadroom)),
            "63 at most",
        ),
        (
            "zero unit",
            layout_case(Layout::builder().unit(Duration::ZERO)),
            |e| matches!(e, Error::InvalidLayout(LayoutError::ZeroUnit)),
            "at least 1 ns",
        ),
        (
            "unit over u64 ns",
            layout_case(Layout::builder().unit(Duration::from_secs(u64::MAX))),
            |e| matches!(e, Error::InvalidLayout(LayoutError::UnitTooLarge)),
            "584 years",
        ),
        (
            "outlives the clock",
            layout_case(Layout::builder().timestamp_bits(48).worker_bits(4)),
            |e| matches!(e, Error::InvalidLayout(LayoutError::OutlivesClock)),
            "fewer timestamp bits",
        ),
        (
            "epoch in the future",
            err(Builder::new()
                .layout(
                    Layout::builder()
                        .epoch_unix_millis(START_MS + 60_000)
                        .build()
                        .unwrap(),
                )
                .clock(clock())
                .build_atomic()),
            |e| matches!(e, Error::EpochInFuture { .. }),
            "epoch in the past",
        ),
        (
            "timestamp past the layout's end",
            {
                let past_end =
                    ManualClock::new(Layout::TWITTER.exhausted_at() + Duration::from_secs(1));
                let g = Builder::new().clock(past_end).build_mutex().unwrap();
                let mut result = Ok(());
                // The last unit's sequence first, then the error, never a wrap.
                for _ in 0..=4096 {
                    result = err(g.next_id());
                    if result.is_err() {
                        break;
                    }
                }
                result
            },
            |e| matches!(e, Error::TimestampExhausted { .. }),
            "check that the clock is right",
        ),
        (
            "resume after an id from another layout",
            err(Builder::new()
                .clock(clock())
                .resume_after(Snowflake::from_u64(u64::MAX))
                .build_mutex()),
            |e| matches!(e, Error::IdOutsideLayout { .. }),
            "decode it with that one",
        ),
        (
            "would block",
            {
                let (c, builder) = manual(NARROW, 0);
                let g = builder.build_atomic().unwrap();
                let _ = c;
                (0..5).try_for_each(|_| err(g.try_next_id()))
            },
            |e| matches!(e, Error::WouldBlock { .. }),
            "retry in",
        ),
        (
            "compose a sequence too large",
            err(Layout::SONYFLAKE.compose(Parts {
                timestamp: 0,
                worker: 0,
                sequence: 256,
            })),
            |e| {
                matches!(
                    e,
                    Error::PartOutOfRange {
                        part: Part::Sequence,
                        value: 256,
                        max: 255
                    }
                )
            },
            "at most 255",
        ),
        (
            "decode an id wider than the layout",
            err(Layout::SONYFLAKE.decode(Snowflake::from_u64(1 << 63))),
            |e| matches!(e, Error::IdOutsideLayout { bits: 63, .. }),
            "another layout",
        ),
        (
            "parse empty",
            err("".parse::<Snowflake>()),
            |e| matches!(e, Error::InvalidId { .. }),
            "expected decimal digits",
        ),
        (
            "parse letters",
            err("12ab".parse::<Snowflake>()),
            |e| matches!(e, Error::InvalidId { .. }),
            "decimal digits only",
        ),
        (
            "parse negative",
            err("-5".parse::<Snowflake>()),
            |e| matches!(e, Error::InvalidId { .. }),
            "no sign",
        ),
        (
            "parse above u64::MAX",
            err("99999999999999999999".parse::<Snowflake>()),
            |e| matches!(e, Error::InvalidId { .. }),
            "at most 18446744073709551615",
        ),
        (
            "i64 above i64::MAX",
            err(i64::try_from(Snowflake::from_u64(u64::MAX))),
            |e| matches!(e, Error::IdAboveI64 { .. }),
            "NUMERIC(20)",
        ),
        (
            "negative i64",
            err(Snowflake::try_from(-7i64)),
            |e| matches!(e, Error::NegativeId { value: -7 }),
            "wrong column",
        ),
    ]);
    cases
}

#[test]
fn every_error_path_gives_its_variant_and_advice() {
    for (name, result, is_expected, advice) in cases() {
        let e = result.expect_err(name);
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
        assert!(e.source().is_none(), "{name}");
    }
}

#[test]
fn ticker_spawn_failure_reports_its_source() {
    let e = Error::TickerSpawn(std::io::Error::other("thread limit reached"));
    assert!(e.source().is_some());
    assert!(e.to_string().contains("use the atomic strategy"), "{e}");
}

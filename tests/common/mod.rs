//! Fixtures shared by the integration tests: every strategy from one builder.

#![allow(dead_code)] // each test file uses its own subset
#![allow(unreachable_pub)] // a module of each test crate, not a public API

#[cfg(any(feature = "postgres", feature = "redis", feature = "mysql"))]
pub mod backend;
#[cfg(feature = "tokio")]
pub mod heartbeat;

use std::time::Duration;

use flakegen::{
    Builder, Clock, IdGenerator, IssueError, Layout, ManualClock, Snowflake, Strategy,
    TickerGenerator,
};

/// 2024-01-01T00:00:00Z, comfortably after every preset's epoch.
pub const START_MS: u64 = 1_704_067_200_000;

/// A layout with 4 IDs per 1 ms unit, so that exhaustion happens at once.
pub const NARROW: Layout = Layout::builder()
    .timestamp_bits(41)
    .worker_bits(4)
    .sequence_bits(2)
    .build_const();

pub const STRATEGIES: [Strategy; 3] = Strategy::ALL;

/// Builds `strategy` from `builder`.
///
/// The ticker is built without its thread and refreshed before every call:
/// what its thread does at each boundary, made deterministic under a
/// `ManualClock` (a thread would notice a manual clock change up to one unit
/// later, and a test could not tell when). Its thread and its fallbacks have
/// tests of their own.
pub fn build<C: Clock + Clone + 'static>(
    strategy: Strategy,
    builder: Builder<C>,
) -> Box<dyn IdGenerator> {
    match strategy {
        Strategy::Ticker => Box::new(Refreshed(builder.build_ticker_without_thread().unwrap())),
        other => builder.build(other).unwrap(),
    }
}

/// A thread-less ticker that reads the clock before every call.
pub struct Refreshed<C: Clock + 'static>(pub TickerGenerator<C>);

impl<C: Clock + 'static> IdGenerator for Refreshed<C> {
    fn next_id(&self) -> Result<Snowflake, IssueError> {
        self.0.refresh();
        self.0.next_id()
    }
    fn try_next_id(&self) -> Result<Snowflake, IssueError> {
        self.0.refresh();
        self.0.try_next_id()
    }
    fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        self.0.refresh();
        self.0.next_ids(ids)
    }
    fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        self.0.refresh();
        self.0.try_next_ids(ids)
    }
    fn layout(&self) -> &Layout {
        self.0.layout()
    }
    fn worker(&self) -> u64 {
        self.0.worker()
    }
    fn max_wait(&self) -> Duration {
        self.0.max_wait()
    }
    fn lease(&self) -> Option<flakegen::lease::LeaseStatus> {
        self.0.lease()
    }
}

/// A manual clock at [`START_MS`] and a builder using it.
pub fn manual(layout: Layout, worker: u64) -> (ManualClock, Builder<ManualClock>) {
    let clock = ManualClock::from_unix_millis(START_MS);
    let builder = Builder::new()
        .layout(layout)
        .worker(worker)
        .clock(clock.clone());
    (clock, builder)
}

/// The clock's reading in units of `layout`.
pub fn clock_units(layout: &Layout, clock: &ManualClock) -> u64 {
    layout.timestamp_at(clock.now())
}

pub fn timestamp(layout: &Layout, id: Snowflake) -> u64 {
    layout.decode(id).unwrap().timestamp
}

pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Asserts the sequence is strictly increasing (hence also free of duplicates).
pub fn assert_strictly_increasing(ids: &[Snowflake], context: impl std::fmt::Display) {
    if let Some(i) = ids.windows(2).position(|w| w[0] >= w[1]) {
        panic!(
            "{context}: ids[{i}] = {} is not below ids[{}] = {}",
            ids[i],
            i + 1,
            ids[i + 1]
        );
    }
}

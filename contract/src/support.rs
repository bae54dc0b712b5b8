//! What the suite's tests share, and flakegen's own tests with them: every
//! strategy from one builder, and the order of IDs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flakegen::{
    Builder, Clock, IdGenerator, IssueError, Layout, Snowflake, Strategy, TickerGenerator,
};

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
#[derive(Debug)]
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
    fn next_id_or_wait_hint(&self) -> Result<Snowflake, IssueError> {
        self.0.refresh();
        self.0.next_id_or_wait_hint()
    }
    fn next_ids_or_wait_hint(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        self.0.refresh();
        self.0.next_ids_or_wait_hint(ids)
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
    fn after_restore(&self) -> Result<(), flakegen::Error> {
        self.0.after_restore()
    }
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

/// Stops the issuing threads when a rule ends, however it ends: a scope
/// whose threads never stop would hold the test until CI's limit.
pub(crate) struct StopOnDrop<'a>(pub(crate) &'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

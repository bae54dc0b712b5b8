//! A 1 ms heartbeat task beside some work on a current-thread runtime, that
//! moves a `ManualClock` at each beat: it beats only when the work gives the
//! runtime's one thread back. (The lease suite's own heartbeat, which counts
//! beats, is in `flakegen-contract`.)

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flakegen::clock::ManualClock;

/// Runs `work` with a heartbeat that advances `clock` by 1 ms at each beat:
/// the clock moves only while `work` leaves the thread to others. A call
/// that held the thread until the clock moved would wait for its `max_wait`
/// and fail.
pub async fn moving_clock<T>(clock: &ManualClock, work: impl Future<Output = T>) -> T {
    let stop = Arc::new(AtomicBool::new(false));
    let beat = tokio::spawn({
        let (clock, stop) = (clock.clone(), Arc::clone(&stop));
        async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(1)).await;
                clock.advance(Duration::from_millis(1));
            }
        }
    });
    let out = work.await;
    stop.store(true, Ordering::Relaxed);
    beat.await.unwrap();
    out
}

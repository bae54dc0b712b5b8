//! A 1 ms heartbeat task beside some work on a current-thread runtime: it
//! beats only when the work gives the runtime's one thread back.
//!
//! The tests count beats rather than time the gaps between them: a gap is
//! also how long the hypervisor took the CPU away, and a test must not fail
//! on that.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Runs `work` with a 1 ms heartbeat beside it, and counts the beats that
/// happened while it ran.
pub(crate) async fn beats<T>(work: impl Future<Output = T>) -> (T, u64) {
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let beat = tokio::spawn({
        let (count, stop) = (Arc::clone(&count), Arc::clone(&stop));
        async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(1)).await;
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let before = count.load(Ordering::Relaxed);
    let out = work.await;
    let during = count.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    beat.await.unwrap();
    (out, during)
}

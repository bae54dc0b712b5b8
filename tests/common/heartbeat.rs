//! A 1 ms heartbeat task: how long a runtime's thread went without polling it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The worst gap a 1 ms heartbeat task on a current-thread runtime sees
/// while `work` runs on that runtime's one thread, with 100 ms after it.
pub async fn worst_gap<T>(work: impl Future<Output = T>) -> (T, Duration) {
    let worst = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let beat = tokio::spawn({
        let (worst, stop) = (Arc::clone(&worst), Arc::clone(&stop));
        async move {
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(1)).await;
                let now = Instant::now();
                let gap = u64::try_from((now - last).as_micros()).unwrap();
                worst.fetch_max(gap, Ordering::Relaxed);
                last = now;
            }
        }
    });
    // The heartbeat starts beating before the work does.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let out = work.await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    beat.await.unwrap();
    (out, Duration::from_micros(worst.load(Ordering::Relaxed)))
}

//! How long single calls take: percentiles, not means.
//!
//! Each caller times every `next_id` (two `Instant::now()` reads around it,
//! about 25–60 ns of the figure on a VM) into an HDR histogram, on 1 and 2
//! threads. Two loads: below the cap, paced at half the Twitter layout's
//! rate, where a call should never wait; and saturated, where every call
//! that finds its unit used up waits for the next (at most one unit plus
//! however late the scheduler wakes it). A third load times `next_ids` for
//! 64 IDs at a time, saturated: a batch waits like a call, for its last ID.

use std::hint::{black_box, spin_loop};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use flakegen::{Builder, IdGenerator, Layout, Snowflake, Strategy};
use hdrhistogram::Histogram;

use super::environment;

/// One run's percentiles, in nanoseconds.
struct Tail {
    calls: u64,
    p50: u64,
    p99: u64,
    p999: u64,
    p9999: u64,
    max: u64,
}

/// Times every call of `threads` callers for `window`, each call taking
/// `batch` IDs (`next_id` for 1, `next_ids` otherwise); with `pace`, each
/// caller makes one call per `pace` (skipping none when it falls behind).
fn measure(
    generator: &dyn IdGenerator,
    threads: usize,
    batch: usize,
    pace: Option<Duration>,
    window: Duration,
) -> Tail {
    let barrier = Barrier::new(threads);
    let histograms: Vec<Histogram<u64>> = thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let barrier = &barrier;
                s.spawn(move || {
                    // 1 ns to 60 s, 3 significant digits.
                    let mut histogram =
                        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
                    barrier.wait();
                    let mut ids = vec![Snowflake::default(); batch];
                    let start = Instant::now();
                    let mut next = start;
                    while next.duration_since(start) < window {
                        if let Some(pace) = pace {
                            while Instant::now() < next {
                                spin_loop();
                            }
                            next += pace;
                        } else {
                            next = Instant::now();
                        }
                        let before = Instant::now();
                        if batch == 1 {
                            black_box(generator.next_id().unwrap());
                        } else {
                            generator.next_ids(&mut ids).unwrap();
                            black_box(&ids);
                        }
                        let took = before.elapsed().as_nanos() as u64;
                        histogram.saturating_record(took.max(1));
                    }
                    histogram
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    for h in &histograms {
        all.add(h).unwrap();
    }
    Tail {
        calls: all.len(),
        p50: all.value_at_quantile(0.50),
        p99: all.value_at_quantile(0.99),
        p999: all.value_at_quantile(0.999),
        p9999: all.value_at_quantile(0.9999),
        max: all.max(),
    }
}

/// Prints the percentiles and saves them as `target/criterion/latency.json`.
pub(crate) fn report(window: Duration) {
    let half_rate = Layout::TWITTER.ids_per_second() / 2;
    println!(
        "\nlatency: ns per call, Twitter layout, max_lead 0, {window:?} each; \
         below the cap = {half_rate} IDs/s in all, paced; steal = ms the \
         hypervisor ran other guests meanwhile"
    );
    println!(
        "  {:<30} {:>9} {:>7} {:>7} {:>7} {:>8} {:>9} {:>6}",
        "id", "calls", "p50", "p99", "p99.9", "p99.99", "max", "steal"
    );
    let mut rows = vec![];
    for strategy in Strategy::ALL {
        for threads in [1, 2] {
            for (load, batch, pace) in [
                (
                    "below_cap",
                    1,
                    Some(Duration::from_nanos(
                        1_000_000_000 * threads as u64 / half_rate,
                    )),
                ),
                ("saturated", 1, None),
                ("saturated_batch64", 64, None),
            ] {
                let generator = Builder::new().worker(1).build(strategy).unwrap();
                let steal_before = environment::steal_time();
                let tail = measure(&*generator, threads, batch, pace, window);
                let steal_ms = steal_before
                    .zip(environment::steal_time())
                    .map(|(before, after)| (after - before).as_millis() as u64);
                let id = format!("{strategy}/{load}/{threads}");
                println!(
                    "  {id:<30} {:>9} {:>7} {:>7} {:>7} {:>8} {:>9} {:>6}",
                    tail.calls,
                    tail.p50,
                    tail.p99,
                    tail.p999,
                    tail.p9999,
                    tail.max,
                    steal_ms.map_or("n/a".to_owned(), |ms| ms.to_string()),
                );
                rows.push(serde_json::json!({
                    "id": id, "calls": tail.calls, "p50_ns": tail.p50, "p99_ns": tail.p99,
                    "p99_9_ns": tail.p999, "p99_99_ns": tail.p9999, "max_ns": tail.max,
                    "steal_ms": steal_ms,
                }));
            }
        }
    }
    let path = environment::criterion_dir().join("latency.json");
    let _ = std::fs::write(path, format!("{:#}\n", serde_json::Value::Array(rows)));
}

//! flakegen's benchmarks: which strategy is fastest on this machine, and why.
//!
//! ```text
//! cargo bench                                  # full suite, about 16 minutes on 2 cores
//! FLAKEGEN_BENCH_QUICK=1 cargo bench           # smoke run, under a minute
//! cargo bench -- no_vdso                       # one group
//! ```
//!
//! Benchmark ids read `group/strategy/clock/threads`; each is the time per ID
//! (multi-threaded: wall time over all IDs taken by all threads).
//!
//! - `clock_bound`: Twitter layout, `max_lead` 0, saturated, `SystemClock`.
//!   The layout allows 4096 IDs per ms: 244 ns per ID is the floor.
//! - `no_vdso`: the same with `SyscallClock`, every clock read a system call,
//!   as under a hypervisor whose clock the vDSO cannot read.
//! - `hypervisor`: the same with a clock that costs 0.5, 1.1 or 3.2 µs per
//!   read (the article's range, spun out on any machine), on 1, 2 and 4
//!   threads: `hypervisor/<strategy>/<cost>/<threads>`; and with
//!   [`TscClock`] (`hypervisor/<strategy>/tsc/<threads>`), which reads no
//!   OS clock at all.
//! - `contended`: the same with the system clock while other threads spin on
//!   unrelated work: `contended/<strategy>/<callers>+<busy threads>`.
//! - `mechanism`: a 22-bit sequence, so the clock never limits: the cost of the
//!   synchronisation itself, beside bare baselines in the same group; the
//!   `_leased` variants hold a worker-id lease (from a registry in memory), so
//!   every call also checks the lease's fence. `peer_clock_cas` is the peers'
//!   shape (a clock read and a CAS loop), written in the bench. Each
//!   strategy on `system` and on `tsc` ([`TscClock`]).
//!   With `--features tokio`, `async/<strategy>/1` is `next_id_async` awaited
//!   on a current-thread runtime.
//! - `clocks`: one read of each clock.
//! - `text`: an ID to text and back, base32 and decimal, beside ferroid's
//!   base32: `text/<encode|decode>/<form>/1`.
//!
//! After Criterion, two side reports: IDs per second and CPU cores busy per
//! strategy in the clock-bound regime (`target/criterion/cpu_per_wall.json`),
//! and per-call latency percentiles below the cap and at saturation
//! (`target/criterion/latency.json`). The environment is printed first and
//! saved to `target/criterion/environment.json`; Criterion's HTML report is
//! `target/criterion/report/index.html`.

#![allow(missing_docs)] // criterion's macros and a binary's items

mod support;

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, BenchmarkId, Criterion, measurement::WallTime};
use crossbeam_utils::CachePadded;
use flakegen::clock::{CoarseClock, ManualClock, MonotonicClock};
use flakegen::clock::{SyscallClock, TscClock};
use flakegen::lease::{Lease, MemoryRegistry};
use flakegen::{Builder, Clock, IdGenerator, Layout, Snowflake, Strategy, SystemClock};
use flakegen_benches::verdict;
use support::costly::CostlyClock;
use support::peer::{ClockCas, PeerClock};
use support::{cpu, environment, figures, floor, latency};

const THREADS: [usize; 3] = [1, 2, 4];

/// What a clock read costs under the article's hypervisor (1.1–3.2 µs), and
/// a milder case, with the labels the benchmark ids use.
const HYPERVISOR_COSTS: [(Duration, &str); 3] = [
    (Duration::from_nanos(500), "0.5us"),
    (Duration::from_nanos(1_100), "1.1us"),
    (Duration::from_nanos(3_200), "3.2us"),
];

/// Callers and busy threads beside them, for `contended`.
const CONTENTION: [(usize, usize); 6] = [(2, 0), (4, 0), (2, 1), (2, 2), (8, 4), (1, 2)];

/// A layout whose 22-bit sequence (4.2 billion IDs/s) no strategy can use up.
/// Three worker bits: a process refuses a second generator on a layout and
/// worker id, and the floor report runs four side by side. Its 38-bit
/// timestamp, from 2026, lasts until 2034.
const WIDE: Layout = Layout::builder()
    .timestamp_bits(38)
    .worker_bits(3)
    .sequence_bits(22)
    .epoch_unix_millis(1_767_225_600_000)
    .build_const();

fn quick() -> bool {
    std::env::var_os("FLAKEGEN_BENCH_QUICK").is_some_and(|v| v != "0")
}

/// Runs `work(n)` on `threads` threads, splitting `iters` between them, and
/// returns the wall time from the first to start to the last to finish.
///
/// Each thread reads the time itself, after a barrier. The calling thread
/// does not: with as many workers as cores it may not run again until they
/// are done, and a start or an end it read would be late by that wait.
fn on_threads(threads: usize, iters: u64, work: impl Fn(u64) + Sync) -> Duration {
    let barrier = Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (work, barrier) = (&work, &barrier);
                let share = iters / threads as u64 + u64::from((t as u64) < iters % threads as u64);
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    work(share);
                    (start, Instant::now())
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let start = spans.iter().map(|&(start, _)| start).min().unwrap();
    let end = spans.iter().map(|&(_, end)| end).max().unwrap();
    end - start
}

/// `group/strategy/clock/threads` for single IDs from `generator`.
fn bench_ids<G: IdGenerator>(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, generator: &G) {
    for threads in THREADS {
        group.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, |n| {
                    for _ in 0..n {
                        black_box(generator.next_id().unwrap());
                    }
                })
            })
        });
    }
}

/// `async/<strategy>/1`: `next_id_async` awaited on a current-thread
/// runtime, to compare with `<strategy>/system/1` in the same run (feature
/// `tokio`: `cargo bench --features tokio`).
#[cfg(feature = "tokio")]
fn bench_async<G: IdGenerator>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    strategy: &str,
    generator: &G,
) {
    use flakegen::AsyncIdGenerator;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    group.bench_function(BenchmarkId::new(format!("async/{strategy}"), 1), |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(generator.next_id_async().await.unwrap());
                }
                start.elapsed()
            })
        })
    });
}

/// Per-ID time of `next_ids` in batches of `size` on one thread.
fn bench_batch<G: IdGenerator>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    generator: &G,
    size: usize,
) {
    group.bench_function(BenchmarkId::new(name, 1), |b| {
        let mut batch = vec![Snowflake::default(); size];
        b.iter_custom(|iters| {
            let batches = iters.div_ceil(size as u64);
            let start = Instant::now();
            for _ in 0..batches {
                generator.next_ids(black_box(&mut batch)).unwrap();
            }
            // Scaled to `iters` IDs, so the figure is per ID.
            start
                .elapsed()
                .mul_f64(iters as f64 / (batches * size as u64) as f64)
        })
    });
}

/// The three strategies from one builder, each under `group/<strategy>/<clock>/<threads>`.
fn strategies<C: Clock + Clone + 'static>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    clock: &str,
    builder: Builder<C>,
) {
    bench_ids(
        group,
        &format!("atomic/{clock}"),
        &builder.clone().build_atomic().unwrap(),
    );
    bench_ids(
        group,
        &format!("mutex/{clock}"),
        &builder.clone().build_mutex().unwrap(),
    );
    bench_ids(
        group,
        &format!("ticker/{clock}"),
        &builder.build_ticker().unwrap(),
    );
}

fn clock_bound(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock_bound");
    strategies(
        &mut group,
        "system",
        Builder::new().worker(1).clock(SystemClock),
    );
    group.finish();
}

fn no_vdso(c: &mut Criterion) {
    let mut group = c.benchmark_group("no_vdso");
    strategies(
        &mut group,
        "syscall",
        Builder::new().worker(1).clock(SyscallClock),
    );
    group.finish();
}

fn hypervisor(c: &mut Criterion) {
    let mut group = c.benchmark_group("hypervisor");
    // The counter clock beside the dear ones: where the vDSO cannot read
    // the clock but the guest may read an invariant TSC, it costs this.
    strategies(
        &mut group,
        "tsc",
        Builder::new().worker(1).clock(TscClock::new()),
    );
    for (cost, label) in HYPERVISOR_COSTS {
        strategies(
            &mut group,
            label,
            Builder::new().worker(1).clock(CostlyClock::new(cost)),
        );
    }
    group.finish();
}

/// `threads` threads spinning on unrelated work until dropped.
struct Hogs {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Hogs {
    fn start(threads: usize) -> Hogs {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                thread::spawn(move || {
                    let mut x = 1u64;
                    // Relaxed: a flag checked between rounds of busy work.
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..1_000 {
                            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                        }
                    }
                })
            })
            .collect();
        Hogs { stop, threads }
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Sleeps to the start of the next millisecond unit: a sample that began late
/// in a unit would get that unit's whole sequence almost for free and read
/// faster than the bound.
fn start_of_next_unit() {
    let now = SystemClock.unix_nanos();
    thread::sleep(Duration::from_nanos(1_000_000 - now % 1_000_000));
}

fn contended(c: &mut Criterion) {
    // Every sample takes at least this many IDs (about 50 ms at the bound, 12
    // ms in quick mode), so that a dozen threads starting on two cores is
    // not what gets measured; the time is scaled back to `iters` IDs.
    let at_least: u64 = if quick() { 50_000 } else { 200_000 };
    let mut group = c.benchmark_group("contended");
    for strategy in Strategy::ALL {
        let generator = Builder::new().worker(1).build(strategy).unwrap();
        for (callers, hogs) in CONTENTION {
            let id = format!("{strategy}/{callers}+{hogs}");
            group.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let ids = iters.max(at_least);
                    let _hogs = Hogs::start(hogs);
                    start_of_next_unit();
                    let elapsed = on_threads(callers, ids, |n| {
                        for _ in 0..n {
                            black_box(generator.next_id().unwrap());
                        }
                    });
                    elapsed.mul_f64(iters as f64 / ids as f64)
                })
            });
        }
    }
    group.finish();
}

/// [`bench_ids`], then gives the lease back and waits for that.
fn bench_leased<G: IdGenerator>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    generator: G,
) {
    bench_ids(group, name, &generator);
    generator.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
}

fn mechanism(c: &mut Criterion) {
    let mut group = c.benchmark_group("mechanism");
    let counter = CachePadded::new(AtomicU64::new(0));
    let mutex = CachePadded::new(parking_lot::Mutex::new(0u64));
    for threads in THREADS {
        group.bench_function(BenchmarkId::new("fetch_add/none", threads), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, |n| {
                    for _ in 0..n {
                        // Relaxed: the baseline is the bare read-modify-write.
                        black_box(counter.fetch_add(1, Ordering::Relaxed));
                    }
                })
            })
        });
        group.bench_function(BenchmarkId::new("mutex_u64/none", threads), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, |n| {
                    for _ in 0..n {
                        let mut guard = mutex.lock();
                        *guard += 1;
                        black_box(*guard);
                    }
                })
            })
        });
        group.bench_function(BenchmarkId::new("clock_fetch_add/system", threads), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, |n| {
                    for _ in 0..n {
                        black_box(SystemClock.unix_nanos());
                        black_box(counter.fetch_add(1, Ordering::Relaxed));
                    }
                })
            })
        });
        // The peers' shape (snowdon, snowflaked), with the clock read as
        // they read it and as flakegen does (see `support::peer`).
        let peer = ClockCas::default();
        for clock in PeerClock::ALL {
            let id = BenchmarkId::new(format!("peer_clock_cas/{}", clock.name()), threads);
            group.bench_function(id, |b| {
                b.iter_custom(|iters| on_threads(threads, iters, |n| clock.take(&peer, n)))
            });
        }
    }
    let builder = Builder::new().worker(1).layout(WIDE);
    strategies(&mut group, "system", builder.clone());
    strategies(&mut group, "tsc", builder.clone().clock(TscClock::new()));
    #[cfg(feature = "tokio")]
    {
        bench_async(
            &mut group,
            "atomic",
            &builder.clone().build_atomic().unwrap(),
        );
        bench_async(&mut group, "mutex", &builder.clone().build_mutex().unwrap());
        bench_async(
            &mut group,
            "ticker",
            &builder.clone().build_ticker().unwrap(),
        );
    }
    // Each leased generator gives the one id back, and waits for that,
    // before the next is built.
    let leased = Builder::new()
        .layout(WIDE)
        .lease(Lease::new(MemoryRegistry::new(), "bench"));
    let atomic = leased.clone().build_atomic().unwrap();
    bench_leased(&mut group, "atomic_leased/system", atomic);
    let mutex = leased.clone().build_mutex().unwrap();
    bench_leased(&mut group, "mutex_leased/system", mutex);
    bench_leased(
        &mut group,
        "ticker_leased/system",
        leased.build_ticker().unwrap(),
    );
    // Side by side, so each on an id of its own.
    let atomic = builder.clone().worker(1).build_atomic().unwrap();
    let mutex_gen = builder.clone().worker(2).build_mutex().unwrap();
    let ticker = builder.worker(3).build_ticker().unwrap();
    for size in [64, 1024] {
        bench_batch(
            &mut group,
            &format!("atomic_batch{size}/system"),
            &atomic,
            size,
        );
        bench_batch(
            &mut group,
            &format!("mutex_batch{size}/system"),
            &mutex_gen,
            size,
        );
        bench_batch(
            &mut group,
            &format!("ticker_batch{size}/system"),
            &ticker,
            size,
        );
    }
    group.finish();
}

fn clocks(c: &mut Criterion) {
    let mut group = c.benchmark_group("clocks");
    fn read<C: Clock>(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, clock: C) {
        group.bench_function(BenchmarkId::new(format!("read/{name}"), 1), |b| {
            b.iter(|| clock.unix_nanos())
        });
    }
    group.bench_function(BenchmarkId::new("read/std", 1), |b| {
        b.iter(support::peer::std_unix_nanos)
    });
    read(&mut group, "system", SystemClock);
    read(&mut group, "tsc", TscClock::new());
    read(&mut group, "coarse", CoarseClock);
    read(&mut group, "monotonic", MonotonicClock::new());
    read(&mut group, "syscall", SyscallClock);
    read(
        &mut group,
        "manual",
        ManualClock::from_unix_millis(1_704_067_200_000),
    );
    for (cost, label) in HYPERVISOR_COSTS {
        read(&mut group, label, CostlyClock::new(cost));
    }
    group.finish();
}

/// An ID to text and back: base32 against decimal, and against ferroid's
/// base32 (the same Crockford alphabet at the same 13 characters; its
/// `encode().as_str()` and `decode`, as its own benchmarks time them).
fn text(c: &mut Criterion) {
    use ferroid::base32::Base32SnowExt;
    use ferroid::id::SnowflakeTwitterId;
    use std::fmt::Write;

    let mut group = c.benchmark_group("text");
    let id = Snowflake::from_u64(1_050_118_621_198_921_728);
    let peer = SnowflakeTwitterId::from_raw(id.as_u64());
    assert_eq!(peer.encode().as_str(), id.to_base32().as_str());
    // Each encoding ends in a `&str`, as a caller uses it.
    group.bench_function(BenchmarkId::new("encode/base32", 1), |b| {
        b.iter(|| {
            let text = black_box(id).to_base32();
            black_box(text.as_str()).len()
        })
    });
    group.bench_function(BenchmarkId::new("encode/decimal", 1), |b| {
        // Into a String kept between calls: formatting, not allocation.
        let mut text = String::with_capacity(20);
        b.iter(|| {
            text.clear();
            write!(text, "{}", black_box(id)).unwrap();
            black_box(text.as_str()).len()
        })
    });
    group.bench_function(BenchmarkId::new("encode/ferroid_base32", 1), |b| {
        b.iter(|| {
            let text = black_box(peer).encode();
            black_box(text.as_str()).len()
        })
    });
    // Each decoding from a `&str`, as text arrives.
    let (base32, decimal) = (id.to_base32().to_string(), id.to_string());
    let peer_text = peer.encode().as_str().to_owned();
    group.bench_function(BenchmarkId::new("decode/base32", 1), |b| {
        b.iter(|| Snowflake::from_base32(black_box(base32.as_str())).unwrap())
    });
    group.bench_function(BenchmarkId::new("decode/decimal", 1), |b| {
        b.iter(|| black_box(decimal.as_str()).parse::<Snowflake>().unwrap())
    });
    group.bench_function(BenchmarkId::new("decode/ferroid_base32", 1), |b| {
        b.iter(|| SnowflakeTwitterId::decode(black_box(peer_text.as_str())).unwrap())
    });
    group.finish();
}

/// IDs per second and cores busy, per strategy, clock and thread count.
fn cpu_report(window: Duration) {
    fn row<G: IdGenerator>(
        rows: &mut Vec<serde_json::Value>,
        name: &str,
        generator: G,
        threads: usize,
        window: Duration,
    ) {
        let load = cpu::saturate(&generator, threads, window);
        let cap = Layout::TWITTER.ids_per_second() as f64;
        let cores = load.cores.map_or("n/a".to_owned(), |c| format!("{c:.2}"));
        println!(
            "  {name:<28} {:>10.0} IDs/s  {:>6.1}% of the cap  {cores:>5} cores",
            load.ids_per_second,
            100.0 * load.ids_per_second / cap
        );
        rows.push(serde_json::json!({
            "id": name, "ids_per_second": load.ids_per_second,
            "fraction_of_cap": load.ids_per_second / cap, "cores": load.cores,
        }));
    }
    fn clock<C: Clock + Clone + 'static>(
        rows: &mut Vec<serde_json::Value>,
        clock: &str,
        c: C,
        thread_counts: &[usize],
        window: Duration,
    ) {
        for &threads in thread_counts {
            let builder = Builder::new().worker(1).clock(c.clone());
            row(
                rows,
                &format!("atomic/{clock}/{threads}"),
                builder.clone().build_atomic().unwrap(),
                threads,
                window,
            );
            row(
                rows,
                &format!("mutex/{clock}/{threads}"),
                builder.clone().build_mutex().unwrap(),
                threads,
                window,
            );
            row(
                rows,
                &format!("ticker/{clock}/{threads}"),
                builder.build_ticker().unwrap(),
                threads,
                window,
            );
        }
    }
    println!("\ncpu_per_wall: Twitter layout, max_lead 0, saturated for {window:?} each");
    let mut rows = vec![];
    clock(&mut rows, "system", SystemClock, &[1, 2], window);
    clock(&mut rows, "syscall", SyscallClock, &[1, 2], window);
    let costly = CostlyClock::new(HYPERVISOR_COSTS[1].0);
    clock(&mut rows, HYPERVISOR_COSTS[1].1, costly, &[2], window);
    let path = environment::criterion_dir().join("cpu_per_wall.json");
    let _ = std::fs::write(path, format!("{:#}\n", serde_json::Value::Array(rows)));
}

/// The filter named on the command line, if any: an argument that is
/// neither an option nor the value of one of Criterion's options that take one.
fn filter() -> Option<String> {
    const TAKES_VALUE: [&str; 16] = [
        "--color",
        "--format",
        "--plotting-backend",
        "--save-baseline",
        "--baseline",
        "--baseline-lenient",
        "--load-baseline",
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--profile-time",
        "--output-format",
    ];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if TAKES_VALUE.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') {
            return Some(arg);
        }
    }
    None
}

fn main() {
    let quick = quick();
    environment::report(quick);
    let base = Criterion::default();
    let base = if quick {
        // No plots: drawing them takes longer than a quick run's measuring.
        base.sample_size(10)
            .warm_up_time(Duration::from_millis(80))
            .measurement_time(Duration::from_millis(250))
            .without_plots()
    } else {
        base.sample_size(30)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
    };
    let mut c = base.configure_from_args();
    clock_bound(&mut c);
    no_vdso(&mut c);
    hypervisor(&mut c);
    contended(&mut c);
    mechanism(&mut c);
    clocks(&mut c);
    text(&mut c);
    c.final_summary();
    // `cargo bench -- <filter>` runs the Criterion groups it names; the side
    // reports run on a whole-suite run, or alone as `-- floor`,
    // `-- cpu_per_wall` and `-- latency` (which name no Criterion benchmark).
    if cfg!(debug_assertions) {
        return;
    }
    let window = if quick {
        Duration::from_millis(100)
    } else {
        Duration::from_secs(1)
    };
    let filter = filter();
    if filter.as_deref().is_none_or(|f| f == "floor") {
        floor::report(quick, WIDE);
    }
    if filter.as_deref().is_none_or(|f| f == "cpu_per_wall") {
        cpu_report(window);
    }
    if filter.as_deref().is_none_or(|f| f == "latency") {
        latency::report(window);
    }
    // What the whole run means for the user's choice: its last lines.
    if filter.is_none() {
        say_verdict(window);
    }
}

/// Prints the verdict on this run's figures and saves it as
/// `target/criterion/verdict.json`.
fn say_verdict(window: Duration) {
    let dir = environment::criterion_dir();
    let Some(figures) = figures::gather(&dir, window) else {
        println!(
            "\nverdict: a report of this run is missing from {}",
            dir.display()
        );
        return;
    };
    match verdict::verdict(&figures) {
        Some(verdict) => {
            print!("{}", verdict.said(&figures));
            let json = format!("{:#}\n", verdict.json(&figures));
            let _ = std::fs::write(dir.join("verdict.json"), json);
        }
        None => println!("\nverdict: the floor report lacks a strategy's figure"),
    }
}

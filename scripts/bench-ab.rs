//! Revisions of flakegen in one process (`r0`, `r1`, ..., renamed
//! dependencies set up by bench-ab.sh), measured in interleaved rounds, so
//! that the machine's drift over minutes slows them all alike. Below the cap
//! (a 22-bit sequence), one call per ID, on 1, 2 and 4 threads (`THREADS`
//! to choose), each strategy without a lease and with one held; and a bare
//! clock read, the floor the clock-reading strategies stand on.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

/// IDs per contender per round.
const IDS: u64 = 400_000;

/// Wall time per ID of `work(n)` on `threads` threads, from the first to
/// start to the last to finish (each thread reads the time itself).
fn on_threads(threads: usize, work: &(dyn Fn(u64) + Sync)) -> f64 {
    let barrier = Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    work(IDS / threads as u64);
                    (start, Instant::now())
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let start = spans.iter().map(|s| s.0).min().unwrap();
    let end = spans.iter().map(|s| s.1).max().unwrap();
    (end - start).as_nanos() as f64 / IDS as f64
}

/// The value at quantile `q` of `values` (which it sorts).
fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// `clock_gettime(CLOCK_REALTIME)` through the vDSO, as `SystemClock` reads it.
fn clock_read() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One generator of each strategy from crate `$krate`, unleased and
/// leased (from a `MemoryRegistry`, its lease held), as contenders. Each is
/// called through its own type, as a program that names it does.
macro_rules! contenders {
    ($krate:ident, $label:literal, $list:ident) => {{
        use $krate::IdGenerator;
        fn contender<G: IdGenerator + 'static>(generator: G) -> Box<dyn Fn(u64) + Sync> {
            let generator: &'static G = Box::leak(Box::new(generator));
            Box::new(move |n| {
                for _ in 0..n {
                    black_box(generator.next_id().unwrap());
                }
            })
        }
        // A million IDs a millisecond: no contender meets the unit's end.
        // Two worker bits, so the three unleased generators each have an id
        // of their own (one process refuses a second generator on an id).
        let wide = $krate::Layout::builder()
            .worker_bits(2)
            .sequence_bits(20)
            .build_const();
        let builder = |worker: Option<u64>| {
            let layout = $krate::Builder::new().layout(wide);
            match worker {
                Some(worker) => layout.worker(worker),
                None => {
                    let registry = $krate::lease::MemoryRegistry::new();
                    layout.lease($krate::lease::Lease::new(registry, "bench-ab"))
                }
            }
        };
        for (kind, leased) in [("", false), ("leased ", true)] {
            let worker = |w| (!leased).then_some(w);
            $list.push((format!("{kind}atomic"), $label, contender(builder(worker(0)).build_atomic().unwrap())));
            $list.push((format!("{kind}mutex"), $label, contender(builder(worker(1)).build_mutex().unwrap())));
            $list.push((format!("{kind}ticker"), $label, contender(builder(worker(2)).build_ticker().unwrap())));
        }
    }};
}

/// A contender: what it is, which revision, and its work.
type Contender = (String, &'static str, Box<dyn Fn(u64) + Sync>);

fn main() {
    let rounds: usize = std::env::var("ROUNDS").map_or(41, |r| r.parse().unwrap());
    let threads: Vec<usize> = std::env::var("THREADS").map_or(vec![1, 2, 4], |t| {
        t.split(',').map(|n| n.parse().unwrap()).collect()
    });
    let mut list: Vec<Contender> = vec![(
        "clock read".into(),
        "--",
        Box::new(|n| {
            for _ in 0..n {
                black_box(clock_read());
            }
        }),
    )];
    // REVISIONS
    for threads in threads {
        let mut ns = vec![Vec::with_capacity(rounds); list.len()];
        for (_, _, warm_up) in &list {
            on_threads(threads, &**warm_up);
        }
        for round in 0..rounds {
            for i in 0..list.len() {
                let at = (i + round) % list.len();
                ns[at].push(on_threads(threads, &*list[at].2));
            }
        }
        println!("\n{threads} thread(s), {rounds} interleaved rounds of {IDS} IDs: ns per ID, median (p25–p75)");
        for (at, (name, revision, _)) in list.iter().enumerate() {
            let mut v = ns[at].clone();
            let (p25, p50, p75) = (quantile(&mut v, 0.25), quantile(&mut v, 0.5), quantile(&mut v, 0.75));
            println!("  {name:<15} {revision:<3} {p50:8.2} ({p25:.2}–{p75:.2})");
        }
        // Each revision's figure ÷ the first's, round by round.
        for (at, (name, revision, _)) in list.iter().enumerate() {
            let Some(first) = list.iter().position(|(n, r, _)| n == name && *r == "r0") else {
                continue;
            };
            if *revision == "r0" {
                continue;
            }
            let mut ratio: Vec<f64> = (0..rounds).map(|r| ns[at][r] / ns[first][r]).collect();
            let (p25, p50, p75) = (quantile(&mut ratio, 0.25), quantile(&mut ratio, 0.5), quantile(&mut ratio, 0.75));
            println!("  {name:<15} {revision} ÷ r0, round by round: {p50:.3} ({p25:.3}–{p75:.3})");
        }
    }
}

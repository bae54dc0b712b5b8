//! One thread below the cap: each strategy against the clock read and the
//! peers' shape, in interleaved rounds.
//!
//! Criterion measures one benchmark after another. On a shared 2-core VM
//! the machine's speed drifts between them by more than the few
//! nanoseconds this report is after (10–30 % between two runs of the same
//! benchmark minutes apart). Here every contender runs for a short stretch
//! in turn, round after round, each round starting with a different one;
//! a contender's figure is its median over the rounds, and its ratio to the
//! peers' shape is the median of the ratios *within* each round, so drift
//! that slows a whole round cancels.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use flakegen::clock::TscClock;
use flakegen::{Builder, Clock, IdGenerator, Layout, SystemClock};

use super::environment;
use super::peer::{ClockCas, PeerClock, std_unix_nanos};

/// One contender: a name and a loop that takes `n` IDs (or clock reads).
type Contender<'a> = (String, Box<dyn Fn(u64) + 'a>);

/// `<name>`: `n` IDs from `generator`, one call each.
fn strategy<'a, G: IdGenerator>(name: &str, generator: &'a G) -> Contender<'a> {
    let take = move |n| {
        for _ in 0..n {
            black_box(generator.next_id().unwrap());
        }
    };
    (name.to_owned(), Box::new(take))
}

/// The median of `values` (which it sorts).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs every contender for `n` calls per round, `rounds` rounds; returns
/// each one's ns per call, round by round.
fn rounds(contenders: &[Contender<'_>], n: u64, rounds: usize) -> Vec<Vec<f64>> {
    let time = |take: &dyn Fn(u64)| {
        let start = Instant::now();
        take(n);
        start.elapsed().as_nanos() as f64 / n as f64
    };
    // A warm-up round, not recorded.
    contenders.iter().for_each(|(_, take)| {
        time(take);
    });
    let mut ns = vec![Vec::with_capacity(rounds); contenders.len()];
    for round in 0..rounds {
        for i in 0..contenders.len() {
            let at = (i + round) % contenders.len();
            ns[at].push(time(&*contenders[at].1));
        }
    }
    ns
}

/// Prints the table and saves it as `target/criterion/floor.json`.
pub(crate) fn report(quick: bool, wide: Layout) {
    let (calls, round_count) = if quick { (50_000, 9) } else { (200_000, 41) };
    let counter = CachePadded::new(AtomicU64::new(0));
    let lock = CachePadded::new(parking_lot::Mutex::new(0u64));
    let peer = ClockCas::default();
    // Concrete types, as in the `mechanism` group: a `Box<dyn IdGenerator>`
    // adds a call that the peers' inlined loop does not pay.
    let builder = Builder::new().layout(wide);
    let atomic = builder.clone().worker(1).build_atomic().unwrap();
    let tsc = TscClock::new();
    let atomic_tsc = builder.clone().worker(5).clock(tsc).build_atomic().unwrap();
    let mutex = builder.clone().worker(2).build_mutex().unwrap();
    let ticker = builder.clone().worker(3).build_ticker().unwrap();
    // The process-wide generator behind `flakegen::next_id`: an atomic one
    // behind a `OnceLock` and a `Box<dyn IdGenerator>`.
    let global = builder.worker(4).build_atomic().unwrap();
    if flakegen::global::set_up(global).is_err() {
        // Set up by an earlier report in this process: the same generator.
    }
    let mut contenders: Vec<Contender<'_>> = vec![
        (
            "clock/std".into(),
            Box::new(|n| {
                for _ in 0..n {
                    black_box(std_unix_nanos());
                }
            }),
        ),
        (
            "clock/system".into(),
            Box::new(|n| {
                for _ in 0..n {
                    black_box(SystemClock.unix_nanos());
                }
            }),
        ),
        (
            "clock/tsc".into(),
            Box::new(|n| {
                for _ in 0..n {
                    black_box(tsc.unix_nanos());
                }
            }),
        ),
        (
            "clock_fetch_add/system".into(),
            Box::new(|n| {
                for _ in 0..n {
                    black_box(SystemClock.unix_nanos());
                    // Relaxed: the baseline is the bare read-modify-write.
                    black_box(counter.fetch_add(1, Ordering::Relaxed));
                }
            }),
        ),
        (
            "clock_fetch_add/tsc".into(),
            Box::new(|n| {
                for _ in 0..n {
                    black_box(tsc.unix_nanos());
                    black_box(counter.fetch_add(1, Ordering::Relaxed));
                }
            }),
        ),
        (
            "clock_mutex_u64/system".into(),
            Box::new(|n| {
                for _ in 0..n {
                    black_box(SystemClock.unix_nanos());
                    let mut guard = lock.lock();
                    *guard += 1;
                    black_box(*guard);
                }
            }),
        ),
    ];
    for clock in PeerClock::ALL {
        let peer = &peer;
        contenders.push((
            format!("peer_clock_cas/{}", clock.name()),
            Box::new(move |n| clock.take(peer, n)),
        ));
    }
    contenders.push(strategy("atomic/system", &atomic));
    contenders.push(strategy("atomic/tsc", &atomic_tsc));
    contenders.push(strategy("mutex/system", &mutex));
    contenders.push(strategy("ticker/system", &ticker));
    contenders.push((
        "flakegen::next_id/system".into(),
        Box::new(|n| {
            for _ in 0..n {
                black_box(flakegen::next_id().unwrap());
            }
        }),
    ));
    let ns = rounds(&contenders, calls, round_count);
    let position = |name: &str| contenders.iter().position(|c| c.0 == name).unwrap();
    let (peer_at, clock_at) = (position("peer_clock_cas/system"), position("clock/system"));
    println!("\nTscClock reads {}", tsc.source());
    println!(
        "\nfloor: one thread, 22-bit sequence (no cap in reach), {round_count} interleaved \
         rounds of {calls} calls; medians"
    );
    println!(
        "  {:<24} {:>8} {:>14} {:>14}",
        "id", "ns/call", "× peer/system", "− clock (ns)"
    );
    let mut rows = vec![];
    for (at, (name, _)) in contenders.iter().enumerate() {
        let mut ratio: Vec<f64> = (0..round_count)
            .map(|r| ns[at][r] / ns[peer_at][r])
            .collect();
        let mut over: Vec<f64> = (0..round_count)
            .map(|r| ns[at][r] - ns[clock_at][r])
            .collect();
        let (ns_median, ratio, over) = (
            median(&mut ns[at].clone()),
            median(&mut ratio),
            median(&mut over),
        );
        println!("  {name:<24} {ns_median:>8.2} {ratio:>14.3} {over:>14.2}");
        rows.push(serde_json::json!({
            "id": name, "ns_per_call": ns_median, "ratio_to_peer_system": ratio,
            "ns_over_clock_read": over,
        }));
    }
    // The atomic strategy over its floor, a clock read and one `fetch_add`
    // on the same clock: what its rules cost beyond the bare mechanism.
    println!();
    for clock in ["system", "tsc"] {
        let (atomic, floor) = (
            position(&format!("atomic/{clock}")),
            position(&format!("clock_fetch_add/{clock}")),
        );
        let mut over: Vec<f64> = (0..round_count)
            .map(|r| ns[atomic][r] - ns[floor][r])
            .collect();
        let over = median(&mut over);
        println!("  atomic/{clock} over clock_fetch_add/{clock}: {over:.2} ns");
        rows.push(serde_json::json!({
            "id": format!("atomic/{clock} - clock_fetch_add/{clock}"), "ns_per_call": over,
        }));
    }
    let path = environment::criterion_dir().join("floor.json");
    let _ = std::fs::write(path, format!("{:#}\n", serde_json::Value::Array(rows)));
}

//! How short a lease's TTL may be on this machine and registry.
//!
//! A lease's thread renews every third of the TTL, and each renewal must be
//! confirmed before the fence it extends is reached: within two thirds of
//! the TTL. What eats into that is the renewal's round trip (one
//! compare-and-set on the registry) and how late a sleeping thread wakes on
//! a busy machine. This measures both while `--busy` threads keep every core
//! busy, and prints the least TTL that covers the worst of them one and a
//! half times over.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo run -p flakegen-integration --release --example lease_floor -- "$FLAKEGEN_TEST_REDIS_URL"
//! ```

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use flakegen::lease::backend::ReadRequest;
use flakegen::lease::{
    self,
    backend::{Expect, NewRecord},
};

/// Measure renewal round trips and wake-up delays under load.
#[derive(Parser)]
struct Args {
    /// The registry: mysql://, postgres:// or redis:// URL.
    #[arg(env = "FLAKEGEN_LEASE_URL")]
    url: String,
    /// How many renewals (and sleeps) to time.
    #[arg(long, default_value_t = 2_000)]
    samples: usize,
    /// Threads that spin meanwhile (default: one per core).
    #[arg(long)]
    busy: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lease_floor: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let registry = lease::connect(&args.url)?;
    let namespace = format!("lease-floor-{}", std::process::id());
    let marker_unix_millis = match registry
        .read(&namespace, &ReadRequest::new(1))?
        .marker_unix_millis
    {
        Some(marker) => marker,
        None => registry.mark(&namespace)?,
    };
    let busy = args
        .busy
        .unwrap_or_else(|| thread::available_parallelism().map_or(2, |n| n.get()));
    let stop = AtomicBool::new(false);
    let (renewals, wakeups) = thread::scope(|scope| {
        for _ in 0..busy {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        let mut version = None;
        let mut renewals = Vec::with_capacity(args.samples);
        let mut wakeups = Vec::with_capacity(args.samples);
        for i in 0..args.samples as u64 {
            let write = NewRecord {
                holder: "lease-floor",
                version: i + 1,
                ttl_millis: 1_000,
                fence_unix_millis: 0,
            };
            let started = Instant::now();
            let expect = Expect {
                marker_unix_millis,
                version,
            };
            let written = registry.swap(&namespace, 0, expect, &write);
            renewals.push(started.elapsed());
            match written {
                Ok(Some(_)) => version = Some(i + 1),
                Ok(None) => return Err("the record changed under the measurement".into()),
                Err(e) => return Err(e.into()),
            }
            let nap = Duration::from_millis(1);
            let slept = Instant::now();
            thread::sleep(nap);
            wakeups.push(slept.elapsed().saturating_sub(nap));
        }
        stop.store(true, Ordering::Relaxed);
        Ok::<_, Box<dyn std::error::Error>>((renewals, wakeups))
    })?;
    let renewal = summary("renewal round trip", renewals);
    let wakeup = summary("wake-up delay", wakeups);
    // A renewal must land within two thirds of the TTL, with half again to spare.
    let floor = (renewal + wakeup) * 3 / 2 * 3 / 2;
    println!(
        "with {busy} busy threads: the least TTL that covers the worst renewal and wake-up \
         1.5 times over within two thirds of it: {floor:?} (flakegen's floor: {:?})",
        lease::Lease::MIN_TTL
    );
    Ok(())
}

/// Prints the median, 99th percentile and worst of `samples`; returns the worst.
fn summary(what: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    let worst = *samples.last().unwrap_or(&Duration::ZERO);
    println!(
        "{what}: median {:?}, p99 {:?}, worst {worst:?} ({} samples)",
        at(0.5),
        at(0.99),
        samples.len()
    );
    worst
}

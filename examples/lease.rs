//! Leases a worker id from a registry and issues IDs with it.
//!
//! Start two in two terminals and watch them take different ids:
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo run --release --features postgres,redis --example lease -- "$FLAKEGEN_TEST_REDIS_URL"
//! cargo run --release --features postgres,redis --example lease -- "$FLAKEGEN_TEST_POSTGRES_URL"
//! ```
//!
//! Stop one with Ctrl-C (or let `--duration-ms` run out) and it releases its
//! id; a third one started then takes it over at once.
//!
//! With `--out FILE` it issues IDs continuously instead and writes each to
//! the file, for the fault tests to merge and check (`tests/lease_faults.rs`):
//!
//! ```text
//! lease <worker>                              a lease was acquired
//! <id>                                        an ID issued under it, one per line
//! fence <unix ms>                             the confirmed fence moved
//! end <worker> <first ns> <last ns> <count> <released|lost>
//!                                             the lease ended: when its first and
//!                                             last IDs were issued (real time)
//! ```
//!
//! Any error prints one line naming what failed and exits non-zero.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use flakegen::{
    BuildError, Builder, Clock, Error, IdGenerator, IssueError, Layout, Snowflake, Strategy,
    SystemClock, lease,
};

/// Lease a worker id from a registry (postgres:// or redis:// URL) and issue IDs.
#[derive(Parser)]
struct Args {
    /// The registry: postgres://user:password@host:port/db or redis://:password@host:port/db.
    #[arg(env = "FLAKEGEN_LEASE_URL")]
    url: String,
    /// The lease namespace: generators that share a layout share one.
    #[arg(long, default_value = "flakegen-example")]
    namespace: String,
    /// Worker bits of the layout (Twitter's 41 bits of ms and 12-bit sequence otherwise).
    #[arg(long, default_value_t = 10)]
    worker_bits: u32,
    /// The strategy: atomic, mutex or ticker.
    #[arg(long, default_value = "atomic")]
    strategy: Strategy,
    /// The lease's TTL.
    #[arg(long, default_value_t = 10_000)]
    ttl_ms: u64,
    /// How often to renew the lease (default: a third of the TTL).
    #[arg(long)]
    renew_ms: Option<u64>,
    /// How far clocks may disagree with the registry's, for ids without a record.
    #[arg(long, default_value_t = 2_000)]
    skew_ms: u64,
    /// The longest to wait for a previous holder's fence.
    #[arg(long, default_value_t = 1_000)]
    max_wait_ms: u64,
    /// Run this process's clock this far ahead of the system's (negative: behind).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    clock_offset_ms: i64,
    /// Print one ID every this many ms.
    #[arg(long, default_value_t = 1_000)]
    interval_ms: u64,
    /// Stop after this long (default: run until stopped).
    #[arg(long)]
    duration_ms: Option<u64>,
    /// Issue IDs continuously and write each to this file.
    #[arg(long)]
    out: Option<String>,
    /// With --out: IDs to issue per millisecond.
    #[arg(long, default_value_t = 20)]
    rate: usize,
    /// With --out: release the lease and take a new one after holding it for
    /// a random time in MIN..MAX ms (default: hold it until lost or the end).
    #[arg(long, value_name = "MIN..MAX")]
    hold_ms: Option<String>,
}

/// The system clock, shifted: a host whose clock is wrong.
#[derive(Clone, Copy)]
struct OffsetClock(i64);

impl Clock for OffsetClock {
    fn unix_nanos(&self) -> u64 {
        let offset = self.0.saturating_mul(1_000_000);
        SystemClock.unix_nanos().saturating_add_signed(offset)
    }
}

fn real_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// A small generator of random hold times; no need for a crate.
struct XorShift(u64);

impl XorShift {
    fn new() -> Self {
        XorShift((real_nanos() as u64 ^ u64::from(std::process::id()) << 32) | 1)
    }
    fn between(&mut self, low: u64, high: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        low + self.0 % (high - low).max(1)
    }
}

fn builder(args: &Args) -> Result<Builder<OffsetClock>, Error> {
    let layout = Layout::builder().worker_bits(args.worker_bits).build()?;
    let registry = lease::connect(&args.url)?;
    let mut builder = Builder::new()
        .layout(layout)
        .clock(OffsetClock(args.clock_offset_ms))
        .max_wait(Duration::from_millis(args.max_wait_ms))
        .lease(registry, args.namespace.clone())
        .lease_ttl(Duration::from_millis(args.ttl_ms))
        .lease_skew(Duration::from_millis(args.skew_ms));
    if let Some(renew) = args.renew_ms {
        builder = builder.lease_renew_every(Duration::from_millis(renew));
    }
    Ok(builder)
}

/// Prints an ID with its worker and lease every interval.
fn show(args: &Args, deadline: Option<Instant>) -> Result<(), Error> {
    let generator = builder(args)?.build(args.strategy)?;
    let layout = *generator.layout();
    eprintln!(
        "leased worker id {} of namespace {:?}",
        generator.worker(),
        args.namespace
    );
    while deadline.is_none_or(|d| Instant::now() < d) {
        let id = generator.next_id()?;
        let fields = layout.decode(id)?;
        println!(
            "{id}  worker={}  time={}",
            fields.worker,
            humantime::format_rfc3339_millis(layout.time_of(fields.timestamp))
        );
        thread::sleep(Duration::from_millis(args.interval_ms));
    }
    Ok(())
}

/// Issues IDs continuously into `out`, taking leases again as they end.
fn record(
    args: &Args,
    out: &str,
    deadline: Option<Instant>,
) -> Result<(), Box<dyn std::error::Error>> {
    let cannot_write = |e: std::io::Error| format!("cannot write {out}: {e}");
    let mut file = BufWriter::new(File::create(out).map_err(cannot_write)?);
    let hold = match args.hold_ms.as_deref() {
        None => None,
        Some(range) => match range
            .split_once("..")
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        {
            Some((low, high)) if low <= high => Some((low, high)),
            _ => return Err("--hold-ms takes MIN..MAX in ms, such as 200..600".into()),
        },
    };
    let mut random = XorShift::new();
    let running = |at: Instant| deadline.is_none_or(|d| at < d);
    let write = |file: &mut BufWriter<File>, line: std::fmt::Arguments<'_>| {
        file.write_fmt(line)
            .and_then(|()| file.write_all(b"\n"))
            .map_err(cannot_write)
    };
    let mut batch = vec![Snowflake::default(); args.rate.max(1)];
    while running(Instant::now()) {
        let generator = match builder(args)?.build(args.strategy) {
            Ok(generator) => generator,
            // Every id held, the registry down, a fence ahead: try again soon.
            Err(BuildError::Lease(e)) => {
                eprintln!("waiting: {e}");
                thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e @ BuildError::FenceAhead { .. }) => {
                eprintln!("waiting: {e}");
                thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let worker = generator.worker();
        write(&mut file, format_args!("lease {worker}"))?;
        let until = hold
            .map(|(low, high)| Instant::now() + Duration::from_millis(random.between(low, high)));
        let (mut first, mut last, mut count) = (None, 0, 0u64);
        let mut fence = None;
        let reason = loop {
            let now = Instant::now();
            if !running(now) || until.is_some_and(|u| now >= u) {
                break "released";
            }
            match generator.next_ids(&mut batch) {
                Ok(()) => {}
                Err(IssueError::LeaseLost { .. }) => break "lost",
                Err(e) => return Err(e.into()),
            }
            let at = real_nanos();
            first.get_or_insert(at);
            last = at;
            count += batch.len() as u64;
            for id in &batch {
                write(&mut file, format_args!("{id}"))?;
            }
            let status = generator.lease().map(|s| s.fence);
            if status != fence {
                fence = status;
                if let Some(ms) = fence.and_then(|f| f.duration_since(UNIX_EPOCH).ok()) {
                    write(&mut file, format_args!("fence {}", ms.as_millis()))?;
                }
            }
            file.flush().map_err(cannot_write)?;
            thread::sleep(Duration::from_millis(1));
        };
        let first = first.unwrap_or(0);
        write(
            &mut file,
            format_args!("end {worker} {first} {last} {count} {reason}"),
        )?;
        // Flushed before the release, which the next holder may be waiting on.
        file.flush().map_err(cannot_write)?;
        drop(generator);
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let deadline = args
        .duration_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    let result = match &args.out {
        Some(out) => record(&args, out, deadline),
        None => show(&args, deadline).map_err(Into::into),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

//! Leases a worker id from a registry and issues IDs with it.
//!
//! Start two in two terminals and watch them take different ids:
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo run -p flakegen-integration --release --example lease -- "$FLAKEGEN_TEST_MYSQL_URL"
//! cargo run -p flakegen-integration --release --example lease -- "$FLAKEGEN_TEST_REDIS_URL"
//! cargo run -p flakegen-integration --release --example lease -- "$FLAKEGEN_TEST_POSTGRES_URL"
//! ```
//!
//! The lease's events go to stderr as they happen: a first build in a new
//! namespace says at once that it waits the TTL and the skew allowance, and
//! why. If the registry loses the lease (a `FLUSHALL`, a restart), the
//! generator leases again by itself: the example prints the lease's state
//! while IDs are refused, and issues again once the new lease's IDs start,
//! with no rebuild.
//!
//! Let `--duration-ms` run out (counted from the first ID) and it releases
//! its id: a third one started then takes that id over at once, above the
//! last ID its predecessor issued. (Killed with Ctrl-C, it cannot release:
//! the id is free again once its lease expires, after the TTL.)
//! `--clock-offset-ms` plays a host whose clock is wrong.
//!
//! Any other error prints one line naming what failed and exits non-zero.

use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use flakegen::lease::{self, Lease};
use flakegen::{Builder, Clock, Error, IdGenerator, IssueError, Layout, Strategy, SystemClock};

/// Lease a worker id from a registry (mysql://, postgres:// or redis:// URL) and issue IDs.
#[derive(Parser)]
struct Args {
    /// The registry: mysql://user:password@host:port/db,
    /// postgres://user:password@host:port/db or redis://:password@host:port/db.
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
    /// The lease's TTL, in ms.
    #[arg(long = "ttl-ms", default_value_t = 10_000)]
    ttl_millis: u64,
    /// How often to renew the lease (default: a third of the TTL).
    #[arg(long)]
    renew_ms: Option<u64>,
    /// How far clocks may disagree with the registry's, in ms, for ids without a record.
    #[arg(long = "skew-ms", default_value_t = 2_000)]
    skew_millis: u64,
    /// The longest to wait for a previous holder's fence.
    #[arg(long, default_value_t = 1_000)]
    max_wait_ms: u64,
    /// Run this process's clock this far ahead of the system's (negative: behind).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    clock_offset_ms: i64,
    /// Print one ID every this many ms.
    #[arg(long, default_value_t = 1_000)]
    interval_ms: u64,
    /// Stop this long after the first ID, releasing the id (default: run
    /// until stopped).
    #[arg(long)]
    duration_ms: Option<u64>,
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

fn builder(args: &Args) -> Result<Builder<OffsetClock>, Error> {
    let layout = Layout::builder().worker_bits(args.worker_bits).build()?;
    let mut lease = Lease::new(lease::connect(&args.url)?, args.namespace.clone())
        .ttl(Duration::from_millis(args.ttl_millis))
        .skew(Duration::from_millis(args.skew_millis));
    if let Some(renew) = args.renew_ms {
        lease = lease.renew_every(Duration::from_millis(renew));
    }
    Ok(Builder::new()
        .layout(layout)
        .clock(OffsetClock(args.clock_offset_ms))
        .max_wait(Duration::from_millis(args.max_wait_ms))
        .lease(lease))
}

/// Prints an ID with its worker and lease every interval; while the lease
/// refuses (lost, and leased again by the generator), what it says.
fn show(args: &Args) -> Result<(), Error> {
    let generator = builder(args)?.build(args.strategy)?;
    let layout = *generator.layout();
    eprintln!(
        "leased worker id {} of namespace {:?}",
        generator.worker(),
        args.namespace
    );
    let mut deadline = None;
    while deadline.is_none_or(|d| Instant::now() < d) {
        let id = match generator.next_id() {
            Ok(id) => id,
            // Lost: the generator leases again by itself; say where it
            // stands, and try again.
            Err(e @ IssueError::LeaseLost { .. }) => {
                let state = generator
                    .lease()
                    .map(|l| format!("{:?}: {}", l.state, l.last_error.unwrap_or_default()));
                eprintln!("refused ({e}); the lease: {}", state.unwrap_or_default());
                thread::sleep(Duration::from_millis(args.interval_ms));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        deadline = deadline.or_else(|| {
            args.duration_ms
                .map(|ms| Instant::now() + Duration::from_millis(ms))
        });
        let fields = layout.decode(id)?;
        let lease = generator
            .lease()
            .map(|l| format!("{:?}", l.state))
            .unwrap_or_default();
        println!(
            "{id}  worker={}  time={}  lease={lease}",
            fields.worker,
            humantime::format_rfc3339_millis(layout.time_of(fields.timestamp))
        );
        thread::sleep(Duration::from_millis(args.interval_ms));
    }
    eprintln!("releasing worker id {}", generator.worker());
    // A drop would release too, without waiting: the process could exit first.
    generator.shutdown().wait(Duration::from_secs(3))?;
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    // The lease's events, as a service logs them: their messages, which say
    // times as a person reads them.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .fmt_fields(tracing_subscriber::fmt::format::debug_fn(
            |writer, field, value| {
                if field.name() == "message" {
                    write!(writer, "{value:?}")
                } else {
                    Ok(())
                }
            },
        ))
        .init();
    match show(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

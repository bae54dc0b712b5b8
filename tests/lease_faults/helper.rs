//! One helper process: leases, issues and records until its time is up.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakegen::{
    BuildError, Builder, Clock, IdGenerator, IssueError, Layout, Snowflake, SystemClock,
    lease::{self, Lease},
};

use crate::common::server::Dice;
use crate::log::{Leases, Out};
use crate::random::Random;

/// The system clock, shifted: a host whose clock is wrong.
#[derive(Clone, Copy)]
struct OffsetClock(i64);

impl Clock for OffsetClock {
    fn unix_nanos(&self) -> u64 {
        SystemClock
            .unix_nanos()
            .saturating_add_signed(self.0.saturating_mul(1_000_000))
    }
}

pub(crate) fn real_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn unix_ms(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// What a helper is told, as `name=value` arguments.
pub(crate) struct Orders {
    pub url: String,
    pub namespace: String,
    pub worker_bits: u32,
    pub duration_ms: u64,
    pub out: String,
    /// Release and lease again after holding this long (ms); `None`:
    /// one generator, never rebuilt, that heals when its lease is lost.
    pub hold_ms: Option<(u64, u64)>,
    pub clock_offset_ms: i64,
    pub max_wait_ms: u64,
    pub ttl_ms: u64,
    pub skew_ms: u64,
}

impl Orders {
    pub(crate) fn to_args(&self) -> Vec<String> {
        let hold = self
            .hold_ms
            .map_or("none".to_owned(), |(a, b)| format!("{a}..{b}"));
        vec![
            "--helper".into(),
            format!("url={}", self.url),
            format!("namespace={}", self.namespace),
            format!("worker_bits={}", self.worker_bits),
            format!("duration_ms={}", self.duration_ms),
            format!("out={}", self.out),
            format!("hold_ms={hold}"),
            format!("clock_offset_ms={}", self.clock_offset_ms),
            format!("max_wait_ms={}", self.max_wait_ms),
            format!("ttl_ms={}", self.ttl_ms),
            format!("skew_ms={}", self.skew_ms),
        ]
    }

    pub(crate) fn parse(args: &[String]) -> Option<Orders> {
        let get = |name: &str| {
            args.iter()
                .find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_owned)
        };
        let hold = get("hold_ms")?;
        Some(Orders {
            url: get("url")?,
            namespace: get("namespace")?,
            worker_bits: get("worker_bits")?.parse().ok()?,
            duration_ms: get("duration_ms")?.parse().ok()?,
            out: get("out")?,
            hold_ms: match hold.split_once("..") {
                Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                None => None,
            },
            clock_offset_ms: get("clock_offset_ms")?.parse().ok()?,
            max_wait_ms: get("max_wait_ms")?.parse().ok()?,
            ttl_ms: get("ttl_ms")?.parse().ok()?,
            skew_ms: get("skew_ms")?.parse().ok()?,
        })
    }
}

pub(crate) fn run(args: &[String]) -> ExitCode {
    let Some(orders) = Orders::parse(args) else {
        eprintln!("helper: bad arguments {args:?}");
        return ExitCode::FAILURE;
    };
    match record(&orders) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("helper: {e}");
            ExitCode::FAILURE
        }
    }
}

fn record(orders: &Orders) -> Result<(), Box<dyn std::error::Error>> {
    let layout = Layout::builder().worker_bits(orders.worker_bits).build()?;
    let out: Out = Arc::new(Mutex::new(BufWriter::new(File::create(&orders.out)?)));
    let _events = tracing::subscriber::set_default(Leases(Arc::clone(&out)));
    let deadline = Instant::now() + Duration::from_millis(orders.duration_ms);
    let mut random = Random::new(real_nanos() as u64 ^ u64::from(std::process::id()) << 32);
    let mut batch = [Snowflake::default(); 20];
    while Instant::now() < deadline {
        let built = Builder::new()
            .layout(layout)
            .clock(OffsetClock(orders.clock_offset_ms))
            .max_wait(Duration::from_millis(orders.max_wait_ms))
            .lease(
                Lease::new(lease::connect(&orders.url)?, orders.namespace.clone())
                    .ttl(Duration::from_millis(orders.ttl_ms))
                    .skew(Duration::from_millis(orders.skew_ms)),
            )
            .build_atomic();
        let generator = match built {
            Ok(generator) => generator,
            // Every id held, the registry down, a fence ahead: try again soon.
            Err(e @ (BuildError::Lease(_) | BuildError::FenceAhead { .. })) => {
                eprintln!("waiting: {e}");
                thread::sleep(Duration::from_millis(random.between(5, 30)));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        // Held for a while from its first ID: a lease that starts at a
        // fence ahead waits for it first.
        let hold = orders
            .hold_ms
            .map(|(low, high)| Duration::from_millis(random.between(low, high)));
        let mut until = None;
        let mut fence = None;
        let reason = loop {
            let now = Instant::now();
            if now >= deadline || until.is_some_and(|u| now >= u) {
                break "released";
            }
            match generator.next_ids(&mut batch) {
                Ok(()) => {
                    let mut out = out.lock().unwrap();
                    writeln!(out, "at {}", real_nanos())?;
                    for id in &batch {
                        writeln!(out, "{id}")?;
                    }
                    until = until.or_else(|| hold.map(|hold| Instant::now() + hold));
                }
                // A rebuilding helper builds again; one that never
                // rebuilds waits for its generator to heal.
                Err(IssueError::LeaseLost { .. } | IssueError::ClockBehind { .. })
                    if hold.is_some() =>
                {
                    break "lost";
                }
                Err(IssueError::LeaseLost { .. } | IssueError::ClockBehind { .. }) => {
                    writeln!(out.lock().unwrap(), "refused {}", real_nanos())?;
                }
                Err(e) => return Err(e.into()),
            }
            if let Some(status) = generator.lease() {
                let now = (status.worker, unix_ms(status.starts), unix_ms(status.fence));
                if fence != Some(now) {
                    fence = Some(now);
                    writeln!(out.lock().unwrap(), "fence {} {} {}", now.0, now.1, now.2)?;
                }
            }
            out.lock().unwrap().flush()?;
            thread::sleep(Duration::from_millis(1));
        };
        {
            let mut out = out.lock().unwrap();
            writeln!(out, "end {reason}")?;
            // Written down before the release, which the next holder may be waiting on.
            out.flush()?;
        }
        // Best effort, as for any service: a release that fails leaves
        // the lease to expire, its fence where it was.
        let _ = generator.shutdown().wait(Duration::from_secs(5));
        drop(generator);
        if orders.hold_ms.is_some() {
            // Rest a moment, so that others waiting for an id can take this one.
            thread::sleep(Duration::from_millis(random.between(20, 80)));
        }
    }
    Ok(())
}

//! Generates IDs with every strategy, or decodes the IDs given, one line each.
//!
//! ```text
//! cargo run --release --example decode                       # generate with each strategy
//! cargo run --release --example decode -- --worker 7 --count 5
//! cargo run --release --example decode -- --layout sonyflake --strategy ticker
//! cargo run --release --example decode -- 1050118621198921728
//! cargo run --release --example decode -- --layout discord 175928847299117063
//! cargo run --release --example decode -- --json 1050118621198921728
//! FLAKEGEN_WORKER_ID=9 cargo run --release --example decode -- --worker-from env
//! cargo run --release --example decode -- --worker-from hostname   # StatefulSet pod ordinal
//! cargo run --release --example decode -- --worker-from ip         # private IPv4 host part
//! ```
//!
//! A bad ID or layout name prints a one-line error on stderr and makes the
//! exit status non-zero, after the good IDs are decoded.

use std::process::ExitCode;
use std::time::SystemTime;

use clap::Parser;
use flakegen::{Builder, Error, Layout, Snowflake, Strategy, worker};

/// Generate Snowflake IDs with each flakegen strategy, or decode the IDs given.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// IDs to decode; with none, generate IDs instead.
    ids: Vec<String>,
    /// Layout to generate or decode with: twitter, discord, sonyflake or
    /// instagram, or a custom layout's fields (worker_bits=8,sequence_bits=14,...).
    #[arg(long, default_value = "twitter")]
    layout: Layout,
    /// Strategy to generate with: atomic, mutex or ticker; with none, each in turn.
    #[arg(long)]
    strategy: Option<Strategy>,
    /// Worker id to generate with.
    #[arg(long, default_value_t = 1)]
    worker: u64,
    /// Take the worker id from the deployment instead: env (FLAKEGEN_WORKER_ID),
    /// hostname (a StatefulSet pod's ordinal) or ip (a private IPv4 address's host part).
    #[arg(long, value_name = "SOURCE")]
    worker_from: Option<String>,
    /// How many IDs to generate per strategy.
    #[arg(long, default_value_t = 3)]
    count: usize,
    /// Print one JSON object per line.
    #[arg(long)]
    json: bool,
}

/// One line of output.
struct Line<'a> {
    id: Snowflake,
    time: SystemTime,
    unix_ms: u64,
    worker: u64,
    sequence: u64,
    /// Discord splits its worker field; others print it whole.
    discord: bool,
    /// The strategy that made the ID, or the layout it was decoded with.
    source: (&'a str, &'a str),
}

impl Line<'_> {
    fn print(&self, json: bool) {
        let time = humantime::format_rfc3339_millis(self.time).to_string();
        let (source_key, source) = self.source;
        if json {
            let mut object = serde_json::json!({
                // A string: JavaScript numbers lose precision above 2^53.
                "id": self.id.to_string(),
                "time": time,
                "unix_ms": self.unix_ms,
                "sequence": self.sequence,
                source_key: source,
            });
            if self.discord {
                object["worker"] = (self.worker >> 5).into();
                object["process"] = (self.worker & 31).into();
            } else {
                object["worker"] = self.worker.into();
            }
            println!("{object}");
        } else {
            let worker = if self.discord {
                format!("worker={} process={}", self.worker >> 5, self.worker & 31)
            } else {
                format!("worker={}", self.worker)
            };
            println!(
                "{:<20} {time}  {worker:<10} sequence={:<5} {source_key}={source}",
                self.id, self.sequence
            );
        }
    }
}

fn line<'a>(layout: &Layout, id: Snowflake, source: (&'a str, &'a str)) -> Result<Line<'a>, Error> {
    let fields = layout.decode(id)?;
    Ok(Line {
        id,
        time: layout.time_of(fields.timestamp),
        unix_ms: layout.unix_millis_of(fields.timestamp),
        worker: fields.worker,
        sequence: fields.sequence,
        discord: *layout == Layout::DISCORD,
        source,
    })
}

/// The worker id to generate with, and where it came from.
fn worker_id(args: &Args, layout: &Layout) -> Result<(u64, &'static str), String> {
    let from = match args.worker_from.as_deref() {
        None => return Ok((args.worker, "--worker")),
        Some("env") => (worker::from_env(layout), "env"),
        Some("hostname") => (worker::from_hostname(layout), "hostname"),
        Some("ip") => (worker::from_private_ipv4(layout), "ip"),
        Some(other) => {
            return Err(format!(
                "unknown worker source {other:?}: use env, hostname or ip"
            ));
        }
    };
    match from {
        (Ok(id), source) => Ok((id, source)),
        (Err(e), _) => Err(e.to_string()),
    }
}

fn generate(args: &Args, layout: Layout, worker: u64) -> Result<(), Error> {
    let builder = Builder::new().layout(layout).worker(worker);
    let strategies = match args.strategy {
        Some(strategy) => vec![strategy],
        None => Strategy::ALL.to_vec(),
    };
    // The strategies share one worker id, so each resumes after the last ID of
    // the one before: the way a restarted process avoids re-issuing IDs.
    let mut last: Option<Snowflake> = None;
    for strategy in strategies {
        let builder = match last {
            Some(id) => builder.clone().resume_after(id),
            None => builder.clone(),
        };
        let generator = builder.build(strategy)?;
        for _ in 0..args.count {
            let id = generator.next_id()?;
            line(&layout, id, ("strategy", strategy.name()))?.print(args.json);
            last = Some(id);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let layout = args.layout;
    if args.ids.is_empty() {
        let worker = match worker_id(&args, &layout) {
            Ok((worker, source)) => {
                eprintln!("worker id {worker} (from {source})");
                worker
            }
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::FAILURE;
            }
        };
        return match generate(&args, layout, worker) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let name = layout.to_string();
    let mut status = ExitCode::SUCCESS;
    for text in &args.ids {
        match text
            .parse::<Snowflake>()
            .map_err(Error::from)
            .and_then(|id| line(&layout, id, ("layout", &name)))
        {
            Ok(line) => line.print(args.json),
            Err(e) => {
                eprintln!("error: {e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}

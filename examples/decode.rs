//! Issues IDs with every strategy, or decodes the IDs given, one line each.
//!
//! ```text
//! cargo run --release --example decode                      # issue with each strategy
//! cargo run --release --example decode -- --layout sonyflake --worker 7
//! cargo run --release --example decode -- 1050118621198921728
//! cargo run --release --example decode -- --layout discord 175928847299117063
//! ```
//!
//! The `flakegen` command (`cargo run -p flakegen-cli -- --help`) does this
//! and more: JSON, worker ids from the deployment, layouts' capacity, and
//! the leases a registry holds.
//!
//! A bad ID or layout prints a one-line error on stderr and makes the exit
//! status non-zero, after the good IDs are decoded.

use std::process::ExitCode;

use clap::Parser;
use flakegen::{Builder, Error, Layout, Snowflake, Strategy};

/// Issue Snowflake IDs with each flakegen strategy, or decode the IDs given.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// IDs to decode; with none, issue IDs instead.
    ids: Vec<String>,
    /// Layout: twitter, discord, sonyflake or instagram, or a custom
    /// layout's fields (worker_bits=8,sequence_bits=14,...).
    #[arg(long, default_value = "twitter")]
    layout: Layout,
    /// Worker id to issue with.
    #[arg(long, default_value_t = 1)]
    worker: u64,
    /// How many IDs per strategy.
    #[arg(long, default_value_t = 3)]
    count: usize,
}

/// One line: the ID, its time, worker and sequence, and where it came from.
fn print(layout: &Layout, id: Snowflake, source: &str) -> Result<(), Error> {
    let fields = layout.decode(id)?;
    let time = humantime::format_rfc3339_millis(layout.time_of(fields.timestamp));
    println!(
        "{id:<20} {time}  worker={:<4} sequence={:<5} {source}",
        fields.worker, fields.sequence
    );
    Ok(())
}

fn issue(args: &Args) -> Result<(), Error> {
    let builder = Builder::new().layout(args.layout).worker(args.worker);
    // The strategies share one worker id, so each resumes after the last ID
    // of the one before: the way a restarted process avoids issuing twice.
    let mut last: Option<Snowflake> = None;
    for strategy in Strategy::ALL {
        let builder = match last {
            Some(id) => builder.clone().resume_after(id),
            None => builder.clone(),
        };
        let generator = builder.build(strategy)?;
        for _ in 0..args.count {
            let id = generator.next_id()?;
            print(&args.layout, id, &format!("strategy={}", strategy.name()))?;
            last = Some(id);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.ids.is_empty() {
        return match issue(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let source = format!("layout={}", args.layout);
    let mut status = ExitCode::SUCCESS;
    for text in &args.ids {
        let decoded = text
            .parse::<Snowflake>()
            .map_err(Error::from)
            .and_then(|id| print(&args.layout, id, &source));
        if let Err(e) = decoded {
            eprintln!("error: {text}: {e}");
            status = ExitCode::FAILURE;
        }
    }
    status
}

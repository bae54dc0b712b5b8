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
//! and more: JSON, base32, worker ids from the deployment, layouts'
//! capacity, and the leases a registry holds. This example needs nothing
//! beside flakegen, so that it builds in seconds.
//!
//! A bad ID or layout prints a one-line error on stderr and makes the exit
//! status non-zero, after the good IDs are decoded.

use std::process::ExitCode;

use flakegen::{Builder, Error, Layout, Snowflake, Strategy};

const USAGE: &str = "usage: decode [--layout LAYOUT] [--worker ID] [--count N] [ID...]
  with IDs (decimal, or 13 characters of base32): decode them;
  without: issue --count IDs (3) with each strategy, as worker --worker (1).
  LAYOUT: twitter (the default), discord, sonyflake, instagram, or fields
  such as worker_bits=8,sequence_bits=14";

/// What the command line asked for.
struct Args {
    ids: Vec<String>,
    layout: Layout,
    worker: u64,
    count: usize,
}

impl Args {
    fn parse() -> Result<Args, String> {
        let mut args = Args {
            ids: Vec::new(),
            layout: Layout::TWITTER,
            worker: 1,
            count: 3,
        };
        let mut words = std::env::args().skip(1);
        while let Some(word) = words.next() {
            let mut value = |name: &str| {
                words
                    .next()
                    .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
            };
            match word.as_str() {
                "--layout" => {
                    args.layout = value("--layout")?.parse().map_err(|e| format!("{e}"))?;
                }
                "--worker" => {
                    args.worker = value("--worker")?
                        .parse()
                        .map_err(|e| format!("--worker: {e}"))?;
                }
                "--count" => {
                    args.count = value("--count")?
                        .parse()
                        .map_err(|e| format!("--count: {e}"))?;
                }
                "-h" | "--help" => return Err(USAGE.to_owned()),
                flag if flag.starts_with("--") => {
                    return Err(format!("unknown option {flag}\n{USAGE}"));
                }
                _ => args.ids.push(word),
            }
        }
        Ok(args)
    }
}

/// One line: the ID, its time, worker and sequence, and where it came from.
fn print(layout: &Layout, id: Snowflake, source: &str) -> Result<(), Error> {
    let fields = layout.decode(id)?;
    println!(
        "{id:<20} {}  worker={:<4} sequence={:<5} {source}",
        layout.rfc3339_of(fields.timestamp),
        fields.worker,
        fields.sequence
    );
    Ok(())
}

fn issue(args: &Args) -> Result<(), Error> {
    let builder = Builder::new().layout(args.layout).worker(args.worker);
    // One generator at a time on one worker id: each starts after the last
    // ID of the one before, as flakegen keeps a process's generators apart.
    for strategy in Strategy::ALL {
        let generator = builder.clone().build(strategy)?;
        for _ in 0..args.count {
            let id = generator.next_id()?;
            print(&args.layout, id, &format!("strategy={}", strategy.name()))?;
        }
    }
    Ok(())
}

/// An ID in decimal, or 13 characters of base32.
fn parse(text: &str) -> Result<Snowflake, Error> {
    if text.len() == 13 && !text.bytes().all(|b| b.is_ascii_digit()) {
        Ok(Snowflake::from_base32(text)?)
    } else {
        Ok(text.parse()?)
    }
}

fn main() -> ExitCode {
    let args = match Args::parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
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
        if let Err(e) = parse(text).and_then(|id| print(&args.layout, id, &source)) {
            eprintln!("error: {text}: {e}");
            status = ExitCode::FAILURE;
        }
    }
    status
}

//! `flakegen`: make and decode Snowflake IDs, size a layout, and look at the
//! worker-id leases a registry holds.
//!
//! ```text
//! flakegen new --layout sonyflake --count 5
//! flakegen decode 1050118621198921728 --json
//! flakegen layout worker_bits=8,sequence_bits=14
//! flakegen leases "$URL" --namespace orders --layout twitter
//! flakegen leases check "$URL"
//! FLAKEGEN_LEASE_URL=… flakegen leases init --namespace payments
//! ```
//!
//! Exit status: 0 when all went well, 1 when something failed (an ID that
//! does not decode, a registry that cannot be read, a check that found a
//! problem), 2 for a command line clap refuses. Errors go to stderr, each a
//! line that says what to do.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Prints a line on stdout, as `println!` does; a reader that went away
/// (`flakegen new | head -1`) ends the command quietly, as it ends Unix
/// tools.
macro_rules! say {
    () => {
        $crate::say_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::say_line(format_args!($($arg)*))
    };
}

mod check;
mod ids;
mod layout;
mod leases;
mod show;

/// Make and decode Snowflake IDs, size layouts, and look at worker-id leases.
#[derive(Parser)]
#[command(name = "flakegen", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Issue IDs with each strategy (or one), one line each.
    New(ids::New),
    /// Decode IDs into their time, worker and sequence.
    Decode(ids::Decode),
    /// A layout's fields, capacity and end date.
    Layout(layout::Args),
    /// The leases of a namespace in a registry; `leases check` checks the
    /// registry itself; `leases init` declares a new namespace.
    Leases(leases::Args),
}

/// A command that did not go well: what to print on stderr, if anything
/// is left to say, and exit with status 1.
struct Failed(Option<String>);

impl<E: std::fmt::Display> From<E> for Failed {
    fn from(e: E) -> Self {
        Failed(Some(e.to_string()))
    }
}

fn say_line(line: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let done = match cli.command {
        Command::New(args) => ids::new(&args),
        Command::Decode(args) => ids::decode(&args),
        Command::Layout(args) => layout::run(&args),
        Command::Leases(args) => leases::run(args),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failed(message)) => {
            if let Some(message) = message {
                eprintln!("error: {message}");
            }
            ExitCode::FAILURE
        }
    }
}

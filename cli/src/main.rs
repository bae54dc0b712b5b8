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
//! Exit status: one table for every command ([`EXIT_STATUS`]), in
//! `--help`. Errors go to stderr, each a line that says what to do.

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Subcommand};

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
mod events;
mod ids;
mod layout;
mod leases;
mod show;
mod sql;

/// What the exit status says, alike for every command.
const EXIT_STATUS: &str = "Exit status:
  0  done
  1  the work failed or found a problem: a registry that cannot be reached
     or read, a check that failed, a layout that has run out
  2  the input is wrong: the command line, an ID or line that does not read
     (the rest are still done), a layout or URL that does not parse, a
     worker id the layout cannot hold";

/// Make and decode Snowflake IDs, size layouts, and look at worker-id leases.
#[derive(clap::Parser)]
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
    /// SQL functions that decode a layout's IDs and bound them by time.
    Sql(sql::Args),
    /// The leases of a namespace in a registry; `leases check` checks the
    /// registry itself; `leases init` makes a namespace ready for builds
    /// that start at once.
    Leases(leases::Args),
}

/// A command that did not go well: what to print on stderr, if anything
/// is left to say, and the exit status ([`EXIT_STATUS`]).
struct Failed {
    message: Option<String>,
    status: u8,
}

impl Failed {
    /// The work failed or found a problem: status 1.
    fn work(message: Option<String>) -> Self {
        Failed { message, status: 1 }
    }

    /// The input is wrong: status 2.
    fn input(message: impl Into<Option<String>>) -> Self {
        Failed {
            message: message.into(),
            status: 2,
        }
    }

    /// A registry's error: a URL that does not parse is the input's.
    fn lease(e: flakegen::lease::LeaseError) -> Self {
        use flakegen::lease::LeaseError;
        match e {
            LeaseError::InvalidUrl { .. } | LeaseError::UnsupportedUrl { .. } => {
                Failed::input(e.to_string())
            }
            e => Failed::work(Some(e.to_string())),
        }
    }
}

impl<E: std::fmt::Display> From<E> for Failed {
    fn from(e: E) -> Self {
        Failed::work(Some(e.to_string()))
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
    let command = Cli::command()
        .after_help(EXIT_STATUS)
        .mut_subcommands(|sub| {
            sub.after_help(EXIT_STATUS)
                .mut_subcommands(|sub| sub.after_help(EXIT_STATUS))
        });
    let cli = Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    let done = match cli.command {
        Command::New(args) => ids::new(&args),
        Command::Decode(args) => ids::decode(&args),
        Command::Layout(args) => layout::run(&args),
        Command::Sql(args) => sql::run(&args),
        Command::Leases(args) => leases::run(args),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failed { message, status }) => {
            if let Some(message) = message {
                eprintln!("error: {message}");
            }
            ExitCode::from(status)
        }
    }
}

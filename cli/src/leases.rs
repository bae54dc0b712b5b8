//! `flakegen leases`: every record of a namespace, as a table or JSON.

use std::sync::Arc;
use std::time::SystemTime;

use clap::Subcommand;
use flakegen::Layout;
use flakegen::lease::backend::{Listing, Record, Registry};

use crate::Failed;
use crate::check;
use crate::show;

/// The leases of a namespace in a registry: each id's holder, fence and
/// expiry, and the marker. `leases check <URL>` checks the registry itself.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The registry: a mysql://, postgres:// or redis:// URL, as the
    /// generators are given it.
    #[arg(required = true)]
    url: Option<String>,
    /// The namespace, as in `Lease::new(registry, namespace)`.
    #[arg(long, required = true)]
    namespace: Option<String>,
    /// The layout its generators use: adds how many of its ids have no
    /// record (free, and never held since the marker).
    #[arg(long)]
    layout: Option<Layout>,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Check a registry before generators rely on it: reachable, TLS,
    /// credentials and permissions, the clock against the skew allowance,
    /// the marker, and the server's own settings.
    Check(check::Args),
}

pub(crate) fn run(args: Args) -> Result<(), Failed> {
    if let Some(Command::Check(check)) = args.command {
        return check::run(&check);
    }
    let (Some(url), Some(namespace)) = (args.url, args.namespace) else {
        unreachable!("clap requires both without a subcommand");
    };
    let registry: Arc<dyn Registry> = flakegen::lease::connect(&url)?;
    let before = show::unix_millis(SystemTime::now());
    let listing = registry.list(&namespace)?;
    let after = show::unix_millis(SystemTime::now());
    let here = before / 2 + after / 2;
    if args.json {
        print_json(&url, &namespace, &listing, here, args.layout.as_ref());
    } else {
        print_table(&url, &namespace, &listing, here, args.layout.as_ref());
    }
    Ok(())
}

/// What a record says now.
fn state(record: &Record, listing: &Listing) -> &'static str {
    if Some(record.marker_unix_millis) != listing.marker_unix_millis {
        "void"
    } else if record.holder.is_empty() {
        "free"
    } else if record.expires_unix_millis <= listing.server_unix_millis {
        "expired"
    } else {
        "held"
    }
}

fn print_table(url: &str, namespace: &str, listing: &Listing, here: u64, layout: Option<&Layout>) {
    let now = listing.server_unix_millis;
    let count = |wanted: &str| {
        listing
            .records
            .iter()
            .filter(|r| state(r, listing) == wanted)
            .count()
    };
    println!("registry   {}", show::redacted(url));
    println!(
        "namespace  {namespace}: {} records ({} held, {} expired, {} free, {} void)",
        listing.records.len(),
        count("held"),
        count("expired"),
        count("free"),
        count("void"),
    );
    println!(
        "clock      {} by the server (this host reads {})",
        show::time(now),
        show::lead(now, here)
    );
    match listing.marker_unix_millis {
        Some(marker) => println!(
            "marker     {}: the registry's data began then; records under an older marker are void",
            show::time(marker)
        ),
        None => println!(
            "marker     none: the registry was never used, or lost its data (a TRUNCATE, a \
             restart, a restore); the next acquisition writes one, and waits the TTL and the \
             skew after it"
        ),
    }
    if let Some(layout) = layout {
        let workers = layout.max_worker() + 1;
        let recorded = listing
            .records
            .iter()
            .filter(|r| r.worker < workers && state(r, listing) != "void")
            .count();
        println!(
            "ids        {workers} in layout {layout}: {} with no record since the marker",
            workers - recorded as u64
        );
    }
    if listing.records.is_empty() {
        return;
    }
    println!();
    println!(
        "{:<8} {:<8} {:<26} {:<10} {:<10} holder",
        "worker", "state", "fence", "ahead", "expires"
    );
    for record in &listing.records {
        let state = state(record, listing);
        let expires = match state {
            "held" | "expired" => show::lead(now, record.expires_unix_millis),
            _ => "-".to_owned(),
        };
        let fence = if state == "void" {
            // The loss rule fences it past the marker, whatever it says.
            format!("{} (void)", show::time(record.fence_unix_millis))
        } else {
            show::time(record.fence_unix_millis)
        };
        println!(
            "{:<8} {:<8} {:<26} {:<10} {:<10} {}",
            record.worker,
            state,
            fence,
            show::lead(now, record.fence_unix_millis),
            expires,
            if record.holder.is_empty() {
                "-"
            } else {
                &record.holder
            }
        );
    }
}

fn print_json(url: &str, namespace: &str, listing: &Listing, here: u64, layout: Option<&Layout>) {
    let now = listing.server_unix_millis;
    let records: Vec<_> = listing
        .records
        .iter()
        .map(|r| {
            serde_json::json!({
                "worker": r.worker,
                "state": state(r, listing),
                "holder": r.holder,
                "fence": show::time(r.fence_unix_millis),
                "fence_unix_ms": r.fence_unix_millis,
                "fence_ahead_ms": show::lead_millis(now, r.fence_unix_millis),
                "expires_unix_ms": r.expires_unix_millis,
                "marker_unix_ms": r.marker_unix_millis,
                "version": r.version.to_string(),
            })
        })
        .collect();
    let object = serde_json::json!({
        "registry": show::redacted(url),
        "namespace": namespace,
        "layout": layout.map(ToString::to_string),
        "server_unix_ms": now,
        "host_ahead_ms": show::lead_millis(now, here),
        "marker_unix_ms": listing.marker_unix_millis,
        "records": records,
    });
    println!("{object}");
}

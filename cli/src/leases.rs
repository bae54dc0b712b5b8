//! `flakegen leases`: every record of a namespace, as a table or JSON, and
//! what the registry vouches for in it; or the namespaces a registry holds.
//! It writes nothing. `leases check` checks the registry; `leases init`
//! makes a namespace ready for builds that start at once.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use clap::Subcommand;
use flakegen::Layout;
use flakegen::lease::backend::{RecordState, Registry};
use flakegen::lease::inspect::{Condition, Listing};
use flakegen::lease::{Lease, LeaseError};

use crate::Failed;
use crate::check;
use crate::show;

/// The leases of a namespace in a registry: each id's holder, fence and
/// expiry, and what the registry vouches for; or, with `--namespaces`, the
/// namespaces there. It writes nothing. `leases check <URL>` checks the
/// registry itself; `leases init <URL> --namespace N` makes a namespace
/// ready for builds that start at once.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    #[arg(required = true, env = "FLAKEGEN_LEASE_URL", help = crate::show::url_help())]
    url: Option<String>,
    /// The namespace, as in `Lease::new(registry, namespace)`.
    #[arg(long, required_unless_present = "namespaces")]
    namespace: Option<String>,
    /// List the namespaces that have records, one per line.
    #[arg(long, conflicts_with = "namespace")]
    namespaces: bool,
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
    /// Check a registry before generators rely on it: reachable, TLS as
    /// negotiated, credentials and permissions (one write, in a namespace
    /// of the check's own), the clock against the skew allowance, what the
    /// registry vouches for in each namespace, durability, and the
    /// replication around the server.
    Check(check::Args),
    /// Make a namespace ready, before its services start, so that their
    /// builds start at once: it marks the namespace, as a first build would,
    /// and waits the TTL and the skew allowance (12 s at the defaults) so
    /// that the services need not. Safe whatever the registry's past: it
    /// takes nobody's word that the namespace is new, so generators left
    /// running from before a wipe have stopped issuing by the time it says
    /// "ready". On a namespace in use, or one marked long enough ago, it
    /// has nothing to do and says so.
    Init(Init),
}

#[derive(clap::Args)]
pub(crate) struct Init {
    #[arg(env = "FLAKEGEN_LEASE_URL", help = crate::show::url_help())]
    url: String,
    /// The namespace, as in `Lease::new(registry, namespace)`.
    #[arg(long)]
    namespace: String,
    /// The generators' TTL (`Lease::ttl`), in ms: how long the wait is.
    #[arg(long, default_value_t = Lease::DEFAULT_TTL.as_millis() as u64)]
    ttl_ms: u64,
    /// The generators' skew allowance (`Lease::skew`), in ms.
    #[arg(long, default_value_t = Lease::DEFAULT_SKEW.as_millis() as u64)]
    skew_ms: u64,
}

/// The library's `Lease::prepare`, called until it says builds start at
/// once, with a line that says what it waits for and one a second that
/// counts down.
fn init(args: &Init) -> Result<(), Failed> {
    let registry = flakegen::lease::connect(&args.url).map_err(Failed::lease)?;
    let (ttl, skew) = (args.ttl_ms, args.skew_ms);
    let lease = Lease::new(Arc::clone(&registry), args.namespace.clone())
        .ttl(Duration::from_millis(ttl))
        .skew(Duration::from_millis(skew));
    if let Err(e) = lease.validate(&Layout::TWITTER) {
        return Err(Failed::input(format!("--ttl-ms and --skew-ms: {e}")));
    }
    let ns = &args.namespace;
    say!("registry   {}", show::redacted(&args.url));
    let started = Instant::now();
    let mut first = true;
    loop {
        let readiness = lease.prepare().map_err(Failed::lease)?;
        let wait = readiness.wait();
        let marker = if readiness.marked {
            show::time(readiness.marker_unix_millis)
        } else {
            show::moment(readiness.marker_unix_millis, readiness.server_unix_millis)
        };
        if wait.is_zero() {
            if first {
                let in_use = held(&*registry, ns);
                say!(
                    "namespace {ns:?}: nothing to do: builds start at once ({in_use}its \
                     marker, {marker}, is older than the TTL and the skew allowance)"
                );
            } else {
                say!(
                    "namespace {ns:?} is ready: builds start at once (waited {:.1} s; its \
                     marker, {marker}, is now older than the TTL, {} ms, and the skew \
                     allowance, {} ms)",
                    started.elapsed().as_secs_f64(),
                    ttl,
                    skew
                );
            }
            return Ok(());
        }
        if first {
            let why = if readiness.marked {
                "had no marker (it is new, or was emptied, and nothing tells which): marked it now"
            } else {
                "was marked a moment ago"
            };
            say!(
                "namespace {ns:?} {why}, {marker}. A build starts the TTL ({ttl} ms) and the \
                 skew allowance ({skew} ms) past its marker, so that generators from before a \
                 loss have stopped: waiting {:.1} s for that, here, instead of in the services",
                wait.as_secs_f64()
            );
            first = false;
        } else {
            say!("  {:.0} s left", wait.as_secs_f64().ceil());
        }
        std::thread::sleep(wait.min(Duration::from_secs(1)));
    }
}

/// `3 leases held: it is in use; ` where generators hold leases in `ns`, as
/// far as the registry can show it.
fn held(registry: &dyn Registry, ns: &str) -> String {
    let Some(listing) = registry.inspect().and_then(|i| i.list(ns).ok()) else {
        return String::new();
    };
    let held = listing
        .records
        .iter()
        .filter(|r| state(r, &listing) == RecordState::Held)
        .count();
    if held == 0 {
        String::new()
    } else {
        format!("{held} leases held: it is in use; ")
    }
}

pub(crate) fn run(args: Args) -> Result<(), Failed> {
    match args.command {
        Some(Command::Check(check)) => return check::run(&check),
        Some(Command::Init(init_args)) => return init(&init_args),
        None => {}
    }
    let Some(url) = args.url else {
        unreachable!("clap requires the URL without a subcommand");
    };
    let registry: Arc<dyn Registry> = flakegen::lease::connect(&url).map_err(Failed::lease)?;
    let Some(inspect) = registry.inspect() else {
        return Err(Failed::work(Some(
            "this registry shows nothing to a tool (it does not implement Inspect)".to_owned(),
        )));
    };
    let namespaces = match inspect.namespaces() {
        // The check's own is no generator's.
        Ok(mut namespaces) => {
            namespaces.retain(|ns| ns != check::CHECK_NAMESPACE);
            namespaces
        }
        Err(LeaseError::NoLeases { .. }) => {
            say!(
                "registry   {}\nno lease table here: no generator has leased from this registry \
                 yet (the first one creates it)",
                show::redacted(&url)
            );
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    if args.namespaces {
        if args.json {
            say!("{}", serde_json::json!({ "namespaces": namespaces }));
        } else {
            namespaces.iter().for_each(|ns| say!("{ns}"));
        }
        return Ok(());
    }
    let Some(namespace) = args.namespace else {
        unreachable!("clap requires a namespace without --namespaces");
    };
    let namespace = namespace.as_str();
    let before = show::unix_millis(SystemTime::now());
    let listing = inspect.list(namespace)?;
    if listing.condition() == Condition::NoTrace {
        let known = if namespaces.is_empty() {
            "no namespace here has one".to_owned()
        } else {
            let quoted: Vec<String> = namespaces.iter().map(|ns| format!("{ns:?}")).collect();
            format!("those here that have one: {}", quoted.join(", "))
        };
        return Err(Failed::work(Some(format!(
            "namespace {namespace:?}: {}. Check its spelling against the generators' \
             Lease::new ({known})",
            listing.condition()
        ))));
    }
    let after = show::unix_millis(SystemTime::now());
    let here = before / 2 + after / 2;
    if args.json {
        print_json(&url, namespace, &listing, here, args.layout.as_ref());
    } else {
        print_table(&url, namespace, &listing, here, args.layout.as_ref());
    }
    Ok(())
}

/// What a record says now: the library's verdict.
fn state(record: &flakegen::lease::backend::Record, listing: &Listing) -> RecordState {
    record.state(listing.marker_unix_millis, listing.server_unix_millis)
}

fn print_table(url: &str, namespace: &str, listing: &Listing, here: u64, layout: Option<&Layout>) {
    let now = listing.server_unix_millis;
    let count = |wanted: RecordState| {
        listing
            .records
            .iter()
            .filter(|r| state(r, listing) == wanted)
            .count()
    };
    say!("registry   {}", show::redacted(url));
    say!(
        "namespace  {namespace}: {} records ({} held, {} expired, {} free, {} void)",
        listing.records.len(),
        count(RecordState::Held),
        count(RecordState::Expired),
        count(RecordState::Free),
        count(RecordState::Void),
    );
    say!(
        "clock      {} by the server (this host reads {})",
        show::time(now),
        show::lead(now, here)
    );
    say!("vouched    {}", listing.condition());
    if let Some(layout) = layout {
        let workers = layout.max_worker() + 1;
        let recorded = listing
            .records
            .iter()
            .filter(|r| r.worker < workers && state(r, listing) != RecordState::Void)
            .count();
        say!(
            "ids        {workers} in layout {layout}: {} with no record since the marker",
            workers - recorded as u64
        );
    }
    if listing.records.is_empty() {
        return;
    }
    say!();
    say!(
        "{:<8} {:<8} {:<26} {:<10} {:<10} holder",
        "worker",
        "state",
        "fence",
        "ahead",
        "expires"
    );
    for record in &listing.records {
        let state = state(record, listing);
        let expires = match state {
            RecordState::Held | RecordState::Expired => show::lead(now, record.expires_unix_millis),
            _ => "-".to_owned(),
        };
        let fence = match state {
            // The loss rule fences it past the marker, whatever it says.
            RecordState::Void => format!("{} (void)", show::fence(record.fence_unix_millis)),
            _ => show::fence(record.fence_unix_millis),
        };
        let ahead = if record.fence_unix_millis == 0 {
            "-".to_owned()
        } else {
            show::lead(now, record.fence_unix_millis)
        };
        say!(
            "{:<8} {:<8} {:<26} {:<10} {:<10} {}",
            record.worker,
            state.name(),
            fence,
            ahead,
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
                "state": state(r, listing).name(),
                "holder": r.holder,
                "fence": (r.fence_unix_millis != 0).then(|| show::time(r.fence_unix_millis)),
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
        "high_water": listing.high_water,
        "condition": listing.condition().to_string(),
        "records": records,
    });
    say!("{object}");
}

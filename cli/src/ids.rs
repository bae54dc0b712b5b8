//! `flakegen new` and `flakegen decode`: IDs, one line each.

use flakegen::lease::{self, Lease};
use flakegen::{Builder, Error, Layout, Snowflake, Strategy, worker};

use crate::Failed;
use crate::show;

/// Issue IDs with each strategy (or one), one line each.
///
/// It needs to know which worker it is, as every generator does: two runs
/// with one worker id, at the same time, make the same IDs. Give one that
/// no other process making IDs with this layout uses now (--worker), read
/// it from the deployment (--worker-from), or lease one from a registry
/// (--lease and --namespace), which keeps runs apart by itself and gets
/// the id back when the run ends.
#[derive(clap::Args)]
#[command(group(
    clap::ArgGroup::new("worker_source")
        .required(true)
        .args(["worker", "worker_from", "lease"]),
))]
pub(crate) struct New {
    /// Layout: twitter, discord, sonyflake or instagram, or a custom
    /// layout's fields (worker_bits=8,sequence_bits=14,...).
    #[arg(long, default_value = "twitter")]
    layout: Layout,
    /// Strategy: atomic, mutex or ticker; with none, each in turn.
    #[arg(long)]
    strategy: Option<Strategy>,
    /// Worker id, unique among the processes making IDs with this layout
    /// now.
    #[arg(long)]
    worker: Option<u64>,
    /// Take the worker id from the deployment instead: env
    /// (FLAKEGEN_WORKER_ID), hostname (a StatefulSet pod's ordinal) or ip (a
    /// private IPv4 address's host part).
    #[arg(long, value_name = "SOURCE", value_parser = ["env", "hostname", "ip"])]
    worker_from: Option<String>,
    #[arg(long, value_name = "URL", requires = "namespace", help = lease_help())]
    lease: Option<String>,
    /// The namespace of the lease, as in `Lease::new(registry, namespace)`.
    #[arg(long, requires = "lease")]
    namespace: Option<String>,
    /// How many IDs per strategy.
    #[arg(long, default_value_t = 3)]
    count: usize,
    /// How to print IDs: decimal, or base32 (Crockford's, 13 characters
    /// that sort as the IDs do).
    #[arg(long, value_enum, default_value_t = Format::Decimal)]
    format: Format,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
}

/// The help of `--lease`: every registry flakegen knows, as the library's
/// table lists them.
fn lease_help() -> String {
    format!(
        "Or lease the worker id from this registry: a {} URL, among the generators of \
         --namespace; it is given back when the run ends. A namespace the registry has no \
         trace of waits the TTL and the skew allowance once (12 s), unless `flakegen leases \
         init` declared it new",
        flakegen::lease::RegistryKind::schemes_said()
    )
}

/// An ID's text form.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    Decimal,
    Base32,
}

/// Decode IDs into their time, worker and sequence.
#[derive(clap::Args)]
pub(crate) struct Decode {
    /// The IDs, in decimal or base32; with none, or `-`, one per line from
    /// stdin (its first word: `flakegen new | flakegen decode` works).
    ids: Vec<String>,
    /// The layout they were made with.
    #[arg(long, default_value = "twitter")]
    layout: Layout,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
}

/// One line of output: an ID, its fields, and what made or read it.
struct Line<'a> {
    id: Snowflake,
    unix_millis: u64,
    worker: u64,
    sequence: u64,
    /// Discord splits its worker field in two.
    discord: bool,
    /// The strategy that made the ID, or the layout it was decoded with.
    source: (&'a str, &'a str),
    format: Format,
}

impl<'a> Line<'a> {
    fn new(
        layout: &Layout,
        id: Snowflake,
        source: (&'a str, &'a str),
        format: Format,
    ) -> Result<Self, Error> {
        let fields = layout.decode(id)?;
        Ok(Line {
            id,
            unix_millis: layout.unix_millis_of(fields.timestamp),
            worker: fields.worker,
            sequence: fields.sequence,
            discord: *layout == Layout::DISCORD,
            source,
            format,
        })
    }

    /// The ID as printed.
    fn id(&self) -> String {
        match self.format {
            Format::Decimal => self.id.to_string(),
            Format::Base32 => self.id.to_base32().to_string(),
        }
    }

    fn print(&self, json: bool) {
        let time = show::time(self.unix_millis);
        let (source_key, source) = self.source;
        if json {
            let mut object = serde_json::json!({
                // A string: JavaScript's numbers lose precision above 2^53.
                "id": self.id(),
                "time": time,
                "unix_ms": self.unix_millis,
                "sequence": self.sequence,
                source_key: source,
            });
            if self.discord {
                object["worker"] = (self.worker >> 5).into();
                object["process"] = (self.worker & 31).into();
            } else {
                object["worker"] = self.worker.into();
            }
            say!("{object}");
        } else {
            let worker = if self.discord {
                format!("worker={} process={}", self.worker >> 5, self.worker & 31)
            } else {
                format!("worker={}", self.worker)
            };
            say!(
                "{:<20} {time}  {worker:<10} sequence={:<5} {source_key}={source}",
                self.id(),
                self.sequence
            );
        }
    }
}

pub(crate) fn new(args: &New) -> Result<(), Failed> {
    let layout = args.layout;
    let builder = Builder::new().layout(layout);
    let (builder, from) = match (&args.lease, args.worker, args.worker_from.as_deref()) {
        (Some(url), _, _) => {
            let namespace = args.namespace.clone().unwrap_or_default();
            let lease = Lease::new(lease::connect(url)?, namespace);
            (builder.lease(lease), "a lease".to_owned())
        }
        (None, Some(worker), _) => (
            builder.worker(worker),
            format!("worker id {worker} (--worker)"),
        ),
        (None, None, Some(source)) => {
            let worker = match source {
                "env" => worker::from_env(&layout)?,
                "hostname" => worker::from_hostname(&layout)?,
                _ => worker::from_private_ipv4(&layout)?,
            };
            (
                builder.worker(worker),
                format!("worker id {worker} (--worker-from {source})"),
            )
        }
        (None, None, None) => unreachable!("clap requires a worker source"),
    };
    let strategies = match args.strategy {
        Some(strategy) => vec![strategy],
        None => Strategy::ALL.to_vec(),
    };
    // One generator at a time, each dropped before the next is built: on
    // one worker id each starts after the last ID of the one before, as
    // flakegen keeps generators of one process apart; a leased one gives
    // its id back, and the next leases it again at once.
    for strategy in strategies {
        let generator = builder.clone().build(strategy)?;
        let worker = generator.worker();
        eprintln!("{from}: worker {worker}, strategy {strategy}");
        for _ in 0..args.count {
            let id = generator.next_id()?;
            Line::new(&layout, id, ("strategy", strategy.name()), args.format)?.print(args.json);
        }
    }
    Ok(())
}

/// Decodes every ID it can; an ID that does not decode is an error line,
/// and the status says so, after the rest. An ID whose time lies ahead of
/// this host's clock gets a warning: it was likely made with another
/// layout.
pub(crate) fn decode(args: &Decode) -> Result<(), Failed> {
    let name = args.layout.to_string();
    let mut failed = false;
    let now = show::unix_millis(std::time::SystemTime::now());
    let mut one = |text: &str| {
        let (id, format) = match parse(text) {
            Ok(parsed) => parsed,
            Err(e) => {
                eprintln!("error: {text}: {e}");
                failed = true;
                return;
            }
        };
        match Line::new(&args.layout, id, ("layout", &name), format) {
            Ok(line) => {
                line.print(args.json);
                // A minute of slack: clocks disagree that much and more.
                if line.unix_millis > now.saturating_add(60_000) {
                    eprintln!(
                        "warning: {text}: its time, {}, lies {} ahead of this host's clock: \
                         made with another layout? (--layout)",
                        show::time(line.unix_millis),
                        show::duration(line.unix_millis - now)
                    );
                }
            }
            Err(e) => {
                eprintln!("error: {text}: {e}");
                failed = true;
            }
        }
    };
    if args.ids.is_empty() || args.ids == ["-"] {
        for line in std::io::stdin().lines() {
            let line = line.map_err(|e| Failed(Some(format!("cannot read stdin: {e}"))))?;
            if let Some(text) = line.split_whitespace().next() {
                one(text);
            }
        }
    } else {
        for text in &args.ids {
            one(text);
        }
    }
    if failed { Err(Failed(None)) } else { Ok(()) }
}

/// An ID in decimal (digits only) or base32 (13 characters), and which.
fn parse(text: &str) -> Result<(Snowflake, Format), String> {
    if text.len() == 13 && !text.bytes().all(|b| b.is_ascii_digit()) {
        return Snowflake::from_base32(text)
            .map(|id| (id, Format::Base32))
            .map_err(|e| e.to_string());
    }
    text.parse()
        .map(|id| (id, Format::Decimal))
        .map_err(|e| format!("{e}; or, in base32, 13 characters"))
}

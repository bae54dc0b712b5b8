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
    /// Layout: twitter, discord, sonyflake, instagram or javascript, or a custom
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
    /// (FLAKEGEN_WORKER_ID), ordinal (a Kubernetes StatefulSet pod's, from
    /// HOSTNAME or the host name: orders-3 is 3; hostname is the same) or
    /// ip (a private IPv4 address's host part).
    #[arg(long, value_name = "SOURCE", value_parser = ["env", "ordinal", "hostname", "ip"])]
    worker_from: Option<String>,
    #[arg(long, value_name = "URL", requires = "namespace", help = lease_help())]
    lease: Option<String>,
    /// The namespace of the lease, as in `Lease::new(registry, namespace)`.
    #[arg(long, requires = "lease")]
    namespace: Option<String>,
    /// The lease's TTL (`Lease::ttl`), in ms: the generators' of the
    /// namespace.
    #[arg(long, requires = "lease", default_value_t = lease::Lease::DEFAULT_TTL.as_millis() as u64)]
    ttl_ms: u64,
    /// The lease's skew allowance (`Lease::skew`), in ms.
    #[arg(long, requires = "lease", default_value_t = lease::Lease::DEFAULT_SKEW.as_millis() as u64)]
    skew_ms: u64,
    /// How many IDs per strategy: at least 1.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    count: u64,
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
         init` waited it out before; the wait, and why, is said as it begins",
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
    /// stdin: its first word, or a JSON object's "id", so that `flakegen
    /// new | flakegen decode` and `flakegen new --json | flakegen decode`
    /// work. A line that does not read is named by its number, and the
    /// rest are decoded.
    ids: Vec<String>,
    /// The layout they were made with: twitter, discord, sonyflake,
    /// instagram or javascript, or a custom layout's fields. Default: the
    /// layout a `flakegen new --json` line names, else twitter; one that
    /// names another layout than this is refused.
    #[arg(long)]
    layout: Option<Layout>,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
    /// How to read 13 digits, which are decimal and base32 alike: an ID
    /// that reads two ways is refused, both readings named, without it.
    #[arg(long, value_enum, value_name = "FORMAT")]
    read_as: Option<Format>,
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
    /// The layout, named in JSON so that `decode` reads it back.
    layout: String,
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
            layout: layout.to_string(),
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
                "layout": self.layout,
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
            let lease = Lease::new(lease::connect(url).map_err(Failed::lease)?, namespace)
                .ttl(std::time::Duration::from_millis(args.ttl_ms))
                .skew(std::time::Duration::from_millis(args.skew_ms));
            // A first build in a new namespace waits: say why at once.
            crate::events::show();
            (builder.lease(lease), "a lease".to_owned())
        }
        (None, Some(worker), _) => (
            builder.worker(worker),
            format!("worker id {worker} (--worker)"),
        ),
        (None, None, Some(source)) => {
            let worker = match source {
                "env" => worker::from_env(&layout),
                "ordinal" | "hostname" => worker::from_ordinal(&layout),
                _ => worker::from_private_ipv4(&layout),
            };
            let worker = worker.map_err(|e| Failed::input(e.to_string()))?;
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
        let generator = builder.clone().build(strategy).map_err(|e| match e {
            flakegen::BuildError::WorkerOutOfRange { .. } => Failed::input(e.to_string()),
            e => Failed::from(e),
        })?;
        let worker = generator.worker();
        eprintln!("{from}: worker {worker}, strategy {strategy}");
        for _ in 0..args.count {
            let id = generator.next_id()?;
            Line::new(&layout, id, ("strategy", strategy.name()), args.format)?.print(args.json);
        }
    }
    Ok(())
}

/// Decodes every ID it can; one that does not read or decode is an error
/// line, named by its line number (or argument), and the status says so
/// after the rest. An ID whose time lies ahead of this host's clock gets a
/// warning: it was likely made with another layout.
pub(crate) fn decode(args: &Decode) -> Result<(), Failed> {
    let mut failed = false;
    let now = show::unix_millis(std::time::SystemTime::now());
    // Decodes one ID, made with the layout a line names if any; whether
    // it failed.
    let one = |place: &str, text: &str, named: Option<&str>| -> bool {
        let layout = match layout_of(named, args.layout) {
            Ok(layout) => layout,
            Err(e) => {
                eprintln!("error: {place}: {text}: {e}");
                return true;
            }
        };
        let name = layout.to_string();
        let (id, format) = match parse(text, args.read_as) {
            Ok(parsed) => parsed,
            Err(e) => {
                eprintln!("error: {place}: {text}: {e}");
                return true;
            }
        };
        match Line::new(&layout, id, ("layout", &name), format) {
            Ok(line) => {
                line.print(args.json);
                // A minute of slack: clocks disagree that much and more.
                if line.unix_millis > now.saturating_add(60_000) {
                    eprintln!(
                        "warning: {place}: {text}: its time, {}, lies {} ahead of this host's \
                         clock: made with another layout? (--layout)",
                        show::time(line.unix_millis),
                        show::duration(line.unix_millis - now)
                    );
                }
                false
            }
            Err(e) => {
                eprintln!("error: {place}: {text}: {e}");
                true
            }
        }
    };
    if args.ids.is_empty() || args.ids == ["-"] {
        let stdin = std::io::stdin().lock();
        for (number, line) in std::io::BufRead::split(stdin, b'\n').enumerate() {
            let place = format!("line {}", number + 1);
            let line = line.map_err(|e| Failed::work(Some(format!("cannot read stdin: {e}"))))?;
            let Ok(line) = std::str::from_utf8(&line) else {
                eprintln!("error: {place}: not UTF-8 text");
                failed = true;
                continue;
            };
            match id_of_line(line) {
                Ok(Some((text, named))) => failed |= one(&place, &text, named.as_deref()),
                Ok(None) => {}
                Err(e) => {
                    eprintln!("error: {place}: {e}");
                    failed = true;
                }
            }
        }
    } else {
        for (number, text) in args.ids.iter().enumerate() {
            failed |= one(&format!("argument {}", number + 1), text, None);
        }
    }
    if failed {
        Err(Failed::input(None))
    } else {
        Ok(())
    }
}

/// The layout to decode with: the one a line names (`flakegen new
/// --json`), which `--layout` may repeat but not contradict; else
/// `--layout`; else Twitter's.
fn layout_of(named: Option<&str>, given: Option<Layout>) -> Result<Layout, String> {
    let Some(named) = named else {
        return Ok(given.unwrap_or(Layout::TWITTER));
    };
    let layout: Layout = named
        .parse()
        .map_err(|e| format!("its \"layout\", {named:?}, does not read: {e}"))?;
    match given {
        Some(given) if given != layout => Err(format!(
            "it was made with the layout {layout}, but --layout says {given}: drop \
             --layout to decode it with its own, or give the one it names"
        )),
        _ => Ok(layout),
    }
}

/// The ID a line of input holds, and the layout it names: its first word,
/// or, for a JSON object (`flakegen new --json`), its `id` and `layout`.
/// `None` for a blank line.
fn id_of_line(line: &str) -> Result<Option<(String, Option<String>)>, String> {
    let line = line.trim();
    if !line.starts_with('{') {
        return Ok(line
            .split_whitespace()
            .next()
            .map(|id| (id.to_owned(), None)));
    }
    let object: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    let layout = match &object["layout"] {
        serde_json::Value::String(layout) => Some(layout.clone()),
        serde_json::Value::Null => None,
        _ => return Err("a JSON object whose \"layout\" is not a string".to_owned()),
    };
    match &object["id"] {
        serde_json::Value::String(id) => Ok(Some((id.clone(), layout))),
        serde_json::Value::Number(id) => Ok(Some((id.to_string(), layout))),
        _ => Err("a JSON object without an \"id\"".to_owned()),
    }
}

/// An ID in decimal (digits only) or base32 (13 characters), and which;
/// `read_as` settles 13 digits, which read both ways.
fn parse(text: &str, read_as: Option<Format>) -> Result<(Snowflake, Format), String> {
    let decimal = || text.parse::<Snowflake>().map_err(|e| e.to_string());
    let base32 = || Snowflake::from_base32(text).map_err(|e| e.to_string());
    match read_as {
        Some(Format::Decimal) => return decimal().map(|id| (id, Format::Decimal)),
        Some(Format::Base32) => return base32().map(|id| (id, Format::Base32)),
        None => {}
    }
    let digits = text.bytes().all(|b| b.is_ascii_digit());
    match (text.len() == 13, digits) {
        (true, false) => base32().map(|id| (id, Format::Base32)),
        (true, true) => match (decimal(), base32()) {
            (Ok(d), Ok(b)) if d != b => Err(format!(
                "13 digits read both ways: as decimal, the ID {d}; as base32, the ID {b}: \
                 say which with --read-as decimal or --read-as base32"
            )),
            (Ok(d), _) => Ok((d, Format::Decimal)),
            (Err(_), Ok(b)) => Ok((b, Format::Base32)),
            (Err(e), Err(_)) => Err(e),
        },
        _ => decimal()
            .map(|id| (id, Format::Decimal))
            .map_err(|e| format!("{e}; or, in base32, 13 characters")),
    }
}

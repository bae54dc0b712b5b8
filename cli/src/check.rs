//! `flakegen leases check`: what stands between a registry and generators
//! that rely on it, each finding a line that says what to do. Every verdict
//! is the library's; this file only says it.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use flakegen::lease::backend::{ReadRequest, Registry, TimeBase};
use flakegen::lease::inspect::{Condition, Inspect, ServerClock, Severity, Transport, Verified};
use flakegen::lease::{ClockVerdict, Lease, LeaseError, REGISTRIES};

use crate::Failed;
use crate::show;

/// The namespace the check writes its one record in: a name of its own,
/// so that no generator ever leases from what the check wrote.
pub(crate) const CHECK_NAMESPACE: &str = "flakegen leases check (permissions test)";

/// Check a registry before generators rely on it. It writes only in a
/// namespace of its own, which no generator leases from.
#[derive(clap::Args)]
pub(crate) struct Args {
    #[arg(env = "FLAKEGEN_LEASE_URL", help = crate::show::url_help())]
    url: String,
    /// The namespace to report on, as in `Lease::new(registry, namespace)`
    /// (the check writes nothing in it); without it, every namespace the
    /// registry holds. One that lost records is said "lost", and exits 1
    /// when named here.
    #[arg(long)]
    namespace: Option<String>,
    /// The generators' TTL (`Lease::ttl`), in ms: what a detected loss
    /// costs them.
    #[arg(long, default_value_t = Lease::DEFAULT_TTL.as_millis() as u64)]
    ttl_ms: u64,
    /// The generators' skew allowance (`Lease::skew`), in ms.
    #[arg(long, default_value_t = Lease::DEFAULT_SKEW.as_millis() as u64)]
    skew_ms: u64,
    /// Shift this host's clock by this many ms (negative: behind), to
    /// rehearse what a host whose clock is off would be told.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    clock_offset_ms: i64,
    /// One JSON object per finding, one per line.
    #[arg(long)]
    json: bool,
}

/// How a finding bears on the generators.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Ok,
    /// Works, but worth changing.
    Warn,
    /// The registry lost records that generators may still issue under:
    /// they are safe (they stop at their fences and lease again), but it
    /// is a problem to look into.
    Lost,
    /// Generators will fail or wait, or could share an id: fix it first.
    Fail,
}

impl From<Severity> for Level {
    fn from(severity: Severity) -> Self {
        match severity {
            Severity::Note => Level::Ok,
            Severity::Warning => Level::Warn,
            _ => Level::Fail,
        }
    }
}

struct Finding {
    level: Level,
    topic: &'static str,
    text: String,
}

#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, level: Level, topic: &'static str, text: impl Into<String>) {
        self.0.push(Finding {
            level,
            topic,
            text: text.into(),
        });
    }

    fn fail(&mut self, e: &LeaseError) {
        self.add(Level::Fail, topic(e), e.to_string());
    }

    fn print(&self, json: bool) {
        for f in &self.0 {
            let level = match f.level {
                Level::Ok => "ok",
                Level::Warn => "warn",
                Level::Lost => "lost",
                Level::Fail => "FAIL",
            };
            if json {
                let object = serde_json::json!({
                    "level": level.to_ascii_lowercase(),
                    "topic": f.topic,
                    "finding": f.text,
                });
                say!("{object}");
            } else {
                say!("{level:<5} {:<12} {}", f.topic, f.text);
            }
        }
    }
}

pub(crate) fn run(args: &Args) -> Result<(), Failed> {
    let mut findings = Findings::default();
    if !args.json {
        say!("registry   {}", show::redacted(&args.url));
    }
    let mut wrong_input = false;
    match flakegen::lease::connect(&args.url) {
        Ok(registry) => with_registry(args, registry, &mut findings),
        Err(e) => {
            // A URL that does not parse is the input's fault (exit 2).
            wrong_input = Failed::lease(e.clone()).status == 2;
            findings.add(Level::Fail, "url", e.to_string());
        }
    }
    findings.print(args.json);
    if wrong_input {
        Err(Failed::input(None))
    } else if findings.0.iter().any(|f| {
        // A namespace asked about that lost records is this check's
        // problem; across the registry one lost long ago (its ids never
        // taken again) is listed, and would otherwise fail every check.
        f.level == Level::Fail || (f.level == Level::Lost && args.namespace.is_some())
    }) {
        Err(Failed::work(None))
    } else {
        Ok(())
    }
}

/// Where a refusal belongs.
fn topic(e: &LeaseError) -> &'static str {
    match e {
        LeaseError::Unreachable { .. } | LeaseError::TooSlow { .. } => "reach",
        LeaseError::Tls { .. } | LeaseError::TlsRequired { .. } => "tls",
        LeaseError::Unauthorized { .. } => "credentials",
        LeaseError::Forbidden { .. } => "permissions",
        LeaseError::UnknownDatabase { .. } => "database",
        LeaseError::ReadOnly { .. } | LeaseError::MultiWriter { .. } => "topology",
        LeaseError::WrongServer { .. } | LeaseError::InvalidUrl { .. } => "url",
        LeaseError::ClockAhead { .. } => "clock",
        _ => "server",
    }
}

fn with_registry(args: &Args, registry: Arc<dyn Registry>, findings: &mut Findings) {
    // The terms the report speaks of: those generators would take.
    let lease = Lease::new(Arc::clone(&registry), CHECK_NAMESPACE)
        .ttl(std::time::Duration::from_millis(args.ttl_ms))
        .skew(std::time::Duration::from_millis(args.skew_ms));
    if let Err(e) = lease.validate(&flakegen::Layout::TWITTER) {
        return findings.add(Level::Fail, "terms", format!("--ttl-ms and --skew-ms: {e}"));
    }
    if args.skew_ms >= args.ttl_ms {
        findings.add(
            Level::Warn,
            "terms",
            format!(
                "the skew allowance ({} ms) is at or above the TTL ({} ms): every loss, and \
                 every new namespace, costs generators more than a TTL's pause, and clocks \
                 that far apart are a fault to fix, not to allow for: synchronise the clocks \
                 (NTP, chrony) and keep the skew well below the TTL (the defaults: 2 s against \
                 10 s)",
                args.skew_ms, args.ttl_ms
            ),
        );
    }
    let Some(inspect) = registry.inspect() else {
        return findings.add(
            Level::Warn,
            "registry",
            "this registry shows nothing to a tool (it does not implement Inspect)",
        );
    };
    // Connecting comes first: what TLS did is known only after it.
    let started = Instant::now();
    let survey = match inspect.survey() {
        Ok(survey) => survey,
        Err(e) => return findings.fail(&e),
    };
    findings.add(
        Level::Ok,
        "reach",
        format!(
            "answered in {:.1} ms (each call gives up after {} s)",
            started.elapsed().as_secs_f64() * 1e3,
            Lease::DEFAULT_TIMEOUT.as_secs()
        ),
    );
    transport(survey.transport, registry_host(&args.url), findings);
    marker(args, inspect, findings);
    write_test(args, &registry, survey.clock, findings);
    distance(args, &lease, &registry, findings);
    for caveat in survey.caveats {
        findings.add(
            caveat.severity.into(),
            caveat.topic,
            format!("{}: {}", caveat.setting, caveat.advice),
        );
    }
    let pause_ms = args.ttl_ms.saturating_add(args.skew_ms);
    findings.add(
        Level::Ok,
        "loss",
        format!(
            "a detected loss (a restart without persistence, a TRUNCATE, a failover, a \
             restore) costs \
             generators a pause of the TTL and the skew allowance, {:.1} s at these terms, \
             after which they lease again by themselves",
            pause_ms as f64 / 1e3
        ),
    );
}

/// How the connection travels, as negotiated.
fn transport(transport: Transport, host: &str, findings: &mut Findings) {
    let local = matches!(host, "localhost" | "127.0.0.1" | "::1") || host.starts_with('/');
    let (level, text) = match transport {
        Transport::Tls(Verified::Full) => (
            Level::Ok,
            "TLS, the server's certificate and host name verified".to_owned(),
        ),
        Transport::Tls(Verified::Chain) => (
            Level::Warn,
            "TLS, but the certificate's host name is not checked: any server with a \
             certificate from that CA can answer; verify it (sslmode=verify-full, \
             ssl-mode=VERIFY_IDENTITY)"
                .to_owned(),
        ),
        Transport::Tls(_) => (
            Level::Warn,
            "TLS, but the server's certificate is not checked: anyone on the path can answer \
             for it; verify it (sslmode=verify-full, ssl-mode=VERIFY_IDENTITY, rediss:// \
             without #insecure, with the CA file)"
                .to_owned(),
        ),
        Transport::Plain if local => (Level::Ok, "plain text, to this host".to_owned()),
        Transport::Plain => (
            Level::Warn,
            format!(
                "plain text to {host}: the password and every lease cross the network \
                 unencrypted; use TLS (sslmode=verify-full&sslrootcert=<CA file>, \
                 ssl-mode=VERIFY_IDENTITY&ssl-ca=<CA file>, rediss://)"
            ),
        ),
        _ => (Level::Ok, "in this process".to_owned()),
    };
    findings.add(level, "tls", text);
}

/// The host a URL names, for the transport's verdict.
fn registry_host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    }
}

/// The one write, as a generator's first acquisition makes it (the tables
/// created where there are none, the server found to take writes alone,
/// a marker written where none is in force, which is safe: it is no
/// earlier than any loss), in the check's own namespace; and the clock, as
/// that read found it.
fn write_test(
    args: &Args,
    registry: &Arc<dyn Registry>,
    server_clock: Option<ServerClock>,
    findings: &mut Findings,
) {
    let ns = CHECK_NAMESPACE;
    // The host's clock, around the read, as the generators here read it.
    let here = || show::unix_millis(SystemTime::now()).saturating_add_signed(args.clock_offset_ms);
    let before = here();
    let snapshot = match registry.read(ns, &ReadRequest::new(1).prefer(Some(0))) {
        Ok(snapshot) => snapshot,
        Err(e) => return findings.fail(&e),
    };
    let after = here();
    match (registry.time_base(), server_clock) {
        (TimeBase::Client, reading) => {
            findings.add(
                Level::Ok,
                "clock",
                format!(
                    "the store has no clock: expiry, and a loss's moment, are judged by each \
                     host's own, and nothing checks one host's against another's: keep every \
                     host's clock within the skew allowance ({} ms) of the others (NTP, chrony)",
                    args.skew_ms
                ),
            );
            // Its server shows one all the same: a host far from it is far
            // from the others too.
            if let Some(c) = reading {
                let here = |ms: u64| ms.saturating_add_signed(args.clock_offset_ms);
                let half = c.resolution_millis / 2;
                clock(
                    args,
                    c.unix_millis + half,
                    here(c.before_unix_millis).saturating_sub(half),
                    here(c.after_unix_millis) + half,
                    findings,
                );
            }
        }
        _ => clock(args, snapshot.server_unix_millis, before, after, findings),
    }
    let written = Lease::new(Arc::clone(registry), ns).test_write();
    match written {
        Ok(true) => findings.add(
            Level::Ok,
            "permissions",
            format!(
                "may create and write the lease records (wrote one, free, in the namespace \
                 {ns:?}, which no generator leases from)"
            ),
        ),
        Ok(false) => findings.add(
            Level::Warn,
            "permissions",
            format!(
                "the test write to namespace {ns:?} met another writer, or a generator \
                 leasing there, so writing is untested: run the check again"
            ),
        ),
        Err(e) => findings.fail(&e),
    }
}

/// How far the registry is, by the time its reads take on the open
/// connection, and whether the terms leave room for its round trips: a
/// build's on a new connection, and a renewal's that must reconnect.
fn distance(args: &Args, lease: &Lease, registry: &Arc<dyn Registry>, findings: &mut Findings) {
    let scheme = args.url.split_once("://").map_or("", |(scheme, _)| scheme);
    let Some(kind) = REGISTRIES
        .iter()
        .find(|kind| kind.schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme)))
    else {
        return;
    };
    let trips = kind.round_trips;
    // The quickest of a few reads: the others met a busy server or host.
    let mut quickest = Duration::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        if let Err(e) = registry.read(CHECK_NAMESPACE, &ReadRequest::new(1)) {
            return findings.fail(&e);
        }
        quickest = quickest.min(started.elapsed());
    }
    let rtt = quickest / trips.read.max(1);
    let at = lease.at_distance(rtt, trips);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    findings.add(
        Level::Ok,
        "distance",
        format!(
            "a round trip takes {:.1} ms (a read, {} round trip(s), at best of 5): a build \
             costs {} round trips on a new connection ({} on an open one), about {:.0} ms \
             here; a renewal {}, about {:.1} ms; a renewal that must reconnect {}, about \
             {:.0} ms",
            ms(rtt),
            trips.read,
            trips.new_build,
            trips.warm_build,
            ms(at.build),
            trips.renewal,
            ms(at.renewal),
            trips.reconnecting_renewal,
            ms(at.reconnecting_renewal),
        ),
    );
    if at.build > at.build_room {
        findings.add(
            Level::Warn,
            "distance",
            format!(
                "a build on a new connection takes about {:.0} ms here, past the {:.0} ms the \
                 TTL ({} ms) gives it: builds will fail while the registry answers; raise \
                 the TTL",
                ms(at.build),
                ms(at.build_room),
                args.ttl_ms
            ),
        );
    }
    if at.renewal > at.call_room {
        findings.add(
            Level::Warn,
            "distance",
            format!(
                "a renewal takes about {:.0} ms here, past the {:.0} ms its call may wait on \
                 an open connection (Lease::call_timeout, a fifth of the TTL, {} ms, unless \
                 set): every renewal would be taken for a dead connection and made again; \
                 raise the TTL",
                ms(at.renewal),
                ms(at.call_room),
                args.ttl_ms
            ),
        );
    }
    if at.reconnecting_renewal > at.renewal_room {
        findings.add(
            Level::Warn,
            "distance",
            format!(
                "a renewal that must reconnect takes about {:.0} ms here, past the {:.0} ms \
                 it has at these terms (half of what a first try has left: the TTL, {} ms, \
                 less the renewal interval): \
                 a connection lost would pause the generators at their fence; raise the TTL",
                ms(at.reconnecting_renewal),
                ms(at.renewal_room),
                args.ttl_ms
            ),
        );
    }
}

/// What the registry vouches for in the namespace asked about, or in every
/// one it holds, as it stands before the check writes anything.
fn marker(args: &Args, inspect: &dyn Inspect, findings: &mut Findings) {
    let namespaces = match &args.namespace {
        Some(namespace) => vec![namespace.clone()],
        None => match inspect.namespaces() {
            Ok(mut all) => {
                all.retain(|ns| ns != CHECK_NAMESPACE);
                all
            }
            Err(LeaseError::NoLeases { .. }) => vec![],
            Err(e) => return findings.fail(&e),
        },
    };
    if namespaces.is_empty() {
        return findings.add(
            Level::Warn,
            "namespaces",
            format!(
                "no namespace has a trace here: a new registry, or one that lost or had \
                 deleted everything of flakegen's (a restart without persistence, FLUSHALL, \
                 tables dropped), and nothing tells which. If generators leased here, they \
                 can no longer renew: each runs to its fence and leases again by itself, \
                 {:.1} s (the TTL and the skew allowance) after it saw the loss, and no ID is \
                 issued twice. Each namespace's next build waits as long, once",
                args.ttl_ms.saturating_add(args.skew_ms) as f64 / 1e3
            ),
        );
    }
    const SHOWN: usize = 20;
    for namespace in namespaces.iter().take(SHOWN) {
        let listing = match inspect.list(namespace) {
            Ok(listing) => listing,
            Err(LeaseError::NoLeases { .. }) => {
                return findings.add(
                    Level::Ok,
                    "namespaces",
                    "no lease table yet: the first generator (or this check) creates it",
                );
            }
            Err(e) => return findings.fail(&e),
        };
        let condition = listing.condition();
        let level = match &condition {
            Condition::Vouched { gone, .. } if gone.is_empty() => Level::Ok,
            Condition::NoTrace => Level::Warn,
            _ => Level::Lost,
        };
        findings.add(level, "namespace", format!("{namespace:?}: {condition}"));
    }
    if namespaces.len() > SHOWN {
        findings.add(
            Level::Ok,
            "namespaces",
            format!(
                "{} more namespaces not shown: name one with --namespace",
                namespaces.len() - SHOWN
            ),
        );
    }
}

/// This host's clock against the server's, as the skew check judges it.
fn clock(args: &Args, server: u64, before: u64, after: u64, findings: &mut Findings) {
    let skew = args.skew_ms;
    let middle = before / 2 + after / 2 + (before % 2 + after % 2) / 2;
    let error = after.saturating_sub(before).div_ceil(2);
    let ahead = show::lead_millis(server, middle);
    let said = format!(
        "this host's clock reads {} ms {} the registry's (± {error} ms)",
        ahead.unsigned_abs(),
        if ahead >= 0 { "ahead of" } else { "behind" },
    );
    let (level, text) = match ClockVerdict::of(ahead, skew) {
        ClockVerdict::Refused => (
            Level::Fail,
            format!(
                "{said}, beyond the skew allowance of {skew} ms: generators here will be \
                 refused (LeaseError::ClockAhead). Synchronise this host's clock (chrony, \
                 systemd-timesyncd), or raise Lease::skew for every generator of the namespace"
            ),
        ),
        ClockVerdict::NearTheLimit => (
            Level::Warn,
            format!(
                "{said}: within the skew allowance of {skew} ms, but past half of it; \
                 synchronise this host's clock before it drifts further"
            ),
        ),
        ClockVerdict::Behind => (
            Level::Warn,
            format!(
                "{said}: generators here are not refused, but their IDs carry times {} ms \
                 early, and after a loss they wait that much longer. Synchronise this \
                 host's clock",
                ahead.unsigned_abs()
            ),
        ),
        _ => (
            Level::Ok,
            format!("{said}, within the skew allowance of {skew} ms"),
        ),
    };
    findings.add(level, "clock", text);
}

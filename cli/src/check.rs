//! `flakegen leases check`: what stands between a registry and generators
//! that rely on it, each finding a line that says what to do.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use flakegen::lease::backend::{Crash, Expect, NewRecord, Registry};
use flakegen::lease::{DEFAULT_SKEW, LeaseError};

use crate::Failed;
use crate::show;

/// Check a registry before generators rely on it.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The registry: a mysql://, postgres:// or redis:// URL, as the
    /// generators are given it.
    url: String,
    /// The namespace the check writes its one record in (id 0, left free).
    #[arg(long, default_value = "flakegen-check")]
    namespace: String,
    /// The generators' skew allowance (`Lease::skew`), in ms.
    #[arg(long, default_value_t = DEFAULT_SKEW.as_millis() as u64)]
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
    /// Generators will fail or wait, or could share an id: fix it first.
    Fail,
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

    fn print(&self, json: bool) {
        for f in &self.0 {
            let level = match f.level {
                Level::Ok => "ok",
                Level::Warn => "warn",
                Level::Fail => "FAIL",
            };
            if json {
                let object = serde_json::json!({
                    "level": level.to_ascii_lowercase(),
                    "topic": f.topic,
                    "finding": f.text,
                });
                println!("{object}");
            } else {
                println!("{level:<5} {:<12} {}", f.topic, f.text);
            }
        }
    }
}

pub(crate) fn run(args: &Args) -> Result<(), Failed> {
    let mut findings = Findings::default();
    if !args.json {
        println!("registry   {}", show::redacted(&args.url));
    }
    match flakegen::lease::connect(&args.url) {
        Ok(registry) => {
            transport(&args.url, &mut findings);
            with_registry(args, registry, &mut findings);
        }
        Err(e) => findings.add(Level::Fail, "url", e.to_string()),
    }
    findings.print(args.json);
    if findings.0.iter().any(|f| f.level == Level::Fail) {
        Err(Failed(None))
    } else {
        Ok(())
    }
}

/// Whether the URL asks for TLS, and how much of the certificate it checks.
fn transport(url: &str, findings: &mut Findings) {
    let lower = url.to_ascii_lowercase();
    let param = |name: &str| {
        lower
            .split_once('?')
            .and_then(|(_, query)| {
                query
                    .split('&')
                    .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            })
            .map(str::to_owned)
    };
    let host = lower
        .split_once("://")
        .map_or("", |(_, rest)| rest)
        .split(['/', '?'])
        .next()
        .unwrap_or("")
        .rsplit('@')
        .next()
        .unwrap_or("");
    let host = host.strip_prefix('[').map_or_else(
        || host.split(':').next().unwrap_or(""),
        |v6| v6.split(']').next().unwrap_or(""),
    );
    let local = matches!(host, "localhost" | "127.0.0.1" | "::1") || host.starts_with('/');
    let (checked, unchecked_host, unchecked, plain_fix) = if lower.starts_with("rediss://") {
        (true, false, false, "")
    } else if lower.starts_with("redis://") {
        (false, false, false, "use a rediss:// URL")
    } else if lower.starts_with("mysql://") {
        match param("ssl-mode").as_deref() {
            Some("verify_identity") => (true, false, false, ""),
            Some("verify_ca") => (false, true, false, ""),
            Some("required") => (false, false, true, ""),
            _ => (
                false,
                false,
                false,
                "add ssl-mode=VERIFY_IDENTITY&ssl-ca=<CA file>",
            ),
        }
    } else {
        match param("sslmode").as_deref() {
            Some("verify-full") => (true, false, false, ""),
            Some("verify-ca") => (false, true, false, ""),
            Some("require") => (false, false, true, ""),
            _ => (
                false,
                false,
                false,
                "add sslmode=verify-full&sslrootcert=<CA file>",
            ),
        }
    };
    if checked {
        findings.add(
            Level::Ok,
            "tls",
            "TLS, the server's certificate and host name verified",
        );
    } else if unchecked_host {
        findings.add(
            Level::Warn,
            "tls",
            "TLS, but the certificate's host name is not checked: any server with a \
             certificate from that CA can answer; verify it (sslmode=verify-full, \
             ssl-mode=VERIFY_IDENTITY)",
        );
    } else if unchecked {
        findings.add(
            Level::Warn,
            "tls",
            "TLS, but the server's certificate is not checked: anyone on the path can answer \
             for it; verify it (sslmode=verify-full, ssl-mode=VERIFY_IDENTITY, with the CA \
             file)",
        );
    } else if local {
        findings.add(Level::Ok, "tls", "plain text, to this host");
    } else {
        findings.add(
            Level::Warn,
            "tls",
            format!(
                "plain text to {host}: the password and every lease cross the network \
                 unencrypted; {plain_fix}"
            ),
        );
    }
}

/// Where a refusal belongs.
fn topic(e: &LeaseError) -> &'static str {
    match e {
        LeaseError::Unreachable { .. } => "reach",
        LeaseError::Tls { .. } | LeaseError::TlsRequired { .. } => "tls",
        LeaseError::Unauthorized { .. } => "credentials",
        LeaseError::Forbidden { .. } => "permissions",
        LeaseError::UnknownDatabase { .. } => "database",
        _ => "server",
    }
}

fn with_registry(args: &Args, registry: Arc<dyn Registry>, findings: &mut Findings) {
    let ns = &args.namespace;
    // The host's clock, around the read, as the generators here read it.
    let here = || show::unix_millis(SystemTime::now()).saturating_add_signed(args.clock_offset_ms);
    let started = Instant::now();
    let before = here();
    let read = registry.read(ns, 1, Some(0));
    let after = here();
    let took = started.elapsed();
    let snapshot = match read {
        Ok(snapshot) => snapshot,
        Err(e) => return findings.add(Level::Fail, topic(&e), e.to_string()),
    };
    findings.add(
        Level::Ok,
        "reach",
        format!(
            "answered a read in {:.1} ms (each call gives up after {} s)",
            took.as_secs_f64() * 1e3,
            flakegen::lease::DEFAULT_TIMEOUT.as_secs()
        ),
    );
    clock(args, snapshot.server_unix_millis, before, after, findings);
    match snapshot.marker_unix_millis {
        Some(marker) => findings.add(
            Level::Ok,
            "marker",
            format!("the registry's data began {}", show::time(marker)),
        ),
        None => findings.add(
            Level::Warn,
            "marker",
            "no marker: the registry is new, or lost its data (a TRUNCATE, a restart without \
             persistence, a restore); the next acquisition writes one, and the ids it leases \
             wait the TTL and the skew after it. If generators ran here, find out what \
             happened to the data",
        ),
    }
    // The one write: id 0 of the check's namespace, left free, its fence
    // where it was.
    let written = (|| {
        let marker = match snapshot.marker_unix_millis {
            Some(marker) => marker,
            None => registry.mark(ns)?,
        };
        let record = snapshot.records.iter().find(|r| r.worker == 0);
        if record.is_some_and(|r| !r.holder.is_empty()) {
            return Ok(None);
        }
        let expect = Expect {
            marker_unix_millis: marker,
            version: record.map(|r| r.version),
        };
        let free = NewRecord {
            holder: "",
            version: record.map_or(1, |r| r.version.wrapping_add(1)),
            ttl_millis: 0,
            fence_unix_millis: record.map_or(0, |r| r.fence_unix_millis),
        };
        registry.swap(ns, 0, expect, &free)
    })();
    match written {
        Ok(Some(_)) => findings.add(
            Level::Ok,
            "permissions",
            format!(
                "may create and write the lease records (wrote id 0 of namespace {ns:?}, free)"
            ),
        ),
        Ok(None) => findings.add(
            Level::Warn,
            "permissions",
            format!(
                "the test write to namespace {ns:?} met another writer, so writing is \
                 untested: run the check again, or with --namespace of its own"
            ),
        ),
        Err(e) => findings.add(Level::Fail, topic(&e), e.to_string()),
    }
    durability(registry.as_ref(), findings);
}

/// The server's settings under which a crash would forget renewals unseen.
fn durability(registry: &dyn Registry, findings: &mut Findings) {
    match registry.caveats() {
        Ok(caveats) if caveats.is_empty() => findings.add(
            Level::Ok,
            "durability",
            "no server setting lets a crash forget a renewal the registry confirmed",
        ),
        Ok(caveats) => {
            for caveat in caveats {
                let level = match caveat.crash {
                    Crash::Server => Level::Fail,
                    Crash::Machine => Level::Warn,
                };
                findings.add(
                    level,
                    "durability",
                    format!("{}: {}", caveat.setting, caveat.advice),
                );
            }
        }
        Err(e) => findings.add(Level::Fail, topic(&e), e.to_string()),
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
    let ahead_ms = u64::try_from(ahead).unwrap_or(0);
    let behind_ms = u64::try_from(-ahead).unwrap_or(0);
    if ahead_ms > skew {
        findings.add(
            Level::Fail,
            "clock",
            format!(
                "{said}, beyond the skew allowance of {skew} ms: generators here will be \
                 refused (LeaseError::ClockAhead). Synchronise this host's clock (chrony, \
                 systemd-timesyncd), or raise Lease::skew for every generator of the namespace"
            ),
        );
    } else if ahead_ms > skew / 2 {
        findings.add(
            Level::Warn,
            "clock",
            format!(
                "{said}: within the skew allowance of {skew} ms, but past half of it; \
                 synchronise this host's clock before it drifts further"
            ),
        );
    } else if behind_ms > skew {
        findings.add(
            Level::Warn,
            "clock",
            format!(
                "{said}: generators here are not refused, but their IDs carry times \
                 {behind_ms} ms early, and after a loss they wait that much longer. \
                 Synchronise this host's clock"
            ),
        );
    } else {
        findings.add(
            Level::Ok,
            "clock",
            format!("{said}, within the skew allowance of {skew} ms"),
        );
    }
}

//! `flakegen leases`, `leases check` and `leases init` against the real
//! servers of `scripts/services.sh`, every registry the library's table
//! lists: what an operator is told, in words, and the exit status.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test -p flakegen-cli --test leases
//! ```
//!
//! The URLs must be set: the tests never pass by skipping. One test takes
//! the marker away, one changes Redis' eviction policy and one MariaDB's
//! log flushing, so the tests of this file run one at a time.

mod raw_times;
// The root crate's test kits that name no registry's feature: the services
// script, and the toxiproxy client (a registry reached through a delay).
#[allow(dead_code, unreachable_pub)]
#[path = "../../tests/common/services.rs"]
mod services;
#[allow(dead_code, unreachable_pub)]
#[path = "../../tests/common/toxiproxy.rs"]
mod toxiproxy;

use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flakegen::lease::{self, Lease};
use flakegen::{Builder, IdGenerator, Layout};

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn url(backend: &str) -> String {
    services::url(backend, "")
}

/// Every registry of the library's table (the CLI is built with them all),
/// by the name of its feature, which its URL variable carries.
fn registries() -> Vec<&'static str> {
    lease::REGISTRIES.iter().map(|kind| kind.feature).collect()
}

/// The registries whose server has a clock the check reads, and whose
/// losses `lose` knows: etcd has no clock, and its loss is a restore.
const SERVER_CLOCKED: [&str; 3] = ["mysql", "postgres", "redis"];

fn flakegen(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegen"))
        .args(args)
        .output()
        .unwrap();
    raw_times::refuse_raw_times(&out, true);
    out
}

fn said(output: &Output) -> String {
    raw_times::refuse_raw_times(output, true);
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// What MariaDB's client prints for `sql`, run as the URL's user (the
/// servers' test credentials) in database `flakegen`.
fn mariadb(url: &str, sql: &str) -> String {
    let (host, port) = address(url);
    let credentials = ["-u", "flakegen", "-pflakegen-test", "-N", "flakegen"];
    let mut args = vec!["-h", &host, "-P", &port];
    args.extend(credentials);
    args.extend(["-e", sql]);
    services::client("mariadb", &args)
}

/// The check's lines on `topic`, each whole.
fn lines_on<'a>(said: &'a str, topic: &str) -> Vec<&'a str> {
    said.lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(topic))
        .collect()
}

/// The host and port of a URL (its first, where it lists several).
fn address(url: &str) -> (String, String) {
    let rest = url.split_once("://").unwrap().1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    let address = rest.split(['/', ',']).next().unwrap();
    let (host, port) = address.split_once(':').unwrap();
    (host.to_owned(), port.to_owned())
}

#[test]
fn a_healthy_registry_passes_the_check() {
    let _serial = serial();
    for backend in registries() {
        let out = flakegen(&["leases", "check", &url(backend)]);
        let said = said(&out);
        assert!(out.status.success(), "{backend}: {said}");
        for topic in ["tls", "reach", "clock", "permissions", "distance"] {
            let line = said
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(topic));
            assert!(
                line.is_some_and(|l| l.starts_with("ok")),
                "{backend}: {said}"
            );
        }
        assert!(
            !said.contains("flakegen-test"),
            "{backend}: a password printed: {said}"
        );
    }
}

/// The registries whose server has a clock the check reads: those leasing
/// reads, and Kubernetes', which its survey reports (the API server's
/// `Date`) though leasing judges by the hosts' clocks.
#[test]
fn a_clock_3_s_ahead_is_said_to_be_refused() {
    let _serial = serial();
    for backend in SERVER_CLOCKED.into_iter().chain(["kubernetes"]) {
        let out = flakegen(&[
            "leases",
            "check",
            &url(backend),
            "--clock-offset-ms",
            "3000",
        ]);
        let said = said(&out);
        assert_eq!(out.status.code(), Some(1), "{backend}: {said}");
        let clock = said
            .lines()
            .find(|l| l.contains(" clock ") && l.contains("ahead of"))
            .unwrap_or_else(|| panic!("{backend}: no judged clock: {said}"));
        assert!(clock.starts_with("FAIL"), "{backend}: {clock}");
        assert!(clock.contains("ahead of the registry's"), "{clock}");
        assert!(
            clock.contains("beyond the skew allowance of 2000 ms"),
            "{clock}"
        );
        assert!(clock.contains("Synchronise this host's clock"), "{clock}");
    }
}

/// A registry's test URL with a wrong password, or, where its credential
/// is a bearer token in a file (Kubernetes'), a file with a wrong one.
fn wrong_credentials(backend: &str) -> String {
    let url = url(backend);
    if url.contains("flakegen-test") {
        return url.replace("flakegen-test", "wrong-password");
    }
    let file =
        std::env::temp_dir().join(format!("flakegen-cli-wrong-token-{}", std::process::id()));
    std::fs::write(&file, "wrong-password").unwrap();
    let (base, query) = url.split_once('?').unwrap();
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some(("token_file", _)) => format!("token_file={}", file.display()),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

#[test]
fn a_wrong_password_is_said_as_such() {
    let _serial = serial();
    for backend in registries() {
        let wrong = wrong_credentials(backend);
        let out = flakegen(&["leases", "check", &wrong]);
        let said = said(&out);
        assert_eq!(out.status.code(), Some(1), "{backend}: {said}");
        let line = said.lines().find(|l| l.contains("credentials")).unwrap();
        assert!(line.starts_with("FAIL"), "{backend}: {said}");
        assert!(line.contains("refused the credentials"), "{line}");
        assert!(
            !said.contains("wrong-password"),
            "{backend}: a password printed: {said}"
        );
        // The listing says it too, on stderr.
        let out = flakegen(&["leases", &wrong, "--namespace", "any"]);
        assert_eq!(out.status.code(), Some(1), "{backend}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("refused the credentials"));
    }
}

#[test]
fn an_eviction_policy_that_may_drop_leases_is_said_with_the_fix() {
    let _serial = serial();
    let url = url("redis");
    let (host, port) = address(&url);
    let cli = |policy: &str| {
        services::client(
            "redis-cli",
            &[
                "-h",
                &host,
                "-p",
                &port,
                "-a",
                "flakegen-test",
                "--no-auth-warning",
                "CONFIG",
                "SET",
                "maxmemory-policy",
                policy,
            ],
        )
    };
    cli("allkeys-lru");
    let out = flakegen(&["leases", "check", &url]);
    cli("noeviction");
    let said = said(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let line = said
        .lines()
        .find(|l| l.contains("maxmemory-policy"))
        .unwrap();
    assert!(line.starts_with("FAIL"), "{said}");
    assert!(
        line.contains("allkeys-lru may evict lease records"),
        "{line}"
    );
    assert!(
        line.contains("set maxmemory-policy to noeviction"),
        "{line}"
    );
}

/// After its rows are all deleted (the sentinel with them), a namespace
/// that had records is said to have lost them, with what its generators
/// will do; one nobody used is told apart only by its spelling.
/// Short terms for the tests' leases and the commands that speak of them.
const TTL_MS: &str = "1000";
const SKEW_MS: &str = "500";

#[test]
fn a_namespace_whose_records_are_gone_is_said_so() {
    let _serial = serial();
    for backend in ["mysql", "postgres"] {
        let url = url(backend);
        let ns = format!("gone-{}-{}", std::process::id(), nanos());
        let terms = ["--ttl-ms", TTL_MS, "--skew-ms", SKEW_MS];
        let mut init = vec!["leases", "init", &url, "--namespace", &ns];
        init.extend(terms);
        assert!(flakegen(&init).status.success());
        let mut new = vec!["new", "--lease", &url, "--namespace", &ns, "--count", "1"];
        new.extend(terms);
        let out = flakegen(&new);
        assert!(out.status.success(), "{backend}: {}", said(&out));
        let out = flakegen(&["leases", "check", &url, "--namespace", &ns]);
        let line = said(&out)
            .lines()
            .find(|l| l.contains(&ns))
            .map(str::to_owned);
        assert!(
            line.as_deref().is_some_and(|l| l.starts_with("ok")),
            "{backend}: {line:?}"
        );
        let delete = "DELETE FROM flakegen_leases";
        match backend {
            "mysql" => {
                mariadb(&url, delete);
            }
            _ => {
                services::client("psql", &[&url, "-qc", delete]);
            }
        }
        let out = flakegen(&["leases", "check", &url, "--namespace", &ns]);
        let said = said(&out);
        // The marker's row went with the records: new and emptied look
        // alike, so a warning (generators are safe, after a wait).
        assert!(out.status.success(), "{backend}: {said}");
        let line = said.lines().find(|l| l.contains(&ns)).unwrap();
        assert!(line.starts_with("warn"), "{backend}: {line}");
        for words in ["no trace here", "registry lost it", "no ID is issued twice"] {
            assert!(line.contains(words), "{backend}: {line} lacks {words:?}");
        }
        let out = flakegen(&["leases", &url, "--namespace", &ns]);
        let text = self::said(&out);
        assert_eq!(out.status.code(), Some(1), "{backend}: {text}");
        assert!(text.contains("no trace here"), "{backend}: {text}");
        assert!(text.contains("Check its spelling"), "{backend}: {text}");
        assert!(!said.contains("leases init"), "{backend}: {said}");
    }
}

/// `leases init` marks a namespace and waits it out, saying so, so that
/// the build after it starts at once; run again on the namespace in use,
/// it has nothing to do. The URL may come from FLAKEGEN_LEASE_URL.
#[test]
fn a_namespace_made_ready_starts_at_once() {
    let _serial = serial();
    for backend in registries() {
        let url = url(backend);
        let ns = format!("init-{}-{}", std::process::id(), nanos());
        let init = || {
            Command::new(env!("CARGO_BIN_EXE_flakegen"))
                .args(["leases", "init", "--namespace", &ns])
                .args(["--ttl-ms", TTL_MS, "--skew-ms", SKEW_MS])
                .env("FLAKEGEN_LEASE_URL", &url)
                .output()
                .unwrap()
        };
        let new_in = |ns: &str| {
            let terms = ["--ttl-ms", TTL_MS, "--skew-ms", SKEW_MS];
            let mut args = vec!["new", "--lease", &url, "--namespace", ns, "--count", "1"];
            args.extend(terms);
            flakegen(&args)
        };
        let out = init();
        let text = said(&out);
        assert!(out.status.success(), "{backend}: {text}");
        for words in ["had no marker", "is ready: builds start at once"] {
            assert!(text.contains(words), "{backend}: {text} lacks {words:?}");
        }
        assert_waits(&text, "waiting ", backend);
        let out = new_in(&ns);
        let text = said(&out);
        assert!(out.status.success(), "{backend}: {text}");
        assert!(text.contains("lease acquired"), "{backend}: {text}");
        assert!(
            !text.contains("waits"),
            "{backend}: a ready namespace's build waited: {text}"
        );
        // Without init, the first build says at once that it waits, why,
        // and what pays that wait before services start.
        let fresh = format!("{ns}-fresh");
        let out = new_in(&fresh);
        let text = said(&out);
        assert!(out.status.success(), "{backend}: {text}");
        for words in ["marker", "flakegen leases init"] {
            assert!(text.contains(words), "{backend}: {text} lacks {words:?}");
        }
        assert_waits(&text, "the build waits ", backend);
        let out = init();
        let text = said(&out);
        assert!(out.status.success(), "{backend}: {text}");
        assert!(
            text.contains("nothing to do: builds start at once"),
            "{backend}: {text}"
        );
        let out = Command::new(env!("CARGO_BIN_EXE_flakegen"))
            .args(["leases", "check"])
            .env("FLAKEGEN_LEASE_URL", &url)
            .output()
            .unwrap();
        assert!(out.status.success(), "{backend}: {}", said(&out));
        assert!(
            !said(&out).contains("flakegen-test"),
            "{backend}: {}",
            said(&out)
        );
    }
}

/// `scripts/services.sh wipe SERVICE [ARG…]`: data deleted by hand.
fn wipe(backend: &str, args: &[&str]) {
    let mut all = vec!["wipe", services::service(backend)];
    all.extend(args);
    services::services(&all);
}

/// Sets its flag when dropped: stops issuing threads on every way out.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Issues an ID about every millisecond with `generator` until `stop`:
/// every ID issued, and when.
fn issue_until(generator: &dyn IdGenerator, stop: &AtomicBool, count: &AtomicUsize) -> Vec<u64> {
    let mut ids = vec![];
    while !stop.load(Ordering::Relaxed) {
        if let Ok(id) = generator.try_next_id() {
            ids.push(id.as_u64());
            count.fetch_add(1, Ordering::Relaxed);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    ids
}

/// The operator's night, on every registry, after each kind of wipe
/// (everything of flakegen's, one namespace, one record): generator A
/// issues; its data is deleted by hand; the operator runs `leases init`
/// at once and builds B the moment it returns. No ID is issued twice:
/// `init` waited until A's fence had passed. With the declaration `init`
/// made before, B took A's id at once and both issued it (1,824 IDs twice
/// in one trial on Redis). Then, on a namespace of its own, what the tools
/// say right after each kind of wipe: none says "ok" of the namespace,
/// and none advises a declaration.
#[test]
fn the_tools_advice_after_a_wipe_issues_no_id_twice() {
    let _serial = serial();
    std::thread::scope(|scope| {
        for backend in registries() {
            scope.spawn(move || {
                for kind in ["everything", "namespace", "record"] {
                    night(backend, kind);
                    told_after(backend, kind);
                }
            });
        }
    });
}

const TWO: Layout = Layout::builder().worker_bits(1).build_const();

/// A generator with the night's terms: a TTL of 3 s, a skew of 1 s.
fn night_generator(url: &str, ns: &str) -> flakegen::AtomicGenerator {
    night_lease(url, ns, true)
}

/// `night_generator`, leasing again after a loss or not (`reacquire`).
fn night_lease(url: &str, ns: &str, reacquire: bool) -> flakegen::AtomicGenerator {
    Builder::new()
        .layout(TWO)
        .lease(
            Lease::new(lease::connect(url).unwrap(), ns)
                .ttl(std::time::Duration::from_millis(3_000))
                .skew(std::time::Duration::from_millis(1_000))
                .reacquire(reacquire),
        )
        .max_wait(std::time::Duration::from_secs(6))
        .build_atomic()
        .unwrap()
}

/// Deletes `kind` of data under `a`'s namespace `ns`.
fn wipe_kind(backend: &str, kind: &str, ns: &str, a: &dyn IdGenerator) {
    let worker = a.worker().to_string();
    match kind {
        "everything" => wipe(backend, &[]),
        "namespace" => wipe(backend, &[ns]),
        _ => wipe(backend, &[ns, &worker]),
    }
}

/// A in this process, B a process of its own (`flakegen new`, IDs as fast
/// as it prints them): within one process, generators on one worker id are
/// kept apart by the process itself, which would hide the registry's rules.
fn night(backend: &str, kind: &str) {
    let url = url(backend);
    let ns = format!("night-{kind}-{}-{}", std::process::id(), nanos());
    let a = night_generator(&url, &ns);
    let stop = AtomicBool::new(false);
    let issued = AtomicUsize::new(0);
    let terms = ["--ttl-ms", "3000", "--skew-ms", "1000"];
    let (a_ids, b_ids) = std::thread::scope(|scope| {
        // However the scenario ends, by a failed assertion too, the
        // issuing thread stops, so the scope (and the test) ends.
        let _stop = StopOnDrop(&stop);
        let a_ids = scope.spawn(|| issue_until(&a, &stop, &issued));
        // A's namespace is new: it issues once its marker's wait is over.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while issued.load(Ordering::Relaxed) < 300 {
            assert!(
                std::time::Instant::now() < deadline,
                "{backend}: A issued nothing in 10 s: {:?}",
                a.lease()
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        wipe_kind(backend, kind, &ns, &a);
        let mut init = vec!["leases", "init", &url, "--namespace", &ns];
        init.extend(terms);
        let out = flakegen(&init);
        assert!(out.status.success(), "{backend}: {}", said(&out));
        let layout = TWO.to_string();
        let mut new = vec![
            "new",
            "--lease",
            &url,
            "--namespace",
            &ns,
            "--layout",
            &layout,
        ];
        new.extend(["--strategy", "atomic", "--count", "50000"]);
        new.extend(terms);
        let out = flakegen(&new);
        assert!(out.status.success(), "{backend}: B: {}", said(&out));
        let b_ids: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect();
        std::thread::sleep(std::time::Duration::from_secs(1));
        stop.store(true, Ordering::Relaxed);
        (a_ids.join().unwrap(), b_ids)
    });
    assert_eq!(b_ids.len(), 50_000, "{backend}, {kind} wiped: B");
    let a_set: std::collections::HashSet<u64> = a_ids.iter().copied().collect();
    let twice = b_ids.iter().filter(|id| a_set.contains(id)).count();
    assert_eq!(
        twice, 0,
        "{backend}, {kind} wiped: {twice} IDs issued by both A and B after `leases init`"
    );
}

/// What `leases check` (all namespaces, and this one) and `leases` say
/// right after `kind` of data was deleted under a running generator.
fn told_after(backend: &str, kind: &str) {
    let url = url(backend);
    let ns = format!("told-{kind}-{}-{}", std::process::id(), nanos());
    // A does not lease again once it finds its data gone: the tools are
    // asked about the wipe, and a heal that came first (its renewal every
    // second, a tool slow to start on a busy machine) made the namespace
    // whole again, which "ok" then rightly said.
    let a = night_lease(&url, &ns, false);
    a.next_id().unwrap();
    wipe_kind(backend, kind, &ns, &a);
    let wiped = std::time::Instant::now();
    let mut told = String::new();
    for args in [
        vec!["leases", "check", &url],
        vec!["leases", "check", &url, "--namespace", &ns],
        vec!["leases", &url, "--namespace", &ns],
    ] {
        let out = flakegen(&args);
        let text = said(&out);
        for line in text.lines() {
            let speaks_of_it = line.contains(&ns) || line.contains("namespaces ");
            // The generator under it marks the namespace again at its next
            // renewal: a marker younger than the wipe is the registry having
            // found the loss, whose wait every id now keeps (on a busy
            // machine the tool may come after that).
            let found_since = marker_age(line).is_some_and(|ago| ago < wiped.elapsed());
            assert!(
                !(line.starts_with("ok") && speaks_of_it && !found_since),
                "{backend}, {kind} wiped: {args:?} said ok of a namespace that lost its \
                 records: {line}"
            );
        }
        if kind == "record" && args.len() == 5 && args[1] == "check" {
            // The marker is left, so the registry knows an id was lost.
            let line = text.lines().find(|l| l.contains(&ns));
            assert!(
                out.status.code() == Some(1) && line.is_some_and(|l| l.starts_with("lost")),
                "{backend}, a record wiped: {line:?} ({:?})",
                out.status
            );
        }
        told.push_str(&text);
    }
    assert!(
        !told.contains("leases init") && !told.contains("declare"),
        "{backend}, {kind} wiped: a tool advised a declaration: {told}"
    );
    drop(a);
}

#[test]
fn the_listing_shows_a_running_generator_s_lease() {
    let _serial = serial();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    for backend in registries() {
        let url = url(backend);
        let namespace = format!("cli-{}-{nanos}", std::process::id());
        let registry = lease::connect(&url).unwrap();
        let generator = Builder::new()
            .layout(Layout::builder().worker_bits(3).build_const())
            .lease(Lease::new(registry, &namespace))
            .max_wait(std::time::Duration::from_secs(20))
            .build_atomic()
            .unwrap();
        let out = flakegen(&["leases", &url, "--namespace", &namespace, "--json"]);
        assert!(out.status.success(), "{backend}: {}", said(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let records = json["records"].as_array().unwrap();
        assert_eq!(records.len(), 1, "{backend}: {json}");
        let record = &records[0];
        assert_eq!(record["worker"], generator.worker(), "{backend}: {json}");
        assert_eq!(record["state"], "held", "{backend}: {json}");
        let fence = generator.lease().unwrap().fence;
        let fence_ms = fence.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        // The registry's fence is the generator's, or one renewal newer.
        assert!(
            record["fence_unix_ms"].as_u64().unwrap() >= fence_ms,
            "{backend}: {json}"
        );
        assert!(
            record["fence_ahead_ms"].as_i64().unwrap() > 0,
            "{backend}: {json}"
        );
        assert_eq!(
            json["marker_unix_ms"], record["marker_unix_ms"],
            "{backend}"
        );

        let out = flakegen(&["leases", &url, "--namespace", &namespace]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("1 records (1 held"), "{backend}: {text}");
        generator.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
        let out = flakegen(&["leases", &url, "--namespace", &namespace]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("1 records (0 held, 0 expired, 1 free"),
            "{backend}: {text}"
        );
    }
}

/// MariaDB's `innodb_flush_log_at_trx_commit`, set for a test and put back
/// as it was, even when the test fails.
struct FlushLog {
    url: String,
    was: String,
}

impl FlushLog {
    fn new(url: &str) -> FlushLog {
        let was = mariadb(url, "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit");
        FlushLog {
            url: url.to_owned(),
            was,
        }
    }

    fn set(&self, value: &str) {
        let sql = format!("SET GLOBAL innodb_flush_log_at_trx_commit = {value}");
        mariadb(&self.url, &sql);
    }
}

impl Drop for FlushLog {
    fn drop(&mut self) {
        self.set(&self.was);
    }
}

#[test]
fn settings_under_which_a_crash_forgets_renewals_are_said_with_the_fix() {
    let _serial = serial();
    let url = url("mysql");
    let flush = FlushLog::new(&url);
    for (value, status, level, words) in [
        (
            "0",
            1,
            "FAIL",
            "a crash of the server forgets up to a second of renewals",
        ),
        (
            "2",
            0,
            "warn",
            "a crash of the server's machine (not of the server alone)",
        ),
        ("1", 0, "ok", "no server setting lets a crash forget"),
    ] {
        flush.set(value);
        let out = flakegen(&["leases", "check", &url]);
        let text = said(&out);
        assert_eq!(out.status.code(), Some(status), "{value}: {text}");
        let lines = lines_on(&text, "durability");
        assert_eq!(lines.len(), 1, "{value}: {text}");
        assert!(lines[0].starts_with(level), "{value}: {text}");
        assert!(lines[0].contains(words), "{value}: {text}");
        if value != "1" {
            let setting = format!("innodb_flush_log_at_trx_commit = {value}");
            assert!(lines[0].contains(&setting), "{text}");
            assert!(lines[0].contains("set it to 1"), "{text}");
        }
    }
    drop(flush);

    // PostgreSQL's fsync is set when the server starts: the check must say
    // what the server says.
    let url = self::url("postgres");
    let fsync = services::client("psql", &[&url, "-tAc", "SHOW fsync"]);
    // A session whose server default is synchronous_commit = off (here the
    // URL's): the registry commits durably all the same, so it is no caveat.
    let commit_off = format!("{url}?options=-c%20synchronous_commit%3Doff");
    assert_eq!(
        services::client("psql", &[&commit_off, "-tAc", "SHOW synchronous_commit"]),
        "off"
    );
    let out = flakegen(&["leases", "check", &commit_off]);
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    let lines = lines_on(&text, "durability");
    assert_eq!(lines.len(), 1, "{text}");
    if fsync == "off" {
        assert!(lines[0].starts_with("warn"), "{text}");
        assert!(lines[0].contains("fsync = off"), "{text}");
        assert!(lines[0].contains("set fsync = on"), "{text}");
    } else {
        assert!(lines[0].starts_with("ok"), "{fsync}: {text}");
    }

    let out = flakegen(&["leases", "check", &self::url("redis")]);
    let text = said(&out);
    let lines = lines_on(&text, "durability");
    assert!(lines.len() == 1 && lines[0].starts_with("ok"), "{text}");
}

/// A short program (`flakegen new` with a lease) that exits right after
/// its generator is dropped leaves its id free, on every backend: the next
/// run takes it at once.
#[test]
fn a_short_program_leaves_its_id_free() {
    let _serial = serial();
    for backend in registries() {
        let url = url(backend);
        let ns = format!("short-{}-{}", std::process::id(), nanos());
        let out = flakegen(&["new", "--lease", &url, "--namespace", &ns, "--count", "2"]);
        assert!(out.status.success(), "{backend}: {}", said(&out));
        // Right after the process exited: the record is there, and free.
        let out = flakegen(&["leases", &url, "--namespace", &ns, "--json"]);
        assert!(out.status.success(), "{backend}: {}", said(&out));
        let listing: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let records = listing["records"].as_array().unwrap();
        assert!(!records.is_empty(), "{backend}: {listing}");
        for record in records {
            assert_eq!(record["state"], "free", "{backend}: {listing}");
        }
    }
}

/// Many `flakegen new` runs at once: with a lease each has an id of its
/// own, and no ID is made twice; without a worker source each says so.
#[test]
fn parallel_runs_make_no_id_twice() {
    let _serial = serial();
    let url = url("redis");
    let ns = format!("parallel-{}-{}", std::process::id(), nanos());
    let mut ids = Vec::new();
    for _round in 0..200 / 16 + 1 {
        let runs: Vec<_> = (0..16)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_flakegen"))
                    .args(["new", "--lease", &url, "--namespace", &ns, "--count", "3"])
                    .args(["--strategy", "atomic"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for run in runs {
            let out = run.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", said(&out));
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                ids.push(line.split_whitespace().next().unwrap().to_owned());
            }
        }
    }
    let count = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count, "IDs made twice across parallel runs");
    assert_eq!(count, 3 * 16 * (200 / 16 + 1));

    let out = flakegen(&["new", "--count", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    for words in ["--worker", "--worker-from", "--lease"] {
        assert!(said(&out).contains(words), "{}", said(&out));
    }
}

/// An operator's check right after a loss writes nothing a generator could
/// lease from: a holder from before the loss and a build after the check
/// issue no ID twice, on every backend.
#[test]
fn a_check_right_after_a_loss_leaves_the_loss_rule_whole() {
    let _serial = serial();
    const ONE: Layout = Layout::builder().worker_bits(0).build_const();
    for backend in SERVER_CLOCKED {
        let url = url(backend);
        let ns = format!("check-loss-{}-{}", std::process::id(), nanos());
        let terms = |ns: &str| {
            Lease::new(lease::connect(&url).unwrap(), ns)
                .ttl(std::time::Duration::from_secs(1))
                .skew(std::time::Duration::from_millis(500))
        };
        let a = Builder::new()
            .layout(ONE)
            .lease(terms(&ns).reacquire(false))
            .build_atomic()
            .unwrap();
        let mut ids: Vec<u64> = (0..100).map(|_| a.next_id().unwrap().as_u64()).collect();
        lose(backend, &url);
        let out = flakegen(&["leases", "check", &url, "--namespace", &ns]);
        assert!(
            said(&out).contains("permissions"),
            "{backend}: {}",
            said(&out)
        );
        let b = Builder::new()
            .layout(ONE)
            .lease(terms(&ns))
            .max_wait(std::time::Duration::from_secs(3))
            .build_atomic()
            .unwrap();
        // A issues to its fence meanwhile; B from its start on.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        while std::time::Instant::now() < deadline {
            if let Ok(id) = a.next_id() {
                ids.push(id.as_u64());
            }
            ids.push(b.next_id().unwrap().as_u64());
        }
        let count = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(
            ids.len(),
            count,
            "{backend}: IDs issued twice after the check"
        );
        drop(a);
        b.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    }
}

/// The span a tool's text begins with: "7 ms" or "1.2 s".
fn span(text: &str) -> Option<std::time::Duration> {
    let mut words = text.split(' ');
    let number: f64 = words.next()?.parse().ok()?;
    let unit = words.next()?.trim_end_matches([',', '.', ')', ':']);
    match unit {
        "ms" => Some(std::time::Duration::from_secs_f64(number / 1_000.0)),
        "s" => Some(std::time::Duration::from_secs_f64(number)),
        _ => None,
    }
}

/// How long ago `line` says the namespace's marker was written
/// ("vouched for since its marker, <time>, 7 ms ago").
fn marker_age(line: &str) -> Option<std::time::Duration> {
    let (_, rest) = line.split_once("vouched for since its marker, ")?;
    span(rest.split(" ago").next()?.rsplit(", ").next()?)
}

/// That `text` says, after `said`, a wait of the TTL and the skew (1.5 s)
/// at most, less the time its call took to say it on a busy machine.
fn assert_waits(text: &str, said: &str, backend: &str) {
    let waits = text.split(said).nth(1).and_then(span);
    assert!(
        waits.is_some_and(|w| !w.is_zero() && w <= std::time::Duration::from_millis(1_500)),
        "{backend}: {text} does not say {said:?} a wait of at most 1.5 s"
    );
}

fn nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The server at `url` loses its data: a TRUNCATE, or a Redis restart.
fn lose(backend: &str, url: &str) {
    match backend {
        "mysql" => {
            mariadb(url, "TRUNCATE flakegen_leases");
        }
        "postgres" => {
            services::client("psql", &[url, "-qc", "TRUNCATE flakegen_leases"]);
        }
        _ => {
            services::services(&["crash", "redis"]);
        }
    }
}

/// No password reaches the output, whatever the URL's shape: well formed,
/// with a character the URL syntax reserves, a scheme missing its slashes
/// or colon, libpq's key=value form, a `password=` parameter, a space
/// where the `@` belongs, at a server that refuses it, or at a port that
/// does not answer.
#[test]
fn no_password_is_printed_whatever_the_url() {
    let secret = "S3cret";
    let mut urls = vec![
        format!("redis//:{secret}@127.0.0.1:1/0"),
        format!("mysql:/app:{secret}@127.0.0.1:1/app"),
        format!("host=127.0.0.1 port=1 user=app password={secret} dbname=app"),
        format!("postgres://app:{secret}/x@127.0.0.1:1/app"),
        format!("mysql://app:{secret}@127.0.0.1:1"),
        format!("rediss://:{secret}@127.0.0.1:1/0?sslrootcert=/nonexistent"),
        format!("postgres://127.0.0.1:1/app?user=app&password={secret}"),
    ];
    for backend in registries() {
        // The real server, with a wrong password in each shape, and with
        // a space where the `@` belongs.
        let url = url(backend);
        let (host, port) = address(&url);
        let scheme = url.split_once("://").unwrap().0;
        urls.push(format!("{scheme}://app:{secret}@{host}:{port}/app"));
        urls.push(format!("{scheme}://app:{secret}%2F@{host}:{port}/app"));
        urls.push(format!("{scheme}://app:{secret} {host}:{port}/app"));
    }
    for url in &urls {
        for args in [
            vec!["leases", "check", url.as_str()],
            vec!["leases", url.as_str(), "--namespace", "n"],
            vec!["leases", url.as_str(), "--namespace", "n", "--json"],
            vec!["new", "--lease", url.as_str(), "--namespace", "n"],
        ] {
            let out = flakegen(&args);
            let said = said(&out);
            assert!(!out.status.success(), "{args:?}: {said}");
            assert!(
                !said.contains(secret),
                "{args:?} printed the password: {said}"
            );
        }
    }
}

/// `leases check` refuses the terms a generator would refuse: a TTL below
/// the least a renewal keeps up with, and a skew allowance of 0.
#[test]
fn the_check_refuses_terms_that_generators_refuse() {
    let url = url("redis");
    for (flag, value, words) in [
        ("--ttl-ms", "0", "the least a renewal can keep up with"),
        ("--skew-ms", "0", "skew allowance of 0"),
    ] {
        let out = flakegen(&["leases", "check", &url, flag, value]);
        let text = said(&out);
        assert_eq!(out.status.code(), Some(1), "{flag} {value}: {text}");
        let lines = lines_on(&text, "terms");
        assert_eq!(lines.len(), 1, "{flag} {value}: {text}");
        assert!(
            lines[0].starts_with("FAIL") && lines[0].contains(words),
            "{text}"
        );
    }
}

/// `leases check` of a registry 50 ms away each way says the round-trip
/// time it measured (never less than the delay), the round trips a build
/// and a renewal take, and, at a TTL of 1.5 s, warns where a renewal that
/// must reconnect would miss its fence: PostgreSQL's and MariaDB's set-ups
/// are several round trips (a reconnecting renewal 6 and 7 of them, 600 ms
/// at least, past the 500 ms a renewal has at these terms). A busy machine
/// only makes the time longer, and the warning more certain.
#[test]
fn a_far_registry_is_measured_and_tight_terms_are_warned_of() {
    let _serial = serial();
    for backend in registries() {
        let (far, _proxies) =
            toxiproxy::at_distance(&url(backend), Duration::from_millis(50), Duration::ZERO);
        let out = flakegen(&[
            "leases",
            "check",
            &far,
            "--ttl-ms",
            "1500",
            "--skew-ms",
            "500",
        ]);
        let text = said(&out);
        let lines = lines_on(&text, "distance");
        let rtt: f64 = lines
            .iter()
            .find_map(|l| l.split("a round trip takes ").nth(1))
            .and_then(|rest| rest.split(" ms").next())
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("{backend}: no round-trip time said: {text}"));
        assert!(
            rtt >= 100.0,
            "{backend}: a round trip of {rtt} ms, under the delay: {text}"
        );
        assert!(
            lines[0].contains("round trips on a new connection"),
            "{backend}: {text}"
        );
        if matches!(backend, "postgres" | "mysql") {
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with("warn") && l.contains("a renewal that must reconnect")),
                "{backend}: no warning of a renewal that cannot reconnect in time: {text}"
            );
        }
    }
}

/// `leases check` of a Redis 350 ms away each way, at a TTL of 3 s, warns
/// that a renewal's one round trip (700 ms at least) outlasts the 600 ms
/// its call may wait on an open connection: every renewal would be taken
/// for a dead connection. Redis, whose other steps are few round trips, so
/// that this warning is the one that must come.
#[test]
fn a_renewal_slower_than_its_call_bound_is_warned_of() {
    let _serial = serial();
    let (far, _proxies) =
        toxiproxy::at_distance(&url("redis"), Duration::from_millis(350), Duration::ZERO);
    let out = flakegen(&[
        "leases",
        "check",
        &far,
        "--ttl-ms",
        "3000",
        "--skew-ms",
        "500",
    ]);
    let text = said(&out);
    assert!(
        lines_on(&text, "distance")
            .iter()
            .any(|l| l.starts_with("warn") && l.contains("its call may wait on an open connection")),
        "no warning of a renewal slower than its call's bound: {text}"
    );
}

/// A Kubernetes token whose Role lacks one verb on leases: the check
/// fails, and names the verb, asked of the API server itself (a
/// SelfSubjectAccessReview), and met when it writes.
#[test]
fn a_role_missing_a_verb_is_named_by_the_check() {
    let _serial = serial();
    for verb in ["update", "list"] {
        let file = services::services(&["token-without", "kubernetes", verb]);
        let url = url("kubernetes");
        let (base, query) = url.split_once('?').unwrap();
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some(("token_file", _)) => format!("token_file={file}"),
                _ => pair.to_owned(),
            })
            .collect();
        let url = format!("{base}?{}", query.join("&"));
        let out = flakegen(&["leases", "check", &url]);
        let said = said(&out);
        assert_eq!(out.status.code(), Some(1), "{verb}: {said}");
        let access = lines_on(&said, "access");
        assert!(
            access.len() == 1
                && access[0].starts_with("FAIL")
                && access[0].contains(&format!("may not {verb} leases")),
            "{verb}: {said}"
        );
    }
}

/// In a pod, `kube:///PREFIX` is the whole configuration: the API server
/// from `KUBERNETES_SERVICE_HOST` and `_PORT` (an address, verified
/// against the certificate's IP names), the service account's token, CA
/// and namespace from where Kubernetes mounts them. The pod is a mount
/// namespace of its own (as root, with util-linux's `unshare`), with the
/// test server's files at that place.
#[test]
fn in_a_pod_kube_prefix_is_the_whole_configuration() {
    let _serial = serial();
    let url = url("kubernetes");
    let param = |name: &str| {
        url.split(['?', '&'])
            .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
            .unwrap()
            .to_owned()
    };
    let (host, port) = address(&url);
    let account = "/run/secrets/kubernetes.io/serviceaccount";
    let pod = |args: &str| {
        let script = format!(
            "mount -t tmpfs tmpfs /run && mkdir -p {account} && cp {token} {account}/token && \
             cp {ca} {account}/ca.crt && printf flakegen > {account}/namespace && exec {bin} {args}",
            token = param("token_file"),
            ca = param("ca_file"),
            bin = env!("CARGO_BIN_EXE_flakegen"),
        );
        let out = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .env("KUBERNETES_SERVICE_HOST", &host)
            .env("KUBERNETES_SERVICE_PORT", &port)
            .output()
            .unwrap();
        (out.status.success(), said(&out))
    };
    let (ok, check) = pod("leases check kube:///flakegen");
    assert!(ok, "{check}");
    assert!(
        lines_on(&check, "tls")[0].contains("host name verified"),
        "{check}"
    );
    assert!(lines_on(&check, "access")[0].starts_with("ok"), "{check}");
    let (ok, id) = pod("new --lease kube:///flakegen --namespace in-a-pod");
    assert!(ok, "{id}");
}

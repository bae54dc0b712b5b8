//! `scripts/services.sh` as the tests call it: the variables its `start`
//! exports, its verbs, which every service takes alike, and the servers'
//! own command-line clients.
//!
//! It names no registry's feature, so a crate that builds every registry
//! without features of its own (the CLI's tests) includes it as it is:
//! `#[path = "../../tests/common/services.rs"]`.

use std::ffi::OsStr;
use std::fmt::Debug;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The service of `scripts/services.sh` that serves a registry, named by
/// its feature (`lease::RegistryKind::feature`).
pub fn service(registry: &str) -> &'static str {
    match registry {
        "postgres" => "postgres",
        "redis" => "redis",
        "mysql" => "mariadb",
        "etcd" => "etcd",
        "kubernetes" => "kubernetes",
        other => panic!("no test service serves the registry {other}"),
    }
}

/// A registry's own test server's URL (the cluster's, for etcd), the
/// registry named by its feature: `FLAKEGEN_TEST_<REGISTRY>_URL`, and
/// `<REGISTRY>_<rest>_URL` for another of its URLs (`TLS`, a pair's member
/// `A` or `B`).
pub fn url(registry: &str, rest: &str) -> String {
    let name = registry.to_ascii_uppercase();
    if rest.is_empty() {
        env(&format!("FLAKEGEN_TEST_{name}_URL"))
    } else {
        env(&format!("FLAKEGEN_TEST_{name}_{rest}_URL"))
    }
}

/// A CA that signed nothing the test servers use.
pub fn unknown_ca() -> String {
    env("FLAKEGEN_TEST_OTHER_CA")
}

/// A variable `scripts/services.sh start` exports; fails, saying how to
/// start the servers, when it is not set: the tests never pass by skipping.
pub fn env(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: start the test servers with \
             `eval \"$(scripts/services.sh start)\"` (or run without the feature)"
        )
    })
}

/// Runs `scripts/services.sh` with `args`; returns what it printed.
pub fn services(args: &[&str]) -> String {
    // The workspace's, from whichever member's tests this is.
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|dir| dir.join("scripts/services.sh"))
        .find(|script| script.exists())
        .expect("scripts/services.sh above the crate's manifest");
    let output = Command::new("bash")
        .arg(script)
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "services.sh {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Sends `signal` to every process in `pids`.
pub fn signal_all(pids: &[String], signal: &str) {
    // A process that exited meanwhile has nothing to signal.
    let _ = Command::new("kill")
        .arg(signal)
        .args(pids)
        .stderr(Stdio::null())
        .status();
}

/// Runs a server's command-line client until it succeeds, and returns what
/// it printed; a failure to connect (a server just thawed or restarted may
/// take a while to accept) is tried again for at most 10 s, any other fails.
pub fn client<S: AsRef<OsStr> + Debug>(program: &str, args: &[S]) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let output = Command::new(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "{program}: {e} (start the servers with scripts/services.sh, which \
                     installs it)"
                )
            });
        if output.status.success() {
            return String::from_utf8_lossy(&output.stdout).trim().to_owned();
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let unconnected = ["Can't connect", "could not connect", "Connection refused"]
            .iter()
            .any(|said| stderr.contains(said));
        assert!(
            unconnected && Instant::now() < deadline,
            "{program} {args:?}: {stderr}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

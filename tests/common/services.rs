//! `scripts/services.sh` as the tests call it: the variables its `start`
//! exports, its verbs, which every service takes alike, and the servers'
//! own command-line clients.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/services.sh");
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

/// Runs a server's command-line client until it succeeds; a failure to
/// connect (a server just thawed or restarted may take a while to accept)
/// is tried again for at most 10 s, any other fails.
pub fn client(program: &str, args: &[String]) {
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
            return;
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

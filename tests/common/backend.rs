//! The lease backends whose features are on: what the tests need to know
//! of each (one file per backend beside this one, listed once in [`ALL`]),
//! and their servers from `scripts/services.sh`: a server of its own per
//! backend, and a replicated pair (see `pair.rs`).

use std::path::Path;
use std::process::{Command, Stdio};

/// A lease backend under test: its facts, in its own file.
pub struct Backend {
    /// Its name in test output and on a test's command line.
    pub name: &'static str,
    /// The middle of its servers' URL variables: `FLAKEGEN_TEST_<env>_URL`.
    pub env: &'static str,
    /// Its server in `scripts/services.sh`; its pair is `<service>-pair`.
    pub service: &'static str,
    /// How its data is lost: a statement, or (`None`) a restart, for a
    /// server that keeps nothing (Redis).
    pub truncate: Option<&'static str>,
    /// Runs SQL as the server's administrator, through its own client.
    pub admin: Option<fn(url: &str, sql: &str)>,
    /// The pid file of its server, or of a pair's member, under the
    /// services' directory.
    pub pid_file: fn(member: Option<&str>) -> String,
    /// Whether `services.sh crash` takes it (SIGKILL, then a start).
    pub crashes: bool,
}

/// Every backend whose feature is on: the one list a new backend joins.
pub const ALL: &[&Backend] = &[
    #[cfg(feature = "postgres")]
    &super::postgres::BACKEND,
    #[cfg(feature = "redis")]
    &super::redis::BACKEND,
    #[cfg(feature = "mysql")]
    &super::mysql::BACKEND,
];

impl Backend {
    /// Its own test server's URL.
    pub fn url(&self) -> String {
        env(&format!("FLAKEGEN_TEST_{}_URL", self.env))
    }

    /// Its own test server's URL over TLS, verified against the test CA: a
    /// role that PostgreSQL takes over TLS only; Redis's TLS-only port; a
    /// MariaDB user that `REQUIRE SSL`.
    pub fn tls_url(&self) -> String {
        env(&format!("FLAKEGEN_TEST_{}_TLS_URL", self.env))
    }

    /// The URL of a member (`a` or `b`) of its replicated pair.
    pub fn member_url(&self, member: &str) -> String {
        env(&format!(
            "FLAKEGEN_TEST_{}_{}_URL",
            self.env,
            member.to_ascii_uppercase()
        ))
    }

    /// `scripts/services.sh <action> <service>`, for its own server.
    pub fn services(&self, action: &str) {
        services(&[action, self.service]);
    }

    /// Loses the data of its server at `url`: the statement, or a crash
    /// of the server (`crash`) for one that keeps nothing.
    pub fn lose_data(&self, url: &str, crash: impl FnOnce()) {
        match (self.truncate, self.admin) {
            (Some(sql), Some(admin)) => admin(url, sql),
            _ => crash(),
        }
    }

    /// Runs `sql` on the server at `url` as its administrator.
    pub fn sql(&self, url: &str, sql: &str) {
        let admin = self
            .admin
            .unwrap_or_else(|| panic!("{} takes no SQL", self.name));
        admin(url, sql);
    }

    /// The processes of its server (or of a pair's member), to freeze:
    /// the main one and its children.
    pub fn server_pids(&self, member: Option<&str>) -> Vec<String> {
        let main = std::fs::read_to_string(services_dir().join((self.pid_file)(member)));
        let Some(main) = main.ok().and_then(|t| t.lines().next().map(str::to_owned)) else {
            return vec![];
        };
        let children = Command::new("pgrep").args(["-P", &main]).output();
        let children = children.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        let mut pids = vec![main];
        pids.extend(
            children
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned),
        );
        pids
    }
}

/// The backend named `name`, if its feature is on.
pub fn named(name: &str) -> Option<&'static Backend> {
    ALL.iter().copied().find(|b| b.name == name)
}

/// A CA that signed nothing the test servers use.
pub fn unknown_ca() -> String {
    env("FLAKEGEN_TEST_OTHER_CA")
}

/// The services' directory, as `scripts/services.sh` has it.
pub fn services_dir() -> std::path::PathBuf {
    std::env::var("FLAKEGEN_SERVICES_DIR")
        .unwrap_or_else(|_| "/tmp/flakegen-services".to_owned())
        .into()
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
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
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
            unconnected && std::time::Instant::now() < deadline,
            "{program} {args:?}: {stderr}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

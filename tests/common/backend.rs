//! The lease backends whose features are on, their test servers' URLs, and
//! the faults a test can put on those servers.

use std::path::Path;
use std::process::{Command, Stdio};

/// A lease backend under test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backend {
    #[cfg(feature = "postgres")]
    Postgres,
    #[cfg(feature = "redis")]
    Redis,
}

impl Backend {
    /// Every backend whose feature is on.
    pub fn all() -> Vec<Backend> {
        vec![
            #[cfg(feature = "postgres")]
            Backend::Postgres,
            #[cfg(feature = "redis")]
            Backend::Redis,
        ]
    }

    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => "postgres",
            #[cfg(feature = "redis")]
            Backend::Redis => "redis",
        }
    }

    /// The test server's URL; fails, saying how to start the servers, when
    /// it is not set: the tests never pass by skipping.
    pub fn url(self) -> String {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => env("FLAKEGEN_TEST_POSTGRES_URL"),
            #[cfg(feature = "redis")]
            Backend::Redis => env("FLAKEGEN_TEST_REDIS_URL"),
        }
    }

    /// The test server's URL over TLS, verified against the test CA: a role
    /// that PostgreSQL takes over TLS only; Redis's TLS-only port.
    pub fn tls_url(self) -> String {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => env("FLAKEGEN_TEST_POSTGRES_TLS_URL"),
            #[cfg(feature = "redis")]
            Backend::Redis => env("FLAKEGEN_TEST_REDIS_TLS_URL"),
        }
    }
}

/// A CA that signed nothing the test servers use.
pub fn unknown_ca() -> String {
    env("FLAKEGEN_TEST_OTHER_CA")
}

/// A variable `scripts/services.sh start` exports; fails, saying how to
/// start the servers, when it is not set: the tests never pass by skipping.
fn env(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: start the test servers with \
             `eval \"$(scripts/services.sh start)\"` (or run without the feature)"
        )
    })
}

impl Backend {
    /// Stops or starts this backend's server with the services script.
    pub fn services(self, action: &str) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/services.sh");
        let status = Command::new("bash")
            .arg(script)
            .args([action, self.name()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(
            status.success(),
            "services.sh {action} {} failed",
            self.name()
        );
    }

    /// The server's processes, to freeze: Redis's one, or PostgreSQL's
    /// postmaster and its backends.
    pub fn server_pids(self) -> Vec<String> {
        let dir = std::env::var("FLAKEGEN_SERVICES_DIR")
            .unwrap_or_else(|_| "/tmp/flakegen-services".to_owned());
        let main = match self.name() {
            "redis" => std::fs::read_to_string(format!("{dir}/redis.pid")),
            _ => std::fs::read_to_string(format!("{dir}/postgres/postmaster.pid")),
        };
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

    /// Loses the registry's data: `TRUNCATE` on PostgreSQL, a crash and a
    /// start on Redis (which runs without persistence).
    pub fn lose_data(self) {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => {
                // Before flakegen first connects there is no table, and nothing to lose.
                self.sql(
                    "DO $$ BEGIN IF to_regclass('flakegen_leases') IS NOT NULL THEN \
                     TRUNCATE flakegen_leases; END IF; END $$",
                );
            }
            #[cfg(feature = "redis")]
            Backend::Redis => self.services("crash"),
        }
    }
}

impl Backend {
    /// Takes away the index a registry keeps beside its records, as a
    /// namespace written by an older flakegen has none: the PostgreSQL
    /// table's partial indexes and the namespace's cursor row; the Redis
    /// namespace's index keys.
    pub fn forget_index(self, namespace: &str) {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => self.sql(
                "DROP INDEX IF EXISTS flakegen_leases_free, flakegen_leases_held; \
                 DELETE FROM flakegen_leases WHERE worker = -2",
            ),
            #[cfg(feature = "redis")]
            Backend::Redis => {
                let url = self.url();
                let (password, address) =
                    url.trim_start_matches("redis://:").split_once('@').unwrap();
                let (host, port) = address.split('/').next().unwrap().split_once(':').unwrap();
                let keys = ["era", "free", "held", "recorded"]
                    .map(|k| format!("flakegen:{{{namespace}}}:{k}"));
                let status = Command::new("redis-cli")
                    .args([
                        "-h",
                        host,
                        "-p",
                        port,
                        "-a",
                        password,
                        "--no-auth-warning",
                        "DEL",
                    ])
                    .args(keys)
                    .stdout(Stdio::null())
                    .status()
                    .unwrap();
                assert!(status.success(), "redis-cli DEL failed");
            }
        }
    }
}

impl Backend {
    /// Runs `sql` on the test server as its administrator, through the
    /// server's own command-line client (installed with the server).
    pub fn sql(self, sql: &str) {
        let (program, args): (&str, Vec<String>) = match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => (
                "psql",
                vec![self.url(), "-qAt".into(), "-c".into(), sql.into()],
            ),
            #[cfg(feature = "redis")]
            Backend::Redis => panic!("Redis takes no SQL"),
        };
        let output = Command::new(program)
            .args(&args)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "{program}: {e} (start the servers with scripts/services.sh, which installs it)"
                )
            });
        assert!(
            output.status.success(),
            "{program} -c {sql:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Sends `signal` to every process in `pids`.
pub fn signal_all(pids: &[String], signal: &str) {
    // A backend that exited meanwhile has nothing to signal.
    let _ = Command::new("kill")
        .arg(signal)
        .args(pids)
        .stderr(Stdio::null())
        .status();
}

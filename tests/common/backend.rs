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
    #[cfg(feature = "mysql")]
    Mysql,
}

impl Backend {
    /// Every backend whose feature is on.
    pub fn all() -> Vec<Backend> {
        vec![
            #[cfg(feature = "postgres")]
            Backend::Postgres,
            #[cfg(feature = "redis")]
            Backend::Redis,
            #[cfg(feature = "mysql")]
            Backend::Mysql,
        ]
    }

    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => "postgres",
            #[cfg(feature = "redis")]
            Backend::Redis => "redis",
            #[cfg(feature = "mysql")]
            Backend::Mysql => "mysql",
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
            #[cfg(feature = "mysql")]
            Backend::Mysql => env("FLAKEGEN_TEST_MYSQL_URL"),
        }
    }

    /// The test server's URL over TLS, verified against the test CA: a role
    /// that PostgreSQL takes over TLS only; Redis's TLS-only port; a
    /// MariaDB user that `REQUIRE SSL`.
    pub fn tls_url(self) -> String {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => env("FLAKEGEN_TEST_POSTGRES_TLS_URL"),
            #[cfg(feature = "redis")]
            Backend::Redis => env("FLAKEGEN_TEST_REDIS_TLS_URL"),
            #[cfg(feature = "mysql")]
            Backend::Mysql => env("FLAKEGEN_TEST_MYSQL_TLS_URL"),
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
    /// The server's name in `scripts/services.sh`.
    pub fn service(self) -> &'static str {
        match self.name() {
            "mysql" => "mariadb",
            name => name,
        }
    }

    /// Stops or starts this backend's server with the services script.
    pub fn services(self, action: &str) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/services.sh");
        let status = Command::new("bash")
            .arg(script)
            .args([action, self.service()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(
            status.success(),
            "services.sh {action} {} failed",
            self.service()
        );
    }

    /// The server's processes, to freeze: Redis's or MariaDB's one, or
    /// PostgreSQL's postmaster and its backends.
    pub fn server_pids(self) -> Vec<String> {
        let dir = std::env::var("FLAKEGEN_SERVICES_DIR")
            .unwrap_or_else(|_| "/tmp/flakegen-services".to_owned());
        let main = match self.name() {
            "redis" => std::fs::read_to_string(format!("{dir}/redis.pid")),
            "mysql" => std::fs::read_to_string(format!("{dir}/mariadb/mariadb.pid")),
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

    /// Loses the registry's data: `TRUNCATE` on PostgreSQL and MariaDB, a
    /// crash and a start on Redis (which runs without persistence).
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
            #[cfg(feature = "mysql")]
            Backend::Mysql => self.sql(
                // TRUNCATE drops and recreates the table: its stamp changes.
                "SET @t = IF((SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_name = 'flakegen_leases') > 0, \
                 'TRUNCATE flakegen_leases', 'DO 0'); \
                 PREPARE s FROM @t; EXECUTE s; DEALLOCATE PREPARE s",
            ),
        }
    }
}

impl Backend {
    /// Runs `sql` on the test server as its administrator, through the
    /// server's own command-line client (installed with the server).
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub fn sql(self, sql: &str) {
        let (program, args): (&str, Vec<String>) = match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => (
                "psql",
                vec![self.url(), "-qAt".into(), "-c".into(), sql.into()],
            ),
            #[cfg(feature = "redis")]
            Backend::Redis => panic!("Redis takes no SQL"),
            #[cfg(feature = "mysql")]
            Backend::Mysql => {
                // mysql://user:password@host:port/database
                let url = self.url();
                let rest = url.trim_start_matches("mysql://");
                let (credentials, rest) = rest.split_once('@').unwrap();
                let (user, password) = credentials.split_once(':').unwrap();
                let (address, database) = rest.split_once('/').unwrap();
                let (host, port) = address.split_once(':').unwrap();
                let database = database.split('?').next().unwrap();
                // A statement that waits on a lock (a TRUNCATE behind a
                // client's open transaction) fails after 10 s, never hangs.
                let sql = &format!("SET SESSION lock_wait_timeout = 10; {sql}");
                (
                    "mariadb",
                    [
                        "-h", host, "-P", port, "-u", user, database, "-N", "-e", sql,
                    ]
                    .map(String::from)
                    .into_iter()
                    .chain([format!("-p{password}")])
                    .collect(),
                )
            }
        };
        // A server just thawed or restarted may take a while to accept
        // (the connections its clients gave up on queue first): a failure
        // to connect is tried again, for at most 10 s; any other fails.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let output = Command::new(program)
                .args(&args)
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
                "{program} -c {sql:?}: {stderr}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
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

/// Each backend's server runs the lease contract suite of `flakegen-contract`.
impl flakegen_contract::Fixture for Backend {
    fn name(&self) -> &str {
        Backend::name(*self)
    }

    fn registry(&self) -> std::sync::Arc<dyn flakegen::lease::backend::Registry> {
        flakegen::lease::connect(&self.url()).unwrap()
    }

    fn lose_data(&self) {
        Backend::lose_data(*self);
    }

    fn freeze(&self) -> Option<flakegen_contract::Frozen> {
        let pids = self.server_pids();
        assert!(!pids.is_empty(), "no {} server to freeze", self.service());
        signal_all(&pids, "-STOP");
        Some(flakegen_contract::Frozen::new(move || {
            signal_all(&pids, "-CONT")
        }))
    }
}

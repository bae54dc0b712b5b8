//! Leases at fleet scale: what a renewal costs, and what building a leased
//! generator costs, with the longest call each makes on the registry's
//! server, by the width of the worker field (4, 10, 13 and 16 bits) and the
//! number of ids already held (1, 100 and 1,000), on every backend whose
//! feature is on.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo bench --all-features --bench lease_scale
//! FLAKEGEN_BENCH_QUICK=1 cargo bench --all-features --bench lease_scale   # a smoke run
//! cargo bench --all-features --bench lease_scale -- renewals              # the renewals alone
//! cargo bench --all-features --bench lease_scale -- crowds                # first builds at once, alone
//! ```
//!
//! Each case leases its holders straight through the registry (records
//! held for ten minutes), then builds a generator in that namespace and
//! gives its id back, again and again; the build time is the median (and
//! p90) of those builds, as a service starting up pays it. The longest
//! server-side call is the server's own measure, over those builds: Redis'
//! `SLOWLOG`, PostgreSQL's `pg_stat_statements`, MariaDB's slow query log
//! (each switched on by this benchmark, through the servers' command-line
//! clients); etcd and the Kubernetes API server keep none, so their column
//! shows `NaN`. It needs the
//! servers of `scripts/services.sh`, which starts PostgreSQL with
//! `pg_stat_statements` loaded.

#![allow(missing_docs)] // a binary's items

use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakegen::lease::backend::{Expect, NewRecord, Registry};
use flakegen::lease::{self, Lease};
use flakegen::{Builder, IdGenerator, Layout};

const WORKER_BITS: [u32; 4] = [4, 10, 13, 16];
const HOLDERS: [u64; 3] = [1, 100, 1_000];

/// A backend under measurement: its URL, and how to read its server's
/// longest call.
struct Server {
    name: &'static str,
    url: String,
    stats: Box<dyn Fn(Stat) -> Result<f64, String>>,
}

/// What to ask of a server's statistics.
#[derive(Clone, Copy)]
enum Stat {
    /// Start counting afresh.
    Reset,
    /// The longest call since, in ms.
    Longest,
}

fn env(var: &str) -> Result<String, String> {
    std::env::var(var).map_err(|_| {
        format!("{var} is not set: start the servers with `eval \"$(scripts/services.sh start)\"`")
    })
}

/// Runs a command-line client; its standard output.
fn run(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `user:password@host:port` of a URL, split.
fn parts(url: &str) -> (String, String, String, String) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (credentials, address) = rest.split_once('@').unwrap_or(("", rest));
    let (user, password) = credentials.split_once(':').unwrap_or((credentials, ""));
    let address = address.split(['/', '?']).next().unwrap_or("");
    let (host, port) = address.split_once(':').unwrap_or((address, ""));
    (user.into(), password.into(), host.into(), port.into())
}

fn servers() -> Result<Vec<Server>, String> {
    #[allow(unused_mut)]
    let mut servers: Vec<Server> = vec![];
    #[cfg(feature = "postgres")]
    {
        let url = env("FLAKEGEN_TEST_POSTGRES_URL")?;
        let (user, password, host, port) = parts(&url);
        let psql = move |sql: &str| {
            run(
                "psql",
                &[
                    "-h", &host, "-p", &port, "-U", &user, "-d", "postgres", "-Atqc", sql,
                ],
                &[("PGPASSWORD", &password)],
            )
        };
        psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").map_err(|e| {
            format!(
                "{e}: start PostgreSQL with scripts/services.sh, which loads pg_stat_statements"
            )
        })?;
        servers.push(Server {
            name: "PostgreSQL",
            url,
            stats: Box::new(move |stat| match stat {
                Stat::Reset => psql("SELECT pg_stat_statements_reset()").map(|_| 0.0),
                Stat::Longest => psql(
                    "SELECT coalesce(max(max_exec_time), 0) FROM pg_stat_statements \
                     WHERE query LIKE '%flakegen_leases%'",
                )?
                .trim()
                .parse()
                .map_err(|e| format!("pg_stat_statements: {e}")),
            }),
        });
    }
    #[cfg(feature = "redis")]
    {
        let url = env("FLAKEGEN_TEST_REDIS_URL")?;
        let (_, password, host, port) = parts(&url);
        let cli = move |args: &[&str]| {
            let mut all = vec![
                "-h",
                &host,
                "-p",
                &port,
                "-a",
                &password,
                "--no-auth-warning",
            ];
            all.extend_from_slice(args);
            run("redis-cli", &all, &[])
        };
        servers.push(Server {
            name: "Redis",
            url,
            stats: Box::new(move |stat| match stat {
                Stat::Reset => {
                    cli(&["CONFIG", "SET", "slowlog-log-slower-than", "0"])?;
                    cli(&["CONFIG", "SET", "slowlog-max-len", "100000"])?;
                    cli(&["SLOWLOG", "RESET"]).map(|_| 0.0)
                }
                Stat::Longest => {
                    let entries: serde_json::Value =
                        serde_json::from_str(&cli(&["--json", "SLOWLOG", "GET", "-1"])?)
                            .map_err(|e| format!("SLOWLOG: {e}"))?;
                    // [id, time, µs, [command, args...], client, name]
                    let longest = entries
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|e| e[3][0].as_str().is_some_and(|c| c.starts_with("EVAL")))
                        .filter_map(|e| e[2].as_f64())
                        .fold(0.0, f64::max);
                    Ok(longest / 1_000.0)
                }
            }),
        });
    }
    #[cfg(feature = "mysql")]
    {
        let url = env("FLAKEGEN_TEST_MYSQL_URL")?;
        let (user, password, host, port) = parts(&url);
        let sql = move |sql: &str| {
            run(
                "mariadb",
                &["-h", &host, "-P", &port, "-u", &user, "-N", "-e", sql],
                &[("MYSQL_PWD", &password)],
            )
        };
        // Every statement, into the table mysql.slow_log: set before any
        // connection opens, as a session takes long_query_time when it does.
        sql(
            "SET GLOBAL log_output = 'TABLE', GLOBAL long_query_time = 0, \
             GLOBAL slow_query_log = 1",
        )?;
        servers.push(Server {
            name: "MariaDB",
            url,
            stats: Box::new(move |stat| match stat {
                Stat::Reset => sql("TRUNCATE mysql.slow_log").map(|_| 0.0),
                Stat::Longest => sql(
                    // TIME_TO_SEC keeps a TIME(6)'s microseconds.
                    "SELECT COALESCE(MAX(TIME_TO_SEC(query_time)), 0) * 1000 FROM mysql.slow_log \
                     WHERE sql_text LIKE '%flakegen_leases%' \
                     AND sql_text NOT LIKE '%slow_log%'",
                )?
                .trim()
                .parse()
                .map_err(|e| format!("mysql.slow_log: {e}")),
            }),
        });
    }
    #[cfg(feature = "etcd")]
    {
        // etcd keeps no log of slow requests: the client's times only.
        servers.push(Server {
            name: "etcd",
            url: env("FLAKEGEN_TEST_ETCD_URL")?,
            stats: Box::new(|stat| match stat {
                Stat::Reset => Ok(0.0),
                Stat::Longest => Ok(f64::NAN),
            }),
        });
    }
    #[cfg(feature = "kubernetes")]
    {
        // The API server keeps no log of slow requests either: the
        // client's times only. Its read is a LIST of every Lease of the
        // namespace (ReadCost::EveryRecord): the rows by holders show it.
        servers.push(Server {
            name: "kubernetes",
            url: env("FLAKEGEN_TEST_KUBERNETES_URL")?,
            stats: Box::new(|stat| match stat {
                Stat::Reset => Ok(0.0),
                Stat::Longest => Ok(f64::NAN),
            }),
        });
    }
    if servers.is_empty() {
        return Err(
            "no lease backend: build with --features postgres,redis,mysql,etcd,kubernetes".into(),
        );
    }
    Ok(servers)
}

/// Leases ids `0..holders` of `namespace` to holders of their own, for ten
/// minutes, through the registry.
fn hold(registry: &dyn Registry, namespace: &str, holders: u64) -> Result<(), String> {
    let marker = registry.mark(namespace).map_err(|e| e.to_string())?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    for worker in 0..holders {
        let holder = format!("bench-holder-{worker}");
        let record = NewRecord {
            holder: &holder,
            version: worker + 1,
            ttl_millis: 600_000,
            fence_unix_millis: now + 600_000,
        };
        let expect = Expect {
            marker_unix_millis: marker,
            version: None,
        };
        registry
            .swap(namespace, worker, expect, &record)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("id {worker} of {namespace} was taken"))?;
    }
    Ok(())
}

/// `count` namespaces per server, made ready for builds that start at once
/// (`Lease::prepare` on `terms`, what `flakegen leases init` does), all
/// marked first and then waited out together: each case takes one, so the
/// run pays the marker's wait (the TTL and the skew, 12 s at the defaults)
/// once, not once a case.
fn ready_namespaces(
    servers: &[Server],
    count: usize,
    kind: &str,
    terms: impl Fn(Arc<dyn Registry>, &str) -> Lease,
) -> Result<Vec<Vec<String>>, String> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mut pools = vec![];
    let mut leases = vec![];
    for server in servers {
        let registry: Arc<dyn Registry> = lease::connect(&server.url).map_err(|e| e.to_string())?;
        let names: Vec<String> = (0..count).map(|i| format!("{kind}-{nanos}-{i}")).collect();
        for name in &names {
            leases.push(terms(Arc::clone(&registry), name));
        }
        pools.push(names);
    }
    loop {
        let mut wait = Duration::ZERO;
        for lease in &leases {
            wait = wait.max(lease.prepare().map_err(|e| e.to_string())?.wait());
        }
        if wait.is_zero() {
            return Ok(pools);
        }
        std::thread::sleep(wait);
    }
}

/// One case, in `namespace` (made ready): the builds' median and p90, and
/// the longest server call (ms).
fn case(
    server: &Server,
    bits: u32,
    holders: u64,
    builds: usize,
    namespace: &str,
) -> Result<(f64, f64, f64), String> {
    // Twitter's 41 bits of ms; the sequence gives way to a wider worker field.
    let layout = Layout::builder()
        .worker_bits(bits)
        .sequence_bits(22 - bits)
        .build()
        .map_err(|e| e.to_string())?;
    let registry: Arc<dyn Registry> = lease::connect(&server.url).map_err(|e| e.to_string())?;
    let namespace = namespace.to_owned();
    hold(&*registry, &namespace, holders)?;
    (server.stats)(Stat::Reset)?;
    let mut times = Vec::with_capacity(builds);
    for _ in 0..builds {
        let started = Instant::now();
        let generator = Builder::new()
            .layout(layout)
            .lease(Lease::new(Arc::clone(&registry), namespace.clone()))
            .build_atomic()
            .map_err(|e| e.to_string())?;
        times.push(started.elapsed().as_secs_f64() * 1_000.0);
        generator.next_id().map_err(|e| e.to_string())?;
        generator
            .shutdown()
            .wait(Lease::DEFAULT_TIMEOUT)
            .map_err(|e| e.to_string())?;
    }
    let longest = (server.stats)(Stat::Longest)?;
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.5), at(0.9), longest))
}

/// A renewal's storage step, again and again: a swap of one held record
/// at its version, its fence moved on, as a holder's thread makes it every
/// third of the TTL. The swaps' median and p90, and the longest server call
/// (ms).
fn renewals(server: &Server, count: usize) -> Result<(f64, f64, f64), String> {
    let registry: Arc<dyn Registry> = lease::connect(&server.url).map_err(|e| e.to_string())?;
    let namespace = format!(
        "renewal-{}",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    hold(&*registry, &namespace, 1)?;
    let marker = registry.mark(&namespace).map_err(|e| e.to_string())?;
    (server.stats)(Stat::Reset)?;
    let mut times = Vec::with_capacity(count);
    for version in 1..=count as u64 {
        let fence = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
            + 10_000;
        let record = NewRecord {
            holder: "bench-holder-0",
            version: version + 1,
            ttl_millis: 10_000,
            fence_unix_millis: fence,
        };
        let expect = Expect {
            marker_unix_millis: marker,
            version: Some(version),
        };
        let started = Instant::now();
        let written = registry
            .swap(&namespace, 0, expect, &record)
            .map_err(|e| e.to_string())?;
        times.push(started.elapsed().as_secs_f64() * 1_000.0);
        written.ok_or_else(|| format!("renewal {version} of {namespace} was refused"))?;
    }
    let longest = (server.stats)(Stat::Longest)?;
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.5), at(0.9), longest))
}

/// `count` first builds at once in a namespace made ready (`crowd_lease`),
/// each with a registry client of its own, as processes started together have, each generator
/// kept until all are built: how many were refused (the first refusal
/// printed), how many distinct ids the rest hold (as many as were built,
/// or two were given one id), and how long all took. A measurement, not a
/// test: it depends on how much CPU the servers get (etcd hashes each
/// login's password).
fn crowd_of_builds(server: &Server, count: usize, namespace: &str) -> (usize, usize, f64) {
    let url = server.url.as_str();
    let started = Instant::now();
    let outcomes: Vec<Result<_, String>> = std::thread::scope(|scope| {
        let builds: Vec<_> = (0..count)
            .map(|_| {
                scope.spawn(|| {
                    let registry = lease::connect(url).map_err(|e| e.to_string())?;
                    let lease = crowd_lease(registry, namespace);
                    let built = Builder::new()
                        .layout(Layout::TWITTER)
                        .lease(lease)
                        .build_atomic();
                    built.map(|g| (g.worker(), g)).map_err(|e| e.to_string())
                })
            })
            .collect();
        builds.into_iter().map(|b| b.join().unwrap()).collect()
    });
    let took = started.elapsed().as_secs_f64();
    let mut ids: Vec<u64> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok().map(|(worker, _)| *worker))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let refused: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    if let Some(first) = refused.first() {
        eprintln!(
            "lease_scale: {}: {} refused, the first: {first}",
            server.name,
            refused.len()
        );
    }
    (refused.len(), ids.len(), took)
}

/// The crowds' terms.
fn crowd_lease(registry: Arc<dyn Registry>, namespace: &str) -> Lease {
    Lease::new(registry, namespace).ttl(Duration::from_secs(3))
}

/// The crowds' table: `crowd` first builds at once on every backend.
fn crowds(servers: &[Server], crowd: usize) -> ExitCode {
    let pools = match ready_namespaces(servers, 1, "crowd", crowd_lease) {
        Ok(pools) => pools,
        Err(e) => {
            eprintln!("lease_scale: making the crowds' namespaces ready: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "\ncrowds: {crowd} first builds at once, each with a client (and a login) of its own\n"
    );
    println!("| backend | refused | distinct ids | all built in, s |");
    println!("|---|---|---|---|");
    for (server, pool) in servers.iter().zip(&pools) {
        let (refused, distinct, took) = crowd_of_builds(server, crowd, &pool[0]);
        println!("| {} | {refused} | {distinct} | {took:.1} |", server.name);
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; a filter `renewals` runs only the
    // renewals, which is what comparing two revisions needs.
    let only_renewals = std::env::args().skip(1).any(|arg| arg == "renewals");
    // `crowds` runs only the crowds of first builds.
    let only_crowds = std::env::args().skip(1).any(|arg| arg == "crowds");
    let quick = std::env::var_os("FLAKEGEN_BENCH_QUICK").is_some();
    let builds = if quick { 5 } else { 40 };
    let servers = match servers() {
        Ok(servers) => servers,
        Err(e) => {
            eprintln!("lease_scale: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "lease_scale: {builds} builds per case; build time median (p90), and the longest call on the server"
    );
    let count = if quick { 50 } else { 2_000 };
    if only_crowds {
        return crowds(&servers, if quick { 16 } else { 128 });
    }
    println!("\nrenewals: {count} per backend, each a swap at the record's version\n");
    println!("| backend | renewal, ms | longest server call, ms |");
    println!("|---|---|---|");
    for server in &servers {
        match renewals(server, count) {
            Ok((median, p90, longest)) => {
                println!(
                    "| {} | {median:.3} ({p90:.3}) | {longest:.3} |",
                    server.name
                )
            }
            Err(e) => {
                eprintln!("lease_scale: {} renewals: {e}", server.name);
                return ExitCode::FAILURE;
            }
        }
    }
    if only_renewals {
        return ExitCode::SUCCESS;
    }
    crowds(&servers, if quick { 16 } else { 128 });
    let cases = WORKER_BITS.len() * HOLDERS.len();
    let pools = match ready_namespaces(&servers, cases, "scale", |r, ns| Lease::new(r, ns)) {
        Ok(pools) => pools,
        Err(e) => {
            eprintln!("lease_scale: making the cases' namespaces ready: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (server, pool) in servers.iter().zip(pools) {
        let mut pool = pool.into_iter();
        println!("\n{}\n", server.name);
        println!("| worker bits (ids) | holders | build, ms | longest server call, ms |");
        println!("|---|---|---|---|");
        for bits in WORKER_BITS {
            for holders in HOLDERS {
                let ids = 1u64 << bits;
                if holders >= ids {
                    println!("| {bits} ({ids}) | {holders} | – (more holders than ids) | – |");
                    continue;
                }
                let namespace = pool.next().expect("a namespace per case");
                match case(server, bits, holders, builds, &namespace) {
                    Ok((median, p90, longest)) => println!(
                        "| {bits} ({ids}) | {holders} | {median:.2} ({p90:.2}) | {longest:.3} |"
                    ),
                    Err(e) => {
                        eprintln!(
                            "lease_scale: {} at {bits} bits, {holders} holders: {e}",
                            server.name
                        );
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
    }
    ExitCode::SUCCESS
}

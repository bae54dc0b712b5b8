//! Leases under random faults, with real processes and real servers.
//!
//! Six helper processes contend for four worker ids with a 1 s TTL, each
//! holding a lease for a random while, releasing it and leasing again, on
//! clocks offset from each other within the skew allowance. Meanwhile the
//! driver injects faults at random: `SIGSTOP` (past the TTL, often) and
//! `SIGKILL` of holders, server freezes (`SIGSTOP` of the server), server
//! restarts one at a time and in bursts (Redis comes back empty: a loss),
//! and `TRUNCATE` bursts on PostgreSQL (a loss). At the end, one merged
//! check of every ID: no duplicates; no two leases of one worker id whose
//! IDs interleave; no ID at or past the fence its lease held.
//!
//! The helpers are this test binary itself, run again with `--helper`: it
//! leases a worker id and writes every ID it issues to a file (so the
//! helper is always the code under test, never a stale build).
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --features postgres,redis --test lease_faults -- [--seed N] [--duration SECONDS] [postgres|redis]
//! scripts/services.sh stop
//! ```
//!
//! The seed is printed first; the same seed replays the same faults at the
//! same moments (the processes' timing still varies). Default: 30 s per
//! backend and a random seed.
//!
//! A helper's file:
//!
//! ```text
//! lease <worker> <ns>                     a lease was acquired (real time)
//! <id>                                    an ID issued under it, one per line
//! fence <unix ms>                         the confirmed fence moved
//! end <worker> <first ns> <last ns> <count> <released|lost>
//!                                         the lease ended
//! ```

use std::process::ExitCode;

mod common;

fn main() -> ExitCode {
    #[cfg(all(unix, any(feature = "postgres", feature = "redis")))]
    {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if args.first().map(String::as_str) == Some("--helper") {
            return helper::run(&args[1..]);
        }
        faults::run(&args)
    }
    #[cfg(not(all(unix, any(feature = "postgres", feature = "redis"))))]
    {
        println!("lease_faults: nothing to run without the postgres or redis feature");
        ExitCode::SUCCESS
    }
}

/// One helper process: leases, issues and records until its time is up.
#[cfg(all(unix, any(feature = "postgres", feature = "redis")))]
mod helper {
    use std::fs::File;
    use std::io::{BufWriter, Write};
    use std::process::ExitCode;
    use std::thread;
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use flakegen::{
        BuildError, Builder, Clock, IdGenerator, IssueError, Layout, Snowflake, SystemClock,
        lease::{self, Lease},
    };

    /// Every helper's lease terms: short, so faults bite often.
    pub const TTL_MS: u64 = 1_000;
    pub const SKEW_MS: u64 = 500;

    /// The system clock, shifted: a host whose clock is wrong.
    #[derive(Clone, Copy)]
    struct OffsetClock(i64);

    impl Clock for OffsetClock {
        fn unix_nanos(&self) -> u64 {
            SystemClock
                .unix_nanos()
                .saturating_add_signed(self.0.saturating_mul(1_000_000))
        }
    }

    pub fn real_nanos() -> u128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    }

    /// Random hold and rest times; no need for a crate.
    struct XorShift(u64);

    impl XorShift {
        fn between(&mut self, low: u64, high: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            low + self.0 % (high - low).max(1)
        }
    }

    /// What a helper is told, as `name=value` arguments.
    pub struct Orders {
        pub url: String,
        pub namespace: String,
        pub worker_bits: u32,
        pub duration_ms: u64,
        pub out: String,
        /// Release and lease again after holding this long (ms); `None`: hold on.
        pub hold_ms: Option<(u64, u64)>,
        pub clock_offset_ms: i64,
        pub max_wait_ms: u64,
    }

    impl Orders {
        pub fn to_args(&self) -> Vec<String> {
            let hold = self
                .hold_ms
                .map_or("none".to_owned(), |(a, b)| format!("{a}..{b}"));
            vec![
                "--helper".into(),
                format!("url={}", self.url),
                format!("namespace={}", self.namespace),
                format!("worker_bits={}", self.worker_bits),
                format!("duration_ms={}", self.duration_ms),
                format!("out={}", self.out),
                format!("hold_ms={hold}"),
                format!("clock_offset_ms={}", self.clock_offset_ms),
                format!("max_wait_ms={}", self.max_wait_ms),
            ]
        }

        fn parse(args: &[String]) -> Option<Orders> {
            let get = |name: &str| {
                args.iter()
                    .find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
                    .map(str::to_owned)
            };
            let hold = get("hold_ms")?;
            Some(Orders {
                url: get("url")?,
                namespace: get("namespace")?,
                worker_bits: get("worker_bits")?.parse().ok()?,
                duration_ms: get("duration_ms")?.parse().ok()?,
                out: get("out")?,
                hold_ms: match hold.split_once("..") {
                    Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                    None => None,
                },
                clock_offset_ms: get("clock_offset_ms")?.parse().ok()?,
                max_wait_ms: get("max_wait_ms")?.parse().ok()?,
            })
        }
    }

    pub fn run(args: &[String]) -> ExitCode {
        let Some(orders) = Orders::parse(args) else {
            eprintln!("helper: bad arguments {args:?}");
            return ExitCode::FAILURE;
        };
        match record(&orders) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("helper: {e}");
                ExitCode::FAILURE
            }
        }
    }

    fn record(orders: &Orders) -> Result<(), Box<dyn std::error::Error>> {
        let layout = Layout::builder().worker_bits(orders.worker_bits).build()?;
        let mut file = BufWriter::new(File::create(&orders.out)?);
        let deadline = Instant::now() + Duration::from_millis(orders.duration_ms);
        let mut random = XorShift((real_nanos() as u64 ^ u64::from(std::process::id()) << 32) | 1);
        let mut batch = [Snowflake::default(); 20];
        while Instant::now() < deadline {
            let built = Builder::new()
                .layout(layout)
                .clock(OffsetClock(orders.clock_offset_ms))
                .max_wait(Duration::from_millis(orders.max_wait_ms))
                .lease(
                    Lease::new(lease::connect(&orders.url)?, orders.namespace.clone())
                        .ttl(Duration::from_millis(TTL_MS))
                        .skew(Duration::from_millis(SKEW_MS)),
                )
                .build_atomic();
            let generator = match built {
                Ok(generator) => generator,
                // Every id held, the registry down, a fence ahead: try again soon.
                Err(e @ (BuildError::Lease(_) | BuildError::FenceAhead { .. })) => {
                    eprintln!("waiting: {e}");
                    thread::sleep(Duration::from_millis(random.between(5, 30)));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let worker = generator.worker();
            writeln!(file, "lease {worker} {}", real_nanos())?;
            // Held for a while from its first ID: a lease that starts at a
            // fence ahead waits for it first.
            let hold = orders
                .hold_ms
                .map(|(low, high)| Duration::from_millis(random.between(low, high)));
            let mut until = None;
            let (mut first, mut last, mut count) = (None, 0, 0u64);
            let mut fence = None;
            let reason = loop {
                let now = Instant::now();
                if now >= deadline || until.is_some_and(|u| now >= u) {
                    break "released";
                }
                match generator.next_ids(&mut batch) {
                    Ok(()) => {}
                    Err(IssueError::LeaseLost { .. }) => break "lost",
                    // A fence ahead after a loss, past max_wait: a new lease.
                    Err(IssueError::ClockBehind { .. }) => break "lost",
                    Err(e) => return Err(e.into()),
                }
                let at = real_nanos();
                first.get_or_insert(at);
                until = until.or_else(|| hold.map(|hold| Instant::now() + hold));
                last = at;
                count += batch.len() as u64;
                for id in &batch {
                    writeln!(file, "{id}")?;
                }
                let confirmed = generator.lease().map(|s| s.fence);
                if confirmed != fence {
                    fence = confirmed;
                    if let Some(ms) = fence.and_then(|f| f.duration_since(UNIX_EPOCH).ok()) {
                        writeln!(file, "fence {}", ms.as_millis())?;
                    }
                }
                file.flush()?;
                thread::sleep(Duration::from_millis(1));
            };
            writeln!(
                file,
                "end {worker} {} {last} {count} {reason}",
                first.unwrap_or(0)
            )?;
            // Written down before the release, which the next holder may be waiting on.
            file.flush()?;
            // Best effort, as for any service: a release that fails leaves
            // the lease to expire, its fence where it was.
            let _ = generator.shutdown().wait(Duration::from_secs(5));
            drop(generator);
            if orders.hold_ms.is_some() {
                // Rest a moment, so that others waiting for an id can take this one.
                thread::sleep(Duration::from_millis(random.between(20, 80)));
            }
        }
        Ok(())
    }
}

#[cfg(all(unix, any(feature = "postgres", feature = "redis")))]
mod faults {
    use std::fs;
    use std::panic::{self, AssertUnwindSafe};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, ExitCode, Stdio};
    use std::thread;
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use flakegen::{Layout, Snowflake};

    use super::helper::Orders;
    use crate::common::backend::{Backend, signal_all};

    /// Runs the randomized test on every backend (or those named), and
    /// prints the plain closing line.
    pub fn run(args: &[String]) -> ExitCode {
        let option = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .map(|v| {
                    v.parse::<u64>()
                        .unwrap_or_else(|_| panic!("{name} {v}: not a number"))
                })
        };
        let seed = option("--seed").unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
        let seconds = option("--duration").unwrap_or(30);
        let named: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .filter(|a| Backend::all().iter().any(|b| b.name() == *a))
            .collect();
        println!("lease_faults: seed {seed}, {seconds} s per backend (replay with --seed {seed})");
        let (mut passed, mut failed) = (0, 0);
        for backend in Backend::all() {
            if !named.is_empty() && !named.contains(&backend.name()) {
                continue;
            }
            let started = Instant::now();
            println!("randomized faults on {}", backend.name());
            let run = || randomized(backend, seed, Duration::from_secs(seconds));
            match panic::catch_unwind(AssertUnwindSafe(run)) {
                Ok(()) => {
                    passed += 1;
                    println!("  ok in {:.1} s", started.elapsed().as_secs_f64());
                }
                Err(_) => {
                    failed += 1;
                    println!("  FAILED in {:.1} s", started.elapsed().as_secs_f64());
                }
            }
        }
        println!("\nlease_faults: {passed} passed, {failed} failed");
        if failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }

    /// The helpers' layout for `--worker-bits N`: Twitter's otherwise.
    fn layout(worker_bits: u32) -> Layout {
        Layout::builder().worker_bits(worker_bits).build().unwrap()
    }

    struct Scenario {
        backend: Backend,
        name: &'static str,
        namespace: String,
        dir: PathBuf,
        worker_bits: u32,
        processes: Vec<(Child, PathBuf)>,
    }

    impl Scenario {
        fn new(backend: Backend, name: &'static str, worker_bits: u32) -> Scenario {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let namespace = format!("{name}-{}-{nanos}", std::process::id());
            let dir = std::env::temp_dir().join(format!("flakegen-faults-{namespace}"));
            fs::create_dir_all(&dir).unwrap();
            Scenario {
                backend,
                name,
                namespace,
                dir,
                worker_bits,
                processes: vec![],
            }
        }

        /// Starts a helper (this binary, with `--helper`) holding leases for
        /// `duration_ms`; returns its index.
        fn spawn(
            &mut self,
            duration_ms: u64,
            hold_ms: Option<(u64, u64)>,
            clock_offset_ms: i64,
            max_wait_ms: u64,
        ) -> usize {
            let index = self.processes.len();
            let out = self.dir.join(format!("{index}.ids"));
            let log = fs::File::create(self.dir.join(format!("{index}.log"))).unwrap();
            let orders = Orders {
                url: self.backend.url(),
                namespace: self.namespace.clone(),
                worker_bits: self.worker_bits,
                duration_ms,
                out: out.display().to_string(),
                hold_ms,
                clock_offset_ms,
                max_wait_ms,
            };
            // The running binary, even if a rebuild has replaced its file since.
            let this = if Path::new("/proc/self/exe").exists() {
                PathBuf::from("/proc/self/exe")
            } else {
                std::env::current_exe().unwrap()
            };
            let child = Command::new(this)
                .args(orders.to_args())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap();
            self.processes.push((child, out));
            index
        }

        fn signal(&self, index: usize, signal: &str) {
            let pid = self.processes[index].0.id().to_string();
            let status = Command::new("kill").args([signal, &pid]).status().unwrap();
            assert!(status.success());
        }

        /// Waits for every helper (at most 30 s), then reads and checks all that
        /// they wrote. `killed` helpers are expected to have died.
        fn finish(mut self, killed: &[usize]) -> Outcome {
            let deadline = Instant::now() + Duration::from_secs(30);
            for (index, (child, _)) in self.processes.iter_mut().enumerate() {
                let status = loop {
                    if let Some(status) = child.try_wait().unwrap() {
                        break status;
                    }
                    if Instant::now() > deadline {
                        let _ = child.kill();
                        panic!("{}: helper {index} did not finish", self.name);
                    }
                    thread::sleep(Duration::from_millis(20));
                };
                if !killed.contains(&index) {
                    let log = fs::read_to_string(self.dir.join(format!("{index}.log"))).unwrap();
                    assert!(
                        status.success(),
                        "{}: helper {index} failed: {log}",
                        self.name
                    );
                    assert!(
                        !log.contains("panicked"),
                        "{}: helper {index}: {log}",
                        self.name
                    );
                }
            }
            let processes: Vec<Vec<Lease>> = self
                .processes
                .iter()
                .map(|(_, out)| parse(&fs::read_to_string(out).unwrap_or_default()))
                .collect();
            let outcome = Outcome::check(
                self.name,
                self.backend,
                &layout(self.worker_bits),
                processes,
            );
            fs::remove_dir_all(&self.dir).unwrap();
            outcome
        }
    }

    /// One lease as a helper recorded it.
    #[derive(Debug, Default)]
    struct Lease {
        worker: u64,
        ids: Vec<u64>,
        /// The highest confirmed fence seen, ms.
        fence_ms: u64,
        /// Real time of the first and last IDs, if the lease ended cleanly.
        first_ns: Option<u128>,
        last_ns: Option<u128>,
        lost: bool,
    }

    fn parse(text: &str) -> Vec<Lease> {
        let mut leases: Vec<Lease> = vec![];
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["lease", worker, _at] => leases.push(Lease {
                    worker: worker.parse().unwrap(),
                    ..Lease::default()
                }),
                ["fence", ms] => {
                    let lease = leases.last_mut().unwrap();
                    lease.fence_ms = lease.fence_ms.max(ms.parse().unwrap());
                }
                ["end", _, first, last, _, reason] => {
                    let lease = leases.last_mut().unwrap();
                    lease.first_ns = Some(first.parse().unwrap());
                    lease.last_ns = Some(last.parse().unwrap());
                    lease.lost = *reason == "lost";
                }
                [id] => leases.last_mut().unwrap().ids.push(id.parse().unwrap()),
                // A line cut short by SIGKILL.
                _ => {}
            }
        }
        leases
    }

    /// What a scenario produced.
    struct Outcome {
        processes: Vec<Vec<Lease>>,
        ids: usize,
        leases: usize,
        takeovers: usize,
        lost: usize,
    }

    impl Outcome {
        fn check(
            name: &str,
            backend: Backend,
            layout: &Layout,
            processes: Vec<Vec<Lease>>,
        ) -> Outcome {
            let context = format!("{name}/{}", backend.name());
            // No duplicates: sort and scan.
            let mut all: Vec<u64> = processes
                .iter()
                .flatten()
                .flat_map(|l| l.ids.iter().copied())
                .collect();
            all.sort_unstable();
            let duplicates = all.windows(2).filter(|w| w[0] == w[1]).count();

            // No interleaving holders: the leases of one worker id, each as
            // the range of its IDs, must not overlap. The fences promise
            // exactly this, whatever the clocks read.
            let mut interleavings = 0;
            let mut takeovers = 0;
            for worker in 0..=layout.max_worker() {
                let mut ranges: Vec<(u64, u64, usize)> = processes
                    .iter()
                    .enumerate()
                    .flat_map(|(p, leases)| leases.iter().map(move |l| (p, l)))
                    .filter(|(_, l)| l.worker == worker && !l.ids.is_empty())
                    .map(|(p, l)| {
                        (
                            *l.ids.iter().min().unwrap(),
                            *l.ids.iter().max().unwrap(),
                            p,
                        )
                    })
                    .collect();
                ranges.sort_unstable();
                for pair in ranges.windows(2) {
                    if pair[0].1 >= pair[1].0 {
                        interleavings += 1;
                        eprintln!(
                            "{context}: worker {worker}: processes {} and {} interleave",
                            pair[0].2, pair[1].2
                        );
                    }
                }
                takeovers += ranges.windows(2).filter(|w| w[0].2 != w[1].2).count();
            }

            // Nothing at or past the fence a lease held.
            let mut past_fence = 0;
            for lease in processes.iter().flatten() {
                for &id in &lease.ids {
                    let fields = layout.decode(Snowflake::from_u64(id)).unwrap();
                    assert_eq!(fields.worker, lease.worker, "{context}");
                    if layout.unix_millis_of(fields.timestamp) >= lease.fence_ms {
                        past_fence += 1;
                    }
                }
            }
            let outcome = Outcome {
                ids: all.len(),
                leases: processes.iter().map(Vec::len).sum(),
                takeovers,
                lost: processes.iter().flatten().filter(|l| l.lost).count(),
                processes,
            };
            println!(
                "  {context}: {} processes, {} IDs, {} leases, {} takeovers, {} lost; \
                 {duplicates} duplicates, {interleavings} interleavings, {past_fence} past the fence",
                outcome.processes.len(),
                outcome.ids,
                outcome.leases,
                outcome.takeovers,
                outcome.lost
            );
            assert_eq!(duplicates, 0, "{context}: {duplicates} duplicate IDs");
            assert_eq!(interleavings, 0, "{context}: {interleavings} interleavings");
            assert_eq!(
                past_fence, 0,
                "{context}: {past_fence} IDs past their fence"
            );
            outcome
        }
    }
    /// A small deterministic generator: the same seed, the same faults.
    struct Random(u64);

    impl Random {
        fn between(&mut self, low: u64, high: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            low + self.0 % (high - low).max(1)
        }
    }

    /// Contending helpers under random faults for `duration`, then the check.
    fn randomized(backend: Backend, seed: u64, duration: Duration) {
        let mut random = Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut scenario = Scenario::new(backend, "random", 2);
        let started = Instant::now();
        let left_ms =
            |started: Instant| duration.saturating_sub(started.elapsed()).as_millis() as u64;
        // Clocks that disagree, within the skew allowance.
        let skew = super::helper::SKEW_MS as i64;
        let offset = |random: &mut Random| random.between(0, skew as u64) as i64 - skew / 2;
        for _ in 0..6 {
            let o = offset(&mut random);
            scenario.spawn(left_ms(started), Some((100, 600)), o, 3_000);
        }
        let mut faults: std::collections::BTreeMap<&str, u32> = Default::default();
        let mut paused: Vec<(usize, Instant)> = vec![];
        let mut killed: Vec<usize> = vec![];
        while started.elapsed() + Duration::from_millis(2_500) < duration {
            thread::sleep(Duration::from_millis(random.between(200, 1_200)));
            paused.retain(|&(helper, until)| {
                let done = Instant::now() >= until;
                if done {
                    scenario.signal(helper, "-CONT");
                }
                !done
            });
            let live: Vec<usize> = (0..scenario.processes.len())
                .filter(|i| !killed.contains(i) && !paused.iter().any(|(p, _)| p == i))
                .collect();
            let pick = live[random.between(0, live.len() as u64) as usize];
            let kind = match random.between(0, 7) {
                0 => {
                    // Often past the TTL, so the id is taken meanwhile.
                    let pause = Duration::from_millis(random.between(300, 2_500));
                    scenario.signal(pick, "-STOP");
                    paused.push((pick, Instant::now() + pause));
                    "holder paused"
                }
                1 => {
                    scenario.signal(pick, "-KILL");
                    killed.push(pick);
                    let o = offset(&mut random);
                    scenario.spawn(left_ms(started), Some((100, 600)), o, 3_000);
                    "holder killed"
                }
                2 => {
                    let pids = backend.server_pids();
                    signal_all(&pids, "-STOP");
                    thread::sleep(Duration::from_millis(random.between(300, 2_500)));
                    signal_all(&pids, "-CONT");
                    "server frozen"
                }
                3 => {
                    backend.services("stop");
                    backend.services("start");
                    "server restarted"
                }
                4 => {
                    for _ in 0..random.between(2, 4) {
                        backend.services("stop");
                        backend.services("start");
                        thread::sleep(Duration::from_millis(random.between(100, 400)));
                    }
                    "restart burst"
                }
                6 => {
                    // Displaced, then a loss: the holder comes back to a
                    // registry that no longer knows who took its id.
                    let ttl = super::helper::TTL_MS;
                    scenario.signal(pick, "-STOP");
                    thread::sleep(Duration::from_millis(random.between(ttl + 200, ttl + 800)));
                    backend.lose_data();
                    scenario.signal(pick, "-CONT");
                    "holder displaced, then a loss"
                }
                _ => {
                    #[cfg(feature = "postgres")]
                    if backend.name() == "postgres" {
                        for _ in 0..random.between(1, 4) {
                            backend.lose_data();
                            thread::sleep(Duration::from_millis(random.between(50, 300)));
                        }
                        *faults.entry("truncate burst").or_default() += 1;
                        continue;
                    }
                    backend.services("stop");
                    backend.services("start");
                    "server restarted"
                }
            };
            *faults.entry(kind).or_default() += 1;
        }
        for (helper, _) in paused {
            scenario.signal(helper, "-CONT");
        }
        let losses: u32 = match backend.name() {
            "redis" => ["server restarted", "restart burst"]
                .iter()
                .map(|k| faults.get(k).copied().unwrap_or(0))
                .sum(),
            _ => ["truncate burst", "holder displaced, then a loss"]
                .iter()
                .map(|k| faults.get(k).copied().unwrap_or(0))
                .sum(),
        };
        println!("  faults: {faults:?} ({losses} with data loss)");
        scenario.finish(&killed);
    }
}

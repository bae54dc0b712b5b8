//! Leases under faults, with real processes and real servers: contention,
//! a holder paused past its TTL (`SIGSTOP`), a holder killed (`SIGKILL`) and
//! succeeded by a host whose clock is behind, and the server stopped under
//! load (Redis comes back empty).
//!
//! The processes are this test binary itself, run again with `--helper`: it
//! leases a worker id and writes every ID it issues to a file (so the helper
//! is always the code under test, never a stale build). The test merges the
//! files, sorts, and scans for duplicates; checks that no two processes
//! issued under one worker id at overlapping times; and checks that no
//! process issued at or past the fence it held. Each scenario prints its
//! counts; all of them take about 45 s.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --features postgres,redis --test lease_faults [-- <name filter>]
//! scripts/services.sh stop
//! ```
//!
//! A helper's file:
//!
//! ```text
//! lease <worker> <ns>                     a lease was acquired (real time)
//! <id>                                    an ID issued under it, one per line
//! fence <unix ms>                         the confirmed fence moved
//! end <worker> <first ns> <last ns> <count> <released|lost>
//!                                         the lease ended; its first and last
//!                                         IDs' real times
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
        // Arguments that are not options filter the scenarios by name.
        let filters: Vec<&str> = args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(String::as_str)
            .collect();
        faults::run(&filters)
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
        BuildError, Builder, Clock, IdGenerator, IssueError, Layout, Snowflake, SystemClock, lease,
    };

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
                .lease(lease::connect(&orders.url)?, orders.namespace.clone())
                .lease_ttl(Duration::from_millis(1_000))
                .lease_skew(Duration::from_millis(500))
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
            let until = orders.hold_ms.map(|(low, high)| {
                Instant::now() + Duration::from_millis(random.between(low, high))
            });
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
                    Err(e) => return Err(e.into()),
                }
                let at = real_nanos();
                first.get_or_insert(at);
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
    use crate::common::backend::Backend;

    /// Runs the scenarios whose names contain one of `filters` (all, if none),
    /// one after another, and prints the plain closing line.
    pub fn run(filters: &[&str]) -> ExitCode {
        type Scenario = (&'static str, fn(Backend));
        let scenarios: [Scenario; 4] = [
            (
                "six_processes_contend_for_four_ids",
                six_processes_contend_for_four_ids,
            ),
            (
                "a_holder_paused_past_its_ttl_never_issues_past_its_fence",
                a_holder_paused_past_its_ttl_never_issues_past_its_fence,
            ),
            (
                "a_killed_holder_is_succeeded_by_a_host_whose_clock_is_behind",
                a_killed_holder_is_succeeded_by_a_host_whose_clock_is_behind,
            ),
            (
                "the_server_stops_under_load_and_comes_back",
                the_server_stops_under_load_and_comes_back,
            ),
        ];
        let (mut passed, mut failed) = (0, 0);
        for (name, scenario) in scenarios {
            if !filters.is_empty() && !filters.iter().any(|f| name.contains(f)) {
                continue;
            }
            for backend in Backend::all() {
                let started = Instant::now();
                println!("scenario {name} on {}", backend.name());
                match panic::catch_unwind(AssertUnwindSafe(|| scenario(backend))) {
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

    impl Backend {
        /// Stops or starts this backend's server with the services script.
        fn services(self, action: &str) {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/services.sh");
            let status = Command::new("bash")
                .arg(script)
                .args([action, self.name()])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(
                status.success(),
                "services.sh {action} {} failed",
                self.name()
            );
        }
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
            let child = Command::new(std::env::current_exe().unwrap())
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
        /// Real time the lease was acquired.
        acquired_ns: u128,
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
                ["lease", worker, at] => leases.push(Lease {
                    worker: worker.parse().unwrap(),
                    acquired_ns: at.parse().unwrap(),
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
            assert_eq!(duplicates, 0, "{context}: {duplicates} duplicate IDs");

            // Nothing at or past the fence a lease held.
            for lease in processes.iter().flatten() {
                for &id in &lease.ids {
                    let fields = layout.decode(Snowflake::from_u64(id)).unwrap();
                    assert_eq!(fields.worker, lease.worker, "{context}");
                    let ms = layout.unix_millis_of(fields.timestamp);
                    assert!(
                        ms < lease.fence_ms,
                        "{context}: {id} at {ms} is not below its fence {}",
                        lease.fence_ms
                    );
                }
            }

            // No two holders of one id issuing at once (real time, one machine),
            // and how often an id changed hands. A killed helper's last lease has
            // no end: it counts for takeovers, not spans.
            let mut takeovers = 0;
            for worker in 0..=layout.max_worker() {
                let of_worker = || {
                    processes
                        .iter()
                        .enumerate()
                        .flat_map(|(p, leases)| leases.iter().map(move |l| (p, l)))
                        .filter(move |(_, l)| l.worker == worker)
                };
                let mut spans: Vec<(u128, u128, usize)> = of_worker()
                    .filter(|(_, l)| !l.ids.is_empty())
                    .filter_map(|(p, l)| Some((l.first_ns?, l.last_ns?, p)))
                    .collect();
                spans.sort_unstable();
                for pair in spans.windows(2) {
                    assert!(
                        pair[0].1 < pair[1].0,
                        "{context}: processes {} and {} both issued with worker {worker} at once",
                        pair[0].2,
                        pair[1].2
                    );
                }
                let mut holders: Vec<(u128, usize)> =
                    of_worker().map(|(p, l)| (l.acquired_ns, p)).collect();
                holders.sort_unstable();
                takeovers += holders.windows(2).filter(|w| w[0].1 != w[1].1).count();
            }
            let outcome = Outcome {
                ids: all.len(),
                leases: processes.iter().map(Vec::len).sum(),
                takeovers,
                lost: processes.iter().flatten().filter(|l| l.lost).count(),
                processes,
            };
            println!(
                "{context}: {} processes, {} IDs, 0 duplicates, {} leases, {} takeovers, {} lost",
                outcome.processes.len(),
                outcome.ids,
                outcome.leases,
                outcome.takeovers,
                outcome.lost
            );
            outcome
        }
    }

    fn six_processes_contend_for_four_ids(backend: Backend) {
        let mut scenario = Scenario::new(backend, "contend", 2);
        for _ in 0..6 {
            scenario.spawn(3_000, Some((100, 400)), 0, 3_000);
        }
        let outcome = scenario.finish(&[]);
        assert!(outcome.leases > 6, "no process released and leased again");
        assert!(outcome.takeovers > 0);
    }

    fn a_holder_paused_past_its_ttl_never_issues_past_its_fence(backend: Backend) {
        let mut scenario = Scenario::new(backend, "sigstop", 0);
        let paused = scenario.spawn(5_000, None, 0, 3_000);
        thread::sleep(Duration::from_millis(700));
        scenario.signal(paused, "-STOP");
        thread::sleep(Duration::from_millis(1_500)); // past the 1 s TTL
        scenario.spawn(2_000, None, 0, 3_000);
        thread::sleep(Duration::from_millis(1_000));
        scenario.signal(paused, "-CONT");
        let outcome = scenario.finish(&[]);
        assert!(
            outcome.takeovers >= 1,
            "the successor never took the id over"
        );
        let paused_first = &outcome.processes[paused][0];
        assert!(
            paused_first.lost,
            "the paused holder did not report its lease lost"
        );
    }

    fn a_killed_holder_is_succeeded_by_a_host_whose_clock_is_behind(backend: Backend) {
        let mut scenario = Scenario::new(backend, "sigkill", 0);
        let killed = scenario.spawn(10_000, None, 0, 3_000);
        thread::sleep(Duration::from_millis(700));
        scenario.signal(killed, "-KILL");
        // Its clock is 2.5 s behind: it must wait until it is past the fence.
        let successor = scenario.spawn(5_000, None, -2_500, 5_000);
        let outcome = scenario.finish(&[killed]);
        assert_eq!(outcome.takeovers, 1);
        let taken = &outcome.processes[successor][0];
        let waited = Duration::from_nanos((taken.first_ns.unwrap() - taken.acquired_ns) as u64);
        // The killed holder's fence was about a TTL past its last renewal, which
        // its lease outlived: on a clock 2.5 s behind, that is still ahead.
        assert!(
            waited > Duration::from_millis(1_000),
            "the successor waited only {waited:?}"
        );
        let killed_max = outcome.processes[killed]
            .iter()
            .flat_map(|l| &l.ids)
            .max()
            .unwrap();
        assert!(taken.ids.iter().min().unwrap() > killed_max);
        println!(
            "  the successor waited {:.2} s for the fence",
            waited.as_secs_f64()
        );
    }

    fn the_server_stops_under_load_and_comes_back(backend: Backend) {
        let mut scenario = Scenario::new(backend, "outage", 2);
        // Three hold on (renewing), one changes ids as it goes.
        for _ in 0..3 {
            scenario.spawn(7_000, None, 0, 3_000);
        }
        scenario.spawn(7_000, Some((300, 800)), 0, 3_000);
        thread::sleep(Duration::from_millis(1_500));
        backend.services("stop");
        // Newcomers arrive while the server is down.
        thread::sleep(Duration::from_millis(500));
        for _ in 0..2 {
            scenario.spawn(5_000, Some((300, 800)), 0, 3_000);
        }
        thread::sleep(Duration::from_millis(1_500)); // 2 s down: past the 1 s TTL
        backend.services("start");
        let outcome = scenario.finish(&[]);
        assert!(
            outcome.lost >= 3,
            "the holders did not all run to their fences"
        );
    }
}

//! Leases under random faults, with real processes and real servers.
//!
//! Six helper processes contend for four worker ids with a 1 s TTL, each
//! holding a lease for a random while, releasing it and leasing again, on
//! clocks offset from each other within the skew allowance. Beside them, in
//! a namespace of their own, three helpers build one generator each and
//! never rebuild it: when their lease is lost they rely on the generator
//! leasing again by itself (healing). Meanwhile the driver injects faults at
//! random: `SIGSTOP` (past the TTL, often) and `SIGKILL` of holders, server
//! freezes (`SIGSTOP` of the server), server restarts one at a time and in
//! bursts (Redis comes back empty: a loss), crashes (`SIGKILL`: InnoDB
//! keeps every commit, Redis nothing), `TRUNCATE` bursts on PostgreSQL and
//! MariaDB (a loss), failovers to a replica that missed the last renewals
//! (the primary dies, the replica is promoted, clients follow through a
//! forwarder), and on MariaDB master-master flips (the writable side turns
//! read-only and the other takes writes, at times after missing renewals).
//! The registry is each backend's replicated pair from
//! `scripts/services.sh`; after each failover the old primary is rebuilt as
//! the new one's replica. At the end, one merged check of every ID, per
//! namespace: no duplicates; no two leases of one worker id whose IDs
//! interleave; no ID at or past the fence its lease held. And after every
//! loss, each never-rebuilding helper issues again, under a new lease,
//! within the TTL, the skew allowance and 2 s (unless another fault, or a
//! pause of its own, came within that time).
//!
//! The helpers are this test binary itself, run again with `--helper`: it
//! leases a worker id and writes every ID it issues to a file (so the
//! helper is always the code under test, never a stale build).
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --features postgres,redis,mysql --test lease_faults -- [--seed N] [--duration SECONDS] [postgres|redis|mysql]
//! scripts/services.sh stop
//! ```
//!
//! The seed is printed first; the same seed replays the same faults at the
//! same moments (the processes' timing still varies). Default: 30 s per
//! backend and a random seed.
//!
//! A helper's file (times are real, in ns since 1970; a lease is known by
//! its worker id and where its IDs start, in ms):
//!
//! ```text
//! lease <worker> <starts ms> <fence ms> <at>   a lease acquired, by a build or by healing
//! at <at>                                      the IDs below were issued then
//! <id>                                         an ID, one per line
//! fence <worker> <starts ms> <fence ms>        that lease's confirmed fence moved (from the
//!                                              generator's status, and the loss event)
//! refused <at>                                 a healing helper's call was refused then
//! end <released|lost>                          a rebuilding helper dropped its generator
//! ```

use std::process::ExitCode;

mod common;

fn main() -> ExitCode {
    #[cfg(all(unix, feature = "remote"))]
    {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if args.first().map(String::as_str) == Some("--helper") {
            return helper::run(&args[1..]);
        }
        faults::run(&args)
    }
    #[cfg(not(all(unix, feature = "remote")))]
    {
        println!("lease_faults: nothing to run without the postgres, redis or mysql feature");
        ExitCode::SUCCESS
    }
}

/// One helper process: leases, issues and records until its time is up.
#[cfg(all(unix, feature = "remote"))]
mod helper {
    use std::fs::File;
    use std::io::{BufWriter, Write};
    use std::process::ExitCode;
    use std::sync::{Arc, Mutex};
    use std::thread;
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use flakegen::{
        BuildError, Builder, Clock, IdGenerator, IssueError, Layout, Snowflake, SystemClock,
        lease::{self, Lease},
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

    pub(crate) fn real_nanos() -> u128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    }

    fn unix_ms(time: SystemTime) -> u128 {
        time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
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
    pub(crate) struct Orders {
        pub url: String,
        pub namespace: String,
        pub worker_bits: u32,
        pub duration_ms: u64,
        pub out: String,
        /// Release and lease again after holding this long (ms); `None`:
        /// one generator, never rebuilt, that heals when its lease is lost.
        pub hold_ms: Option<(u64, u64)>,
        pub clock_offset_ms: i64,
        pub max_wait_ms: u64,
        pub ttl_ms: u64,
        pub skew_ms: u64,
    }

    impl Orders {
        pub(crate) fn to_args(&self) -> Vec<String> {
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
                format!("ttl_ms={}", self.ttl_ms),
                format!("skew_ms={}", self.skew_ms),
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
                ttl_ms: get("ttl_ms")?.parse().ok()?,
                skew_ms: get("skew_ms")?.parse().ok()?,
            })
        }
    }

    pub(crate) fn run(args: &[String]) -> ExitCode {
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

    type Out = Arc<Mutex<BufWriter<File>>>;

    /// Writes a `lease` line for each lease acquired, as the lease's thread
    /// says it: by a build ("lease acquired") or by healing ("lease
    /// reacquired"); and a `fence` line for each lease lost.
    struct Leases(Out);

    struct Fields {
        message: String,
        worker: u64,
        starts: u64,
        fence: u64,
    }

    impl tracing::field::Visit for Fields {
        fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
            match field.name() {
                "worker" => self.worker = value,
                "starts_unix_millis" => self.starts = value,
                "fence_unix_millis" => self.fence = value,
                _ => {}
            }
        }
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.message = format!("{value:?}");
            }
        }
    }

    impl tracing::Subscriber for Leases {
        fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
            metadata.target() == "flakegen::lease"
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut fields = Fields {
                message: String::new(),
                worker: 0,
                starts: 0,
                fence: 0,
            };
            event.record(&mut fields);
            if fields.message.starts_with("lease lost") {
                // A lost lease's last confirmed fence: the generator's
                // status shows the newest lease, not this one, from now on.
                let mut out = self.0.lock().unwrap();
                let _ = writeln!(
                    out,
                    "fence {} {} {}",
                    fields.worker, fields.starts, fields.fence
                );
                let _ = out.flush();
            } else if fields.message.starts_with("lease acquired")
                || fields.message.starts_with("lease reacquired")
            {
                let mut out = self.0.lock().unwrap();
                let _ = writeln!(
                    out,
                    "lease {} {} {} {}",
                    fields.worker,
                    fields.starts,
                    fields.fence,
                    real_nanos()
                );
                let _ = out.flush();
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    fn record(orders: &Orders) -> Result<(), Box<dyn std::error::Error>> {
        let layout = Layout::builder().worker_bits(orders.worker_bits).build()?;
        let out: Out = Arc::new(Mutex::new(BufWriter::new(File::create(&orders.out)?)));
        let _events = tracing::subscriber::set_default(Leases(Arc::clone(&out)));
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
                        .ttl(Duration::from_millis(orders.ttl_ms))
                        .skew(Duration::from_millis(orders.skew_ms)),
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
            // Held for a while from its first ID: a lease that starts at a
            // fence ahead waits for it first.
            let hold = orders
                .hold_ms
                .map(|(low, high)| Duration::from_millis(random.between(low, high)));
            let mut until = None;
            let mut fence = None;
            let reason = loop {
                let now = Instant::now();
                if now >= deadline || until.is_some_and(|u| now >= u) {
                    break "released";
                }
                match generator.next_ids(&mut batch) {
                    Ok(()) => {
                        let mut out = out.lock().unwrap();
                        writeln!(out, "at {}", real_nanos())?;
                        for id in &batch {
                            writeln!(out, "{id}")?;
                        }
                        until = until.or_else(|| hold.map(|hold| Instant::now() + hold));
                    }
                    // A rebuilding helper builds again; one that never
                    // rebuilds waits for its generator to heal.
                    Err(IssueError::LeaseLost { .. } | IssueError::ClockBehind { .. })
                        if hold.is_some() =>
                    {
                        break "lost";
                    }
                    Err(IssueError::LeaseLost { .. } | IssueError::ClockBehind { .. }) => {
                        writeln!(out.lock().unwrap(), "refused {}", real_nanos())?;
                    }
                    Err(e) => return Err(e.into()),
                }
                if let Some(status) = generator.lease() {
                    let now = (status.worker, unix_ms(status.starts), unix_ms(status.fence));
                    if fence != Some(now) {
                        fence = Some(now);
                        writeln!(out.lock().unwrap(), "fence {} {} {}", now.0, now.1, now.2)?;
                    }
                }
                out.lock().unwrap().flush()?;
                thread::sleep(Duration::from_millis(1));
            };
            {
                let mut out = out.lock().unwrap();
                writeln!(out, "end {reason}")?;
                // Written down before the release, which the next holder may be waiting on.
                out.flush()?;
            }
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

#[cfg(all(unix, feature = "remote"))]
mod faults {
    use std::fs;
    use std::panic::{self, AssertUnwindSafe};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, ExitCode, Stdio};
    use std::thread;
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use flakegen::{Layout, Snowflake};

    use super::helper::Orders;
    use crate::common::replicated::Replicated;
    use crate::common::server::{ALL, Dice};
    use flakegen_contract::{Fixture, Wipe};

    /// What the helpers lease from: a registry's replicated service.
    type Target = Replicated;

    /// The helpers' TTL and skew allowance, in ms.
    fn terms(target: &Target) -> (u64, u64) {
        target.server.terms
    }

    /// How soon after a loss a helper that never rebuilds must issue
    /// again, under a new lease: the TTL, the skew allowance and 2 s.
    fn heal_bound(target: &Target) -> Duration {
        let (ttl, skew) = terms(target);
        Duration::from_millis(ttl + skew + 2_000)
    }

    /// Runs the randomized test on every backend (or those named), and
    /// prints the plain closing line.
    pub(crate) fn run(args: &[String]) -> ExitCode {
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
            .filter(|a| ALL.iter().any(|s| s.name == *a))
            .collect();
        println!("lease_faults: seed {seed}, {seconds} s per backend (replay with --seed {seed})");
        let (mut passed, mut failed) = (0, 0);
        for &server in ALL {
            if !named.is_empty() && !named.contains(&server.name) {
                continue;
            }
            let started = Instant::now();
            println!(
                "randomized faults on {} ({})",
                server.name,
                if server.pair {
                    "a primary and its replica"
                } else {
                    "a three-member cluster"
                }
            );
            let run = || randomized(Replicated::new(server), seed, Duration::from_secs(seconds));
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

    /// The helpers' layout: Twitter's, with `worker_bits` worker bits.
    fn layout(worker_bits: u32) -> Layout {
        Layout::builder().worker_bits(worker_bits).build().unwrap()
    }

    /// The two groups of helpers, each in a namespace of its own.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Group {
        /// Six helpers for four ids, each building, holding a while,
        /// releasing and building again: contention and takeovers.
        Rebuilding,
        /// Three helpers for four ids, each with one generator for the
        /// whole run, which heals after every loss.
        Healing,
    }

    impl Group {
        fn name(self) -> &'static str {
            match self {
                Group::Rebuilding => "rebuilding",
                Group::Healing => "healing",
            }
        }
    }

    struct Helper {
        child: Child,
        out: PathBuf,
        group: Group,
        started_ns: u128,
    }

    /// A fault the driver injected, in real time (ns since 1970).
    #[derive(Clone, Debug)]
    struct Fault {
        kind: &'static str,
        start_ns: u128,
        end_ns: u128,
        /// The helper it was put on, if one.
        helper: Option<usize>,
        /// It loses the registry's data: every lease is lost.
        loss: bool,
    }

    struct Scenario {
        target: Target,
        stamp: String,
        dir: PathBuf,
        worker_bits: u32,
        helpers: Vec<Helper>,
    }

    impl Scenario {
        fn new(target: Target, worker_bits: u32) -> Scenario {
            let nanos = super::helper::real_nanos();
            let stamp = format!("{}-{nanos}", std::process::id());
            let dir = std::env::temp_dir().join(format!("flakegen-faults-{stamp}"));
            fs::create_dir_all(&dir).unwrap();
            Scenario {
                target,
                stamp,
                dir,
                worker_bits,
                helpers: vec![],
            }
        }

        fn namespace(&self, group: Group) -> String {
            format!("{}-{}", group.name(), self.stamp)
        }

        /// Starts a helper (this binary, with `--helper`) of `group` for
        /// `duration_ms`; returns its index.
        fn spawn(&mut self, group: Group, duration_ms: u64, clock_offset_ms: i64) -> usize {
            let index = self.helpers.len();
            let out = self.dir.join(format!("{index}.ids"));
            let log = fs::File::create(self.dir.join(format!("{index}.log"))).unwrap();
            let (ttl_ms, skew_ms) = terms(&self.target);
            let orders = Orders {
                url: self.target.url(),
                namespace: self.namespace(group),
                worker_bits: self.worker_bits,
                duration_ms,
                out: out.display().to_string(),
                hold_ms: (group == Group::Rebuilding).then_some((100, 600)),
                clock_offset_ms,
                max_wait_ms: 3_000,
                ttl_ms,
                skew_ms,
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
            self.helpers.push(Helper {
                child,
                out,
                group,
                started_ns: super::helper::real_nanos(),
            });
            index
        }

        fn signal(&self, index: usize, signal: &str) {
            let pid = self.helpers[index].child.id().to_string();
            let status = Command::new("kill").args([signal, &pid]).status().unwrap();
            assert!(status.success());
        }

        /// Waits for every helper (at most 30 s), then reads and checks all
        /// that they wrote. `killed` helpers are expected to have died.
        fn finish(mut self, killed: &[usize], faults: &[Fault], ended_ns: u128) {
            let deadline = Instant::now() + Duration::from_secs(30);
            for (index, helper) in self.helpers.iter_mut().enumerate() {
                let status = loop {
                    if let Some(status) = helper.child.try_wait().unwrap() {
                        break status;
                    }
                    if Instant::now() > deadline {
                        let _ = helper.child.kill();
                        panic!("helper {index} did not finish");
                    }
                    thread::sleep(Duration::from_millis(20));
                };
                if !killed.contains(&index) {
                    let log = fs::read_to_string(self.dir.join(format!("{index}.log"))).unwrap();
                    assert!(status.success(), "helper {index} failed: {log}");
                    assert!(!log.contains("panicked"), "helper {index}: {log}");
                }
            }
            let layout = layout(self.worker_bits);
            let processes: Vec<Process> = self
                .helpers
                .iter()
                .map(|h| Process::parse(&fs::read_to_string(&h.out).unwrap_or_default(), &layout))
                .collect();
            for group in [Group::Rebuilding, Group::Healing] {
                let members: Vec<&Process> = processes
                    .iter()
                    .zip(&self.helpers)
                    .filter(|(_, h)| h.group == group)
                    .map(|(p, _)| p)
                    .collect();
                let context = format!("{}/{}", self.target.server.name, group.name());
                check(&context, &layout, &members);
            }
            heal_check(&self.target, &self.helpers, &processes, faults, ended_ns);
            refusals(&self.target, &self.helpers, &processes, faults, ended_ns);
            fs::remove_dir_all(&self.dir).unwrap();
        }
    }

    /// One lease as a helper recorded it: known by its worker id and where
    /// its IDs start.
    #[derive(Debug, Default)]
    struct Lease {
        worker: u64,
        starts_ms: u64,
        /// The highest confirmed fence seen, ms.
        fence_unix_millis: u64,
        /// When it was acquired (real ns).
        acquired_ns: u128,
        /// Its IDs, with when each was issued (real ns).
        ids: Vec<(u64, u128)>,
    }

    /// What one helper process wrote.
    #[derive(Debug, Default)]
    struct Process {
        leases: Vec<Lease>,
        /// When each of its calls was refused (real ns).
        refused: Vec<u128>,
        /// When it issued, batch by batch (real ns).
        issued: Vec<u128>,
        /// IDs below the start of every lease of theirs on their worker id.
        orphans: Vec<u64>,
    }

    impl Process {
        fn parse(text: &str, layout: &Layout) -> Process {
            let mut process = Process::default();
            let mut at = 0;
            let mut ids = vec![];
            for line in text.lines() {
                let words: Vec<&str> = line.split_whitespace().collect();
                let number = |i: usize| words[i].parse::<u128>().unwrap();
                match words.as_slice() {
                    ["lease", _, _, _, _] => process.leases.push(Lease {
                        worker: number(1) as u64,
                        starts_ms: number(2) as u64,
                        fence_unix_millis: number(3) as u64,
                        acquired_ns: number(4),
                        ids: vec![],
                    }),
                    ["fence", _, _, _] => {
                        let (worker, starts) = (number(1) as u64, number(2) as u64);
                        if let Some(lease) = process
                            .leases
                            .iter_mut()
                            .rev()
                            .find(|l| l.worker == worker && l.starts_ms == starts)
                        {
                            lease.fence_unix_millis = lease.fence_unix_millis.max(number(3) as u64);
                        }
                    }
                    ["at", _] => {
                        at = number(1);
                        process.issued.push(at);
                    }
                    ["refused", _] => process.refused.push(number(1)),
                    [id] if id.bytes().all(|b| b.is_ascii_digit()) => {
                        ids.push((id.parse::<u64>().unwrap(), at));
                    }
                    // `end` lines, and a line cut short by SIGKILL.
                    _ => {}
                }
            }
            // Each ID belongs to the lease of its worker id whose IDs start
            // latest at or before its timestamp: the leases of one id
            // partition time (each starts at or past the fences before it).
            for (id, at) in ids {
                let fields = layout.decode(Snowflake::from_u64(id)).unwrap();
                let ms = layout.unix_millis_of(fields.timestamp);
                // Of leases that start alike, the later: an earlier one
                // issued nothing past that start.
                let owner = process
                    .leases
                    .iter_mut()
                    .enumerate()
                    .filter(|(_, l)| l.worker == fields.worker && l.starts_ms <= ms)
                    .max_by_key(|(i, l)| (l.starts_ms, *i));
                match owner {
                    Some((_, lease)) => lease.ids.push((id, at)),
                    None => process.orphans.push(id),
                }
            }
            process
        }
    }

    /// One namespace's IDs: no duplicates, no interleaving holders of one
    /// id, nothing past its lease's fence or before its start.
    fn check(context: &str, layout: &Layout, processes: &[&Process]) {
        let mut all: Vec<u64> = processes
            .iter()
            .flat_map(|p| p.leases.iter().flat_map(|l| l.ids.iter().map(|i| i.0)))
            .chain(processes.iter().flat_map(|p| p.orphans.iter().copied()))
            .collect();
        all.sort_unstable();
        let duplicates = all.windows(2).filter(|w| w[0] == w[1]).count();
        let before_start: usize = processes.iter().map(|p| p.orphans.len()).sum();

        // The leases of one worker id, each as the range of its IDs, must
        // not overlap. The fences promise exactly this, whatever the clocks read.
        let mut interleavings = 0;
        let mut takeovers = 0;
        for worker in 0..=layout.max_worker() {
            let mut ranges: Vec<(u64, u64, usize)> = processes
                .iter()
                .enumerate()
                .flat_map(|(p, process)| process.leases.iter().map(move |l| (p, l)))
                .filter(|(_, l)| l.worker == worker && !l.ids.is_empty())
                .map(|(p, l)| {
                    let first = l.ids.iter().map(|i| i.0).min().unwrap();
                    (first, l.ids.iter().map(|i| i.0).max().unwrap(), p)
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

        let mut past_fence = 0;
        for lease in processes.iter().flat_map(|p| &p.leases) {
            for &(id, _) in &lease.ids {
                let fields = layout.decode(Snowflake::from_u64(id)).unwrap();
                if layout.unix_millis_of(fields.timestamp) >= lease.fence_unix_millis {
                    past_fence += 1;
                }
            }
        }
        let leases: Vec<&Lease> = processes.iter().flat_map(|p| &p.leases).collect();
        println!(
            "  {context}: {} processes, {} IDs, {} leases, {} takeovers; {duplicates} \
             duplicates, {interleavings} interleavings, {past_fence} past the fence, \
             {before_start} before their start",
            processes.len(),
            all.len(),
            leases.len(),
            takeovers,
        );
        assert_eq!(duplicates, 0, "{context}: {duplicates} duplicate IDs");
        assert_eq!(interleavings, 0, "{context}: {interleavings} interleavings");
        assert_eq!(
            past_fence, 0,
            "{context}: {past_fence} IDs past their fence"
        );
        assert_eq!(
            before_start, 0,
            "{context}: {before_start} IDs before their start"
        );
    }

    /// After every loss that no other fault followed within the heal bound
    /// ([`heal_bound`]), each healing helper that ran throughout,
    /// unpaused, issued an ID under a lease acquired after the loss began,
    /// within the bound.
    fn heal_check(
        target: &Target,
        helpers: &[Helper],
        processes: &[Process],
        faults: &[Fault],
        ended_ns: u128,
    ) {
        let bound = heal_bound(target).as_nanos();
        // How long each healing helper took to issue again, by the loss's kind.
        let mut took_ms: Vec<(&str, u128)> = Vec::new();
        for loss in faults.iter().filter(|f| f.loss) {
            let window = loss.end_ns..=loss.end_ns + bound;
            if *window.end() > ended_ns {
                continue;
            }
            let disturbed = faults.iter().any(|f| {
                !std::ptr::eq(f, loss) && f.helper.is_none() && window.contains(&f.start_ns)
            });
            if disturbed {
                continue;
            }
            for (index, (helper, process)) in helpers.iter().zip(processes).enumerate() {
                // Paused across the loss or its window, or killed before the
                // window ended: a kill after it leaves this heal to be timed.
                let interrupted = faults.iter().any(|f| {
                    f.helper == Some(index)
                        && f.start_ns <= *window.end()
                        && (f.end_ns >= loss.start_ns || f.kind == "holder killed")
                });
                if helper.group != Group::Healing
                    || interrupted
                    || helper.started_ns >= loss.start_ns
                {
                    continue;
                }
                let again = process
                    .leases
                    .iter()
                    .filter(|l| l.acquired_ns > loss.start_ns)
                    .flat_map(|l| &l.ids)
                    .map(|&(_, at)| at)
                    .filter(|&at| at > loss.end_ns)
                    .min();
                let Some(at) = again else {
                    panic!(
                        "{}: healing helper {index} never issued again after the {} ending \
                         at {}",
                        target.server.name, loss.kind, loss.end_ns
                    );
                };
                let took = at - loss.end_ns;
                assert!(
                    took <= bound,
                    "{}: healing helper {index} issued again {} ms after the {}, past {} ms",
                    target.server.name,
                    took / 1_000_000,
                    loss.kind,
                    bound / 1_000_000
                );
                took_ms.push((loss.kind, took / 1_000_000));
            }
        }
        let said = |took: &mut Vec<u128>| {
            took.sort_unstable();
            let at = |q: usize| took[(took.len() - 1) * q / 100];
            format!(
                "{} heals, median {} ms, 90th percentile {} ms, longest {} ms",
                took.len(),
                at(50),
                at(90),
                at(100)
            )
        };
        let mut all: Vec<u128> = took_ms.iter().map(|&(_, t)| t).collect();
        if all.is_empty() {
            println!("  {}/healing: no heal to check", target.server.name);
            return;
        }
        println!(
            "  {}/healing, from a loss to issuing again (bound {} ms): {}",
            target.server.name,
            bound / 1_000_000,
            said(&mut all)
        );
        let mut kinds: Vec<&str> = took_ms.iter().map(|&(kind, _)| kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        for kind in kinds {
            let mut took: Vec<u128> = took_ms
                .iter()
                .filter(|&&(k, _)| k == kind)
                .map(|&(_, t)| t)
                .collect();
            println!("    after {kind}: {}", said(&mut took));
        }
    }

    /// How long the healing helpers were refused after each fault of the
    /// registry: from a helper's first refusal within the fault and the
    /// TTL and skew after it, to its next ID. A fault whose window another
    /// fault's reaches (its own window and the heal after it: a heal still
    /// under way is not this fault's cost), and helpers paused or killed in
    /// it, are left out. On etcd, a member lost, the leader too, must cost
    /// none.
    fn refusals(
        target: &Target,
        helpers: &[Helper],
        processes: &[Process],
        faults: &[Fault],
        ended_ns: u128,
    ) {
        let (ttl, skew) = terms(target);
        let after = u128::from(ttl + skew) * 1_000_000;
        let reach = heal_bound(target).as_nanos();
        let mut longest: std::collections::BTreeMap<&str, (u32, u32, u128)> = Default::default();
        for fault in faults.iter().filter(|f| f.helper.is_none()) {
            let window = fault.start_ns..=(fault.end_ns + after).min(ended_ns);
            let disturbed = faults.iter().any(|f| {
                !std::ptr::eq(f, fault)
                    && f.helper.is_none()
                    && f.start_ns <= *window.end()
                    && f.end_ns + reach >= *window.start()
            });
            if disturbed {
                continue;
            }
            let entry = longest.entry(fault.kind).or_default();
            entry.0 += 1;
            let mut worst = 0;
            for (index, (helper, process)) in helpers.iter().zip(processes).enumerate() {
                let interrupted = faults.iter().any(|f| {
                    f.helper == Some(index)
                        && f.start_ns <= *window.end()
                        && f.end_ns >= *window.start()
                });
                if helper.group != Group::Healing
                    || interrupted
                    || helper.started_ns >= fault.start_ns
                {
                    continue;
                }
                let refused: Vec<u128> = process
                    .refused
                    .iter()
                    .copied()
                    .filter(|at| window.contains(at))
                    .collect();
                let (Some(&first), Some(&last)) = (refused.first(), refused.last()) else {
                    continue;
                };
                let again = process
                    .issued
                    .iter()
                    .copied()
                    .find(|&at| at > last)
                    .unwrap_or(ended_ns);
                worst = worst.max(again.saturating_sub(first));
            }
            if worst > 0 {
                entry.1 += 1;
            }
            entry.2 = entry.2.max(worst);
        }
        println!(
            "  {}/healing, the longest refusal after each kind of fault:",
            target.server.name
        );
        for (kind, (count, refused, worst)) in &longest {
            println!(
                "    {kind}: {count} faults, {refused} with a refusal, longest {} ms",
                worst / 1_000_000
            );
        }
        {
            for &kind in target.server.harmless {
                if let Some(&(_, refused, worst)) = longest.get(kind) {
                    assert_eq!(
                        refused,
                        0,
                        "etcd: a {kind} cost the healing helpers a refusal ({} ms): a \
                         majority stood throughout",
                        worst / 1_000_000
                    );
                }
            }
        }
    }

    /// A small deterministic generator: the same seed, the same faults.
    struct Random(u64);

    impl Dice for Random {
        fn between(&mut self, low: u64, high: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            low + self.0 % (high - low).max(1)
        }
    }

    /// Contending and healing helpers under random faults for `duration`,
    /// then the checks.
    fn randomized(target: Target, seed: u64, duration: Duration) {
        let mut random = Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let heal_bound = heal_bound(&target);
        // Half the time, quiet for a while after a fault: the healing
        // helpers can be seen to heal, and the cost of that fault alone be
        // measured.
        let rest_sometimes = |random: &mut Random| {
            if random.between(0, 2) == 0 {
                thread::sleep(heal_bound + Duration::from_millis(500));
            }
        };
        let (ttl_ms, skew_ms) = terms(&target);
        let mut scenario = Scenario::new(target, 2);
        let started = Instant::now();
        let started_ns = super::helper::real_nanos();
        let left_ms =
            |started: Instant| duration.saturating_sub(started.elapsed()).as_millis() as u64;
        // Clocks that disagree, within the skew allowance.
        let skew = skew_ms as i64;
        let offset = |random: &mut Random| random.between(0, skew as u64) as i64 - skew / 2;
        for group in [[Group::Rebuilding; 6].as_slice(), &[Group::Healing; 3]].concat() {
            let o = offset(&mut random);
            scenario.spawn(group, left_ms(started), o);
        }
        let now = super::helper::real_nanos;
        let mut faults: Vec<Fault> = vec![];
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
            let live: Vec<usize> = (0..scenario.helpers.len())
                .filter(|i| !killed.contains(i) && !paused.iter().any(|(p, _)| p == i))
                .collect();
            let pick = live[random.between(0, live.len() as u64) as usize];
            let start_ns = now();
            let choice = random.between(0, 10);
            if choice == 0 {
                // Often past the TTL, so the id is taken meanwhile.
                let pause = Duration::from_millis(random.between(300, 2_500));
                scenario.signal(pick, "-STOP");
                paused.push((pick, Instant::now() + pause));
                let end_ns = now() + pause.as_nanos();
                faults.push(Fault {
                    kind: "holder paused",
                    start_ns,
                    end_ns,
                    helper: Some(pick),
                    loss: false,
                });
                continue;
            }
            if choice == 1 {
                scenario.signal(pick, "-KILL");
                killed.push(pick);
                let o = offset(&mut random);
                let group = scenario.helpers[pick].group;
                scenario.spawn(group, left_ms(started), o);
                faults.push(Fault {
                    kind: "holder killed",
                    start_ns,
                    end_ns: now(),
                    helper: Some(pick),
                    loss: false,
                });
                continue;
            }
            let target = &scenario.target;
            let (kind, helper, loss, ended) = match choice {
                6 => {
                    // Displaced, then a loss: the holder comes back to a
                    // registry that no longer knows who took its id.
                    scenario.signal(pick, "-STOP");
                    thread::sleep(Duration::from_millis(
                        random.between(ttl_ms + 200, ttl_ms + 800),
                    ));
                    target.lose();
                    scenario.signal(pick, "-CONT");
                    faults.push(Fault {
                        kind: "holder paused",
                        start_ns,
                        end_ns: now(),
                        helper: Some(pick),
                        loss: false,
                    });
                    ("holder displaced, then a loss", None, true, None)
                }
                9 => {
                    // Deleted by hand: everything of flakegen's, the healing
                    // helpers' namespace (every one of them loses its lease),
                    // or one record of the rebuilding helpers.
                    let healing = scenario.namespace(Group::Healing);
                    let rebuilding = scenario.namespace(Group::Rebuilding);
                    match random.between(0, 3) {
                        0 => {
                            target.wipe(Wipe::Everything);
                            ("everything wiped", None, true, None)
                        }
                        1 => {
                            target.wipe(Wipe::Namespace(&healing));
                            ("namespace wiped", None, true, None)
                        }
                        _ => {
                            let worker = random.between(0, 4);
                            target.wipe(Wipe::Record(&rebuilding, worker));
                            ("record wiped", None, false, None)
                        }
                    }
                }
                _ => match (target.server.fault)(target, choice, &mut random) {
                    Some((kind, loss, ended)) => (kind, None, loss, ended),
                    None => continue,
                },
            };
            let end_ns = match ended {
                Some(at) => now().saturating_sub(at.elapsed().as_nanos()),
                None => now(),
            };
            faults.push(Fault {
                kind,
                start_ns,
                end_ns,
                helper,
                loss,
            });
            if loss {
                rest_sometimes(&mut random);
            }
        }
        for (helper, _) in paused {
            scenario.signal(helper, "-CONT");
        }
        let mut counts: std::collections::BTreeMap<&str, u32> = Default::default();
        for fault in &faults {
            *counts.entry(fault.kind).or_default() += 1;
        }
        let losses = faults.iter().filter(|f| f.loss).count();
        println!("  faults: {counts:?} ({losses} with data loss)");
        // The helpers stop issuing at the end of `duration`, their deadline:
        // no heal is expected past it (a fault can outlast it, as a
        // failover and the old primary's rebuild take seconds).
        let ended_ns = started_ns + duration.as_nanos();
        scenario.finish(&killed, &faults, ended_ns);
    }
}

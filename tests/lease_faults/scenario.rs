//! A run's helpers, what each wrote, and the faults among them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use flakegen::{Layout, Snowflake};

use crate::checks::{check, heal_check, refusals};
use crate::common::toxiproxy::{Proxy, at_distance};
use crate::faults::{Target, layout, terms};
use crate::helper::Orders;

/// The two groups of helpers, each in a namespace of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    /// Six helpers for four ids, each building, holding a while,
    /// releasing and building again: contention and takeovers.
    Rebuilding,
    /// Three helpers for four ids, each with one generator for the
    /// whole run, which heals after every loss.
    Healing,
}

impl Group {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Group::Rebuilding => "rebuilding",
            Group::Healing => "healing",
        }
    }
}

pub(crate) struct Helper {
    pub(crate) child: Child,
    pub(crate) out: PathBuf,
    pub(crate) group: Group,
    pub(crate) started_ns: u128,
}

/// A fault the driver injected, in real time (ns since 1970).
#[derive(Clone, Debug)]
pub(crate) struct Fault {
    pub(crate) kind: &'static str,
    pub(crate) start_ns: u128,
    pub(crate) end_ns: u128,
    /// The helper it was put on, if one.
    pub(crate) helper: Option<usize>,
    /// It loses the registry's data: every lease is lost.
    pub(crate) loss: bool,
}

pub(crate) struct Scenario {
    pub(crate) target: Target,
    /// The helpers reach the target through these (toxiproxy's, one per
    /// host of its URL), where the network's faults are made.
    pub(crate) network: Vec<Proxy>,
    network_url: String,
    pub(crate) stamp: String,
    pub(crate) dir: PathBuf,
    pub(crate) worker_bits: u32,
    pub(crate) helpers: Vec<Helper>,
}

impl Scenario {
    pub(crate) fn new(target: Target, worker_bits: u32) -> Scenario {
        let nanos = super::helper::real_nanos();
        let stamp = format!("{}-{nanos}", std::process::id());
        let dir = std::env::temp_dir().join(format!("flakegen-faults-{stamp}"));
        fs::create_dir_all(&dir).unwrap();
        let (network_url, network) = at_distance(&target.url(), Duration::ZERO, Duration::ZERO);
        Scenario {
            target,
            network,
            network_url,
            stamp,
            dir,
            worker_bits,
            helpers: vec![],
        }
    }

    pub(crate) fn namespace(&self, group: Group) -> String {
        format!("{}-{}", group.name(), self.stamp)
    }

    /// Starts a helper (this binary, with `--helper`) of `group` for
    /// `duration_ms`; returns its index.
    pub(crate) fn spawn(&mut self, group: Group, duration_ms: u64, clock_offset_ms: i64) -> usize {
        let index = self.helpers.len();
        let out = self.dir.join(format!("{index}.ids"));
        let log = fs::File::create(self.dir.join(format!("{index}.log"))).unwrap();
        let (ttl_ms, skew_ms) = terms(&self.target);
        let orders = Orders {
            url: self.network_url.clone(),
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

    pub(crate) fn signal(&self, index: usize, signal: &str) {
        let pid = self.helpers[index].child.id().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success());
    }

    /// Waits for every helper (at most 30 s), then reads and checks all
    /// that they wrote. `killed` helpers are expected to have died.
    pub(crate) fn finish(mut self, killed: &[usize], faults: &[Fault], ended_ns: u128) {
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
pub(crate) struct Lease {
    pub(crate) worker: u64,
    pub(crate) starts_ms: u64,
    /// The highest confirmed fence seen, ms.
    pub(crate) fence_unix_millis: u64,
    /// When it was acquired (real ns).
    pub(crate) acquired_ns: u128,
    /// Its IDs, with when each was issued (real ns).
    pub(crate) ids: Vec<(u64, u128)>,
}

/// What one helper process wrote.
#[derive(Debug, Default)]
pub(crate) struct Process {
    pub(crate) leases: Vec<Lease>,
    /// When each of its calls was refused (real ns).
    pub(crate) refused: Vec<u128>,
    /// When it issued, batch by batch (real ns).
    pub(crate) issued: Vec<u128>,
    /// IDs below the start of every lease of theirs on their worker id.
    pub(crate) orphans: Vec<u64>,
}

impl Process {
    pub(crate) fn parse(text: &str, layout: &Layout) -> Process {
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

//! The driver: the helpers started, faults injected at random, and the end's checks.

use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakegen::Layout;

use crate::common::replicated::Replicated;
use crate::common::server::{ALL, Dice};
use crate::random::Random;
use crate::scenario::{Fault, Group, Scenario};
use flakegen_contract::{Fixture, Wipe};

/// What the helpers lease from: a registry's replicated service.
pub(crate) type Target = Replicated;

/// The helpers' TTL and skew allowance, in ms.
pub(crate) fn terms(target: &Target) -> (u64, u64) {
    target.server.terms
}

/// How soon after a loss a helper that never rebuilds must issue
/// again, under a new lease: the TTL, the skew allowance and 2 s.
pub(crate) fn heal_bound(target: &Target) -> Duration {
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
                "a primary and its replica".to_owned()
            } else if server.members.is_empty() {
                "one server".to_owned()
            } else {
                format!("a {}-member cluster", server.members.len())
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
pub(crate) fn layout(worker_bits: u32) -> Layout {
    Layout::builder().worker_bits(worker_bits).build().unwrap()
}

/// Contending and healing helpers under random faults for `duration`,
/// then the checks.
pub(crate) fn randomized(target: Target, seed: u64, duration: Duration) {
    let mut random = Random::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
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
    let left_ms = |started: Instant| duration.saturating_sub(started.elapsed()).as_millis() as u64;
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
    let mut far_yet = false;
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
        // Every run meets the network's fault at least once: drawn, or
        // made once a third of the run has passed without it (a failover
        // later can outlast what is left of the run).
        let choice = if !far_yet && started.elapsed() > duration / 3 {
            10
        } else {
            random.between(0, 11)
        };
        far_yet |= choice == 10;
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
            10 => {
                // The registry far away for a while (20 to 150 ms each way,
                // with a fifth of that in jitter), then near again: a
                // route changed, a link congested.
                let one_way = Duration::from_millis(random.between(20, 150));
                let during = Duration::from_millis(random.between(500, 3_000));
                for proxy in &scenario.network {
                    proxy.latency(one_way, one_way / 5);
                }
                thread::sleep(during);
                for proxy in &scenario.network {
                    proxy.remove("latency");
                }
                ("latency", None, false, None)
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

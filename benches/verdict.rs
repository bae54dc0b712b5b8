//! The verdict that ends `cargo bench`: from the figures the run measured,
//! which strategy (and clock) to pick on this machine, why, and the
//! runner-up. The rules are here, apart from the measuring, so that tests
//! hold them on canned figures: a machine with a cheap clock, one whose
//! clock traps into the hypervisor, one starved of CPU.

use std::fmt::Write as _;

/// What a clock read costs here, which decides most of the choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// The kernel's clock read in user space (vDSO): tens of ns.
    CheapClock,
    /// Every read a system call: a VM whose clock source the vDSO cannot
    /// read (`clocksource` other than `tsc` or `kvm-clock`).
    SystemCall,
    /// A read the hypervisor traps: a microsecond or more.
    TrappedClock,
}

impl Machine {
    /// Below this a clock read is the vDSO's; from it, a system call.
    pub const SYSTEM_CALL_NS: f64 = 60.0;
    /// From this a clock read is trapped: the article's 1.1–3.2 µs.
    pub const TRAPPED_NS: f64 = 500.0;

    /// The kind of machine whose `SystemClock` read costs `clock_ns`.
    pub fn of(clock_ns: f64) -> Machine {
        if clock_ns < Self::SYSTEM_CALL_NS {
            Machine::CheapClock
        } else if clock_ns < Self::TRAPPED_NS {
            Machine::SystemCall
        } else {
            Machine::TrappedClock
        }
    }

    fn said(self) -> &'static str {
        match self {
            Machine::CheapClock => "a cheap clock (the vDSO reads it in user space)",
            Machine::SystemCall => "a clock read by a system call",
            Machine::TrappedClock => "a clock the hypervisor traps",
        }
    }
}

/// One strategy's figures, on `SystemClock`.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// `atomic`, `mutex` or `ticker`.
    pub strategy: &'static str,
    /// ns per ID, one thread, below the cap (the floor report).
    pub one_thread_ns: f64,
    /// ns per ID of two threads together, below the cap (the `mechanism`
    /// group), where it ran.
    pub two_threads_ns: Option<f64>,
    /// The share of the layout's cap two threads reach saturated (the CPU
    /// report).
    pub cap_share: Option<f64>,
    /// The cores it burns there.
    pub cores: Option<f64>,
    /// The 99.9th percentile of a call, one thread below the cap (the
    /// latency report), in ns.
    pub p99_9_ns: Option<u64>,
}

/// What the run measured, as the verdict reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    /// A `SystemClock` read, in ns.
    pub clock_ns: f64,
    /// A `TscClock` read, where the CPU has an invariant TSC.
    pub tsc_ns: Option<f64>,
    /// `AtomicGenerator` on `TscClock`, one thread, ns per ID.
    pub atomic_tsc_ns: Option<f64>,
    /// The cores the process may run on.
    pub cores: usize,
    /// The share of the run's time the hypervisor gave other guests
    /// (steal time over wall time), where the kernel says it.
    pub steal_share: Option<f64>,
    /// `atomic`, `mutex` and `ticker`.
    pub strategies: Vec<Measured>,
}

/// A strategy on a clock, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Pick {
    /// The type to build: `AtomicGenerator`, `MutexGenerator` or
    /// `TickerGenerator`.
    pub generator: &'static str,
    /// The clock: `SystemClock` or `TscClock`.
    pub clock: &'static str,
    /// Why, with this run's figures.
    pub reason: String,
}

/// The verdict: the kind of machine, one pick, the runner-up.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What a clock read costs here.
    pub machine: Machine,
    /// Too little CPU for the ticker's thread beside the callers.
    pub starved: bool,
    /// The strategy and clock to build.
    pub pick: Pick,
    /// The next best, and what it asks of the user.
    pub runner_up: Pick,
    /// What `TscClock` saves an `AtomicGenerator` per ID here, in ns, when
    /// it saves more than the noise (1 ns).
    pub tsc_saves_ns: Option<f64>,
}

/// Above this share of steal time, or on one core, the machine is starved:
/// the ticker's thread would take turns with the callers, and its
/// timestamps fall further behind.
pub const STARVED_STEAL: f64 = 0.10;

/// What `TscClock` must save to be worth naming: below it, noise.
const TSC_NOISE_NS: f64 = 1.0;

impl Figures {
    fn strategy(&self, name: &str) -> Option<&Measured> {
        self.strategies.iter().find(|m| m.strategy == name)
    }
}

/// The verdict on `figures`; `None` if the run lacks the atomic strategy's
/// or the ticker's one-thread figure (a filtered run).
pub fn verdict(figures: &Figures) -> Option<Verdict> {
    let atomic = figures.strategy("atomic")?;
    let ticker = figures.strategy("ticker")?;
    let machine = Machine::of(figures.clock_ns);
    let starved = figures.cores < 2
        || figures
            .steal_share
            .is_some_and(|share| share > STARVED_STEAL);
    let tsc_saves_ns = figures
        .atomic_tsc_ns
        .map(|tsc| atomic.one_thread_ns - tsc)
        .filter(|&saved| saved > TSC_NOISE_NS);
    let atomic_pick = |clock: &'static str, ns: f64| Pick {
        generator: "AtomicGenerator",
        clock,
        reason: format!(
            "lock-free and no thread of its own: one clock read and one fetch_add, \
             {ns:.1} ns per ID on one thread here{}",
            two_threads(atomic)
        ),
    };
    let ticker_pick = || Pick {
        generator: "TickerGenerator",
        clock: "SystemClock",
        reason: format!(
            "callers read no clock: {:.1} ns per ID on one thread here, {:.1}x the \
             atomic's, if you accept timestamps up to one unit late and a thread that \
             reads the clock once per unit",
            ticker.one_thread_ns,
            atomic.one_thread_ns / ticker.one_thread_ns
        ),
    };
    let atomic_best = || match (figures.atomic_tsc_ns, tsc_saves_ns) {
        (Some(tsc), Some(_)) => atomic_pick("TscClock", tsc),
        _ => atomic_pick("SystemClock", atomic.one_thread_ns),
    };
    let (pick, runner_up) = if starved {
        // No thread to spare: the ticker's would compete with the callers.
        let mut pick = atomic_best();
        pick.reason.push_str(&format!(
            "; this machine is short of CPU ({}), where the ticker's thread would take \
             turns with the callers",
            starved_said(figures)
        ));
        let mut runner_up = ticker_pick();
        runner_up
            .reason
            .push_str(", once the machine has a core to spare");
        (pick, runner_up)
    } else {
        match machine {
            Machine::CheapClock => (
                atomic_pick("SystemClock", atomic.one_thread_ns),
                ticker_pick(),
            ),
            Machine::SystemCall | Machine::TrappedClock => {
                let mut pick = ticker_pick();
                pick.reason.push_str(&format!(
                    "; a clock read costs {:.0} ns here, which every atomic or mutex call pays",
                    figures.clock_ns
                ));
                (pick, atomic_best())
            }
        }
    };
    Some(Verdict {
        machine,
        starved,
        pick,
        runner_up,
        tsc_saves_ns,
    })
}

fn two_threads(m: &Measured) -> String {
    m.two_threads_ns
        .map_or_else(String::new, |ns| format!(", {ns:.1} ns on two"))
}

fn starved_said(figures: &Figures) -> String {
    match figures.steal_share {
        Some(share) if share > STARVED_STEAL => {
            format!("the hypervisor took {:.0} % of the run", share * 100.0)
        }
        _ => format!("{} core", figures.cores),
    }
}

impl Verdict {
    /// The lines that end the run, each strategy's figures first.
    pub fn said(&self, figures: &Figures) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nverdict: this machine has {} ({:.1} ns a read){}",
            self.machine.said(),
            figures.clock_ns,
            if self.starved {
                format!(", and is short of CPU ({})", starved_said(figures))
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "  {:<8} {:>10} {:>10} {:>11} {:>7} {:>9}",
            "strategy", "1 thread", "2 threads", "cap share", "cores", "p99.9"
        );
        for m in &figures.strategies {
            let _ = writeln!(
                out,
                "  {:<8} {:>7.1} ns {:>10} {:>11} {:>7} {:>9}",
                m.strategy,
                m.one_thread_ns,
                m.two_threads_ns
                    .map_or("n/a".to_owned(), |ns| format!("{ns:.1} ns")),
                m.cap_share
                    .map_or("n/a".to_owned(), |s| format!("{:.1} %", s * 100.0)),
                m.cores.map_or("n/a".to_owned(), |c| format!("{c:.2}")),
                m.p99_9_ns.map_or("n/a".to_owned(), |ns| format!("{ns} ns")),
            );
        }
        if let (Some(mutex), Some(atomic)) = (figures.strategy("mutex"), figures.strategy("atomic"))
        {
            let _ = writeln!(
                out,
                "  MutexGenerator costs {:.1} ns an ID more than the atomic here: Twitter's \
                 reference algorithm, for those who want it",
                mutex.one_thread_ns - atomic.one_thread_ns
            );
        }
        let _ = writeln!(
            out,
            "  pick: {} on {}: {}",
            self.pick.generator, self.pick.clock, self.pick.reason
        );
        let _ = writeln!(
            out,
            "  runner-up: {} on {}: {}",
            self.runner_up.generator, self.runner_up.clock, self.runner_up.reason
        );
        match (self.tsc_saves_ns, figures.tsc_ns) {
            (Some(saved), _) => {
                let _ = writeln!(out, "  TscClock saves {saved:.1} ns an ID here");
            }
            (None, Some(_)) => {
                let _ = writeln!(out, "  TscClock saves nothing measurable here");
            }
            (None, None) => {
                let _ = writeln!(out, "  TscClock: no invariant TSC here");
            }
        }
        out
    }

    /// The verdict as `target/criterion/verdict.json` holds it.
    pub fn json(&self, figures: &Figures) -> serde_json::Value {
        let pick = |p: &Pick| serde_json::json!({"generator": p.generator, "clock": p.clock, "reason": p.reason});
        serde_json::json!({
            "machine": format!("{:?}", self.machine),
            "clock_read_ns": figures.clock_ns,
            "starved": self.starved,
            "pick": pick(&self.pick),
            "runner_up": pick(&self.runner_up),
            "tsc_saves_ns": self.tsc_saves_ns,
            "strategies": figures.strategies.iter().map(|m| serde_json::json!({
                "strategy": m.strategy, "one_thread_ns": m.one_thread_ns,
                "two_threads_ns": m.two_threads_ns, "cap_share": m.cap_share,
                "cores": m.cores, "p99_9_ns": m.p99_9_ns,
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(strategy: &'static str, one_thread_ns: f64) -> Measured {
        Measured {
            strategy,
            one_thread_ns,
            two_threads_ns: Some(one_thread_ns * 1.5),
            cap_share: Some(0.99),
            cores: Some(2.0),
            p99_9_ns: Some(200),
        }
    }

    /// The Intel VM of the issue: vDSO 22.4 ns, TSC 12.8 ns.
    fn cheap() -> Figures {
        Figures {
            clock_ns: 22.4,
            tsc_ns: Some(12.8),
            atomic_tsc_ns: Some(25.0),
            cores: 2,
            steal_share: Some(0.01),
            strategies: vec![
                measured("atomic", 32.5),
                measured("mutex", 39.0),
                measured("ticker", 8.6),
            ],
        }
    }

    #[test]
    fn a_cheap_clock_picks_the_atomic_strategy_on_the_system_clock() {
        let v = verdict(&cheap()).unwrap();
        assert_eq!(v.machine, Machine::CheapClock);
        assert!(!v.starved);
        assert_eq!(
            (v.pick.generator, v.pick.clock),
            ("AtomicGenerator", "SystemClock")
        );
        assert_eq!(v.runner_up.generator, "TickerGenerator");
        assert!(
            v.runner_up.reason.contains("one unit late"),
            "{}",
            v.runner_up.reason
        );
        assert!((v.tsc_saves_ns.unwrap() - 7.5).abs() < 1e-9);
        let said = v.said(&cheap());
        assert!(said.contains("TscClock saves 7.5 ns"), "{said}");
        assert!(said.contains("costs 6.5 ns an ID more"), "{said}");
    }

    #[test]
    fn a_trapped_clock_picks_the_ticker() {
        let figures = Figures {
            clock_ns: 1_100.0,
            tsc_ns: None,
            atomic_tsc_ns: None,
            strategies: vec![
                measured("atomic", 1_130.0),
                measured("mutex", 1_140.0),
                measured("ticker", 9.0),
            ],
            ..cheap()
        };
        let v = verdict(&figures).unwrap();
        assert_eq!(v.machine, Machine::TrappedClock);
        assert_eq!(v.pick.generator, "TickerGenerator");
        assert!(v.pick.reason.contains("1100 ns"), "{}", v.pick.reason);
        assert_eq!(
            (v.runner_up.generator, v.runner_up.clock),
            ("AtomicGenerator", "SystemClock")
        );
        assert_eq!(v.tsc_saves_ns, None);
        assert!(v.said(&figures).contains("no invariant TSC"));
    }

    #[test]
    fn a_system_call_clock_with_a_tsc_names_the_tsc_as_runner_up() {
        let figures = Figures {
            clock_ns: 180.0,
            atomic_tsc_ns: Some(30.0),
            strategies: vec![
                measured("atomic", 190.0),
                measured("mutex", 200.0),
                measured("ticker", 9.0),
            ],
            ..cheap()
        };
        let v = verdict(&figures).unwrap();
        assert_eq!(v.machine, Machine::SystemCall);
        assert_eq!(v.pick.generator, "TickerGenerator");
        assert_eq!(
            (v.runner_up.generator, v.runner_up.clock),
            ("AtomicGenerator", "TscClock")
        );
    }

    #[test]
    fn a_starved_machine_spares_no_thread_for_the_ticker() {
        for figures in [
            Figures {
                steal_share: Some(0.3),
                ..cheap()
            },
            Figures {
                cores: 1,
                clock_ns: 1_100.0,
                ..cheap()
            },
        ] {
            let v = verdict(&figures).unwrap();
            assert!(v.starved, "{figures:?}");
            assert_eq!(v.pick.generator, "AtomicGenerator");
            assert!(v.pick.reason.contains("short of CPU"), "{}", v.pick.reason);
            assert_eq!(v.runner_up.generator, "TickerGenerator");
        }
    }

    #[test]
    fn a_tsc_within_the_noise_is_not_named() {
        let figures = Figures {
            atomic_tsc_ns: Some(32.0),
            ..cheap()
        };
        let v = verdict(&figures).unwrap();
        assert_eq!(v.tsc_saves_ns, None);
        assert!(v.said(&figures).contains("saves nothing measurable"));
    }

    #[test]
    fn a_filtered_run_gives_no_verdict() {
        let figures = Figures {
            strategies: vec![measured("mutex", 39.0)],
            ..cheap()
        };
        assert_eq!(verdict(&figures), None);
    }
}

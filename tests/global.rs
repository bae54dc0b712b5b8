//! The process's generator, `flakegen::next_id()`: each case is a process
//! of its own (this binary run again with the case's name), since a
//! process sets its generator up once.

mod common;

use std::process::{Command, ExitCode};

#[cfg(unix)]
use common::fork::side_by_side;
#[cfg(unix)]
use flakegen::IssueError;
use flakegen::global::SetUpError;
use flakegen::{Builder, Error, Layout};

/// The cases, each run in a child process with its environment.
const CASES: &[(&str, &[(&str, &str)])] = &[
    ("nothing_to_go_on", &[]),
    (
        "a_worker_id_from_the_environment",
        &[("FLAKEGEN_WORKER_ID", "5")],
    ),
    (
        "a_layout_and_a_strategy_from_the_environment",
        &[
            ("FLAKEGEN_WORKER_ID", "300"),
            ("FLAKEGEN_LAYOUT", "sonyflake"),
            ("FLAKEGEN_STRATEGY", "ticker"),
        ],
    ),
    (
        "a_bad_variable_is_named",
        &[("FLAKEGEN_WORKER_ID", "5"), ("FLAKEGEN_STRATEGY", "fast")],
    ),
    (
        "a_worker_id_and_a_lease_both",
        &[
            ("FLAKEGEN_WORKER_ID", "5"),
            ("FLAKEGEN_LEASE_URL", "redis://127.0.0.1:1/0"),
            ("FLAKEGEN_LEASE_NAMESPACE", "x"),
        ],
    ),
    ("set_up_once", &[]),
    // A race is a matter of chance: three processes, eight threads each.
    (
        "first_calls_that_race_all_get_the_one_generator",
        &[("FLAKEGEN_WORKER_ID", "7")],
    ),
    (
        "first_calls_that_race_all_get_the_one_generator",
        &[("FLAKEGEN_WORKER_ID", "7")],
    ),
    (
        "first_calls_that_race_all_get_the_one_generator",
        &[("FLAKEGEN_WORKER_ID", "7")],
    ),
    ("exit_waits_the_leases_own_release_wait", &[]),
    #[cfg(unix)]
    (
        "a_forked_childs_global_on_a_worker_id_is_refused",
        &[("FLAKEGEN_WORKER_ID", "11")],
    ),
    // A value `$VAR` is that variable of the test's own environment.
    #[cfg(all(unix, feature = "redis"))]
    (
        "a_forked_childs_global_leased_from_the_environment_leases_its_own",
        &[
            ("FLAKEGEN_LEASE_URL", "$FLAKEGEN_TEST_REDIS_URL"),
            ("FLAKEGEN_LEASE_NAMESPACE", "global-fork"),
        ],
    ),
    #[cfg(all(unix, feature = "redis"))]
    (
        "restored_copies_of_a_leased_global_lease_again",
        &[
            ("FLAKEGEN_LEASE_URL", "$FLAKEGEN_TEST_REDIS_URL"),
            ("FLAKEGEN_LEASE_NAMESPACE", "global-fork"),
        ],
    ),
];

/// How long, at most, a process whose lease's `release_wait` is 20 ms may
/// take to exit, from the end of its `main`, when the registry never
/// confirms the release: far below the default wait of a second.
const EXIT_BOUND: std::time::Duration = std::time::Duration::from_millis(600);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(case) = args.iter().find_map(|a| a.strip_prefix("--case=")) {
        run(case);
        return ExitCode::SUCCESS;
    }
    let this = std::env::current_exe().unwrap();
    let mut failed = 0;
    for (case, env) in CASES {
        let output = Command::new(&this)
            .arg(format!("--case={case}"))
            .env_remove("FLAKEGEN_WORKER_ID")
            .env_remove("FLAKEGEN_LEASE_URL")
            .env_remove("FLAKEGEN_LAYOUT")
            .env_remove("FLAKEGEN_STRATEGY")
            .envs(env.iter().map(|&(name, value)| (name, from_env(value))))
            .output()
            .unwrap();
        let exited = std::time::SystemTime::now();
        let exit_took = String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("main ended at "))
            .and_then(|nanos| nanos.trim().parse::<u64>().ok())
            .map(|nanos| {
                let ended = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(nanos);
                exited.duration_since(ended).unwrap_or_default()
            });
        if let Some(took) = exit_took.filter(|&took| took > EXIT_BOUND) {
            failed += 1;
            println!(
                "global::{case} ... FAILED\nthe process took {took:?} to exit, past {EXIT_BOUND:?}: \
                 it waited longer than its lease's release_wait"
            );
        } else if output.status.success() {
            println!("global::{case} ... ok");
        } else {
            failed += 1;
            println!(
                "global::{case} ... FAILED\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    println!("\nglobal: {} passed, {failed} failed", CASES.len() - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `value`, or for `$VAR` that variable of this process's environment.
fn from_env(value: &str) -> String {
    match value.strip_prefix('$') {
        Some(var) => std::env::var(var).unwrap_or_else(|_| {
            panic!("{var} is not set: start the test servers (scripts/services.sh start)")
        }),
        None => value.to_owned(),
    }
}

/// One case, in this process: panics if it does not hold.
fn run(case: &str) {
    match case {
        "nothing_to_go_on" => {
            // Never a default worker id: a clear error, every call.
            for _ in 0..3 {
                match flakegen::next_id() {
                    Err(Error::SetUp(e @ SetUpError::NothingToGoOn)) => {
                        let message = e.to_string();
                        for words in ["will not guess a worker id", "FLAKEGEN_WORKER_ID", "set_up"]
                        {
                            assert!(message.contains(words), "{message}");
                        }
                    }
                    other => panic!("{other:?}"),
                }
            }
            assert!(matches!(
                flakegen::global::generator(),
                Err(Error::SetUp(SetUpError::NothingToGoOn))
            ));
        }
        "a_worker_id_from_the_environment" => {
            let first = flakegen::next_id().unwrap();
            let ids: Vec<_> = (0..10_000).map(|_| flakegen::next_id().unwrap()).collect();
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
            assert!(ids[0] > first);
            let generator = flakegen::global::generator().unwrap();
            assert_eq!(generator.worker(), 5);
            assert_eq!(Layout::TWITTER.decode(first).unwrap().worker, 5);
        }
        "a_layout_and_a_strategy_from_the_environment" => {
            let id = flakegen::next_id().unwrap();
            assert_eq!(Layout::SONYFLAKE.decode(id).unwrap().worker, 300);
            let generator = flakegen::global::generator().unwrap();
            assert_eq!(generator.layout(), &Layout::SONYFLAKE);
        }
        "a_bad_variable_is_named" => match flakegen::global::generator().map(|_| ()) {
            Err(
                e @ Error::SetUp(SetUpError::Env {
                    var: "FLAKEGEN_STRATEGY",
                    ..
                }),
            ) => {
                assert!(e.to_string().starts_with("FLAKEGEN_STRATEGY: "), "{e}");
            }
            other => panic!("{other:?}"),
        },
        "a_worker_id_and_a_lease_both" => match flakegen::next_id() {
            Err(e @ Error::SetUp(SetUpError::Env { .. })) => {
                assert!(e.to_string().contains("not both"), "{e}");
            }
            other => panic!("{other:?}"),
        },
        "set_up_once" => {
            let generator = Builder::new().worker(9).build_mutex().unwrap();
            flakegen::global::set_up(generator).unwrap();
            let again = Builder::new().worker(10).build_mutex().unwrap();
            assert_eq!(
                flakegen::global::set_up(again),
                Err(SetUpError::AlreadySetUp)
            );
            let id = flakegen::next_id().unwrap();
            assert_eq!(Layout::TWITTER.decode(id).unwrap().worker, 9);
        }
        "first_calls_that_race_all_get_the_one_generator" => {
            // Each thread's first call finds no generator: one sets it up
            // from the environment, and the others, which waited for it,
            // must take that one, not build a second on worker 7
            // (`WorkerInUse`).
            let start = std::sync::Barrier::new(8);
            std::thread::scope(|scope| {
                for _ in 0..8 {
                    scope.spawn(|| {
                        start.wait();
                        flakegen::next_id().unwrap();
                    });
                }
            });
        }
        "exit_waits_the_leases_own_release_wait" => {
            let lease = flakegen::lease::Lease::new(Unconfirmed::default(), "exit")
                .release_wait(std::time::Duration::from_millis(20));
            let generator = Builder::new().lease(lease).build_atomic().unwrap();
            flakegen::global::set_up(generator).unwrap();
            flakegen::next_id().unwrap();
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            println!("main ended at {nanos}");
        }
        #[cfg(unix)]
        "a_forked_childs_global_on_a_worker_id_is_refused" => {
            flakegen::next_id().unwrap();
            let (parent, child) = side_by_side(
                || {
                    // The worker id is the parent's, which still issues.
                    let refused = (0..1000).all(|_| {
                        matches!(flakegen::next_id(), Err(Error::Issue(IssueError::Copied)))
                    });
                    let generator = flakegen::global::generator().map(|_| ());
                    let copied = matches!(generator, Err(Error::Issue(IssueError::Copied)));
                    format!("{refused} {copied}")
                },
                |_| (0..10_000).filter(|_| flakegen::next_id().is_ok()).count(),
                CHILD_BOUND,
            );
            assert_eq!(parent, 10_000);
            assert_eq!(child, "true true", "(every call refused, and generator())");
        }
        #[cfg(all(unix, feature = "redis"))]
        "a_forked_childs_global_leased_from_the_environment_leases_its_own" => {
            use std::collections::HashSet;
            let span = std::time::Duration::from_secs(1);
            let issue = || {
                let start = std::time::Instant::now();
                let mut ids = Vec::new();
                while start.elapsed() < span {
                    ids.push(flakegen::next_id().unwrap().as_u64());
                }
                ids
            };
            issue();
            let parents_worker = flakegen::global::generator().unwrap().worker();
            let (parent, child) = side_by_side(
                || {
                    let ids = issue();
                    let worker = flakegen::global::generator().unwrap().worker();
                    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
                    format!("{worker}\n{}", ids.join("\n"))
                },
                |_| issue(),
                CHILD_BOUND,
            );
            let mut lines = child.lines();
            let childs_worker: u64 = lines.next().unwrap().parse().unwrap();
            assert_ne!(
                childs_worker, parents_worker,
                "the child leased the parent's id"
            );
            let child: Vec<u64> = lines.map(|id| id.parse().unwrap()).collect();
            assert!(!child.is_empty(), "the child issued nothing");
            let mut seen = HashSet::new();
            let twice = parent.iter().chain(&child).filter(|id| !seen.insert(**id));
            assert_eq!(twice.count(), 0, "IDs issued twice");
            // The child's exit gave its own id back, not the parent's.
            let status = flakegen::global::generator().unwrap().lease().unwrap();
            assert_eq!(status.state, flakegen::lease::LeaseState::Held);
            assert_eq!(status.worker, parents_worker);
            flakegen::next_id().unwrap();
        }
        #[cfg(all(unix, feature = "redis"))]
        "restored_copies_of_a_leased_global_lease_again" => {
            // A fork stands in for a snapshot restored twice: each copy's
            // restore hook calls global::after_restore.
            use std::collections::HashSet;
            flakegen::next_id().unwrap();
            let snapshots = flakegen::global::generator().unwrap().worker();
            let restored = || {
                flakegen::global::after_restore().unwrap();
                let ids: Vec<u64> = (0..10_000)
                    .map(|_| flakegen::next_id().unwrap().as_u64())
                    .collect();
                (flakegen::global::generator().unwrap().worker(), ids)
            };
            let ((parents_worker, parent), child) = side_by_side(
                || {
                    let (worker, ids) = restored();
                    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
                    format!("{worker}\n{}", ids.join("\n"))
                },
                |_| restored(),
                CHILD_BOUND,
            );
            let mut lines = child.lines();
            let childs_worker: u64 = lines.next().unwrap().parse().unwrap();
            let child: Vec<u64> = lines.map(|id| id.parse().unwrap()).collect();
            let workers = HashSet::from([snapshots, parents_worker, childs_worker]);
            assert_eq!(workers.len(), 3, "two copies shared a worker id");
            let mut seen = HashSet::new();
            let twice = parent.iter().chain(&child).filter(|id| !seen.insert(**id));
            assert_eq!(twice.count(), 0, "IDs issued twice");
        }
        other => panic!("no case {other}"),
    }
}

/// How long a forked child of a case may take.
#[cfg(unix)]
const CHILD_BOUND: std::time::Duration = std::time::Duration::from_secs(30);

/// A registry that never answers a release: it hangs for 10 s.
#[derive(Default)]
struct Unconfirmed(flakegen::lease::MemoryRegistry);

impl flakegen::lease::backend::Registry for Unconfirmed {
    fn read(
        &self,
        namespace: &str,
        request: &flakegen::lease::backend::ReadRequest,
    ) -> Result<flakegen::lease::backend::Snapshot, flakegen::lease::LeaseError> {
        self.0.read(namespace, request)
    }
    fn mark(&self, namespace: &str) -> Result<u64, flakegen::lease::LeaseError> {
        self.0.mark(namespace)
    }
    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: flakegen::lease::backend::Expect,
        record: &flakegen::lease::backend::NewRecord<'_>,
    ) -> Result<Option<u64>, flakegen::lease::LeaseError> {
        if record.holder.is_empty() {
            std::thread::sleep(std::time::Duration::from_secs(10));
        }
        self.0.swap(namespace, worker, expect, record)
    }
}

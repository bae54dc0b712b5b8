//! A leased process frozen past its TTL (SIGSTOP, as Lambda freezes an idle
//! environment or a laptop sleeps), then thawed, on each registry's real
//! server: its blocking calls are never refused, since its lease's thread
//! renews at once and the calls wait for that renewal within `max_wait`; and
//! when another holder took its id meanwhile, no ID is issued twice.
//!
//! ```text
//! eval "$(scripts/services.sh start redis postgres)"
//! cargo test --features redis,postgres --test freeze
//! ```

#![cfg(all(unix, any(feature = "redis", feature = "postgres")))]

mod common;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::fork::side_by_side;
use flakegen::lease::{self, Lease};
use flakegen::{Builder, IdGenerator, Layout};

/// The issue's terms: a TTL of 3 s, frozen for 8.
const TTL: Duration = Duration::from_secs(3);
const SKEW: Duration = Duration::from_secs(1);
const FROZEN: Duration = Duration::from_secs(8);
/// The child issues this long before the freeze, and after the thaw.
const BEFORE: Duration = Duration::from_millis(1500);
const AFTER: Duration = Duration::from_secs(3);
/// One worker id: a holder that takes an id during the freeze takes the
/// frozen process's own.
const ONE_WORKER: Layout = Layout::builder()
    .worker_bits(0)
    .sequence_bits(12)
    .build_const();

fn lease(url: &str, namespace: &str) -> Lease {
    Lease::new(lease::connect(url).unwrap(), namespace)
        .ttl(TTL)
        .skew(SKEW)
}

/// A namespace ready for builds that start at once.
fn namespace(registry: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("freeze-{registry}-{}-{nanos}", std::process::id())
}

/// What the frozen child did: every ID it issued, every refusal it met,
/// and the longest time between two of its calls (the freeze, seen from
/// inside).
struct Child {
    ids: Vec<u64>,
    refusals: Vec<String>,
    longest_gap: Duration,
}

impl Child {
    fn said(text: &str) -> Child {
        let mut child = Child {
            ids: Vec::new(),
            refusals: Vec::new(),
            longest_gap: Duration::ZERO,
        };
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("id", id)) => child.ids.push(id.parse().unwrap()),
                Some(("gap", ms)) => child.longest_gap = Duration::from_millis(ms.parse().unwrap()),
                _ => child.refusals.push(line.to_owned()),
            }
        }
        child
    }
}

/// In the child: leases an id, then issues with blocking calls, one every
/// 200 µs, until `BEFORE + FROZEN + AFTER` have passed by the monotonic
/// clock, which runs on while the process is stopped.
fn child_issues(url: &str, namespace: &str) -> String {
    // Room for a renewal that a busy machine makes late: the wait ends as
    // soon as it lands.
    let generator = Builder::new()
        .layout(ONE_WORKER)
        .lease(lease(url, namespace))
        .max_wait(Duration::from_secs(5))
        .build_atomic()
        .unwrap();
    let mut said = String::new();
    let start = Instant::now();
    let mut last = start;
    let mut longest = Duration::ZERO;
    while start.elapsed() < BEFORE + FROZEN + AFTER {
        match generator.next_id() {
            Ok(id) => writeln!(said, "id {}", id.as_u64()).unwrap(),
            Err(e) => writeln!(said, "refused at {:?}: {e}", start.elapsed()).unwrap(),
        }
        let now = Instant::now();
        longest = longest.max(now - last);
        last = now;
        std::thread::sleep(Duration::from_micros(200));
    }
    writeln!(said, "gap {}", longest.as_millis()).unwrap();
    said
}

/// Stops the child for `FROZEN`, from `BEFORE` on; meanwhile `during`.
fn freeze<T>(child: libc::pid_t, during: impl FnOnce() -> T) -> T {
    std::thread::sleep(BEFORE);
    common::fork::stop(child);
    let stopped = Instant::now();
    let done = during();
    std::thread::sleep(FROZEN.saturating_sub(stopped.elapsed()));
    common::fork::thaw(child);
    done
}

/// No ID twice among `ids`.
fn none_twice(ids: &[u64]) {
    let mut seen = HashSet::new();
    let twice: Vec<_> = ids.iter().filter(|id| !seen.insert(**id)).collect();
    assert!(twice.is_empty(), "{} IDs issued twice", twice.len());
}

/// Frozen alone: thawed, not one blocking call is refused.
fn a_thawed_process_is_not_refused(registry: &str, url: &str) {
    let namespace = namespace(registry);
    common::ready(&[&lease(url, &namespace)]);
    let ((), said) = side_by_side(
        || child_issues(url, &namespace),
        |child| freeze(child, || ()),
        BEFORE + FROZEN + AFTER + Duration::from_secs(20),
    );
    let child = Child::said(&said);
    assert!(
        child.longest_gap >= FROZEN - Duration::from_secs(1),
        "never frozen"
    );
    assert!(
        child.refusals.is_empty(),
        "{registry}: refused: {:?}",
        child.refusals
    );
    assert!(!child.ids.is_empty());
    none_twice(&child.ids);
}

/// Frozen while another holder takes its id once its lease expired, issues
/// and gives the id back: the thawed process leases again, and neither
/// issues an ID the other issued.
fn a_holder_that_took_the_id_meanwhile_shares_no_id(registry: &str, url: &str) {
    let namespace = namespace(registry);
    common::ready(&[&lease(url, &namespace)]);
    let (intruders, said) = side_by_side(
        || child_issues(url, &namespace),
        |child| {
            freeze(child, || {
                // The frozen holder's fence lies at most a TTL past its last
                // renewal, and the skew on top of that: then it is free.
                std::thread::sleep(TTL + SKEW + Duration::from_millis(500));
                let intruder = Builder::new()
                    .layout(ONE_WORKER)
                    .lease(lease(url, &namespace))
                    .max_wait(Duration::from_secs(5))
                    .build_atomic()
                    .unwrap();
                let start = Instant::now();
                let mut ids = Vec::new();
                while start.elapsed() < Duration::from_secs(1) {
                    ids.push(intruder.next_id().unwrap().as_u64());
                }
                ids
            })
        },
        BEFORE + FROZEN + AFTER + Duration::from_secs(20),
    );
    let child = Child::said(&said);
    assert!(
        child.longest_gap >= FROZEN - Duration::from_secs(1),
        "never frozen"
    );
    assert!(!intruders.is_empty());
    let all: Vec<u64> = child.ids.iter().chain(&intruders).copied().collect();
    none_twice(&all);
    // It issued again after the thaw, under a lease of its own.
    let last_intruder = intruders.iter().max().unwrap();
    assert!(
        child.ids.iter().any(|id| id > last_intruder),
        "{registry}: the thawed process never issued again ({:?})",
        child.refusals.last()
    );
}

#[cfg(feature = "redis")]
mod redis {
    fn url() -> String {
        super::common::services::env("FLAKEGEN_TEST_REDIS_URL")
    }

    #[test]
    fn a_thawed_process_is_not_refused() {
        super::a_thawed_process_is_not_refused("redis", &url());
    }

    #[test]
    fn a_holder_that_took_the_id_meanwhile_shares_no_id() {
        super::a_holder_that_took_the_id_meanwhile_shares_no_id("redis", &url());
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    fn url() -> String {
        super::common::services::env("FLAKEGEN_TEST_POSTGRES_URL")
    }

    #[test]
    fn a_thawed_process_is_not_refused() {
        super::a_thawed_process_is_not_refused("postgres", &url());
    }

    #[test]
    fn a_holder_that_took_the_id_meanwhile_shares_no_id() {
        super::a_holder_that_took_the_id_meanwhile_shares_no_id("postgres", &url());
    }
}

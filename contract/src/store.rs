//! The registry under test, through its fixture: the terms the suite leases
//! on, and the records it writes and reads straight through the registry.

use std::fmt::Display;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakegen::lease::backend::{Expect, NewRecord, ReadRequest, Record, Registry};
use flakegen::lease::{Lease, LeaseError};
use flakegen::{BuildError, Builder, Clock, Layout, SystemClock};

use crate::{Failover, Fixture, Frozen, Wipe};

/// The terms the suite leases on: short, so that expiry and renewal happen
/// within a test.
pub(crate) const TTL: Duration = Duration::from_millis(300);
pub(crate) const RENEW: Duration = Duration::from_millis(50);
pub(crate) const SKEW: Duration = Duration::from_millis(100);
/// The TTL of the rules about which ids are free, not about time: long
/// enough that no renewal misses it on a busy machine, where the suite's
/// 300 ms can lapse (a renewal's call gets a fifth of the TTL) and a lost
/// lease, taken again, moves its generator to another id.
pub(crate) const STEADY_TTL: Duration = Duration::from_secs(2);

/// A registry under test, and the faults it can be put through.
pub(crate) struct Store<'a> {
    fixture: &'a dyn Fixture,
}

impl<'a> Store<'a> {
    pub(crate) fn new(fixture: &'a dyn Fixture) -> Self {
        Store { fixture }
    }

    pub(crate) fn name(&self) -> &str {
        self.fixture.name()
    }

    pub(crate) fn registry(&self) -> Arc<dyn Registry> {
        self.fixture.registry()
    }

    /// The registry loses every record and its marker.
    pub(crate) fn lose_data(&self) {
        self.fixture.lose_data();
    }

    /// Data of the registry's deleted by hand.
    pub(crate) fn wipe(&self, wipe: Wipe<'_>) {
        self.fixture.wipe(wipe);
    }

    /// The namespace's marker replaced by one of another history.
    pub(crate) fn plant_marker(&self, namespace: &str, marker_unix_millis: u64) {
        assert!(
            self.fixture.plant_marker(namespace, marker_unix_millis),
            "{}: this fixture cannot plant a marker, and this test needs it: implement \
             Fixture::plant_marker, or run the suite without it (leave `plant` out of suite!'s \
             capabilities)",
            self.name()
        );
    }

    /// The registry stops answering until the guard is dropped.
    pub(crate) fn freeze(&self) -> Frozen {
        self.fixture.freeze().unwrap_or_else(|| {
            panic!(
                "{}: this fixture cannot freeze its server, and this test needs it: implement \
                 Fixture::freeze, or run the suite without it (leave `freeze` out of suite!'s capabilities)",
                self.name()
            )
        })
    }

    /// The registry's replica and its failover, if the fixture has one.
    pub(crate) fn failover(&self) -> Option<&'a dyn Failover> {
        self.fixture.failover()
    }

    pub(crate) fn lease(&self, namespace: &str) -> Lease {
        Lease::new(self.registry(), namespace)
            .ttl(TTL)
            .renew_every(RENEW)
            .skew(SKEW)
    }

    /// A leased builder on the system clock.
    pub(crate) fn leased(&self, layout: Layout, namespace: &str) -> Builder {
        Builder::new().layout(layout).lease(self.lease(namespace))
    }

    /// A leased builder on [`STEADY_TTL`], renewed every third of it.
    pub(crate) fn leased_steadily(&self, layout: Layout, namespace: &str) -> Builder {
        Builder::new().layout(layout).lease(
            Lease::new(self.registry(), namespace)
                .ttl(STEADY_TTL)
                .skew(SKEW),
        )
    }

    /// A leased builder whose lost lease stays lost (`Lease::reacquire(false)`):
    /// a holder that is paused for good, or that fails over by itself.
    pub(crate) fn leased_once(&self, layout: Layout, namespace: &str) -> Builder {
        Builder::new()
            .layout(layout)
            .lease(self.lease(namespace).reacquire(false))
    }

    /// Writes `worker`'s record as a holder would have left it: held by
    /// `holder` for `ttl_ms` (free if 0), fenced at `fence_ms`.
    pub(crate) fn put(
        &self,
        namespace: &str,
        worker: u64,
        holder: &str,
        ttl_ms: u64,
        fence_ms: u64,
    ) {
        let registry = self.registry();
        let written = patiently(self.name(), "writing a record", || {
            let snapshot = registry.read(
                namespace,
                &ReadRequest::new(worker + 1).prefer(Some(worker)),
            )?;
            let marker_unix_millis = match snapshot.marker_unix_millis {
                Some(marker) => marker,
                None => registry.mark(namespace)?,
            };
            let version = snapshot
                .records
                .iter()
                .find(|r| r.worker == worker)
                .map(|r| r.version);
            let record = NewRecord {
                holder,
                version: 1 + version.unwrap_or(0),
                ttl_millis: ttl_ms,
                fence_unix_millis: fence_ms,
            };
            let expect = Expect {
                marker_unix_millis,
                version,
            };
            registry.swap(namespace, worker, expect, &record)
        });
        assert!(
            written.is_some(),
            "{}: could not write id {worker}",
            self.name()
        );
    }

    /// Id 0 free with a fence long passed, whenever the registry last lost
    /// its data: a test on a `ManualClock` must not wait out the marker rule.
    pub(crate) fn fresh(&self, namespace: &str) {
        self.put(namespace, 0, "", 0, 0);
    }

    /// The record of `worker`, if any.
    pub(crate) fn record(&self, namespace: &str, worker: u64) -> Option<Record> {
        let registry = self.registry();
        let snapshot = patiently(self.name(), "reading a record", || {
            registry.read(
                namespace,
                &ReadRequest::new(worker + 1).prefer(Some(worker)),
            )
        });
        snapshot.records.into_iter().find(|r| r.worker == worker)
    }

    /// Writes another holder's name over `worker`'s record, retrying if
    /// its holder renews in between.
    pub(crate) fn steal(&self, namespace: &str, worker: u64) {
        let registry = self.registry();
        for _ in 0..20 {
            let record = self.record(namespace, worker).unwrap();
            let expect = Expect {
                marker_unix_millis: record.marker_unix_millis,
                version: Some(record.version),
            };
            let thief = NewRecord {
                holder: "thief",
                version: record.version + 1,
                ttl_millis: 60_000,
                fence_unix_millis: record.fence_unix_millis,
            };
            if patiently(self.name(), "stealing a lease", || {
                registry.swap(namespace, worker, expect, &thief)
            })
            .is_some()
            {
                return;
            }
        }
        panic!("{}: could not steal the lease", self.name());
    }
}

/// An error that says the registry did not answer in time: what a server
/// stalled on a busy machine says (beside two CPU hogs, etcd held reads
/// for 6 s after a leader change, and kube-apiserver did not answer for
/// 10 s), and what the rules that ask again are not about.
pub(crate) trait Stalled: Display {
    fn stalled(&self) -> bool;
}

impl Stalled for LeaseError {
    fn stalled(&self) -> bool {
        matches!(
            self,
            LeaseError::Unreachable { .. }
                | LeaseError::NoQuorum { .. }
                | LeaseError::TooSlow { .. }
        )
    }
}

impl Stalled for BuildError {
    fn stalled(&self) -> bool {
        matches!(self, BuildError::Lease(e) if e.stalled())
    }
}

/// What `call` returns, asked again for up to 30 s while the registry is
/// stalled; any other error fails the rule at once, saying `what` failed.
pub(crate) fn patiently<T, E: Stalled>(
    name: &str,
    what: &str,
    mut call: impl FnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match call() {
            Ok(value) => return value,
            Err(e) if e.stalled() && Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(100))
            }
            Err(e) => panic!("{name}: {what} failed: {e}"),
        }
    }
}

/// A namespace no other test uses.
pub(crate) fn namespace(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

pub(crate) fn now_ms() -> u64 {
    SystemClock.unix_nanos() / 1_000_000
}

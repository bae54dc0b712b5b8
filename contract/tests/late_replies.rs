//! The wipe rules over a correct registry whose replies come back late: a
//! renewal that the store wrote just before the wipe reaches its holder
//! only after the wipe, and the holder then issues up to that renewal's
//! fence, as rule 1 lets it. The rules must count those IDs as the old
//! lease's, not as a heal that trusted the emptied registry: on a busy
//! machine a reply is late by chance, and a rule that misread it failed
//! the README's `cargo test`. Here the fixture makes it happen every time:
//! its wipe waits for a swap that has written and not yet answered.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use flakegen::lease::backend::{Expect, NewRecord, ReadCost, ReadRequest, Registry, Snapshot};
use flakegen::lease::{LeaseError, MemoryRegistry};
use flakegen_contract::{Fixture, Wipe};

/// How long a swap that wrote waits before it answers.
const LATE: Duration = Duration::from_millis(120);

/// Swaps that have written and not yet answered.
#[derive(Default)]
struct InFlight {
    count: Mutex<usize>,
    changed: Condvar,
}

#[derive(Clone)]
struct LateReplies {
    memory: MemoryRegistry,
    in_flight: Arc<InFlight>,
}

impl Registry for LateReplies {
    fn read(&self, ns: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        self.memory.read(ns, request)
    }

    fn mark(&self, ns: &str) -> Result<u64, LeaseError> {
        self.memory.mark(ns)
    }

    fn swap(
        &self,
        ns: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        let wrote = self.memory.swap(ns, worker, expect, record)?;
        if wrote.is_some() {
            let flight = &self.in_flight;
            *flight.count.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            flight.changed.notify_all();
            thread::sleep(LATE);
            *flight.count.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        }
        Ok(wrote)
    }

    fn read_cost(&self) -> ReadCost {
        self.memory.read_cost()
    }
}

impl Fixture for LateReplies {
    fn name(&self) -> &str {
        "memory, with late replies"
    }

    fn registry(&self) -> Arc<dyn Registry> {
        Arc::new(self.clone())
    }

    fn lose_data(&self) {
        self.memory.lose_data();
    }

    /// Wipes while a swap that wrote has not answered yet (a renewal, in
    /// the wipe rules, whose generators renew all the time).
    fn wipe(&self, wipe: Wipe<'_>) {
        let flight = &self.in_flight;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut count = flight.count.lock().unwrap_or_else(PoisonError::into_inner);
        while *count == 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no renewal in flight within 5 s");
            count = flight
                .changed
                .wait_timeout(count, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        match wipe {
            Wipe::Everything => self.memory.lose_data(),
            Wipe::Namespace(ns) => self.memory.delete_namespace(ns),
            Wipe::Record(ns, worker) => self.memory.delete_record(ns, worker),
            other => panic!("no such wipe: {other:?}"),
        }
    }
}

fn fixture() -> LateReplies {
    LateReplies {
        memory: MemoryRegistry::new(),
        in_flight: Arc::default(),
    }
}

#[test]
fn a_late_reply_is_the_old_leases_not_a_heal_record() {
    flakegen_contract::wipes::a_wipe_of_a_record_issues_no_id_twice(&fixture());
}

#[test]
fn a_late_reply_is_the_old_leases_not_a_heal_namespace() {
    flakegen_contract::wipes::a_wipe_of_a_namespace_issues_no_id_twice(&fixture());
}

#[test]
fn a_late_reply_is_the_old_leases_not_a_heal_everything() {
    flakegen_contract::wipes::a_wipe_of_everything_issues_no_id_twice(&fixture());
}

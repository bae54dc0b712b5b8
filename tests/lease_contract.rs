//! The lease contract (see `flakegen::lease`), the suite of
//! `flakegen-contract`, over every registry: `MemoryRegistry` always, and
//! each registry whose feature is on against its replicated service from
//! `scripts/services.sh start` (a primary and a replica, which the failover
//! rules promote; a three-member cluster for etcd).
//!
//! ```text
//! cargo test --test lease_contract                     # memory only, no server
//! eval "$(scripts/services.sh start)"
//! cargo test --all-features --test lease_contract
//! scripts/services.sh stop
//! ```
//!
//! A backend whose feature is on and whose URL is missing fails its tests:
//! they never pass by skipping. A backend's tests that keep to their
//! namespaces run side by side, those that reach its whole server (a loss,
//! a failover) alone; the backends run side by side.

mod common;

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use flakegen::lease::backend::{Expect, NewRecord, ReadCost, ReadRequest, Registry, Snapshot};
use flakegen::lease::inspect::{Inspect, Listing, Survey};
use flakegen::lease::{Lease, LeaseError, MemoryRegistry};
use flakegen_contract::{Failover, Fixture, Frozen, Wipe};

mod memory {
    flakegen_contract::suite!(super::Memory::default(), freeze, failover, inspect, plant);
}

// Each registry's replicated service: a pair through an address that
// follows its primary, with the rules of a failover; the etcd cluster,
// whose rules are restated where a store without a clock differs, and
// which has no failover to detect (a leader lost is no loss).
#[cfg(feature = "postgres")]
mod postgres {
    use crate::common::replicated::Replicated;
    flakegen_contract::suite!(
        Replicated::new(&crate::common::postgres::SERVER),
        freeze,
        failover,
        inspect,
        plant
    );
}

#[cfg(feature = "redis")]
mod redis {
    use crate::common::replicated::Replicated;
    flakegen_contract::suite!(
        Replicated::new(&crate::common::redis::SERVER),
        freeze,
        failover,
        inspect,
        plant
    );
}

#[cfg(feature = "mysql")]
mod mysql {
    use crate::common::replicated::Replicated;
    flakegen_contract::suite!(
        Replicated::new(&crate::common::mysql::SERVER),
        freeze,
        failover,
        inspect,
        plant
    );
}

// The API server, whose losses are Leases deleted: neither a failover
// nor a marker of another history can be made there (a restore that rolls
// one back has tests of its own, in tests/lease_kubernetes.rs).
#[cfg(feature = "kubernetes")]
mod kubernetes {
    use crate::common::replicated::Replicated;
    flakegen_contract::suite!(
        Replicated::new(&crate::common::kubernetes::SERVER),
        freeze,
        inspect,
        marker
    );
}

#[cfg(feature = "etcd")]
mod etcd {
    use crate::common::replicated::Replicated;
    flakegen_contract::suite!(
        Replicated::new(&crate::common::etcd::SERVER),
        freeze,
        inspect,
        plant
    );
}

/// A `MemoryRegistry` that can be frozen as a server can (calls wait until
/// it thaws, or fail as unreachable after the timeout a remote client would
/// give up at), and that fails over to a replica: every client, those made
/// before too, reaches the registry in force.
#[derive(Default)]
struct Memory {
    current: Arc<Mutex<MemoryRegistry>>,
    replica: Mutex<Option<MemoryRegistry>>,
    frozen: Arc<(Mutex<bool>, Condvar)>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Gate {
    current: Arc<Mutex<MemoryRegistry>>,
    frozen: Arc<(Mutex<bool>, Condvar)>,
}

impl Gate {
    /// The registry in force, once it answers.
    fn pass(&self) -> Result<MemoryRegistry, LeaseError> {
        let (frozen, thawed) = &*self.frozen;
        let frozen = lock(frozen);
        let (frozen, _) = thawed
            .wait_timeout_while(frozen, Lease::DEFAULT_TIMEOUT, |frozen| *frozen)
            .unwrap_or_else(PoisonError::into_inner);
        if *frozen {
            return Err(LeaseError::Unreachable {
                address: "memory".to_owned(),
                source: Arc::new(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the registry is frozen",
                )),
            });
        }
        Ok(lock(&self.current).clone())
    }
}

impl Registry for Gate {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        self.pass()?.read(namespace, request)
    }
    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        self.pass()?.mark(namespace)
    }
    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        self.pass()?.swap(namespace, worker, expect, record)
    }
    fn read_cost(&self) -> ReadCost {
        lock(&self.current).read_cost()
    }
    fn inspect(&self) -> Option<&dyn Inspect> {
        Some(self)
    }
}

impl Inspect for Gate {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        self.pass()?.list(namespace)
    }
    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        self.pass()?.namespaces()
    }
    fn survey(&self) -> Result<Survey, LeaseError> {
        self.pass()?.survey()
    }
}

impl Fixture for Memory {
    fn name(&self) -> &str {
        "memory"
    }

    fn registry(&self) -> Arc<dyn Registry> {
        Arc::new(Gate {
            current: Arc::clone(&self.current),
            frozen: Arc::clone(&self.frozen),
        })
    }

    fn lose_data(&self) {
        lock(&self.current).lose_data();
    }

    fn wipe(&self, wipe: Wipe<'_>) {
        let registry = lock(&self.current);
        match wipe {
            Wipe::Everything => registry.lose_data(),
            Wipe::Namespace(namespace) => registry.delete_namespace(namespace),
            Wipe::Record(namespace, worker) => registry.delete_record(namespace, worker),
            other => panic!("no such wipe: {other:?}"),
        }
    }

    fn plant_marker(&self, namespace: &str, marker_unix_millis: u64) -> bool {
        lock(&self.current).plant_marker(namespace, marker_unix_millis);
        true
    }

    fn freeze(&self) -> Option<Frozen> {
        *lock(&self.frozen.0) = true;
        let frozen = Arc::clone(&self.frozen);
        Some(Frozen::new(move || {
            *lock(&frozen.0) = false;
            frozen.1.notify_all();
        }))
    }

    fn failover(&self) -> Option<&dyn Failover> {
        Some(self)
    }
}

impl Failover for Memory {
    fn cut(&self) {
        *lock(&self.replica) = Some(lock(&self.current).replica());
    }

    fn promote(&self) {
        let replica = lock(&self.replica).take();
        // Promoted without a cut: a replica that missed nothing.
        let replica = replica.unwrap_or_else(|| lock(&self.current).replica());
        *lock(&self.current) = replica;
    }

    fn rejoin(&self) {
        // The next cut copies the registry in force.
        *lock(&self.replica) = None;
    }
}

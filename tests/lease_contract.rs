//! The lease contract (see `flakegen::lease`), the suite of
//! `flakegen-contract`, over every registry: `MemoryRegistry` always, and
//! PostgreSQL, Redis and MySQL (MariaDB) when their features are on, at the
//! URLs `scripts/services.sh start` exports.
//!
//! ```text
//! cargo test --test lease_contract                     # memory only, no server
//! eval "$(scripts/services.sh start)"
//! cargo test --features postgres,redis,mysql,tokio --test lease_contract
//! scripts/services.sh stop
//! ```
//!
//! A backend whose feature is on and whose URL is missing fails its tests:
//! they never pass by skipping. Each backend's tests run one at a time (a
//! loss wipes its whole server); the backends run side by side.

mod common;

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use flakegen::lease::backend::{Expect, Listing, NewRecord, Registry, Snapshot};
use flakegen::lease::{DEFAULT_TIMEOUT, LeaseError, MemoryRegistry};
use flakegen_contract::{Fixture, Frozen};

mod memory {
    flakegen_contract::suite!(super::Memory::default());
}

#[cfg(feature = "postgres")]
mod postgres {
    flakegen_contract::suite!(crate::common::backend::Backend::Postgres);
}

#[cfg(feature = "redis")]
mod redis {
    flakegen_contract::suite!(crate::common::backend::Backend::Redis);
}

#[cfg(feature = "mysql")]
mod mysql {
    flakegen_contract::suite!(crate::common::backend::Backend::Mysql);
}

/// A `MemoryRegistry` that can be frozen as a server can: calls wait until
/// it thaws, or fail as unreachable after the timeout a remote client would
/// give up at.
#[derive(Default)]
struct Memory {
    registry: MemoryRegistry,
    frozen: Arc<(Mutex<bool>, Condvar)>,
}

struct Gate {
    registry: MemoryRegistry,
    frozen: Arc<(Mutex<bool>, Condvar)>,
}

impl Gate {
    fn pass(&self) -> Result<(), LeaseError> {
        let (frozen, thawed) = &*self.frozen;
        let frozen = frozen.lock().unwrap_or_else(PoisonError::into_inner);
        let (frozen, _) = thawed
            .wait_timeout_while(frozen, DEFAULT_TIMEOUT, |frozen| *frozen)
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
        Ok(())
    }
}

impl Registry for Gate {
    fn read(
        &self,
        namespace: &str,
        workers: u64,
        prefer: Option<u64>,
    ) -> Result<Snapshot, LeaseError> {
        self.pass()?;
        self.registry.read(namespace, workers, prefer)
    }
    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        self.pass()?;
        self.registry.mark(namespace)
    }
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        self.pass()?;
        self.registry.list(namespace)
    }
    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        self.pass()?;
        self.registry.swap(namespace, worker, expect, record)
    }
}

impl Fixture for Memory {
    fn name(&self) -> &str {
        "memory"
    }

    fn registry(&self) -> Arc<dyn Registry> {
        Arc::new(Gate {
            registry: self.registry.clone(),
            frozen: Arc::clone(&self.frozen),
        })
    }

    fn lose_data(&self) {
        self.registry.lose_data();
    }

    fn freeze(&self) -> Option<Frozen> {
        *self.frozen.0.lock().unwrap_or_else(PoisonError::into_inner) = true;
        let frozen = Arc::clone(&self.frozen);
        Some(Frozen::new(move || {
            *frozen.0.lock().unwrap_or_else(PoisonError::into_inner) = false;
            frozen.1.notify_all();
        }))
    }
}

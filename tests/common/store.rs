//! A registry under test, whichever backends are on, and the faults it can
//! be put through: the lease tests' one fixture.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flakegen::lease::backend::{Expect, NewRecord, Record, Registry};
use flakegen::lease::{Lease, MemoryRegistry};
use flakegen::{Builder, Clock, Layout, SystemClock};

/// The terms the lease tests run on: short, so that expiry and renewal
/// happen within a test.
pub const TTL: Duration = Duration::from_millis(300);
pub const RENEW: Duration = Duration::from_millis(50);
pub const SKEW: Duration = Duration::from_millis(100);

pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A registry under test, and the faults it can be put through.
#[derive(Clone)]
pub enum Store {
    Memory(MemoryRegistry),
    #[cfg(any(feature = "postgres", feature = "redis"))]
    Server(super::backend::Backend),
}

impl Store {
    pub fn all() -> Vec<Store> {
        #[allow(unused_mut)]
        let mut stores = vec![Store::Memory(MemoryRegistry::new())];
        #[cfg(any(feature = "postgres", feature = "redis"))]
        stores.extend(
            super::backend::Backend::all()
                .into_iter()
                .map(Store::Server),
        );
        stores
    }

    pub fn name(&self) -> &'static str {
        match self {
            Store::Memory(_) => "memory",
            #[cfg(any(feature = "postgres", feature = "redis"))]
            Store::Server(backend) => backend.name(),
        }
    }

    pub fn registry(&self) -> Arc<dyn Registry> {
        match self {
            Store::Memory(memory) => Arc::new(memory.clone()),
            #[cfg(any(feature = "postgres", feature = "redis"))]
            Store::Server(backend) => flakegen::lease::connect(&backend.url()).unwrap(),
        }
    }

    /// The registry loses every record and its marker.
    pub fn lose_data(&self) {
        match self {
            Store::Memory(memory) => memory.lose_data(),
            #[cfg(any(feature = "postgres", feature = "redis"))]
            Store::Server(backend) => backend.lose_data(),
        }
    }

    /// The registry loses the index it keeps beside its records (a
    /// namespace an older flakegen wrote); a memory registry keeps none.
    pub fn forget_index(&self, namespace: &str) {
        match self {
            Store::Memory(_) => {}
            #[cfg(any(feature = "postgres", feature = "redis"))]
            Store::Server(backend) => backend.forget_index(namespace),
        }
    }

    /// The registry stops answering until the guard is dropped.
    pub fn freeze(&self) -> impl Drop + '_ {
        struct Thaw<'a>(&'a Store, #[allow(dead_code)] Vec<String>);
        impl Drop for Thaw<'_> {
            fn drop(&mut self) {
                match self.0 {
                    Store::Memory(memory) => memory.set_reachable(true),
                    #[cfg(any(feature = "postgres", feature = "redis"))]
                    Store::Server(_) => super::backend::signal_all(&self.1, "-CONT"),
                }
            }
        }
        match self {
            Store::Memory(memory) => {
                memory.set_reachable(false);
                Thaw(self, vec![])
            }
            #[cfg(any(feature = "postgres", feature = "redis"))]
            Store::Server(backend) => {
                let pids = backend.server_pids();
                assert!(!pids.is_empty(), "no {} server to freeze", backend.name());
                super::backend::signal_all(&pids, "-STOP");
                Thaw(self, pids)
            }
        }
    }

    pub fn lease(&self, namespace: &str) -> Lease {
        Lease::new(self.registry(), namespace)
            .ttl(TTL)
            .renew_every(RENEW)
            .skew(SKEW)
    }

    /// A leased builder on the system clock.
    pub fn leased(&self, layout: Layout, namespace: &str) -> Builder {
        Builder::new().layout(layout).lease(self.lease(namespace))
    }

    /// A leased builder whose lost lease stays lost (`Lease::reacquire(false)`):
    /// a holder that is paused for good, or that fails over by itself.
    pub fn leased_once(&self, layout: Layout, namespace: &str) -> Builder {
        Builder::new()
            .layout(layout)
            .lease(self.lease(namespace).reacquire(false))
    }

    /// Writes `worker`'s record as a holder would have left it: held by
    /// `holder` for `ttl_millis` (free if 0), fenced at `fence_unix_millis`.
    pub fn put(
        &self,
        namespace: &str,
        worker: u64,
        holder: &str,
        ttl_millis: u64,
        fence_unix_millis: u64,
    ) {
        let registry = self.registry();
        let snapshot = registry.read(namespace, worker + 1, Some(worker)).unwrap();
        let marker_unix_millis = match snapshot.marker_unix_millis {
            Some(marker) => marker,
            None => registry.mark(namespace).unwrap(),
        };
        let version = snapshot
            .records
            .iter()
            .find(|r| r.worker == worker)
            .map(|r| r.version);
        let write = NewRecord {
            holder,
            version: 1 + version.unwrap_or(0),
            ttl_millis,
            fence_unix_millis,
        };
        let expect = Expect {
            marker_unix_millis,
            version,
        };
        assert!(
            registry
                .swap(namespace, worker, expect, &write)
                .unwrap()
                .is_some()
        );
    }

    /// Id 0 free with a fence long passed, whenever the registry last lost
    /// its data: a test on a `ManualClock` must not wait out the marker rule.
    pub fn fresh(&self, namespace: &str) {
        self.put(namespace, 0, "", 0, 0);
    }

    /// The record of `worker`, if any.
    pub fn record(&self, namespace: &str, worker: u64) -> Option<Record> {
        let snapshot = self
            .registry()
            .read(namespace, worker + 1, Some(worker))
            .unwrap();
        snapshot.records.into_iter().find(|r| r.worker == worker)
    }

    /// Writes another holder's name over `worker`'s record, retrying if
    /// its holder renews in between.
    pub fn steal(&self, namespace: &str, worker: u64) {
        let registry = self.registry();
        for _ in 0..20 {
            let record = self.record(namespace, worker).unwrap();
            let expect = Expect {
                marker_unix_millis: record.marker_unix_millis,
                version: Some(record.version),
            };
            let write = NewRecord {
                holder: "thief",
                version: record.version + 1,
                ttl_millis: 60_000,
                fence_unix_millis: record.fence_unix_millis,
            };
            if registry
                .swap(namespace, worker, expect, &write)
                .unwrap()
                .is_some()
            {
                return;
            }
        }
        panic!("{}: could not steal the lease", self.name());
    }
}

pub fn namespace(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

pub fn now_ms() -> u64 {
    SystemClock.unix_nanos() / 1_000_000
}

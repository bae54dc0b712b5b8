//! A leased generator dropped on an async runtime's thread never waits for
//! its release there, whatever the crate's features: a registry on a server
//! brings tokio in, and a service may drop its generator in a task without
//! the `tokio` feature. CI runs this file with a registry's feature alone
//! (`cargo test --features redis --test drop_in_runtime`), where the check
//! once was missing.

#![cfg(feature = "remote")]

use std::time::{Duration, Instant};

use flakegen::lease::backend::{Expect, NewRecord, ReadRequest, Registry, Snapshot};
use flakegen::lease::{Lease, LeaseError, MemoryRegistry};
use flakegen::{Builder, IdGenerator};

/// A registry that never answers a release: it hangs for 10 s.
#[derive(Default)]
struct Unconfirmed(MemoryRegistry);

impl Registry for Unconfirmed {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        self.0.read(namespace, request)
    }
    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        self.0.mark(namespace)
    }
    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        if record.holder.is_empty() {
            std::thread::sleep(Duration::from_secs(10));
        }
        self.0.swap(namespace, worker, expect, record)
    }
}

#[test]
fn a_drop_in_a_task_returns_at_once() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let took = runtime.block_on(async {
        tokio::spawn(async {
            let generator = Builder::new()
                .lease(Lease::new(Unconfirmed::default(), "drop"))
                .build_atomic()
                .unwrap();
            generator.next_id().unwrap();
            let started = Instant::now();
            drop(generator);
            started.elapsed()
        })
        .await
        .unwrap()
    });
    // The default release_wait is a second: a drop that waited for it
    // held the runtime's thread that long.
    assert!(
        took < Duration::from_millis(500),
        "the drop held a runtime thread for {took:?}"
    );
    runtime.shutdown_background();
}

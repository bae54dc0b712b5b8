//! A lease registry in memory, so that the leased benchmarks need no server:
//! what they measure is the fence check on the hot path, not the registry.
//! The real registries are tested in `tests/lease.rs`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use flakegen::lease::{AcquireRequest, Grant, LeaseError, LeaseKey, Registry};

/// One worker id's lease: its holder, expiry and fence (ms).
type Record = (Option<String>, Instant, u64);

#[derive(Default)]
pub struct MemoryRegistry {
    records: Mutex<HashMap<(String, u64), Record>>,
}

impl Registry for MemoryRegistry {
    fn acquire(&self, request: &AcquireRequest<'_>) -> Result<Grant, LeaseError> {
        let mut records = self.records.lock().unwrap();
        let now = Instant::now();
        for worker in 0..request.workers {
            let key = (request.namespace.to_owned(), worker);
            let record = records.entry(key).or_insert((None, now, 0));
            if record.0.is_none() || record.1 <= now {
                let previous = record.2;
                let fence = previous.max(request.fence_unix_ms);
                *record = (Some(request.holder.to_owned()), now + request.ttl, fence);
                return Ok(Grant {
                    worker,
                    previous_fence_unix_ms: previous,
                    fence_unix_ms: fence,
                });
            }
        }
        Err(LeaseError::AllHeld {
            namespace: request.namespace.to_owned(),
            held: request.workers,
        })
    }

    fn renew(
        &self,
        lease: &LeaseKey<'_>,
        fence_unix_ms: u64,
        ttl: Duration,
    ) -> Result<u64, LeaseError> {
        let mut records = self.records.lock().unwrap();
        match records.get_mut(&(lease.namespace.to_owned(), lease.worker)) {
            Some(record) if record.0.as_deref() == Some(lease.holder) => {
                record.1 = Instant::now() + ttl;
                record.2 = record.2.max(fence_unix_ms);
                Ok(record.2)
            }
            _ => Err(LeaseError::Lost {
                namespace: lease.namespace.to_owned(),
                worker: lease.worker,
            }),
        }
    }

    fn release(&self, lease: &LeaseKey<'_>, fence_unix_ms: u64) -> Result<(), LeaseError> {
        let mut records = self.records.lock().unwrap();
        if let Some(record) = records.get_mut(&(lease.namespace.to_owned(), lease.worker)) {
            if record.0.as_deref() == Some(lease.holder) {
                *record = (None, Instant::now(), record.2.min(fence_unix_ms));
            }
        }
        Ok(())
    }
}

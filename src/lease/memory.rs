//! A registry in this process's memory, for tests.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::backend::{Expect, Listing, NewRecord, Record, Registry, Snapshot};
use super::error::LeaseError;
use super::error::said;
use crate::clock::units::{ceil_millis, floor_millis};
use crate::clock::{Clock, SystemClock};

/// A [`Registry`] in memory: for testing services that lease worker ids,
/// and for trying out faults a real registry makes hard to stage.
///
/// It keeps the same contract as the real ones (see [the lease
/// docs](super#the-contract)), judges expiry by its own clock (the system
/// clock, or one you give it), and can be told to lose its data or to stop
/// answering. Clone it to share one registry between generators: clones
/// share the data.
///
/// # Examples
///
/// Two generators lease different ids; after a loss, a third waits out the
/// marker rule instead of taking a fence the loss erased.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use flakegen::{Builder, IdGenerator, lease::{Lease, MemoryRegistry}};
///
/// let registry = MemoryRegistry::new();
/// let lease = Lease::new(registry.clone(), "orders")
///     .ttl(Duration::from_millis(300))
///     .skew(Duration::from_millis(100));
/// let a = Builder::new().lease(lease.clone()).build_atomic()?;
/// let b = Builder::new().lease(lease.clone()).build_atomic()?;
/// assert_ne!(a.worker(), b.worker());
///
/// let lost_at = SystemTime::now();
/// registry.lose_data();
/// // The build waits (up to Lease::start_wait) for the TTL and the skew.
/// let c = Builder::new().lease(lease).build_atomic()?;
/// let id = c.next_id()?;
/// let issued_at = c.layout().time_of(c.layout().decode(id)?.timestamp);
/// assert!(issued_at >= lost_at + Duration::from_millis(400));
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone)]
pub struct MemoryRegistry {
    shared: Arc<Shared>,
}

struct Shared {
    clock: Box<dyn Clock>,
    state: Mutex<State>,
}

struct State {
    /// The marker in force; the same for every namespace, like a table's.
    marker_unix_millis: Option<u64>,
    /// What [`Registry::mark`] writes: when the data began.
    began_unix_millis: u64,
    records: BTreeMap<(String, u64), Record>,
    reachable: bool,
}

impl MemoryRegistry {
    /// An empty registry on the system clock. It has lost nothing, so its
    /// first generators need not wait.
    pub fn new() -> Self {
        Self::with_clock(SystemClock)
    }

    /// An empty registry that judges expiry by `clock`, the server's clock.
    pub fn with_clock(clock: impl Clock + 'static) -> Self {
        MemoryRegistry {
            shared: Arc::new(Shared {
                clock: Box::new(clock),
                state: Mutex::new(State {
                    marker_unix_millis: None,
                    began_unix_millis: 0,
                    records: BTreeMap::new(),
                    reachable: true,
                }),
            }),
        }
    }

    /// Loses every record and the marker, as a Redis restarted without
    /// persistence does. The next marker is the moment of the loss.
    pub fn lose_data(&self) {
        let now = self.now_ceil_ms();
        let mut state = self.state();
        state.records.clear();
        state.marker_unix_millis = None;
        state.began_unix_millis = now;
    }

    /// Makes every call fail as [`LeaseError::Unreachable`] (`false`), or
    /// answer again (`true`), as a partition would.
    pub fn set_reachable(&self, reachable: bool) {
        self.state().reachable = reachable;
    }

    /// The record of `worker` in `namespace`, if any.
    pub fn record(&self, namespace: &str, worker: u64) -> Option<Record> {
        self.state()
            .records
            .get(&(namespace.to_owned(), worker))
            .cloned()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Every update leaves the state whole: a panic elsewhere cannot tear it.
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn now_ms(&self) -> u64 {
        floor_millis(self.shared.clock.unix_nanos())
    }

    fn now_ceil_ms(&self) -> u64 {
        ceil_millis(self.shared.clock.unix_nanos())
    }

    /// The state, if the registry answers.
    fn answer(&self) -> Result<std::sync::MutexGuard<'_, State>, LeaseError> {
        let state = self.state();
        if state.reachable {
            Ok(state)
        } else {
            Err(LeaseError::Unreachable {
                address: "memory".to_owned(),
                source: said("set_reachable(false)"),
            })
        }
    }
}

impl Default for MemoryRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("MemoryRegistry")
            .field("marker_ms", &state.marker_unix_millis)
            .field("records", &state.records.len())
            .finish_non_exhaustive()
    }
}

impl Registry for MemoryRegistry {
    fn read(
        &self,
        namespace: &str,
        workers: u64,
        _prefer: Option<u64>,
    ) -> Result<Snapshot, LeaseError> {
        let server_unix_millis = self.now_ms();
        let state = self.answer()?;
        let from = (namespace.to_owned(), 0);
        let to = (namespace.to_owned(), workers);
        // Every record: a memory registry can afford it.
        let records: Vec<Record> = state
            .records
            .range(from..to)
            .map(|(_, r)| r.clone())
            .collect();
        // The lowest id with no record under the marker in force.
        let marker = state.marker_unix_millis;
        let mut fresh = 0;
        for record in records
            .iter()
            .filter(|r| Some(r.marker_unix_millis) == marker)
        {
            if record.worker != fresh {
                break;
            }
            fresh += 1;
        }
        Ok(Snapshot {
            server_unix_millis,
            marker_unix_millis: marker,
            records,
            fresh: (fresh < workers).then_some(fresh),
            more: false,
        })
    }

    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let Snapshot {
            server_unix_millis,
            marker_unix_millis,
            records,
            ..
        } = self.read(namespace, u64::MAX, None)?;
        Ok(Listing {
            server_unix_millis,
            marker_unix_millis,
            records,
        })
    }

    fn mark(&self, _namespace: &str) -> Result<u64, LeaseError> {
        let mut state = self.answer()?;
        let began = state.began_unix_millis;
        Ok(*state.marker_unix_millis.get_or_insert(began))
    }

    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        let server_unix_millis = self.now_ms();
        let mut state = self.answer()?;
        let key = (namespace.to_owned(), worker);
        let found = state.records.get(&key).map(|r| r.version);
        if state.marker_unix_millis != Some(expect.marker_unix_millis) || found != expect.version {
            return Ok(None);
        }
        let stored = Record {
            worker,
            holder: record.holder.to_owned(),
            version: record.version,
            marker_unix_millis: expect.marker_unix_millis,
            expires_unix_millis: if record.ttl_millis == 0 {
                0
            } else {
                server_unix_millis.saturating_add(record.ttl_millis)
            },
            fence_unix_millis: record.fence_unix_millis,
        };
        state.records.insert(key, stored);
        Ok(Some(server_unix_millis))
    }
}

//! A registry in this process's memory, for tests.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "inspect")]
use super::inspect::{Inspect, Listing, Survey, Transport};
use super::{
    Expect, LeaseError, NewRecord, ReadCost, ReadRequest, Record, Registry, Snapshot, said,
};
use crate::clock::units::{ceil_millis, floor_millis};
use crate::clock::{Clock, SystemClock};

/// A [`Registry`] in memory: for testing services that lease worker ids,
/// and for trying out faults a real registry makes hard to stage.
///
/// It keeps the same contract as the real ones (see [the lease
/// docs](crate::lease#the-contract)), judges expiry by the system clock, and
/// can be told to lose its data, to stop answering, or to hand its data to
/// a [`replica`](Self::replica) that a failover promotes. Clone it to share
/// one registry between generators: clones share the data.
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
    /// Which server this is: a marker another one wrote is void here, as a
    /// replica's copy of its primary's marker is once the replica is promoted.
    server: u64,
    state: Mutex<State>,
}

/// Tells the registries of one process apart (see `Shared::server`).
static SERVERS: AtomicU64 = AtomicU64::new(1);

struct State {
    /// Each namespace's marker and high-water mark, and the server that
    /// wrote it: in force only on that server.
    marks: BTreeMap<String, Mark>,
    /// When the data began, for a namespace this registry has never seen:
    /// 0 for a registry made empty in this process (it knows its whole
    /// history), the moment of the last loss after one; `None` on a
    /// replica, whose primary may have written after the copy: the moment
    /// it is marked.
    began_unix_millis: Option<u64>,
    /// Namespaces deleted by hand, and when: their next marker is no earlier.
    deleted: BTreeMap<String, u64>,
    records: BTreeMap<(String, u64), Record>,
    reachable: bool,
}

/// A namespace's marker, its high-water mark, and the server it was
/// written on.
#[derive(Clone, Copy, Debug)]
struct Mark {
    unix_millis: u64,
    high_water: u64,
    server: u64,
}

impl MemoryRegistry {
    /// An empty registry on the system clock. It was made in this process,
    /// so it knows that nothing was lost: its first generators need not wait.
    pub fn new() -> Self {
        Self::with_state(State {
            marks: BTreeMap::new(),
            began_unix_millis: Some(0),
            deleted: BTreeMap::new(),
            records: BTreeMap::new(),
            reachable: true,
        })
    }

    fn with_state(state: State) -> Self {
        MemoryRegistry {
            shared: Arc::new(Shared {
                // Relaxed: only the number's uniqueness matters.
                server: SERVERS.fetch_add(1, Ordering::Relaxed),
                state: Mutex::new(state),
            }),
        }
    }

    /// Loses every record and marker, as a Redis restarted without
    /// persistence does. The next marker is the moment of the loss.
    pub fn lose_data(&self) {
        let now = self.now_ceil_ms();
        let mut state = self.state();
        state.records.clear();
        state.marks.clear();
        state.deleted.clear();
        state.began_unix_millis = Some(now);
    }

    /// Deletes a namespace's records and marker, as an operator's clean-up
    /// script would: the namespace's next marker is the moment of it.
    pub fn delete_namespace(&self, namespace: &str) {
        let now = self.now_ceil_ms();
        let mut state = self.state();
        state.records.retain(|(ns, _), _| ns != namespace);
        state.marks.remove(namespace);
        state.deleted.insert(namespace.to_owned(), now);
    }

    /// Deletes one id's record, as an operator would by hand: the marker
    /// and the high-water mark stay.
    pub fn delete_record(&self, namespace: &str, worker: u64) {
        self.state().records.remove(&(namespace.to_owned(), worker));
    }

    /// Replaces a namespace's marker by one of another server, dated
    /// `marker_unix_millis`: what a failover to a server whose clock runs
    /// ahead leaves behind. For the contract suite's fixtures.
    #[doc(hidden)]
    pub fn plant_marker(&self, namespace: &str, marker_unix_millis: u64) {
        self.state().marks.insert(
            namespace.to_owned(),
            Mark {
                unix_millis: marker_unix_millis,
                high_water: 0,
                server: SERVERS.fetch_add(1, Ordering::Relaxed),
            },
        );
    }

    /// A copy of this registry's data as it stands now, answering as
    /// another server: a replica whose replication stops here, which a
    /// failover then promotes. It holds every record written so far and
    /// none written after; the markers it copied are not in force on it (a
    /// promotion is a change of history, which the registry detects), so
    /// its first acquisition in a namespace writes a new marker, no earlier
    /// than the moment it does and later than the old one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use flakegen::{Builder, IdGenerator, lease::{Lease, MemoryRegistry}};
    ///
    /// let primary = MemoryRegistry::new();
    /// let lease = |registry| Lease::new(registry, "orders").ttl(Duration::from_millis(300)).skew(Duration::from_millis(100));
    /// let a = Builder::new().lease(lease(primary.clone())).build_atomic()?;
    /// let replica = primary.replica();
    /// // The primary goes on renewing a's lease, and the replica misses it.
    /// std::thread::sleep(Duration::from_millis(150));
    /// let confirmed = a.lease().unwrap().fence;
    /// // The replica is promoted: b leases the same id from it, and its
    /// // IDs start past every fence the old primary confirmed.
    /// let b = Builder::new().lease(lease(replica)).build_atomic()?;
    /// assert_eq!(b.worker(), a.worker());
    /// let id = b.next_id()?;
    /// assert!(b.layout().time_of(b.layout().decode(id)?.timestamp) >= confirmed);
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    pub fn replica(&self) -> MemoryRegistry {
        let state = self.state();
        MemoryRegistry::with_state(State {
            marks: state.marks.clone(),
            began_unix_millis: None,
            deleted: state.deleted.clone(),
            records: state.records.clone(),
            reachable: true,
        })
    }

    /// Makes every call fail as [`LeaseError::Unreachable`] (`false`), or
    /// answer again (`true`), as a partition would.
    pub fn set_reachable(&self, reachable: bool) {
        self.state().reachable = reachable;
    }

    /// The namespace's mark in force on this server, if any.
    fn mark_of(&self, state: &State, namespace: &str) -> Option<Mark> {
        state
            .marks
            .get(namespace)
            .filter(|m| m.server == self.shared.server)
            .copied()
    }

    /// The record of `worker` in `namespace`, if any: for tests.
    #[doc(hidden)]
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
        floor_millis(SystemClock.unix_nanos())
    }

    fn now_ceil_ms(&self) -> u64 {
        ceil_millis(SystemClock.unix_nanos())
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
            .field("namespaces", &state.marks.len())
            .field("records", &state.records.len())
            .finish_non_exhaustive()
    }
}

impl Registry for MemoryRegistry {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        let server_unix_millis = self.now_ms();
        let state = self.answer()?;
        let from = (namespace.to_owned(), 0);
        let to = (namespace.to_owned(), request.workers);
        // Every record: a memory registry can afford it.
        let records: Vec<Record> = state
            .records
            .range(from..to)
            .map(|(_, r)| r.clone())
            .collect();
        let mark = self.mark_of(&state, namespace);
        let (marker_unix_millis, high_water) =
            mark.map_or((None, 0), |m| (Some(m.unix_millis), m.high_water));
        Ok(Snapshot {
            server_unix_millis,
            marker_unix_millis,
            records,
            high_water,
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        let now = self.now_ceil_ms();
        let mut state = self.answer()?;
        if let Some(mark) = self.mark_of(&state, namespace) {
            return Ok(mark.unix_millis);
        }
        let unix_millis = match state.marks.get(namespace) {
            // Another server's: its history may hold writes this one never
            // had. Never earlier than now, nor than the marker it replaces.
            Some(old) => now.max(old.unix_millis + 1),
            None => {
                let began = state.began_unix_millis.unwrap_or(now);
                began.max(state.deleted.get(namespace).copied().unwrap_or(0))
            }
        };
        state.marks.insert(
            namespace.to_owned(),
            Mark {
                unix_millis,
                high_water: 0,
                server: self.shared.server,
            },
        );
        Ok(unix_millis)
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
        let mark = self.mark_of(&state, namespace);
        if mark.map(|m| m.unix_millis) != Some(expect.marker_unix_millis) || found != expect.version
        {
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
        if let Some(mark) = state.marks.get_mut(namespace) {
            mark.high_water = mark.high_water.max(worker.saturating_add(1));
        }
        Ok(Some(server_unix_millis))
    }

    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn Inspect> {
        Some(self)
    }

    // Every record of the namespace, in this process's memory.
    fn read_cost(&self) -> ReadCost {
        ReadCost::EveryRecord
    }

    /// The same store: it lives in this process, and a copy of the process
    /// has a copy of it.
    fn reopen(&self) -> Option<Arc<dyn Registry>> {
        Some(Arc::new(self.clone()))
    }
}

#[cfg(feature = "inspect")]
impl Inspect for MemoryRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let Snapshot {
            server_unix_millis,
            marker_unix_millis,
            records,
            high_water,
            ..
        } = self.read(namespace, &ReadRequest::new(u64::MAX))?;
        Ok(Listing {
            server_unix_millis,
            marker_unix_millis,
            high_water,
            records,
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        let state = self.answer()?;
        let mut namespaces: Vec<String> = state.records.keys().map(|(ns, _)| ns.clone()).collect();
        namespaces.dedup();
        Ok(namespaces)
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        drop(self.answer()?);
        Ok(Survey::new(Transport::InProcess, Vec::new()))
    }
}

//! A generator's side of a lease: acquiring it when the generator is built,
//! renewing it from a thread, and releasing it when the generator is dropped.

use core::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{AcquireRequest, LeaseError, LeaseKey, Registry};
use crate::clock::Clock;
use crate::error::BuildError;
use crate::layout::Layout;
use crate::sync::{AtomicU64, Ordering};

const NANOS_PER_MILLI: u64 = 1_000_000;

/// A lease as the builder collects it.
#[derive(Clone)]
pub(crate) struct LeaseSettings {
    pub(crate) registry: Arc<dyn Registry>,
    pub(crate) namespace: String,
    pub(crate) ttl: Duration,
    /// Default: a third of the TTL.
    pub(crate) renew_every: Option<Duration>,
    pub(crate) skew: Duration,
    /// The generator's clock, for the keeper thread; `None` once the
    /// builder's clock changed after the lease was set.
    pub(crate) clock: Option<Arc<dyn Clock>>,
}

/// The default of [`Builder::lease_ttl`](crate::Builder::lease_ttl).
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(10);
/// The default of [`Builder::lease_skew`](crate::Builder::lease_skew).
pub(crate) const DEFAULT_SKEW: Duration = Duration::from_secs(2);

impl fmt::Debug for LeaseSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseSettings")
            .field("namespace", &self.namespace)
            .field("ttl", &self.ttl)
            .field("renew_every", &self.renew_every)
            .field("skew", &self.skew)
            .finish_non_exhaustive()
    }
}

/// Where a lease stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaseState {
    /// The last renewal succeeded.
    Held,
    /// The last renewal failed (the registry is unreachable or erring); the
    /// keeper keeps trying, and the generator runs on to its fence.
    Renewing,
    /// The registry says another holder has the id, or nobody does: the
    /// generator runs on to its fence and then refuses to issue.
    Lost,
}

/// A leased generator's lease: [`IdGenerator::lease`](crate::IdGenerator::lease).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseStatus {
    /// The leased worker id.
    pub worker: u64,
    /// Where the lease stands.
    pub state: LeaseState,
    /// The confirmed fence: every ID the generator issues has a timestamp before it.
    pub fence: SystemTime,
    /// How long the lease lasts, from the last successful renewal, by this
    /// process's monotonic clock; zero once lost or overdue.
    pub time_left: Duration,
    /// Why the last renewal failed, while [`Renewing`](LeaseState::Renewing) or [`Lost`](LeaseState::Lost).
    pub last_error: Option<String>,
}

/// The fence a generator issues below, shared with its keeper.
pub(crate) struct Fence {
    /// The first tick that may not be issued; `u64::MAX` without a lease.
    cap: AtomicU64,
    /// The confirmed fence, in ms since 1970.
    unix_ms: AtomicU64,
}

impl Fence {
    /// No lease: nothing is capped.
    pub(crate) fn none() -> Fence {
        Fence {
            cap: AtomicU64::new(u64::MAX),
            unix_ms: AtomicU64::new(u64::MAX),
        }
    }

    /// A lease's fence at `unix_ms`.
    fn at(layout: &Layout, unix_ms: u64) -> Fence {
        Fence {
            cap: AtomicU64::new(cap_of(layout, unix_ms)),
            unix_ms: AtomicU64::new(unix_ms),
        }
    }

    /// The first tick that may not be issued.
    #[inline]
    pub(crate) fn cap(&self) -> u64 {
        // Relaxed: a fence only moves forward once the server confirmed it, and
        // a caller that reads an older one only refuses sooner. No other memory
        // is published through it.
        self.cap.load(Ordering::Relaxed)
    }

    pub(crate) fn unix_ms(&self) -> u64 {
        // Relaxed: as in `cap`.
        self.unix_ms.load(Ordering::Relaxed)
    }

    /// Moves the fence forward to a confirmed `unix_ms`; never back.
    fn confirm(&self, layout: &Layout, unix_ms: u64) {
        // Relaxed: see `cap`.
        self.unix_ms.fetch_max(unix_ms, Ordering::Relaxed);
        self.cap
            .fetch_max(cap_of(layout, unix_ms), Ordering::Relaxed);
    }
}

/// The first tick at or past a fence: the first tick of the first unit that
/// starts at or after it.
fn cap_of(layout: &Layout, fence_unix_ms: u64) -> u64 {
    let unit = layout.first_unit_at_or_after(fence_unix_ms.saturating_mul(NANOS_PER_MILLI));
    layout.first_tick(unit.min(layout.max_timestamp() + 1))
}

/// The fence a holder lowers its own to when it stops: the start of the
/// unit after its last tick, rounded up to a millisecond.
pub(crate) fn high_water_unix_ms(layout: &Layout, last_tick: u64) -> u64 {
    let last_unit = layout.unit_of_tick(last_tick.min(layout.max_tick()));
    layout
        .unit_start_nanos(last_unit + 1)
        .div_ceil(NANOS_PER_MILLI)
}

/// A lease just acquired, for a generator being built.
pub(crate) struct Acquired {
    pub(crate) worker: u64,
    /// Nothing at or below this tick may be issued: it is the previous holder's.
    pub(crate) last_tick: u64,
    pub(crate) fence: Arc<Fence>,
    pub(crate) keeper: Keeper,
}

/// Where a lease is held, and the keeper thread that renews it. Dropping it
/// stops the thread and gives the lease back.
pub(crate) struct Keeper {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The fence to lower to on release: known once the generator stops.
    release_at_unix_ms: u64,
}

struct Shared {
    registry: Arc<dyn Registry>,
    clock: Arc<dyn Clock>,
    namespace: String,
    holder: String,
    worker: u64,
    ttl: Duration,
    renew_every: Duration,
    layout: Layout,
    fence: Arc<Fence>,
    status: Mutex<Status>,
    stop: Mutex<bool>,
    wake: Condvar,
}

struct Status {
    state: LeaseState,
    renewed_at: Instant,
    last_error: Option<String>,
}

impl LeaseSettings {
    /// Checks the settings against the layout and the generator's lead.
    fn check(
        &self,
        layout: &Layout,
        max_lead: Duration,
    ) -> Result<(Arc<dyn Clock>, Duration), BuildError> {
        let invalid = |reason: String| Err(BuildError::InvalidLease { reason });
        let Some(clock) = self.clock.clone() else {
            return invalid(
                "the clock was set after the lease: call Builder::clock before Builder::lease"
                    .to_owned(),
            );
        };
        let ttl = self.ttl;
        let unit = layout.unit().max(Duration::from_millis(1));
        if ttl < unit {
            return invalid(format!(
                "the TTL ({ttl:?}) is shorter than one unit of the layout or 1 ms ({unit:?}): \
                 use a TTL of seconds"
            ));
        }
        let renew_every = self.renew_every.unwrap_or(ttl / 3);
        if renew_every.is_zero() || renew_every > ttl / 2 {
            return invalid(format!(
                "renewing every {renew_every:?} is not well inside the TTL ({ttl:?}): \
                 renew at most every half TTL (the default is a third)"
            ));
        }
        if max_lead + renew_every >= ttl {
            return invalid(format!(
                "max_lead ({max_lead:?}) plus the renewal interval ({renew_every:?}) reaches \
                 the TTL ({ttl:?}): the generator would run into its fence; \
                 lower max_lead or raise the TTL"
            ));
        }
        super::check_namespace(&self.namespace).map_err(BuildError::Lease)?;
        Ok((clock, renew_every))
    }

    /// Acquires a worker id and starts renewing it.
    ///
    /// `max_wait` and `lead_units` are the generator's: a previous holder's
    /// fence further ahead of this clock than that is an error, not a hang.
    pub(crate) fn acquire(
        self,
        layout: &Layout,
        max_lead: Duration,
        max_wait_nanos: u64,
    ) -> Result<Acquired, BuildError> {
        let (clock, renew_every) = self.check(layout, max_lead)?;
        let holder = holder_token();
        let now_nanos = clock.unix_nanos();
        let now_ms = now_nanos / NANOS_PER_MILLI;
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let request = AcquireRequest {
            namespace: &self.namespace,
            workers: layout.max_worker() + 1,
            holder: &holder,
            ttl: self.ttl,
            fence_unix_ms: now_ms.saturating_add(ttl_ms),
            now_unix_ms: now_ms,
            skew: self.skew,
        };
        let grant = self.registry.acquire(&request).map_err(BuildError::Lease)?;
        let key = LeaseKey {
            namespace: &self.namespace,
            worker: grant.worker,
            holder: &holder,
        };
        let give_back = |error: BuildError| {
            // Nothing was issued: the fence goes back to where it was. Best
            // effort: if this fails too, the lease expires after its TTL.
            let _ = self.registry.release(&key, grant.previous_fence_unix_ms);
            Err(error)
        };

        // Nothing at or past the previous fence belongs to the previous holder.
        let start = layout
            .first_unit_at_or_after(grant.previous_fence_unix_ms.saturating_mul(NANOS_PER_MILLI));
        if start > layout.max_timestamp() {
            return give_back(BuildError::ResumeAfterExhausted {
                end_unix_millis: crate::error::unix_millis(layout.exhausted_at()),
            });
        }
        let lead_units =
            u64::try_from(max_lead.as_nanos() / layout.unit().as_nanos()).unwrap_or(u64::MAX);
        let ready_at = layout.unit_start_nanos(start.saturating_sub(lead_units));
        let wait_nanos = ready_at.saturating_sub(now_nanos);
        if wait_nanos > max_wait_nanos {
            return give_back(BuildError::FenceAhead {
                worker: grant.worker,
                wait_nanos,
            });
        }
        // The fence must lead where this holder starts, not just its clock: if
        // the previous fence is ahead of the clock, ask for a TTL past it.
        let start_ms = grant.previous_fence_unix_ms.max(now_ms);
        let mut fence_ms = grant.fence_unix_ms;
        if fence_ms < start_ms.saturating_add(ttl_ms) {
            fence_ms = match self
                .registry
                .renew(&key, start_ms.saturating_add(ttl_ms), self.ttl)
            {
                Ok(fence_ms) => fence_ms,
                Err(e) => return give_back(BuildError::Lease(e)),
            };
        }
        let fence = Arc::new(Fence::at(layout, fence_ms));

        let shared = Arc::new(Shared {
            registry: self.registry,
            clock,
            namespace: self.namespace,
            holder,
            worker: grant.worker,
            ttl: self.ttl,
            renew_every,
            layout: *layout,
            fence: Arc::clone(&fence),
            status: Mutex::new(Status {
                state: LeaseState::Held,
                renewed_at: Instant::now(),
                last_error: None,
            }),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let for_thread = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name("flakegen-lease".into())
            .spawn(move || for_thread.run())
            .map_err(BuildError::TickerSpawn);
        let thread = match thread {
            Ok(thread) => thread,
            Err(e) => {
                let key = shared.key();
                let _ = shared.registry.release(&key, grant.previous_fence_unix_ms);
                return Err(e);
            }
        };
        Ok(Acquired {
            worker: grant.worker,
            last_tick: layout.first_tick(start).saturating_sub(1),
            fence,
            keeper: Keeper {
                shared,
                thread: Some(thread),
                // Not lowered unless the generator says how far it got.
                release_at_unix_ms: u64::MAX,
            },
        })
    }
}

impl Shared {
    fn key(&self) -> LeaseKey<'_> {
        LeaseKey {
            namespace: &self.namespace,
            worker: self.worker,
            holder: &self.holder,
        }
    }

    fn status(&self) -> std::sync::MutexGuard<'_, Status> {
        // A panic while holding the lock leaves a status that is still whole.
        self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Renews every `renew_every` (retrying sooner after a failure) until
    /// stopped or told that the lease is lost.
    fn run(&self) {
        let retry = (self.renew_every / 4).max(Duration::from_millis(10));
        let mut next = Instant::now() + self.renew_every;
        loop {
            {
                let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
                while !*stop {
                    let Some(left) = next.checked_duration_since(Instant::now()) else {
                        break;
                    };
                    stop = self
                        .wake
                        .wait_timeout(stop, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                if *stop {
                    return;
                }
            }
            let now_ms = self.clock.unix_nanos() / NANOS_PER_MILLI;
            let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
            let asked_at = Instant::now();
            match self
                .registry
                .renew(&self.key(), now_ms.saturating_add(ttl_ms), self.ttl)
            {
                Ok(fence_ms) => {
                    self.fence.confirm(&self.layout, fence_ms);
                    let mut status = self.status();
                    status.state = LeaseState::Held;
                    // The server extended the lease no earlier than the request left.
                    status.renewed_at = asked_at;
                    status.last_error = None;
                    next = asked_at + self.renew_every;
                }
                Err(e @ LeaseError::Lost { .. }) => {
                    let mut status = self.status();
                    status.state = LeaseState::Lost;
                    status.last_error = Some(e.to_string());
                    return;
                }
                Err(e) => {
                    let mut status = self.status();
                    status.state = LeaseState::Renewing;
                    status.last_error = Some(e.to_string());
                    next = Instant::now() + retry;
                }
            }
        }
    }
}

impl Keeper {
    pub(crate) fn status(&self) -> LeaseStatus {
        let shared = &*self.shared;
        let status = shared.status();
        let time_left = match status.state {
            LeaseState::Lost => Duration::ZERO,
            _ => shared.ttl.saturating_sub(status.renewed_at.elapsed()),
        };
        LeaseStatus {
            worker: shared.worker,
            state: status.state,
            fence: UNIX_EPOCH + Duration::from_millis(shared.fence.unix_ms()),
            time_left,
            last_error: status.last_error.clone(),
        }
    }

    /// Gives the lease up with its fence lowered to the start of the unit
    /// after `last_tick`: the generator has stopped issuing. Bounded by the
    /// registry's timeouts.
    pub(crate) fn release(mut self, last_tick: u64) {
        self.release_at_unix_ms = high_water_unix_ms(&self.shared.layout, last_tick);
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        *self
            .shared
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A panic there was already reported by the panic hook.
            let _ = thread.join();
        }
        let shared = &*self.shared;
        // Best effort: if the registry cannot be reached, the lease expires
        // after its TTL and the fence stays where it was, which is also safe.
        let _ = shared
            .registry
            .release(&shared.key(), self.release_at_unix_ms);
    }
}

/// A token no other acquisition uses: host, process, time and a random number.
fn holder_token() -> String {
    let random = std::collections::hash_map::RandomState::new().build_hasher();
    let mut hasher = random;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!("{host}/{}/{:016x}", std::process::id(), hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_and_high_water_marks_keep_holders_apart() {
        let layout = Layout::SONYFLAKE; // 10 ms units
        // A holder that issued up to unit 41 releases at unit 42's start...
        let last_tick = layout.first_tick(41) + 3;
        let released = high_water_unix_ms(&layout, last_tick);
        assert_eq!(released * NANOS_PER_MILLI, layout.unit_start_nanos(42));
        // ...so its successor starts at unit 42, and its own cap stops it there.
        let successor_start = layout.first_unit_at_or_after(released * NANOS_PER_MILLI);
        assert_eq!(successor_start, 42);
        assert_eq!(cap_of(&layout, released), layout.first_tick(42));
        // A fence inside a unit: that unit is the holder's, its successor
        // starts at the next.
        let inside = layout.unit_start_nanos(50) / NANOS_PER_MILLI + 3;
        assert_eq!(cap_of(&layout, inside), layout.first_tick(51));
        assert_eq!(layout.first_unit_at_or_after(inside * NANOS_PER_MILLI), 51);
    }

    #[test]
    fn tokens_differ() {
        assert_ne!(holder_token(), holder_token());
    }
}

//! Acquiring a lease for a generator being built: the registry calls on the
//! lease's own thread, the waiting on the build's side (a thread's sleep or a
//! tokio timer), the two joined by a [`Slot`].

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::fence::{self, Fence};
use super::keeper::{self, Keeper, Keeping, LeaseState};
use super::protocol::{self, Holding, Unconfirmed};
use super::slot::{Done, Slot};
use super::{Lease, LeaseError};
use crate::clock::Clock;
use crate::layout::Layout;

/// The longest a waiting build sleeps before it looks at its lease again.
const START_NAP: Duration = Duration::from_millis(50);

/// What the generator being built allows, which the lease must fit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_lead: Duration,
    /// `max_lead` in whole units.
    pub(crate) lead_units: u64,
    pub(crate) max_wait_nanos: u64,
}

/// A lease just acquired, for a generator being built.
pub(crate) struct Acquired {
    pub(crate) worker: u64,
    /// Nothing at or below this tick may be issued: it is the previous holder's.
    pub(crate) last_tick: u64,
    pub(crate) fence: Arc<Fence>,
    pub(crate) keeper: Keeper,
    /// The previous holder's fence, as a clock reading (ns) less the
    /// generator's lead: the build waits until it is within `max_wait`.
    ready_at: u64,
    clock: Arc<dyn Clock>,
    max_wait_nanos: u64,
    /// When the build gives up waiting, by the monotonic clock.
    give_up: Instant,
}

/// Why a build could not lease: `BuildError` says it to the user.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The terms cannot work.
    Invalid(String),
    /// The registry refused or failed.
    Lease(LeaseError),
    /// The previous holder's fence is further ahead than the generator may wait.
    FenceAhead { worker: u64, wait_nanos: u64 },
    /// The previous holder's fence is past the layout's end.
    Exhausted { end_unix_millis: u64 },
    /// The lease's thread could not be started, or stopped without a word.
    Spawn(std::io::Error),
}

/// The build's end of an acquisition under way on the lease's thread.
/// Dropping it (a build future cancelled) gives the lease back.
pub(crate) struct Pending {
    slot: Arc<Slot<Result<Acquired, Refused>>>,
}

impl Pending {
    /// Blocks until the lease's thread has acquired or given up. Bounded by
    /// the registry's timeouts: the thread never waits for anything else.
    pub(crate) fn wait(self) -> Result<Acquired, Refused> {
        self.slot
            .wait(None, Option::take)
            .flatten()
            .unwrap_or_else(thread_gone)
    }

    /// [`wait`](Self::wait), without blocking a runtime's thread.
    #[cfg(feature = "tokio")]
    pub(crate) async fn wait_async(self) -> Result<Acquired, Refused> {
        let taken = std::future::poll_fn(|cx| self.slot.poll(cx, Option::take)).await;
        taken.unwrap_or_else(thread_gone)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.slot.abandon();
    }
}

fn thread_gone<T>() -> Result<T, Refused> {
    Err(Refused::Spawn(std::io::Error::other(
        "the lease's thread stopped before it acquired a worker id (see the panic above)",
    )))
}

impl Lease {
    /// Checks the terms and starts the lease's thread, which acquires a
    /// worker id for a generator of `layout` that reads `clock`, then keeps
    /// it renewed. Nothing here touches the registry.
    pub(crate) fn start(
        self,
        layout: Layout,
        clock: Arc<dyn Clock>,
        limits: Limits,
    ) -> Result<Pending, Refused> {
        let renew_every = self.check(&layout, limits.max_lead)?;
        let slot = Arc::new(Slot::new());
        let reply = Arc::clone(&slot);
        // Events go where the builder's events go, as with a task it spawned.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        thread::Builder::new()
            .name("flakegen-lease".into())
            .spawn(move || {
                // Whatever happens here, by return or by panic, the build's wait ends.
                let _done = Done(&reply);
                tracing::dispatcher::with_default(&dispatch, || {
                    let acquired = self.acquire(layout, clock, limits, renew_every);
                    keeper::hand_over(acquired, &reply);
                });
            })
            .map_err(Refused::Spawn)?;
        Ok(Pending { slot })
    }

    /// On the lease's thread: takes a worker id and checks that the
    /// generator can use it. Whatever fails after the registry granted the
    /// id gives it back, its fence unmoved.
    fn acquire(
        self,
        layout: Layout,
        clock: Arc<dyn Clock>,
        limits: Limits,
        renew_every: Duration,
    ) -> Result<(Acquired, Holding), Refused> {
        let registry = &*self.registry;
        let terms = self.terms(&layout);
        let token = holder_token();
        let asked_at = Instant::now();
        let now_ms = || fence::floor_millis(clock.unix_nanos());
        let grant = protocol::acquire(registry, &terms, &token, now_ms).map_err(Refused::Lease)?;
        let mut holding = grant.holding;
        let previous = grant.previous_fence_ms;
        let give_back = |holding: &mut Holding, refused: Refused| {
            // Nothing was issued: the fence goes back to the previous holder's.
            // Best effort: if this fails too, the lease expires after its TTL.
            let _ = holding.release(registry, &terms, previous);
            Err(refused)
        };

        // Nothing before the previous fence belongs to this holder.
        let start = fence::start_unit(&layout, previous);
        if start > layout.max_timestamp() {
            let end = layout.exhausted_at().duration_since(UNIX_EPOCH);
            let end_unix_millis = end.map_or(0, fence::millis);
            return give_back(&mut holding, Refused::Exhausted { end_unix_millis });
        }
        let ready_at = layout.unit_start_nanos(start.saturating_sub(limits.lead_units));
        let wait_nanos = ready_at.saturating_sub(clock.unix_nanos());
        // Past max_wait but within the start wait, the build itself waits,
        // with the lease renewed meanwhile.
        let start_wait = u64::try_from(self.start_wait().as_nanos()).unwrap_or(u64::MAX);
        if wait_nanos > limits.max_wait_nanos.max(start_wait) {
            let worker = holding.worker;
            return give_back(&mut holding, Refused::FenceAhead { worker, wait_nanos });
        }
        // An acquisition that took a renewal interval (a slow server) renews
        // before it hands the generator over: its lease may have expired and
        // been taken.
        let mut renewed_at = asked_at;
        if asked_at.elapsed() >= renew_every {
            renewed_at = Instant::now();
            if let Err(Unconfirmed::Lost(e) | Unconfirmed::Failed(e)) =
                holding.renew(registry, &terms, now_ms())
            {
                return give_back(&mut holding, Refused::Lease(e));
            }
        }

        let last_tick = layout.first_tick(start).saturating_sub(1);
        let keeping = Keeping {
            lease: self.clone(),
            layout,
            clock: Arc::clone(&clock),
            renew_every,
        };
        let keeper = Keeper::new(keeping, &holding, renewed_at, last_tick);
        let acquired = Acquired {
            worker: holding.worker,
            last_tick,
            fence: keeper.fence(),
            keeper,
            ready_at,
            clock,
            max_wait_nanos: limits.max_wait_nanos,
            give_up: Instant::now() + Duration::from_nanos(wait_nanos),
        };
        Ok((acquired, holding))
    }
}

impl Acquired {
    /// One step of waiting for a previous holder's fence that lies further
    /// ahead than `max_wait`: how long to sleep before the next step, or
    /// `None` once the generator's own wait is within `max_wait`. Bounded by
    /// the monotonic clock, so a clock that stops cannot hold the build.
    /// Sync and async builds sleep their own way between steps.
    pub(crate) fn start_step(&self) -> Result<Option<Duration>, Refused> {
        let left = self.ready_at.saturating_sub(self.clock.unix_nanos());
        if left <= self.max_wait_nanos {
            return Ok(None);
        }
        let lost = self.keeper.status().state == LeaseState::Lost;
        if lost || Instant::now() >= self.give_up {
            // Nothing was issued: the fence goes back to where this holder
            // started (the keeper's release, when it is dropped with this).
            return Err(if lost {
                Refused::Lease(self.keeper.lost())
            } else {
                Refused::FenceAhead {
                    worker: self.worker,
                    wait_nanos: left,
                }
            });
        }
        Ok(Some(
            Duration::from_nanos(left - self.max_wait_nanos).min(START_NAP),
        ))
    }
}

/// A token no other acquisition uses: host, process, time and a random number.
fn holder_token() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
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
    fn tokens_differ() {
        assert_ne!(holder_token(), holder_token());
    }
}

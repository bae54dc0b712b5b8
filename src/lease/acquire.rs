//! Acquiring a lease for a generator being built.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::fence::{self, Fence};
use super::keeper::{Keeper, LeaseState};
use super::protocol::{self, Holding, Unconfirmed};
use super::{Lease, LeaseError};
use crate::clock::Clock;
use crate::layout::Layout;

/// The longest a waiting build sleeps before it looks at its lease again.
const START_NAP: Duration = Duration::from_millis(50);

/// A lease just acquired, for a generator being built.
pub(crate) struct Acquired {
    pub(crate) worker: u64,
    /// Nothing at or below this tick may be issued: it is the previous holder's.
    pub(crate) last_tick: u64,
    pub(crate) fence: Arc<Fence>,
    pub(crate) keeper: Keeper,
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
    /// The lease's thread could not be started.
    Spawn(std::io::Error),
}

impl Lease {
    /// Acquires a worker id for a generator of `layout` that reads `clock`,
    /// and starts renewing it.
    ///
    /// `max_lead` (also in whole units, `lead_units`) and `max_wait_nanos`
    /// are the generator's. A previous
    /// holder's fence further ahead of this clock than `max_wait` is waited
    /// for here, up to [`start_wait`](Lease::start_wait), so that the
    /// generator's own wait is within `max_wait`; further ahead, it is
    /// refused. Whatever fails after the registry granted the id gives it
    /// back, its fence unmoved.
    pub(crate) fn acquire(
        self,
        layout: &Layout,
        clock: Arc<dyn Clock>,
        max_lead: Duration,
        lead_units: u64,
        max_wait_nanos: u64,
    ) -> Result<Acquired, Refused> {
        let renew_every = self.check(layout, max_lead)?;
        let registry = &*self.registry;
        let terms = self.terms(layout);
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
        let start = fence::start_unit(layout, previous);
        if start > layout.max_timestamp() {
            let end = layout.exhausted_at().duration_since(UNIX_EPOCH);
            let end_unix_millis = end.map_or(0, fence::millis);
            return give_back(&mut holding, Refused::Exhausted { end_unix_millis });
        }
        let ready_at = layout.unit_start_nanos(start.saturating_sub(lead_units));
        let wait_nanos = ready_at.saturating_sub(clock.unix_nanos());
        // Past max_wait but within the start wait, the build itself waits
        // (below), with the lease renewed meanwhile.
        let start_wait = u64::try_from(self.start_wait().as_nanos()).unwrap_or(u64::MAX);
        if wait_nanos > max_wait_nanos.max(start_wait) {
            let worker = holding.worker;
            return give_back(&mut holding, Refused::FenceAhead { worker, wait_nanos });
        }
        // A build that took a renewal interval (queued behind a lock, a slow
        // server) renews before it hands the generator over: its fence may
        // have passed, and its lease may have expired and been taken.
        let mut renewed_at = asked_at;
        if asked_at.elapsed() >= renew_every {
            renewed_at = Instant::now();
            if let Err(Unconfirmed::Lost(e) | Unconfirmed::Failed(e)) =
                holding.renew(registry, &terms, now_ms())
            {
                return give_back(&mut holding, Refused::Lease(e));
            }
        }

        let fence = Arc::new(Fence::at(layout, holding.fence_ms));
        let worker = holding.worker;
        let spawned = Keeper::spawn(
            self.clone(),
            *layout,
            Arc::clone(&clock),
            renew_every,
            holding.clone(),
            renewed_at,
            Arc::clone(&fence),
        );
        let keeper = match spawned {
            Ok(keeper) => keeper,
            Err(e) => return give_back(&mut holding, Refused::Spawn(e)),
        };
        if wait_nanos > max_wait_nanos {
            // Until the generator's own wait is within max_wait, by the
            // monotonic clock: a clock that stops cannot hold the build.
            let give_up = Instant::now() + Duration::from_nanos(wait_nanos);
            loop {
                let left = ready_at.saturating_sub(clock.unix_nanos());
                if left <= max_wait_nanos {
                    break;
                }
                let lost = keeper.status().state == LeaseState::Lost;
                if lost || Instant::now() >= give_up {
                    // Nothing was issued: the fence goes back to where this holder started.
                    keeper.release(layout.first_tick(start).saturating_sub(1));
                    return Err(if lost {
                        Refused::Lease(terms.lost(worker))
                    } else {
                        Refused::FenceAhead {
                            worker,
                            wait_nanos: left,
                        }
                    });
                }
                thread::sleep(Duration::from_nanos(left - max_wait_nanos).min(START_NAP));
            }
        }
        Ok(Acquired {
            worker,
            last_tick: layout.first_tick(start).saturating_sub(1),
            fence,
            keeper,
        })
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

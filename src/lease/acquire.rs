//! Acquiring a lease for a generator being built.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::fence::{self, Fence};
use super::keeper::Keeper;
use super::protocol::{self, Holding, Unconfirmed};
use super::{Lease, LeaseError};
use crate::clock::Clock;
use crate::layout::Layout;

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
    /// `max_lead` and `max_wait_nanos` are the generator's: a previous
    /// holder's fence further ahead of this clock than that is refused, not
    /// waited for. Whatever fails after the registry granted the id gives it
    /// back, its fence unmoved.
    pub(crate) fn acquire(
        self,
        layout: &Layout,
        clock: Arc<dyn Clock>,
        max_lead: Duration,
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
        let lead_units =
            u64::try_from(max_lead.as_nanos() / layout.unit().as_nanos()).unwrap_or(u64::MAX);
        let ready_at = layout.unit_start_nanos(start.saturating_sub(lead_units));
        let wait_nanos = ready_at.saturating_sub(clock.unix_nanos());
        if wait_nanos > max_wait_nanos {
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
        match spawned {
            Ok(keeper) => Ok(Acquired {
                worker,
                last_tick: layout.first_tick(start).saturating_sub(1),
                fence,
                keeper,
            }),
            Err(e) => give_back(&mut holding, Refused::Spawn(e)),
        }
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

//! What every strategy shares, validated once when building: the clock,
//! the layout and its rules, the claim in force (worker and fence), the
//! lease or the seat, the waiting, and the mapping of refusals to errors.

use core::fmt;
#[cfg(feature = "std")]
use core::time::Duration;

use super::claims::Claims;
use super::error::IssueError;
use super::seats::Seat;
use super::state::{Refusal, TickRules};
use super::wait::Instant;
use crate::clock::Clock;
use crate::id::Snowflake;
use crate::layout::Layout;
use crate::lease::Claim;
#[cfg(feature = "std")]
use crate::lease::{LeaseHandle, Release};
use crate::meter;

/// What every strategy shares, validated once when building.
pub struct Core<C> {
    pub(crate) clock: C,
    pub(crate) rules: TickRules,
    /// The longest a call waits for the clock, in ns; never below one unit,
    /// so waiting out a used-up unit is never refused.
    pub(super) max_wait_nanos: u64,
    /// The worker and the fence the ticks are issued under: one claim
    /// without a lease, a new one each time a lease heals.
    pub(super) claims: Claims,
    #[cfg(feature = "std")]
    pub(super) lease: Option<LeaseHandle>,
    /// Its place among this process's generators, without a lease (see
    /// `seats.rs`).
    pub(super) seat: Option<Seat>,
}

/// When the tick after `last` may be issued: the one rule by which a build
/// waits for its lease's start, a `resume_after` ID is judged, and a healed
/// lease is taken into use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Now, or after a wait (ns) within `max_wait`, which a call makes.
    Within(u64),
    /// After a wait (ns) longer than `max_wait`.
    Beyond(u64),
    /// Never: nothing after `last` fits the layout.
    Exhausted,
}

impl Readiness {
    /// The tick after `last`, under `rules` (its lead), as the clock reads
    /// `now_nanos`, for a generator that waits at most `max_wait_nanos`.
    pub(crate) fn of(rules: &TickRules, max_wait_nanos: u64, last: u64, now_nanos: u64) -> Self {
        if last >= rules.max_tick() {
            return Readiness::Exhausted;
        }
        let ready_at = rules.layout().unit_start_nanos(rules.ready_unit(last + 1));
        Readiness::after(ready_at.saturating_sub(now_nanos), max_wait_nanos)
    }

    /// A wait of `wait_nanos`, for a generator that waits at most
    /// `max_wait_nanos`: the one place the bound is compared.
    pub(super) fn after(wait_nanos: u64, max_wait_nanos: u64) -> Self {
        if wait_nanos > max_wait_nanos {
            Readiness::Beyond(wait_nanos)
        } else {
            Readiness::Within(wait_nanos)
        }
    }
}

impl<C: Clock> Core<C> {
    /// The lease's namespace, for the metrics' labels; empty without a lease.
    pub(crate) fn namespace(&self) -> &str {
        #[cfg(feature = "std")]
        return self.lease.as_ref().map_or("", LeaseHandle::namespace);
        #[cfg(not(feature = "std"))]
        ""
    }

    /// When the tick after `last` may be issued, as the clock reads now.
    #[cfg(feature = "std")]
    pub(super) fn readiness(&self, last: u64) -> Readiness {
        Readiness::of(
            &self.rules,
            self.max_wait_nanos,
            last,
            self.clock.unix_nanos(),
        )
    }

    #[inline]
    pub(crate) fn layout(&self) -> &Layout {
        self.rules.layout()
    }

    /// The clock's unit now.
    #[cfg(feature = "std")]
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.layout().units_since_epoch(self.clock.unix_nanos())
    }

    /// The clock's reading now, and its unit.
    pub(crate) fn read_clock(&self) -> (u64, u64) {
        let now_nanos = self.clock.unix_nanos();
        (now_nanos, self.layout().units_since_epoch(now_nanos))
    }

    /// Writes the IDs of ticks `first, first + 1, ...` under `claim` into `ids`.
    #[inline]
    pub(super) fn fill(&self, claim: &Claim, first: u64, ids: &mut [Snowflake]) {
        for (tick, slot) in (first..).zip(ids.iter_mut()) {
            *slot = claim.id(self.layout(), tick);
        }
    }

    /// How long until `unit` starts, seen from clock reading `now_nanos`, if
    /// that is worth waiting for: a wait beyond `max_wait` is an error.
    pub(super) fn wait_for(&self, unit: u64, now_nanos: u64) -> Result<u64, IssueError> {
        let wait = self
            .layout()
            .unit_start_nanos(unit)
            .saturating_sub(now_nanos);
        match Readiness::after(wait, self.max_wait_nanos) {
            Readiness::Beyond(behind_nanos) => Err(IssueError::ClockBehind { behind_nanos }),
            _ => Ok(wait),
        }
    }

    /// Whether clock reading `now_nanos` has reached the start of `unit`: a
    /// wait for it returns at once (a ticker whose thread is late publishes
    /// the unit itself).
    pub(super) fn reached(&self, unit: u64, now_nanos: u64) -> bool {
        now_nanos >= self.layout().unit_start_nanos(unit)
    }

    /// When a wait that starts now must give up, by the monotonic clock:
    /// `max_wait` bounds every wait, whatever the generator's clock does
    /// meanwhile (stops, steps back). `None`: no bound.
    pub(super) fn give_up(&self) -> Option<Instant> {
        #[cfg(feature = "std")]
        return Instant::now().checked_add(Duration::from_nanos(self.max_wait_nanos));
        // Without `std` no call waits (see `wait.rs`).
        #[cfg(not(feature = "std"))]
        None
    }

    /// Whether `claim`'s fence may yet move, or a new lease follow it: a
    /// renewal or a heal is on its way, as far as anyone can tell, unless
    /// the generator shut down or its lease was lost for good.
    #[cfg(feature = "std")]
    pub(super) fn lease_may_move(&self, claim: &Claim) -> bool {
        self.lease
            .as_ref()
            .is_some_and(|lease| !claim.fence().is_closed() && !lease.lost_for_good())
    }

    /// The error for a call refused under `claim` at clock reading `now_nanos`.
    #[cold]
    pub(super) fn refusal_error(
        &self,
        refusal: Refusal,
        claim: &Claim,
        now_nanos: u64,
    ) -> IssueError {
        match refusal {
            Refusal::Exhausted => self.exhausted(),
            Refusal::Fenced if claim.fence().is_closed() => IssueError::ShutDown,
            Refusal::Fenced => IssueError::LeaseLost {
                fence_unix_millis: claim.fence().unix_millis(),
            },
            Refusal::WaitUntil(unit) => match self.wait_for(unit, now_nanos) {
                Ok(wait_nanos) => IssueError::WouldBlock { wait_nanos },
                Err(behind) => behind,
            },
        }
    }

    /// Counts a refusal in the metrics, under the lease's namespace.
    pub(super) fn counted<T>(&self, issued: Result<T, IssueError>) -> Result<T, IssueError> {
        issued.map_err(|e| meter::refused(e, self.namespace()))
    }

    /// What a dropped generator leaves behind without a lease: its seat in
    /// the process, with the last tick it handed out (`last_issued`).
    pub(super) fn leave_seat(&self, last_issued: u64) {
        if let Some(seat) = &self.seat {
            seat.leave(last_issued);
        }
    }

    /// What a dropped leased generator waits for: its lease's `release`,
    /// within `Lease::release_wait`.
    #[cfg(feature = "std")]
    pub(super) fn await_release(&self, release: Release) {
        let wait = self.lease.as_ref().map(LeaseHandle::release_wait);
        if let Some(wait) = wait.filter(|wait| !wait.is_zero()) {
            // Whatever the outcome, the lease expires at worst.
            let _ = release.wait(wait);
        }
    }

    #[cold]
    pub(super) fn exhausted(&self) -> IssueError {
        IssueError::TimestampExhausted {
            end_unix_millis: self.layout().exhausted_at_unix_millis(),
        }
    }
}

impl<C> fmt::Debug for Core<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("layout", self.rules.layout())
            .field("leased", &self.seat.is_none())
            .finish_non_exhaustive()
    }
}

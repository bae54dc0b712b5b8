//! The one front: [`Generator`] implements [`IdGenerator`] once, over a raw
//! strategy that only reserves ticks.
//!
//! As `lock_api::Mutex<R, T>` puts one safe type in front of every raw lock,
//! `Generator<R, C>` puts one generator in front of every way of handing out
//! ticks. What the strategies share lives in [`Core`] (`core.rs`): the
//! clock, the layout and its rules, the claim in force (worker and fence),
//! the waiting and the mapping of refusals to errors. What differs, how concurrent callers are
//! kept apart, is the raw strategy `R`, in `atomic.rs`, `mutex.rs` and
//! `ticker.rs`. Building one is `build.rs`.

use core::fmt;
use core::time::Duration;

use super::IdGenerator;
use super::core::Core;
#[cfg(feature = "std")]
use super::core::Readiness;
use super::error::IssueError;
use super::state::Refusal;
use super::wait::{self, Instant};
use crate::clock::Clock;
#[cfg(feature = "std")]
use crate::clock::SystemClock;
use crate::id::Snowflake;
use crate::layout::Layout;
use crate::lease::Claim;
#[cfg(feature = "std")]
use crate::lease::{LeaseHandle, LeaseStatus, Release};
use crate::meter::{self, Cause};

/// A Snowflake generator: the one implementation of [`IdGenerator`], over a
/// strategy `R` that says how concurrent callers synchronise and a [`Clock`] `C`.
///
/// Name it through its aliases, [`AtomicGenerator`](crate::AtomicGenerator),
/// [`MutexGenerator`](crate::MutexGenerator) and
/// [`TickerGenerator`](crate::TickerGenerator); build it with
/// [`Builder`](crate::Builder), or with `new` for the defaults. Every
/// strategy issues the same IDs under the same rules: the IDs depend only on
/// the calls and the clock, never on the strategy.
///
/// # Examples
///
/// ```
/// use flakegen::{AtomicGenerator, IdGenerator, MutexGenerator};
///
/// let atomic = AtomicGenerator::new(4)?;
/// let mutex = MutexGenerator::new(5)?;
/// assert!(atomic.next_id()? < atomic.next_id()?);
/// assert_eq!(mutex.worker(), 5);
/// # Ok::<(), flakegen::Error>(())
/// ```
#[cfg(feature = "std")]
pub struct Generator<R: Raw<C>, C: Clock = SystemClock> {
    raw: R,
    core: Core<C>,
}

/// A Snowflake generator: the one implementation of [`IdGenerator`], over a
/// strategy `R` and a [`Clock`] `C` (without `std`, the clock is always the
/// program's own).
#[cfg(not(feature = "std"))]
pub struct Generator<R: Raw<C>, C: Clock> {
    raw: R,
    core: Core<C>,
}

/// How `next_id` and `next_ids` wait: on the caller's thread; without
/// `std`, where nothing can sleep, by giving the ticks back and saying how
/// long (as `next_id_or_wait_hint` does), for the caller to wait its own way.
const BLOCKING: Wait = if cfg!(feature = "std") {
    Wait::Block
} else {
    Wait::GiveBack
};

/// What a call does when its ticks must wait for the clock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Sleeps on the caller's thread, within `max_wait`.
    Block,
    /// Gives the ticks back and says how long to wait: the async calls
    /// sleep their own way, then ask again.
    GiveBack,
}

/// Ticks reserved and not yet issuable: `count` of them from `first`,
/// reserved when the clock read unit `now`; the front settles them.
#[derive(Clone, Copy)]
struct Unsettled {
    first: u64,
    count: u64,
    now: u64,
}

impl Unsettled {
    fn end(self) -> u64 {
        self.first + (self.count - 1)
    }
}

/// Ticks a raw strategy has set aside for a blocking call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserved {
    /// Ticks from this one on may be issued at once: the common case.
    Ready(u64),
    /// Ticks from `first` on, reserved when the clock read unit `now`, may
    /// not be issued yet, or ever: the front settles them.
    Pending {
        /// The first tick of the range.
        first: u64,
        /// The clock's unit the reservation was made against.
        now: u64,
    },
}

impl Reserved {
    /// Ticks from `first` on, reserved against unit `now`: ready if they
    /// end below `limit` (`TickRules::limit(now)`, or a view of it) and `cap`.
    #[inline]
    pub(crate) fn judged(first: u64, end: u64, now: u64, limit: u64, cap: u64) -> Reserved {
        if end < limit.min(cap) {
            Reserved::Ready(first)
        } else {
            Reserved::Pending { first, now }
        }
    }
}

pub(crate) use self::sealed::{Raw, Start};

mod sealed {
    use super::{BuildError, Claim, Clock, Core, Instant, Refusal, Reserved, wait};

    /// How a strategy keeps concurrent callers apart: its only job is to hand
    /// out disjoint ranges of ticks. Public in name only (the module is
    /// private), so no other crate can implement it.
    pub trait Raw<C: Clock>: Sized + Send + Sync {
        /// The public name of the generator, for `Debug`.
        const NAME: &'static str;

        /// Reserves `count` (at least 1) ticks for a blocking call, whatever
        /// the clock, and says whether they may be issued at once below
        /// `claim`'s cap: the front waits for them if need be. `Err` only
        /// for `Refusal::Exhausted`, and then nothing is reserved.
        fn reserve(&self, core: &Core<C>, claim: &Claim, count: u64) -> Result<Reserved, Refusal>;

        /// Reserves `count` ticks only if they may be issued at once below
        /// `claim`'s cap; otherwise reserves nothing and says why, with the
        /// clock reading (ns) it judged by.
        fn try_reserve(
            &self,
            core: &Core<C>,
            claim: &Claim,
            count: u64,
        ) -> Result<u64, (Refusal, u64)>;

        /// Blocks until the clock reaches the start of `unit`, or until the
        /// monotonic clock reaches `give_up`; the clock read `now_nanos` a
        /// moment ago. `Err` with how far behind the clock still is.
        #[cold]
        fn wait_until(
            &self,
            core: &Core<C>,
            unit: u64,
            now_nanos: u64,
            give_up: Option<Instant>,
        ) -> Result<(), u64> {
            wait::until_unit(&core.clock, core.layout(), unit, now_nanos, give_up)
        }

        /// Gives back ticks `first..=end`, reserved by `reserve` and refused
        /// at the fence, unless later ticks were reserved since: a refusal
        /// then consumes nothing, and a generator whose lease recovers
        /// issues again at once.
        fn give_back(&self, first: u64, end: u64);

        /// Moves the counter for a new claim that may not issue `last` or
        /// below, as `TickRules::advanced` says, in one read-modify-write
        /// (or under the lock).
        fn advance(&self, core: &Core<C>, last: u64);

        /// Moves the counter to `tick` if it is below, so that every tick
        /// reserved from now on lies past it; returns the last tick handed
        /// out before. One read-modify-write, so each reservation is either
        /// counted in the result or lies past `tick`.
        fn seal(&self, tick: u64) -> u64;

        /// The last tick handed out, for `Debug`.
        fn last_issued(&self) -> u64;
    }

    /// How a strategy is set up by default, apart from [`Raw`] because the
    /// ticker's default (a thread with its own clone of the clock) needs more
    /// of the clock than issuing does.
    pub trait Start<C: Clock>: Raw<C> {
        /// Sets up the strategy with nothing issued at or below tick `last`.
        fn start(core: &Core<C>, last: u64) -> Result<Self, BuildError>;
    }
}

use super::error::BuildError;

impl<R: Raw<C>, C: Clock> Generator<R, C> {
    pub(super) fn from_parts(raw: R, core: Core<C>) -> Self {
        Generator { raw, core }
    }

    #[cfg(feature = "std")]
    pub(crate) fn raw(&self) -> &R {
        &self.raw
    }

    #[cfg(feature = "std")]
    pub(crate) fn core(&self) -> &Core<C> {
        &self.core
    }

    /// Reserves `count` ticks under the claim in force and returns the first
    /// once they may be issued, with the claim they were judged by.
    #[inline(always)]
    fn issue(&self, count: u64, wait: Wait) -> Result<(u64, &Claim), IssueError> {
        // Before the reservation: see `claims.rs`.
        let claim = self.core.claims.current();
        // Before the strategy too, whose lock the parent may have held at
        // the fork: a forked child takes nothing of its parent's.
        if claim.is_copy() {
            return Err(IssueError::Copied);
        }
        self.issue_under(claim, count, wait)
    }

    #[inline(always)]
    fn issue_under<'a>(
        &'a self,
        claim: &'a Claim,
        count: u64,
        wait: Wait,
    ) -> Result<(u64, &'a Claim), IssueError> {
        match self.raw.reserve(&self.core, claim, count) {
            Ok(Reserved::Ready(first)) => Ok((first, claim)),
            Ok(Reserved::Pending { first, now }) => {
                self.settle(claim, Unsettled { first, count, now }, wait)
            }
            Err(_) => Err(self.core.exhausted()),
        }
    }

    /// `issue`'s slow path: `count` ticks from `first`, reserved against
    /// unit `now`, are ahead of the clock or past the layout's end or the
    /// claim's fence.
    #[cold]
    #[inline(never)]
    fn settle<'a>(
        &'a self,
        claim: &'a Claim,
        ticks: Unsettled,
        wait: Wait,
    ) -> Result<(u64, &'a Claim), IssueError> {
        match self.core.rules.verdict(ticks.end(), ticks.now, claim.cap()) {
            // The clock moved on between the raw strategy's reads.
            Ok(()) => Ok((ticks.first, claim)),
            Err(Refusal::Fenced) => self.settle_at_fence(claim, ticks, wait),
            // The ticks stay reserved and are never issued: a gap, never a repeat.
            Err(Refusal::Exhausted) => Err(self.core.exhausted()),
            Err(Refusal::WaitUntil(unit)) => {
                let cause = Cause::of_unit(unit, ticks.now);
                let now_nanos = self.clock_or_give_back(wait, claim, ticks, unit, cause)?;
                self.core.wait_for(unit, now_nanos)?;
                // The ticks are ours; hand them out once the clock allows, or
                // skip them if it does not within max_wait (a gap, never a repeat).
                let waiting = meter::Waiting::begin();
                let waited = self
                    .raw
                    .wait_until(&self.core, unit, now_nanos, self.core.give_up());
                waiting.end(cause, self.core.namespace());
                waited.map_err(|behind_nanos| IssueError::ClockBehind { behind_nanos })?;
                Ok((ticks.first, claim))
            }
        }
    }

    /// `settle` for ticks at or past `claim`'s fence. If they are also ahead
    /// of the clock, wait for it as for any lead: a lease whose fence is
    /// only its predecessor's (or just confirmed) is renewed past them
    /// before the clock gets there. Refused, they are given back, and the
    /// call goes on under a newer claim if the lease healed.
    #[cold]
    fn settle_at_fence<'a>(
        &'a self,
        claim: &'a Claim,
        ticks: Unsettled,
        wait: Wait,
    ) -> Result<(u64, &'a Claim), IssueError> {
        let end = ticks.end();
        if let Err(Refusal::WaitUntil(unit)) = self.core.rules.verdict(end, ticks.now, u64::MAX) {
            let now_nanos = self.clock_or_give_back(wait, claim, ticks, unit, Cause::Fence)?;
            let give_up = self.core.give_up();
            if self.core.wait_for(unit, now_nanos).is_ok() {
                let waiting = meter::Waiting::begin();
                let waited = self.raw.wait_until(&self.core, unit, now_nanos, give_up);
                waiting.end(Cause::Fence, self.core.namespace());
                if waited.is_ok() && end < claim.cap() {
                    return Ok((ticks.first, claim));
                }
            }
        }
        self.raw.give_back(ticks.first, end);
        #[cfg(feature = "std")]
        let cap_seen = claim.cap();
        let next = match self.next_claim(claim, false) {
            Ok(next) => next,
            // A renewal or a new lease may be a round trip away (a process
            // thawed past its fence renews at once): a call that waits for
            // the clock waits for it too, within the same max_wait.
            #[cfg(feature = "std")]
            Err(IssueError::LeaseLost { .. }) if self.core.lease_may_move(claim) => match wait {
                Wait::Block => self.await_lease(claim, cap_seen)?,
                Wait::GiveBack => {
                    return Err(IssueError::WouldBlock {
                        wait_nanos: wait::LEASE_POLL.as_nanos() as u64,
                    });
                }
            },
            Err(refused) => return Err(refused),
        };
        self.issue_under(next, ticks.count, wait)
    }

    /// Waits, within `max_wait`, for `claim`'s fence to move past
    /// `cap_seen` (a renewal confirmed) or for a newer claim (a new lease):
    /// the claim to go on under. Polled: the lease's thread signals nobody,
    /// and a wait here is rare (a thaw, a registry out of reach).
    #[cold]
    #[cfg(feature = "std")]
    fn await_lease<'a>(&'a self, claim: &'a Claim, cap_seen: u64) -> Result<&'a Claim, IssueError> {
        let give_up = self.core.give_up();
        let waiting = meter::Waiting::begin();
        let outcome = loop {
            if give_up.is_some_and(|at| Instant::now() >= at) {
                break Err(self.core.refusal_error(Refusal::Fenced, claim, 0));
            }
            std::thread::sleep(wait::LEASE_POLL);
            if claim.cap() > cap_seen {
                break Ok(claim);
            }
            match self.next_claim(claim, false) {
                Err(IssueError::LeaseLost { .. }) if self.core.lease_may_move(claim) => {}
                done => break done,
            }
        };
        waiting.end(Cause::Fence, self.core.namespace());
        outcome
    }

    /// The clock's reading, for `ticks` that may not be issued before
    /// `unit`; or, for a call that gives back rather than waits, when the
    /// clock is short of the unit, the ticks given back and how long to
    /// wait (a wait of `cause`, which the caller makes its own way). (Past
    /// the unit's start a wait returns at once, so it is made.)
    #[cold]
    fn clock_or_give_back(
        &self,
        wait: Wait,
        claim: &Claim,
        ticks: Unsettled,
        unit: u64,
        cause: Cause,
    ) -> Result<u64, IssueError> {
        let now_nanos = self.core.clock.unix_nanos();
        if wait == Wait::GiveBack && !self.core.reached(unit, now_nanos) {
            self.raw.give_back(ticks.first, ticks.end());
            let said = self
                .core
                .refusal_error(Refusal::WaitUntil(unit), claim, now_nanos);
            if let IssueError::WouldBlock { wait_nanos } = said {
                meter::waited(
                    cause,
                    self.core.namespace(),
                    Duration::from_nanos(wait_nanos),
                );
            }
            return Err(said);
        }
        Ok(now_nanos)
    }

    /// The claim to go on under once `claim`'s fence refused: one installed
    /// since, or the lease's newest if its IDs may start within `max_wait`
    /// (installed here). Otherwise the refusal at `claim`'s fence, or, for a
    /// call that does not wait (`say_wait`), how long until the newest
    /// claim's IDs may start.
    #[cold]
    fn next_claim(&self, claim: &Claim, say_wait: bool) -> Result<&Claim, IssueError> {
        if claim.is_copy() {
            // The lease's state is the parent's, and so are its locks.
            return Err(IssueError::Copied);
        }
        let current = self.core.claims.current();
        if !core::ptr::eq(current, claim) {
            return Ok(current);
        }
        self.newest_leased(claim, say_wait)
    }

    /// `next_claim` when `claim` is the one in force: the lease's newest.
    #[cfg(feature = "std")]
    fn newest_leased(&self, claim: &Claim, say_wait: bool) -> Result<&Claim, IssueError> {
        let core = &self.core;
        let refused = || core.refusal_error(Refusal::Fenced, claim, 0);
        let Some(lease) = &core.lease else {
            return Err(refused());
        };
        let latest = lease.latest();
        if core::ptr::eq(&*latest, claim) || claim.fence().is_closed() {
            return Err(refused());
        }
        match core.readiness(latest.last()) {
            Readiness::Exhausted => Err(core.exhausted()),
            Readiness::Beyond(wait_nanos) if say_wait => Err(IssueError::WouldBlock { wait_nanos }),
            Readiness::Beyond(_) => Err(refused()),
            Readiness::Within(_) => core
                .claims
                .install(latest, |next| self.raw.advance(core, next.last()))
                .ok_or_else(refused),
        }
    }

    /// Without `std` there is no lease: the one claim's fence is the end.
    #[cfg(not(feature = "std"))]
    fn newest_leased(&self, claim: &Claim, _say_wait: bool) -> Result<&Claim, IssueError> {
        Err(self.core.refusal_error(Refusal::Fenced, claim, 0))
    }

    /// Fills `ids` with the IDs of the ticks `issue` hands out for them; an
    /// empty slice asks for nothing.
    fn fill<'a>(
        &'a self,
        ids: &mut [Snowflake],
        issue: impl FnOnce(u64) -> Result<(u64, &'a Claim), IssueError>,
    ) -> Result<(), IssueError> {
        if !ids.is_empty() {
            let (first, claim) = issue(ids.len() as u64)?;
            self.core.fill(claim, first, ids);
        }
        Ok(())
    }

    fn try_issue(&self, count: u64) -> Result<(u64, &Claim), IssueError> {
        let mut claim = self.core.claims.current();
        if claim.is_copy() {
            return Err(IssueError::Copied);
        }
        loop {
            match self.raw.try_reserve(&self.core, claim, count) {
                Ok(first) => return Ok((first, claim)),
                // Each turn moves to a newer claim, or returns.
                Err((Refusal::Fenced, _)) => claim = self.next_claim(claim, true)?,
                Err((refusal, now_nanos)) => {
                    return Err(self.core.refusal_error(refusal, claim, now_nanos));
                }
            }
        }
    }
}

impl<R: Raw<C>, C: Clock> Drop for Generator<R, C> {
    /// Shuts the generator down (see [`IdGenerator::shutdown`]) and waits,
    /// within [`Lease::release_wait`](crate::lease::Lease::release_wait)
    /// (never on an async runtime's thread), for the registry to confirm
    /// that the id is free: a program that exits right after keeps no id.
    /// Without a lease, it leaves its seat in the process with the last tick
    /// it handed out, for the next generator on it to start after.
    fn drop(&mut self) {
        if self.core.claims.current().is_copy() {
            // The worker id, the lease and the seat are the parent's, which
            // still issues under them: a forked child leaves them alone (its
            // parts skip their own clean-up likewise).
            return;
        }
        #[cfg(feature = "std")]
        {
            let release = self.shutdown();
            self.core.await_release(release);
        }
        self.core.leave_seat(self.raw.last_issued());
    }
}

impl<R: Raw<C>, C: Clock> IdGenerator for Generator<R, C> {
    #[inline]
    fn next_id(&self) -> Result<Snowflake, IssueError> {
        let (tick, claim) = self.core.counted(self.issue(1, BLOCKING))?;
        Ok(claim.id(self.core.layout(), tick))
    }

    #[inline]
    fn next_id_or_wait_hint(&self) -> Result<Snowflake, IssueError> {
        let (tick, claim) = self.issue(1, Wait::GiveBack)?;
        Ok(claim.id(self.core.layout(), tick))
    }

    #[inline]
    fn try_next_id(&self) -> Result<Snowflake, IssueError> {
        let (tick, claim) = self.core.counted(self.try_issue(1))?;
        Ok(claim.id(self.core.layout(), tick))
    }

    fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        self.fill(ids, |count| self.core.counted(self.issue(count, BLOCKING)))
    }

    fn next_ids_or_wait_hint(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        self.fill(ids, |count| self.issue(count, Wait::GiveBack))
    }

    fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        self.fill(ids, |count| self.core.counted(self.try_issue(count)))
    }

    fn layout(&self) -> &Layout {
        self.core.layout()
    }

    fn worker(&self) -> u64 {
        self.core.claims.current().worker()
    }

    fn max_wait(&self) -> Duration {
        Duration::from_nanos(self.core.max_wait_nanos)
    }

    #[cfg(feature = "std")]
    fn lease(&self) -> Option<LeaseStatus> {
        if self.core.claims.current().is_copy() {
            // The parent's lease, behind the parent's locks.
            return None;
        }
        self.core.lease.as_ref().map(LeaseHandle::status)
    }

    #[cfg(feature = "std")]
    fn shutdown(&self) -> Release {
        let Some(lease) = &self.core.lease else {
            return Release::nothing();
        };
        if self.core.claims.current().is_copy() {
            // The lease is the parent's to release, not a forked child's.
            return Release::nothing();
        }
        // No claim is installed from now on: this is the last.
        let claim = self.core.claims.shut();
        let last = match claim.fence().close() {
            // Callers that read the old cap may still issue below it; every
            // tick reserved after the seal lies at or past it, and is refused
            // whichever cap its caller reads. So nothing is issued past `last`.
            Some(cap) => {
                let allowed = cap - 1;
                self.raw.seal(allowed).min(allowed)
            }
            // Shut down already: the first call decided where the fence goes.
            None => 0,
        };
        lease.release(claim, last)
    }

    fn after_restore(&self) -> Result<(), crate::Error> {
        // What the snapshot held is every copy's: none issues under it, and
        // none writes to its lease, whatever happens next.
        self.core.claims.current().disown();
        #[cfg(feature = "std")]
        if let Some(lease) = &self.core.lease {
            lease.abandon();
            return self.lease_again(lease);
        }
        Err(IssueError::Copied.into())
    }
}

#[cfg(feature = "std")]
impl<R: Raw<C>, C: Clock> Generator<R, C> {
    /// [`IdGenerator::after_restore`] for a leased generator, once its
    /// claim is disowned: leases again, waits for the new lease's start as
    /// a build would, and moves to it.
    fn lease_again(&self, lease: &LeaseHandle) -> Result<(), crate::Error> {
        let Some(start_wait) = lease.restart().map_err(BuildError::from)? else {
            return Err(IssueError::Copied.into());
        };
        let latest = lease.latest();
        let give_up = Instant::now() + start_wait + self.max_wait();
        loop {
            match self.core.readiness(latest.last()) {
                Readiness::Within(_) => break,
                Readiness::Exhausted => return Err(self.core.exhausted().into()),
                Readiness::Beyond(wait_nanos) if Instant::now() >= give_up => {
                    return Err(BuildError::FenceAhead {
                        worker: latest.worker(),
                        wait_nanos,
                    }
                    .into());
                }
                Readiness::Beyond(wait_nanos) => {
                    let early = wait_nanos - self.core.max_wait_nanos;
                    std::thread::sleep(Duration::from_nanos(early).min(wait::MAX_NAP));
                }
            }
        }
        let core = &self.core;
        core.claims
            .install(latest, |next| self.raw.advance(core, next.last()))
            .map(|_| ())
            .ok_or(IssueError::ShutDown.into())
    }
}

impl<R: Raw<C>, C: Clock> fmt::Debug for Generator<R, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(R::NAME)
            .field("layout", self.core.layout())
            .field("worker", &self.worker())
            .field("last_tick", &self.raw.last_issued())
            .finish_non_exhaustive()
    }
}

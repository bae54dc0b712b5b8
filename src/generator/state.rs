//! The logical clock all strategies share.
//!
//! Every generator keeps one number, the last *tick* it issued: an ID's
//! timestamp and sequence packed without the worker (the layout defines ticks
//! and does all the bit arithmetic on them). Ticks are issued in strictly
//! increasing order, and an ID is its tick with the worker id put in, so
//! ticks unique and increasing means IDs unique and increasing.
//!
//! Adding 1 to a tick whose sequence is full carries into the next unit: that
//! is "borrow the next unit", which [`TickRules::verdict`] then holds back
//! until the clock gets there (or within `max_lead` of it).
//!
//! [`TickRules`] is the pure transition, `(last, now, count) -> range`, which
//! the mutex strategy applies under its lock and the property tests check.
//! [`TickCounter`] is the same rules on an `AtomicU64`, for the lock-free
//! strategies. The clock-reading strategies apply them only when
//! [`TickRules::in_clock_unit`], a cheaper test that is never wrong when it
//! says yes, says no: on the first call in each unit, or with ticks ahead
//! of the clock.

use crate::layout::Layout;
use crate::sync::{AtomicU64, Ordering};

/// The policy of the logical clock for one generator, in its layout's ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TickRules {
    layout: Layout,
    /// How many units ahead of the clock an issued timestamp may be.
    max_lead: u64,
}

/// Why reserved ticks may not be handed out now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Their timestamp is too far ahead: the clock must first reach this unit.
    WaitUntil(u64),
    /// Their timestamp no longer fits the layout.
    Exhausted,
    /// They are at or past the cap: the lease's fence.
    Fenced,
}

impl TickRules {
    pub(crate) const fn new(layout: Layout, max_lead_units: u64) -> TickRules {
        TickRules {
            layout,
            max_lead: max_lead_units,
        }
    }

    pub(crate) const fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The largest tick the layout can hold.
    #[inline]
    pub(crate) const fn max_tick(&self) -> u64 {
        self.layout.max_tick()
    }

    /// The first tick of unit `now`, or of the layout's last unit when `now`
    /// is past it: a clock past the end still lets the last unit's sequence be
    /// used up, after which every strategy reports exhaustion alike.
    #[inline]
    pub(crate) const fn floor(&self, now: u64) -> u64 {
        let last_unit = self.layout.max_timestamp();
        self.layout
            .first_tick(if now > last_unit { last_unit } else { now })
    }

    /// The first tick that may not be issued while the clock reads `now`:
    /// everything below it is within `max_lead` of the clock and within the
    /// layout. `end < limit(now)` is `verdict(end, now).is_ok()` in one compare.
    #[inline]
    pub(crate) const fn limit(&self, now: u64) -> u64 {
        let units = now.saturating_add(self.max_lead).saturating_add(1);
        if units > self.layout.max_timestamp() {
            self.max_tick() + 1
        } else {
            self.layout.first_tick(units)
        }
    }

    /// The unit the clock must reach before `tick` may be issued: its own,
    /// less the lead allowed.
    #[inline]
    pub(crate) const fn ready_unit(&self, tick: u64) -> u64 {
        self.layout.unit_of_tick(tick).saturating_sub(self.max_lead)
    }

    /// Whether ticks up to `end` may be issued when the clock reads unit `now`
    /// and nothing at or past `cap` may be issued (a lease's fence; `u64::MAX`
    /// for none). With the cap, `end < limit(now).min(cap)` is the same
    /// verdict in one compare.
    #[inline]
    pub(crate) const fn verdict(&self, end: u64, now: u64, cap: u64) -> Result<(), Refusal> {
        if end > self.max_tick() {
            return Err(Refusal::Exhausted);
        }
        if end >= cap {
            return Err(Refusal::Fenced);
        }
        let ready_at = self.ready_unit(end);
        if ready_at > now {
            Err(Refusal::WaitUntil(ready_at))
        } else {
            Ok(())
        }
    }

    /// [`verdict`](Self::verdict) for a call that does not wait: a wait for
    /// the clock comes before the fence, as in a blocking call, which waits
    /// first and meets the fence only after (a renewal may have moved it by
    /// then). So a non-blocking call at a fence that lies ahead of the clock
    /// says how long to wait, as it would for any lead.
    #[inline]
    pub(crate) const fn try_verdict(&self, end: u64, now: u64, cap: u64) -> Result<(), Refusal> {
        match self.verdict(end, now, u64::MAX) {
            Ok(()) if end >= cap => Err(Refusal::Fenced),
            other => other,
        }
    }

    /// Whether ticks `first..=end`, all below `cap`, lie in the unit the
    /// clock reads at `now_nanos`: then they may be issued at once, whatever
    /// `max_lead` and wherever the last ones were.
    ///
    /// The clock-reading strategies' fast path, the common case below the
    /// layout's rate (every call but the first in each unit). It multiplies
    /// the ticks' unit back into nanoseconds where [`floor`](Self::floor)
    /// and [`limit`](Self::limit) need the clock divided into units, and
    /// one unsigned compare asks both "not before the unit" and "not after
    /// it". It is a sufficient condition only: `false` sends the caller to
    /// those two, which decide exactly (the property tests check that it
    /// never says more than they do).
    ///
    /// `cap` must be at most `max_tick() + 1`, as a [`Fence`](crate::lease::Fence)'s
    /// cap always is: `end < cap` is then also "within the layout", which
    /// keeps the multiply from wrapping.
    #[inline]
    pub(crate) const fn in_clock_unit(
        &self,
        first: u64,
        end: u64,
        now_nanos: u64,
        cap: u64,
    ) -> bool {
        debug_assert!(cap <= self.max_tick() + 1);
        let layout = &self.layout;
        // Wrapping: `now_nanos` before the unit's start wraps to a large
        // difference, which the compare refuses.
        end < cap
            && now_nanos.wrapping_sub(layout.tick_start_nanos(end)) < layout.unit_nanos()
            && layout.unit_of_tick(first) == layout.unit_of_tick(end)
    }

    /// Where a counter that has handed out ticks up to `counter` moves when
    /// a new claim, which may not issue `last` or below, comes in force:
    /// past `last`, past the unit of every tick handed out, and never to
    /// `counter` itself. So every tick reserved from then on is the new
    /// claim's, in a later unit than every ID issued before (IDs increase
    /// though the worker changed), and a `give_back` of ticks reserved
    /// before, which needs the counter still at their end, fails.
    #[inline]
    pub(crate) const fn advanced(&self, counter: u64, last: u64) -> u64 {
        let unit_end = self
            .layout
            .first_tick(self.layout.unit_of_tick(counter).saturating_add(1))
            .saturating_sub(1);
        // At the end of its unit already: one more, a gap, so that it moves.
        let moved = if unit_end > counter {
            unit_end
        } else {
            counter.saturating_add(1)
        };
        if last > moved { last } else { moved }
    }

    /// The pure transition: the `count` ticks to issue after `last` when the
    /// clock reads `now`, as `(first, end)`; `None` if they do not fit the layout.
    ///
    /// The range starts at the later of "just after the last tick" (so nothing
    /// repeats, whatever the clock did) and "the start of the current unit" (so
    /// timestamps follow the clock when it moves forward).
    #[inline]
    pub(crate) const fn reserve(&self, last: u64, now: u64, count: u64) -> Option<(u64, u64)> {
        let after_last = last.saturating_add(1);
        let floor = self.floor(now);
        let first = if after_last > floor {
            after_last
        } else {
            floor
        };
        match first.checked_add(count.saturating_sub(1)) {
            Some(end) if end <= self.max_tick() => Some((first, end)),
            _ => None,
        }
    }
}

/// The [`Raw`](super::front::Raw) methods of a strategy whose state is a
/// [`TickCounter`] in the field `$ticks`: each is the counter's own.
macro_rules! tick_counter_methods {
    ($ticks:ident) => {
        fn give_back(&self, first: u64, end: u64) {
            self.$ticks.give_back(first, end);
        }

        fn advance(&self, core: &Core<C>, last: u64) {
            self.$ticks.advance(&core.rules, last);
        }

        fn seal(&self, tick: u64) -> u64 {
            self.$ticks.seal(tick)
        }

        fn last_issued(&self) -> u64 {
            self.$ticks.last_issued()
        }
    };
}
pub(crate) use tick_counter_methods;

/// [`TickRules`] on an atomic: the lock-free strategies' state.
///
/// The counter holds the last tick handed out. Ticks are taken with
/// `fetch_add`, so concurrent callers always get disjoint ranges: the counter
/// only ever grows (`fetch_add`, `fetch_max`), and each read-modify-write
/// returns a value no other one returned.
#[derive(Debug)]
pub(crate) struct TickCounter {
    last: AtomicU64,
}

impl TickCounter {
    pub(crate) fn new(last: u64) -> TickCounter {
        TickCounter {
            last: AtomicU64::new(last),
        }
    }

    /// Takes the next `count` ticks, whatever the clock, and returns the
    /// first; `None`, taking nothing, for a batch once the counter is past
    /// `max_tick`. One `fetch_add`: when IDs are asked for faster than the
    /// clock's unit, these are the ticks to issue.
    ///
    /// A single call past the end adds 1 to the counter and is refused by the
    /// verdict on its tick; the headroom bit makes that safe for longer than
    /// any program runs. A batch could add billions per call, so it checks first.
    #[inline]
    pub(crate) fn take(&self, count: u64, max_tick: u64) -> Option<u64> {
        if count > 1 && self.last_issued() >= max_tick {
            return None;
        }
        // Relaxed: uniqueness needs only the atomicity of the RMW (every RMW
        // of one atomic sees the one before it in a single total order), and
        // no other memory is published through the counter.
        let first = self
            .last
            .fetch_add(count, Ordering::Relaxed)
            .wrapping_add(1);
        Some(first)
    }

    /// Ticks `first..first + count`, just taken by [`take`](Self::take), as
    /// a range starting at `floor` or later: the same ticks if they do;
    /// otherwise the clock has moved to a new unit, they are stale and are
    /// dropped (a gap in the sequence, never a repeat), and a `fetch_max`
    /// claims the new unit. Returns the first tick of the range.
    #[inline]
    pub(crate) fn raise(&self, first: u64, count: u64, floor: u64) -> u64 {
        if first >= floor {
            first
        } else {
            self.raise_to(first, count, floor)
        }
    }

    /// `raise`'s slow path: ticks `[first, first + count - 1]` are ours but
    /// start below `floor`; claim `[floor, floor + count - 1]` instead.
    #[inline(never)]
    fn raise_to(&self, first: u64, count: u64, floor: u64) -> u64 {
        let ours_end = first + (count - 1);
        let end = floor + (count - 1);
        // Relaxed: as in `take`.
        let previous = self.last.fetch_max(end, Ordering::Relaxed);
        // `previous >= ours_end`: the counter only grows and our add set it there.
        // If it is still below `floor`, every tick handed out so far is below
        // `floor`; if it is exactly `ours_end`, nobody has taken a tick since our
        // add, so the ticks up to it are ours. Either way every later tick will be
        // above `end`: `[floor, end]` is ours alone.
        if previous < floor || previous == ours_end {
            floor
        } else {
            // Another caller took ticks in between; the counter is now past
            // `floor`, so a plain fetch_add lands at or above it.
            self.last
                .fetch_add(count, Ordering::Relaxed)
                .wrapping_add(1)
        }
    }

    /// Takes `count` ticks only if `rules` allow issuing them at `now` below
    /// `cap`; never moves the counter otherwise. Returns the first tick, or why not.
    pub(crate) fn try_take(
        &self,
        rules: &TickRules,
        count: u64,
        now: u64,
        cap: u64,
    ) -> Result<u64, Refusal> {
        // Relaxed: a stale value only makes the first compare_exchange fail.
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let (first, end) = rules.reserve(last, now, count).ok_or(Refusal::Exhausted)?;
            rules.try_verdict(end, now, cap)?;
            // Relaxed: as in `take`; on failure the value only seeds the next attempt.
            match self
                .last
                .compare_exchange_weak(last, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(first),
                Err(actual) => last = actual,
            }
        }
    }

    /// Gives back ticks `first..=end`, taken by `take` and refused (at a
    /// lease's fence), if no later ticks were taken since: the counter goes
    /// back to `first - 1`. Callers refused together give back in the
    /// reverse order they took, so each waits, briefly, for those who took
    /// after it; one that took after and issued keeps the counter where it
    /// is. Never moves the counter below a tick that was handed out.
    #[cold]
    pub(crate) fn give_back(&self, first: u64, end: u64) {
        let backoff = crossbeam_utils::Backoff::new();
        loop {
            // Relaxed: as in `take`. Success means the counter still reads
            // `end`: no tick above ours has been taken, so none was issued.
            match self.last.compare_exchange_weak(
                end,
                first - 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                // A spurious failure of the weak exchange: try again.
                Err(actual) if actual == end => {}
                // Never: a caller that took after us gives back to `end` at most.
                Err(actual) if actual < end => return,
                // Taken after us: wait a little for those callers to give
                // back too; if they issued instead, ours stay a gap.
                Err(_) if backoff.is_completed() => return,
                Err(_) => backoff.snooze(),
            }
        }
    }

    /// Moves the counter where [`TickRules::advanced`] says, for a new claim
    /// that may not issue `last` or below (see `Raw::advance`).
    pub(crate) fn advance(&self, rules: &TickRules, last: u64) {
        // Relaxed: every reservation is a read-modify-write of this one atomic,
        // so each comes wholly before or after this one; the claim's Release
        // store orders this before every caller that uses the new claim.
        let _ = self
            .last
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |counter| {
                Some(rules.advanced(counter, last))
            });
    }

    /// Moves the counter up to `tick` if it is below; returns the last tick
    /// handed out before (see `Raw::seal`).
    pub(crate) fn seal(&self, tick: u64) -> u64 {
        // Relaxed: as in `take`. Every reservation is a read-modify-write of
        // this one atomic, so it comes before this one (its ticks are at most
        // the result) or after it (its ticks lie past `tick`). A `give_back`
        // lowers the counter only while it still reads the end of the ticks
        // given back: if this raised it, none does. Either way, every tick
        // at or below `tick` that is ever handed out is at most the result.
        self.last.fetch_max(tick, Ordering::Relaxed)
    }

    /// The last tick handed out (possibly past the layout's end once exhausted).
    #[inline]
    pub(crate) fn last_issued(&self) -> u64 {
        // Relaxed: a snapshot for guards and `Debug`; nothing is published through it.
        self.last.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NO_CAP: u64 = u64::MAX;

    /// 2 sequence bits: 4 ticks per unit, 10 bits of units.
    fn narrow() -> Layout {
        Layout::builder()
            .timestamp_bits(10)
            .worker_bits(0)
            .sequence_bits(2)
            .build()
            .unwrap()
    }

    fn rules(lead: u64) -> TickRules {
        TickRules::new(narrow(), lead)
    }

    #[test]
    fn follows_the_clock_forward() {
        let r = rules(0);
        assert_eq!(r.reserve(0, 5, 1), Some((20, 20)));
        assert_eq!(r.reserve(20, 5, 1), Some((21, 21)));
        assert_eq!(r.reserve(21, 9, 2), Some((36, 37)));
    }

    #[test]
    fn borrows_the_next_unit_and_holds_it_back() {
        let r = rules(0);
        assert_eq!(r.reserve(23, 5, 1), Some((24, 24)));
        assert_eq!(r.verdict(24, 5, NO_CAP), Err(Refusal::WaitUntil(6)));
        assert_eq!(r.verdict(24, 6, NO_CAP), Ok(()));
        assert_eq!(rules(1).verdict(24, 5, NO_CAP), Ok(()));
        assert_eq!(rules(1).verdict(28, 5, NO_CAP), Err(Refusal::WaitUntil(6)));
    }

    #[test]
    fn limit_and_cap_are_the_verdict_in_one_compare() {
        for lead in [0, 1, 3, u64::MAX] {
            let r = rules(lead);
            for now in [0, 1, 5, 1000, 1022, 1023, 1024, u64::MAX] {
                for cap in [0, 7, 4000, NO_CAP] {
                    for end in (0..r.max_tick() + 3)
                        .step_by(3)
                        .chain([r.max_tick(), r.max_tick() + 1])
                    {
                        assert_eq!(
                            end < r.limit(now).min(cap),
                            r.verdict(end, now, cap).is_ok(),
                            "lead {lead} now {now} cap {cap} end {end}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_call_that_does_not_wait_meets_the_clock_before_the_fence() {
        let r = rules(0);
        // Unit 6's ticks (24..) at a fence of 24: a blocking call would wait
        // for unit 6 and only then check the fence again.
        assert_eq!(r.verdict(24, 5, 24), Err(Refusal::Fenced));
        assert_eq!(r.try_verdict(24, 5, 24), Err(Refusal::WaitUntil(6)));
        assert_eq!(r.try_verdict(24, 6, 24), Err(Refusal::Fenced));
        assert_eq!(r.try_verdict(24, 6, 25), Ok(()));
    }

    #[test]
    fn nothing_at_or_past_the_cap() {
        let r = rules(3);
        assert_eq!(r.verdict(19, 5, 20), Ok(()));
        assert_eq!(r.verdict(20, 5, 20), Err(Refusal::Fenced));
        // Exhaustion is reported first: it is final, a fence may move.
        assert_eq!(r.verdict(r.max_tick() + 1, 5, 20), Err(Refusal::Exhausted));
        let c = TickCounter::new(18);
        assert_eq!(c.try_take(&r, 3, 4, 20), Err(Refusal::Fenced));
        assert_eq!(c.last_issued(), 18);
        assert_eq!(c.try_take(&r, 1, 4, 20), Ok(19));
    }

    #[test]
    fn an_advance_leaves_the_unit_past_the_last_and_always_moves() {
        let r = rules(0); // 4 ticks per unit
        // Mid-unit: to the unit's end, so the next tick starts a unit.
        assert_eq!(r.advanced(21, 0), 23);
        // At the unit's end: one more, so the counter moves.
        assert_eq!(r.advanced(23, 0), 24);
        // Past a predecessor's fence further on.
        assert_eq!(r.advanced(21, 40), 40);
        assert_eq!(r.advanced(u64::MAX, 0), u64::MAX);
        let c = TickCounter::new(21);
        c.advance(&r, 0);
        assert_eq!(c.last_issued(), 23);
        // A give-back of ticks 20..=21, taken before, finds the counter moved.
        c.give_back(20, 21);
        assert_eq!(c.last_issued(), 23);
    }

    #[test]
    fn never_goes_back_with_the_clock() {
        let r = rules(0);
        assert_eq!(r.reserve(40, 3, 1), Some((41, 41)));
        assert_eq!(r.verdict(41, 3, NO_CAP), Err(Refusal::WaitUntil(10)));
    }

    #[test]
    fn stops_at_the_end_of_the_layout() {
        let r = rules(0);
        let max = r.max_tick();
        assert_eq!(max, (1 << 12) - 1);
        assert_eq!(r.reserve(max - 1, 1023, 1), Some((max, max)));
        assert_eq!(r.reserve(max, 1023, 1), None);
        assert_eq!(r.reserve(max - 2, 1023, 3), None);
        assert_eq!(r.reserve(0, 5000, 1), Some((1023 << 2, 1023 << 2)));
        assert_eq!(r.floor(1024), 1023 << 2);
        assert_eq!(r.verdict(max + 1, 2000, NO_CAP), Err(Refusal::Exhausted));
    }

    #[test]
    fn counter_claims_new_units_and_never_repeats() {
        let c = TickCounter::new(0);
        let max = rules(0).max_tick();
        let take = |count, floor| c.raise(c.take(count, max).unwrap(), count, floor);
        assert_eq!(take(1, 20), 20);
        assert_eq!(take(1, 20), 21);
        assert_eq!(take(3, 20), 22);
        assert_eq!(take(1, 40), 40);
        // A batch whose stale range straddles the new floor still starts at it.
        assert_eq!(take(9, 43), 43);
        assert_eq!(take(1, 0), 52);
        assert_eq!(take(2, 100), 100);
        assert_eq!(take(1, 50), 102);
    }

    #[test]
    fn an_exhausted_counter_refuses_batches_without_moving() {
        let max = rules(0).max_tick();
        let c = TickCounter::new(max);
        assert_eq!(c.take(5, max), None);
        assert_eq!(c.last_issued(), max);
        assert_eq!(c.take(1, max), Some(max + 1)); // the verdict refuses it
    }

    #[test]
    fn try_take_moves_nothing_when_it_must_wait() {
        let r = rules(0);
        let c = TickCounter::new(23);
        assert_eq!(c.try_take(&r, 1, 5, NO_CAP), Err(Refusal::WaitUntil(6)));
        assert_eq!(c.last_issued(), 23);
        assert_eq!(c.try_take(&r, 1, 6, NO_CAP), Ok(24));
        assert_eq!(c.try_take(&r, 5, 6, NO_CAP), Err(Refusal::WaitUntil(7)));
        let c = TickCounter::new(r.max_tick());
        assert_eq!(c.try_take(&r, 1, 1 << 20, NO_CAP), Err(Refusal::Exhausted));
        assert_eq!(c.last_issued(), r.max_tick());
    }

    #[test]
    fn in_clock_unit_lets_through_the_clocks_unit_only() {
        let r = rules(0);
        let layout = r.layout();
        let unit = layout.unit_nanos();
        let cap = r.max_tick() + 1;
        // Ticks 20..=23 are unit 5; the clock anywhere in unit 5.
        let start = layout.unit_start_nanos(5);
        for now in [start, start + 1, start + unit - 1] {
            assert!(r.in_clock_unit(20, 20, now, cap));
            assert!(r.in_clock_unit(21, 23, now, cap));
        }
        // The clock in unit 6: unit 5's ticks are stale. In unit 4: they
        // are ahead of it, and a lead does not change the fast path's answer.
        assert!(!r.in_clock_unit(23, 23, start + unit, cap));
        assert!(!r.in_clock_unit(20, 20, start - 1, cap));
        assert!(!rules(1).in_clock_unit(20, 20, start - 1, cap));
        // A range across two units.
        assert!(!r.in_clock_unit(23, 24, start, cap));
        // At the cap, and before the epoch.
        assert!(!r.in_clock_unit(20, 20, start, 20));
        assert!(r.in_clock_unit(20, 20, start, 21));
        assert!(!r.in_clock_unit(0, 0, 0, cap));
        // Past the layout's last tick, whatever the clock.
        let max = r.max_tick();
        for now in [0, start, u64::MAX] {
            assert!(!r.in_clock_unit(max + 1, max + 1, now, cap));
        }
    }

    /// Any valid layout with at most 8 ticks per unit: widths, unit and
    /// epoch all the way to the end of the `u64` clock.
    fn any_layout() -> impl Strategy<Value = Layout> {
        (
            1u32..=60,
            0u32..=3,
            prop_oneof![Just(0u64), 0u64..4_000_000_000_000],
        )
            .prop_flat_map(|(timestamp_bits, sequence_bits, epoch_ms)| {
                let timestamp_bits = timestamp_bits.min(63 - sequence_bits);
                let epoch_nanos = epoch_ms * 1_000_000;
                let longest = (u64::MAX - epoch_nanos) >> timestamp_bits;
                let unit_nanos = prop_oneof![Just(1u64), Just(1_000_000), 1..=longest.max(1)];
                (unit_nanos, Just((timestamp_bits, sequence_bits, epoch_ms)))
            })
            .prop_filter_map("outlives the clock", |(unit_nanos, (ts, s, epoch_ms))| {
                Layout::builder()
                    .timestamp_bits(ts)
                    .worker_bits(0)
                    .sequence_bits(s)
                    .unit(core::time::Duration::from_nanos(unit_nanos))
                    .epoch_unix_millis(epoch_ms)
                    .build()
                    .ok()
            })
    }

    proptest! {
        /// One caller at a time, the counter is the pure transition: the same
        /// ranges, call for call, whatever the clock does.
        #[test]
        fn sequential_take_is_reserve(
            start in 0u64..4096,
            calls in prop::collection::vec((0u64..1100, 1u64..9), 1..200),
        ) {
            let r = rules(0);
            let counter = TickCounter::new(start);
            let mut last = start;
            for (now, count) in calls {
                let Some((first, end)) = r.reserve(last, now, count) else {
                    break; // past the layout's end: the verdict refuses either way
                };
                let taken = counter.take(count, r.max_tick()).unwrap();
                prop_assert_eq!(counter.raise(taken, count, r.floor(now)), first);
                prop_assert_eq!(counter.last_issued(), end);
                last = end;
            }
        }

        /// The fast path never says more than the exact rules: a range it
        /// lets through is where `floor` would have put it or later, and
        /// `verdict` allows it below the same cap, whatever the lead.
        #[test]
        fn in_clock_unit_never_says_more_than_the_rules(
            layout in any_layout(),
            lead in prop_oneof![Just(0u64), Just(1), 0u64..2000, Just(u64::MAX)],
            first_at in any::<prop::sample::Index>(),
            count in 1u64..9,
            cap_at in any::<prop::sample::Index>(),
            units_off in -2i64..3,
            within in any::<u64>(),
            anywhere in prop::option::weighted(0.1, any::<u64>()),
        ) {
            let r = TickRules::new(layout, lead);
            // Any tick, and the one past the end; any cap the fence can
            // hold, often just at or past the range's end.
            let first = first_at.index(r.max_tick() as usize + 2) as u64;
            let end = first + (count - 1);
            let cap = match cap_at.index(4) {
                0 => end,
                1 => end + 1,
                2 => r.max_tick() + 1,
                _ => cap_at.index(r.max_tick() as usize + 2) as u64,
            }
            .min(r.max_tick() + 1);
            // Mostly within a few units of `first`'s; sometimes anywhere.
            let unit_nanos = layout.unit_nanos();
            let near = layout
                .unit_start_nanos(layout.unit_of_tick(first))
                .saturating_add_signed(units_off.saturating_mul(unit_nanos.min(i64::MAX as u64) as i64))
                .saturating_add(within % unit_nanos);
            let now_nanos = anywhere.unwrap_or(near);
            if r.in_clock_unit(first, end, now_nanos, cap) {
                let now = layout.units_since_epoch(now_nanos);
                prop_assert!(first >= r.floor(now), "floor {} first {first}", r.floor(now));
                prop_assert_eq!(r.verdict(end, now, cap), Ok(()));
            }
        }

        /// And it lets through every range in the clock's unit below the cap.
        #[test]
        fn in_clock_unit_takes_every_range_in_the_clocks_unit(
            layout in any_layout(),
            unit_at in any::<prop::sample::Index>(),
            within in any::<u64>(),
            from in 0u64..8,
            count in 1u64..9,
        ) {
            let r = TickRules::new(layout, 0);
            let unit = unit_at.index(layout.max_timestamp() as usize + 1) as u64;
            let now_nanos = layout.unit_start_nanos(unit) + within % layout.unit_nanos();
            let first = layout.first_tick(unit) + from % layout.ids_per_unit();
            let end = first + (count - 1);
            prop_assume!(layout.unit_of_tick(end) == unit);
            prop_assert!(r.in_clock_unit(first, end, now_nanos, r.max_tick() + 1));
        }
    }
}

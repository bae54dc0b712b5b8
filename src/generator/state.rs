//! The logical clock all strategies share.
//!
//! Every generator keeps one number, the last *tick* it issued: the timestamp
//! and sequence of an ID packed as in the table below. Ticks are issued in
//! strictly increasing order, and an ID is its tick with the worker id put in,
//! so ticks unique and increasing means IDs unique and increasing.
//!
//! | bits | 63 … ts+s | ts+s−1 … s | s−1 … 0 |
//! |---|---|---|---|
//! | field | zero: headroom | timestamp (units since epoch) | sequence |
//!
//! Adding 1 to a tick whose sequence is full carries into the timestamp: that
//! is "borrow the next unit", which the [`TickRules::verdict`] then holds back
//! until the clock gets there (or within `max_lead` of it). The headroom bit
//! (layouts keep `ts + s <= 63`) lets a counter run past the last valid tick
//! and be seen as exhausted without wrapping round to tick 0.
//!
//! [`TickRules`] is the pure transition, `(last, now, count) -> range`, which
//! the mutex strategy applies under its lock and the property tests check.
//! [`TickCounter`] is the same rules on an `AtomicU64`, for the lock-free
//! strategies.

use crate::layout::Layout;
use crate::sync::{AtomicU64, Ordering};

/// The policy of the logical clock for one generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TickRules {
    sequence_bits: u32,
    max_tick: u64,
    /// How many units ahead of the clock an issued timestamp may be.
    max_lead: u64,
}

/// Whether a reserved tick may be handed out now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Its timestamp is within `max_lead` of the clock.
    Ready,
    /// Its timestamp is too far ahead: the clock must first reach this unit.
    WaitUntil(u64),
    /// Its timestamp no longer fits the layout.
    Exhausted,
}

impl TickRules {
    pub(crate) const fn new(layout: &Layout, max_lead_units: u64) -> TickRules {
        let bits = layout.timestamp_bits() + layout.sequence_bits();
        TickRules {
            sequence_bits: layout.sequence_bits(),
            // bits <= 63: layouts guarantee it.
            max_tick: (1u64 << bits) - 1,
            max_lead: max_lead_units,
        }
    }

    /// The largest tick the layout can hold.
    pub(crate) const fn max_tick(self) -> u64 {
        self.max_tick
    }

    /// The first tick of unit `now`, or of the layout's last unit when `now`
    /// is past it: a clock past the end still lets the last unit's sequence be
    /// used up, after which every strategy reports exhaustion alike.
    #[inline]
    pub(crate) const fn floor(self, now: u64) -> u64 {
        let last_unit = self.max_tick >> self.sequence_bits;
        let unit = if now > last_unit { last_unit } else { now };
        unit << self.sequence_bits
    }

    /// The first tick that may not be issued while the clock reads `now`:
    /// everything below it is within `max_lead` of the clock and within the
    /// layout. `tick < limit(now)` is `verdict(tick, now) == Ready` in one compare.
    pub(crate) const fn limit(self, now: u64) -> u64 {
        let units = now.saturating_add(self.max_lead).saturating_add(1);
        if units > self.max_tick >> self.sequence_bits {
            self.max_tick + 1
        } else {
            units << self.sequence_bits
        }
    }

    /// Whether tick `last` may be issued when the clock reads `now` (units).
    #[inline]
    pub(crate) const fn verdict(self, last: u64, now: u64) -> Verdict {
        if last > self.max_tick {
            return Verdict::Exhausted;
        }
        let ready_at = (last >> self.sequence_bits).saturating_sub(self.max_lead);
        if ready_at > now {
            Verdict::WaitUntil(ready_at)
        } else {
            Verdict::Ready
        }
    }

    /// The pure transition: the `count` ticks to issue after `last` when the
    /// clock reads `now`, as `(first, last)`; `None` if they do not fit the layout.
    ///
    /// The range starts at the later of "just after the last tick" (so nothing
    /// repeats, whatever the clock did) and "the start of the current unit" (so
    /// timestamps follow the clock when it moves forward).
    #[inline]
    pub(crate) const fn reserve(self, last: u64, now: u64, count: u64) -> Option<(u64, u64)> {
        let after_last = last.saturating_add(1);
        let floor = self.floor(now);
        let first = if after_last > floor {
            after_last
        } else {
            floor
        };
        match first.checked_add(count.saturating_sub(1)) {
            Some(end) if end <= self.max_tick => Some((first, end)),
            _ => None,
        }
    }
}

/// [`TickRules`] on an atomic: the lock-free strategies' state.
///
/// The counter holds the last tick handed out (table in the module docs).
/// Ticks are taken with `fetch_add`, so concurrent callers always get disjoint
/// ranges: the counter only ever grows (`fetch_add`, `fetch_max`), and each
/// read-modify-write returns a value no other one returned.
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

    /// Takes `count` fresh ticks, none below `floor`, and returns the first.
    ///
    /// One `fetch_add` while the counter is at or past `floor`, the common case
    /// when IDs are asked for faster than the clock's unit; when the clock has
    /// moved to a new unit, the ticks just taken are stale and are dropped (a gap
    /// in the sequence, never a repeat) and a `fetch_max` claims the new unit.
    #[inline]
    pub(crate) fn take(&self, count: u64, floor: u64) -> u64 {
        // Relaxed: uniqueness needs only the atomicity of the RMW (every RMW
        // of one atomic sees the one before it in a single total order), and
        // no other memory is published through the counter.
        let first = self
            .last
            .fetch_add(count, Ordering::Relaxed)
            .wrapping_add(1);
        if first >= floor {
            first
        } else {
            self.take_from(first, count, floor)
        }
    }

    /// `take`'s slow path: ticks `[first, first + count - 1]` are ours but
    /// start below `floor`; claim `[floor, floor + count - 1]` instead.
    #[inline(never)]
    fn take_from(&self, first: u64, count: u64, floor: u64) -> u64 {
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

    /// Takes `count` ticks only if `rules` allow issuing them at `now`; never
    /// moves the counter otherwise. Returns the first tick, or why not.
    pub(crate) fn try_take(&self, rules: TickRules, count: u64, now: u64) -> Result<u64, Verdict> {
        // Relaxed: a stale value only makes the first compare_exchange fail.
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let (first, end) = rules.reserve(last, now, count).ok_or(Verdict::Exhausted)?;
            if let wait @ Verdict::WaitUntil(_) = rules.verdict(end, now) {
                return Err(wait);
            }
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

    /// The last tick handed out (possibly past the layout's end once exhausted).
    pub(crate) fn last(&self) -> u64 {
        // Relaxed: a snapshot for guards and `Debug`; nothing is published through it.
        self.last.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn rules(lead: u64) -> TickRules {
        // 2 sequence bits: 4 ticks per unit.
        let layout = Layout::builder()
            .timestamp_bits(10)
            .worker_bits(0)
            .sequence_bits(2)
            .build()
            .unwrap();
        TickRules::new(&layout, lead)
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
        assert_eq!(r.verdict(24, 5), Verdict::WaitUntil(6));
        assert_eq!(r.verdict(24, 6), Verdict::Ready);
        assert_eq!(rules(1).verdict(24, 5), Verdict::Ready);
        assert_eq!(rules(1).verdict(28, 5), Verdict::WaitUntil(6));
    }

    #[test]
    fn limit_is_the_verdict_in_one_compare() {
        for lead in [0, 1, 3, u64::MAX] {
            let r = rules(lead);
            for now in [0, 1, 5, 1000, 1022, 1023, 1024, u64::MAX] {
                for tick in (0..r.max_tick() + 3)
                    .step_by(3)
                    .chain([r.max_tick(), r.max_tick() + 1])
                {
                    let ready = r.verdict(tick, now) == Verdict::Ready;
                    assert_eq!(
                        tick < r.limit(now),
                        ready,
                        "lead {lead} now {now} tick {tick}"
                    );
                }
            }
        }
    }

    #[test]
    fn never_goes_back_with_the_clock() {
        let r = rules(0);
        assert_eq!(r.reserve(40, 3, 1), Some((41, 41)));
        assert_eq!(r.verdict(41, 3), Verdict::WaitUntil(10));
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
        assert_eq!(r.verdict(max + 1, 2000), Verdict::Exhausted);
    }

    #[test]
    fn counter_claims_new_units_and_never_repeats() {
        let c = TickCounter::new(0);
        assert_eq!(c.take(1, 20), 20);
        assert_eq!(c.take(1, 20), 21);
        assert_eq!(c.take(3, 20), 22);
        assert_eq!(c.take(1, 40), 40);
        // A batch whose stale range straddles the new floor still starts at it.
        assert_eq!(c.take(9, 43), 43);
        assert_eq!(c.take(1, 0), 52);
        assert_eq!(c.take(2, 100), 100);
        assert_eq!(c.take(1, 50), 102);
    }

    #[test]
    fn try_take_moves_nothing_when_it_must_wait() {
        let r = rules(0);
        let c = TickCounter::new(23);
        assert_eq!(c.try_take(r, 1, 5), Err(Verdict::WaitUntil(6)));
        assert_eq!(c.last(), 23);
        assert_eq!(c.try_take(r, 1, 6), Ok(24));
        assert_eq!(c.try_take(r, 5, 6), Err(Verdict::WaitUntil(7)));
        let c = TickCounter::new(r.max_tick());
        assert_eq!(c.try_take(r, 1, 1 << 20), Err(Verdict::Exhausted));
        assert_eq!(c.last(), r.max_tick());
    }
}

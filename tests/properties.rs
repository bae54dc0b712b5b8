//! Property tests of the invariants the crate docs promise (`IdGenerator`'s
//! guarantees, *Time going backwards*), for every strategy and policy.
//!
//! A script of clock events (advance, stall, step back, jump ahead) and calls
//! (single, batch, blocking, non-blocking) runs against all three strategies
//! at once, each with its own `ManualClock` set alike. The properties:
//!
//! 1. no ID repeats;
//! 2. IDs strictly increase in issue order;
//! 3. no timestamp is later than the clock plus `max_lead` when returned;
//! 4. every ID decodes to the generator's worker;
//! 5. once the clock runs normally again, the generator's timestamps catch up;
//! 6. no call waits longer than `max_wait`: beyond it, `ClockBehind`, at once.
//!
//! The strategies must also agree, ID for ID: they implement one logical clock.
//!
//! A blocking call on a frozen clock would hang, so the runner keeps its own
//! model of the logical clock and predicts whether a call has to wait (the
//! rule of `TickRules::reserve` in `src/generator/state.rs`: next tick =
//! max(last + 1, start of the clock's unit),
//! ready once within `max_lead` of the clock) and makes a non-blocking call
//! then, which must answer `WouldBlock` with exactly the predicted wait. A
//! wait beyond `max_wait` must be `ClockBehind`, from blocking and
//! non-blocking calls alike; a blocking call so refused skips its ticks.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use flakegen::clock::ManualClock;
use flakegen::{BuildError, Builder, Fields, IdError, IdGenerator, IssueError, Layout, Snowflake};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    /// Move the clock forward by this many units.
    Advance(u64),
    /// Leave the clock where it is.
    Stall,
    /// Move the clock back by this many units (small: jitter; large: NTP step, migration).
    Rewind(u64),
    /// Move the clock far forward.
    JumpAhead(u64),
    /// `next_id`, or `try_next_id` when it would wait.
    Next,
    /// Always `try_next_id`.
    TryNext,
    /// `next_ids` (or `try_next_ids` when it would wait) with this many IDs.
    Batch(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1u64..4).prop_map(Step::Advance),
        1 => Just(Step::Stall),
        1 => (1u64..6).prop_map(Step::Rewind),
        1 => (100u64..20_000).prop_map(Step::Rewind),
        1 => (1_000u64..1_000_000).prop_map(Step::JumpAhead),
        6 => Just(Step::Next),
        2 => Just(Step::TryNext),
        2 => (1usize..40).prop_map(Step::Batch),
    ]
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    Twitter,
    Sonyflake,
    /// 4 IDs per unit: exhaustion on almost every step.
    Narrow,
}

impl Shape {
    fn layout(self) -> Layout {
        match self {
            Shape::Twitter => Layout::TWITTER,
            Shape::Sonyflake => Layout::SONYFLAKE,
            Shape::Narrow => NARROW,
        }
    }
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Twitter),
        Just(Shape::Sonyflake),
        Just(Shape::Narrow)
    ]
}

/// One strategy under test, with its own clock.
struct Subject {
    name: flakegen::Strategy,
    clock: ManualClock,
    generator: Box<dyn IdGenerator>,
    issued: Vec<Snowflake>,
}

/// What the runner expects of the next call of `count` IDs.
enum Expect {
    /// Ticks `first..=end` may be issued now.
    Ready {
        end: u64,
    },
    /// The call must wait this long, within `max_wait`.
    Wait(Duration),
    /// The call must wait this long, beyond `max_wait`; a blocking call
    /// reserves (and skips) ticks up to `end`.
    Behind {
        wait: Duration,
        end: u64,
    },
    Exhausted,
}

struct Run {
    layout: Layout,
    lead: u64,
    worker: u64,
    /// The longest wait a call makes: `max_wait`, and never below one unit.
    max_wait: Duration,
    /// The model's logical clock: the last tick reserved.
    last: u64,
    subjects: Vec<Subject>,
}

impl Run {
    fn new(shape: Shape, lead: u64, worker: u64, max_wait_units: Option<u32>) -> Run {
        let layout = shape.layout();
        let worker = worker % (layout.max_worker() + 1);
        let max_wait = max_wait_units.map_or(Duration::from_secs(1), |k| layout.unit() * k);
        let subjects = STRATEGIES
            .iter()
            .map(|&name| {
                let (clock, builder) = manual(layout, worker);
                let mut builder = builder.max_lead(layout.unit() * lead as u32);
                if max_wait_units.is_some() {
                    builder = builder.max_wait(max_wait);
                }
                Subject {
                    name,
                    generator: build(name, builder),
                    clock,
                    issued: vec![],
                }
            })
            .collect();
        Run {
            layout,
            lead,
            worker,
            max_wait: max_wait.max(layout.unit()),
            last: 0,
            subjects,
        }
    }

    fn clock(&self) -> &ManualClock {
        &self.subjects[0].clock
    }

    fn move_clocks(&self, f: impl Fn(&ManualClock)) {
        for s in &self.subjects {
            f(&s.clock);
        }
    }

    fn unit(&self) -> Duration {
        self.layout.unit()
    }

    /// The logical clock's rule, from the outside: the tick after the last or the
    /// clock's unit, whichever is later, issued once within `lead` of the clock.
    fn expect(&self, count: u64) -> Expect {
        let layout = &self.layout;
        let s = layout.sequence_bits();
        let tick = |p: Fields| (p.timestamp << s) | p.sequence;
        let now = layout.timestamp_at(self.clock().now());
        let floor = now.min(layout.max_timestamp()) << s;
        let first = (self.last + 1).max(floor);
        let end = first + count - 1;
        if end
            > tick(Fields {
                timestamp: layout.max_timestamp(),
                worker: 0,
                sequence: layout.max_sequence(),
            })
        {
            return Expect::Exhausted;
        }
        let ready_at = (end >> s).saturating_sub(self.lead);
        if ready_at <= now {
            return Expect::Ready { end };
        }
        let wait = layout
            .time_of(ready_at)
            .duration_since(self.clock().now())
            .unwrap();
        if wait > self.max_wait {
            Expect::Behind { wait, end }
        } else {
            Expect::Wait(wait)
        }
    }

    /// Makes one call of `count` IDs on every subject and checks what comes back.
    fn call(&mut self, count: usize, force_try: bool) -> Result<(), TestCaseError> {
        let expect = self.expect(count as u64);
        let blocking = !force_try && matches!(expect, Expect::Ready { .. } | Expect::Behind { .. });
        let mut results = vec![];
        for s in &mut self.subjects {
            let mut ids = vec![Snowflake::default(); count];
            let result = match (count, blocking) {
                (1, true) => s.generator.next_id().map(|id| ids[0] = id),
                (1, false) => s.generator.try_next_id().map(|id| ids[0] = id),
                (_, true) => s.generator.next_ids(&mut ids),
                (_, false) => s.generator.try_next_ids(&mut ids),
            };
            match (&expect, result) {
                (Expect::Ready { .. }, Ok(())) => {}
                (Expect::Wait(want), Err(IssueError::WouldBlock { wait_nanos })) => {
                    prop_assert_eq!(
                        Duration::from_nanos(wait_nanos),
                        *want,
                        "{}: wait reported",
                        s.name
                    );
                    continue;
                }
                (Expect::Behind { wait, .. }, Err(IssueError::ClockBehind { behind_nanos })) => {
                    prop_assert_eq!(
                        Duration::from_nanos(behind_nanos),
                        *wait,
                        "{}: lag reported",
                        s.name
                    );
                    continue;
                }
                (Expect::Exhausted, Err(IssueError::TimestampExhausted { .. })) => continue,
                (_, other) => {
                    return Err(TestCaseError::fail(format!(
                        "{}: unexpected {other:?}",
                        s.name
                    )));
                }
            }
            // 3: not later than the clock (plus the lead) when returned.
            let now = self.layout.timestamp_at(s.clock.now());
            for id in &ids {
                let fields = self.layout.decode(*id).unwrap();
                prop_assert!(
                    fields.timestamp <= now + self.lead,
                    "{}: {id} is ahead of the clock",
                    s.name
                );
                // 4: the worker comes back exactly.
                prop_assert_eq!(fields.worker, self.worker);
            }
            s.issued.extend_from_slice(&ids);
            results.push(ids);
        }
        match expect {
            Expect::Ready { end } => self.last = end,
            Expect::Behind { end, .. } if blocking => self.last = end,
            _ => {}
        }
        // The strategies agree ID for ID.
        for pair in results.windows(2) {
            prop_assert_eq!(&pair[0], &pair[1], "strategies disagree");
        }
        Ok(())
    }

    fn apply(&mut self, step: &Step) -> Result<(), TestCaseError> {
        let unit = self.unit();
        match *step {
            Step::Advance(k) => self.move_clocks(|c| c.advance(unit * k as u32)),
            Step::Stall => {}
            Step::Rewind(k) => self.move_clocks(|c| c.rewind(unit * k as u32)),
            Step::JumpAhead(k) => self.move_clocks(|c| c.advance(unit * k as u32)),
            Step::Next => self.call(1, false)?,
            Step::TryNext => self.call(1, true)?,
            Step::Batch(n) => self.call(n, false)?,
        }
        Ok(())
    }

    /// 1, 2 and 5, once the script has run.
    fn finish(mut self) -> Result<(), TestCaseError> {
        for s in &self.subjects {
            prop_assert!(
                s.issued.windows(2).all(|w| w[0] < w[1]),
                "{}: not strictly increasing",
                s.name
            );
            let unique: HashSet<_> = s.issued.iter().collect();
            prop_assert_eq!(unique.len(), s.issued.len(), "{}: duplicates", s.name);
        }
        // 5: run the clock past the logical clock's lead; the next ID is current.
        let last_ts = self.last >> self.layout.sequence_bits();
        let now = self.layout.timestamp_at(self.clock().now());
        let catch_up = last_ts.saturating_sub(now) + 1;
        self.move_clocks(|c| c.advance(self.layout.unit() * catch_up as u32));
        self.call(1, false)?;
        let now = self.layout.timestamp_at(self.clock().now());
        let id = *self.subjects[0].issued.last().unwrap();
        prop_assert_eq!(
            self.layout.decode(id).unwrap().timestamp,
            now,
            "no permanent lead"
        );
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_every_strategy(
        shape in shape(),
        lead in prop_oneof![Just(0u64), 1u64..4],
        worker in any::<u64>(),
        max_wait_units in prop_oneof![Just(None), (0u32..40).prop_map(Some)],
        script in prop::collection::vec(step(), 1..60),
    ) {
        let mut run = Run::new(shape, lead, worker, max_wait_units);
        for step in &script {
            run.apply(step)?;
        }
        run.finish()?;
    }

    #[test]
    fn resume_after_never_reissues_whatever_the_clock(
        shape in shape(),
        parts in (any::<u64>(), any::<u64>(), any::<u64>()),
        same_worker in any::<bool>(),
        clock_offset_units in -100_000i64..100_000,
        at_the_end in prop::bool::weighted(0.1),
    ) {
        let layout = shape.layout();
        let (clock, builder) = manual(layout, 1);
        let now = layout.timestamp_at(clock.now());
        // A previous ID from around now (or the layout's last unit), by this worker or another.
        let timestamp = if at_the_end {
            layout.max_timestamp()
        } else {
            now.saturating_add_signed(clock_offset_units).min(layout.max_timestamp())
        };
        let previous = Fields {
            timestamp,
            worker: if same_worker { 1 } else { parts.1 % (layout.max_worker() + 1) },
            sequence: parts.2 % (layout.max_sequence() + 1),
        };
        let previous = layout.compose(previous).unwrap();
        for name in STRATEGIES {
            let builder = builder.clone().max_wait(Duration::MAX).resume_after(previous);
            let generator = match name {
                flakegen::Strategy::Ticker => builder.build_ticker_without_thread().map(|g| Box::new(g) as Box<dyn IdGenerator>),
                other => builder.build(other),
            };
            let generator = match generator {
                Ok(generator) => generator,
                // Only an ID in the last unit can leave no room after it.
                Err(BuildError::ResumeAfterExhausted { .. }) if timestamp == layout.max_timestamp() => continue,
                Err(e) => return Err(TestCaseError::fail(format!("{name}: {e}"))),
            };
            let id = match generator.try_next_id() {
                Ok(id) => id,
                Err(e @ IssueError::WouldBlock { .. }) => {
                    let wait = e.retry_after().unwrap();
                    let clock = clock.clone();
                    clock.advance(wait);
                    let id = generator.next_id().unwrap();
                    clock.rewind(wait);
                    id
                }
                Err(e) => return Err(TestCaseError::fail(format!("{name}: {e}"))),
            };
            prop_assert!(id > previous, "{}: {} is not above {}", name, id, previous);
        }
    }
}

/// Any valid layout: widths that fit, a unit from 1 ns to 1 s, an epoch in the past.
fn layout() -> impl Strategy<Value = Layout> {
    (
        1u32..=63,
        0u32..=63,
        0u32..=63,
        1u64..1_000_000_000,
        0u64..START_MS,
        any::<bool>(),
    )
        .prop_filter_map(
            "not a valid layout",
            |(ts, w, s, unit, epoch, sonyflake_order)| {
                Layout::builder()
                    .timestamp_bits(ts)
                    .worker_bits(w)
                    .sequence_bits(s)
                    .unit(Duration::from_nanos(unit))
                    .epoch_unix_millis(epoch)
                    .field_order(if sonyflake_order {
                        flakegen::FieldOrder::SequenceWorker
                    } else {
                        flakegen::FieldOrder::WorkerSequence
                    })
                    .build()
                    .ok()
            },
        )
}

fn parts_in(layout: Layout) -> impl Strategy<Value = Fields> {
    (
        0..=layout.max_timestamp(),
        0..=layout.max_worker(),
        0..=layout.max_sequence(),
    )
        .prop_map(|(timestamp, worker, sequence)| Fields {
            timestamp,
            worker,
            sequence,
        })
}

proptest! {
    #[test]
    fn decode_inverts_compose(
        (layout, parts) in layout().prop_flat_map(|l| (Just(l), parts_in(l)))
    ) {
        let id = layout.compose(parts).unwrap();
        prop_assert_eq!(layout.decode(id).unwrap(), parts);
    }

    #[test]
    fn compose_rejects_parts_that_do_not_fit(
        (layout, parts) in layout().prop_flat_map(|l| (Just(l), parts_in(l))),
        which in 0usize..3,
        excess in 1u64..1000,
    ) {
        let mut parts = parts;
        let (field, max) = match which {
            0 => (&mut parts.timestamp, layout.max_timestamp()),
            1 => (&mut parts.worker, layout.max_worker()),
            _ => (&mut parts.sequence, layout.max_sequence()),
        };
        prop_assume!(max < u64::MAX - excess);
        *field = max + excess;
        let rejected = matches!(layout.compose(parts), Err(IdError::FieldOutOfRange { .. }));
        prop_assert!(rejected);
    }

    #[test]
    fn ids_of_one_worker_order_by_time_then_sequence(
        (layout, a, b) in layout().prop_flat_map(|l| (Just(l), parts_in(l), parts_in(l)))
    ) {
        let b = Fields { worker: a.worker, ..b };
        let (ida, idb) = (layout.compose(a).unwrap(), layout.compose(b).unwrap());
        prop_assert_eq!(ida.cmp(&idb), (a.timestamp, a.sequence).cmp(&(b.timestamp, b.sequence)));
    }

    #[test]
    fn later_timestamps_sort_later_whatever_the_worker(
        (layout, a, b) in layout().prop_flat_map(|l| (Just(l), parts_in(l), parts_in(l)))
    ) {
        prop_assume!(a.timestamp != b.timestamp);
        let (ida, idb) = (layout.compose(a).unwrap(), layout.compose(b).unwrap());
        prop_assert_eq!(ida.cmp(&idb), a.timestamp.cmp(&b.timestamp));
    }
}

#[test]
fn builder_default_is_twitter_with_no_worker_id() {
    let built = Builder::new()
        .clock(ManualClock::from_unix_millis(START_MS))
        .build_mutex();
    assert!(
        matches!(built, Err(flakegen::BuildError::NoWorker)),
        "{built:?}"
    );
    let g = Builder::new()
        .worker(0)
        .clock(ManualClock::from_unix_millis(START_MS))
        .build_mutex()
        .unwrap();
    assert_eq!(g.layout(), &Layout::TWITTER);
    assert_eq!(g.worker(), 0);
}

proptest! {
    // A thousand cases of a thousand IDs each: a million.
    #![proptest_config(ProptestConfig { cases: 1_000, ..ProptestConfig::default() })]

    /// Base32 gives every ID back, at 13 characters, and sorts as the IDs do.
    #[test]
    fn base32_round_trips_and_keeps_order(ids in prop::collection::vec(any::<u64>(), 1_000)) {
        let mut by_value: Vec<Snowflake> = ids.iter().map(|&id| Snowflake::from_u64(id)).collect();
        for &id in &by_value {
            let text = id.to_base32();
            prop_assert_eq!(text.len(), 13);
            prop_assert_eq!(Snowflake::from_base32(&text), Ok(id));
            prop_assert_eq!(Snowflake::from_base32(&text.to_ascii_lowercase()), Ok(id));
        }
        let mut by_text: Vec<_> = by_value.iter().map(|id| id.to_base32()).collect();
        by_value.sort_unstable();
        by_text.sort_unstable();
        let decoded: Vec<Snowflake> = by_text.iter().map(|t| Snowflake::from_base32(t).unwrap()).collect();
        prop_assert_eq!(decoded, by_value);
    }
}

//! The ticker strategy: a background thread reads the clock so callers need not.

use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use super::core::Core;
use super::error::BuildError;
use super::front::{Generator, Raw, Reserved, Start};
use super::state::{Refusal, TickCounter, TickRules, tick_counter_methods};
use super::wait;
use crate::clock::{self, Clock, SystemClock};
use crate::lease::Claim;
use crate::process::Generation;
use crate::sync::{AtomicBool, AtomicU64, Ordering};

/// A background thread reads the clock once per time unit; callers never do.
///
/// At every unit boundary the thread (named `flakegen-ticker`) publishes the
/// current unit. A call is then the atomic strategy's `fetch_add` with the
/// published unit in place of a clock read (one load of a word that changes
/// once per unit), whatever the clock costs to read: the choice where reading
/// the clock is expensive (see [Choosing a strategy](crate#choosing-a-strategy)).
/// It issues the same IDs as the other strategies would with a clock that
/// read the published unit.
///
/// The thread is not trusted to run. Callers that have used up the current
/// unit wait briefly for it, then read the clock themselves and publish what
/// they read, so `next_id` makes progress when the thread is starved of CPU
/// (more busy threads than cores) or gone (after `fork`). Timestamps lag the
/// clock by up to one unit plus however late the thread is; the
/// [caveats](crate#caveats) say what that means for rare calls and clock steps.
///
/// Dropping the generator stops and joins the thread at once, without sleeping
/// out the unit. Building it needs a clock that can be cloned, since the
/// thread reads its own copy (wrap a clock in an `Arc` to share one).
///
/// # Examples
///
/// ```
/// use flakegen::{Builder, IdGenerator, Layout};
///
/// let generator = Builder::new().layout(Layout::DISCORD).worker(0b00001_00000).build_ticker()?;
/// let id = generator.next_id()?;
/// let fields = Layout::DISCORD.decode(id)?;
/// assert_eq!((fields.worker >> 5, fields.worker & 31), (1, 0)); // internal worker 1, process 0
/// drop(generator); // stops the thread
/// # Ok::<(), flakegen::Error>(())
/// ```
pub type TickerGenerator<C = SystemClock> = Generator<Ticker, C>;

/// The ticker strategy's state.
pub struct Ticker {
    /// The last tick issued, written by every call.
    ticks: CachePadded<TickCounter>,
    /// What the thread publishes and callers read.
    published: Arc<Published>,
    thread: Option<JoinHandle<()>>,
    /// The process the thread runs in: a forked child has no such thread.
    generation: Generation,
}

impl core::fmt::Debug for Ticker {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ticker")
            .field("last_tick", &self.ticks.last_issued())
            .field("running", &self.thread.is_some())
            .finish()
    }
}

/// What the generator and its thread share.
struct Published {
    /// The latest reading of the clock, by the thread or a caller: the
    /// callers' clock. On a line of its own, so the callers' `fetch_add`s do
    /// not keep evicting it: written once per unit, read by every call.
    view: CachePadded<ClockView>,
    stop: AtomicBool,
}

/// One reading of the clock, in the forms callers use. Follows the clock down
/// when it steps back.
///
/// The three words are stored one by one, so a caller can read parts of two
/// readings. That is harmless: each word alone is a bound from a real reading
/// (`floor` a tick to start at no later than the clock's unit, `limit` a tick
/// not to reach), so a mix is as safe as either reading.
struct ClockView {
    /// The clock's unit.
    unit: AtomicU64,
    /// `TickRules::floor(unit)`: the tick a new unit starts at.
    floor: AtomicU64,
    /// `TickRules::limit(unit)`: the first tick that may not be issued.
    limit: AtomicU64,
}

impl ClockView {
    fn new(rules: &TickRules, unit: u64) -> Self {
        ClockView {
            unit: AtomicU64::new(unit),
            floor: AtomicU64::new(rules.floor(unit)),
            limit: AtomicU64::new(rules.limit(unit)),
        }
    }

    /// Publishes unit `unit`.
    fn publish(&self, rules: &TickRules, unit: u64) {
        // Relaxed: each word is self-contained (see `ClockView`); a caller that
        // reads an older one only issues an older timestamp or waits longer.
        self.unit.store(unit, Ordering::Relaxed);
        self.floor.store(rules.floor(unit), Ordering::Relaxed);
        self.limit.store(rules.limit(unit), Ordering::Relaxed);
    }
}

impl Ticker {
    /// A ticker whose clock moves only when [`Generator::refresh`] is called
    /// or a caller that has used up the unit reads the clock itself.
    pub(crate) fn without_thread<C: Clock>(core: &Core<C>, last: u64) -> Result<Self, BuildError> {
        let view = ClockView::new(&core.rules, core.now());
        Ok(Ticker {
            ticks: CachePadded::new(TickCounter::new(last)),
            published: Arc::new(Published {
                view: CachePadded::new(view),
                stop: AtomicBool::new(false),
            }),
            thread: None,
            generation: Generation::now(),
        })
    }

    /// Reads the clock and publishes its unit; returns the reading.
    fn refresh<C: Clock>(&self, core: &Core<C>) -> u64 {
        let now_nanos = core.clock.unix_nanos();
        let unit = core.layout().units_since_epoch(now_nanos);
        self.published.view.publish(&core.rules, unit);
        now_nanos
    }
}

/// The background thread's loop: publish, sleep to the next boundary, repeat.
fn run<C: Clock>(published: &Published, clock: C, rules: TickRules) {
    clock::tighten_timer_slack();
    let layout = rules.layout();
    let unit_nanos = layout.unit_nanos();
    // Acquire: pairs with the Release store in `Drop`; nothing else is
    // published through the flag, but it keeps the shutdown easy to reason about.
    while !published.stop.load(Ordering::Acquire) {
        let now_nanos = clock.unix_nanos();
        let unit = layout.units_since_epoch(now_nanos);
        published.view.publish(&rules, unit);
        // An absolute deadline from the clock, so sleeps do not accumulate drift.
        let next = layout.unit_start_nanos(unit + 1);
        let nap = match next.checked_sub(now_nanos) {
            Some(nap) if nap > 0 => nap.min(unit_nanos),
            _ => unit_nanos, // past the layout's end: nothing to publish, poll slowly
        };
        // Woken early by `Drop`; spurious wake-ups only publish again.
        thread::park_timeout(Duration::from_nanos(nap));
    }
}

impl<C: Clock> Raw<C> for Ticker {
    const NAME: &'static str = "TickerGenerator";

    #[inline]
    fn reserve(&self, core: &Core<C>, claim: &Claim, count: u64) -> Result<Reserved, Refusal> {
        let view = &self.published.view;
        // Relaxed: see `ClockView::publish`.
        let floor = view.floor.load(Ordering::Relaxed);
        let limit = view.limit.load(Ordering::Relaxed);
        let cap = claim.cap();
        let taken = self
            .ticks
            .take(count, core.rules.max_tick())
            .ok_or(Refusal::Exhausted)?;
        let first = self.ticks.raise(taken, count, floor);
        // Relaxed: as above.
        let now = view.unit.load(Ordering::Relaxed);
        Ok(Reserved::judged(
            first,
            first + (count - 1),
            now,
            limit,
            cap,
        ))
    }

    fn try_reserve(
        &self,
        core: &Core<C>,
        claim: &Claim,
        count: u64,
    ) -> Result<u64, (Refusal, u64)> {
        // Relaxed: a stale unit only makes the attempt more conservative.
        let unit = self.published.view.unit.load(Ordering::Relaxed);
        match self.ticks.try_take(&core.rules, count, unit, claim.cap()) {
            Err(Refusal::WaitUntil(_)) => {}
            taken => return taken.map_err(|refusal| (refusal, core.clock.unix_nanos())),
        }
        // The thread may just be late: check the clock once before giving up.
        let now_nanos = self.refresh(core);
        let unit = core.layout().units_since_epoch(now_nanos);
        self.ticks
            .try_take(&core.rules, count, unit, claim.cap())
            .map_err(|refusal| (refusal, now_nanos))
    }

    /// Sleeps to the boundary of `target`, then takes the unit the thread
    /// published; if the thread is late (starved of CPU, or gone), reads the
    /// clock itself and publishes what it read for the other callers.
    #[cold]
    fn wait_until(
        &self,
        core: &Core<C>,
        target: u64,
        mut now_nanos: u64,
        give_up: Option<Instant>,
    ) -> Result<(), u64> {
        let layout = core.layout();
        let deadline = layout.unit_start_nanos(target);
        let view = &self.published.view;
        loop {
            if now_nanos < deadline {
                // No yield-polling: see the `wait` module.
                wait::nap(deadline, now_nanos, give_up)?;
            }
            // Relaxed: a late value only costs a clock read.
            if view.unit.load(Ordering::Relaxed) >= target {
                return Ok(());
            }
            now_nanos = core.clock.unix_nanos();
            if now_nanos >= deadline {
                view.publish(&core.rules, layout.units_since_epoch(now_nanos));
                return Ok(());
            }
        }
    }

    tick_counter_methods!(ticks);
}

/// By default the ticker runs its thread, which reads its own clone of the clock.
impl<C: Clock + Clone + 'static> Start<C> for Ticker {
    fn start(core: &Core<C>, last: u64) -> Result<Self, BuildError> {
        let mut ticker = Ticker::without_thread(core, last)?;
        let published = Arc::clone(&ticker.published);
        let (clock, rules) = (core.clock.clone(), core.rules);
        let handle = thread::Builder::new()
            .name("flakegen-ticker".into())
            .spawn(move || run(&published, clock, rules))
            .map_err(BuildError::TickerSpawn)?;
        ticker.thread = Some(handle);
        Ok(ticker)
    }
}

impl<C: Clock> Generator<Ticker, C> {
    /// Reads the clock and publishes the current unit, as the background thread
    /// does at every boundary.
    ///
    /// Needed only when built with
    /// [`build_ticker_without_thread`](crate::Builder::build_ticker_without_thread),
    /// to drive time from an event loop; harmless otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use flakegen::{Builder, IdGenerator};
    /// use flakegen::clock::ManualClock;
    ///
    /// let clock = ManualClock::from_unix_millis(1_700_000_000_000);
    /// let generator = Builder::new().worker(1).clock(clock.clone()).build_ticker_without_thread()?;
    /// let a = generator.next_id()?;
    /// clock.advance(Duration::from_millis(5));
    /// generator.refresh();
    /// let b = generator.next_id()?;
    /// let layout = generator.layout();
    /// assert_eq!(layout.decode(b)?.timestamp - layout.decode(a)?.timestamp, 5);
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    pub fn refresh(&self) {
        self.raw().refresh(self.core());
    }

    /// Whether a background thread is running for this generator.
    #[doc(hidden)]
    pub fn has_thread(&self) -> bool {
        self.raw().thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if self.generation.is_past() {
            // The thread runs in the parent: joining it here would wait
            // forever, and detaching it would touch the parent's copy.
            core::mem::forget(self.thread.take());
            return;
        }
        if let Some(thread) = self.thread.take() {
            // Release: see `run`.
            self.published.stop.store(true, Ordering::Release);
            thread.thread().unpark();
            // A panic in the thread is already reported by the panic hook; the
            // generator is going away either way.
            let _ = thread.join();
        }
    }
}

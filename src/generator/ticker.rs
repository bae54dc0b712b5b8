//! The ticker strategy: a background thread reads the clock so callers need not.

use core::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_utils::{Backoff, CachePadded};

use super::builder::Config;
use super::state::{TickCounter, TickRules, Verdict};
use super::wait::{self, BoundaryWatch};
use super::{IdGenerator, fill};
use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::id::Snowflake;
use crate::layout::Layout;
use crate::platform;
use crate::sync::{AtomicU64, Ordering};

/// A background thread reads the clock once per time unit; callers never do.
///
/// At every unit boundary the thread (named `flakegen-ticker`) publishes the
/// current unit. A call is then the atomic strategy's `fetch_add` with the
/// published unit in place of a clock read (one load of a word that changes
/// once per unit), whatever the clock costs to read: under a hypervisor where
/// each clock read is a system call of hundreds of nanoseconds, this is the
/// strategy that still reaches the layout's rate (see the crate's `no_vdso`
/// benchmark). It issues the same IDs as the other strategies would with a
/// clock that read the published unit.
///
/// The thread is not trusted to run. Callers that have used up the current
/// unit wait briefly for it, then read the clock themselves and publish what
/// they read, so `next_id` makes progress when the thread is starved of CPU
/// (more busy threads than cores) or gone (after `fork`). Timestamps lag the
/// clock by up to one unit plus however late the thread is. If the thread is
/// gone and calls are rare, that lag grows: timestamps stay at the last
/// published unit until a caller uses up its sequence and reads the clock
/// itself (uniqueness and order are unaffected). A forked child should build
/// its own generator anyway, with a worker id of its own.
///
/// Dropping the generator stops and joins the thread at once, without sleeping
/// out the unit.
///
/// # Examples
///
/// ```
/// use flakegen::{Builder, IdGenerator, Layout};
///
/// let generator = Builder::new().layout(Layout::DISCORD).worker(0b00001_00000).build_ticker()?;
/// let id = generator.next_id()?;
/// let parts = Layout::DISCORD.decode(id)?;
/// assert_eq!((parts.worker >> 5, parts.worker & 31), (1, 0)); // internal worker 1, process 0
/// drop(generator); // stops the thread
/// # Ok::<(), flakegen::Error>(())
/// ```
pub struct TickerGenerator<C: Clock + 'static = SystemClock> {
    shared: Arc<Shared<C>>,
    thread: Option<JoinHandle<()>>,
    worker: u64,
    worker_field: u64,
}

/// What the generator and its thread share.
struct Shared<C> {
    /// The last tick issued (table in the `state` module), written by every call.
    last: CachePadded<TickCounter>,
    /// The latest reading of the clock, by the thread or a caller: the
    /// callers' clock. On a line of its own, so the callers' `fetch_add`s do
    /// not keep evicting it: written once per unit, read by every call.
    view: CachePadded<ClockView>,
    clock: C,
    layout: Layout,
    rules: TickRules,
    watch: BoundaryWatch,
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
    /// The unit.
    now: AtomicU64,
    /// `TickRules::floor(now)`: the tick a new unit starts at.
    floor: AtomicU64,
    /// `TickRules::limit(now)`: the first tick that may not be issued.
    limit: AtomicU64,
}

impl<C: Clock> Shared<C> {
    /// Publishes unit `now`.
    fn advance(&self, now: u64) {
        // Relaxed: each word is self-contained (see `ClockView`); a caller that
        // reads an older one only issues an older timestamp or waits longer.
        self.view.now.store(now, Ordering::Relaxed);
        self.view
            .floor
            .store(self.rules.floor(now), Ordering::Relaxed);
        self.view
            .limit
            .store(self.rules.limit(now), Ordering::Relaxed);
    }

    fn tick(&self) -> u64 {
        let now_nanos = self.clock.unix_nanos();
        self.advance(self.layout.units_since_epoch(now_nanos));
        now_nanos
    }

    /// Waits until the clock reaches unit `target`, with a short wait for the thread first.
    #[cold]
    fn wait_for(&self, target: u64) {
        // The thread normally publishes within microseconds of a boundary.
        let backoff = Backoff::new();
        while !backoff.is_completed() {
            // Relaxed: a late value only prolongs the wait.
            if self.view.now.load(Ordering::Relaxed) >= target {
                return;
            }
            backoff.snooze();
        }
        // Late, starved or gone: read the clock, and tell the other callers.
        let now_nanos = self.watch.until_unit(&self.clock, &self.layout, target);
        self.advance(self.layout.units_since_epoch(now_nanos));
    }

    /// The background thread's loop.
    fn run(&self) {
        platform::tighten_timer_slack();
        let unit = self.layout.unit().as_nanos() as u64;
        // Acquire: pairs with the Release store in `Drop`; nothing else is
        // published through the flag, but it keeps the shutdown easy to reason about.
        while !self.stop.load(std::sync::atomic::Ordering::Acquire) {
            let now_nanos = self.tick();
            // An absolute deadline from the clock, so sleeps do not accumulate drift.
            let next = self
                .layout
                .unit_start_nanos(self.layout.units_since_epoch(now_nanos) + 1);
            let nap = match next.checked_sub(now_nanos) {
                Some(nap) if nap > 0 => nap.min(unit),
                _ => unit, // past the layout's end: nothing to publish, poll slowly
            };
            // Woken early by `Drop`; spurious wake-ups only tick again.
            thread::park_timeout(Duration::from_nanos(nap));
        }
    }
}

impl TickerGenerator<SystemClock> {
    /// A generator for `worker` with the defaults of [`Builder`](crate::Builder).
    ///
    /// # Errors
    ///
    /// As for [`Builder::build_ticker`](crate::Builder::build_ticker).
    pub fn new(worker: u64) -> Result<Self, Error> {
        crate::Builder::new().worker(worker).build_ticker()
    }
}

impl<C: Clock + 'static> TickerGenerator<C> {
    pub(crate) fn from_config(config: Config<C>) -> Result<Self, Error> {
        let shared = Arc::new(Shared {
            last: CachePadded::new(TickCounter::new(config.last)),
            view: CachePadded::new(ClockView {
                now: AtomicU64::new(0),
                floor: AtomicU64::new(0),
                limit: AtomicU64::new(0),
            }),
            clock: config.clock,
            layout: config.layout,
            rules: config.rules,
            watch: BoundaryWatch::default(),
            stop: AtomicBool::new(false),
        });
        // The first unit is published before anyone can call.
        shared.tick();
        let thread = if config.ticker_thread {
            let for_thread = Arc::clone(&shared);
            let handle = thread::Builder::new()
                .name("flakegen-ticker".into())
                .spawn(move || for_thread.run())
                .map_err(Error::TickerSpawn)?;
            Some(handle)
        } else {
            None
        };
        Ok(TickerGenerator {
            shared,
            thread,
            worker: config.worker,
            worker_field: config.worker_field,
        })
    }

    /// Reads the clock and publishes the current unit, as the background thread
    /// does at every boundary.
    ///
    /// Needed only when built with [`ticker_thread(false)`](crate::Builder::ticker_thread),
    /// to drive time from an event loop; harmless otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use flakegen::{Builder, IdGenerator, Layout, ManualClock};
    ///
    /// let clock = ManualClock::from_unix_millis(1_700_000_000_000);
    /// let generator = Builder::new().clock(clock.clone()).ticker_thread(false).build_ticker()?;
    /// let a = generator.next_id()?;
    /// clock.advance(Duration::from_millis(5));
    /// generator.tick();
    /// let b = generator.next_id()?;
    /// let layout = generator.layout();
    /// assert_eq!(layout.decode(b)?.timestamp - layout.decode(a)?.timestamp, 5);
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    pub fn tick(&self) {
        self.shared.tick();
    }

    /// Whether a background thread is running for this generator.
    pub fn has_thread(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    #[inline]
    fn issue(&self, count: u64) -> Result<u64, Error> {
        let shared = &*self.shared;
        // Relaxed: see `advance`.
        let floor = shared.view.floor.load(Ordering::Relaxed);
        let limit = shared.view.limit.load(Ordering::Relaxed);
        let first = shared.last.take(count, floor);
        let end = first + (count - 1);
        if end < limit {
            return Ok(first);
        }
        match shared
            .rules
            .verdict(end, shared.view.now.load(Ordering::Relaxed))
        {
            Verdict::Exhausted => Err(wait::exhausted(&shared.layout)),
            // Ready: the clock moved on between the loads; nothing to wait for.
            Verdict::Ready => Ok(first),
            Verdict::WaitUntil(unit) => {
                shared.wait_for(unit);
                Ok(first)
            }
        }
    }

    /// Takes `count` ticks only if no waiting is needed, consuming nothing otherwise.
    fn try_issue(&self, count: u64) -> Result<u64, Error> {
        let shared = &*self.shared;
        // Relaxed: a stale unit only makes the attempt more conservative.
        let now = shared.view.now.load(Ordering::Relaxed);
        match shared.last.try_take(shared.rules, count, now) {
            Ok(first) => return Ok(first),
            Err(Verdict::Exhausted) => return Err(wait::exhausted(&shared.layout)),
            Err(Verdict::WaitUntil(_) | Verdict::Ready) => {}
        }
        // The ticker may just be late: check the clock once before giving up.
        let now_nanos = shared.tick();
        let now = shared.layout.units_since_epoch(now_nanos);
        match shared.last.try_take(shared.rules, count, now) {
            Ok(first) => Ok(first),
            Err(Verdict::WaitUntil(unit)) => {
                Err(wait::would_block(&shared.layout, unit, now_nanos))
            }
            Err(_) => Err(wait::exhausted(&shared.layout)),
        }
    }

    #[inline]
    fn id(&self, tick: u64) -> Snowflake {
        Snowflake::from_u64(self.shared.layout.compose_tick(tick, self.worker_field))
    }
}

impl<C: Clock + 'static> IdGenerator for TickerGenerator<C> {
    #[inline]
    fn next_id(&self) -> Result<Snowflake, Error> {
        Ok(self.id(self.issue(1)?))
    }

    fn try_next_id(&self) -> Result<Snowflake, Error> {
        Ok(self.id(self.try_issue(1)?))
    }

    fn next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error> {
        let count = ids.len() as u64;
        if count == 0 {
            return Ok(());
        }
        // As in the atomic strategy: no batch adds to an exhausted counter.
        if self.shared.last.last() >= self.shared.rules.max_tick() {
            return Err(wait::exhausted(&self.shared.layout));
        }
        let first = self.issue(count)?;
        fill(&self.shared.layout, self.worker_field, first, ids);
        Ok(())
    }

    fn try_next_ids(&self, ids: &mut [Snowflake]) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let first = self.try_issue(ids.len() as u64)?;
        fill(&self.shared.layout, self.worker_field, first, ids);
        Ok(())
    }

    fn layout(&self) -> &Layout {
        &self.shared.layout
    }

    fn worker(&self) -> u64 {
        self.worker
    }
}

impl<C: Clock + 'static> Drop for TickerGenerator<C> {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            // Release: see `Shared::run`.
            self.shared
                .stop
                .store(true, std::sync::atomic::Ordering::Release);
            thread.thread().unpark();
            // A panic in the thread is already reported by the panic hook; the
            // generator is going away either way.
            let _ = thread.join();
        }
    }
}

impl<C: Clock + 'static> fmt::Debug for TickerGenerator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TickerGenerator")
            .field("layout", &self.shared.layout)
            .field("worker", &self.worker)
            .field("last_tick", &self.shared.last.last())
            .field("has_thread", &self.has_thread())
            .finish_non_exhaustive()
    }
}

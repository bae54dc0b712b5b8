//! Snowflake-style 64-bit unique IDs.
//!
//! An ID is a timestamp, a worker id and a per-unit sequence number packed in
//! 64 bits. Generated in-process with no coordination beyond the worker id,
//! IDs from one generator are unique and strictly increasing, and IDs from
//! different workers sort roughly by time.
//!
//! ```text
//! Layout::TWITTER
//! +-+-----------------------------------------+------------+------------+
//! |0| timestamp: 41 bits of ms since epoch    | worker: 10 | seq: 12    |
//! +-+-----------------------------------------+------------+------------+
//!  63 62                                    22 21        12 11         0
//! ```
//!
//! # Examples
//!
//! ```
//! use flakegen::{Builder, IdGenerator, Layout, Snowflake};
//!
//! let generator = Builder::new().layout(Layout::TWITTER).worker(7).build_atomic()?;
//! let id: Snowflake = generator.next_id()?;
//! let parts = Layout::TWITTER.decode(id)?;
//! assert_eq!(parts.worker, 7);
//!
//! // Batches synchronise once for the whole slice.
//! let mut ids = [Snowflake::default(); 100];
//! generator.next_ids(&mut ids)?;
//! assert!(ids[0] > id);
//! # Ok::<(), flakegen::Error>(())
//! ```
//!
//! # Choosing a strategy
//!
//! Three [`IdGenerator`]s issue the same IDs under the same rules and differ in
//! how concurrent callers synchronise:
//!
//! - [`AtomicGenerator`]: one clock read and one `fetch_add` per ID; lock-free,
//!   no thread. The default choice where reading the clock is cheap.
//! - [`MutexGenerator`]: Twitter's algorithm under a `parking_lot` mutex; the
//!   reference design, one clock read and one lock per ID.
//! - [`TickerGenerator`]: a background thread reads the clock once per unit
//!   and callers never do; one `fetch_add` per ID. The choice where reading the
//!   clock is expensive (hypervisors without a vDSO clock), at the price of a
//!   thread and timestamps up to about one unit late.
//!
//! Every strategy is capped by its layout: [`Layout::TWITTER`] allows 4096
//! IDs per millisecond per worker, 244 ns per ID when saturated, however many
//! threads ask. `cargo bench` compares them on your machine.
//!
//! # Time going backwards
//!
//! Each generator keeps a logical clock, the last timestamp and sequence it
//! issued, that never decreases. It follows the system clock forward; when the
//! clock steps back (NTP, VM migration) or a unit's sequence is used up, the
//! logical clock runs ahead of it. [`Builder::max_lead`] bounds that lead: with
//! the default of zero, no ID's timestamp is later than the clock, and
//! [`IdGenerator::next_id`] waits for the clock to catch up while
//! [`IdGenerator::try_next_id`] returns [`Error::WouldBlock`] saying how long.
//! Across a restart, pass the last ID issued to [`Builder::resume_after`].
//!
//! # Clocks
//!
//! Generators are generic over a [`Clock`]: [`SystemClock`] (the default),
//! [`CoarseClock`], [`MonotonicClock`], [`SyscallClock`] (reproduces the cost of
//! clock reads under a hypervisor) and [`ManualClock`] for tests.
//!
//! # Caveats
//!
//! - Two generators with the same layout and worker id can issue the same ID.
//!   One generator per worker id at a time, shared between threads.
//! - A process that forks must build new generators in the child, with a
//!   worker id of its own.
//! - The ticker sees a clock step back only at its next tick, so for up to one
//!   unit its IDs can carry the time from before the step.

#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(rust_2018_idioms)]

mod clock;
mod divisor;
mod error;
mod generator;
mod id;
mod layout;
mod platform;
mod sync;

pub use self::clock::{Clock, CoarseClock, ManualClock, MonotonicClock, SyscallClock, SystemClock};
pub use self::error::{Error, LayoutError, Part};
pub use self::generator::{AtomicGenerator, Builder, IdGenerator, MutexGenerator, TickerGenerator};
pub use self::id::Snowflake;
pub use self::layout::{FieldOrder, Layout, LayoutBuilder, Parts};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

//! Snowflake-style 64-bit unique IDs.
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

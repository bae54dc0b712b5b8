//! Clocks that read the operating system's realtime clock.

use super::Clock;
use super::os;

/// The system's wall clock, the one [`SystemTime::now`](std::time::SystemTime::now) reads.
///
/// On Linux it is read with `clock_gettime(CLOCK_REALTIME)` straight into
/// `u64` nanoseconds (without `SystemTime`'s conversions, which cost more
/// than the rest of an ID: see the benchmarks' README), through the vDSO, with no
/// system call, as long as the kernel's clock source allows it (`tsc` does;
/// `xen` and some hypervisors' do not, and then every read is a system call:
/// see [`SyscallClock`]). The default clock of every generator. What a read
/// costs on your machine: `cargo bench -- clocks`.
///
/// # Examples
///
/// ```
/// use flakegen::{Clock, SystemClock};
///
/// assert!(SystemClock.unix_nanos() > 1_700_000_000_000_000_000); // after 2023
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn unix_nanos(&self) -> u64 {
        os::realtime_nanos()
    }
}

/// Declares one of the Linux-only clocks: a unit struct that reads `$read`
/// of the `os` module, and says whether this platform has it.
macro_rules! os_clock {
    ($(#[$doc:meta])* $name:ident, $read:ident, $native:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            #[doc = $native]
            #[doc(hidden)]
            pub const IS_NATIVE: bool = os::NATIVE;
        }

        impl Clock for $name {
            #[inline]
            fn unix_nanos(&self) -> u64 {
                os::$read()
            }
        }
    };
}

os_clock! {
/// `CLOCK_REALTIME_COARSE` on Linux: the cheapest clock read there is, but only
/// as fine as the kernel tick (1–10 ms; 4 ms on a common `HZ=250` kernel).
///
/// With a 1 ms layout, a coarse clock makes the timestamp advance in 4 ms steps:
/// IDs stay unique and ordered, but a generator can issue at most one step's
/// worth of sequence numbers per step, a quarter of the layout's rate. Suits
/// layouts whose unit is at least the tick (Sonyflake's 10 ms).
///
/// On other platforms this is [`SystemClock`].
///
/// # Examples
///
/// ```
/// use flakegen::{Clock, SystemClock};
/// use flakegen::clock::CoarseClock;
///
/// let coarse = CoarseClock.unix_nanos();
/// assert!(coarse.abs_diff(SystemClock.unix_nanos()) < 1_000_000_000);
/// ```
    CoarseClock,
    coarse_realtime_nanos,
    "Whether this platform has a separate coarse clock (Linux); if not, it is [`SystemClock`]."
}

os_clock! {
/// `CLOCK_REALTIME` read with a real system call on Linux, never the vDSO.
///
/// Each read enters the kernel. That is the point: it reproduces on any Linux
/// machine what every clock read costs under a hypervisor whose clock the
/// vDSO cannot read, the case where clock-reading generators can fall behind
/// the ticker (see the crate's benchmarks).
///
/// On other platforms this is [`SystemClock`].
///
/// # Examples
///
/// ```
/// use flakegen::clock::SyscallClock;
/// use flakegen::{Clock, SystemClock};
///
/// assert!(SyscallClock.unix_nanos().abs_diff(SystemClock.unix_nanos()) < 1_000_000_000);
/// ```
    SyscallClock,
    syscall_realtime_nanos,
    "Whether this platform reads the clock with a real system call (Linux); if not, it is [`SystemClock`]."
}

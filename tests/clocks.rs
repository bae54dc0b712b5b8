//! Every real clock keeps time with the system clock: same reading, same rate.
//!
//! Each check reads the clock under test and `SystemClock` side by side, waits
//! a fixed real interval, and reads both again; the two must agree on where
//! they are and on how far they moved. A clock running at the wrong rate, or
//! anchored to the wrong instant, fails. About a quarter of a second each.

use std::thread;
use std::time::Duration;

use flakegen::clock::SyscallClock;
use flakegen::clock::{CoarseClock, ManualClock, MonotonicClock};
use flakegen::{Clock, SystemClock};

const INTERVAL: Duration = Duration::from_millis(250);

/// Coarse clocks lag by up to one kernel tick (1–10 ms); a reading pair can
/// also be split by a preemption. Both are far below a rate error's effect
/// (a clock at half speed is 125 ms short over the interval).
const TOLERANCE: Duration = Duration::from_millis(25);

fn keeps_time_with_the_system_clock(name: &str, clock: &dyn Clock) {
    let pair = || (SystemClock.unix_nanos(), clock.unix_nanos());
    let (system_0, clock_0) = pair();
    thread::sleep(INTERVAL);
    let (system_1, clock_1) = pair();
    let tolerance = TOLERANCE.as_nanos() as u64;

    assert!(
        clock_0.abs_diff(system_0) <= tolerance,
        "{name} reads {clock_0}, the system clock {system_0}"
    );
    let (moved, system_moved) = (clock_1 - clock_0, system_1 - system_0);
    assert!(
        system_moved >= INTERVAL.as_nanos() as u64,
        "the system clock moved {system_moved} ns in a {INTERVAL:?} sleep"
    );
    assert!(
        moved.abs_diff(system_moved) <= tolerance,
        "{name} moved {moved} ns while the system clock moved {system_moved} ns"
    );
}

#[test]
fn system_clock_moves_with_real_time() {
    keeps_time_with_the_system_clock("SystemClock", &SystemClock);
}

#[test]
fn coarse_clock_keeps_time() {
    keeps_time_with_the_system_clock("CoarseClock", &CoarseClock);
}

#[test]
fn syscall_clock_keeps_time() {
    keeps_time_with_the_system_clock("SyscallClock", &SyscallClock);
}

#[test]
fn monotonic_clock_keeps_time() {
    keeps_time_with_the_system_clock("MonotonicClock", &MonotonicClock::new());
}

#[test]
fn manual_clock_moves_only_when_told() {
    let clock = ManualClock::from_unix_millis(1_700_000_000_000);
    let before = clock.unix_nanos();
    thread::sleep(Duration::from_millis(20));
    assert_eq!(clock.unix_nanos(), before);
    clock.advance(Duration::from_millis(3));
    assert_eq!(clock.unix_nanos(), before + 3_000_000);
}

//! A clock that costs what a hypervisor makes a clock read cost.
//!
//! Under a hypervisor that traps clock reads (the article's Docker for Mac),
//! every `clock_gettime` took 1.1–3.2 µs. [`CostlyClock`] reproduces that on
//! any machine: it spins for a set time, then reads the system clock. So
//! `cargo bench` shows where the ticker pulls ahead of the clock-reading
//! strategies, whatever the machine's own clock costs.

use std::hint::spin_loop;
use std::time::{Duration, Instant};

use flakegen::{Clock, SystemClock};

#[derive(Clone, Copy, Debug)]
pub(crate) struct CostlyClock {
    cost: Duration,
}

impl CostlyClock {
    pub(crate) fn new(cost: Duration) -> Self {
        CostlyClock { cost }
    }
}

impl Clock for CostlyClock {
    fn unix_nanos(&self) -> u64 {
        // Busy, as a trapped read is: the core is not free for other work.
        let start = Instant::now();
        while start.elapsed() < self.cost {
            spin_loop();
        }
        SystemClock.unix_nanos()
    }
}

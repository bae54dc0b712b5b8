//! Fixtures shared by the integration tests: every strategy from one builder.

#![allow(dead_code)] // each test file uses its own subset
#![allow(unreachable_pub)] // a module of each test crate, not a public API

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(unix)]
pub mod fork;
#[cfg(feature = "remote")]
pub mod forwarder;
#[cfg(feature = "tokio")]
pub mod heartbeat;
#[cfg(feature = "kubernetes")]
pub mod kubernetes;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "remote")]
pub mod replicated;
#[cfg(feature = "remote")]
pub mod server;
#[cfg(feature = "remote")]
pub mod toxiproxy;

use std::time::Duration;

use flakegen::clock::ManualClock;
use flakegen::lease::Lease;
use flakegen::{Builder, Layout, Snowflake, Strategy};

/// Makes every lease's namespace ready for builds that start at once
/// (`Lease::prepare`, what `flakegen leases init` does): all are marked
/// first and their waits, the TTL and the skew each, are waited out
/// together.
pub fn ready(leases: &[&Lease]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut wait = Duration::ZERO;
        for lease in leases {
            let readiness = lease.prepare().unwrap();
            wait = wait.max(readiness.wait());
        }
        if wait.is_zero() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "namespaces not ready within 60 s"
        );
        std::thread::sleep(wait);
    }
}

/// 2024-01-01T00:00:00Z, comfortably after every preset's epoch.
pub const START_MS: u64 = 1_704_067_200_000;

/// A layout with 4 IDs per 1 ms unit, so that exhaustion happens at once.
pub const NARROW: Layout = Layout::builder()
    .timestamp_bits(41)
    .worker_bits(4)
    .sequence_bits(2)
    .build_const();

pub const STRATEGIES: [Strategy; 3] = Strategy::ALL;

// Every strategy from one builder, the ticker refreshed before each call,
// and the order of IDs: the lease suite's own, shared.
#[allow(unused_imports)] // each test file uses its own subset
pub use flakegen_contract::support::{Refreshed, assert_strictly_increasing, build};

/// A manual clock at [`START_MS`] and a builder using it.
pub fn manual(layout: Layout, worker: u64) -> (ManualClock, Builder<ManualClock>) {
    let clock = ManualClock::from_unix_millis(START_MS);
    let builder = Builder::new()
        .layout(layout)
        .worker(worker)
        .clock(clock.clone());
    (clock, builder)
}

/// The clock's reading in units of `layout`.
pub fn clock_units(layout: &Layout, clock: &ManualClock) -> u64 {
    layout.timestamp_at(clock.now())
}

pub fn timestamp(layout: &Layout, id: Snowflake) -> u64 {
    layout.decode(id).unwrap().timestamp
}

pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

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
pub mod services;
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

/// On a registry with no clock of its own (etcd, Kubernetes), at `url`, in
/// `namespace`: a record written by a host whose clock runs behind this
/// one's (by this clock its expiry has already passed) is held for the
/// namespace's TTL from the moment this process first saw its version, so
/// a host ahead of its peers cannot take a live lease early. The record is
/// written through the registry with a TTL of 1 ms, which is how it looks
/// here when its writer's clock runs a TTL behind. A build fails on it
/// (every id held), and again at a second read within the TTL; it takes
/// the id once the TTL has passed since the first sight.
#[cfg(any(feature = "etcd", feature = "kubernetes"))]
pub fn held_a_ttl_from_its_first_sight(url: &str, namespace: &str) {
    use flakegen::IdGenerator;
    use flakegen::lease::backend::{Expect, NewRecord, ReadRequest};
    use std::time::Instant;

    let one = Layout::builder().worker_bits(0).build().unwrap();
    let ttl = Duration::from_millis(3_000);
    let registry = flakegen::lease::connect(url).unwrap();
    let lease = || {
        Lease::new(std::sync::Arc::clone(&registry), namespace)
            .ttl(ttl)
            .skew(Duration::from_millis(500))
    };
    let build = || Builder::new().layout(one).lease(lease()).build_atomic();
    ready(&[&lease()]);
    build()
        .unwrap()
        .shutdown()
        .wait(Lease::DEFAULT_TIMEOUT)
        .unwrap();
    let read = registry.read(namespace, &ReadRequest::new(1)).unwrap();
    let record = read.records.iter().find(|r| r.worker == 0).unwrap();
    let expect = Expect {
        marker_unix_millis: read.marker_unix_millis.unwrap(),
        version: Some(record.version),
    };
    let behind = NewRecord {
        holder: "elsewhere",
        version: 424_242,
        ttl_millis: 1,
        fence_unix_millis: record.fence_unix_millis,
    };
    assert!(
        registry
            .swap(namespace, 0, expect, &behind)
            .unwrap()
            .is_some()
    );
    std::thread::sleep(Duration::from_millis(5));
    let first_sight = Instant::now();
    let refused = |when: &str| match build() {
        Err(e) => assert!(e.to_string().contains("held"), "{e}"),
        Ok(_) => panic!(
            "took, {when}, a lease whose version it first saw {} ms before its TTL had passed",
            ttl.saturating_sub(first_sight.elapsed()).as_millis()
        ),
    };
    refused("at its first sight");
    std::thread::sleep((ttl / 2).saturating_sub(first_sight.elapsed()));
    refused("at a second read");
    std::thread::sleep(ttl.saturating_sub(first_sight.elapsed()) + Duration::from_millis(100));
    let g = build().unwrap();
    g.next_id().unwrap();
    g.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
}

//! Round trips, counted: every registry's own server reached through a
//! forwarder that counts the requests it sees answered. A build on a new
//! connection, a renewal, a renewal whose connection was cut, a release,
//! and a build on a connection already open each cost a number of round trips, at most what the table of
//! registries says (`flakegen::lease::REGISTRIES`), and this test prints:
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --all-features --test round_trips -- --nocapture
//! ```
//!
//! The counts are what the forwarder sees: a TCP handshake is not one, a
//! TLS or authentication exchange is (none of these servers' URLs asks for
//! TLS), and requests a client pipelines count once.

#![cfg(feature = "remote")]

mod common;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::forwarder::{Forwarder, forwarded};
use common::server::ALL;
use flakegen::lease::backend::{ReadRequest, Registry};
use flakegen::lease::{self, Lease};
use flakegen::{Builder, IdGenerator, Layout};

fn namespace(server: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("round-trips-{server}-{}-{nanos}", std::process::id())
}

/// Connections and round trips through `forwarders` since `before`.
fn since(forwarders: &[Forwarder], before: (u64, u64)) -> (u64, u64) {
    let (connections, round_trips) = forwarders
        .iter()
        .map(Forwarder::counts)
        .fold((0, 0), |(c, r), (dc, dr)| (c + dc, r + dr));
    (connections - before.0, round_trips - before.1)
}

fn now(forwarders: &[Forwarder]) -> (u64, u64) {
    since(forwarders, (0, 0))
}

fn build(registry: &Arc<dyn Registry>, ns: &str) -> impl IdGenerator + use<> {
    Builder::new()
        .layout(Layout::TWITTER)
        .lease(Lease::new(Arc::clone(registry), ns))
        .build_atomic()
        .unwrap()
}

/// Waits for `generator`'s next renewal: its fence moves when one is
/// confirmed.
fn next_renewal(generator: &impl IdGenerator, server: &str) {
    let fence = generator.lease().unwrap().fence;
    let deadline = Instant::now() + Duration::from_secs(20);
    while generator.lease().unwrap().fence == fence {
        assert!(Instant::now() < deadline, "{server}: no renewal");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn each_step_costs_the_round_trips_it_is_held_to() {
    let namespaces: Vec<String> = ALL.iter().map(|s| namespace(s.name)).collect();
    let near: Vec<Lease> = ALL
        .iter()
        .zip(&namespaces)
        .map(|(s, ns)| Lease::new(lease::connect(&s.url()).unwrap(), ns.as_str()))
        .collect();
    // The namespaces marked and aged first, and each step written once
    // (tables created, scripts loaded): none of that is measured.
    common::ready(&near.iter().collect::<Vec<_>>());
    for lease in &near {
        assert!(lease.test_write().unwrap());
    }
    let rows: Vec<String> = thread::scope(|scope| {
        let each: Vec<_> = ALL
            .iter()
            .zip(&namespaces)
            .map(|(server, ns)| {
                scope.spawn(move || {
                    // What the table of registries says each step costs:
                    // what each takes today, so that a change that adds one
                    // fails here.
                    let kind = lease::REGISTRIES
                        .iter()
                        .find(|kind| kind.feature == server.name)
                        .unwrap_or_else(|| panic!("no registry kind for {}", server.name));
                    let bound = kind.round_trips;
                    let (url, forwarders) = forwarded(&server.url());
                    let registry: Arc<dyn Registry> = lease::connect(&url).unwrap();
                    assert_eq!(
                        registry.read_cost(),
                        kind.read_cost,
                        "{}: the table of registries says another read cost",
                        server.name
                    );
                    let first = build(&registry, ns);
                    let new_build = now(&forwarders);
                    let before = now(&forwarders);
                    next_renewal(&first, server.name);
                    let renewal = since(&forwarders, before);
                    // A renewal whose connection was cut: a new one's
                    // set-up, then the renewal.
                    for forwarder in &forwarders {
                        forwarder.cut();
                    }
                    let before = now(&forwarders);
                    next_renewal(&first, server.name);
                    let reconnecting = since(&forwarders, before);
                    let before = now(&forwarders);
                    first.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
                    let release = since(&forwarders, before);
                    let before = now(&forwarders);
                    let second = build(&registry, ns);
                    let warm_build = since(&forwarders, before);
                    drop(second);
                    let before = now(&forwarders);
                    registry.read(ns, &ReadRequest::new(1024)).unwrap();
                    let read = since(&forwarders, before);
                    let row = format!(
                        "| {} | {} ({} connection) | {} | {} | {} ({} connection) | {} | {} |",
                        server.name,
                        new_build.1,
                        new_build.0,
                        warm_build.1,
                        renewal.1,
                        reconnecting.1,
                        reconnecting.0,
                        release.1,
                        read.1
                    );
                    for (step, (connections, count), most) in [
                        ("a build on a new connection", new_build, bound.new_build),
                        (
                            "a build on an open connection",
                            warm_build,
                            bound.warm_build,
                        ),
                        ("a renewal", renewal, bound.renewal),
                        (
                            "a renewal on a new connection",
                            reconnecting,
                            bound.reconnecting_renewal,
                        ),
                        ("a release", release, bound.release),
                        ("a read", read, bound.read),
                    ] {
                        let most = u64::from(most);
                        assert!(
                            count <= most,
                            "{}: {step} took {count} round trips over {connections} new \
                             connections, more than the {most} it is held to",
                            server.name
                        );
                    }
                    row
                })
            })
            .collect();
        each.into_iter().map(|t| t.join().unwrap()).collect()
    });
    println!(
        "| registry | new build | warm build | renewal | renewal, new connection | release | read |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}

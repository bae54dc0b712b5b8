//! Leases across a real distance: every registry's own server reached
//! through forwarders that delay every chunk by 150 ms each way (a round
//! trip of 300 ms, as across continents). At the default terms a build
//! succeeds, and a generator then issues for 12 s with no refusal. A
//! registry that answers is never called unreachable because it is far.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --all-features --test lease_distance -- --nocapture
//! ```

#![cfg(feature = "remote")]

mod common;

use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::forwarder::forwarded;
use common::server::ALL;
use flakegen::lease::{self, Lease};
use flakegen::{Builder, IdGenerator, IssueError, Layout};

/// Each way: a round trip of 300 ms.
const ONE_WAY: Duration = Duration::from_millis(150);

fn namespace(server: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("distance-{server}-{}-{nanos}", std::process::id())
}

/// At a 300 ms round trip and the default terms, on every registry side by
/// side: the build succeeds, and 12 s of issuing (an ID a millisecond)
/// costs no refusal.
#[test]
fn a_registry_300_ms_away_builds_and_issues_without_a_refusal() {
    // The namespaces made ready first, near: their marker's wait (12 s at
    // the defaults) is not what this measures.
    let namespaces: Vec<String> = ALL.iter().map(|s| namespace(s.name)).collect();
    let near: Vec<Lease> = ALL
        .iter()
        .zip(&namespaces)
        .map(|(s, ns)| Lease::new(lease::connect(&s.url()).unwrap(), ns.as_str()))
        .collect();
    common::ready(&near.iter().collect::<Vec<_>>());
    thread::scope(|scope| {
        for (server, ns) in ALL.iter().zip(&namespaces) {
            scope.spawn(move || {
                let (url, _forwarders) = forwarded(&server.url(), ONE_WAY);
                let started = Instant::now();
                let built = Builder::new()
                    .layout(Layout::TWITTER)
                    .lease(Lease::new(lease::connect(&url).unwrap(), ns.as_str()))
                    .build_atomic();
                let g = built.unwrap_or_else(|e| {
                    panic!(
                        "{}: a build 300 ms away failed after {:?}: {e}",
                        server.name,
                        started.elapsed()
                    )
                });
                let took = started.elapsed();
                let (mut issued, mut refused) = (0u64, 0u64);
                let deadline = Instant::now() + Duration::from_secs(12);
                while Instant::now() < deadline {
                    match g.try_next_id() {
                        Ok(_) => issued += 1,
                        Err(IssueError::LeaseLost { .. }) => refused += 1,
                        Err(e) => panic!("{}: {e}", server.name),
                    }
                    thread::sleep(Duration::from_millis(1));
                }
                println!(
                    "{}: built 300 ms away in {took:?}; {issued} IDs in 12 s, {refused} refused",
                    server.name
                );
                assert_eq!(
                    refused,
                    0,
                    "{}: {refused} refusals 300 ms away ({:?})",
                    server.name,
                    g.lease()
                );
            });
        }
    });
}

/// Each way, for a registry too far for a TTL of 3 s: a round trip of 1 s.
/// Setting a connection up then takes each SQL server's own round trips
/// (at least 4: greeting or start-up, authentication, the session) and so
/// more than the 3 s allowed, however fast the machine; the probe that
/// tells slow from gone, asked at half the bound, needs one round trip and
/// is answered with half a second to spare.
const TOO_FAR: Duration = Duration::from_millis(500);

/// A registry too far for its lease's terms (a round trip of 1 s, a TTL of
/// 3 s, so 3 s to set a connection up) is said to answer too slowly, with
/// what to raise; a port that accepts and never answers is said to be
/// unreachable. The two are told apart by asking the port whether the
/// right server answers there.
#[test]
fn a_registry_too_slow_for_its_terms_is_told_from_one_that_is_gone() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let keep = thread::spawn(move || {
        // Accepts, and says nothing, until the test ends.
        let held: Vec<_> = silent.incoming().take(8).collect();
        drop(held);
    });
    let build = |url: &str| {
        Builder::new()
            .layout(Layout::TWITTER)
            .lease(
                Lease::new(lease::connect(url).unwrap(), "distance-slow")
                    .ttl(Duration::from_secs(3)),
            )
            .build_atomic()
            .map(drop)
            .unwrap_err()
            .to_string()
    };
    for server in ALL
        .iter()
        .filter(|s| ["postgres", "mysql"].contains(&s.name))
    {
        // The premise, from the table the round-trip test holds: a new
        // build's round trips beyond a warm one's (the connection's own)
        // take longer than the 3 s bound at this distance.
        let kind = lease::REGISTRIES
            .iter()
            .find(|k| {
                k.schemes
                    .contains(&server.url().split_once("://").unwrap().0)
            })
            .unwrap();
        let set_up = kind.round_trips.new_build - kind.round_trips.warm_build;
        assert!(
            TOO_FAR * 2 * set_up > Duration::from_secs(4),
            "{}",
            server.name
        );
        let (url, _forwarders) = forwarded(&server.url(), TOO_FAR);
        let said = build(&url);
        assert!(
            said.contains("answers, but setting up a connection took longer than the 3s allowed")
                && said.contains("raise Lease::ttl"),
            "{}: {said}",
            server.name
        );
        let url = server.url();
        let (scheme, rest) = url.split_once("://").unwrap();
        let (userinfo, rest) = rest.rsplit_once('@').unwrap();
        let path = rest.split_once('/').map_or("", |(_, p)| p);
        let gone = format!("{scheme}://{userinfo}@127.0.0.1:{silent_port}/{path}");
        let said = build(&gone);
        assert!(
            said.contains("unreachable (no answer within 3s)"),
            "{}: {said}",
            server.name
        );
    }
    drop(keep);
}

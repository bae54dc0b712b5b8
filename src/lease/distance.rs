//! What a registry's distance costs a lease at its terms: the reckoning
//! `flakegen leases check` prints, from the keeper's own bounds.

use std::time::Duration;

use super::backend::connect::RoundTrips;
use super::keeper::{open_room, reconnect_room};
use super::settings::Lease;

/// A lease's steps at a registry some round-trip time away, against the
/// time its thread gives each ([`Lease::at_distance`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Distance {
    /// The round-trip time it was reckoned at.
    pub rtt: Duration,
    /// What the registry's steps cost in round trips.
    pub round_trips: RoundTrips,
    /// A build on a new connection, its set-up included.
    pub build: Duration,
    /// How long the lease's thread lets a build's new connection take
    /// before it gives the call up: the TTL, at least
    /// [`Lease::DEFAULT_TIMEOUT`].
    pub build_room: Duration,
    /// A renewal on an open connection.
    pub renewal: Duration,
    /// How long a renewal's call on an open connection may wait for its
    /// answer before the connection is taken for dead
    /// ([`Lease::call_timeout`]).
    pub call_room: Duration,
    /// A renewal whose open connection died: a new connection's set-up,
    /// then the renewal.
    pub reconnecting_renewal: Duration,
    /// The least time a renewal has to reconnect and land before its
    /// fence, so that a connection lost costs no refusal: half of what is
    /// left at its first try (the TTL less the renewal interval).
    pub renewal_room: Duration,
}

impl Distance {
    /// Whether a build on a new connection, a renewal, and a renewal that
    /// must reconnect, each fit the time the lease gives them.
    pub fn fits(&self) -> bool {
        self.build <= self.build_room
            && self.renewal <= self.call_room
            && self.reconnecting_renewal <= self.renewal_room
    }
}

impl Lease {
    /// What a registry `rtt` away whose steps cost `round_trips` (a
    /// [`RegistryKind`](super::RegistryKind)'s) costs this lease, against
    /// the time its thread gives each step: what `flakegen leases check`
    /// warns of. A registry farther than the terms allow is not refused: its
    /// builds fail on a new connection's set-up, or its renewals, after a
    /// connection is lost, land past the fence and the generator pauses.
    /// Raise the TTL for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use flakegen::lease::{Lease, MemoryRegistry, REGISTRIES};
    ///
    /// let postgres = REGISTRIES.iter().find(|k| k.feature == "postgres").unwrap();
    /// let lease = Lease::new(MemoryRegistry::new(), "orders");
    /// // The defaults (a TTL of 10 s) fit a registry 300 ms away...
    /// assert!(lease.at_distance(Duration::from_millis(300), postgres.round_trips).fits());
    /// // ...but not one 2 s away: a renewal that reconnects would miss its fence.
    /// assert!(!lease.at_distance(Duration::from_secs(2), postgres.round_trips).fits());
    /// ```
    pub fn at_distance(&self, rtt: Duration, round_trips: RoundTrips) -> Distance {
        let ttl = self.ttl;
        Distance {
            rtt,
            round_trips,
            build: rtt * round_trips.new_build,
            build_room: open_room(ttl),
            renewal: rtt * round_trips.renewal,
            call_room: self.call_bound(),
            reconnecting_renewal: rtt * round_trips.reconnecting_renewal,
            renewal_room: reconnect_room(ttl, self.renewal_interval()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::MemoryRegistry;

    /// The longest round trip, in whole ms, at which a registry whose
    /// steps cost `trips` fits `lease`'s terms.
    fn farthest(lease: &Lease, trips: RoundTrips) -> u64 {
        let (mut near, mut far) = (0u64, 60_000u64);
        while near + 1 < far {
            let mid = (near + far) / 2;
            if lease.at_distance(Duration::from_millis(mid), trips).fits() {
                near = mid;
            } else {
                far = mid;
            }
        }
        near
    }

    /// The lease docs' table of the farthest registry each TTL fits is
    /// this reckoning's, row by row.
    #[test]
    fn the_lease_docs_say_how_far_each_ttl_reaches() {
        let docs = include_str!("mod.rs");
        let mut missing = Vec::new();
        for kind in crate::lease::REGISTRIES {
            let reach = [3, 10, 30].map(|s| {
                let lease = Lease::new(MemoryRegistry::new(), "far").ttl(Duration::from_secs(s));
                farthest(&lease, kind.round_trips)
            });
            let row = format!(
                "//! | {} | {} ms | {} ms | {} ms |",
                kind.name, reach[0], reach[1], reach[2]
            );
            if !docs.contains(&row) {
                missing.push(row);
            }
        }
        assert!(
            missing.is_empty(),
            "the lease docs lack the rows\n{}",
            missing.join("\n")
        );
    }

    const TRIPS: RoundTrips = RoundTrips {
        new_build: 12,
        warm_build: 3,
        renewal: 1,
        reconnecting_renewal: 10,
        release: 1,
        read: 1,
    };

    #[test]
    fn a_registry_too_far_for_the_terms_is_told_by_the_step_that_misses() {
        let lease = Lease::new(MemoryRegistry::new(), "far").ttl(Duration::from_secs(3));
        // TTL 3 s, renewals every 1 s: 2 s left at a first try, 1 s of room.
        let near = lease.at_distance(Duration::from_millis(100), TRIPS);
        assert_eq!(near.renewal_room, Duration::from_secs(1));
        assert_eq!(near.reconnecting_renewal, Duration::from_millis(1_000));
        assert!(near.fits());
        // 10 round trips to reconnect and renew at 150 ms: 1.5 s, past the room.
        let far = lease.at_distance(Duration::from_millis(150), TRIPS);
        assert!(far.build <= far.build_room, "{far:?}");
        assert!(!far.fits(), "{far:?}");
        // A build of 12 round trips at 300 ms: 3.6 s, past the 3 s a TTL of
        // 3 s gives it.
        let farther = lease.at_distance(Duration::from_millis(300), TRIPS);
        assert!(farther.build > farther.build_room, "{farther:?}");
    }

    #[test]
    fn a_renewal_slower_than_its_call_bound_does_not_fit() {
        // The defaults: a TTL of 10 s, so a renewal's call may wait a fifth
        // of it, 2 s, and a reconnecting renewal has 3.3 s of room.
        let lease = Lease::new(MemoryRegistry::new(), "far");
        let one = RoundTrips {
            new_build: 1,
            warm_build: 1,
            reconnecting_renewal: 1,
            ..TRIPS
        };
        let at = lease.at_distance(Duration::from_millis(2_500), one);
        assert_eq!(at.call_room, Duration::from_secs(2));
        // Only the renewal's call misses its bound.
        assert!(at.build <= at.build_room && at.reconnecting_renewal <= at.renewal_room);
        assert!(!at.fits(), "{at:?}");
        let longer = lease
            .call_timeout(Duration::from_secs(3))
            .at_distance(Duration::from_millis(2_500), one);
        assert!(longer.fits(), "{longer:?}");
    }
}

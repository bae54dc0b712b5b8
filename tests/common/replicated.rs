//! A registry's replicated service from `scripts/services.sh`, as the lease
//! contract's fixture: a pair (a primary and a replica, reached through a
//! forwarder that follows the primary, so that clients follow a failover as
//! they would behind an address that moves), or the etcd cluster (every
//! member in the URL). The registry of the contract, of the fault test and
//! of the failover scenarios.

use std::net::SocketAddr;
use std::sync::Arc;

use flakegen::lease::backend::Registry;
use flakegen_contract::{Failover, Fixture, Frozen, Wipe};

use super::forwarder::Forwarder;
use super::server::{Loss, Server};
use super::services::{services, signal_all};

/// A registry's replicated service, made whole.
pub struct Replicated {
    pub server: &'static Server,
    /// A pair's address that follows its primary; `None` for a cluster.
    forwarder: Option<Forwarder>,
}

impl Replicated {
    /// `server`'s replicated service, made whole (a run that stopped half-way
    /// may have left it otherwise): a pair's forwarder points at its
    /// primary; a cluster has every member running, a leader change behind
    /// it and a snapshot to restore (a restore of it brings back a raft term
    /// below the one the prefix saw since, which flakegen must catch).
    pub fn new(server: &'static Server) -> Replicated {
        if server.pair {
            services(&["rejoin", server.replicated]);
            let primary = services(&["primary", server.replicated]);
            let forwarder = Forwarder::new(address(&server.member_url(&primary)));
            return Replicated {
                server,
                forwarder: Some(forwarder),
            };
        }
        let cluster = Replicated {
            server,
            forwarder: None,
        };
        cluster.make_whole();
        cluster
    }

    /// A cluster's every member thawed and running, a leader change, a
    /// namespace marked (something of flakegen's for a restore to take
    /// back) and a snapshot; a single server running.
    pub fn make_whole(&self) {
        if self.server.members.is_empty() {
            self.services("thaw", &[]);
            return;
        }
        for member in self.server.members {
            self.services("thaw", &[member]);
            self.services("revive", &[member]);
        }
        self.services("elect", &[]);
        self.registry()
            .mark("cluster fixture")
            .expect("the cluster takes a marker");
        self.services("snapshot", &[]);
    }

    /// `scripts/services.sh <verb> <its replicated service> [args]`.
    pub fn services(&self, verb: &str, args: &[&str]) -> String {
        let mut all = vec![verb, self.server.replicated];
        all.extend(args);
        services(&all)
    }

    /// The URL clients lease through: the forwarder's, or the cluster's.
    pub fn url(&self) -> String {
        match &self.forwarder {
            Some(forwarder) => {
                let url = self.server.member_url("a");
                let old = address(&url).to_string();
                url.replace(&old, &format!("127.0.0.1:{}", forwarder.port()))
            }
            None => self.server.url(),
        }
    }

    /// A pair's member that takes writes: `a` or `b`.
    pub fn primary(&self) -> String {
        self.services("primary", &[])
    }

    /// A pair primary's own URL, for an administrator's statements.
    pub fn primary_url(&self) -> String {
        self.server.member_url(&self.primary())
    }

    /// The primary's processes (the leader's, for a cluster).
    pub fn pids(&self) -> Vec<String> {
        Server::server_pids(self.server.replicated, &[])
    }

    /// The data lost as the server's real faults lose it.
    pub fn lose(&self) {
        match self.server.loss {
            Loss::Sql(sql) => self.services("sql", &[sql]),
            Loss::Crash => self.services("crash", &[]),
            Loss::Restore => self.services("restore", &[]),
            Loss::Delete => self.services("wipe", &[]),
        };
    }

    /// A pair's forwarder moves to the primary, wherever it is now.
    pub fn follow(&self) {
        if let Some(forwarder) = &self.forwarder {
            forwarder.switch(address(&self.primary_url()));
        }
    }

    /// Master-master: the primary turns read-only, the other takes writes,
    /// and clients follow.
    pub fn flip(&self) {
        self.services("flip", &[]);
        self.follow();
    }
}

/// The `host:port` of a URL, as a socket address.
fn address(url: &str) -> SocketAddr {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap();
    let address = authority.rsplit('@').next().unwrap();
    address.parse().unwrap_or_else(|e| panic!("{address}: {e}"))
}

impl Fixture for Replicated {
    fn name(&self) -> &str {
        self.server.name
    }

    fn registry(&self) -> Arc<dyn Registry> {
        flakegen::lease::connect(&self.url()).unwrap()
    }

    fn lose_data(&self) {
        self.lose();
    }

    fn plant_marker(&self, namespace: &str, marker_unix_millis: u64) -> bool {
        self.services(
            "plant-marker",
            &[namespace, &marker_unix_millis.to_string()],
        );
        true
    }

    fn wipe(&self, wipe: Wipe<'_>) {
        match wipe {
            Wipe::Everything => self.services("wipe", &[]),
            Wipe::Namespace(namespace) => self.services("wipe", &[namespace]),
            Wipe::Record(namespace, worker) => {
                self.services("wipe", &[namespace, &worker.to_string()])
            }
            Wipe::Marker(namespace) => self.services("wipe", &[namespace, "marker"]),
            other => panic!("no such wipe in scripts/services.sh: {other:?}"),
        };
    }

    fn freeze(&self) -> Option<Frozen> {
        // A pair's primary, or the one server; every member of a cluster.
        let pids = if self.server.pair || self.server.members.is_empty() {
            self.pids()
        } else {
            self.server
                .members
                .iter()
                .flat_map(|m| Server::server_pids(self.server.replicated, &[m]))
                .collect()
        };
        assert!(
            !pids.is_empty(),
            "no {} server to freeze",
            self.server.replicated
        );
        signal_all(&pids, "-STOP");
        Some(Frozen::new(move || signal_all(&pids, "-CONT")))
    }

    fn failover(&self) -> Option<&dyn Failover> {
        self.server.pair.then_some(self as &dyn Failover)
    }
}

impl Failover for Replicated {
    fn cut(&self) {
        self.services("cut", &[]);
    }

    fn promote(&self) {
        self.services("promote", &[]);
        self.follow();
    }

    fn rejoin(&self) {
        self.services("rejoin", &[]);
    }
}

/// What the fault test's registry-specific faults returned: its kind,
/// whether it loses data, and when it ended if not when the call returned
/// (a failover ends at the promotion; the old primary's rebuild after it
/// takes seconds and is no part of it).
pub type Injected = Option<(&'static str, bool, Option<std::time::Instant>)>;

/// The faults of a replicated pair, by a choice of 2 to 8: the primary
/// frozen, crashed or restarted (a loss for a server that keeps nothing),
/// a burst of restarts, a failover to a lagging replica, a burst of losses
/// (`TRUNCATE`); with `flips`, half the failovers a master-master flip.
pub fn pair_fault(
    r: &Replicated,
    choice: u64,
    dice: &mut dyn super::server::Dice,
    flips: bool,
) -> Injected {
    use std::thread::sleep;
    use std::time::{Duration, Instant};
    let ms = |dice: &mut dyn super::server::Dice, low, high| {
        Duration::from_millis(dice.between(low, high))
    };
    let keeps_nothing = matches!(r.server.loss, Loss::Crash);
    Some(match choice {
        2 => {
            let pids = r.pids();
            signal_all(&pids, "-STOP");
            sleep(ms(dice, 300, 2_500));
            signal_all(&pids, "-CONT");
            ("server frozen", false, None)
        }
        3 if dice.between(0, 2) == 0 => {
            // SIGKILL (an immediate stop for PostgreSQL): a durable server
            // recovers every commit; Redis comes back empty.
            r.services("crash", &[]);
            ("server crashed", keeps_nothing, None)
        }
        3 => {
            r.services("restart", &[]);
            ("server restarted", keeps_nothing, None)
        }
        4 => {
            for _ in 0..dice.between(2, 4) {
                r.services("restart", &[]);
                sleep(ms(dice, 100, 400));
            }
            ("restart burst", keeps_nothing, None)
        }
        7 | 8 if flips && dice.between(0, 2) == 0 => {
            // Master-master: the other side takes writes, at times after
            // missing the last renewals.
            let lagging = dice.between(0, 2) == 0;
            if lagging {
                r.services("cut", &[]);
                sleep(ms(dice, 200, 1_500));
            }
            r.flip();
            let ended = Instant::now();
            r.services("rejoin", &[]);
            let kind = if lagging {
                "master-master flip, lagging"
            } else {
                "master-master flip"
            };
            (kind, true, Some(ended))
        }
        7 | 8 => {
            // The replica stops replicating, the primary goes on confirming
            // renewals it never gets, then the primary dies and the replica
            // is promoted.
            r.services("cut", &[]);
            sleep(ms(dice, 200, 1_500));
            Failover::promote(r);
            let ended = Instant::now();
            r.services("rejoin", &[]);
            ("failover to a lagging replica", true, Some(ended))
        }
        _ if !keeps_nothing => {
            for _ in 0..dice.between(1, 4) {
                r.lose();
                sleep(ms(dice, 50, 300));
            }
            ("truncate burst", true, None)
        }
        _ => {
            r.services("restart", &[]);
            ("server restarted", true, None)
        }
    })
}

//! The registries' test servers, from `scripts/services.sh`: what the tests
//! know of each registry (one file per registry beside this one, listed once
//! in [`ALL`]).

use std::process::Command;

use super::replicated::Replicated;
use super::services;

/// A registry's test servers: one of its own, and a replicated service (a
/// pair that fails over, or the etcd cluster).
pub struct Server {
    /// The registry's name in test output and on a test's command line.
    pub name: &'static str,
    /// Its replicated service: a pair (`<service>-pair`, members `a` and
    /// `b`, reached through a forwarder that follows the primary), or a
    /// cluster (every member in the URL).
    pub replicated: &'static str,
    /// Whether the replicated service fails over to a replica (a pair).
    pub pair: bool,
    /// A cluster's members (etcd's), each with its own process; none for
    /// a pair or a single server.
    pub members: &'static [&'static str],
    /// How its data is lost, as its server's real faults lose it (not by
    /// hand): a statement, a crash (a server that keeps nothing), or a
    /// restore of the cluster's snapshot.
    pub loss: Loss,
    /// The fault test's helpers' TTL and skew allowance on it, in ms.
    pub terms: (u64, u64),
    /// The fault test's faults that must cost the healing helpers no
    /// refusal: a consensus store's member lost, its leader too.
    pub harmless: &'static [&'static str],
    /// The fault test's faults of this registry's servers, beside those
    /// every registry shares: by a choice of 2 to 8, the fault's kind,
    /// whether it loses data, and when it ended if before the call returned;
    /// `None` for a choice it has no fault for.
    pub fault: fn(&Replicated, u64, &mut dyn Dice) -> super::replicated::Injected,
}

/// How a server's data is lost.
#[derive(Clone, Copy, Debug)]
pub enum Loss {
    /// This statement, run as the server's administrator (`TRUNCATE`).
    Sql(&'static str),
    /// A crash: the server keeps nothing (Redis without persistence).
    Crash,
    /// The cluster restored from the snapshot it was made whole with.
    Restore,
    /// Every object of flakegen's deleted (`scripts/services.sh wipe`):
    /// what a store that keeps everything it confirmed loses, as an
    /// operator or a script deletes it.
    Delete,
}

/// Random numbers, as the fault test draws them.
pub trait Dice {
    /// A number in `low..high`.
    fn between(&mut self, low: u64, high: u64) -> u64;
}

/// Every registry whose feature is on: the one list a new registry joins.
pub const ALL: &[&Server] = &[
    #[cfg(feature = "postgres")]
    &super::postgres::SERVER,
    #[cfg(feature = "redis")]
    &super::redis::SERVER,
    #[cfg(feature = "mysql")]
    &super::mysql::SERVER,
    #[cfg(feature = "etcd")]
    &super::etcd::SERVER,
    #[cfg(feature = "kubernetes")]
    &super::kubernetes::SERVER,
];

/// The registries whose replicated service is a pair that fails over.
pub fn pairs() -> impl Iterator<Item = &'static Server> {
    ALL.iter().copied().filter(|s| s.pair)
}

impl Server {
    /// Its own test server's URL (the cluster's, for etcd).
    pub fn url(&self) -> String {
        services::url(self.name, "")
    }

    /// Its service alone in `scripts/services.sh`.
    pub fn service(&self) -> &'static str {
        services::service(self.name)
    }

    /// Its own test server's URL over TLS, verified against the test CA: a
    /// role that PostgreSQL takes over TLS only; Redis's TLS-only port; a
    /// MariaDB user that `REQUIRE SSL`; etcd's TLS ports.
    pub fn tls_url(&self) -> String {
        services::url(self.name, "TLS")
    }

    /// The URL of a member (`a` or `b`) of its pair.
    pub fn member_url(&self, member: &str) -> String {
        services::url(self.name, &member.to_ascii_uppercase())
    }

    /// `scripts/services.sh <verb> <its own service> [args]`.
    pub fn services(&self, verb: &str, args: &[&str]) -> String {
        let mut all = vec![verb, self.service()];
        all.extend(args);
        services::services(&all)
    }

    /// The processes of a service's server, to freeze: the one its pid
    /// file names (a pair's primary; the cluster's leader, or the member
    /// `args` names) and its children.
    pub fn server_pids(service: &str, args: &[&str]) -> Vec<String> {
        let mut all = vec!["pid-file", service];
        all.extend(args);
        let file = services::services(&all);
        let main = std::fs::read_to_string(file);
        let Some(main) = main.ok().and_then(|t| t.lines().next().map(str::to_owned)) else {
            return vec![];
        };
        let children = Command::new("pgrep").args(["-P", &main]).output();
        let children = children.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        let mut pids = vec![main];
        pids.extend(
            children
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned),
        );
        pids
    }
}

/// The registry named `name`, if its feature is on.
pub fn named(name: &str) -> Option<&'static Server> {
    ALL.iter().copied().find(|s| s.name == name)
}

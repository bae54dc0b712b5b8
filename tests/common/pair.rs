//! A backend's replicated pair from `scripts/services.sh` (a primary and a
//! replica), reached through a forwarder that follows the primary: the
//! registry of the lease contract's failover rules, of the fault test and
//! of the failover scenarios.

use std::net::SocketAddr;
use std::sync::Arc;

use flakegen::lease::backend::Registry;
use flakegen_contract::{Failover, Fixture, Frozen};

use super::backend::{Backend, services, signal_all};
use super::forwarder::Forwarder;

/// A replicated pair, and the address that follows its primary.
pub struct Pair {
    pub backend: &'static Backend,
    forwarder: Forwarder,
}

impl Pair {
    /// `backend`'s pair, made whole (a run that stopped half-way may have
    /// left it otherwise): the forwarder points at its primary.
    pub fn new(backend: &'static Backend) -> Pair {
        let pair = format!("{}-pair", backend.service);
        services(&["rejoin", &pair]);
        let primary = services(&["primary", &pair]);
        Pair {
            backend,
            forwarder: Forwarder::new(address(&backend.member_url(&primary))),
        }
    }

    fn name(&self) -> String {
        format!("{}-pair", self.backend.service)
    }

    /// `scripts/services.sh <action> <pair>`.
    pub fn services(&self, action: &str) -> String {
        services(&[action, &self.name()])
    }

    /// The member that takes writes: `a` or `b`.
    pub fn primary(&self) -> String {
        self.services("primary")
    }

    /// The URL clients lease through: the forwarder's.
    pub fn url(&self) -> String {
        let url = self.backend.member_url("a");
        let old = address(&url).to_string();
        url.replace(&old, &format!("127.0.0.1:{}", self.forwarder.port()))
    }

    /// The primary's own URL, for an administrator's statements.
    pub fn primary_url(&self) -> String {
        self.backend.member_url(&self.primary())
    }

    /// The primary's processes.
    pub fn pids(&self) -> Vec<String> {
        self.backend.server_pids(Some(&self.primary()))
    }

    /// The primary loses its data: a `TRUNCATE`, or a restart of a server
    /// that keeps nothing.
    pub fn lose(&self) {
        self.backend
            .lose_data(&self.primary_url(), || drop(self.services("crash")));
    }

    /// The forwarder moves to the primary, wherever it is now.
    pub fn follow(&self) {
        let url = self.primary_url();
        self.forwarder.switch(address(&url));
    }

    /// Master-master: the primary turns read-only, the other takes writes,
    /// and clients follow.
    pub fn flip(&self) {
        self.services("flip");
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

impl Fixture for Pair {
    fn name(&self) -> &str {
        self.backend.name
    }

    fn registry(&self) -> Arc<dyn Registry> {
        flakegen::lease::connect(&self.url()).unwrap()
    }

    fn lose_data(&self) {
        self.lose();
    }

    fn freeze(&self) -> Option<Frozen> {
        let pids = self.pids();
        assert!(!pids.is_empty(), "no {} primary to freeze", self.name());
        signal_all(&pids, "-STOP");
        Some(Frozen::new(move || signal_all(&pids, "-CONT")))
    }

    fn failover(&self) -> Option<&dyn Failover> {
        Some(self)
    }
}

impl Failover for Pair {
    fn cut(&self) {
        self.services("cut");
    }

    fn promote(&self) {
        self.services("promote");
        self.follow();
    }

    fn rejoin(&self) {
        self.services("rejoin");
    }
}

//! The etcd cluster of `scripts/services.sh` (members e1, e2, e3): the
//! registry of the contract, of the fault test and of the etcd scenarios.
//! A cluster, not a pair: a member lost is no failover to detect, and its
//! one loss is a restore from a snapshot.

use std::sync::Arc;

use flakegen::lease::backend::Registry;
use flakegen::lease::{self, EtcdRegistry};
use flakegen_contract::{Fixture, Frozen};

use super::backend::{env, services, services_dir, signal_all};

pub const MEMBERS: [&str; 3] = ["e1", "e2", "e3"];

/// The cluster, made whole, with the snapshot its losses restore.
pub struct Cluster;

impl Cluster {
    /// The fixture, with the cluster made whole ([`Cluster::make_whole`]).
    pub fn new() -> Cluster {
        Cluster::make_whole();
        Cluster
    }

    /// Every member running and answering; then a leader change, a marker
    /// and a snapshot: a restore of it brings back a raft term below the
    /// one the prefix saw since, which flakegen must catch as a loss.
    pub fn make_whole() {
        for member in MEMBERS {
            services(&["thaw", "etcd", member]);
            services(&["revive", "etcd", member]);
        }
        services(&["elect", "etcd"]);
        Cluster::registry_at(&Cluster::url())
            .mark("etcd fixture")
            .expect("the etcd cluster takes a marker");
        services(&["snapshot", "etcd"]);
    }

    pub fn url() -> String {
        env("FLAKEGEN_TEST_ETCD_URL")
    }

    pub fn tls_url() -> String {
        env("FLAKEGEN_TEST_ETCD_TLS_URL")
    }

    fn registry_at(url: &str) -> Arc<dyn Registry> {
        Arc::new(EtcdRegistry::new(url).expect("the etcd URL parses"))
    }

    /// The pid of `member` (`e1`, `e2`, `e3`), if it runs.
    pub fn pid(member: &str) -> Option<String> {
        let file = services_dir().join("etcd").join(format!("{member}.pid"));
        std::fs::read_to_string(file)
            .ok()
            .map(|p| p.trim().to_owned())
    }

    /// The member that leads.
    pub fn leader() -> String {
        services(&["leader", "etcd"])
    }

    /// `scripts/services.sh <action> etcd <member>`.
    pub fn member(action: &str, member: &str) {
        services(&[action, "etcd", member]);
    }

    /// A restore from the fixture's snapshot: every write since is gone.
    pub fn restore() {
        services(&["restore", "etcd"]);
    }
}

impl Fixture for Cluster {
    fn name(&self) -> &str {
        "etcd"
    }

    fn registry(&self) -> Arc<dyn Registry> {
        lease::connect(&Cluster::url()).expect("the etcd URL parses")
    }

    fn lose_data(&self) {
        Cluster::restore();
    }

    fn freeze(&self) -> Option<Frozen> {
        let pids: Vec<String> = MEMBERS.iter().filter_map(|m| Cluster::pid(m)).collect();
        assert!(!pids.is_empty(), "no etcd member to freeze");
        signal_all(&pids, "-STOP");
        Some(Frozen::new(move || signal_all(&pids, "-CONT")))
    }
}

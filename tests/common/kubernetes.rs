//! Kubernetes, as the tests use it: a real kube-apiserver over an etcd
//! member of its own, RBAC on, and a ServiceAccount holding exactly the
//! Role of flakegen's guide (the URL's token). One server, not a pair: the
//! API server keeps everything etcd confirmed, and its losses are Leases
//! deleted.

use std::thread::sleep;
use std::time::Duration;

use super::replicated::{Injected, Replicated};
use super::server::{Dice, Loss, Server};

pub const SERVER: Server = Server {
    name: "kubernetes",
    replicated: "kubernetes",
    pair: false,
    members: &[],
    loss: Loss::Delete,
    // Renewals go through the API server to its etcd, which fsyncs: a
    // TTL of 3 s, as etcd's.
    terms: (3_000, 1_000),
    // Its one API server restarted is an outage: 1.8 to 2.4 s between two
    // answers here, more than the 2 s a renewal's confirmation is trusted
    // at these terms. A refusal then is the protocol's answer, bounded by
    // the refusal check, not a fault of the client.
    harmless: &[],
    fault,
};

/// The server's faults, by a choice of 2 to 8; each ends with the server
/// answering again.
fn fault(r: &Replicated, choice: u64, dice: &mut dyn Dice) -> Injected {
    let ms = |dice: &mut dyn Dice, low, high| Duration::from_millis(dice.between(low, high));
    Some(match choice {
        2..=4 => {
            r.services("restart", &[]);
            ("api server restarted", false, None)
        }
        5 | 6 => {
            let pids = super::server::Server::server_pids(r.server.replicated, &[]);
            super::services::signal_all(&pids, "-STOP");
            sleep(ms(dice, 300, 2_500));
            super::services::signal_all(&pids, "-CONT");
            ("api server frozen", false, None)
        }
        _ => {
            r.lose();
            ("leases deleted", true, None)
        }
    })
}

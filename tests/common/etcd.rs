//! The etcd cluster, as the tests use it: three members (e1, e2, e3). A
//! cluster, not a pair: a member lost is no failover to detect, and its one
//! loss is a restore from a snapshot.

use std::thread::sleep;
use std::time::Duration;

use super::replicated::{Injected, Replicated};
use super::server::{Dice, Loss, Server};

pub const MEMBERS: [&str; 3] = ["e1", "e2", "e3"];

pub const SERVER: Server = Server {
    name: "etcd",
    replicated: "etcd",
    pair: false,
    members: &MEMBERS,
    loss: Loss::Restore,
    // A leader lost costs an election and a reconnection; with tokens any
    // member takes, no login: nothing near the fence's lead.
    terms: (3_000, 1_000),
    harmless: &HARMLESS,
    fault,
};

/// Faults a cluster goes through that leave a majority standing, and cost
/// the generators nothing.
pub const HARMLESS: [&str; 2] = ["member killed", "leader killed"];

/// The cluster's faults, by a choice of 2 to 8; each ends with the cluster
/// whole again.
fn fault(r: &Replicated, choice: u64, dice: &mut dyn Dice) -> Injected {
    let ms = |dice: &mut dyn Dice, low, high| Duration::from_millis(dice.between(low, high));
    Some(match choice {
        2 | 3 => {
            let leader = r.services("leader", &[]);
            let member = MEMBERS.iter().find(|&&m| m != leader).copied().unwrap();
            r.services("kill", &[member]);
            sleep(ms(dice, 500, 3_000));
            r.services("revive", &[member]);
            ("member killed", false, None)
        }
        4 | 5 => {
            let leader = r.services("leader", &[]);
            r.services("kill", &[&leader]);
            sleep(ms(dice, 500, 3_000));
            r.services("revive", &[&leader]);
            ("leader killed", false, None)
        }
        7 => {
            let leader = r.services("leader", &[]);
            r.services("freeze", &[&leader]);
            sleep(ms(dice, 300, 2_500));
            r.services("thaw", &[&leader]);
            ("leader frozen", false, None)
        }
        8 if dice.between(0, 2) == 0 => {
            // Two of three: no quorum, until one comes back.
            let leader = r.services("leader", &[]);
            let follower = MEMBERS.iter().find(|&&m| m != leader).copied().unwrap();
            r.services("kill", &[&leader]);
            r.services("kill", &[follower]);
            sleep(ms(dice, 500, 2_500));
            r.services("revive", &[follower]);
            r.services("revive", &[&leader]);
            ("quorum lost", false, None)
        }
        _ => {
            r.lose();
            ("snapshot restored", true, None)
        }
    })
}

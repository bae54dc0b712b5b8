//! Redis, as the tests use it: without persistence, so that a restart
//! loses every lease; a server of its own, and a primary with a replica.

use super::replicated::{Injected, Replicated, pair_fault};
use super::server::{Dice, Loss, Server};

pub const SERVER: Server = Server {
    name: "redis",
    replicated: "redis-pair",
    pair: true,
    members: &[],
    loss: Loss::Crash,
    terms: (1_000, 500),
    harmless: &[],
    fault,
};

fn fault(r: &Replicated, choice: u64, dice: &mut dyn Dice) -> Injected {
    pair_fault(r, choice, dice, false)
}

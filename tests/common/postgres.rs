//! PostgreSQL, as the tests use it: a server of its own, and a primary
//! with a streaming standby.

use super::replicated::{Injected, Replicated, pair_fault};
use super::server::{Dice, Loss, Server};

pub const SERVER: Server = Server {
    name: "postgres",
    replicated: "postgres-pair",
    pair: true,
    members: &[],
    // Before flakegen first connects there is no table, and nothing to lose.
    loss: Loss::Sql(
        "DO $$ BEGIN IF to_regclass('flakegen_leases') IS NOT NULL THEN \
         TRUNCATE flakegen_leases; END IF; END $$",
    ),
    terms: (1_000, 500),
    harmless: &[],
    fault,
};

fn fault(r: &Replicated, choice: u64, dice: &mut dyn Dice) -> Injected {
    pair_fault(r, choice, dice, false)
}

//! MariaDB, for the mysql registry: a server of its own, and two masters
//! replicating both ways, one of them read-only.

use super::replicated::{Injected, Replicated, pair_fault};
use super::server::{Dice, Loss, Server};

pub const SERVER: Server = Server {
    name: "mysql",
    replicated: "mariadb-pair",
    pair: true,
    members: &[],
    // TRUNCATE takes the table's sentinel row with the rest.
    loss: Loss::Sql(
        "SET @t = IF((SELECT COUNT(*) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name = 'flakegen_leases') > 0, \
         'TRUNCATE flakegen_leases', 'DO 0'); \
         PREPARE s FROM @t; EXECUTE s; DEALLOCATE PREPARE s",
    ),
    terms: (1_000, 500),
    harmless: &[],
    fault,
};

fn fault(r: &Replicated, choice: u64, dice: &mut dyn Dice) -> Injected {
    pair_fault(r, choice, dice, true)
}

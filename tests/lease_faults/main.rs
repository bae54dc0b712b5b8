//! Leases under random faults, with real processes and real servers.
//!
//! Six helper processes contend for four worker ids with a 1 s TTL, each
//! holding a lease for a random while, releasing it and leasing again, on
//! clocks offset from each other within the skew allowance. Beside them, in
//! a namespace of their own, three helpers build one generator each and
//! never rebuild it: when their lease is lost they rely on the generator
//! leasing again by itself (healing). Meanwhile the driver injects faults at
//! random: `SIGSTOP` (past the TTL, often) and `SIGKILL` of holders, server
//! freezes (`SIGSTOP` of the server), server restarts one at a time and in
//! bursts (Redis comes back empty: a loss), crashes (`SIGKILL`: InnoDB
//! keeps every commit, Redis nothing), `TRUNCATE` bursts on PostgreSQL and
//! MariaDB (a loss), failovers to a replica that missed the last renewals
//! (the primary dies, the replica is promoted, clients follow through a
//! forwarder), on MariaDB master-master flips (the writable side turns
//! read-only and the other takes writes, at times after missing renewals),
//! and latency: for a few seconds the registry is 20 to 150 ms away each
//! way, with jitter (the helpers reach it through toxiproxy); on
//! Kubernetes, API server restarts and freezes, and Leases deleted.
//! The registry is each backend's replicated pair from
//! `scripts/services.sh` (etcd's cluster, Kubernetes' one API server); after each failover the old primary is rebuilt as
//! the new one's replica. At the end, one merged check of every ID, per
//! namespace: no duplicates; no two leases of one worker id whose IDs
//! interleave; no ID at or past the fence its lease held. And after every
//! loss, each never-rebuilding helper issues again, under a new lease,
//! within the TTL, the skew allowance and 2 s (unless another fault, or a
//! pause of its own, came within that time).
//!
//! The helpers are this test binary itself, run again with `--helper`: it
//! leases a worker id and writes every ID it issues to a file (so the
//! helper is always the code under test, never a stale build).
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test --all-features --test lease_faults -- [--seed N] [--duration SECONDS] [postgres|redis|mysql|etcd|kubernetes]
//! scripts/services.sh stop
//! ```
//!
//! The seed is printed first; the same seed replays the same faults at the
//! same moments (the processes' timing still varies). Default: 30 s per
//! backend and a random seed.
//!
//! A helper's file (times are real, in ns since 1970; a lease is known by
//! its worker id and where its IDs start, in ms):
//!
//! ```text
//! lease <worker> <starts ms> <fence ms> <at>   a lease acquired, by a build or by healing
//! at <at>                                      the IDs below were issued then
//! <id>                                         an ID, one per line
//! fence <worker> <starts ms> <fence ms>        that lease's confirmed fence moved (from the
//!                                              generator's status, and the loss event)
//! refused <at>                                 a healing helper's call was refused then
//! end <released|lost>                          a rebuilding helper dropped its generator
//! ```

use std::process::ExitCode;

#[cfg(all(unix, feature = "remote"))]
mod checks;
#[path = "../common/mod.rs"]
mod common;
#[cfg(all(unix, feature = "remote"))]
mod faults;
#[cfg(all(unix, feature = "remote"))]
mod helper;
#[cfg(all(unix, feature = "remote"))]
mod log;
#[cfg(all(unix, feature = "remote"))]
mod random;
#[cfg(all(unix, feature = "remote"))]
mod scenario;

fn main() -> ExitCode {
    #[cfg(all(unix, feature = "remote"))]
    {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if args.first().map(String::as_str) == Some("--helper") {
            return helper::run(&args[1..]);
        }
        faults::run(&args)
    }
    #[cfg(not(all(unix, feature = "remote")))]
    {
        println!("lease_faults: nothing to run without the postgres, redis or mysql feature");
        ExitCode::SUCCESS
    }
}

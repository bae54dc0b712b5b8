//! When a held record expires, on a registry with no clock of its own
//! (`TimeBase::Client`: etcd, Kubernetes): no earlier than a TTL after
//! this process first saw its version, whatever expiry its writer's clock
//! put in it. So a host whose clock runs ahead of the writer's cannot take
//! a live lease early: seeing a version for the first time, it waits a TTL
//! before it takes the id, if the record looks expired. Free ids, and ids
//! never handed out, are taken at once. (A registry with a clock judges
//! every expiry by that one clock, and needs none of this.)
//!
//! The leases of one process are one observer: the memory is the
//! process's, and a forked child starts one of its own.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use super::terms::Terms;
use crate::clock::units::millis;
use crate::lease::backend::Snapshot;
use crate::process::PerCopy;

/// A namespace, a worker id and a record's version.
type Key = (String, u64, u64);

/// How this process came to know a version of a record.
#[derive(Clone, Copy, Debug)]
enum Sighting {
    /// Read, first at this moment.
    Read(Instant),
    /// Written by this process: its expiry is this clock's.
    Written(Instant),
}

impl Sighting {
    fn at(self) -> Instant {
        match self {
            Sighting::Read(at) | Sighting::Written(at) => at,
        }
    }
}

/// The most versions remembered: past it, those seen longest ago go (a
/// version seen longer ago than any TTL says nothing more).
const REMEMBERED: usize = 4_096;

static SIGHTINGS: PerCopy<Mutex<HashMap<Key, Sighting>>> = PerCopy::new();

fn sightings() -> std::sync::MutexGuard<'static, HashMap<Key, Sighting>> {
    let made = SIGHTINGS.get_or_try_make(|| Ok::<_, std::convert::Infallible>(Mutex::default()));
    let Ok(memory) = made;
    memory.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Holds each record of `snapshot` that another process wrote for at
/// least the TTL from when this process first saw its version, noting the
/// versions it sees now for the first time. `snapshot` is a read of a
/// registry whose times are its clients' clocks.
pub(super) fn held_from_first_sight(terms: &Terms<'_>, snapshot: &mut Snapshot) {
    let now = snapshot.server_unix_millis;
    let mut seen = sightings();
    for record in &mut snapshot.records {
        if record.holder.is_empty() {
            continue;
        }
        let key = (terms.namespace.to_owned(), record.worker, record.version);
        let first = match seen.get(&key) {
            Some(Sighting::Written(_)) => continue,
            Some(Sighting::Read(at)) => *at,
            None => {
                forget_the_oldest(&mut seen);
                let at = Instant::now();
                seen.insert(key, Sighting::Read(at));
                at
            }
        };
        let observed = now
            .saturating_sub(millis(first.elapsed()))
            .saturating_add(terms.ttl_millis);
        record.expires_unix_millis = record.expires_unix_millis.max(observed);
    }
}

/// Notes a version of a holder's record that this process wrote, on a
/// registry whose times are its clients': its expiry is this process's
/// own clock's.
pub(super) fn written_here(terms: &Terms<'_>, worker: u64, version: u64) {
    let mut seen = sightings();
    forget_the_oldest(&mut seen);
    let key = (terms.namespace.to_owned(), worker, version);
    seen.insert(key, Sighting::Written(Instant::now()));
}

/// Makes room for one more: past [`REMEMBERED`], the older half goes.
fn forget_the_oldest(seen: &mut HashMap<Key, Sighting>) {
    if seen.len() >= REMEMBERED {
        let mut ages: Vec<Instant> = seen.values().map(|s| s.at()).collect();
        ages.sort_unstable();
        let cut = ages[ages.len() / 2];
        seen.retain(|_, sighting| sighting.at() > cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::protocol::fixtures::{record, snapshot, terms};

    #[test]
    fn a_version_seen_for_the_first_time_is_held_a_ttl_from_now() {
        let t = Terms {
            namespace: "sighting-first",
            ..terms()
        };
        // Its writer's clock ran behind: by this one, it expired at 900.
        let mut read = snapshot(vec![record(0, "elsewhere", 900, 0)]);
        held_from_first_sight(&t, &mut read);
        let expires = read.records[0].expires_unix_millis;
        assert!(
            expires >= read.server_unix_millis + t.ttl_millis - 50,
            "{expires}"
        );
        // Seen again later, it is held from the first sight, not the second.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut again = snapshot(vec![record(0, "elsewhere", 900, 0)]);
        held_from_first_sight(&t, &mut again);
        let again = again.records[0].expires_unix_millis;
        assert!(again <= expires - 50, "{again}: held from the second sight");
        assert!(again > read.server_unix_millis, "{again}: no longer held");
    }

    #[test]
    fn a_version_written_here_keeps_its_own_expiry() {
        let t = Terms {
            namespace: "sighting-written",
            ..terms()
        };
        written_here(&t, 0, record(0, "me", 900, 0).version);
        let mut read = snapshot(vec![record(0, "me", 900, 0)]);
        held_from_first_sight(&t, &mut read);
        assert_eq!(read.records[0].expires_unix_millis, 900);
    }
}

//! Where a new lease's IDs start, and which id it takes: the fence its
//! predecessor left (rule 2), or, for an id the registry holds no record
//! of that it vouches for, the loss rule's bound (rule 6); and the bounds
//! that hold whatever id is chosen: a healing generator's, and the
//! rollback mode's.

use std::fmt;

use super::terms::{Terms, seen};
use crate::clock::units::Moment;
use crate::lease::backend::{Expect, RecordState, Snapshot};
#[cfg(feature = "inspect")]
use {
    crate::lease::backend::{LeaseError, ReadRequest, Registry},
    std::time::Duration,
};

/// How far ahead a free record's fence may lie and still count as passed
/// when choosing: a release sets it just past the last ID (a unit), so a
/// generator rebuilt at once takes its old id back, after that short wait.
const RELEASED_GRACE_MS: u64 = 100;

/// What a generator healing after a loss knew of the lease it lost: its
/// worker id, the marker it was taken under, and its confirmed fence.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lost {
    pub(crate) worker: u64,
    pub(crate) marker_unix_millis: u64,
    pub(crate) fence_unix_millis: u64,
}

/// Why a lease's IDs start where they do: the bound that set its start,
/// [`LeaseStatus::start_cause`](crate::lease::LeaseStatus::start_cause). Every
/// bound but the first makes a generator wait that would otherwise issue at
/// once; each is a rule of [the loss rule](crate::lease#a-registry-that-loses-its-data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StartCause {
    /// The fence the id's previous holder left, or nothing: an id whose
    /// records the registry vouches for.
    Predecessor,
    /// The namespace's marker: the registry vouches for the namespace only
    /// from this moment (ms since 1970, by its clock), so an id it holds no
    /// record of waits the TTL and the skew allowance past it. A marker is
    /// written when a namespace is first seen (new, or emptied: an empty
    /// namespace proves nothing), after a loss of data, and after a change
    /// of history (a failover, a restore). A namespace made ready before
    /// its first build (`flakegen leases init`, `Lease::prepare`)
    /// has paid this wait before its services start.
    Marker {
        /// The marker, in ms since 1970.
        marker_unix_millis: u64,
    },
    /// The id was handed out under the marker in force and its record is
    /// gone (deleted): it waits the TTL and the skew allowance past the
    /// moment the registry was seen without it.
    Forgotten {
        /// When the registry was read without the record, in ms since 1970.
        seen_unix_millis: u64,
    },
    /// This generator saw its own lease's record, its marker or its whole
    /// namespace gone, and trusts no empty registry after that: it waits
    /// the TTL and the skew allowance past the moment it saw it (or its own
    /// last confirmed fence, if later), whatever the registry now says.
    Healing {
        /// When the registry was read without the lease, in ms since 1970.
        seen_unix_millis: u64,
    },
    /// [`Lease::wait_out_rollbacks`](crate::lease::Lease::wait_out_rollbacks): every
    /// grant waits the TTL and the skew allowance past the read that chose
    /// it, so a holder that a rolled-back registry forgot has stopped.
    Rollbacks {
        /// When the registry was read, in ms since 1970.
        seen_unix_millis: u64,
    },
}

impl fmt::Display for StartCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            StartCause::Predecessor => f.write_str("the id's previous holder left its fence there"),
            StartCause::Marker { marker_unix_millis } => write!(
                f,
                "the registry vouches for the namespace only from its marker, {} (written \
                 when the namespace was found with none: new, or emptied, and nothing tells \
                 which; or after a loss of data or history), and an id it holds no record of \
                 waits the TTL and the skew allowance past that",
                Moment::now(marker_unix_millis)
            ),
            StartCause::Forgotten { seen_unix_millis } => write!(
                f,
                "the id was handed out and its record is gone (deleted by hand?), seen at {}: \
                 it waits the TTL and the skew allowance past that",
                Moment::now(seen_unix_millis)
            ),
            StartCause::Healing { seen_unix_millis } => write!(
                f,
                "this generator saw its lease's record or marker gone at {}, and trusts no \
                 emptied registry: it waits the TTL and the skew allowance past that",
                Moment::now(seen_unix_millis)
            ),
            StartCause::Rollbacks { seen_unix_millis } => write!(
                f,
                "Lease::wait_out_rollbacks is on: every grant waits the TTL and the skew \
                 allowance past its read ({})",
                Moment::now(seen_unix_millis)
            ),
        }
    }
}

/// The id an acquisition takes, and on what terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Choice {
    pub(crate) worker: u64,
    /// What the swap must find.
    pub(crate) expect: Expect,
    /// Where the new lease's IDs start.
    pub(crate) start_unix_millis: u64,
    /// Which bound set it.
    pub(crate) cause: StartCause,
}

impl Terms<'_> {
    /// The bound an id with no record the registry vouches for starts at,
    /// and why: an id at or above the namespace's high-water mark was never
    /// handed out since the marker, so the marker bounds what any holder
    /// could have confirmed of it; one below was, and its record is gone,
    /// so only the moment the registry was seen without it does (rule 6).
    fn unvouched(
        &self,
        snapshot: &Snapshot,
        marker_unix_millis: u64,
        worker: u64,
    ) -> (u64, StartCause) {
        if worker < snapshot.high_water {
            let seen_unix_millis = seen(snapshot);
            (
                self.unrecorded_fence(seen_unix_millis),
                StartCause::Forgotten { seen_unix_millis },
            )
        } else {
            (
                self.unrecorded_fence(marker_unix_millis),
                StartCause::Marker { marker_unix_millis },
            )
        }
    }

    /// The id to take: `prefer` if it is free (a generator healing takes
    /// its old id back if it can); else, among the free ones whose fence has
    /// passed on the holder's clock (a released one's may lie up to
    /// [`RELEASED_GRACE_MS`] ahead), one with a record before one without
    /// (a released id is taken again before a fresh one, so the registry
    /// keeps as many records as generators ran at once, and a restarted
    /// process takes back the id its predecessor gave up), the lowest
    /// first; else the earliest fence, then the lowest id. The free ones are the snapshot's records that
    /// are not held under `marker_unix_millis`, the ids it found below the
    /// high-water mark with no record, the high-water mark itself, and
    /// `prefer` if it has no record (the registry returns those that
    /// matter: see `Registry::read`). Returns it with what the swap must
    /// expect and where its IDs start (rule 2: at the fence its previous
    /// holder left, or later), or, when none is free, how many ids are
    /// held: all.
    pub(crate) fn choose(
        &self,
        snapshot: &Snapshot,
        unrecorded: &[u64],
        marker_unix_millis: u64,
        now_ms: u64,
        prefer: Option<u64>,
    ) -> Result<Choice, u64> {
        // (not preferred, fence not passed, the fence if not passed, no
        // record, worker), ordered as the preference.
        type Preference = (bool, bool, u64, bool, u64);
        let mut best: Option<(Preference, u64, Option<u64>, StartCause)> = None;
        let mut consider = |fence: u64, cause: StartCause, worker: u64, version: Option<u64>| {
            // A record released a moment ago (its fence just past the
            // last ID) counts as free now: a process rebuilt at once waits
            // that moment for its old id rather than take a fresh one.
            let grace = if version.is_some() {
                RELEASED_GRACE_MS
            } else {
                0
            };
            let waits = fence > now_ms.saturating_add(grace);
            let key = (
                prefer != Some(worker),
                waits,
                if waits { fence } else { 0 },
                version.is_none(),
                worker,
            );
            if best.is_none_or(|(b, ..)| key < b) {
                best = Some((key, fence, version, cause));
            }
        };
        let records = || snapshot.records.iter().filter(|r| r.worker < self.workers);
        for record in records() {
            match record.judged(Some(marker_unix_millis), snapshot.server_unix_millis) {
                RecordState::Held => {}
                RecordState::Void => {
                    // Written before the marker: its fence may be stale.
                    let (rule, cause) = self.unvouched(snapshot, marker_unix_millis, record.worker);
                    let (fence, cause) = if record.fence_unix_millis >= rule {
                        (record.fence_unix_millis, StartCause::Predecessor)
                    } else {
                        (rule, cause)
                    };
                    consider(fence, cause, record.worker, Some(record.version));
                }
                _ => consider(
                    record.fence_unix_millis,
                    StartCause::Predecessor,
                    record.worker,
                    Some(record.version),
                ),
            }
        }
        // Ids with no record at all: fenced by the loss rule.
        let fresh = Some(snapshot.high_water);
        let unrecorded = unrecorded.iter().copied().map(Some);
        for worker in [fresh, prefer].into_iter().chain(unrecorded).flatten() {
            if worker < self.workers && records().all(|r| r.worker != worker) {
                let (fence, cause) = self.unvouched(snapshot, marker_unix_millis, worker);
                consider(fence, cause, worker, None);
            }
        }
        let ((.., worker), fence, version, cause) = best.ok_or(self.workers)?;
        Ok(Choice {
            worker,
            expect: Expect {
                marker_unix_millis,
                version,
            },
            start_unix_millis: fence,
            cause,
        })
    }

    /// The bounds that apply whatever id is chosen: a healing generator
    /// that saw its lease gone (rule 6: a holder that has seen a loss never
    /// trusts an empty registry), and the rollback mode. Returns the latest
    /// with its cause, if any.
    pub(super) fn floor(
        &self,
        snapshot: &Snapshot,
        lost: Option<&Lost>,
    ) -> Option<(u64, StartCause)> {
        let seen_unix_millis = seen(snapshot);
        let after_seen = self.unrecorded_fence(seen_unix_millis);
        let mut floor = None;
        if let Some(lost) = lost {
            // Gone: the marker it was taken under, or its record under that
            // marker (a restore in place shows another's, or an old one).
            let gone = snapshot.marker_unix_millis != Some(lost.marker_unix_millis)
                || !snapshot.records.iter().any(|r| {
                    r.worker == lost.worker && r.marker_unix_millis == lost.marker_unix_millis
                });
            if gone {
                floor = Some((
                    after_seen.max(lost.fence_unix_millis),
                    StartCause::Healing { seen_unix_millis },
                ));
            }
        }
        if self.wait_out_rollbacks && floor.is_none_or(|(at, _)| at < after_seen) {
            floor = Some((after_seen, StartCause::Rollbacks { seen_unix_millis }));
        }
        floor
    }
}

/// When builds in a namespace start at once, as [`Lease::prepare`](crate::lease::Lease::prepare)
/// finds it: what `flakegen leases init` waits for and reports.
///
/// An id that was never handed out since the namespace's marker is fenced
/// at the marker plus the TTL plus the skew allowance (rule 6): that is the
/// only wait a build in a namespace with no live holders may have, and it
/// passes once, for every generator, whoever marked the namespace. So a
/// namespace is readied by marking it and letting its marker age, never by
/// taking anyone's word that it is new: a declaration could not tell a new
/// namespace from one emptied under running generators.
#[cfg(feature = "inspect")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Readiness {
    /// The registry's clock when it was read, in ms since 1970.
    pub server_unix_millis: u64,
    /// The namespace's marker in force, in ms since 1970.
    pub marker_unix_millis: u64,
    /// Whether this call wrote the marker: the namespace had none, so it is
    /// new, or was emptied (a `FLUSHALL`, its tables dropped, its keys
    /// deleted), and nothing tells which.
    pub marked: bool,
    /// From when a build takes a fresh id at once, in ms since 1970 by the
    /// registry's clock: the marker plus the TTL plus the skew allowance.
    pub ready_unix_millis: u64,
}

#[cfg(feature = "inspect")]
impl Readiness {
    /// How long until builds start at once, by the registry's clock as it
    /// was read; zero once they do.
    pub fn wait(&self) -> Duration {
        Duration::from_millis(
            self.ready_unix_millis
                .saturating_sub(self.server_unix_millis),
        )
    }
}

/// Marks the namespace if it has no marker, as its first build would, and
/// says when builds in it start at once (see [`Readiness`]).
#[cfg(feature = "inspect")]
pub(crate) fn readiness(
    registry: &dyn Registry,
    terms: &Terms<'_>,
) -> Result<Readiness, LeaseError> {
    let request = ReadRequest::new(terms.workers);
    let mut snapshot = registry.read(terms.namespace, &request)?;
    let marked = snapshot.marker_unix_millis.is_none();
    if marked {
        registry.mark(terms.namespace)?;
        snapshot = registry.read(terms.namespace, &request)?;
    }
    let marker_unix_millis = match snapshot.marker_unix_millis {
        Some(marker) => marker,
        // Emptied again between the two steps: what a build would do.
        None => registry.mark(terms.namespace)?,
    };
    Ok(Readiness {
        server_unix_millis: snapshot.server_unix_millis,
        marker_unix_millis,
        marked,
        ready_unix_millis: terms.unrecorded_fence(marker_unix_millis),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::protocol::acquire;
    use crate::lease::protocol::fixtures::{gone, now_ms, record, relic_at, snapshot, terms};

    fn chosen(choice: Choice) -> (u64, u64, StartCause) {
        (choice.worker, choice.start_unix_millis, choice.cause)
    }

    #[test]
    fn prefers_a_passed_fence_then_the_earliest_then_the_lowest_id() {
        let t = terms();
        let s = snapshot(vec![
            record(0, "a", 5_000, 1),
            record(1, "", 0, 5_000),
            record(2, "b", 999, 900), // expired
        ]);
        // Id 3, the high-water mark: fenced at 100 + 10 000 + 2 000.
        let choice = t.choose(&s, &gone(&s), 100, 1_000, None).unwrap();
        assert_eq!(chosen(choice), (2, 900, StartCause::Predecessor));
        assert_eq!(choice.expect.version, Some(9));
        let choice = t.choose(&s, &gone(&s), 100, 800, None).unwrap();
        assert_eq!((choice.worker, choice.start_unix_millis), (2, 900));
        assert_eq!(choice.expect.marker_unix_millis, 100);
        let s = snapshot(vec![record(0, "a", 5_000, 1)]);
        let choice = t.choose(&s, &gone(&s), 100, 1_000, None).unwrap();
        let marker = StartCause::Marker {
            marker_unix_millis: 100,
        };
        assert_eq!(chosen(choice), (1, 12_100, marker));
        assert_eq!(choice.expect.version, None);
    }

    #[test]
    fn a_released_id_is_taken_before_a_fresh_one() {
        let t = terms();
        // Released at 40 000; the fresh id 1's fence (100 + 10 000 + 2 000)
        // passed long before: both start now, and the released one wins.
        let s = snapshot(vec![record(0, "", 0, 40_000)]);
        let choice = t.choose(&s, &gone(&s), 100, 50_000, None).unwrap();
        assert_eq!(chosen(choice), (0, 40_000, StartCause::Predecessor));
        // Released a moment ago: its fence just ahead, within the grace.
        let choice = t
            .choose(&s, &gone(&s), 100, 40_000 - RELEASED_GRACE_MS, None)
            .unwrap();
        assert_eq!(choice.worker, 0);
        // Further ahead, the fresh id starts sooner.
        let choice = t.choose(&s, &gone(&s), 100, 20_000, None).unwrap();
        assert_eq!(choice.worker, 1);
    }

    #[test]
    fn a_record_older_than_the_marker_is_free_and_fenced_past_it() {
        let t = terms();
        let mut relic = record(0, "a", 99_999, 3_000);
        relic.marker_unix_millis = 50;
        // Nothing written under the marker in force: id 0 is at the
        // high-water mark, and its relic is returned with it.
        let s = Snapshot {
            server_unix_millis: 1_000,
            marker_unix_millis: Some(500),
            records: vec![relic],
            ..Snapshot::default()
        };
        let workers_one = Terms { workers: 1, ..t };
        let choice = workers_one.choose(&s, &gone(&s), 500, 1_000, None).unwrap();
        let marker = StartCause::Marker {
            marker_unix_millis: 500,
        };
        assert_eq!(chosen(choice), (0, 12_500, marker));
        assert_eq!(choice.expect.version, Some(7));
        // A relic whose fence is past the marker rule keeps it.
        let mut far = record(0, "a", 0, 90_000);
        far.marker_unix_millis = 50;
        let s = Snapshot {
            records: vec![far.clone()],
            ..s
        };
        let choice = workers_one.choose(&s, &gone(&s), 500, 1_000, None).unwrap();
        assert_eq!(chosen(choice), (0, 90_000, StartCause::Predecessor));
        // Below the high-water mark, a relic was handed out again since the
        // marker and its new record is gone: fenced from when that was seen.
        let s = Snapshot {
            high_water: 1,
            records: vec![relic_at(0, 3_000)],
            ..s
        };
        let forgotten = StartCause::Forgotten {
            seen_unix_millis: 1_001,
        };
        let choice = workers_one.choose(&s, &gone(&s), 500, 1_000, None).unwrap();
        assert_eq!(chosen(choice), (0, 13_001, forgotten));
    }

    #[test]
    fn counts_the_held_when_none_is_free() {
        let t = Terms {
            workers: 2,
            ..terms()
        };
        let s = snapshot(vec![record(0, "a", 5_000, 0), record(1, "b", 5_000, 0)]);
        assert_eq!(t.choose(&s, &gone(&s), 100, 0, None), Err(2));
    }

    #[test]
    fn the_high_water_mark_is_offered_at_the_marker_rule() {
        let t = terms();
        let s = snapshot(vec![record(0, "a", 5_000, 0), record(1, "b", 5_000, 0)]);
        let choice = t.choose(&s, &gone(&s), 100, 0, None).unwrap();
        assert_eq!((choice.worker, choice.start_unix_millis), (2, 12_100));
        // At the layout's last id, nothing is past it.
        let t = Terms { workers: 2, ..t };
        assert_eq!(t.choose(&s, &gone(&s), 100, 0, None), Err(2));
    }

    #[test]
    fn an_id_whose_record_is_gone_waits_from_when_that_was_seen() {
        let t = terms();
        // Ids 0 and 2 held, id 1 handed out once (below the mark) and its
        // record deleted: an empty slot is no proof that nobody issues on it.
        let s = snapshot(vec![record(0, "a", 5_000, 0), record(2, "b", 5_000, 0)]);
        assert_eq!(gone(&s), [1]);
        let forgotten = StartCause::Forgotten {
            seen_unix_millis: 1_001,
        };
        // Id 1 waits from the read (1 001 + 12 000); the mark, id 3, from
        // the marker (100 + 12 000), which is earlier.
        let choice = t.choose(&s, &gone(&s), 100, 0, None).unwrap();
        assert_eq!(
            chosen(choice),
            (
                3,
                12_100,
                StartCause::Marker {
                    marker_unix_millis: 100
                }
            )
        );
        let t = Terms { workers: 3, ..t };
        let choice = t.choose(&s, &gone(&s), 100, 0, None).unwrap();
        assert_eq!(chosen(choice), (1, 13_001, forgotten));
        assert_eq!(choice.expect.version, None);
    }

    #[test]
    fn a_healing_holder_takes_its_old_id_back_only_if_it_is_free() {
        let t = terms();
        // Id 2 free but fenced later than id 1: preferred all the same.
        let s = snapshot(vec![
            record(0, "a", 5_000, 0),
            record(1, "", 0, 10),
            record(2, "", 0, 700),
        ]);
        assert_eq!(
            t.choose(&s, &gone(&s), 100, 1_000, Some(2)).unwrap().worker,
            2
        );
        // Held by another: the ordinary choice.
        assert_eq!(
            t.choose(&s, &gone(&s), 100, 1_000, Some(0)).unwrap().worker,
            1
        );
        // Unrecorded (a loss), though not the high-water mark (2).
        let s = snapshot(vec![record(0, "a", 5_000, 0), record(1, "", 0, 10)]);
        let choice = t.choose(&s, &gone(&s), 100, 1_000, Some(3)).unwrap();
        assert_eq!((choice.worker, choice.expect.version), (3, None));
        assert_eq!(choice.start_unix_millis, 12_100);
        // Not an id of the layout: ignored.
        assert_eq!(
            t.choose(&s, &gone(&s), 100, 1_000, Some(9)).unwrap().worker,
            1
        );
    }

    fn lost(worker: u64, marker_unix_millis: u64) -> Lost {
        Lost {
            worker,
            marker_unix_millis,
            fence_unix_millis: 4_000,
        }
    }

    #[test]
    fn a_holder_that_saw_its_lease_gone_trusts_no_empty_registry() {
        let t = terms();
        let healing = |seen_unix_millis| StartCause::Healing { seen_unix_millis };
        // Its record gone under the same marker: TTL + skew past the read.
        let s = snapshot(vec![record(0, "a", 5_000, 0)]);
        assert_eq!(
            t.floor(&s, Some(&lost(1, 100))),
            Some((13_001, healing(1_001)))
        );
        // Its marker gone (the namespace emptied, a new marker written).
        let s = Snapshot {
            marker_unix_millis: Some(900),
            ..snapshot(vec![record(1, "", 0, 0)])
        };
        assert_eq!(
            t.floor(&s, Some(&lost(1, 100))),
            Some((13_001, healing(1_001)))
        );
        // Its own confirmed fence, when later.
        let far = Lost {
            fence_unix_millis: 20_000,
            ..lost(1, 100)
        };
        assert_eq!(t.floor(&s, Some(&far)), Some((20_000, healing(1_001))));
        // Another holder took it under the same marker: an ordinary loss.
        let s = snapshot(vec![record(1, "b", 5_000, 0)]);
        assert_eq!(t.floor(&s, Some(&lost(1, 100))), None);
        assert_eq!(t.floor(&s, None), None);
    }

    #[test]
    fn waiting_out_rollbacks_starts_every_grant_past_its_read() {
        let t = Terms {
            wait_out_rollbacks: true,
            ..terms()
        };
        let s = snapshot(vec![record(1, "", 0, 0)]);
        let rollbacks = StartCause::Rollbacks {
            seen_unix_millis: 1_001,
        };
        assert_eq!(t.floor(&s, None), Some((13_001, rollbacks)));
        assert_eq!(terms().floor(&s, None), None);
    }

    #[test]
    fn a_wiped_memory_registry_makes_an_acquisition_wait() {
        let registry = crate::lease::backend::memory::MemoryRegistry::new();
        let t = terms();
        let first = acquire(&registry, &t, "a", now_ms, None).unwrap();
        // A new registry vouches for its whole history: no wait.
        assert_eq!(
            first.cause,
            StartCause::Marker {
                marker_unix_millis: 0
            }
        );
        assert!(first.previous_fence_unix_millis < now_ms());
        let before = now_ms();
        registry.delete_namespace("n");
        let grant = acquire(&registry, &t, "b", now_ms, None).unwrap();
        assert!(
            matches!(grant.cause, StartCause::Marker { marker_unix_millis } if marker_unix_millis >= before)
        );
        assert!(grant.previous_fence_unix_millis >= before + 12_000);
        // One record deleted under the marker: its id waits from the read.
        let registry = crate::lease::backend::memory::MemoryRegistry::new();
        let t = Terms { workers: 1, ..t };
        let grant = acquire(&registry, &t, "a", now_ms, None).unwrap();
        registry.delete_record("n", grant.worker);
        let before = now_ms();
        let grant = acquire(&registry, &t, "b", now_ms, None).unwrap();
        assert!(
            matches!(grant.cause, StartCause::Forgotten { seen_unix_millis } if seen_unix_millis > before)
        );
        // And its holder, healing, waits too, its record gone.
        let registry = crate::lease::backend::memory::MemoryRegistry::new();
        let grant = acquire(&registry, &t, "a", now_ms, None).unwrap();
        registry.lose_data();
        let heal = acquire(&registry, &t, "a2", now_ms, Some(&grant.as_lost())).unwrap();
        assert!(matches!(
            heal.cause,
            StartCause::Healing { .. } | StartCause::Marker { .. }
        ));
        assert!(heal.previous_fence_unix_millis >= now_ms() + 11_000);
    }
}

//! Every decision of the lease protocol, made once, over a registry's three
//! storage steps (read, mark, swap). The [module docs](super#the-contract)
//! state the rules; each is marked here where it is kept.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::backend::LeaseError;
#[cfg(test)]
use super::backend::Record;
use super::backend::{Expect, NewRecord, RecordState, Registry, Snapshot};
use crate::clock::units::Moment;

/// How many times in a row an acquisition may lose a race that nobody won
/// before it gives up: a registry whose swaps fail while its records stay
/// as they were is stuck, not contended.
///
/// A race lost to another acquisition is progress, and does not count:
/// builds that start together (a deployment's pods, a shell loop of
/// `flakegen new &`) first all choose the same id, and the unluckiest
/// loses once to each of the others, however many. Those are bounded by
/// the ids there are to win ([`MAX_RACES`]).
const ATTEMPTS: u32 = 32;

/// The most races an acquisition may lose in all, won by others or not:
/// [`ATTEMPTS`] beyond one per id of the namespace, at most this. Each id
/// taken by a winner is one fewer to race for, so only generators that
/// keep releasing and leasing again could make a build lose more.
const MAX_RACES: u64 = 1 << 12;

/// The longest pause after a lost race. Each pause is random, below
/// `1 ms << losses` up to this: contenders that chose alike spread out
/// instead of choosing alike again (full jitter), and the registry sees a
/// handful of swaps per id taken rather than one per contender.
const BACKOFF_MAX: Duration = Duration::from_millis(64);

/// How far ahead a free record's fence may lie and still count as passed
/// when choosing: a release sets it just past the last ID (a unit), so a
/// generator rebuilt at once takes its old id back, after that short wait.
const RELEASED_GRACE_MS: u64 = 100;

/// The fewest ids a registry looks through per read for ids below the
/// high-water mark whose records are gone, while it says `Snapshot::more`:
/// bounds how often an acquisition that finds nothing else reads again.
const FRESH_SLICE: u64 = 16;

/// How many writes whose outcome is unknown a holder remembers.
const IN_DOUBT: usize = 4;

/// The terms every generator of a namespace leases under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Terms<'a> {
    pub(crate) namespace: &'a str,
    /// Ids `0..workers` may be leased.
    pub(crate) workers: u64,
    /// The lease's time to live, which also bounds how far a confirmed fence
    /// leads its holder's clock (rule 3).
    pub(crate) ttl_millis: u64,
    /// How far a holder's clock may read ahead of the server's.
    pub(crate) skew_millis: u64,
    /// Every grant starts a TTL and the skew allowance past the read that
    /// chose it ([`Lease::wait_out_rollbacks`](super::Lease::wait_out_rollbacks)).
    pub(crate) wait_out_rollbacks: bool,
}

/// A lease this process holds, as far as it knows.
#[derive(Clone, Debug)]
pub(crate) struct Holding {
    pub(crate) token: String,
    pub(crate) worker: u64,
    /// The marker the lease was taken under: every write names it.
    pub(crate) marker_unix_millis: u64,
    /// The fence the server confirmed: the generator issues below it.
    pub(crate) fence_unix_millis: u64,
    /// The versions the record may have: the last confirmed one first, then
    /// those of writes whose replies were lost.
    versions: Vec<u64>,
}

/// A lease just acquired.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    pub(crate) holding: Holding,
    /// Where its IDs start: the fence the previous holder left, or a later
    /// one the rules set. This holder issues at or past it.
    pub(crate) previous_fence_unix_millis: u64,
    /// Which bound set that start.
    pub(crate) cause: StartCause,
}

/// What a generator healing after a loss knew of the lease it lost: its
/// worker id, the marker it was taken under, and its confirmed fence.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lost {
    pub(crate) worker: u64,
    pub(crate) marker_unix_millis: u64,
    pub(crate) fence_unix_millis: u64,
}

/// Why a lease's IDs start where they do: the bound that set its start,
/// [`LeaseStatus::start_cause`](super::LeaseStatus::start_cause). Every
/// bound but the first makes a generator wait that would otherwise issue at
/// once; each is a rule of [the loss rule](super#a-registry-that-loses-its-data).
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
    /// its first build (`flakegen leases init`, [`Lease::prepare`](super::Lease::prepare))
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
    /// [`Lease::wait_out_rollbacks`](super::Lease::wait_out_rollbacks): every
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

/// Why a renewal did not confirm a new fence.
#[derive(Debug)]
pub(crate) enum Unconfirmed {
    /// The record is gone, or another holder's, or another lease's: the
    /// holder runs to its fence and stops (rule 4).
    Lost(LeaseError),
    /// The call failed, or wrote a fence this holder may not use; try again.
    Failed(LeaseError),
}

impl Terms<'_> {
    /// Where an id with no record trustworthy under `marker_unix_millis` is fenced:
    /// past anything a holder may have confirmed before the loss (rule 6).
    /// A fence led its holder's clock by at most the TTL (rule 3), and that
    /// clock led the server's by at most the skew, and the server's read no
    /// later than the marker.
    pub(crate) fn unrecorded_fence(&self, marker_unix_millis: u64) -> u64 {
        marker_unix_millis
            .saturating_add(self.ttl_millis)
            .saturating_add(self.skew_millis)
    }

    /// The fence a holder whose clock reads `now_ms` may confirm, starting
    /// from `floor_ms` (its own confirmed fence, or its predecessor's): a
    /// TTL ahead of its clock, never lower than the floor. A floor further
    /// ahead is kept, not extended, so no confirmed fence leads by more
    /// than the TTL (rule 3) except one that already did when written.
    pub(crate) fn fence_from(&self, floor_ms: u64, now_ms: u64) -> u64 {
        floor_ms.max(now_ms.saturating_add(self.ttl_millis))
    }

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
    /// expect and where its IDs start, or, when none is free, how many ids
    /// are held: all.
    pub(crate) fn choose(
        &self,
        snapshot: &Snapshot,
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
            match record.state(Some(marker_unix_millis), snapshot.server_unix_millis) {
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
        let unrecorded = snapshot.unrecorded.iter().copied().map(Some);
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
    fn floor(&self, snapshot: &Snapshot, lost: Option<&Lost>) -> Option<(u64, StartCause)> {
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

    /// Refuses a holder whose clock, read at `now_ms` before the server read
    /// `server_unix_millis`, is further ahead than the skew allows: its fences could
    /// outrun the loss rule.
    fn check_skew(&self, now_ms: u64, server_unix_millis: u64) -> Result<(), LeaseError> {
        let ahead = crate::clock::units::lead_millis(now_ms, server_unix_millis);
        match ClockVerdict::of(ahead, self.skew_millis) {
            ClockVerdict::Refused => Err(LeaseError::ClockAhead {
                ahead_millis: ahead.unsigned_abs(),
                skew_millis: self.skew_millis,
            }),
            _ => Ok(()),
        }
    }

    pub(crate) fn lost(&self, worker: u64) -> LeaseError {
        LeaseError::Lost {
            namespace: self.namespace.to_owned(),
            worker,
        }
    }
}

/// When `snapshot` was read, in ms since 1970 by the registry's clock,
/// rounded up: no earlier than anything the read did not see.
fn seen(snapshot: &Snapshot) -> u64 {
    snapshot.server_unix_millis.saturating_add(1)
}

/// How a host's clock stands against a registry server's, as leasing
/// judges it at every acquisition and renewal: what `flakegen leases check`
/// reports of this host's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClockVerdict {
    /// Further ahead than the skew allowance: generators here are refused
    /// (`LeaseError::ClockAhead`), as their fences could outrun the loss rule.
    Refused,
    /// Ahead by more than half the allowance: accepted, close to the limit.
    NearTheLimit,
    /// Behind by more than the allowance: accepted, but its IDs carry early
    /// times, and after a loss it waits that much longer.
    Behind,
    /// Within the allowance.
    Within,
}

impl ClockVerdict {
    /// The verdict on a clock `ahead_millis` ahead of the server's
    /// (negative: behind), with a skew allowance of `skew_millis`.
    pub fn of(ahead_millis: i64, skew_millis: u64) -> ClockVerdict {
        let skew = i64::try_from(skew_millis).unwrap_or(i64::MAX);
        if ahead_millis > skew {
            ClockVerdict::Refused
        } else if ahead_millis > skew / 2 {
            ClockVerdict::NearTheLimit
        } else if ahead_millis < -skew {
            ClockVerdict::Behind
        } else {
            ClockVerdict::Within
        }
    }
}

/// When builds in a namespace start at once, as [`Lease::prepare`](super::Lease::prepare)
/// finds it: what `flakegen leases init` waits for and reports.
///
/// An id that was never handed out since the namespace's marker is fenced
/// at the marker plus the TTL plus the skew allowance (rule 6): that is the
/// only wait a build in a namespace with no live holders may have, and it
/// passes once, for every generator, whoever marked the namespace. So a
/// namespace is readied by marking it and letting its marker age, never by
/// taking anyone's word that it is new: a declaration could not tell a new
/// namespace from one emptied under running generators.
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
pub(crate) fn readiness(
    registry: &dyn Registry,
    terms: &Terms<'_>,
) -> Result<Readiness, LeaseError> {
    let mut snapshot = registry.read(terms.namespace, terms.workers, None)?;
    let marked = snapshot.marker_unix_millis.is_none();
    if marked {
        registry.mark(terms.namespace)?;
        snapshot = registry.read(terms.namespace, terms.workers, None)?;
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

/// Takes a free id for `token`, reading the holder's clock (ms) with
/// `now_ms`. A generator healing after a loss names the lease it `lost`:
/// its old id is preferred if free, and if the registry shows that lease
/// gone, the new one waits (see [`StartCause::Healing`]).
pub(crate) fn acquire(
    registry: &dyn Registry,
    terms: &Terms<'_>,
    token: &str,
    now_ms: impl Fn() -> u64,
    lost: Option<&Lost>,
) -> Result<Grant, LeaseError> {
    let prefer = lost.map(|l| l.worker);
    let mut slices = terms.workers.div_ceil(FRESH_SLICE);
    let max_races = terms
        .workers
        .saturating_add(u64::from(ATTEMPTS))
        .min(MAX_RACES);
    let mut attempts = 0;
    let mut races: u32 = 0;
    let mut all_races: u64 = 0;
    // The race last lost: the id, what its swap expected, and the
    // high-water mark it was chosen under.
    let mut last_lost: Option<(Choice, u64)> = None;
    while attempts < ATTEMPTS && all_races < max_races {
        if races > 0 {
            std::thread::sleep(backoff(races));
        }
        let now = now_ms();
        let snapshot = registry.read(terms.namespace, terms.workers, prefer)?;
        attempts += 1;
        if let Some((lost_to, high_water)) = last_lost.take() {
            if won_by_another(&snapshot, &lost_to, high_water) {
                attempts -= 1;
            }
        }
        terms.check_skew(now, snapshot.server_unix_millis)?;
        let marker_unix_millis = match snapshot.marker_unix_millis {
            Some(marker) => marker,
            None => registry.mark(terms.namespace)?,
        };
        if snapshot.fresh_taken(marker_unix_millis) {
            // A read of several steps saw the high-water mark, then a
            // record written past it by an acquisition racing this one:
            // another won.
            races = races.saturating_add(1);
            all_races += 1;
            attempts -= 1;
            continue;
        }
        let choice = match terms.choose(&snapshot, marker_unix_millis, now, prefer) {
            Ok(choice) => choice,
            // The registry looks below the high-water mark for ids whose
            // records are gone a slice at a time.
            Err(_) if snapshot.more && slices > 0 => {
                slices -= 1;
                attempts -= 1;
                continue;
            }
            Err(held) => {
                return Err(LeaseError::AllHeld {
                    namespace: terms.namespace.to_owned(),
                    held,
                });
            }
        };
        let (start, cause) = match terms.floor(&snapshot, lost) {
            Some((floor, cause)) if floor > choice.start_unix_millis => (floor, cause),
            _ => (choice.start_unix_millis, choice.cause),
        };
        let fence_unix_millis = terms.fence_from(start, now);
        let version = fresh_version();
        let write = NewRecord {
            holder: token,
            version,
            ttl_millis: terms.ttl_millis,
            fence_unix_millis,
        };
        match registry.swap(terms.namespace, choice.worker, choice.expect, &write) {
            Ok(Some(_)) => {
                return Ok(Grant {
                    holding: Holding {
                        token: token.to_owned(),
                        worker: choice.worker,
                        marker_unix_millis,
                        fence_unix_millis,
                        versions: vec![version],
                    },
                    previous_fence_unix_millis: start,
                    cause,
                });
            }
            // Another acquisition (or a loss) came between: look again.
            Ok(None) => {
                races = races.saturating_add(1);
                all_races += 1;
                last_lost = Some((choice, snapshot.high_water));
                continue;
            }
            Err(e) => {
                // The write may have landed: give it back, its fence where
                // this lease's IDs would have started, which is no lower
                // than the record's was.
                let free = NewRecord {
                    holder: "",
                    version: fresh_version(),
                    ttl_millis: 0,
                    fence_unix_millis: start,
                };
                let mine = Expect {
                    marker_unix_millis,
                    version: Some(version),
                };
                let _ = registry.swap(terms.namespace, choice.worker, mine, &free);
                return Err(e);
            }
        }
    }
    Err(LeaseError::Contended {
        namespace: terms.namespace.to_owned(),
        attempts: u32::try_from(all_races).unwrap_or(u32::MAX),
    })
}

/// Whether `snapshot`, read after losing the race for `lost_to` (chosen
/// under the high-water mark `high_water`), shows that another won it: the
/// marker moved, the mark rose, or the id's record is no longer the one
/// the swap expected.
fn won_by_another(snapshot: &Snapshot, lost_to: &Choice, high_water: u64) -> bool {
    let record = snapshot.records.iter().find(|r| r.worker == lost_to.worker);
    snapshot.marker_unix_millis != Some(lost_to.expect.marker_unix_millis)
        || snapshot.high_water != high_water
        || record.map(|r| r.version) != lost_to.expect.version
}

impl Holding {
    /// What a healing acquisition needs to know of this lease once lost.
    pub(crate) fn as_lost(&self) -> Lost {
        Lost {
            worker: self.worker,
            marker_unix_millis: self.marker_unix_millis,
            fence_unix_millis: self.fence_unix_millis,
        }
    }

    /// Extends the lease and moves the fence to a TTL past `now_ms` (never
    /// back); returns the fence now confirmed (rule 1).
    ///
    /// The swap names this exact lease, marker and version, so a record that
    /// is gone, or was written by anyone else since, is never written back
    /// (rule 4).
    pub(crate) fn renew(
        &mut self,
        registry: &dyn Registry,
        terms: &Terms<'_>,
        now_ms: u64,
    ) -> Result<u64, Unconfirmed> {
        let fence_unix_millis = terms.fence_from(self.fence_unix_millis, now_ms);
        let token = self.token.clone();
        let write = NewRecord {
            holder: &token,
            version: fresh_version(),
            ttl_millis: terms.ttl_millis,
            fence_unix_millis,
        };
        match self.swap(registry, terms, &write) {
            Ok(Some(server_unix_millis)) => {
                // The record is ours at the new version either way; whether
                // its fence may be used depends on this clock.
                terms
                    .check_skew(now_ms, server_unix_millis)
                    .map_err(Unconfirmed::Failed)?;
                self.fence_unix_millis = fence_unix_millis;
                Ok(fence_unix_millis)
            }
            Ok(None) => Err(Unconfirmed::Lost(terms.lost(self.worker))),
            Err(e) => Err(Unconfirmed::Failed(e)),
        }
    }

    /// Gives the lease up, lowering its fence to `high_water_ms` (the start
    /// of the unit after the last ID issued), never above the confirmed
    /// fence. Only this exact lease is written (rule 5). Returns whether it
    /// was still this holder's to give up.
    pub(crate) fn release(
        &mut self,
        registry: &dyn Registry,
        terms: &Terms<'_>,
        high_water_ms: u64,
    ) -> Result<bool, LeaseError> {
        let write = NewRecord {
            holder: "",
            version: fresh_version(),
            ttl_millis: 0,
            fence_unix_millis: high_water_ms.min(self.fence_unix_millis),
        };
        Ok(self.swap(registry, terms, &write)?.is_some())
    }

    /// Writes `write` over whichever version the record has of those it may
    /// have; remembers `write`'s version as possible when the call fails.
    fn swap(
        &mut self,
        registry: &dyn Registry,
        terms: &Terms<'_>,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        while let Some(&version) = self.versions.first() {
            let expect = Expect {
                marker_unix_millis: self.marker_unix_millis,
                version: Some(version),
            };
            match registry.swap(terms.namespace, self.worker, expect, record) {
                Ok(Some(server_unix_millis)) => {
                    self.versions = vec![record.version];
                    return Ok(Some(server_unix_millis));
                }
                // Not at that version now, and never again: versions are not reused.
                Ok(None) => {
                    self.versions.remove(0);
                }
                Err(e) => {
                    if self.versions.len() >= IN_DOUBT {
                        self.versions.remove(1);
                    }
                    self.versions.push(record.version);
                    return Err(e);
                }
            }
        }
        Ok(None)
    }
}

/// A token no other acquisition uses: host, process, time and a random number.
pub(crate) fn holder_token() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!("{host}/{}/{:016x}", std::process::id(), hasher.finish())
}

/// The pause before the next try after `lost` races lost in a row.
fn backoff(lost: u32) -> Duration {
    let ceiling = BACKOFF_MAX.min(Duration::from_millis(1 << lost.min(16)));
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(fresh_version() % nanos.max(1))
}

/// A version no write has used: 63 random bits (so it fits a signed
/// column), never 0. Two writes pick the same one with odds of 2⁻⁶³.
pub(crate) fn fresh_version() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    // Relaxed: only uniqueness of the count matters.
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    (hasher.finish() >> 1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms() -> Terms<'static> {
        Terms {
            namespace: "n",
            workers: 4,
            ttl_millis: 10_000,
            skew_millis: 2_000,
            wait_out_rollbacks: false,
        }
    }

    fn record(
        worker: u64,
        holder: &str,
        expires_unix_millis: u64,
        fence_unix_millis: u64,
    ) -> Record {
        Record {
            worker,
            holder: holder.to_owned(),
            version: 7 + worker,
            marker_unix_millis: 100,
            expires_unix_millis,
            fence_unix_millis,
        }
    }

    /// A registry's read of `records` (all of them) under marker 100, with
    /// a high-water mark past the highest, read at 1 000.
    fn snapshot(records: Vec<Record>) -> Snapshot {
        let high_water = records.iter().map(|r| r.worker + 1).max().unwrap_or(0);
        let unrecorded = (0..high_water)
            .filter(|&w| !records.iter().any(|r| r.worker == w))
            .collect();
        Snapshot {
            server_unix_millis: 1_000,
            marker_unix_millis: Some(100),
            records,
            high_water,
            unrecorded,
            more: false,
        }
    }

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
        let choice = t.choose(&s, 100, 1_000, None).unwrap();
        assert_eq!(chosen(choice), (2, 900, StartCause::Predecessor));
        assert_eq!(choice.expect.version, Some(9));
        let choice = t.choose(&s, 100, 800, None).unwrap();
        assert_eq!((choice.worker, choice.start_unix_millis), (2, 900));
        assert_eq!(choice.expect.marker_unix_millis, 100);
        let s = snapshot(vec![record(0, "a", 5_000, 1)]);
        let choice = t.choose(&s, 100, 1_000, None).unwrap();
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
        let choice = t.choose(&s, 100, 50_000, None).unwrap();
        assert_eq!(chosen(choice), (0, 40_000, StartCause::Predecessor));
        // Released a moment ago: its fence just ahead, within the grace.
        let choice = t.choose(&s, 100, 40_000 - RELEASED_GRACE_MS, None).unwrap();
        assert_eq!(choice.worker, 0);
        // Further ahead, the fresh id starts sooner.
        let choice = t.choose(&s, 100, 20_000, None).unwrap();
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
        let choice = workers_one.choose(&s, 500, 1_000, None).unwrap();
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
        let choice = workers_one.choose(&s, 500, 1_000, None).unwrap();
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
        let choice = workers_one.choose(&s, 500, 1_000, None).unwrap();
        assert_eq!(chosen(choice), (0, 13_001, forgotten));
    }

    fn relic_at(worker: u64, fence_unix_millis: u64) -> Record {
        Record {
            marker_unix_millis: 50,
            ..record(worker, "a", 0, fence_unix_millis)
        }
    }

    #[test]
    fn counts_the_held_when_none_is_free() {
        let t = Terms {
            workers: 2,
            ..terms()
        };
        let s = snapshot(vec![record(0, "a", 5_000, 0), record(1, "b", 5_000, 0)]);
        assert_eq!(t.choose(&s, 100, 0, None), Err(2));
    }

    #[test]
    fn the_high_water_mark_is_offered_at_the_marker_rule() {
        let t = terms();
        let s = snapshot(vec![record(0, "a", 5_000, 0), record(1, "b", 5_000, 0)]);
        let choice = t.choose(&s, 100, 0, None).unwrap();
        assert_eq!((choice.worker, choice.start_unix_millis), (2, 12_100));
        // At the layout's last id, nothing is past it.
        let t = Terms { workers: 2, ..t };
        assert_eq!(t.choose(&s, 100, 0, None), Err(2));
    }

    #[test]
    fn an_id_whose_record_is_gone_waits_from_when_that_was_seen() {
        let t = terms();
        // Ids 0 and 2 held, id 1 handed out once (below the mark) and its
        // record deleted: an empty slot is no proof that nobody issues on it.
        let s = snapshot(vec![record(0, "a", 5_000, 0), record(2, "b", 5_000, 0)]);
        assert_eq!(s.unrecorded, [1]);
        let forgotten = StartCause::Forgotten {
            seen_unix_millis: 1_001,
        };
        // Id 1 waits from the read (1 001 + 12 000); the mark, id 3, from
        // the marker (100 + 12 000), which is earlier.
        let choice = t.choose(&s, 100, 0, None).unwrap();
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
        let choice = t.choose(&s, 100, 0, None).unwrap();
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
        assert_eq!(t.choose(&s, 100, 1_000, Some(2)).unwrap().worker, 2);
        // Held by another: the ordinary choice.
        assert_eq!(t.choose(&s, 100, 1_000, Some(0)).unwrap().worker, 1);
        // Unrecorded (a loss), though not the high-water mark (2).
        let s = snapshot(vec![record(0, "a", 5_000, 0), record(1, "", 0, 10)]);
        let choice = t.choose(&s, 100, 1_000, Some(3)).unwrap();
        assert_eq!((choice.worker, choice.expect.version), (3, None));
        assert_eq!(choice.start_unix_millis, 12_100);
        // Not an id of the layout: ignored.
        assert_eq!(t.choose(&s, 100, 1_000, Some(9)).unwrap().worker, 1);
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
        let registry = crate::lease::MemoryRegistry::new();
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
        let registry = crate::lease::MemoryRegistry::new();
        let t = Terms { workers: 1, ..t };
        let grant = acquire(&registry, &t, "a", now_ms, None).unwrap();
        registry.delete_record("n", grant.holding.worker);
        let before = now_ms();
        let grant = acquire(&registry, &t, "b", now_ms, None).unwrap();
        assert!(
            matches!(grant.cause, StartCause::Forgotten { seen_unix_millis } if seen_unix_millis > before)
        );
        // And its holder, healing, waits too, its record gone.
        let registry = crate::lease::MemoryRegistry::new();
        let grant = acquire(&registry, &t, "a", now_ms, None).unwrap();
        registry.lose_data();
        let heal = acquire(&registry, &t, "a2", now_ms, Some(&grant.holding.as_lost())).unwrap();
        assert!(matches!(
            heal.cause,
            StartCause::Healing { .. } | StartCause::Marker { .. }
        ));
        assert!(heal.previous_fence_unix_millis >= now_ms() + 11_000);
    }

    #[test]
    fn tokens_differ() {
        assert_ne!(holder_token(), holder_token());
    }

    #[test]
    fn a_fence_leads_by_the_ttl_and_never_goes_back() {
        let t = terms();
        assert_eq!(t.fence_from(0, 1_000), 11_000);
        // A floor further ahead is kept, not extended by a TTL.
        assert_eq!(t.fence_from(60_000, 1_000), 60_000);
        assert_eq!(t.fence_from(5_000, u64::MAX), u64::MAX);
    }

    #[test]
    fn the_loss_rule_covers_the_lead_bound_and_the_skew() {
        let t = terms();
        assert_eq!(t.unrecorded_fence(1_000), 1_000 + 10_000 + 2_000);
        assert_eq!(t.unrecorded_fence(u64::MAX - 5), u64::MAX);
        // A holder at most the skew ahead of the server, writing before the
        // loss, confirms no fence past the rule.
        let (server_at_write, marker) = (5_000, 5_000);
        let holder_now = server_at_write + t.skew_millis;
        assert!(t.fence_from(0, holder_now) <= t.unrecorded_fence(marker));
    }

    #[test]
    fn a_clock_ahead_by_more_than_the_skew_is_refused() {
        let t = terms();
        assert!(t.check_skew(3_000, 1_000).is_ok());
        assert!(matches!(
            t.check_skew(3_001, 1_000),
            Err(LeaseError::ClockAhead {
                ahead_millis: 2_001,
                skew_millis: 2_000
            })
        ));
        assert!(t.check_skew(0, 1_000).is_ok());
    }

    /// A registry where, `left` times, another generator takes the id an
    /// acquisition chose just before its swap lands.
    struct Outraced {
        inner: crate::lease::MemoryRegistry,
        left: std::sync::atomic::AtomicU32,
    }

    impl Registry for Outraced {
        fn read(
            &self,
            ns: &str,
            workers: u64,
            prefer: Option<u64>,
        ) -> Result<Snapshot, LeaseError> {
            self.inner.read(ns, workers, prefer)
        }
        fn mark(&self, ns: &str) -> Result<u64, LeaseError> {
            self.inner.mark(ns)
        }
        fn swap(
            &self,
            ns: &str,
            worker: u64,
            expect: Expect,
            record: &NewRecord<'_>,
        ) -> Result<Option<u64>, LeaseError> {
            let outrace = self
                .left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                    left.checked_sub(1)
                });
            if outrace.is_ok() {
                let other = NewRecord {
                    holder: "other",
                    version: fresh_version(),
                    ..*record
                };
                assert!(self.inner.swap(ns, worker, expect, &other)?.is_some());
            }
            self.inner.swap(ns, worker, expect, record)
        }
    }

    fn outraced(times: u32) -> Outraced {
        Outraced {
            inner: crate::lease::MemoryRegistry::new(),
            left: times.into(),
        }
    }

    fn now_ms() -> u64 {
        crate::clock::units::unix_millis(std::time::SystemTime::now())
    }

    /// A registry whose swaps fail with nobody winning: stuck.
    struct Stuck {
        inner: crate::lease::MemoryRegistry,
        swaps: std::sync::atomic::AtomicU32,
    }

    impl Registry for Stuck {
        fn read(
            &self,
            ns: &str,
            workers: u64,
            prefer: Option<u64>,
        ) -> Result<Snapshot, LeaseError> {
            self.inner.read(ns, workers, prefer)
        }
        fn mark(&self, ns: &str) -> Result<u64, LeaseError> {
            self.inner.mark(ns)
        }
        fn swap(
            &self,
            _: &str,
            _: u64,
            _: Expect,
            _: &NewRecord<'_>,
        ) -> Result<Option<u64>, LeaseError> {
            self.swaps.fetch_add(1, Ordering::Relaxed);
            Ok(None)
        }
    }

    #[test]
    fn an_acquisition_outlasts_a_crowd_choosing_alike() {
        // As the last of 41 builds that started together: 40 races lost,
        // more than `ATTEMPTS`, each to a build that took the id it chose.
        let t = Terms {
            workers: 64,
            ..terms()
        };
        let registry = outraced(ATTEMPTS + 8);
        let grant = acquire(&registry, &t, "me", now_ms, None).unwrap();
        assert_eq!(grant.holding.worker, u64::from(ATTEMPTS + 8));
    }

    #[test]
    fn an_acquisition_that_others_always_win_ends_when_the_ids_do() {
        let t = Terms {
            workers: 8,
            ..terms()
        };
        let registry = outraced(u32::MAX);
        match acquire(&registry, &t, "me", now_ms, None) {
            Err(LeaseError::AllHeld { held, .. }) => assert_eq!(held, 8),
            other => panic!("expected AllHeld, got {other:?}"),
        }
        assert_eq!(u32::MAX - registry.left.load(Ordering::Relaxed), 8);
    }

    #[test]
    fn an_acquisition_whose_swaps_fail_with_nobody_winning_gives_up_in_bounded_tries() {
        let t = Terms {
            workers: 1024,
            ..terms()
        };
        let registry = Stuck {
            inner: crate::lease::MemoryRegistry::new(),
            swaps: std::sync::atomic::AtomicU32::new(0),
        };
        match acquire(&registry, &t, "me", now_ms, None) {
            Err(e @ LeaseError::Contended { attempts, .. }) => {
                assert_eq!(attempts, ATTEMPTS);
                assert_eq!(registry.swaps.load(Ordering::Relaxed), ATTEMPTS);
                assert!(e.to_string().contains("build again"), "{e}");
            }
            other => panic!("expected Contended, got {other:?}"),
        }
    }

    #[test]
    fn a_pause_after_a_lost_race_is_random_and_bounded() {
        for lost in 1..40 {
            let ceiling = BACKOFF_MAX.min(Duration::from_millis(1 << lost.min(16)));
            let pauses: Vec<_> = (0..50).map(|_| backoff(lost)).collect();
            assert!(pauses.iter().all(|&p| p < ceiling), "{lost}: {pauses:?}");
            assert!(pauses.iter().any(|&p| p != pauses[0]), "{lost}: {pauses:?}");
        }
    }

    #[test]
    fn versions_differ_and_fit_a_signed_column() {
        let a = fresh_version();
        let b = fresh_version();
        assert_ne!(a, b);
        assert!(a > 0 && a <= i64::MAX as u64);
    }
}

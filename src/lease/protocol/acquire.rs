//! The acquisition: read, choose, swap, and again when another won the
//! race. Races lost to other acquisitions are progress and do not count
//! toward giving up; a write whose outcome is unknown is given back; every
//! try is bounded (rule 7), and each read costs the live holders, not the
//! id space (rule 9).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::grant::Grant;
use super::ids::fresh_version;
use super::sighting;
use super::start::{Choice, Lost};
use super::terms::Terms;
use crate::lease::backend::{
    Expect, LeaseError, NewRecord, ReadRequest, Registry, Snapshot, TimeBase,
};

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

/// How many ids below the high-water mark one read probes for records
/// gone: what a registry returns beside the few records that decide a
/// choice (rule 9). An acquisition that finds nothing else free moves the
/// probe on and reads again, until it has probed every id below the mark.
const PROBE: u64 = ReadRequest::MAX_PROBE;

/// Where this process's next read probes, below the high-water mark as it
/// last saw it; `u64::MAX` before the first. It starts at a random id, so
/// that processes probe different ids, and stays on an id it found gone
/// until that id is taken. A hint shared by every lease of the process:
/// a race on it costs at most a probe in the wrong place.
static PROBE_AT: AtomicU64 = AtomicU64::new(u64::MAX);

/// The ids one acquisition's reads probe, and how many below the
/// high-water mark they have covered.
struct Probe {
    ids: Range<u64>,
    covered: u64,
}

impl Probe {
    fn start() -> Probe {
        let at = match PROBE_AT.load(Ordering::Relaxed) {
            u64::MAX => fresh_version() >> 32,
            at => at,
        };
        Probe {
            ids: at..at.saturating_add(PROBE),
            covered: 0,
        }
    }

    /// The ids probed below `top`, the high-water mark or the ids in play,
    /// whichever is lower, that have no record under `marker_unix_millis`:
    /// handed out, and their records gone. Moves the probe past them, or to
    /// the first of them, for the next read.
    fn unrecorded(&mut self, snapshot: &Snapshot, marker_unix_millis: u64, top: u64) -> Vec<u64> {
        let probed = self.ids.start.min(top)..self.ids.end.min(top);
        let gone: Vec<u64> = probed
            .clone()
            .filter(|&w| {
                !snapshot
                    .records
                    .iter()
                    .any(|r| r.worker == w && r.marker_unix_millis == marker_unix_millis)
            })
            .collect();
        self.covered += probed.end - probed.start;
        let next = match (gone.first(), top) {
            (_, 0) => 0,
            // Beyond the mark (a random start, or the mark fell): within it.
            _ if self.ids.start >= top => self.ids.start % top,
            (Some(&first), _) => first,
            (None, _) if probed.end >= top => 0,
            (None, _) => probed.end,
        };
        PROBE_AT.store(next, Ordering::Relaxed);
        if gone.is_empty() {
            self.ids = next..next.saturating_add(PROBE);
        }
        gone
    }

    /// Whether ids below `top` are left to probe.
    fn more(&self, top: u64) -> bool {
        self.covered < top
    }
}

/// Takes a free id for `token`, reading the holder's clock (ms) with
/// `now_ms`. A generator healing after a loss names the lease it `lost`:
/// its old id is preferred if free, and if the registry shows that lease
/// gone, the new one waits (see [`StartCause::Healing`](super::StartCause::Healing)).
pub(crate) fn acquire(
    registry: &dyn Registry,
    terms: &Terms<'_>,
    token: &str,
    now_ms: impl Fn() -> u64,
    lost: Option<&Lost>,
) -> Result<Grant, LeaseError> {
    let prefer = lost.map(|l| l.worker);
    let mut probe = Probe::start();
    // Reads beyond those the races allow, to probe every id below the
    // high-water mark when nothing else is free: one more than it takes.
    let mut probes = terms.workers.div_ceil(PROBE) + 1;
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
    // Bounded tries (rule 7), each a read of the few records that matter
    // (rule 9: the live holders' cost, not the id space's).
    while attempts < ATTEMPTS && all_races < max_races {
        if races > 0 {
            std::thread::sleep(backoff(races));
        }
        let now = now_ms();
        let request = ReadRequest::new(terms.workers)
            .prefer(prefer)
            .probe(probe.ids.clone());
        let mut snapshot = registry.read(terms.namespace, &request)?;
        if registry.time_base() == TimeBase::Client {
            sighting::held_from_first_sight(terms, &mut snapshot);
        }
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
        let top = snapshot.high_water.min(terms.workers);
        let unrecorded = probe.unrecorded(&snapshot, marker_unix_millis, top);
        let choice = match terms.choose(&snapshot, &unrecorded, marker_unix_millis, now, prefer) {
            Ok(choice) => choice,
            // Ids below the high-water mark are probed for records gone
            // a window at a time.
            Err(_) if probe.more(top) && probes > 0 => {
                probes -= 1;
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
                if registry.time_base() == TimeBase::Client {
                    sighting::written_here(terms, choice.worker, version);
                }
                return Ok(Grant {
                    token: token.to_owned(),
                    worker: choice.worker,
                    marker_unix_millis,
                    fence_unix_millis,
                    versions: vec![version],
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

/// The pause before the next try after `lost` races lost in a row.
fn backoff(lost: u32) -> Duration {
    let ceiling = BACKOFF_MAX.min(Duration::from_millis(1 << lost.min(16)));
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(fresh_version() % nanos.max(1))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::lease::protocol::StartCause;
    use crate::lease::protocol::fixtures::{now_ms, terms};

    /// A registry where, `left` times, another generator takes the id an
    /// acquisition chose just before its swap lands.
    struct Outraced {
        inner: crate::lease::backend::memory::MemoryRegistry,
        left: std::sync::atomic::AtomicU32,
    }

    impl Registry for Outraced {
        fn read(&self, ns: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
            self.inner.read(ns, request)
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
            inner: crate::lease::backend::memory::MemoryRegistry::new(),
            left: times.into(),
        }
    }

    /// A registry whose swaps fail with nobody winning: stuck.
    struct Stuck {
        inner: crate::lease::backend::memory::MemoryRegistry,
        swaps: std::sync::atomic::AtomicU32,
    }

    impl Registry for Stuck {
        fn read(&self, ns: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
            self.inner.read(ns, request)
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
        assert_eq!(grant.worker, u64::from(ATTEMPTS + 8));
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
            inner: crate::lease::backend::memory::MemoryRegistry::new(),
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

    /// `workers` records under marker 100, every one held.
    fn all_held(workers: u64) -> Snapshot {
        let records = (0..workers)
            .map(|w| crate::lease::protocol::fixtures::record(w, "a", 99_999, 5_000))
            .collect();
        crate::lease::protocol::fixtures::snapshot(records)
    }

    #[test]
    fn a_probe_moves_through_every_id_below_the_mark_and_wraps() {
        let s = all_held(200);
        let mut probe = Probe {
            ids: 100..164,
            covered: 0,
        };
        let mut windows = vec![];
        while probe.more(200) {
            windows.push(probe.ids.clone());
            assert_eq!(probe.unrecorded(&s, 100, 200), Vec::<u64>::new());
        }
        assert_eq!(windows, [100..164, 164..228, 0..64, 64..128]);
    }

    #[test]
    fn a_probe_beyond_the_mark_moves_within_it() {
        let s = all_held(200);
        let mut probe = Probe {
            ids: 1_030..1_094,
            covered: 0,
        };
        assert!(probe.unrecorded(&s, 100, 200).is_empty());
        assert_eq!((probe.ids.clone(), probe.more(200)), (30..94, true));
    }

    #[test]
    fn a_probe_names_every_id_it_covers_with_no_record_under_the_marker() {
        let mut s = all_held(200);
        s.records.retain(|r| r.worker != 130 && r.worker != 140);
        // Id 150's record is of another history.
        for r in s.records.iter_mut().filter(|r| r.worker == 150) {
            r.marker_unix_millis = 50;
        }
        let mut probe = Probe {
            ids: 120..184,
            covered: 0,
        };
        assert_eq!(probe.unrecorded(&s, 100, 200), [130, 140, 150]);
        // Past the mark (or the ids in play) nothing is unrecorded.
        let mut probe = Probe {
            ids: 190..254,
            covered: 0,
        };
        assert_eq!(probe.unrecorded(&s, 100, 195), Vec::<u64>::new());
    }

    #[test]
    fn an_acquisition_finds_the_one_id_whose_record_is_gone_wherever_it_lies() {
        let t = Terms {
            workers: 512,
            ..terms()
        };
        let registry = crate::lease::backend::memory::MemoryRegistry::new();
        let marker_unix_millis = registry.mark("n").unwrap();
        for worker in 0..512 {
            let held = NewRecord {
                holder: "another",
                version: 1,
                ttl_millis: 600_000,
                fence_unix_millis: 0,
            };
            let none = Expect {
                marker_unix_millis,
                version: None,
            };
            assert!(registry.swap("n", worker, none, &held).unwrap().is_some());
        }
        for gone in [0, 63, 64, 300, 511] {
            registry.delete_record("n", gone);
            let grant = acquire(&registry, &t, "me", now_ms, None).unwrap();
            assert_eq!(grant.worker, gone);
            assert!(matches!(grant.cause, StartCause::Forgotten { .. }));
        }
        match acquire(&registry, &t, "me", now_ms, None) {
            Err(LeaseError::AllHeld { held: 512, .. }) => {}
            other => panic!("expected AllHeld, got {other:?}"),
        }
    }

    #[cfg(feature = "inspect")]
    #[test]
    fn a_test_write_leaves_a_held_record_alone() {
        let registry = crate::lease::backend::memory::MemoryRegistry::new();
        let t = Terms {
            workers: 1,
            ..terms()
        };
        // Nothing there: it marks the namespace and writes id 0 free.
        assert!(crate::lease::protocol::test_write(&registry, &t).unwrap());
        let free = registry.record("n", 0).unwrap();
        assert!(free.holder.is_empty());
        let mut grant = acquire(&registry, &t, "holder", now_ms, None).unwrap();
        let held = registry.record("n", 0).unwrap();
        assert_eq!(held.holder, "holder");
        assert!(!crate::lease::protocol::test_write(&registry, &t).unwrap());
        assert_eq!(registry.record("n", 0).unwrap(), held);
        // Given back, it is written again, its fence kept.
        let fence = grant.fence_unix_millis;
        assert!(grant.release(&registry, &t, fence).unwrap());
        let released = registry.record("n", 0).unwrap();
        assert!(crate::lease::protocol::test_write(&registry, &t).unwrap());
        let rewritten = registry.record("n", 0).unwrap();
        assert_eq!(rewritten.fence_unix_millis, released.fence_unix_millis);
        assert_ne!(rewritten.version, released.version);
    }

    /// Last round's trap: a test write after a wipe wrote id 0 back free
    /// at fence 0 under a fresh marker, and the next build took it at once
    /// while the holder the wipe hid still issued below its own fence.
    #[cfg(feature = "inspect")]
    #[test]
    fn a_test_write_after_a_loss_fences_id_0_past_it() {
        let registry = crate::lease::backend::memory::MemoryRegistry::new();
        let t = Terms {
            workers: 1,
            ..terms()
        };
        crate::lease::protocol::readiness(&registry, &t).unwrap();
        let holder = acquire(&registry, &t, "holder", now_ms, None).unwrap();
        let holders_fence = holder.fence_unix_millis;
        registry.lose_data();
        assert!(crate::lease::protocol::test_write(&registry, &t).unwrap());
        let written = registry.record("n", 0).unwrap();
        let marker = written.marker_unix_millis;
        assert!(written.holder.is_empty());
        assert!(
            written.fence_unix_millis >= t.unrecorded_fence(marker),
            "id 0 written free at {}, inside the loss rule's bound",
            written.fence_unix_millis
        );
        let next = acquire(&registry, &t, "next", now_ms, None).unwrap();
        assert_eq!(next.worker, 0);
        assert!(next.previous_fence_unix_millis >= holders_fence);
        assert!(next.previous_fence_unix_millis >= t.unrecorded_fence(marker));
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
}

//! The kit against registries broken on purpose: a third party's registry
//! over a `Mutex<HashMap>`, as its docs lead one to write, with one promise
//! broken at a time. Each must fail a rule whose message names the step and
//! the promise, at once, not on a lease's timeout; the unbroken one passes
//! the whole suite. A change to the kit that lets a broken one through
//! fails here.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use flakegen::lease::LeaseError;
use flakegen::lease::backend::{
    Expect, MarkerCheck, NewRecord, ReadCost, ReadRequest, Record, Registry, Snapshot,
};
use flakegen_contract::{Fixture, Wipe};

/// The one promise a registry breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Break {
    Nothing,
    /// `swap` writes whatever marker it is told is in force.
    SwapIgnoresMarker,
    /// `swap` writes over whatever version the record has.
    SwapIgnoresVersion,
    /// `swap` says it wrote at 0, not by the server's clock.
    SwapForgetsTheClock,
    /// `mark` says 0, whatever marker is in force.
    MarkSaysZero,
    /// After a loss, `mark` dates the data's start 10 s before it.
    MarkBeforeTheLoss,
    /// `mark` dates a namespace it has no trace of from the store's start,
    /// as if nothing could have been lost before it was seen: an emptied
    /// namespace trusted as new.
    MarkTrustsAnEmptyNamespace,
    /// `read` keeps an index of free ids that a write which holds one
    /// again does not update.
    ReadsAStaleFreeIndex,
    /// `swap` leaves the high-water mark where it was.
    SwapLeavesTheMark,
    /// `read` returns the records that decide a choice, and of the probe's
    /// only those: the held ones below the high-water mark are left out.
    ReadsPastTheProbe,
    /// `read` returns every record, and the registry declares
    /// `ReadCost::Bounded`.
    DeclaresABoundedRead,
    /// `swap` lets a holder renew its record under the marker it was
    /// written under, after that marker was replaced, and the registry
    /// declares `MarkerCheck::InSwap`.
    RenewsUnderAReplacedMarker,
    /// `swap` lets any write over a record compare the record's marker
    /// alone, a takeover too: `MarkerCheck::ConfirmedFirst`, declared and
    /// not kept.
    TakesOverUnderAReplacedMarker,
}

/// A namespace's data: its marker and high-water mark, and its records by
/// worker id.
#[derive(Default)]
struct Namespace {
    marker: Option<u64>,
    high_water: u64,
    records: HashMap<u64, Record>,
    /// `ReadsAStaleFreeIndex`: the ids once written free.
    free_index: Vec<u64>,
}

struct State {
    /// When the store's data began (ms since 1970): 0 for a new store.
    began: u64,
    /// When the store last lost its data (ms since 1970), if it did.
    lost: Option<u64>,
    namespaces: HashMap<String, Namespace>,
}

/// A registry over a `Mutex<HashMap>`, and its fixture.
#[derive(Clone)]
struct Map {
    broken: Break,
    state: Arc<Mutex<State>>,
}

impl Map {
    fn new(broken: Break) -> Map {
        Map {
            broken,
            state: Arc::new(Mutex::new(State {
                began: 0,
                lost: None,
                namespaces: HashMap::new(),
            })),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

impl Registry for Map {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(ns) = state.namespaces.get(namespace) else {
            return Ok(Snapshot {
                server_unix_millis: now_ms(),
                ..Snapshot::default()
            });
        };
        let marker = ns.marker;
        // Every record: allowed, for a registry that can afford it.
        let mut records: Vec<Record> = ns
            .records
            .values()
            .filter(|r| r.worker < request.workers)
            .cloned()
            .collect();
        if self.broken == Break::ReadsAStaleFreeIndex {
            for r in &mut records {
                if ns.free_index.contains(&r.worker) {
                    r.holder.clear();
                    r.expires_unix_millis = 0;
                }
            }
        }
        if self.broken == Break::ReadsPastTheProbe {
            let now = now_ms();
            records.retain(|r| {
                r.holder.is_empty()
                    || r.expires_unix_millis <= now
                    || Some(r.worker) == request.prefer
                    || r.worker >= ns.high_water
            });
        }
        Ok(Snapshot {
            server_unix_millis: now_ms(),
            marker_unix_millis: marker,
            records,
            high_water: if marker.is_some() { ns.high_water } else { 0 },
        })
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // A namespace with no marker is new or emptied: its marker is now.
        let now = now_ms() + 1;
        let new = match (self.broken, state.lost) {
            (Break::MarkBeforeTheLoss, Some(lost)) => lost - 10_000,
            (Break::MarkTrustsAnEmptyNamespace, _) => state.began,
            _ => now,
        };
        let ns = state.namespaces.entry(namespace.to_owned()).or_default();
        let marker = *ns.marker.get_or_insert(new);
        Ok(if self.broken == Break::MarkSaysZero {
            0
        } else {
            marker
        })
    }

    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let ns = state.namespaces.entry(namespace.to_owned()).or_default();
        let under_its_marker = ns.records.get(&worker).is_some_and(|r| {
            r.marker_unix_millis == expect.marker_unix_millis
                && (r.holder == record.holder
                    || self.broken == Break::TakesOverUnderAReplacedMarker)
        });
        let marker_checked = ns.marker == Some(expect.marker_unix_millis)
            || self.broken == Break::SwapIgnoresMarker
            || (under_its_marker
                && matches!(
                    self.broken,
                    Break::RenewsUnderAReplacedMarker | Break::TakesOverUnderAReplacedMarker
                ));
        if !marker_checked {
            return Ok(None);
        }
        let current = ns.records.get(&worker).map(|r| r.version);
        if self.broken != Break::SwapIgnoresVersion && current != expect.version {
            return Ok(None);
        }
        let now = now_ms();
        if record.holder.is_empty() {
            ns.free_index.push(worker);
        }
        if self.broken != Break::SwapLeavesTheMark {
            ns.high_water = ns.high_water.max(worker + 1);
        }
        ns.records.insert(
            worker,
            Record {
                worker,
                holder: record.holder.to_owned(),
                version: record.version,
                marker_unix_millis: expect.marker_unix_millis,
                expires_unix_millis: if record.ttl_millis == 0 {
                    0
                } else {
                    now + record.ttl_millis
                },
                fence_unix_millis: record.fence_unix_millis,
            },
        );
        Ok(Some(if self.broken == Break::SwapForgetsTheClock {
            0
        } else {
            now
        }))
    }

    fn marker_check(&self) -> MarkerCheck {
        if self.broken == Break::TakesOverUnderAReplacedMarker {
            MarkerCheck::ConfirmedFirst
        } else {
            MarkerCheck::InSwap
        }
    }

    // Every record, as its `read` returns them.
    fn read_cost(&self) -> ReadCost {
        if self.broken == Break::DeclaresABoundedRead {
            ReadCost::Bounded
        } else {
            ReadCost::EveryRecord
        }
    }
}

impl Fixture for Map {
    fn name(&self) -> &str {
        "a registry over a HashMap"
    }

    fn registry(&self) -> Arc<dyn Registry> {
        Arc::new(self.clone())
    }

    fn lose_data(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.namespaces.clear();
        // Rounded up: a marker is never earlier than the loss.
        state.lost = Some(now_ms() + 1);
    }

    fn wipe(&self, wipe: Wipe<'_>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match wipe {
            Wipe::Everything => state.namespaces.clear(),
            Wipe::Namespace(namespace) => drop(state.namespaces.remove(namespace)),
            Wipe::Record(namespace, worker) => {
                if let Some(ns) = state.namespaces.get_mut(namespace) {
                    ns.records.remove(&worker);
                }
            }
            other => panic!("no such wipe: {other:?}"),
        }
    }

    fn plant_marker(&self, namespace: &str, marker_unix_millis: u64) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .namespaces
            .entry(namespace.to_owned())
            .or_default()
            .marker = Some(marker_unix_millis);
        true
    }
}

/// A storage rule of the kit, by name.
type Rule = (&'static str, fn(&dyn Fixture));

/// What each storage rule said of the registry: its panic message, or
/// `None` where it passed.
fn verdicts(broken: Break) -> Vec<(&'static str, Option<String>)> {
    let rules: [Rule; 8] = [
        (
            "swap_writes_only_at_the_version_it_names",
            flakegen_contract::steps::swap_writes_only_at_the_version_it_names,
        ),
        (
            "swap_writes_only_under_the_marker_in_force",
            flakegen_contract::steps::swap_writes_only_under_the_marker_in_force,
        ),
        (
            "swap_says_when_it_wrote_by_the_servers_clock",
            flakegen_contract::steps::swap_says_when_it_wrote_by_the_servers_clock,
        ),
        (
            "mark_keeps_the_marker_in_force_and_never_moves_it_back",
            flakegen_contract::steps::mark_keeps_the_marker_in_force_and_never_moves_it_back,
        ),
        (
            "read_returns_what_an_acquisition_chooses_from",
            flakegen_contract::steps::read_returns_what_an_acquisition_chooses_from,
        ),
        (
            "a_mark_after_a_wipe_is_no_earlier_than_the_wipe",
            flakegen_contract::steps::a_mark_after_a_wipe_is_no_earlier_than_the_wipe,
        ),
        (
            "a_read_costs_what_its_registry_declares",
            flakegen_contract::steps::a_read_costs_what_its_registry_declares,
        ),
        (
            "a_swap_under_a_planted_marker_keeps_its_check",
            flakegen_contract::steps::a_swap_under_a_planted_marker_keeps_its_check,
        ),
    ];
    rules
        .into_iter()
        .map(|(name, rule)| {
            let fixture = Map::new(broken);
            let outcome = catch_unwind(AssertUnwindSafe(|| rule(&fixture)));
            let message = outcome.err().map(|panic| {
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default()
            });
            (name, message)
        })
        .collect()
}

/// Some rule fails `broken` with a message that says `promise`.
fn caught(broken: Break, promise: &str) {
    let verdicts = verdicts(broken);
    assert!(
        verdicts
            .iter()
            .any(|(_, said)| said.as_deref().is_some_and(|s| s.contains(promise))),
        "{broken:?} was not caught with \"{promise}\": {verdicts:#?}"
    );
}

#[test]
fn the_unbroken_registry_passes_every_storage_rule() {
    for (rule, said) in verdicts(Break::Nothing) {
        assert_eq!(said, None, "{rule}");
    }
}

#[test]
fn a_swap_that_ignores_the_marker_is_caught() {
    caught(Break::SwapIgnoresMarker, "swap wrote under a stale marker");
}

#[test]
fn a_swap_that_ignores_the_version_is_caught() {
    caught(
        Break::SwapIgnoresVersion,
        "swap wrote over a record it was told is not there",
    );
}

#[test]
fn a_swap_that_forgets_the_clock_is_caught() {
    caught(Break::SwapForgetsTheClock, "swap said it wrote at 0");
}

#[test]
fn a_mark_that_says_zero_is_caught() {
    caught(
        Break::MarkSaysZero,
        "read's marker is not the one mark returned",
    );
}

#[test]
fn a_mark_dated_before_the_loss_is_caught() {
    caught(
        Break::MarkBeforeTheLoss,
        "mark moved the marker back after a loss",
    );
}

#[test]
fn a_mark_that_trusts_an_emptied_namespace_is_caught() {
    caught(
        Break::MarkTrustsAnEmptyNamespace,
        "an empty namespace proves nothing",
    );
}

#[test]
fn a_stale_index_of_free_ids_is_caught() {
    caught(
        Break::ReadsAStaleFreeIndex,
        "read returned id 6 as free after it was held again",
    );
}

#[test]
fn a_swap_that_leaves_the_high_water_mark_is_caught() {
    caught(
        Break::SwapLeavesTheMark,
        "read's high-water mark is not one past",
    );
}

#[test]
fn a_read_that_leaves_out_the_probe_is_caught() {
    caught(
        Break::ReadsPastTheProbe,
        "read left out a record of the probe",
    );
}

#[test]
fn a_bounded_read_declared_and_not_kept_is_caught() {
    caught(
        Break::DeclaresABoundedRead,
        "the registry declares ReadCost::Bounded",
    );
}

#[test]
fn a_renewal_under_a_replaced_marker_in_a_registry_that_checks_it_in_the_swap_is_caught() {
    caught(
        Break::RenewsUnderAReplacedMarker,
        "swap renewed a record under a marker replaced since it was written",
    );
}

#[test]
fn a_takeover_that_skips_the_markers_confirmation_is_caught() {
    caught(
        Break::TakesOverUnderAReplacedMarker,
        "swap took a record over under a marker replaced since the taker read it",
    );
}

/// The unbroken registry through the whole suite: what the kit asks of a
/// third party's registry, a `HashMap` can give.
mod unbroken {
    flakegen_contract::suite!(super::Map::new(super::Break::Nothing));
}

//! The storage steps, one promise at a time: each rule calls `read`,
//! `mark` and `swap` directly and says which step broke which promise, so
//! that a broken registry fails here in a second, not on a lease's timeout
//! somewhere later.

use std::thread;
use std::time::Duration;

use flakegen::lease::backend::{
    Expect, MarkerCheck, NewRecord, ReadCost, ReadRequest, Record, Registry, TimeBase,
};

use crate::store::{SKEW, Store, namespace, now_ms};
use crate::{Fixture, Wipe};

/// Reads `worker`'s record, as a registry returns it for `prefer`.
fn record(registry: &dyn Registry, ns: &str, worker: u64) -> Option<Record> {
    let snapshot = registry
        .read(ns, &ReadRequest::new(worker + 1).prefer(Some(worker)))
        .unwrap();
    snapshot.records.into_iter().find(|r| r.worker == worker)
}

/// The marker in force, written if there is none.
fn marker(registry: &dyn Registry, ns: &str) -> u64 {
    let snapshot = registry.read(ns, &ReadRequest::new(1)).unwrap();
    snapshot
        .marker_unix_millis
        .unwrap_or_else(|| registry.mark(ns).unwrap())
}

fn held<'a>(holder: &'a str, version: u64, fence_unix_millis: u64) -> NewRecord<'a> {
    NewRecord {
        holder,
        version,
        ttl_millis: 60_000,
        fence_unix_millis,
    }
}

/// A swap is a compare-and-set on the record's version: it writes over the
/// version it names and no other, and it creates a record only where there
/// is none.
pub fn swap_writes_only_at_the_version_it_names(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let ns = namespace("step-version");
    let marker = marker(&*registry, &ns);
    let at = |version| Expect {
        marker_unix_millis: marker,
        version,
    };
    let swap = |expect, record: &NewRecord<'_>| registry.swap(&ns, 0, expect, record).unwrap();

    assert!(
        swap(at(None), &held("a", 11, 1_000)).is_some(),
        "{name}: swap did not create a record where there was none"
    );
    assert!(
        swap(at(None), &held("b", 12, 2_000)).is_none(),
        "{name}: swap wrote over a record it was told is not there (it must create only)"
    );
    assert!(
        swap(at(Some(99)), &held("b", 13, 2_000)).is_none(),
        "{name}: swap wrote at a stale version (it named 99, the record is at 11)"
    );
    assert!(
        swap(at(Some(11)), &held("a", 14, 3_000)).is_some(),
        "{name}: swap did not write at the version the record has"
    );
    assert!(
        swap(at(Some(11)), &held("b", 15, 4_000)).is_none(),
        "{name}: swap wrote at a stale version (11, which 14 replaced)"
    );
    let found = record(&*registry, &ns, 0).expect("the record written");
    assert_eq!(
        (
            found.holder.as_str(),
            found.version,
            found.fence_unix_millis
        ),
        ("a", 14, 3_000),
        "{name}: swap did not store what it was given: {found:?}"
    );
    assert_eq!(
        found.marker_unix_millis, marker,
        "{name}: swap did not store the marker it wrote under: {found:?}"
    );
}

/// A swap writes only under the marker in force: never under one that is
/// not (a holder's from before a loss), whether it creates the record or
/// replaces one.
pub fn swap_writes_only_under_the_marker_in_force(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let ns = namespace("step-marker");
    let marker = marker(&*registry, &ns);
    let expect = |marker_unix_millis, version| Expect {
        marker_unix_millis,
        version,
    };
    for stale in [Some(marker + 1), marker.checked_sub(1)]
        .into_iter()
        .flatten()
    {
        assert!(
            registry
                .swap(&ns, 1, expect(stale, None), &held("a", 21, 1_000))
                .unwrap()
                .is_none(),
            "{name}: swap wrote under a stale marker ({stale}, where {marker} is in force)"
        );
    }
    assert!(
        registry
            .swap(&ns, 0, expect(marker, None), &held("a", 22, 1_000))
            .unwrap()
            .is_some(),
        "{name}: swap did not write under the marker in force"
    );
    assert!(
        registry
            .swap(&ns, 0, expect(marker + 1, Some(22)), &held("a", 23, 2_000))
            .unwrap()
            .is_none(),
        "{name}: swap wrote under a stale marker over a record at its version"
    );

    // A loss: the marker before it is stale for every write after it.
    store.lose_data();
    let registry = store.registry();
    for (worker, version) in [(0, Some(22)), (0, None), (2, None)] {
        assert!(
            registry
                .swap(&ns, worker, expect(marker, version), &held("a", 24, 3_000))
                .unwrap()
                .is_none(),
            "{name}: swap wrote under a stale marker (the one before a loss), id {worker}"
        );
    }
}

/// A swap says when it wrote, by the server's clock (which is close to
/// this host's), and stores an expiry the TTL past it: none for a free
/// record. Restated for a store without a clock ([`TimeBase::Client`]): its
/// times are this host's clock itself, within the call, with no slack.
pub fn swap_says_when_it_wrote_by_the_servers_clock(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let ns = namespace("step-clock");
    let marker = marker(&*registry, &ns);
    let before = now_ms();
    let written = registry
        .swap(
            &ns,
            0,
            Expect {
                marker_unix_millis: marker,
                version: None,
            },
            &NewRecord {
                holder: "a",
                version: 31,
                ttl_millis: 5_000,
                fence_unix_millis: 1_000,
            },
        )
        .unwrap()
        .expect("written");
    let after = now_ms();
    match registry.time_base() {
        TimeBase::Client => assert!(
            (before..=after).contains(&written),
            "{name}: swap said it wrote at {written}, and a store without a clock must say \
             this host's clock, which read {before}..{after} around the call"
        ),
        _ => {
            let slack = SKEW.as_millis() as u64;
            assert!(
                (before.saturating_sub(slack)..=after + slack).contains(&written),
                "{name}: swap said it wrote at {written}, this host's clock read {before}..{after}"
            );
        }
    }
    let found = record(&*registry, &ns, 0).unwrap();
    assert!(
        found.expires_unix_millis.abs_diff(written + 5_000) <= 1,
        "{name}: swap stored an expiry of {}, not the TTL past its clock ({written} + 5000)",
        found.expires_unix_millis
    );
    registry
        .swap(
            &ns,
            0,
            Expect {
                marker_unix_millis: marker,
                version: Some(31),
            },
            &NewRecord {
                holder: "",
                version: 32,
                ttl_millis: 0,
                fence_unix_millis: 1_000,
            },
        )
        .unwrap()
        .expect("freed");
    let found = record(&*registry, &ns, 0).unwrap();
    assert_eq!(
        (found.holder.as_str(), found.expires_unix_millis),
        ("", 0),
        "{name}: swap did not store a free record as free: {found:?}"
    );
}

/// `mark` returns the marker in force and leaves it; after a loss, it
/// writes one no earlier than the loss, and later than the one before.
pub fn mark_keeps_the_marker_in_force_and_never_moves_it_back(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let ns = namespace("step-mark");
    let registry = store.registry();
    let first = registry.mark(&ns).unwrap();
    let again = registry.mark(&ns).unwrap();
    assert_eq!(
        again, first,
        "{name}: mark moved the marker in force ({first} to {again})"
    );
    let read = registry
        .read(&ns, &ReadRequest::new(1))
        .unwrap()
        .marker_unix_millis;
    assert_eq!(
        read,
        Some(first),
        "{name}: read's marker is not the one mark returned"
    );
    // A write under it, so there is something to lose.
    registry
        .swap(
            &ns,
            0,
            Expect {
                marker_unix_millis: first,
                version: None,
            },
            &held("a", 41, 1_000),
        )
        .unwrap();
    thread::sleep(Duration::from_millis(2));
    let lost_at = now_ms();
    store.lose_data();
    let registry = store.registry();
    let after = registry.mark(&ns).unwrap();
    assert!(
        after > first,
        "{name}: mark moved the marker back after a loss ({first} to {after})"
    );
    assert!(
        after >= lost_at,
        "{name}: mark wrote a marker ({after}) earlier than the loss ({lost_at})"
    );
    assert_eq!(
        registry.mark(&ns).unwrap(),
        after,
        "{name}: mark moved the marker in force"
    );
}

/// A read returns what an acquisition chooses from (see
/// `Registry::read`, obligations 1 to 5): the server's clock and marker,
/// the high-water mark, the free record with the earliest fence, an expired
/// one, the one asked for, and every record the probe covers, whatever it
/// says. A registry's own bookkeeping (an index of free and held ids) must
/// keep up with every write.
pub fn read_returns_what_an_acquisition_chooses_from(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let ns = namespace("step-read");
    let marker = marker(&*registry, &ns);
    let put = |worker: u64, holder: &str, ttl_millis: u64, fence_unix_millis: u64| {
        let found = record(&*registry, &ns, worker);
        let record = NewRecord {
            holder,
            version: found.as_ref().map_or(1, |r| r.version + 1),
            ttl_millis,
            fence_unix_millis,
        };
        let expect = Expect {
            marker_unix_millis: marker,
            version: found.map(|r| r.version),
        };
        assert!(
            registry
                .swap(&ns, worker, expect, &record)
                .unwrap()
                .is_some(),
            "{name}: could not write id {worker}"
        );
    };
    let now = now_ms();
    put(0, "live", 60_000, now + 60_000);
    put(1, "", 0, 500);
    put(2, "", 0, 100);
    put(3, "gone", 1, 200);
    put(5, "live", 60_000, now + 60_000);
    // Freed, then held again: the index must not still call it free.
    put(6, "", 0, 50);
    put(6, "live", 60_000, now + 60_000);
    thread::sleep(Duration::from_millis(10));

    let before = now_ms();
    let snapshot = registry
        .read(&ns, &ReadRequest::new(8).prefer(Some(5)).probe(0..8))
        .unwrap();
    let ids: Vec<u64> = snapshot.records.iter().map(|r| r.worker).collect();
    assert_eq!(
        snapshot.marker_unix_millis,
        Some(marker),
        "{name}: read's marker is not the one in force"
    );
    assert!(
        snapshot.server_unix_millis + SKEW.as_millis() as u64 >= before,
        "{name}: read's clock ({}) is behind this host's ({before})",
        snapshot.server_unix_millis
    );
    assert_eq!(
        snapshot.high_water, 7,
        "{name}: read's high-water mark is not one past the highest id written (7): {ids:?}"
    );
    for worker in [0, 1, 2, 3, 5, 6] {
        assert!(
            ids.contains(&worker),
            "{name}: read left out a record of the probe (0..8), id {worker}'s: {ids:?}"
        );
    }
    assert!(
        ids.contains(&2),
        "{name}: read left out the free record with the earliest fence (id 2): {ids:?}"
    );
    assert!(
        ids.contains(&3),
        "{name}: read left out the only expired record (id 3): {ids:?}"
    );
    assert!(
        ids.contains(&5),
        "{name}: read left out the record of the id asked for (5): {ids:?}"
    );
    for r in &snapshot.records {
        if r.worker == 6 {
            assert!(
                !r.holder.is_empty(),
                "{name}: read returned id 6 as free after it was held again: {r:?}"
            );
        }
    }
    // The gap filled, a probe of it finds its new record and the mark
    // where it was; a write past the mark raises it.
    put(4, "live", 60_000, now + 60_000);
    let snapshot = registry
        .read(&ns, &ReadRequest::new(8).probe(4..5))
        .unwrap();
    let ids: Vec<u64> = snapshot.records.iter().map(|r| r.worker).collect();
    assert_eq!(
        snapshot.high_water, 7,
        "{name}: a swap below the high-water mark moved it"
    );
    assert!(
        ids.contains(&4),
        "{name}: read left out a record of the probe (4..5), id 4's, written a moment ago: {ids:?}"
    );
    put(7, "live", 60_000, now + 60_000);
    let snapshot = registry.read(&ns, &ReadRequest::new(8)).unwrap();
    assert_eq!(
        snapshot.high_water, 8,
        "{name}: a swap at the high-water mark did not raise it"
    );
}

/// A namespace with no marker is new or was emptied, and nothing in an
/// empty store tells which: the marker written for one after a wipe is no
/// earlier than the wipe (see `Registry::mark`).
pub fn a_mark_after_a_wipe_is_no_earlier_than_the_wipe(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let ns = namespace("step-wipe");
    let marker = marker(&*registry, &ns);
    let expect = Expect {
        marker_unix_millis: marker,
        version: None,
    };
    registry
        .swap(&ns, 0, expect, &held("a", 1, now_ms() + 60_000))
        .unwrap();
    let before = now_ms();
    store.wipe(Wipe::Namespace(&ns));
    let snapshot = registry.read(&ns, &ReadRequest::new(4)).unwrap();
    assert_eq!(
        snapshot.marker_unix_millis, None,
        "{name}: read found a marker in a namespace whose keys or rows were all deleted"
    );
    let after = registry.mark(&ns).unwrap();
    assert!(
        after >= before,
        "{name}: mark dated an emptied namespace at unix ms {after}, before it was emptied \
         ({before}): an empty namespace proves nothing, and its marker must be the moment \
         it was found"
    );
}

/// A marker of another history (left by a failover to a server whose clock
/// runs ahead, or a restore), planted ahead of the clock: the marker `mark`
/// writes over it is later still. Every fence confirmed under the old
/// marker lies below its TTL-and-skew bound, and a marker moved back would
/// let a build start below them (see `Registry::mark`: later than any
/// marker it replaces). Test servers share this host's clock, so only a
/// planted marker shows it. The planted one lies 2 s ahead, and the rule
/// waits until it has passed: a registry that never gives a marker twice
/// across namespaces (etcd's prefix) would date the next namespaces past it.
pub fn a_marker_replaced_is_never_moved_back(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    // On a machine so busy that planting and marking outlast the lead, the
    // rule could not tell: it plants further ahead and tries again.
    for ahead in [2_000, 8_000, 30_000] {
        let ns = namespace("step-planted");
        marker(&*registry, &ns);
        let planted = now_ms() + ahead;
        store.plant_marker(&ns, planted);
        let snapshot = registry.read(&ns, &ReadRequest::new(4)).unwrap();
        assert_ne!(
            snapshot.marker_unix_millis,
            Some(planted),
            "{name}: read took a marker of another history for the one in force"
        );
        let after = registry.mark(&ns).unwrap();
        let now = now_ms();
        std::thread::sleep(std::time::Duration::from_millis(
            after.saturating_sub(now) + 1,
        ));
        if now >= planted {
            continue;
        }
        assert!(
            after > planted,
            "{name}: mark replaced a marker of another history, {} ms ahead of the clock, \
             by one {} ms before it, which moved it back: a build could start below fences \
             confirmed under the old one. A new marker is later than the one it replaces: \
             max(now, old + 1)",
            planted - now,
            planted.saturating_sub(after)
        );
        return;
    }
    panic!("{name}: planting a marker and marking over it took over 30 s, three times");
}

/// A marker planted over the one a record was written under (a failover,
/// a restore): every write under the old marker keeps the check its
/// registry declares ([`MarkerCheck`]). See
/// [`a_swap_under_a_deleted_marker_keeps_its_check`] for a store whose
/// marker is an object that can be deleted.
pub fn a_swap_under_a_planted_marker_keeps_its_check(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("step-planted-swap");
    swaps_under_a_replaced_marker(&store, &ns, |marker| {
        store.plant_marker(&ns, marker.max(now_ms()) + 1);
    });
}

/// The marker deleted by hand under a record, and written again by a
/// client that noticed: every write under the old marker keeps the check
/// its registry declares ([`MarkerCheck`]).
pub fn a_swap_under_a_deleted_marker_keeps_its_check(fixture: &dyn Fixture) {
    let store = Store::new(fixture);
    let ns = namespace("step-deleted-swap");
    swaps_under_a_replaced_marker(&store, &ns, |_| store.wipe(Wipe::Marker(&ns)));
}

/// A holder's record under the marker, a second client's read of it, then
/// the marker replaced (`replace`, given the old marker) and a new one
/// written by a third client, as a build that noticed would: the second
/// client's takeover and new record, both under the marker it read, are
/// refused whatever the registry declares; the holder's own renewal too,
/// where it declares [`MarkerCheck::InSwap`].
fn swaps_under_a_replaced_marker(store: &Store<'_>, ns: &str, replace: impl FnOnce(u64)) {
    let name = store.name();
    let holder = store.registry();
    let marker = marker(&*holder, ns);
    let at = |version| Expect {
        marker_unix_millis: marker,
        version,
    };
    assert!(
        holder
            .swap(ns, 0, at(None), &held("a", 41, 1_000))
            .unwrap()
            .is_some(),
        "{name}: swap did not create a record under the marker in force"
    );
    let taker = store.registry();
    let read = taker
        .read(ns, &ReadRequest::new(2).prefer(Some(0)))
        .unwrap();
    assert_eq!(read.marker_unix_millis, Some(marker), "{name}: read");
    replace(marker);
    // A new marker, later than the old by the registry's clock.
    thread::sleep(Duration::from_millis(2));
    let new = store.registry().mark(ns).unwrap();
    assert_ne!(new, marker, "{name}: mark kept a marker that was replaced");

    assert!(
        taker
            .swap(ns, 0, at(Some(41)), &held("b", 42, 2_000))
            .unwrap()
            .is_none(),
        "{name}: swap took a record over under a marker replaced since the taker read it \
         ({marker}, where {new} is in force): a takeover confirms the marker in force, \
         whatever the registry's MarkerCheck"
    );
    assert!(
        taker
            .swap(ns, 1, at(None), &held("b", 43, 2_000))
            .unwrap()
            .is_none(),
        "{name}: swap created a record under a marker replaced since the writer read it \
         ({marker}, where {new} is in force)"
    );
    let renewed = holder
        .swap(ns, 0, at(Some(41)), &held("a", 44, 3_000))
        .unwrap();
    if holder.marker_check() == MarkerCheck::InSwap {
        assert!(
            renewed.is_none(),
            "{name}: swap renewed a record under a marker replaced since it was written \
             ({marker}, where {new} is in force), and the registry declares \
             MarkerCheck::InSwap: check the marker in the write's atomic step, or declare \
             MarkerCheck::ConfirmedFirst and keep its rules"
        );
    }
}

/// A read costs what the registry declares ([`ReadCost`]): from a namespace
/// of 200 held records, a [`ReadCost::Bounded`] read with a full probe
/// returns at most [`ReadCost::BOUND`] of them, and a
/// [`ReadCost::EveryRecord`] read returns all of them, as it fetches them.
pub fn a_read_costs_what_its_registry_declares(fixture: &dyn Fixture) {
    const HELD: u64 = 200;
    let store = Store::new(fixture);
    let name = store.name();
    let registry = store.registry();
    let ns = namespace("step-read-cost");
    let marker = marker(&*registry, &ns);
    for worker in 0..HELD {
        let expect = Expect {
            marker_unix_millis: marker,
            version: None,
        };
        assert!(
            registry
                .swap(&ns, worker, expect, &held("a", 51, 1_000))
                .unwrap()
                .is_some(),
            "{name}: swap did not create record {worker}"
        );
    }
    let request = ReadRequest::new(1024).probe(64..64 + ReadRequest::MAX_PROBE);
    let read = registry.read(&ns, &request).unwrap().records.len();
    match registry.read_cost() {
        ReadCost::Bounded => assert!(
            read <= ReadCost::BOUND,
            "{name}: read returned {read} records of a namespace of {HELD}, and the registry \
             declares ReadCost::Bounded (at most {}): return what an acquisition chooses \
             from, or declare ReadCost::EveryRecord",
            ReadCost::BOUND
        ),
        _ => assert_eq!(
            read, HELD as usize,
            "{name}: read returned {read} records of a namespace of {HELD}, and the registry \
             declares ReadCost::EveryRecord"
        ),
    }
}

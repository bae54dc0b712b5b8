//! The process's generators by layout, worker id and time: one at a time
//! on each, each after the last.
//!
//! Two generators with one layout and worker id, on clocks that tell the
//! same time, could issue the same ID: nothing but the worker id keeps
//! generators apart. Within one process flakegen sees them all, so it
//! keeps them apart itself: a generator takes its seat when it is built
//! and leaves it when it is dropped, with the last tick it handed out. A
//! second generator on a seat taken is refused ([`BuildError::WorkerInUse`]);
//! one on a seat left starts after the last tick issued there, as
//! `resume_after` would have it. Only building and dropping come here:
//! issuing never does.
//!
//! A leased generator takes no seat: its worker id is the registry's to
//! give, and the registry keeps two holders apart.

use alloc::collections::BTreeMap;
use core::cmp::Ordering;

use super::error::BuildError;
use crate::layout::Layout;
use crate::process::Generation;
use crate::sync::{Lock, lock};

/// A layout, a worker id, and the time the generator's clock tells (`None`:
/// the machine's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    layout: Layout,
    worker: u64,
    time: Option<u64>,
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        let parts = |key: &Key| (key.layout.identity(), key.worker, key.time);
        parts(self).cmp(&parts(other))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A seat: taken while a generator lives, and the last tick handed out on it.
#[derive(Debug)]
struct Place {
    taken: bool,
    last_tick: u64,
}

static SEATS: Lock<BTreeMap<Key, Place>> = Lock::new(BTreeMap::new());

/// A generator's seat, which it leaves when dropped (with its last tick;
/// a build that failed leaves it as it found it).
#[derive(Debug)]
pub(crate) struct Seat {
    key: Key,
    /// A forked child's copy of a seat stays taken: the parent still issues
    /// on it.
    generation: Generation,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.leave(0);
    }
}

impl Seat {
    /// Takes the seat of `worker` in `layout` on the time `time`; returns it
    /// with the last tick handed out there before (0: none).
    ///
    /// # Errors
    ///
    /// [`BuildError::WorkerInUse`] when a generator of this process holds it.
    pub(crate) fn take(
        layout: Layout,
        worker: u64,
        time: Option<u64>,
    ) -> Result<(Seat, u64), BuildError> {
        let key = Key {
            layout,
            worker,
            time,
        };
        let mut seats = lock(&SEATS);
        let place = seats.entry(key).or_insert(Place {
            taken: false,
            last_tick: 0,
        });
        if place.taken {
            return Err(BuildError::WorkerInUse { worker });
        }
        place.taken = true;
        let seat = Seat {
            key,
            generation: Generation::now(),
        };
        Ok((seat, place.last_tick))
    }

    /// Records `last_tick` as handed out on the seat, and frees it (it is
    /// freed again, harmlessly, when dropped).
    pub(crate) fn leave(&self, last_tick: u64) {
        if self.generation.is_past() {
            return;
        }
        if let Some(place) = lock(&SEATS).get_mut(&self.key) {
            place.taken = false;
            place.last_tick = place.last_tick.max(last_tick);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seat_is_taken_once_and_left_with_its_last_tick() {
        let layout = Layout::SONYFLAKE;
        let (seat, last) = Seat::take(layout, 77, Some(u64::MAX)).unwrap();
        assert_eq!(last, 0);
        assert!(matches!(
            Seat::take(layout, 77, Some(u64::MAX)),
            Err(BuildError::WorkerInUse { worker: 77 })
        ));
        // Another time, or another worker: another seat.
        let (other, _) = Seat::take(layout, 77, Some(u64::MAX - 1)).unwrap();
        other.leave(5);
        seat.leave(1_000);
        drop(seat);
        let (again, last) = Seat::take(layout, 77, Some(u64::MAX)).unwrap();
        assert_eq!(last, 1_000);
        again.leave(3);
        drop(again);
        assert_eq!(Seat::take(layout, 77, Some(u64::MAX)).unwrap().1, 1_000);
    }
}

//! Which claim a generator issues under, and the one way to move to the next.
//!
//! A leased generator that heals moves to a new claim: a new lease, on its
//! old worker id or another. Calls read the claim in force once, at their
//! start, and judge and compose their ticks with it alone (see
//! [`Claim`]); what this file keeps is the order that makes that safe:
//!
//! 1. the tick counter is moved past every tick the new claim may not
//!    issue, and past the unit of every tick handed out so far
//!    (`Raw::advance`);
//! 2. only then is the new claim published, with `Release`;
//! 3. a call loads the claim with `Acquire` *before* it reserves a tick.
//!
//! So a call that sees the new claim reserves after step 1, and its ticks
//! are the new claim's to issue, in a later unit than any ID issued before
//! (IDs keep increasing though the worker field changed). A call that
//! loaded an older claim judges its ticks by that claim's fence, which was
//! confirmed for that claim's worker, and composes with that worker: an ID
//! it was always allowed to issue. Ticks come from one counter, so no tick
//! is handed out twice, whichever claim a call read.
//!
//! A call may still hold an older claim while a newer one is installed, so
//! no claim is freed before the generator: each heal keeps one small
//! allocation until then.

#![allow(unsafe_code)]

use alloc::sync::Arc;
#[cfg(feature = "std")]
use alloc::vec::Vec;

use crate::lease::Claim;
use crate::sync::{AtomicPtr, Ordering};
#[cfg(feature = "std")]
use crate::sync::{Lock, lock};

/// The claim in force, and every claim that ever was.
pub(crate) struct Claims {
    /// Points into `kept`: the claim calls issue under.
    current: AtomicPtr<Claim>,
    #[cfg(feature = "std")]
    kept: Lock<Kept>,
    /// Without `std` there is no lease, and no claim after the first: it
    /// is kept here, never read, owning what `current` points to.
    #[cfg(not(feature = "std"))]
    #[allow(dead_code)]
    first: Arc<Claim>,
}

#[cfg(feature = "std")]
struct Kept {
    claims: Vec<Arc<Claim>>,
    /// The generator shut down: no claim is installed any more.
    shut: bool,
}

impl Claims {
    pub(crate) fn new(first: Arc<Claim>) -> Claims {
        Claims {
            current: AtomicPtr::new(Arc::as_ptr(&first).cast_mut()),
            #[cfg(feature = "std")]
            kept: Lock::new(Kept {
                claims: alloc::vec![first],
                shut: false,
            }),
            #[cfg(not(feature = "std"))]
            first,
        }
    }

    /// The claim in force. Load it before reserving ticks (step 3).
    #[inline]
    pub(crate) fn current(&self) -> &Claim {
        // Acquire: pairs with the Release in `install`, so that the counter's
        // move past the new claim's predecessor comes before this caller's
        // reservation (a plain load on x86).
        let claim = self.current.load(Ordering::Acquire);
        // SAFETY: `current` only ever holds a pointer from `Arc::as_ptr` of a
        // claim in `kept`, which keeps every claim it was given until `self`
        // is dropped; the reference cannot outlive `&self`.
        unsafe { &*claim }
    }

    /// Makes `next` the claim in force, after `advance` moved the tick
    /// counter past what it may not issue (steps 1 and 2); returns it. `None`
    /// once the generator shut down: nothing is installed, nothing moved.
    #[cfg(feature = "std")]
    pub(crate) fn install(&self, next: Arc<Claim>, advance: impl FnOnce(&Claim)) -> Option<&Claim> {
        let mut kept = lock(&self.kept);
        if kept.shut {
            return None;
        }
        let pointer = Arc::as_ptr(&next).cast_mut();
        if !core::ptr::eq(self.current.load(Ordering::Relaxed), pointer) {
            advance(&next);
            kept.claims.push(next);
            // Release: see `current`.
            self.current.store(pointer, Ordering::Release);
        }
        // SAFETY: as in `current`: `next` is in `kept` now.
        Some(unsafe { &*pointer })
    }

    /// Installs nothing from now on; returns the claim in force, the last.
    #[cfg(feature = "std")]
    pub(crate) fn shut(&self) -> &Claim {
        lock(&self.kept).shut = true;
        self.current()
    }
}

/// The order above, modelled: a claim installed while callers reserve.
/// `RUSTFLAGS="--cfg loom" cargo test --release --lib claims`
#[cfg(all(test, loom))]
mod loom_model {
    use std::sync::Arc;

    use loom::thread;

    use super::Claims;
    use crate::generator::state::{TickCounter, TickRules};
    use crate::layout::Layout;
    use crate::lease::Claim;

    /// 1 ms units from 1970, 4 ticks each: ms and units are one.
    const LAYOUT: Layout = Layout::builder()
        .timestamp_bits(41)
        .worker_bits(4)
        .sequence_bits(2)
        .epoch_unix_millis(0)
        .build_const();

    /// One call: the claim first, then a tick; issued if below the claim's
    /// cap, given back if not. Returns the claim's worker and the tick.
    fn call(claims: &Claims, counter: &TickCounter) -> Option<(u64, u64)> {
        let claim = claims.current();
        let tick = counter.take(1, LAYOUT.max_tick()).unwrap();
        if tick < claim.cap() {
            Some((claim.worker(), tick))
        } else {
            counter.give_back(tick, tick);
            None
        }
    }

    #[test]
    fn no_call_mixes_one_claims_worker_with_another_claims_ticks() {
        loom::model(|| {
            // Worker 1 up to its fence at unit 2; then worker 2 from unit 1
            // (its predecessor's fence) to unit 10.
            let first = Arc::new(Claim::leased(&LAYOUT, 1, 0, 2));
            let next = Arc::new(Claim::leased(&LAYOUT, 2, 1, 10));
            let (first_range, next_range) =
                ((first.last(), first.cap()), (next.last(), next.cap()));
            let rules = TickRules::new(LAYOUT, u64::MAX);
            let claims = Arc::new(Claims::new(first));
            let counter = Arc::new(TickCounter::new(0));
            let callers: Vec<_> = (0..2)
                .map(|_| {
                    let (claims, counter) = (Arc::clone(&claims), Arc::clone(&counter));
                    thread::spawn(move || [call(&claims, &counter), call(&claims, &counter)])
                })
                .collect();
            claims.install(next, |next| counter.advance(&rules, next.last()));
            let issued: Vec<(u64, u64)> = callers
                .into_iter()
                .flat_map(|c| c.join().unwrap())
                .flatten()
                .chain(call(&claims, &counter))
                .collect();
            for &(worker, tick) in &issued {
                let (last, cap) = if worker == 1 { first_range } else { next_range };
                assert!(
                    last < tick && tick < cap,
                    "worker {worker}, tick {tick}: {issued:?}"
                );
            }
            let mut ticks: Vec<u64> = issued.iter().map(|i| i.1).collect();
            ticks.sort_unstable();
            ticks.dedup();
            assert_eq!(ticks.len(), issued.len(), "a tick twice: {issued:?}");
        });
    }
}

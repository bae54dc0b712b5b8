//! A value handed from the lease's thread to whoever waits for it: the
//! acquisition to a build, the release's outcome to a shutdown.
//!
//! Waited for by blocking (with a deadline) or by polling from async code,
//! so the same handoff serves `build` and `build_async` without a runtime of
//! its own.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
#[cfg(feature = "tokio")]
use std::task::{Context, Poll};
use std::time::Instant;

/// One value, filled once.
pub(crate) struct Slot<T> {
    state: Mutex<State<T>>,
    filled: Condvar,
}

struct State<T> {
    value: Option<T>,
    /// Filled, or the sender gave up without a value.
    done: bool,
    wakers: Vec<Waker>,
}

impl<T> Slot<T> {
    pub(crate) fn new() -> Slot<T> {
        Slot {
            state: Mutex::new(State {
                value: None,
                done: false,
                wakers: Vec::new(),
            }),
            filled: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Every update leaves the state whole: a panic elsewhere cannot tear it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `value` over, to whoever waits now or later.
    pub(crate) fn fill(&self, value: T) {
        let mut state = self.lock();
        state.value = Some(value);
        self.finish(state);
    }

    /// Says that no value will come.
    pub(crate) fn close(&self) {
        let state = self.lock();
        if !state.done {
            self.finish(state);
        }
    }

    fn finish(&self, mut state: MutexGuard<'_, State<T>>) {
        state.done = true;
        let wakers = std::mem::take(&mut state.wakers);
        drop(state);
        self.filled.notify_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Blocks until the slot is done or `deadline` passes (`None`: no
    /// deadline); then `read` sees the value, if any. `None` on time-out.
    pub(crate) fn wait<R>(
        &self,
        deadline: Option<Instant>,
        read: impl FnOnce(&mut Option<T>) -> R,
    ) -> Option<R> {
        let mut state = self.lock();
        while !state.done {
            state = match deadline {
                None => self
                    .filled
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let left = deadline.checked_duration_since(Instant::now())?;
                    self.filled
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
        Some(read(&mut state.value))
    }

    /// [`wait`](Self::wait) for async code: ready once the slot is done.
    #[cfg(feature = "tokio")]
    pub(crate) fn poll<R>(
        &self,
        cx: &mut Context<'_>,
        read: impl FnOnce(&mut Option<T>) -> R,
    ) -> Poll<R> {
        let mut state = self.lock();
        if state.done {
            return Poll::Ready(read(&mut state.value));
        }
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// Ends a slot's wait when its sender goes without filling it, by return
/// or by panic: nobody waits for a thread that is gone.
pub(crate) struct Done<'a, T>(pub(crate) &'a Slot<T>);

impl<T> Drop for Done<'_, T> {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn a_value_reaches_a_blocked_waiter() {
        let slot = Arc::new(Slot::new());
        let sender = Arc::clone(&slot);
        let thread = thread::spawn(move || sender.fill(7));
        assert_eq!(slot.wait(None, Option::take), Some(Some(7)));
        thread.join().unwrap();
    }

    #[test]
    fn a_wait_gives_up_at_its_deadline_and_a_close_ends_it() {
        let slot = Slot::<u8>::new();
        let soon = Instant::now() + Duration::from_millis(5);
        assert_eq!(slot.wait(Some(soon), Option::take), None);
        slot.close();
        assert_eq!(slot.wait(None, Option::take), Some(None));
    }
}

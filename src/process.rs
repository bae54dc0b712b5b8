//! Which copy of the process this is: a forked child is a new one.
//!
//! After `fork` the child holds a copy of every generator the parent built:
//! the same worker id, the same lease and fence, the same last tick. Both
//! would issue the same IDs. So every claim a generator issues under
//! remembers the process [`Generation`] it was made in, and the generator
//! compares the two at the start of each call: a claim of another
//! generation is the parent's, and the child refuses it
//! ([`IssueError::Copied`](crate::IssueError::Copied)).
//!
//! The generation is a counter that a `pthread_atfork` child handler bumps,
//! registered before the first claim is made, so the check costs one load
//! of a value no thread writes, never a system call (`getpid` is one).
//!
//! What it cannot see: a copy made without `fork` (`clone` called directly,
//! a snapshot of the process or of its VM restored). A restored copy is
//! told by its restore hook, which disowns the claims in force ([`Owner`]),
//! so that they refuse as a fork's would. On targets without `fork`
//! (Windows, wasm) a process is copied only by a snapshot, and the
//! generation never moves.

#![allow(unsafe_code)]

// Not loom's: no model forks, and a static needs a const constructor.
#[cfg(feature = "std")]
use crate::sync::plain::AtomicPtr;
use crate::sync::plain::{AtomicU64, Ordering};

/// The process's generation: 0 in the process that started, one more in
/// each forked child than in its parent.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The process generation something was made in: in a forked child,
/// everything made before the fork is of a past generation, the parent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Generation(u64);

impl Generation {
    /// This process's generation, forks watched from now on.
    pub(crate) fn now() -> Generation {
        imp::watch();
        Generation(current())
    }

    /// Whether this is a generation before this process's: what was made
    /// then belongs to an ancestor, and a child may not use it, nor wait on
    /// it (a lock the parent held at the fork is held forever here).
    #[inline]
    pub(crate) fn is_past(self) -> bool {
        self.0 != current()
    }
}

/// Whose something is, as [`Generation`] tells it, but which a restored
/// copy can also disown: a claim, which no copy issues under once the
/// process learns that it was restored from a snapshot.
pub(crate) struct Owner(AtomicU64);

/// No process's generation: what a disowned thing belongs to.
const NOBODY: u64 = u64::MAX;

impl Owner {
    /// Owned by this process, as it is now.
    pub(crate) fn now() -> Owner {
        Owner(AtomicU64::new(Generation::now().0))
    }

    /// Whether it is not this process's: made before a fork, or disowned.
    #[inline]
    pub(crate) fn is_other(&self) -> bool {
        // Relaxed: see `current`; a disowning caller orders its own calls.
        self.0.load(Ordering::Relaxed) != current()
    }

    /// Belongs to no process from now on.
    pub(crate) fn disown(&self) {
        // Relaxed: see `is_other`.
        self.0.store(NOBODY, Ordering::Relaxed);
    }
}

#[inline]
fn current() -> u64 {
    // Relaxed: written only by the fork's child handler, which runs in the
    // child before any other code there, on the only thread the child has.
    GENERATION.load(Ordering::Relaxed)
}

/// A value made at most once in each copy of the process: a forked child
/// makes its own, and never uses or waits on its parent's (a lock the
/// parent held at the fork would be held forever in the child).
#[cfg(feature = "std")]
pub(crate) struct PerCopy<T: 'static> {
    /// The value of the copy that made it last, leaked: an older copy's
    /// may still be in use there, and a child's copy of it is never freed.
    made: AtomicPtr<Made<T>>,
    /// One more than the generation whose value is being made; 0: none.
    making: AtomicU64,
}

#[cfg(feature = "std")]
struct Made<T> {
    generation: Generation,
    value: T,
}

#[cfg(feature = "std")]
impl<T: Send + Sync + 'static> PerCopy<T> {
    pub(crate) const fn new() -> PerCopy<T> {
        PerCopy {
            made: AtomicPtr::new(core::ptr::null_mut()),
            making: AtomicU64::new(0),
        }
    }

    /// This copy's value, made now by `make` if it has none: by one
    /// thread, which the others wait for. An error is returned to the
    /// thread that made it, and the next call tries again.
    ///
    /// # Errors
    ///
    /// `make`'s.
    pub(crate) fn get_or_try_make<E>(
        &self,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<&'static T, E> {
        let generation = Generation::now();
        loop {
            if let Some(value) = self.get(generation) {
                return Ok(value);
            }
            let mine = generation.0 + 1;
            let making = self.making.load(Ordering::Acquire);
            // A making of a past generation was the parent's: its thread is
            // not here to finish it.
            let free = making != mine;
            if free
                && self
                    .making
                    .compare_exchange(making, mine, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                let made = make().map(|value| {
                    let made: &'static Made<T> = Box::leak(Box::new(Made { generation, value }));
                    // Release: publishes the value to `get`'s Acquire.
                    self.made
                        .store(core::ptr::from_ref(made).cast_mut(), Ordering::Release);
                    &made.value
                });
                self.making.store(0, Ordering::Release);
                return made;
            }
            // Another thread of this copy makes it: a build, bounded by its
            // own timeouts.
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn get(&self, generation: Generation) -> Option<&'static T> {
        // Acquire: pairs with the Release that published it.
        let made = self.made.load(Ordering::Acquire);
        // SAFETY: `made` is null or a `Box::leak` of `get_or_try_make`'s,
        // never freed nor written through: the reference is 'static.
        let made = unsafe { made.as_ref() }?;
        (made.generation == generation).then_some(&made.value)
    }

    /// This copy's value, if it made one.
    pub(crate) fn get_here(&self) -> Option<&'static T> {
        self.get(Generation::now())
    }
}

#[cfg(all(unix, not(loom)))]
mod imp {
    use super::{AtomicU64, Ordering};

    /// Runs in the child after `fork`, before `fork` returns there, on
    /// the child's only thread: an atomic add is async-signal-safe.
    extern "C" fn forked() {
        super::GENERATION.fetch_add(1, Ordering::Relaxed);
    }

    const UNWATCHED: u64 = 0;
    const REGISTERING: u64 = 1;
    const WATCHING: u64 = 2;

    /// Registers the child handler, once per process (a forked child
    /// inherits it); a caller that finds it being registered waits until
    /// it is, so that no claim is made before forks are watched. (A `Once`
    /// without `std`: a few atomics.)
    pub(super) fn watch() {
        static STATE: AtomicU64 = AtomicU64::new(UNWATCHED);
        // Acquire: pairs with the Release below.
        if STATE.load(Ordering::Acquire) == WATCHING {
            return;
        }
        match STATE.compare_exchange(UNWATCHED, REGISTERING, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                // SAFETY: pthread_atfork takes three optional function
                // pointers with C linkage and no arguments, and keeps them
                // for the process's life; `forked` is one and touches only
                // an atomic.
                let rc = unsafe { libc::pthread_atfork(None, None, Some(forked)) };
                // It fails only without memory for the handler (ENOMEM): a
                // child would then go unseen, which no caller could handle
                // better than by stopping here. The next caller tries again
                // rather than wait for a registration that never comes.
                if rc != 0 {
                    STATE.store(UNWATCHED, Ordering::Release);
                    panic!("pthread_atfork failed: out of memory");
                }
                STATE.store(WATCHING, Ordering::Release);
            }
            // Registered by another thread a moment ago, or being: one
            // call, never blocked.
            Err(_) => {
                while STATE.load(Ordering::Acquire) != WATCHING {
                    core::hint::spin_loop();
                }
            }
        }
    }
}

#[cfg(any(not(unix), loom))]
mod imp {
    /// Nothing to watch: no `fork` here (or loom's model, which has none).
    pub(super) fn watch() {}
}

#[cfg(all(test, unix, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_is_a_new_generation_and_the_parent_is_not() {
        let before = Generation::now();
        // SAFETY: the child calls only async-signal-safe functions (an
        // atomic load, `_exit`) before it exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = if before.is_past() && current() == before.0 + 1 {
                0
            } else {
                1
            };
            // SAFETY: ends the child at once, running nothing of the parent's.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked, writing only `status`.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid);
        assert!(libc::WIFEXITED(status), "the child did not exit: {status}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "the child saw no new generation"
        );
        assert!(!before.is_past(), "the parent's generation moved");
    }
}

//! How long a registry call may take. By default [`DEFAULT_TIMEOUT`]; the
//! lease's thread gives its calls a shorter bound where it needs the answer
//! sooner: a renewal must land before the fence, so a call on a connection
//! that went dead without a word is given up in time for a retry on a new
//! one to land too. The bound travels with the thread that makes the call,
//! so that the storage steps' signatures stay about storage.

use std::cell::Cell;
use std::time::Duration;

/// The longest one request on an open connection may take, and the least
/// a new connection's set-up is given: public as
/// [`Lease::DEFAULT_TIMEOUT`](crate::lease::Lease::DEFAULT_TIMEOUT).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long each call may take, by whether it reuses an open connection
/// or opens one: a reused one that does not answer is likely dead, and is
/// given up sooner than a new one, which has a handshake to make (and, for
/// some stores, a login): several round trips, which a registry far away
/// pays in full. A reused one's at most [`DEFAULT_TIMEOUT`]; a new one's as
/// the lease's terms allow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    pub(crate) reused: Duration,
    pub(crate) fresh: Duration,
}

thread_local! {
    static BUDGET: Cell<Option<Budget>> = const { Cell::new(None) };
    /// Whether a call within the budget gave up an open connection.
    static GAVE_UP_OPEN: Cell<bool> = const { Cell::new(false) };
}

/// Runs `call` with its registry calls bounded by `budget`.
pub(crate) fn within<T>(budget: Budget, call: impl FnOnce() -> T) -> T {
    within_noting(budget, call).0
}

/// As [`within`], and whether a call within it (at any depth) gave up an
/// open connection that did not answer in time: one on a new connection
/// may well succeed at once.
pub(crate) fn within_noting<T>(budget: Budget, call: impl FnOnce() -> T) -> (T, bool) {
    /// Puts the enclosing budget back however `call` ends, by a panic too:
    /// a bound left behind would cut short every later call on the thread.
    struct Restore {
        before: Option<Budget>,
        noted: bool,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET.set(self.before);
            // An enclosing budget's calls include this one's.
            GAVE_UP_OPEN.set(self.noted || GAVE_UP_OPEN.get());
        }
    }
    let restore = Restore {
        before: BUDGET.replace(Some(budget)),
        noted: GAVE_UP_OPEN.replace(false),
    };
    let result = call();
    let gave_up = GAVE_UP_OPEN.get();
    drop(restore);
    (result, gave_up)
}

/// Notes that a call gave up an open connection (see [`within_noting`]).
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
pub(crate) fn gave_up_open() {
    GAVE_UP_OPEN.set(true);
}

/// How long the next registry call on this thread may take: on an open
/// connection (`fresh` false) or on one it opens.
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
pub(crate) fn timeout(fresh: bool) -> Duration {
    let Some(budget) = BUDGET.get() else {
        return DEFAULT_TIMEOUT;
    };
    let each = if fresh {
        budget.fresh
    } else {
        budget.reused.min(DEFAULT_TIMEOUT)
    };
    each.max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_bounds_the_calls_made_within_it_and_no_other() {
        assert_eq!(timeout(false), DEFAULT_TIMEOUT);
        let budget = Budget {
            reused: Duration::from_millis(200),
            fresh: Duration::from_secs(60),
        };
        within(budget, || {
            assert_eq!(timeout(false), Duration::from_millis(200));
            // A set-up far away takes what the terms give it.
            assert_eq!(timeout(true), Duration::from_secs(60));
        });
        assert_eq!(timeout(false), DEFAULT_TIMEOUT);
        let spent = Budget {
            reused: Duration::ZERO,
            fresh: Duration::ZERO,
        };
        within(spent, || {
            assert_eq!(timeout(true), Duration::from_millis(1))
        });
    }

    #[test]
    fn a_call_that_panics_leaves_no_budget_behind() {
        let budget = Budget {
            reused: Duration::from_millis(200),
            fresh: Duration::from_millis(300),
        };
        let unwound = std::panic::catch_unwind(|| within(budget, || panic!("a call panicked")));
        assert!(unwound.is_err());
        assert_eq!(
            timeout(false),
            DEFAULT_TIMEOUT,
            "the budget outlived its call"
        );
        assert_eq!(timeout(true), DEFAULT_TIMEOUT);
    }

    #[test]
    fn a_connection_given_up_is_noted_by_the_budgets_around_it_only() {
        let budget = Budget {
            reused: Duration::from_millis(200),
            fresh: Duration::from_secs(1),
        };
        let ((), outer) = within_noting(budget, || {
            let ((), inner) = within_noting(budget, gave_up_open);
            assert!(inner);
        });
        assert!(
            outer,
            "an enclosing budget missed what a call within it gave up"
        );
        let ((), after) = within_noting(budget, || {
            within_noting(budget, || ());
        });
        assert!(!after, "noted in a budget after the one that gave it up");
        assert!(!within_noting(budget, || ()).1);
    }
}

//! The lease contract of [`flakegen`] as a test suite, to run over a
//! worker-id registry of your own.
//!
//! A [`Registry`] is three storage steps (`read`, `mark`, `swap`), and the
//! contract that makes leased IDs unique rests on each of them: a swap that
//! writes over a newer record, or under a marker that is no longer in
//! force, a marker earlier than the loss it follows, a fence that reaches
//! past the terms, and two live holders share an id. The rules are stated
//! in [`flakegen::lease`]; this crate is the suite that checks them, the one
//! flakegen runs over its own registries: memory, MySQL or MariaDB,
//! PostgreSQL, Redis, etcd and Kubernetes. Some rules call a storage step directly and name the step
//! and the promise it broke ("swap wrote under a stale marker"); the others
//! lease, issue and heal as services do, and check the IDs.
//!
//! Give the suite a [`Fixture`]: your registry, and the faults the suite
//! puts it through (its data lost, or deleted by hand; with capabilities,
//! its server frozen or failed over to a replica). [`suite!`] writes one `#[test]` per rule in
//! the module it is called in:
//!
//! ```
//! use std::sync::Arc;
//!
//! use flakegen::lease::MemoryRegistry;
//! use flakegen::lease::backend::Registry;
//! use flakegen_contract::{Fixture, Wipe};
//!
//! /// Stands for your registry, with a way to lose its data.
//! struct Memory(MemoryRegistry);
//!
//! impl Fixture for Memory {
//!     fn name(&self) -> &str {
//!         "memory"
//!     }
//!     fn registry(&self) -> Arc<dyn Registry> {
//!         Arc::new(self.0.clone())
//!     }
//!     fn lose_data(&self) {
//!         self.0.lose_data();
//!     }
//!     fn wipe(&self, wipe: Wipe<'_>) {
//!         match wipe {
//!             Wipe::Everything => self.0.lose_data(),
//!             Wipe::Namespace(namespace) => self.0.delete_namespace(namespace),
//!             Wipe::Record(namespace, worker) => self.0.delete_record(namespace, worker),
//!             _ => unreachable!("the kinds of wipe this suite knows"),
//!         }
//!     }
//! }
//!
//! // In tests/contract.rs: `cargo test --test contract` runs every rule of
//! // the storage steps and of leasing, and those of `Inspect` (the
//! // capabilities after the fixture: `freeze`, `failover`, `inspect`,
//! // `plant`, `marker`).
//! flakegen_contract::suite!(Memory(MemoryRegistry::new()), inspect);
//! # fn main() {}
//! ```
//!
//! Where stores differ, a registry declares which it is, and the rules
//! keyed to it hold it to that, not skip it. A store without a clock of its
//! own (etcd) says so ([`Registry::time_base`]): the rules that need a
//! server's clock are restated for it; its times must then be the calling
//! host's clock itself, and the skew check compares a generator's clock with
//! its host's. A store that compares one object at a time
//! ([`Registry::marker_check`]) is held to confirming the marker before
//! every write but its holder's own; one whose read fetches every record
//! ([`Registry::read_cost`]) to returning them, and every other to
//! returning few.
//!
//! Each of the suite's tests runs in namespaces of its own, with a 300 ms
//! TTL. Those that keep to their namespaces run side by side; those that
//! reach the whole server (a loss, a wipe of everything, a marker planted,
//! a freeze, a failover) run alone: a suite takes about a minute. A registry on a real server should run it
//! against that server, with faults the server really has: `TRUNCATE`, a
//! restart without persistence, `SIGSTOP`, a replica promoted. A registry
//! that only passes against a mock has passed nothing.
//!
//! With the `tokio` feature the suite adds the rules of leases inside tokio
//! runtimes: builds, drops and shutdowns on both flavours, which may neither
//! panic, block a runtime's thread, nor keep an id they let go.

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use flakegen::lease::backend::Registry;

#[doc(hidden)]
pub mod failover;
#[cfg(feature = "tokio")]
mod heartbeat;
#[cfg(feature = "tokio")]
#[doc(hidden)]
pub mod in_tokio;
mod reach;
#[doc(hidden)]
pub mod rules;
#[doc(hidden)]
pub mod steps;
mod store;
#[doc(hidden)]
pub mod support;
#[doc(hidden)]
pub mod wipes;

/// A registry under test, and the faults the suite puts it through.
///
/// A fixture serves one suite, whose tests call it from several threads
/// at once: deleting one namespace's data while another test writes its
/// own, for one. A fault that reaches the whole server (a loss, a wipe of
/// everything, a marker planted, a freeze, a failover) comes while no other
/// test runs.
pub trait Fixture: Send + Sync {
    /// The name the suite's messages give this registry.
    fn name(&self) -> &str;

    /// A registry client, as a new process would connect one: the suite
    /// asks for one per lease and per record it reads or writes itself.
    fn registry(&self) -> Arc<dyn Registry>;

    /// Loses every record and marker the registry holds, as its server's
    /// real losses do: `TRUNCATE` on a table, a restart without persistence.
    ///
    /// Returns once the loss happened; clients connected before it must
    /// see it (on their next call or after reconnecting), as they would in
    /// production.
    fn lose_data(&self);

    /// Deletes data of the registry's by hand, as an operator or a script
    /// would, with the server's own tools (`FLUSHALL`, `DROP TABLE`,
    /// `DELETE`, `etcdctl del`), not through the registry: see [`Wipe`].
    /// Returns once the data is gone; clients connected before must see it
    /// on their next call.
    fn wipe(&self, wipe: Wipe<'_>);

    /// Stops the registry's server from answering, without closing its
    /// connections (`SIGSTOP`), until the guard is dropped; `None` if this
    /// fixture cannot (then leave `freeze` out of [`suite!`]'s capabilities).
    fn freeze(&self) -> Option<Frozen> {
        None
    }

    /// Replaces `namespace`'s marker by one of another history (another
    /// server's, an older copy's), dated `marker_unix_millis`, with the
    /// server's own tools: what a failover to a server whose clock runs
    /// ahead leaves, or a restore. Returns `false` if this fixture cannot
    /// (then leave `plant` out of [`suite!`]'s capabilities).
    fn plant_marker(&self, namespace: &str, marker_unix_millis: u64) -> bool {
        let _ = (namespace, marker_unix_millis);
        false
    }

    /// The registry's server with a replica that a failover promotes;
    /// `None` if this fixture has none (then leave `failover` out of
    /// [`suite!`]'s capabilities).
    fn failover(&self) -> Option<&dyn Failover> {
        None
    }
}

/// What [`Fixture::wipe`] deletes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wipe<'a> {
    /// Everything of flakegen's in the registry's store: every namespace's
    /// records and markers, and whatever else the registry keeps there (a
    /// `FLUSHALL`, both tables dropped, the key prefix deleted).
    Everything,
    /// Everything of one namespace: its records, its marker, its indexes.
    Namespace(&'a str),
    /// One id's record in a namespace, and nothing else.
    Record(&'a str, u64),
    /// A namespace's marker alone, its records kept: the row, key or
    /// object of the marker deleted by hand. Only the suites of fixtures
    /// with the capability `marker` ask for it.
    Marker(&'a str),
}

/// A registry whose server has a replica, and the failover that promotes
/// it: what [`Fixture::failover`] returns.
///
/// The failover rules cut replication, let holders renew on the primary
/// (the replica misses it), then promote the replica. However it is done,
/// every client must follow the failover, those connected before it too,
/// as they would behind an address that moves to the new primary.
pub trait Failover: Send + Sync {
    /// Stops replication to the replica: from now on it misses every
    /// write, as a replica that lags does. Returns once it does.
    fn cut(&self);

    /// The primary stops, and the replica is promoted: it takes writes, and
    /// every client reaches it from now on. Returns once it does.
    fn promote(&self);

    /// Makes the pair whole again for the next rule: a replica of the new
    /// primary, replicating. The primary stays where it is.
    fn rejoin(&self);
}

/// A frozen registry server, thawed when this is dropped: what
/// [`Fixture::freeze`] returns.
pub struct Frozen {
    thaw: Option<Box<dyn FnOnce() + Send>>,
}

impl Frozen {
    /// A freeze that `thaw` ends.
    pub fn new(thaw: impl FnOnce() + Send + 'static) -> Self {
        Frozen {
            thaw: Some(Box::new(thaw)),
        }
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        if let Some(thaw) = self.thaw.take() {
            thaw();
        }
    }
}

impl std::fmt::Debug for Frozen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Frozen")
    }
}

/// Writes the contract suite over a [`Fixture`]: one `#[test]` per rule,
/// in the module it is called in.
///
/// ```text
/// flakegen_contract::suite!(fixture);                            // the rules every registry keeps
/// flakegen_contract::suite!(fixture, freeze, failover, inspect, plant, marker); // and those of its capabilities
/// ```
///
/// The capabilities: `freeze` (the fixture can stop its server answering:
/// [`Fixture::freeze`]), `failover` (it has a replica to promote:
/// [`Fixture::failover`]), `inspect` (the registry shows an operator its
/// records: [`Registry::inspect`](flakegen::lease::backend::Registry::inspect)),
/// `plant` (it can plant a marker of another history: [`Fixture::plant_marker`]),
/// `marker` (its marker can be deleted under a holder and written again:
/// [`Wipe::Marker`], for a store that compares one object at a time).
/// A capability named is a promise: its rules fail if the fixture cannot
/// keep it.
///
/// The fixture expression is evaluated once, by the first test that runs.
/// The tests of one call that keep to their namespaces run side by side,
/// as many as the test harness runs threads; those that reach the whole
/// server run alone. Call it once per module.
#[macro_export]
macro_rules! suite {
    ($fixture:expr $(, $capability:ident)* $(,)?) => {
        static __FLAKEGEN_CONTRACT_SUITE: $crate::__private::Suite = $crate::__private::Suite::new();

        fn __flakegen_contract_fixture() -> ::std::boxed::Box<dyn $crate::Fixture> {
            ::std::boxed::Box::new($fixture)
        }

        // The rules of reach `Namespace` run side by side; those of reach
        // `Server` (they lose every record, delete everything of
        // flakegen's, plant a marker, freeze the server or fail it over)
        // one at a time, alone. Each reach has a module: the test harness
        // runs tests in the order of their names, and a server rule among
        // namespace rules would keep them from pairing up.
        mod namespace {
            use super::{__FLAKEGEN_CONTRACT_SUITE, __flakegen_contract_fixture};

            $crate::__tests!(steps, Namespace:
                swap_writes_only_at_the_version_it_names,
                swap_says_when_it_wrote_by_the_servers_clock,
                read_returns_what_an_acquisition_chooses_from,
                a_read_costs_what_its_registry_declares,
                a_mark_after_a_wipe_is_no_earlier_than_the_wipe,
            );
            $crate::__tests!(rules, Namespace:
                each_generator_gets_its_own_id_until_all_are_held,
                builds_racing_in_a_new_namespace_each_get_an_id,
                a_released_id_is_taken_over_at_once_above_the_last_id,
                a_restarted_generator_takes_back_the_id_it_released,
                a_shutdown_racing_callers_lowers_the_fence_above_every_id_issued,
                an_expired_lease_is_taken_over_at_or_after_its_fence,
                a_fence_beyond_max_wait_is_an_error_and_the_id_is_given_back,
                a_renewal_never_lowers_a_fence_nor_extends_one_beyond_the_ttl,
                a_fence_inside_a_unit_starts_the_successor_at_the_next_unit,
                a_refusal_at_the_fence_consumes_nothing,
                a_healthy_lease_is_never_refused,
                a_holder_whose_clock_is_ahead_beyond_the_skew_is_refused,
                a_slow_build_renews_before_it_returns,
                bad_terms_get_clear_errors,
                a_displaced_holder_heals_onto_a_free_id_and_writes_nothing_back,
            );
            $crate::__tests!(wipes, Namespace:
                a_wipe_of_a_namespace_issues_no_id_twice,
                a_wipe_of_a_record_issues_no_id_twice,
                every_id_can_be_leased_again_after_a_wipe,
                a_record_gone_far_below_the_mark_is_leased_again,
                a_prepared_namespace_starts_at_once,
                a_namespace_prepared_after_a_wipe_issues_no_id_twice,
            );
            $crate::__if_tokio!(in_tokio, Namespace:
                a_build_and_a_drop_inside_a_runtime_neither_panic_nor_keep_the_id,
                a_cancelled_build_gives_its_lease_back,
                a_build_that_waits_for_a_fence_leaves_the_runtime_beating,
            );
            $( $crate::__capability!(Namespace, $capability); )*
        }

        mod server {
            use super::{__FLAKEGEN_CONTRACT_SUITE, __flakegen_contract_fixture};

            $crate::__tests!(steps, Server:
                swap_writes_only_under_the_marker_in_force,
                mark_keeps_the_marker_in_force_and_never_moves_it_back,
            );
            $crate::__tests!(rules, Server:
                a_lost_lease_runs_to_its_fence_and_is_never_taken_back,
                a_displaced_holder_neither_resurrects_nor_lowers_after_a_loss,
                two_losses_within_a_ttl_keep_holders_apart,
                a_loss_fences_a_holder_whose_clock_is_ahead_within_the_skew,
                the_marker_is_no_earlier_than_the_loss,
                a_build_right_after_a_loss_waits_for_its_fence,
                generators_that_lose_their_registry_issue_again_without_a_rebuild,
                a_healing_holder_and_a_new_build_race_for_one_id,
                a_healed_generator_issues_nothing_below_its_new_start,
                a_release_after_a_heal_lowers_only_the_new_lease,
            );
            $crate::__tests!(wipes, Server:
                a_wipe_of_everything_issues_no_id_twice,
                every_id_can_be_leased_again_after_a_wipe_of_everything,
            );
            $( $crate::__capability!(Server, $capability); )*
        }
    };
}

/// A capability's rules of one reach.
#[doc(hidden)]
#[macro_export]
macro_rules! __capability {
    (Server, freeze) => {
        $crate::__tests!(rules, Server:
            a_frozen_registry_costs_the_timeout_and_lease_says_why,
        );
        $crate::__if_tokio!(in_tokio, Server:
            a_drop_with_the_registry_frozen_returns_at_once,
        );
    };
    (Server, failover) => {
        $crate::__tests!(failover, Server:
            a_failover_to_a_lagging_replica_grants_no_id_below_a_confirmed_fence,
            a_namespace_begun_after_the_replicas_last_sync_is_no_new_one_after_a_failover,
            a_failover_is_a_loss_though_the_replica_missed_nothing,
        );
    };
    (Server, inspect) => {
        $crate::__tests!(rules, Server:
            a_listing_shows_every_record_and_the_marker,
        );
    };
    // Planted, a marker ahead of the clock may reach past its namespace:
    // etcd's next marker in any namespace follows the last one given.
    (Server, plant) => {
        $crate::__tests!(steps, Server:
            a_marker_replaced_is_never_moved_back,
            a_swap_under_a_planted_marker_keeps_its_check,
        );
    };
    (Namespace, marker) => {
        $crate::__tests!(steps, Namespace:
            a_swap_under_a_deleted_marker_keeps_its_check,
        );
        $crate::__tests!(wipes, Namespace:
            a_marker_deleted_under_its_holder_issues_no_id_twice,
        );
    };
    (Namespace, freeze) => {};
    (Namespace, failover) => {};
    (Namespace, inspect) => {};
    (Namespace, plant) => {};
    (Server, marker) => {};
    (Server, $other:ident) => {
        compile_error!(concat!(
            "no capability `", stringify!($other), "`: use freeze, failover, inspect, plant or marker"
        ));
    };
    (Namespace, $other:ident) => {};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __tests {
    ($module:ident, $reach:ident: $($rule:ident),* $(,)?) => {
        $(
            #[test]
            fn $rule() {
                __FLAKEGEN_CONTRACT_SUITE.run(
                    __flakegen_contract_fixture,
                    $crate::$module::$rule,
                    $crate::__private::Reach::$reach,
                );
            }
        )*
    };
}

// The suite's tokio rules exist when this crate's `tokio` feature is on,
// whatever the features of the crate that calls `suite!`.
#[cfg(feature = "tokio")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_tokio {
    ($($tests:tt)*) => {
        $crate::__tests!($($tests)*);
    };
}

#[cfg(not(feature = "tokio"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_tokio {
    ($($tests:tt)*) => {};
}

#[doc(hidden)]
pub mod __private {
    use super::*;
    pub use crate::reach::Reach;
    use crate::reach::Within;

    /// One `suite!` call's fixture, built by its first test, and the lock
    /// that lets its namespace rules run side by side and its server rules
    /// alone.
    #[allow(missing_debug_implementations)]
    pub struct Suite {
        fixture: OnceLock<Box<dyn Fixture>>,
        rules: RwLock<()>,
    }

    impl Suite {
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Self {
            Suite {
                fixture: OnceLock::new(),
                rules: RwLock::new(()),
            }
        }

        pub fn run(&self, fixture: fn() -> Box<dyn Fixture>, rule: fn(&dyn Fixture), reach: Reach) {
            let fixture = &**self.fixture.get_or_init(fixture);
            let within = Within { fixture, reach };
            // A failed rule must not fail the ones after it.
            match reach {
                Reach::Namespace => {
                    let _beside = self.rules.read().unwrap_or_else(PoisonError::into_inner);
                    rule(&within);
                }
                Reach::Server => {
                    let _alone = self.rules.write().unwrap_or_else(PoisonError::into_inner);
                    rule(&within);
                }
            }
        }
    }
}

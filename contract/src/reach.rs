//! What of the registry's server a rule reaches, which decides what may
//! run beside it: rules in namespaces of their own run side by side, and a
//! rule that reaches the whole server runs alone.

use std::sync::Arc;

use flakegen::lease::backend::Registry;

use crate::{Failover, Fixture, Frozen, Wipe};

/// What of the registry's server a rule reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Namespaces of its own: it runs beside the fixture's other rules of
    /// this reach.
    Namespace,
    /// The whole server: it loses every record, deletes everything of
    /// flakegen's, plants a marker, freezes the server or fails it over.
    /// It runs alone.
    Server,
}

/// The fixture as a rule of `reach` sees it: a fault that reaches the
/// whole server fails a rule declared to keep to its namespaces, which
/// would otherwise break the rules running beside it, by chance and far
/// from the cause.
pub(crate) struct Within<'a> {
    pub(crate) fixture: &'a dyn Fixture,
    pub(crate) reach: Reach,
}

impl Within<'_> {
    fn reaches_the_server(&self, fault: &str) {
        assert!(
            self.reach == Reach::Server,
            "{}: this rule {fault}, which reaches the whole server, and it is listed among \
             suite!'s namespace rules, which run side by side: list it among the server rules",
            self.fixture.name()
        );
    }
}

impl Fixture for Within<'_> {
    fn name(&self) -> &str {
        self.fixture.name()
    }

    fn registry(&self) -> Arc<dyn Registry> {
        self.fixture.registry()
    }

    fn lose_data(&self) {
        self.reaches_the_server("loses the registry's data");
        self.fixture.lose_data();
    }

    fn wipe(&self, wipe: Wipe<'_>) {
        if wipe == Wipe::Everything {
            self.reaches_the_server("wipes everything of flakegen's");
        }
        self.fixture.wipe(wipe);
    }

    fn freeze(&self) -> Option<Frozen> {
        self.reaches_the_server("freezes the server");
        self.fixture.freeze()
    }

    fn plant_marker(&self, namespace: &str, marker_unix_millis: u64) -> bool {
        // A marker ahead of the clock may reach past its namespace: etcd's
        // next marker, in any namespace, follows the last one it gave.
        self.reaches_the_server("plants a marker");
        self.fixture.plant_marker(namespace, marker_unix_millis)
    }

    fn failover(&self) -> Option<&dyn Failover> {
        self.reaches_the_server("fails the server over");
        self.fixture.failover()
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use flakegen::lease::MemoryRegistry;

    use super::*;
    use crate::__private::Suite;

    /// The faults that reached the fixture.
    static FAULTS: AtomicUsize = AtomicUsize::new(0);

    /// Counts the faults that reach it.
    struct Counting;

    impl Fixture for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn registry(&self) -> Arc<dyn Registry> {
            Arc::new(MemoryRegistry::new())
        }
        fn lose_data(&self) {
            FAULTS.fetch_add(1, Ordering::Relaxed);
        }
        fn wipe(&self, _: Wipe<'_>) {
            FAULTS.fetch_add(1, Ordering::Relaxed);
        }
        fn freeze(&self) -> Option<Frozen> {
            FAULTS.fetch_add(1, Ordering::Relaxed);
            Some(Frozen::new(|| {}))
        }
        fn plant_marker(&self, _: &str, _: u64) -> bool {
            FAULTS.fetch_add(1, Ordering::Relaxed);
            true
        }
    }

    /// A rule listed among the namespace rules that reaches the whole
    /// server fails before the fault reaches the fixture; listed among the
    /// server rules, it runs. Less than the whole server is any rule's.
    #[test]
    fn a_namespace_rule_that_reaches_the_server_fails_before_the_fault() {
        static SUITE: Suite = Suite::new();
        let faults: [fn(&dyn Fixture); 4] = [
            |f| f.lose_data(),
            |f| f.wipe(Wipe::Everything),
            |f| drop(f.freeze()),
            |f| assert!(f.plant_marker("ns", 1)),
        ];
        for fault in faults {
            let run = |reach| {
                catch_unwind(AssertUnwindSafe(|| {
                    SUITE.run(|| Box::new(Counting), fault, reach)
                }))
            };
            let before = FAULTS.load(Ordering::Relaxed);
            let refused = run(Reach::Namespace).expect_err("a namespace rule reached the server");
            let message = refused.downcast_ref::<String>().expect("a message");
            assert!(
                message.contains("list it among the server rules"),
                "{message}"
            );
            assert_eq!(FAULTS.load(Ordering::Relaxed), before);
            run(Reach::Server).expect("a server rule may");
            assert_eq!(FAULTS.load(Ordering::Relaxed), before + 1);
        }
        let before = FAULTS.load(Ordering::Relaxed);
        let namespace_wipes: fn(&dyn Fixture) = |f| {
            f.wipe(Wipe::Namespace("ns"));
            f.wipe(Wipe::Record("ns", 0));
        };
        SUITE.run(|| Box::new(Counting), namespace_wipes, Reach::Namespace);
        assert_eq!(FAULTS.load(Ordering::Relaxed), before + 2);
    }
}

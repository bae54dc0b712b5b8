//! The lease's `tracing` events: one per change of state, each with the
//! namespace, the worker and the fence, under target `flakegen::lease`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use flakegen::lease::{Lease, MemoryRegistry};
use flakegen::{Builder, IdGenerator, Layout};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Dispatch, Event, Level, Metadata, Subscriber};

/// An event as a subscriber saw it.
#[derive(Clone, Debug)]
struct Seen {
    level: Level,
    target: String,
    message: String,
    fields: BTreeMap<String, String>,
}

/// A subscriber that keeps every event.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

impl Recorder {
    fn count(&self, message: &str) -> usize {
        let seen = self.0.lock().unwrap();
        seen.iter()
            .filter(|e| e.message.starts_with(message))
            .count()
    }

    /// Waits (bounded) until `message` has been seen `times` times.
    fn wait_for(&self, message: &str, times: usize) {
        let give_up = Instant::now() + Duration::from_secs(5);
        while self.count(message) < times {
            assert!(
                Instant::now() < give_up,
                "never saw {message:?} {times} times: {:#?}",
                self.0.lock().unwrap()
            );
            thread::sleep(Duration::from_millis(5));
        }
    }
}

struct Fields<'a>(&'a mut Seen);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let value = format!("{value:?}");
        if field.name() == "message" {
            self.0.message = value;
        } else {
            self.0.fields.insert(field.name().to_owned(), value);
        }
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        let mut seen = Seen {
            level: *metadata.level(),
            target: metadata.target().to_owned(),
            message: String::new(),
            fields: BTreeMap::new(),
        };
        event.record(&mut Fields(&mut seen));
        self.0.lock().unwrap().push(seen);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

const ONE: Layout = Layout::builder().worker_bits(0).build_const();

fn lease(registry: &MemoryRegistry, namespace: &str) -> Lease {
    Lease::new(registry.clone(), namespace)
        .ttl(Duration::from_millis(300))
        .renew_every(Duration::from_millis(50))
        .skew(Duration::from_millis(100))
}

#[test]
fn each_change_of_a_lease_is_one_event() {
    let recorder = Recorder::default();
    let dispatch = Dispatch::new(recorder.clone());
    let registry = MemoryRegistry::new();
    // The lease's thread reports where the build's events go.
    let generator = tracing::dispatcher::with_default(&dispatch, || {
        Builder::new()
            .layout(ONE)
            .lease(lease(&registry, "events"))
            .build_atomic()
            .unwrap()
    });
    recorder.wait_for("lease acquired", 1);

    // An outage long enough to reach the fence: said once each, however
    // many renewals fail.
    registry.set_reachable(false);
    recorder.wait_for("lease fence reached", 1);
    thread::sleep(Duration::from_millis(150));
    registry.set_reachable(true);
    recorder.wait_for("lease recovered", 1);
    generator.next_id().unwrap();

    // The registry loses its data: the next renewal finds the lease gone,
    // and the lease's thread leases the id again; the generator issues
    // again once the new lease's IDs may start.
    registry.lose_data();
    recorder.wait_for("lease lost", 1);
    recorder.wait_for("lease reacquired", 1);
    let again = std::time::Instant::now() + Duration::from_secs(3);
    while generator.next_id().is_err() {
        assert!(std::time::Instant::now() < again, "never issued again");
        thread::sleep(Duration::from_millis(10));
    }
    // Said when the new lease's IDs could start.
    recorder.wait_for("lease issuing again", 1);
    drop(generator);
    recorder.wait_for("lease released", 1);

    // With re-acquiring off, a loss is final: said once, and the fence.
    let once = MemoryRegistry::new();
    let generator = tracing::dispatcher::with_default(&dispatch, || {
        Builder::new()
            .layout(ONE)
            .lease(lease(&once, "events").reacquire(false))
            .build_atomic()
            .unwrap()
    });
    once.lose_data();
    recorder.wait_for("lease lost", 2);
    recorder.wait_for("lease fence reached", 2);
    thread::sleep(Duration::from_millis(150));
    drop(generator);

    // A generator that shuts down says it released its lease.
    let other = MemoryRegistry::new();
    let generator = tracing::dispatcher::with_default(&dispatch, || {
        Builder::new()
            .layout(ONE)
            .lease(lease(&other, "events"))
            .build_mutex()
            .unwrap()
    });
    generator.next_id().unwrap();
    generator.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    recorder.wait_for("lease released", 2);

    let counts: Vec<_> = [
        "lease acquired",
        "lease renewals failing",
        "lease fence reached",
        "lease recovered",
        "lease lost",
        "lease reacquired",
        "lease issuing again",
        "lease reacquisition failing",
        "lease released",
        "lease not released",
    ]
    .into_iter()
    .map(|m| (m, recorder.count(m)))
    .collect();
    assert_eq!(
        counts,
        [
            ("lease acquired", 3),
            ("lease renewals failing", 1),
            ("lease fence reached", 2),
            ("lease recovered", 1),
            ("lease lost", 2),
            ("lease reacquired", 1),
            ("lease issuing again", 1),
            ("lease reacquisition failing", 0),
            ("lease released", 2),
            // Dropped after its loss: nothing of its own to release.
            ("lease not released", 0),
        ]
    );
    for event in recorder.0.lock().unwrap().iter() {
        assert_eq!(event.target, "flakegen::lease", "{event:?}");
        for field in ["namespace", "worker", "fence_unix_millis"] {
            assert!(event.fields.contains_key(field), "{field}: {event:?}");
        }
        let trouble = [
            "renewals failing",
            "reacquisition failing",
            "fence reached",
            "lost",
        ];
        if trouble
            .iter()
            .any(|t| event.message.starts_with(&format!("lease {t}")))
        {
            assert!(event.level <= Level::WARN, "{event:?}");
        }
        // Each says what the generator does now, and until when, as a
        // person reads a time (RFC 3339 and its age), never raw ms.
        assert!(!event.message.contains("unix ms"), "{event:?}");
        if event.message.starts_with("lease lost") {
            assert!(
                event.message.contains("issues up to its fence (20"),
                "{event:?}"
            );
        }
        if event.message.starts_with("lease reacquired") {
            assert!(
                event.message.contains("its IDs start at 20")
                    || event.message.contains("issues again"),
                "{event:?}"
            );
        }
        // Only an event about a failure carries the error, and it always does.
        let failed = [
            "renewals failing",
            "lost",
            "reacquisition failing",
            "not released",
        ]
        .iter()
        .any(|m| event.message.starts_with(&format!("lease {m}")));
        assert_eq!(event.fields.contains_key("error"), failed, "{event:?}");
    }
}

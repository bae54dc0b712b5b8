//! The library's lease events on stderr as they happen, one line each: what
//! a build waits for, and why, is said when the wait begins, not after it.
//! Only the message is shown: it says its times as a person reads them,
//! where the event's fields carry them as numbers for machines.

use std::sync::atomic::{AtomicU64, Ordering};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Prints `flakegen::lease` events at `info` and above.
struct Stderr {
    next_span: AtomicU64,
}

/// The message of an event.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.0);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Stderr {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("flakegen") && *metadata.level() <= Level::INFO
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        // Relaxed: only uniqueness matters; ids start at 1 (0 is not one).
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut message = Message::default();
        event.record(&mut message);
        let level = event.metadata().level().as_str().to_ascii_lowercase();
        eprintln!("{level}: {}", message.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Shows the library's events from now on, for this process.
pub(crate) fn show() {
    let subscriber = Stderr {
        next_span: AtomicU64::new(0),
    };
    // Set once, by the one command that leases: nothing to do if set.
    let _ = tracing::subscriber::set_global_default(subscriber);
}

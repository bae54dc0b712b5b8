//! A helper's file: the lease events it writes, as the lease's thread says them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::{Arc, Mutex};

use crate::helper::real_nanos;

pub(crate) type Out = Arc<Mutex<BufWriter<File>>>;

/// Writes a `lease` line for each lease acquired, as the lease's thread
/// says it: by a build ("lease acquired") or by healing ("lease
/// reacquired"); and a `fence` line for each lease lost.
pub(crate) struct Leases(pub(crate) Out);

pub(crate) struct Fields {
    pub(crate) message: String,
    pub(crate) worker: u64,
    pub(crate) starts: u64,
    pub(crate) fence: u64,
}

impl tracing::field::Visit for Fields {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        match field.name() {
            "worker" => self.worker = value,
            "starts_unix_millis" => self.starts = value,
            "fence_unix_millis" => self.fence = value,
            _ => {}
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Leases {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == "flakegen::lease"
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields {
            message: String::new(),
            worker: 0,
            starts: 0,
            fence: 0,
        };
        event.record(&mut fields);
        if fields.message.starts_with("lease lost") {
            // A lost lease's last confirmed fence: the generator's
            // status shows the newest lease, not this one, from now on.
            let mut out = self.0.lock().unwrap();
            let _ = writeln!(
                out,
                "fence {} {} {}",
                fields.worker, fields.starts, fields.fence
            );
            let _ = out.flush();
        } else if fields.message.starts_with("lease acquired")
            || fields.message.starts_with("lease reacquired")
        {
            let mut out = self.0.lock().unwrap();
            let _ = writeln!(
                out,
                "lease {} {} {} {}",
                fields.worker,
                fields.starts,
                fields.fence,
                real_nanos()
            );
            let _ = out.flush();
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

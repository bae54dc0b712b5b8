//! What the protocol's tests share: terms, records and snapshots.

use super::terms::Terms;
use crate::lease::backend::{Record, Snapshot};

pub(crate) fn terms() -> Terms<'static> {
    Terms {
        namespace: "n",
        workers: 4,
        ttl_millis: 10_000,
        skew_millis: 2_000,
        wait_out_rollbacks: false,
    }
}

pub(crate) fn record(
    worker: u64,
    holder: &str,
    expires_unix_millis: u64,
    fence_unix_millis: u64,
) -> Record {
    Record {
        worker,
        holder: holder.to_owned(),
        version: 7 + worker,
        marker_unix_millis: 100,
        expires_unix_millis,
        fence_unix_millis,
    }
}

/// A registry's read of `records` (all of them) under marker 100, with
/// a high-water mark past the highest, read at 1 000.
pub(crate) fn snapshot(records: Vec<Record>) -> Snapshot {
    let high_water = records.iter().map(|r| r.worker + 1).max().unwrap_or(0);
    Snapshot {
        server_unix_millis: 1_000,
        marker_unix_millis: Some(100),
        records,
        high_water,
    }
}

/// The ids below `snapshot`'s high-water mark with no record under its
/// marker: what a probe of all of them finds.
pub(crate) fn gone(snapshot: &Snapshot) -> Vec<u64> {
    (0..snapshot.high_water)
        .filter(|&w| {
            !snapshot
                .records
                .iter()
                .any(|r| w == r.worker && Some(r.marker_unix_millis) == snapshot.marker_unix_millis)
        })
        .collect()
}

pub(crate) fn relic_at(worker: u64, fence_unix_millis: u64) -> Record {
    Record {
        marker_unix_millis: 50,
        ..record(worker, "a", 0, fence_unix_millis)
    }
}

pub(crate) fn now_ms() -> u64 {
    crate::clock::units::unix_millis(std::time::SystemTime::now())
}

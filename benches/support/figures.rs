//! What the verdict reads of a whole run: the reports' JSON files and
//! Criterion's estimates, under `target/criterion`.

use std::fs;
use std::path::Path;
use std::time::Duration;

use flakegen_benches::verdict::{Figures, Measured};
use serde_json::Value;

fn read(path: &Path) -> Option<Value> {
    serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
}

/// The row of `rows` (an array of objects with an `id`) named `id`.
fn row<'a>(rows: &'a Value, id: &str) -> Option<&'a Value> {
    rows.as_array()?.iter().find(|r| r["id"] == id)
}

/// Criterion's median, in ns, of the benchmark `full_id`, looked for under
/// `dir` (its `new/benchmark.json` names it).
fn criterion_median(dir: &Path, full_id: &str) -> Option<f64> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).ok()?.flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            if path.file_name().is_some_and(|n| n == "new") {
                let named = read(&path.join("benchmark.json"));
                if named.is_some_and(|b| b["full_id"] == full_id) {
                    return read(&path.join("estimates.json"))?["median"]["point_estimate"]
                        .as_f64();
                }
            } else {
                stack.push(path);
            }
        }
    }
    None
}

/// The figures of the run whose reports are in `dir`, each of the latency
/// report's cases `window` long; `None` where a report is missing.
pub(crate) fn gather(dir: &Path, window: Duration) -> Option<Figures> {
    let environment = read(&dir.join("environment.json"))?;
    let floor = read(&dir.join("floor.json"))?;
    let cpu = read(&dir.join("cpu_per_wall.json"))?;
    let latency = read(&dir.join("latency.json"))?;
    let ns = |id: &str| row(&floor, id)?["ns_per_call"].as_f64();
    let strategies = ["atomic", "mutex", "ticker"]
        .into_iter()
        .filter_map(|strategy| {
            let saturated = row(&cpu, &format!("{strategy}/system/2"));
            Some(Measured {
                strategy,
                one_thread_ns: ns(&format!("{strategy}/system"))?,
                two_threads_ns: criterion_median(
                    &dir.join("mechanism"),
                    &format!("mechanism/{strategy}/system/2"),
                ),
                cap_share: saturated.and_then(|r| r["fraction_of_cap"].as_f64()),
                cores: saturated.and_then(|r| r["cores"].as_f64()),
                p99_9_ns: row(&latency, &format!("{strategy}/below_cap/1"))
                    .and_then(|r| r["p99_9_ns"].as_u64()),
            })
        })
        .collect();
    let cases = latency.as_array().map_or(0, Vec::len);
    let stolen: Option<u64> = latency
        .as_array()?
        .iter()
        .map(|r| r["steal_ms"].as_u64())
        .sum();
    let steal_share = stolen
        .filter(|_| cases > 0)
        .map(|ms| ms as f64 / (cases as f64 * window.as_secs_f64() * 1e3));
    Some(Figures {
        clock_ns: environment["vdso_clock_gettime_ns"].as_f64()?,
        tsc_ns: ns("clock/tsc"),
        atomic_tsc_ns: ns("atomic/tsc"),
        cores: environment["logical_cores"]
            .as_u64()
            .map_or(1, |n| n as usize),
        steal_share,
        strategies,
    })
}

//! What the `metrics` feature reports, through a recorder of the test's
//! own: the lease's state and events, refusals by kind, waits by cause.
//! Run with `cargo test --features metrics --test metrics`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use flakegen::clock::ManualClock;
use flakegen::lease::{Lease, LeaseState, MemoryRegistry};
use flakegen::{Builder, IdGenerator, IssueError, Layout};
use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

/// Every series, by name and labels (`name{k=v,...}`).
#[derive(Default)]
struct Series {
    /// Each metric's help, as described.
    helps: Mutex<BTreeMap<String, String>>,
    counters: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    gauges: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    histograms: Mutex<BTreeMap<String, Arc<Samples>>>,
}

#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().unwrap().push(value);
    }
}

fn series_name(key: &Key) -> String {
    let mut labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

struct Recording(&'static Series);

impl Recorder for Recording {
    fn describe_counter(&self, name: KeyName, _: Option<Unit>, help: SharedString) {
        let mut helps = self.0.helps.lock().unwrap();
        helps.insert(name.as_str().to_owned(), help.into_owned());
    }
    fn describe_gauge(&self, name: KeyName, _: Option<Unit>, help: SharedString) {
        let mut helps = self.0.helps.lock().unwrap();
        helps.insert(name.as_str().to_owned(), help.into_owned());
    }
    fn describe_histogram(&self, name: KeyName, _: Option<Unit>, help: SharedString) {
        let mut helps = self.0.helps.lock().unwrap();
        helps.insert(name.as_str().to_owned(), help.into_owned());
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut counters = self.0.counters.lock().unwrap();
        Counter::from_arc(Arc::clone(counters.entry(series_name(key)).or_default()))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let mut gauges = self.0.gauges.lock().unwrap();
        Gauge::from_arc(Arc::clone(gauges.entry(series_name(key)).or_default()))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let mut histograms = self.0.histograms.lock().unwrap();
        Histogram::from_arc(Arc::clone(histograms.entry(series_name(key)).or_default()))
    }
}

/// The recorder, installed once for the test binary; and the lock that
/// runs its tests one at a time (refusals and waits are not per namespace).
fn recorded() -> (&'static Series, MutexGuard<'static, ()>) {
    static SERIES: OnceLock<&'static Series> = OnceLock::new();
    static SERIAL: Mutex<()> = Mutex::new(());
    let series = *SERIES.get_or_init(|| {
        let series: &'static Series = Box::leak(Box::default());
        metrics::set_global_recorder(Recording(series)).unwrap();
        series
    });
    (series, SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

impl Series {
    fn counter(&self, name: &str) -> u64 {
        let counters = self.counters.lock().unwrap();
        counters.get(name).map_or(0, |c| c.load(Ordering::Relaxed))
    }
    fn gauge(&self, name: &str) -> Option<f64> {
        let gauges = self.gauges.lock().unwrap();
        gauges
            .get(name)
            .map(|g| f64::from_bits(g.load(Ordering::Relaxed)))
    }
    fn samples(&self, name: &str) -> Vec<f64> {
        let histograms = self.histograms.lock().unwrap();
        histograms
            .get(name)
            .map_or(vec![], |h| h.0.lock().unwrap().clone())
    }
}

fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn state(series: &Series, namespace: &str, state: &str) -> Option<f64> {
    series.gauge(&format!(
        "flakegen_lease_state{{namespace={namespace},state={state}}}"
    ))
}

#[test]
fn a_lease_reports_its_state_renewals_loss_heal_and_release() {
    let (series, _serial) = recorded();
    let memory = MemoryRegistry::new();
    let ns = "metrics-lease";
    let lease = Lease::new(memory.clone(), ns)
        .ttl(Duration::from_millis(300))
        .renew_every(Duration::from_millis(50))
        .skew(Duration::from_millis(100));
    let g = Builder::new()
        .layout(Layout::builder().worker_bits(2).build_const())
        .lease(lease)
        .build_atomic()
        .unwrap();
    assert_eq!(state(series, ns, "held"), Some(1.0));
    assert_eq!(state(series, ns, "lost"), Some(0.0));
    let worker = series.gauge(&format!("flakegen_lease_worker{{namespace={ns}}}"));
    assert_eq!(worker, Some(g.worker() as f64));
    let renewals = format!("flakegen_lease_renewal_seconds{{namespace={ns}}}");
    eventually("two renewals", || series.samples(&renewals).len() >= 2);
    assert!(
        series
            .samples(&renewals)
            .iter()
            .all(|&s| (0.0..1.0).contains(&s))
    );
    let lead = series
        .gauge(&format!(
            "flakegen_lease_fence_lead_seconds{{namespace={ns}}}"
        ))
        .unwrap();
    assert!(
        (0.2..=0.3).contains(&lead),
        "a fence leads by about the TTL: {lead}"
    );

    memory.lose_data();
    eventually("the loss and the heal", || {
        series.counter(&format!("flakegen_lease_losses_total{{namespace={ns}}}")) == 1
            && series.counter(&format!(
                "flakegen_lease_reacquisitions_total{{namespace={ns}}}"
            )) == 1
            && g.lease().unwrap().state == LeaseState::Held
    });
    assert_eq!(state(series, ns, "held"), Some(1.0));
    assert_eq!(state(series, ns, "reacquiring"), Some(0.0));

    memory.set_reachable(false);
    eventually("a failed renewal", || {
        series.counter(&format!(
            "flakegen_lease_renewals_failed_total{{namespace={ns}}}"
        )) >= 1
    });
    assert_eq!(state(series, ns, "renewing"), Some(1.0));
    memory.set_reachable(true);
    eventually("the lease back", || state(series, ns, "held") == Some(1.0));

    g.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    assert_eq!(state(series, ns, "released"), Some(1.0));
    assert_eq!(state(series, ns, "held"), Some(0.0));
    assert_eq!(
        series.counter(&format!("flakegen_lease_releases_total{{namespace={ns}}}")),
        1
    );
}

#[test]
fn refusals_are_counted_by_kind_and_waits_by_cause() {
    let (series, _serial) = recorded();
    // A generator without a lease: its namespace label is empty.
    let refusals = |kind: &str| {
        series.counter(&format!(
            "flakegen_refusals_total{{kind={kind},namespace=}}"
        ))
    };
    let waits = |cause: &str| {
        series.samples(&format!(
            "flakegen_wait_seconds{{cause={cause},namespace=}}"
        ))
    };
    let (would_block, behind, unit) = (
        refusals("would_block"),
        refusals("clock_behind"),
        waits("unit").len(),
    );

    // 4 IDs per 1 ms unit, on a clock that stands still: the fifth waits
    // for the next unit, which never comes.
    let narrow = Layout::builder()
        .worker_bits(0)
        .sequence_bits(2)
        .build_const();
    let clock = ManualClock::from_unix_millis(1_704_067_200_000);
    let g = Builder::new()
        .worker(0)
        .layout(narrow)
        .clock(clock.clone())
        .max_wait(Duration::from_millis(20))
        .build_atomic()
        .unwrap();
    for _ in 0..4 {
        g.next_id().unwrap();
    }
    assert!(matches!(
        g.try_next_id(),
        Err(IssueError::WouldBlock { .. })
    ));
    assert_eq!(refusals("would_block"), would_block + 1);
    assert!(matches!(g.next_id(), Err(IssueError::ClockBehind { .. })));
    assert_eq!(refusals("clock_behind"), behind + 1);
    let waited = waits("unit");
    assert_eq!(waited.len(), unit + 1, "the wait that gave up is one wait");
    assert!(*waited.last().unwrap() >= 0.015, "{waited:?}");

    // On a clock that moves, a used-up unit costs a short wait, counted;
    // the calls that did not wait are not.
    let g = Builder::new()
        .worker(0)
        .layout(narrow)
        .build_atomic()
        .unwrap();
    let before = waits("unit").len();
    let mut ids = [flakegen::Snowflake::default(); 4];
    for _ in 0..10 {
        g.next_ids(&mut ids).unwrap();
    }
    let after = waits("unit").len();
    assert!(
        (before + 1..=before + 10).contains(&after),
        "{before} -> {after}"
    );
}

/// Every metric says what it is (an exporter's `# HELP` line), every
/// series carries the namespace, and a refusal of a leased generator is
/// counted under its lease's.
#[test]
fn every_metric_is_described_and_labelled_with_its_namespace() {
    let (series, _serial) = recorded();
    let ns = "metrics-labels";
    let lease = Lease::new(MemoryRegistry::new(), ns)
        .ttl(Duration::from_millis(300))
        .renew_every(Duration::from_millis(50))
        .skew(Duration::from_millis(100));
    let g = Builder::new()
        .layout(
            Layout::builder()
                .worker_bits(0)
                .sequence_bits(2)
                .build_const(),
        )
        .lease(lease)
        .max_wait(Duration::from_millis(1))
        .build_atomic()
        .unwrap();
    g.next_id().unwrap();
    g.shutdown().wait(Lease::DEFAULT_TIMEOUT).unwrap();
    assert!(matches!(g.next_id(), Err(IssueError::ShutDown)));
    assert_eq!(
        series.counter(&format!(
            "flakegen_refusals_total{{kind=shut_down,namespace={ns}}}"
        )),
        1
    );
    let helps = series.helps.lock().unwrap();
    for name in [
        "flakegen_lease_state",
        "flakegen_lease_worker",
        "flakegen_lease_fence_lead_seconds",
        "flakegen_lease_renewal_seconds",
        "flakegen_lease_renewals_failed_total",
        "flakegen_lease_losses_total",
        "flakegen_lease_reacquisitions_total",
        "flakegen_lease_releases_total",
        "flakegen_refusals_total",
        "flakegen_wait_seconds",
    ] {
        let help = helps
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not described"));
        assert!(help.len() > 20, "{name}: {help}");
    }
    drop(helps);
    for names in [
        series
            .counters
            .lock()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>(),
        series.gauges.lock().unwrap().keys().cloned().collect(),
        series.histograms.lock().unwrap().keys().cloned().collect(),
    ] {
        for name in names {
            assert!(name.contains("namespace="), "{name} has no namespace label");
        }
    }
}

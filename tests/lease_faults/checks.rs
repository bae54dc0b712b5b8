//! The checks at the end of a run: every ID, every heal, every refusal.

use flakegen::{Layout, Snowflake};

use crate::faults::{Target, heal_bound, terms};
use crate::scenario::{Fault, Group, Helper, Lease, Process};

/// One namespace's IDs: no duplicates, no interleaving holders of one
/// id, nothing past its lease's fence or before its start.
pub(crate) fn check(context: &str, layout: &Layout, processes: &[&Process]) {
    let mut all: Vec<u64> = processes
        .iter()
        .flat_map(|p| p.leases.iter().flat_map(|l| l.ids.iter().map(|i| i.0)))
        .chain(processes.iter().flat_map(|p| p.orphans.iter().copied()))
        .collect();
    all.sort_unstable();
    let duplicates = all.windows(2).filter(|w| w[0] == w[1]).count();
    let before_start: usize = processes.iter().map(|p| p.orphans.len()).sum();

    // The leases of one worker id, each as the range of its IDs, must
    // not overlap. The fences promise exactly this, whatever the clocks read.
    let mut interleavings = 0;
    let mut takeovers = 0;
    for worker in 0..=layout.max_worker() {
        let mut ranges: Vec<(u64, u64, usize)> = processes
            .iter()
            .enumerate()
            .flat_map(|(p, process)| process.leases.iter().map(move |l| (p, l)))
            .filter(|(_, l)| l.worker == worker && !l.ids.is_empty())
            .map(|(p, l)| {
                let first = l.ids.iter().map(|i| i.0).min().unwrap();
                (first, l.ids.iter().map(|i| i.0).max().unwrap(), p)
            })
            .collect();
        ranges.sort_unstable();
        for pair in ranges.windows(2) {
            if pair[0].1 >= pair[1].0 {
                interleavings += 1;
                eprintln!(
                    "{context}: worker {worker}: processes {} and {} interleave",
                    pair[0].2, pair[1].2
                );
            }
        }
        takeovers += ranges.windows(2).filter(|w| w[0].2 != w[1].2).count();
    }

    let mut past_fence = 0;
    for lease in processes.iter().flat_map(|p| &p.leases) {
        for &(id, _) in &lease.ids {
            let fields = layout.decode(Snowflake::from_u64(id)).unwrap();
            if layout.unix_millis_of(fields.timestamp) >= lease.fence_unix_millis {
                past_fence += 1;
            }
        }
    }
    let leases: Vec<&Lease> = processes.iter().flat_map(|p| &p.leases).collect();
    println!(
        "  {context}: {} processes, {} IDs, {} leases, {} takeovers; {duplicates} \
         duplicates, {interleavings} interleavings, {past_fence} past the fence, \
         {before_start} before their start",
        processes.len(),
        all.len(),
        leases.len(),
        takeovers,
    );
    assert_eq!(duplicates, 0, "{context}: {duplicates} duplicate IDs");
    assert_eq!(interleavings, 0, "{context}: {interleavings} interleavings");
    assert_eq!(
        past_fence, 0,
        "{context}: {past_fence} IDs past their fence"
    );
    assert_eq!(
        before_start, 0,
        "{context}: {before_start} IDs before their start"
    );
}

/// After every loss that no other fault followed within the heal bound
/// ([`heal_bound`]), each healing helper that ran throughout,
/// unpaused, issued an ID under a lease acquired after the loss began,
/// within the bound.
pub(crate) fn heal_check(
    target: &Target,
    helpers: &[Helper],
    processes: &[Process],
    faults: &[Fault],
    ended_ns: u128,
) {
    let bound = heal_bound(target).as_nanos();
    // How long each healing helper took to issue again, by the loss's kind.
    let mut took_ms: Vec<(&str, u128)> = Vec::new();
    for loss in faults.iter().filter(|f| f.loss) {
        let window = loss.end_ns..=loss.end_ns + bound;
        if *window.end() > ended_ns {
            continue;
        }
        let disturbed = faults
            .iter()
            .any(|f| !std::ptr::eq(f, loss) && f.helper.is_none() && window.contains(&f.start_ns));
        if disturbed {
            continue;
        }
        for (index, (helper, process)) in helpers.iter().zip(processes).enumerate() {
            // Paused across the loss or its window, or killed before the
            // window ended: a kill after it leaves this heal to be timed.
            let interrupted = faults.iter().any(|f| {
                f.helper == Some(index)
                    && f.start_ns <= *window.end()
                    && (f.end_ns >= loss.start_ns || f.kind == "holder killed")
            });
            if helper.group != Group::Healing || interrupted || helper.started_ns >= loss.start_ns {
                continue;
            }
            let again = process
                .leases
                .iter()
                .filter(|l| l.acquired_ns > loss.start_ns)
                .flat_map(|l| &l.ids)
                .map(|&(_, at)| at)
                .filter(|&at| at > loss.end_ns)
                .min();
            let Some(at) = again else {
                panic!(
                    "{}: healing helper {index} never issued again after the {} ending \
                     at {}",
                    target.server.name, loss.kind, loss.end_ns
                );
            };
            let took = at - loss.end_ns;
            assert!(
                took <= bound,
                "{}: healing helper {index} issued again {} ms after the {}, past {} ms",
                target.server.name,
                took / 1_000_000,
                loss.kind,
                bound / 1_000_000
            );
            took_ms.push((loss.kind, took / 1_000_000));
        }
    }
    let said = |took: &mut Vec<u128>| {
        took.sort_unstable();
        let at = |q: usize| took[(took.len() - 1) * q / 100];
        format!(
            "{} heals, median {} ms, 90th percentile {} ms, longest {} ms",
            took.len(),
            at(50),
            at(90),
            at(100)
        )
    };
    let mut all: Vec<u128> = took_ms.iter().map(|&(_, t)| t).collect();
    if all.is_empty() {
        println!("  {}/healing: no heal to check", target.server.name);
        return;
    }
    println!(
        "  {}/healing, from a loss to issuing again (bound {} ms): {}",
        target.server.name,
        bound / 1_000_000,
        said(&mut all)
    );
    let mut kinds: Vec<&str> = took_ms.iter().map(|&(kind, _)| kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for kind in kinds {
        let mut took: Vec<u128> = took_ms
            .iter()
            .filter(|&&(k, _)| k == kind)
            .map(|&(_, t)| t)
            .collect();
        println!("    after {kind}: {}", said(&mut took));
    }
}

/// How long the healing helpers were refused after each fault of the
/// registry: from a helper's first refusal within the fault and the
/// TTL and skew after it, to its next ID. A fault whose window another
/// fault's reaches (its own window and the heal after it: a heal still
/// under way is not this fault's cost), and helpers paused or killed in
/// it, are left out. A fault the registry rides out (`harmless`: etcd's
/// member lost, its leader too) must cost none; after any other, a
/// refused helper issues again within the heal bound of the fault's end.
pub(crate) fn refusals(
    target: &Target,
    helpers: &[Helper],
    processes: &[Process],
    faults: &[Fault],
    ended_ns: u128,
) {
    let (ttl, skew) = terms(target);
    let after = u128::from(ttl + skew) * 1_000_000;
    let reach = heal_bound(target).as_nanos();
    let mut longest: std::collections::BTreeMap<&str, (u32, u32, u128)> = Default::default();
    // The latest a refused helper issued again, past its fault's end.
    let mut latest: Option<(&str, u128)> = None;
    for fault in faults.iter().filter(|f| f.helper.is_none()) {
        let window = fault.start_ns..=(fault.end_ns + after).min(ended_ns);
        let disturbed = faults.iter().any(|f| {
            !std::ptr::eq(f, fault)
                && f.helper.is_none()
                && f.start_ns <= *window.end()
                && f.end_ns + reach >= *window.start()
        });
        if disturbed {
            continue;
        }
        let entry = longest.entry(fault.kind).or_default();
        entry.0 += 1;
        let mut worst = 0;
        for (index, (helper, process)) in helpers.iter().zip(processes).enumerate() {
            let interrupted = faults.iter().any(|f| {
                f.helper == Some(index)
                    && f.start_ns <= *window.end()
                    && f.end_ns >= *window.start()
            });
            if helper.group != Group::Healing || interrupted || helper.started_ns >= fault.start_ns
            {
                continue;
            }
            let refused: Vec<u128> = process
                .refused
                .iter()
                .copied()
                .filter(|at| window.contains(at))
                .collect();
            let (Some(&first), Some(&last)) = (refused.first(), refused.last()) else {
                continue;
            };
            let again = process
                .issued
                .iter()
                .copied()
                .find(|&at| at > last)
                .unwrap_or(ended_ns);
            worst = worst.max(again.saturating_sub(first));
            let late = again.saturating_sub(fault.end_ns);
            if latest.is_none_or(|(_, l)| late > l) {
                latest = Some((fault.kind, late));
            }
        }
        if worst > 0 {
            entry.1 += 1;
        }
        entry.2 = entry.2.max(worst);
    }
    println!(
        "  {}/healing, the longest refusal after each kind of fault:",
        target.server.name
    );
    for (kind, (count, refused, worst)) in &longest {
        println!(
            "    {kind}: {count} faults, {refused} with a refusal, longest {} ms",
            worst / 1_000_000
        );
    }
    for &kind in target.server.harmless {
        if let Some(&(_, refused, worst)) = longest.get(kind) {
            assert_eq!(
                refused,
                0,
                "{}: a {kind} cost the healing helpers a refusal ({} ms), though the \
                 registry answered throughout",
                target.server.name,
                worst / 1_000_000
            );
        }
    }
    if let Some((kind, late)) = latest {
        assert!(
            late <= reach,
            "{}: a healing helper refused in a {kind} issued again only {} ms after it \
             ended, past {} ms",
            target.server.name,
            late / 1_000_000,
            reach / 1_000_000
        );
    }
}

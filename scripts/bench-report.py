#!/usr/bin/env python3
"""Reports a `cargo bench` run from Criterion's files in target/criterion.

    scripts/bench-report.py table           every benchmark's median, by id
    scripts/bench-report.py article         the README's table: the article beside flakegen
    scripts/bench-report.py chart OUT.png   ns per ID against the cost of a clock read
                                            (needs matplotlib: pip install matplotlib)

Medians of Criterion's last (`new`) run. Set CARGO_TARGET_DIR if the target
directory is elsewhere.
"""
import json
import os
import sys

BOUND_NS = 1e6 / 4096  # Twitter layout: 4096 IDs per ms
STRATEGIES = [("ticker", "ticker"), ("mutex", "Twitter's algorithm (mutex)"), ("atomic", "atomic")]
# The article's Docker for Mac run (Go 1.7, 4 cores, GOMAXPROCS=4), ns per ID.
ARTICLE = {"ticker": "273 ns", "mutex": "1,086 ns", "atomic": "no such design (savaki's: 3,228 ns)"}


def medians(root):
    """Median ns of every benchmark, by its full id."""
    found = {}
    for dirpath, _, files in os.walk(root):
        if os.path.basename(dirpath) == "new" and "estimates.json" in files:
            with open(os.path.join(dirpath, "benchmark.json")) as f:
                bench = json.load(f)
            with open(os.path.join(dirpath, "estimates.json")) as f:
                found[bench["full_id"]] = json.load(f)["median"]["point_estimate"]
    return found


def need(found, key):
    if key not in found:
        sys.exit(f"no result for {key}: run the full suite (cargo bench) first")
    return found[key]


def article(found, threads=2):
    print("| | article (Go 1.7, Docker for Mac) | flakegen on a 1.1 µs clock | flakegen on a 3.2 µs clock |")
    print("|---|---|---|---|")
    for key, name in STRATEGIES:
        cells = []
        for cost in ["1.1us", "3.2us"]:
            ns = need(found, f"hypervisor/{key}/{cost}/{threads}")
            cells.append(f"{ns:,.0f} ns ({100 * BOUND_NS / ns:.0f} % of the bound)")
        print(f"| {name} | {ARTICLE[key]} | {cells[0]} | {cells[1]} |")


def chart(found, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Each clock: its measured cost per read, and the group that saturates with it.
    clocks = [("tsc", "hypervisor"), ("system", "clock_bound"), ("syscall", "no_vdso"),
              ("0.5us", "hypervisor"), ("1.1us", "hypervisor"), ("3.2us", "hypervisor")]
    costs = [need(found, f"clocks/read/{clock}/1") for clock, _ in clocks]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), sharey=True)
    for ax, threads in zip(axes, [1, 2, 4]):
        for key, name in STRATEGIES:
            ns = [need(found, f"{group}/{key}/{clock}/{threads}") for clock, group in clocks]
            ax.plot(costs, ns, marker="o", label=name)
        ax.axhline(BOUND_NS, color="grey", linestyle="--", linewidth=1)
        ax.text(costs[0], BOUND_NS * 1.06, "244 ns bound (4096 IDs/ms)", color="grey", fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{threads} thread{'s' if threads > 1 else ''}")
        ax.set_xlabel("cost of one clock read (ns)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ns per ID, saturated (Twitter layout)")
    axes[0].legend()
    fig.suptitle("Where the ticker pulls ahead: ns per ID against the cost of reading the clock")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main():
    root = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")
    found = medians(root)
    command = sys.argv[1] if len(sys.argv) > 1 else "table"
    if command == "table":
        for full_id in sorted(found):
            print(f"{full_id:<46} {found[full_id]:10.3f} ns")
    elif command == "article":
        article(found)
    elif command == "chart" and len(sys.argv) == 3:
        chart(found, sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

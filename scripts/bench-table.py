#!/usr/bin/env python3
"""Prints the median time per ID of every benchmark in target/criterion, by id.

Reads Criterion's estimates.json files (the `new` run); used to fill the
tables in README.md and benches/README.md from a full `cargo bench` run.
"""
import json, os, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")
rows = {}
for dirpath, _, files in os.walk(root):
    if os.path.basename(dirpath) == "new" and "estimates.json" in files:
        with open(os.path.join(dirpath, "benchmark.json")) as f:
            bench = json.load(f)
        with open(os.path.join(dirpath, "estimates.json")) as f:
            est = json.load(f)
        rows[bench["full_id"]] = est["median"]["point_estimate"]
for full_id in sorted(rows):
    print(f"{full_id:<42} {rows[full_id]:10.3f} ns")

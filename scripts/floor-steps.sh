#!/usr/bin/env bash
# Runs the floor report (cargo bench -- floor: one thread, the clock read,
# the peers' clock + CAS and each strategy in interleaved rounds) at each
# of several git revisions, with this checkout's benchmark code, and prints
# one row per revision: what each step of a change took off the hot path.
#
#   scripts/floor-steps.sh <rev> [<rev> ...]
#   FLAKEGEN_BENCH_QUICK=1 scripts/floor-steps.sh d598cd5 HEAD
#
# Each revision is checked out in a worktree under target/floor-steps, and
# this checkout's benches/ is copied over its own, so every revision is
# measured by the same code (the library's public API must have what the
# benches use). The revisions run one after another; compare their ratios
# to the peers' shape, which each run measures beside them, rather than
# their nanoseconds.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 <rev> [<rev> ...]" >&2
  exit 2
fi

root=$(git rev-parse --show-toplevel)
work="$root/target/floor-steps"
mkdir -p "$work"
export CARGO_TARGET_DIR="$work/target"

source "$root/scripts/worktree.sh"
rows=()
for rev in "$@"; do
  dir=$(worktree "$rev" "$work")
  sha=$(basename "$dir")
  rm -rf "$dir/benches"
  cp -r "$root/benches" "$dir/benches"
  echo "==> $rev ($(git -C "$dir" rev-parse --short HEAD))"
  bench_at "$dir" floor > "$work/$sha.log" 2>&1 ||
    { tail -20 "$work/$sha.log"; exit 1; }
  sed -n '/^floor:/,$p' "$work/$sha.log"
  cp "$CARGO_TARGET_DIR/criterion/floor.json" "$work/$sha.json"
  rows+=("$rev $work/$sha.json")
done

echo
python3 - "${rows[@]}" <<'PY'
import json, sys
ids = ["clock/system", "atomic/system", "mutex/system", "ticker/system"]
print("one thread: × peer_clock_cas/system (ns over the clock read)")
print("  " + "".join(f"{c:<18}" for c in ["revision"] + ids))
for row in sys.argv[1:]:
    rev, path = row.split(" ", 1)
    with open(path) as f:
        by_id = {r["id"]: r for r in json.load(f)}
    cells = [f"{by_id[i]['ratio_to_peer_system']:.3f} ({by_id[i]['ns_over_clock_read']:.2f})" for i in ids]
    print("  " + "".join(f"{c:<18}" for c in [rev] + cells))
PY

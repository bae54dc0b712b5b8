#!/usr/bin/env bash
# Benchmarks two git revisions of flakegen on this machine, one after the other,
# and prints Criterion's verdict for every benchmark the two have in common.
#
#   scripts/bench-compare.sh <rev-a> <rev-b> [criterion filter]
#   FLAKEGEN_BENCH_QUICK=1 scripts/bench-compare.sh HEAD~3 HEAD mechanism
#
# Each revision is checked out in a worktree under target/bench-compare; both
# build into one target directory so that rev-b is compared against rev-a's
# saved Criterion baseline. To bisect a regression, run it across the commits
# in question (or the same commit under two toolchains, with RUSTUP_TOOLCHAIN
# set for the second run by hand). Compare ratios, not absolute times: on a
# shared or virtual machine, noise of a few percent is normal.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 <rev-a> <rev-b> [criterion filter]" >&2
  exit 2
fi
rev_a=$1
rev_b=$2
shift 2

root=$(git rev-parse --show-toplevel)
work="$root/target/bench-compare"
mkdir -p "$work"
export CARGO_TARGET_DIR="$work/target"

source "$root/scripts/worktree.sh"
dir_a=$(worktree "$rev_a" "$work")
dir_b=$(worktree "$rev_b" "$work")

echo "==> $rev_a ($(git -C "$dir_a" rev-parse --short HEAD)): saving baseline"
bench_at "$dir_a" --save-baseline compare_a "$@" > "$work/a.log" 2>&1 ||
  { tail -20 "$work/a.log"; exit 1; }

echo "==> $rev_b ($(git -C "$dir_b" rev-parse --short HEAD)): comparing"
bench_at "$dir_b" --baseline-lenient compare_a "$@" > "$work/b.log" 2>&1 ||
  { tail -20 "$work/b.log"; exit 1; }

# One line per benchmark: id, change in time [low estimate high], verdict.
# (A short id shares its line with "time:".)
awk '
  /^[a-z_0-9]+\/[^ ]+( |$)/ { id = $1 }
  /change:/ && /time/ || /change:/ { sub(/^ +change: +/, ""); change = $0 }
  /(improved|regressed|No change|Change within noise)/ && id != "" {
    verdict = $0; sub(/^ +/, "", verdict)
    printf "%-45s %-40s %s\n", id, change, verdict
    id = ""
  }
' "$work/b.log"
echo "full logs: $work/a.log $work/b.log"

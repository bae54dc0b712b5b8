#!/usr/bin/env bash
# Two revisions of flakegen in one process, measured in interleaved rounds:
# the strategies' time per ID below the cap on 1, 2 and 4 threads, each
# revision's, and b ÷ a round by round (scripts/bench-ab.rs).
#
#   scripts/bench-ab.sh <rev-a> [<rev-b>]     # rev-b: this checkout as it is
#   ROUNDS=61 scripts/bench-ab.sh d598cd5 HEAD
#
# Criterion, and bench-compare.sh, measure one revision and then the other,
# minutes apart; on a shared 2-core VM the machine drifts by more than that
# between them, most of all with two threads (the same binary's 2-thread
# figures move by 2x from one run to the next). Here both revisions run in
# turn, round after round, so drift slows both alike and the ratio holds.
# Each revision is a worktree under target/bench-ab whose package version
# is changed there (and only there) so that cargo builds both side by side.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 <rev-a> [<rev-b>]" >&2
  exit 2
fi

root=$(git rev-parse --show-toplevel)
work="$root/target/bench-ab"
mkdir -p "$work"

source "$root/scripts/worktree.sh"

# A worktree of $1 whose package is version $2; prints its path.
checkout() {
  local dir
  dir=$(worktree "$1" "$work")
  sed -i "0,/^version = .*/s//version = \"$2\"/" "$dir/Cargo.toml"
  echo "$dir"
}

dir_a=$(checkout "$1" 0.0.1)
if [ $# -ge 2 ]; then dir_b=$(checkout "$2" 0.0.2); else dir_b=$root; fi

mkdir -p "$work/harness/src"
cp "$root/scripts/bench-ab.rs" "$work/harness/src/main.rs"
cat > "$work/harness/Cargo.toml" <<TOML
[package]
name = "flakegen-bench-ab"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
a = { package = "flakegen", path = "$dir_a" }
b = { package = "flakegen", path = "$dir_b" }

[workspace]
TOML
echo "a = $1 ($(git -C "$dir_a" rev-parse --short HEAD)), b = ${2:-this checkout} ($(git -C "$dir_b" rev-parse --short HEAD))"
cd "$work/harness"
cargo run --release --quiet

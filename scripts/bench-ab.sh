#!/usr/bin/env bash
# Revisions of flakegen in one process, measured in interleaved rounds: the
# strategies' time per ID below the cap on 1, 2 and 4 threads, unleased and
# with a lease held, each revision's, and each ÷ the first round by round
# (scripts/bench-ab.rs). The one tool for comparing revisions.
#
#   scripts/bench-ab.sh <rev>                  # <rev> against this checkout as it is
#   scripts/bench-ab.sh <rev> <rev> [<rev>...] # those revisions, each ÷ the first:
#                                              # the steps of a change, one by one
#   ROUNDS=61 THREADS=1 scripts/bench-ab.sh d598cd5 HEAD
#   scripts/bench-ab.sh HEAD HEAD+metrics      # a revision with features on
#                                              # (rev+feature,feature) against itself
#
# Measuring one revision and then another, minutes apart, does not work on a
# shared 2-core VM: the machine drifts by more than that between them, most
# of all with two threads (the same binary's 2-thread figures move by 2x
# from one run to the next). Here the revisions run in turn, round after
# round, so drift slows all alike and the ratios hold. A clock read is
# measured beside them, so one-thread figures also read as "ns over the clock".
#
# Each revision is a worktree under target/bench-ab whose package version is
# changed there (and only there) so that cargo builds them side by side. The
# revisions need the public API the harness uses: Builder, the three
# build_* methods, lease::{Lease, MemoryRegistry}.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 <rev> [<rev> ...]" >&2
  exit 2
fi

root=$(git rev-parse --show-toplevel)
work="$root/target/bench-ab"
mkdir -p "$work/harness/src"

# A detached worktree of revision $1 (named by its full hash and the
# features $3, added the first time) whose package is version 0.0.$2;
# prints its path.
checkout() {
  local sha dir
  sha=$(git -C "$root" rev-parse --verify "$1^{commit}")
  dir="$work/$sha${3:+-${3//,/-}}"
  [ -d "$dir" ] || git -C "$root" worktree add --detach "$dir" "$sha" >/dev/null
  sed -i "0,/^version = .*/s//version = \"0.0.$2\"/" "$dir/Cargo.toml"
  echo "$dir"
}

revisions=("$@")
dirs=() features=()
for i in "${!revisions[@]}"; do
  rev=${revisions[$i]%%+*}
  with=""
  [[ ${revisions[$i]} == *+* ]] && with=${revisions[$i]#*+}
  dirs+=("$(checkout "$rev" "$((i + 1))" "$with")")
  features+=("$with")
done
if [ $# -eq 1 ]; then
  revisions+=("this checkout")
  dirs+=("$root")
  features+=("")
fi

deps="" calls=""
for i in "${!dirs[@]}"; do
  list=""
  [ -n "${features[$i]}" ] && list=", features = [\"${features[$i]//,/\", \"}\"]"
  deps+="r$i = { package = \"flakegen\", path = \"${dirs[$i]}\"$list }"$'\n'
  calls+="    contenders!(r$i, \"r$i\", list);"$'\n'
  echo "r$i = ${revisions[$i]} ($(git -C "${dirs[$i]}" rev-parse --short HEAD))"
done
cat > "$work/harness/Cargo.toml" <<TOML
[package]
name = "flakegen-bench-ab"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
libc = "0.2"
$deps
[workspace]
TOML
awk -v calls="$calls" '/^ *\/\/ REVISIONS$/ { printf "%s", calls; next } { print }' \
  "$root/scripts/bench-ab.rs" > "$work/harness/src/main.rs"
cd "$work/harness"
REVISIONS=${#dirs[@]} cargo run --release --quiet

# Sourced by the benchmark scripts that build other revisions.
#
# worktree REV UNDER: prints the path of a detached worktree of REV under
# the folder UNDER (named by its full hash), adding it the first time.
worktree() {
  local top sha dir
  top=$(git rev-parse --show-toplevel)
  sha=$(git -C "$top" rev-parse --verify "$1^{commit}")
  dir="$2/$sha"
  [ -d "$dir" ] || git -C "$top" worktree add --detach "$dir" "$sha" >/dev/null
  echo "$dir"
}

# bench_at DIR ARGS...: `cargo bench --bench strategies -- ARGS` in the
# worktree DIR, into $CARGO_TARGET_DIR.
#
# Worktrees that build the same package into one target directory are told
# apart by cargo only by their files' modification times: a worktree checked
# out before another was built looks older than that build, and would run
# its binary. So flakegen is rebuilt every time.
bench_at() {
  (cd "$1" && cargo clean --release --package flakegen --quiet &&
    cargo bench --bench strategies -- "${@:2}")
}

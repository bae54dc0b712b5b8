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

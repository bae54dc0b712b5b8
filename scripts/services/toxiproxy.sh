# toxiproxy: Shopify's TCP proxy that injects network faults (latency with
# jitter, bandwidth, a silent peer, a reset, a slow close), built from the Go
# module proxy once into the binaries' cache outside the repository. It
# starts with no proxy: each test makes its own in front of the server it
# needs, on a port of its own, through the API, and deletes it after, so
# that tests beside each other never share one. Sourced by
# scripts/services.sh, after common.sh.

toxiproxy_version=v2.12.0
toxiproxy_bin="${FLAKEGEN_TOOLS_DIR:-/var/cache/flakegen}/toxiproxy-server-$toxiproxy_version"
toxiproxy_port=${FLAKEGEN_TOXIPROXY_PORT:-28474}
toxiproxy_dir="$dir/toxiproxy"

# Builds toxiproxy's server where it is missing (about half a CPU-minute).
toxiproxy_build() {
  [ -x "$toxiproxy_bin" ] && return
  command -v go >/dev/null ||
    die "toxiproxy is not at $toxiproxy_bin and building it needs Go (https://go.dev/dl)"
  local work
  work=$(mktemp -d)
  say "building toxiproxy $toxiproxy_version into $(dirname "$toxiproxy_bin") once"
  mkdir -p "$(dirname "$toxiproxy_bin")"
  (cd "$work" && GOBIN="$work" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$toxiproxy_version") >&2 ||
    die "building toxiproxy failed (log above)"
  mv "$work/server" "$toxiproxy_bin"
  rm -rf "$work"
}

toxiproxy_running() {
  [ -f "$toxiproxy_dir/pid" ] && kill -0 "$(cat "$toxiproxy_dir/pid")" 2>/dev/null
}

start_toxiproxy() {
  toxiproxy_running && return
  command -v curl >/dev/null || install curl
  toxiproxy_build
  mkdir -p "$toxiproxy_dir"
  port_free "$toxiproxy_port" || die "port $toxiproxy_port is taken: set FLAKEGEN_TOXIPROXY_PORT"
  say "starting toxiproxy $toxiproxy_version, its API on 127.0.0.1:$toxiproxy_port"
  setsid "$toxiproxy_bin" -host 127.0.0.1 -port "$toxiproxy_port" \
    > "$toxiproxy_dir/log" 2>&1 < /dev/null &
  echo $! > "$toxiproxy_dir/pid"
  for _ in $(seq 100); do
    curl -sf --max-time 1 "http://127.0.0.1:$toxiproxy_port/version" >/dev/null && return
    toxiproxy_running || break
    sleep 0.1
  done
  tail -20 "$toxiproxy_dir/log" >&2
  die "toxiproxy did not start"
}

stop_toxiproxy() { stop_pid_file toxiproxy "$toxiproxy_dir/pid"; }

restart_toxiproxy() { stop_toxiproxy; start_toxiproxy; }

exports_toxiproxy() {
  echo "export FLAKEGEN_TEST_TOXIPROXY_URL=http://127.0.0.1:$toxiproxy_port"
}

# Every proxy the tests left behind (a test killed before it cleaned up).
wipe_toxiproxy() {
  [ $# -eq 0 ] || die "toxiproxy: wipe takes no namespace or worker"
  curl -sf --max-time 5 -X POST "http://127.0.0.1:$toxiproxy_port/reset" >/dev/null
  local names
  names=$(curl -sf --max-time 5 "http://127.0.0.1:$toxiproxy_port/proxies" |
    grep -o '"name":"[^"]*"' | sed 's/"name":"\(.*\)"/\1/' || true)
  for name in $names; do
    curl -sf --max-time 5 -X DELETE "http://127.0.0.1:$toxiproxy_port/proxies/$name" >/dev/null || true
  done
}

pid_file_toxiproxy() { echo "$toxiproxy_dir/pid"; }

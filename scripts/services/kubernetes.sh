# kubernetes: a real kube-apiserver (built from the Go module proxy once,
# into a cache outside the repository) over an etcd member of its own, on
# loopback, with RBAC on, an admin token, and a ServiceAccount holding
# exactly the Role flakegen's guide gives. Sourced by scripts/services.sh,
# after common.sh.

kube_version=v1.37.2
# The binaries' cache: kept across services directories and checkouts, so
# that a machine builds kube-apiserver once (about 11 CPU-minutes).
tools=${FLAKEGEN_TOOLS_DIR:-/var/cache/flakegen}
kube_bin="$tools/kube-apiserver-$kube_version"

# Builds kube-apiserver where it is missing. `go install` refuses the
# module (its go.mod replaces the staging modules with local paths), so it
# is built from a wrapper module that names each staging module's version.
kube_build() {
  [ -x "$kube_bin" ] && return
  command -v go >/dev/null || die "kube-apiserver is not in $tools and building it needs Go (https://go.dev/dl)"
  local work="$tools/build-kube-apiserver" staging=${kube_version/v1./v0.}
  mkdir -p "$work"
  say "building kube-apiserver $kube_version into $tools once (about 11 CPU-minutes)"
  (
    set -e
    cd "$work"
    cat > main.go <<'GO'
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
GO
    local mod replaces
    # Read outside the wrapper, whose half-written go.mod go would parse.
    mod=$(cd / && go mod download -json "k8s.io/kubernetes@$kube_version" \
      | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
    replaces=$(sed -n '/^replace (/,/^)/p' "$mod" \
      | sed -n "s|^\t\(k8s.io/[a-z0-9-]*\) => ./staging/.*|\t\1 => \1 $staging|p")
    [ -n "$replaces" ] || die "k8s.io/kubernetes $kube_version's go.mod names no staging modules"
    printf 'module flakegen.test/kube-apiserver\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n%s\n)\n' \
      "$kube_version" "$replaces" > go.mod
    go mod tidy
    go build -trimpath -o "$kube_bin.partial" \
      -ldflags "-X k8s.io/component-base/version.gitVersion=$kube_version" .
  ) >&2 || die "building kube-apiserver failed (log above)"
  mv "$kube_bin.partial" "$kube_bin"
}

kube_port=${FLAKEGEN_KUBE_PORT:-26443}
# Its own etcd member, apart from the etcd service's cluster: restored and
# restarted under the apiserver without touching the other.
kube_etcd_port=${FLAKEGEN_KUBE_ETCD_PORT:-22479}
kube_dir="$dir/kubernetes"
# The Kubernetes namespace the tests lease in, and the ServiceAccount that
# holds exactly the guide's Role there.
kube_namespace=flakegen
kube_admin_token=flakegen-test-admin

kube_api() { # METHOD PATH [BODY]: the apiserver as its admin, JSON in and out
  curl -sS --max-time "${kube_max_time:-10}" --cacert "$tls/ca.crt" -H "Authorization: Bearer $kube_admin_token" \
    -H 'Content-Type: application/json' -X "$1" "https://127.0.0.1:$kube_port$2" ${3:+--data "$3"}
}

kube_running() { [ -f "$kube_dir/apiserver.pid" ] && kill -0 "$(cat "$kube_dir/apiserver.pid")" 2>/dev/null; }

kube_etcd_run() {
  [ -f "$kube_dir/etcd.pid" ] && kill -0 "$(cat "$kube_dir/etcd.pid")" 2>/dev/null && return
  port_free "$kube_etcd_port" || die "port $kube_etcd_port is taken: set FLAKEGEN_KUBE_ETCD_PORT"
  port_free $((kube_etcd_port + 1)) || die "port $((kube_etcd_port + 1)) is taken: set FLAKEGEN_KUBE_ETCD_PORT"
  mkdir -p "$(memory_dir)"
  setsid etcd --name kube --data-dir "$(memory_dir)/kube-etcd" \
    --listen-client-urls "http://127.0.0.1:$kube_etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$kube_etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((kube_etcd_port + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((kube_etcd_port + 1))" \
    --initial-cluster "kube=http://127.0.0.1:$((kube_etcd_port + 1))" \
    > "$kube_dir/etcd.log" 2>&1 < /dev/null &
  echo $! > "$kube_dir/etcd.pid"
  for _ in $(seq 100); do
    ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$kube_etcd_port" --dial-timeout 1s endpoint health \
      >/dev/null 2>&1 && return
    sleep 0.1
  done
  tail -20 "$kube_dir/etcd.log" >&2
  die "kubernetes: its etcd did not start"
}

kube_apiserver_run() {
  kube_running && return
  port_free "$kube_port" || die "port $kube_port is taken: set FLAKEGEN_KUBE_PORT"
  # It serves the test CA's certificate (IP SAN 127.0.0.1), as the other
  # services do.
  setsid "$kube_bin" --etcd-servers "http://127.0.0.1:$kube_etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$kube_port" \
    --endpoint-reconciler-type none --cert-dir "$kube_dir/certs" \
    --tls-cert-file "$tls/server.crt" --tls-private-key-file "$tls/server.key" \
    --token-auth-file "$kube_dir/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$kube_dir/sa.pub" --service-account-signing-key-file "$kube_dir/sa.key" \
    --service-cluster-ip-range 10.96.0.0/24 \
    > "$kube_dir/apiserver.log" 2>&1 < /dev/null &
  echo $! > "$kube_dir/apiserver.pid"
  for _ in $(seq 600); do
    [ "$(kube_api GET /readyz 2>/dev/null)" = ok ] && return
    kube_running || break
    sleep 0.1
  done
  tail -30 "$kube_dir/apiserver.log" >&2
  die "kubernetes: kube-apiserver did not become ready"
}

start_kubernetes() {
  make_certs
  command -v etcd >/dev/null || install etcd-server
  command -v curl >/dev/null || install curl
  kube_build
  mkdir -p "$kube_dir/certs"
  [ -f "$kube_dir/sa.key" ] || {
    openssl genrsa -out "$kube_dir/sa.key" 2048 2>/dev/null
    openssl rsa -in "$kube_dir/sa.key" -pubout -out "$kube_dir/sa.pub" 2>/dev/null
  }
  echo "$kube_admin_token,admin,admin,system:masters" > "$kube_dir/tokens.csv"
  say "starting kubernetes (kube-apiserver $kube_version) on 127.0.0.1:$kube_port, its etcd on $kube_etcd_port"
  kube_etcd_run
  kube_apiserver_run
  kube_objects
}

# The namespace, the Role of the guide (get, list, create, update, delete
# on leases, nothing cluster-scoped), a ServiceAccount bound to it, and a
# token for it (from TokenRequest) in a file.
kube_objects() {
  kube_api POST /api/v1/namespaces "{\"metadata\":{\"name\":\"$kube_namespace\"}}" >/dev/null
  kube_api POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$kube_namespace/roles" \
    "{\"metadata\":{\"name\":\"flakegen\"},\"rules\":[{\"apiGroups\":[\"coordination.k8s.io\"],\"resources\":[\"leases\"],\"verbs\":[\"get\",\"list\",\"create\",\"update\",\"delete\"]}]}" >/dev/null
  kube_api POST "/api/v1/namespaces/$kube_namespace/serviceaccounts" \
    '{"metadata":{"name":"flakegen"}}' >/dev/null
  kube_api POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$kube_namespace/rolebindings" \
    "{\"metadata\":{\"name\":\"flakegen\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"flakegen\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"flakegen\",\"namespace\":\"$kube_namespace\"}]}" >/dev/null
  # Tokens last a week: a services directory outlives an hour (a loop of
  # runs beside CPU hogs did), and an expired token fails every test with 401.
  kube_api POST "/api/v1/namespaces/$kube_namespace/serviceaccounts/flakegen/token" \
    '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":604800}}' |
    sed -n 's/.*"token": *"\([^"]*\)".*/\1/p' > "$kube_dir/sa.token"
  [ -s "$kube_dir/sa.token" ] || die "kubernetes: no ServiceAccount token from TokenRequest"
  echo -n "$kube_admin_token" > "$kube_dir/admin.token"
}

stop_kubernetes() {
  stop_pid_file kube-apiserver "$kube_dir/apiserver.pid"
  stop_pid_file "kubernetes' etcd" "$kube_dir/etcd.pid"
}

restart_kubernetes() { stop_pid_file kube-apiserver "$kube_dir/apiserver.pid"; kube_apiserver_run; }

exports_kubernetes() {
  local at="kube://127.0.0.1:$kube_port/$kube_namespace/flakegen?ca_file=$tls/ca.crt"
  echo "export FLAKEGEN_TEST_KUBERNETES_URL='$at&token_file=$kube_dir/sa.token'"
  # Its only form is TLS, verified: the TLS tests take the same URL.
  echo "export FLAKEGEN_TEST_KUBERNETES_TLS_URL='$at&token_file=$kube_dir/sa.token'"
  echo "export FLAKEGEN_TEST_KUBERNETES_ADMIN_URL='$at&token_file=$kube_dir/admin.token'"
}

# Deletes Lease objects of flakegen's in the tests' namespace: all of them
# (the label every one carries), one flakegen namespace's, or one worker
# id's record there, or its marker (`marker` for WORKER), by the
# annotations and labels that name them.
wipe_kubernetes() {
  # An operator's change waits as long as the server takes: beside CPU
  # hogs, kube-apiserver left a list unanswered past 10 s.
  local kube_max_time=60
  local leases="/apis/coordination.k8s.io/v1/namespaces/$kube_namespace/leases"
  local managed="labelSelector=app.kubernetes.io%2Fmanaged-by%3Dflakegen"
  if [ $# -eq 0 ]; then
    kube_api DELETE "$leases?$managed" >/dev/null
    return
  fi
  command -v jq >/dev/null || install jq
  local names
  names=$(kube_api GET "$leases?$managed" | jq -r --arg ns "$1" --arg w "${2:-}" '
    .items[] | select(.metadata.annotations["flakegen.io/namespace"] == $ns)
    | select($w == "" or .metadata.annotations["flakegen.io/worker"] == $w
        or ($w == "marker" and .metadata.labels["flakegen.io/kind"] == "marker"))
    | .metadata.name') || die "kubernetes: cannot list the Leases to wipe"
  local name
  for name in $names; do
    kube_api DELETE "$leases/$name" >/dev/null
  done
}

# A token file for a ServiceAccount whose Role lacks VERB (of get, list,
# create, update, delete on leases): printed, for the tests of what a
# missing right costs.
token_without_kubernetes() {
  local verb=${1:?which verb to leave out}
  local name="flakegen-no-$verb" verbs
  verbs=$(printf '"%s",' get list create update delete | sed "s/\"$verb\",//; s/,\$//")
  kube_api POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$kube_namespace/roles" \
    "{\"metadata\":{\"name\":\"$name\"},\"rules\":[{\"apiGroups\":[\"coordination.k8s.io\"],\"resources\":[\"leases\"],\"verbs\":[$verbs]}]}" >/dev/null
  kube_api POST "/api/v1/namespaces/$kube_namespace/serviceaccounts" "{\"metadata\":{\"name\":\"$name\"}}" >/dev/null
  kube_api POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$kube_namespace/rolebindings" \
    "{\"metadata\":{\"name\":\"$name\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"$name\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"$name\",\"namespace\":\"$kube_namespace\"}]}" >/dev/null
  kube_api POST "/api/v1/namespaces/$kube_namespace/serviceaccounts/$name/token" \
    '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":604800}}' |
    sed -n 's/.*"token": *"\([^"]*\)".*/\1/p' > "$kube_dir/$name.token"
  [ -s "$kube_dir/$name.token" ] || die "kubernetes: no token for $name"
  echo "$kube_dir/$name.token"
}

# A new token for the ServiceAccount NAME, bound to the guide's Role,
# written over its file (printed): the ServiceAccount is deleted and made
# again first, so every token it had before is refused from now on (401),
# as a revoked or expired one is.
rotate_token_kubernetes() {
  local name=${1:?which ServiceAccount}
  kube_api DELETE "/api/v1/namespaces/$kube_namespace/serviceaccounts/$name" >/dev/null
  # Deleted tokens are refused once the ServiceAccount is gone for good.
  for _ in $(seq 50); do
    kube_api GET "/api/v1/namespaces/$kube_namespace/serviceaccounts/$name" | grep -q '"code": 404' && break
    sleep 0.1
  done
  kube_api POST "/api/v1/namespaces/$kube_namespace/serviceaccounts" "{\"metadata\":{\"name\":\"$name\"}}" >/dev/null
  kube_api POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$kube_namespace/rolebindings" \
    "{\"metadata\":{\"name\":\"$name\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"flakegen\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"$name\",\"namespace\":\"$kube_namespace\"}]}" >/dev/null
  kube_api POST "/api/v1/namespaces/$kube_namespace/serviceaccounts/$name/token" \
    '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":604800}}' |
    sed -n 's/.*"token": *"\([^"]*\)".*/\1/p' > "$kube_dir/$name.token.new"
  [ -s "$kube_dir/$name.token.new" ] || die "kubernetes: no token for $name"
  # Replaced in one step, as the kubelet replaces a projected token.
  mv "$kube_dir/$name.token.new" "$kube_dir/$name.token"
  echo "$kube_dir/$name.token"
}

# Its etcd's snapshot, for a restore to bring back.
snapshot_kubernetes() {
  ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$kube_etcd_port" snapshot save "$kube_dir/snapshot.db" \
    >/dev/null 2>&1 || die "kubernetes: its etcd's snapshot failed"
}

# Kubernetes' own procedure for a restore: the API server stopped, etcd
# restored from the snapshot (Debian's etcdctl 3.4 has no --bump-revision,
# so revisions since the snapshot are given again), both started. With
# OUTAGE_MS, the API server stays stopped at least that long.
restore_kubernetes() {
  local outage_ms=${1:-0} stopped
  [ -f "$kube_dir/snapshot.db" ] || die "no snapshot of kubernetes' etcd: run snapshot kubernetes first"
  stopped=$(date +%s%3N)
  stop_pid_file kube-apiserver "$kube_dir/apiserver.pid"
  stop_pid_file "kubernetes' etcd" "$kube_dir/etcd.pid"
  rm -rf "$(memory_dir)/kube-etcd"
  ETCDCTL_API=3 etcdctl snapshot restore "$kube_dir/snapshot.db" --name kube --data-dir "$(memory_dir)/kube-etcd" \
    --initial-cluster "kube=http://127.0.0.1:$((kube_etcd_port + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((kube_etcd_port + 1))" >/dev/null 2>&1 ||
    die "kubernetes: restoring its etcd from the snapshot failed"
  local left=$((stopped + outage_ms - $(date +%s%3N)))
  [ "$left" -gt 0 ] && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
  kube_etcd_run
  kube_apiserver_run
}

# Writes a scratch object until the store's revision (a LIST's
# resourceVersion) is TARGET, so that the next write is given TARGET + 1:
# what makes a revision given before a restore be given again to another
# write. Fails if the store is past TARGET already.
bump_revision_kubernetes() {
  local target=${1:?which revision} leases="/apis/coordination.k8s.io/v1/namespaces/$kube_namespace/leases" rv
  kube_api POST "$leases" '{"metadata":{"name":"flakegen-scratch"}}' >/dev/null
  for _ in $(seq 10000); do
    rv=$(kube_api GET "$leases?limit=1" | jq -r .metadata.resourceVersion)
    [ "$rv" -eq "$target" ] && return 0
    [ "$rv" -gt "$target" ] && die "kubernetes: the store is at revision $rv, past $target"
    kube_api PUT "$leases/flakegen-scratch" \
      "$(kube_api GET "$leases/flakegen-scratch" | jq -c ".spec.leaseTransitions = ((.spec.leaseTransitions // 0) + 1)")" >/dev/null
  done
  die "kubernetes: the store's revision did not reach $target"
}

# The resourceVersion of the record of WORKER in NAMESPACE (flakegen's).
resource_version_kubernetes() {
  kube_api GET "/apis/coordination.k8s.io/v1/namespaces/$kube_namespace/leases?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dflakegen" |
    jq -r --arg ns "${1:?which namespace}" --arg w "${2:?which worker}" '.items[]
      | select(.metadata.annotations["flakegen.io/namespace"] == $ns
               and .metadata.annotations["flakegen.io/worker"] == $w)
      | .metadata.resourceVersion'
}

# METHOD PATH [BODY] to the API server as its admin (a path under the
# tests' namespace's Leases), printing its JSON: what a test writes by hand.
api_kubernetes() {
  kube_api "${1:?which method}" "/apis/coordination.k8s.io/v1/namespaces/$kube_namespace/leases${2:-}" "${3:-}"
}

# The API server stopped (SIGSTOP) by a test that did not live to resume it.
thaw_kubernetes() { kube_running && kill -CONT "$(cat "$kube_dir/apiserver.pid")"; true; }

pid_file_kubernetes() { echo "$kube_dir/apiserver.pid"; }

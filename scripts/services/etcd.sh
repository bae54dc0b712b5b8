# etcd: a three-member cluster (etcd-server), members e1, e2, e3, with auth
# on (user flakegen, its keys under /flakegen; tokens signed, so that any
# member takes one), and TLS on a second port per member. Sourced by
# scripts/services.sh, after common.sh.

etcd_port=${FLAKEGEN_ETCD_PORT:-22379}
etcd_members="e1 e2 e3"
etcd_index() { echo "${1#e}"; }
etcd_client_port() { echo $((etcd_port + 10 * ($(etcd_index "$1") - 1))); }
etcd_tls_port() { echo $(($(etcd_client_port "$1") + 1)); }
etcd_peer_port() { echo $(($(etcd_client_port "$1") + 2)); }
# Every member's address, by port kind (client or tls), comma-separated.
etcd_endpoints() {
  local m list=
  for m in $etcd_members; do list="${list:+$list,}127.0.0.1:$("etcd_${1:-client}_port" "$m")"; done
  echo "$list"
}
etcd_initial_cluster() {
  local m list=
  for m in $etcd_members; do list="${list:+$list,}$m=http://127.0.0.1:$(etcd_peer_port "$m")"; done
  echo "$list"
}
# One token for the services directory: a restore that keeps it keeps the
# cluster's id, the case flakegen must catch by other means.
etcd_token() { echo "flakegen-$(echo "$dir" | cksum | cut -d' ' -f1)"; }
# etcdctl as user $1 (none: before auth is on), at the endpoints
# $ETCD_AT (default: every member).
etcdctl_as() {
  local user=$1
  shift
  ETCDCTL_API=3 etcdctl --endpoints "${ETCD_AT:-$(etcd_endpoints)}" ${user:+--user "$user"} \
    --dial-timeout 2s --command-timeout 5s "$@"
}
etcdctl_root() { etcdctl_as "root:$password" "$@"; }
# An operator's change (a wipe, a planted mark) waits as long as the
# cluster takes: beside CPU hogs a member can stall past what the probes
# allow, the authentication at dial (a raft request in etcd 3.4) too, and
# a proposal can time out in the server ("request timed out"): it is made
# again, as deleting or putting the same keys again changes nothing more.
etcdctl_change() {
  local try
  for try in 1 2 3; do
    etcdctl_root --dial-timeout 30s --command-timeout 30s "$@" && return
    [ "$try" -eq 3 ] || sleep 1
  done
  return 1
}

etcd_running() {
  local pid_file="$dir/etcd/$1.pid"
  [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

etcd_run() {
  local m=$1 data
  data="$(memory_dir)/etcd/$1"
  etcd_running "$m" && return
  port_free "$(etcd_client_port "$m")" || die "port $(etcd_client_port "$m") is taken: set FLAKEGEN_ETCD_PORT"
  port_free "$(etcd_peer_port "$m")" || die "port $(etcd_peer_port "$m") is taken: set FLAKEGEN_ETCD_PORT"
  mkdir -p "$dir/etcd" "${data%/*}"
  # setsid: a member in a session of its own, so that a signal to the
  # caller's group (a test harness stopping) does not reach it. nice -5:
  # raft's heartbeats keep their share of a machine the tests load on
  # purpose (two CPU hogs starved the members into elections, and held
  # reads for 6 s), as a production cluster's own hosts give them. Without
  # root, the member runs at the caller's priority.
  nice -n -5 setsid etcd --name "$m" --data-dir "$data" \
    --listen-client-urls "http://127.0.0.1:$(etcd_client_port "$m"),https://127.0.0.1:$(etcd_tls_port "$m")" \
    --advertise-client-urls "http://127.0.0.1:$(etcd_client_port "$m")" \
    --cert-file "$tls/server.crt" --key-file "$tls/server.key" \
    --listen-peer-urls "http://127.0.0.1:$(etcd_peer_port "$m")" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer_port "$m")" \
    --initial-cluster "$(etcd_initial_cluster)" --initial-cluster-token "$(etcd_token)" \
    --initial-cluster-state new \
    --auth-token "jwt,pub-key=$tls/jwt.pub,priv-key=$tls/jwt.key,sign-method=RS256,ttl=1h" \
    > "$dir/etcd/$m.log" 2>&1 < /dev/null &
  echo $! > "$dir/etcd/$m.pid"
}

# Waits (up to 20 s) for a leader and a write through the cluster.
etcd_ready() {
  for _ in $(seq 100); do
    etcdctl_as "" endpoint status >/dev/null 2>&1 && \
      { etcdctl_as "" put flakegen-ready 1 >/dev/null 2>&1 || \
        etcdctl_as "flakegen:$password" put /flakegen/ready 1 >/dev/null 2>&1; } && return 0
    sleep 0.2
  done
  tail -20 "$dir"/etcd/*.log >&2
  die "etcd did not elect a leader"
}

start_etcd() {
  command -v etcd >/dev/null || install etcd-server
  command -v etcdctl >/dev/null || install etcd-client
  # The package starts a server of its own on 2379 where it can: not ours.
  local m fresh=
  # Fresh where the first member has no data: auth is turned on once (a
  # second time, every `user add` is refused for want of a user name).
  [ -d "$(memory_dir)/etcd/e1" ] || fresh=1
  for m in $etcd_members; do etcd_run "$m"; done
  say "etcd on $(etcd_endpoints) (TLS on each port + 1)"
  if [ -n "$fresh" ]; then
    etcd_ready
    # Auth on: the user flakegen may use the keys under /flakegen only.
    etcdctl_as "" user add "root:$password" >/dev/null
    etcdctl_as "" user grant-role root root >/dev/null
    etcdctl_as "" user add "flakegen:$password" >/dev/null
    etcdctl_as "" role add flakegen >/dev/null
    etcdctl_as "" role grant-permission flakegen --prefix=true readwrite /flakegen >/dev/null
    etcdctl_as "" user grant-role flakegen flakegen >/dev/null
    etcdctl_as "" auth enable >/dev/null
  fi
  etcd_ready
}

stop_etcd() {
  local m
  for m in $etcd_members; do
    [ -f "$dir/etcd/$m.pid" ] && kill -CONT "$(cat "$dir/etcd/$m.pid")" 2>/dev/null || true
    stop_pid_file "etcd $m" "$dir/etcd/$m.pid"
  done
}

restart_etcd() { stop_etcd; start_etcd; }

exports_etcd() {
  echo "export FLAKEGEN_TEST_ETCD_URL=etcd://flakegen:$password@$(etcd_endpoints)/flakegen"
  echo "export FLAKEGEN_TEST_ETCD_TLS_URL='etcds://flakegen:$password@$(etcd_endpoints tls)/flakegen?sslrootcert=$tls/ca.crt'"
}

# The member that leads, by the cluster's own account (waiting up to 10 s
# for an election). The members that answer say; one down is no error here.
leader_etcd() {
  local id= name=
  # During an election every member says leader 0; a member just thawed
  # may name a leader the others have replaced; a busy cluster may not
  # answer at once: ask until an answer names a member. (Each grep may
  # find nothing, which must not end the script under pipefail.)
  for _ in $(seq 50); do
    id=$({ etcdctl_root endpoint status -w json 2>/dev/null || true; } |
      { grep -o '"leader":[1-9][0-9]*' || true; } | sed -n '1s/.*://p')
    if [ -n "$id" ]; then
      name=$({ etcdctl_root member list -w json 2>/dev/null || true; } |
        { grep -o "\"ID\":$id,\"name\":\"[a-z0-9]*\"" || true; } | sed 's/.*"name":"\(.*\)"/\1/')
      [ -n "$name" ] && { echo "$name"; return; }
    fi
    sleep 0.2
  done
  die "etcd has no leader that a member list names (last leader id: ${id:-none})"
}

# MEMBER, with `leader` and `follower` resolved.
etcd_member() {
  local leader m
  case "${1:-}" in
    leader) leader_etcd ;;
    follower)
      leader=$(leader_etcd)
      for m in $etcd_members; do
        if [ "$m" != "$leader" ] && etcd_running "$m"; then echo "$m"; return; fi
      done
      die "etcd has no running follower" ;;
    e1 | e2 | e3) echo "$1" ;;
    *) die "no etcd member ${1:-}: use e1, e2, e3, leader or follower" ;;
  esac
}

etcd_signal() {
  local m=$1 signal=$2 pid
  [ -f "$dir/etcd/$m.pid" ] || return 0
  pid=$(cat "$dir/etcd/$m.pid")
  kill "-$signal" "$pid" 2>/dev/null || true
  if [ "$signal" = KILL ]; then wait_gone "$pid"; rm -f "$dir/etcd/$m.pid"; fi
  say "etcd $m: SIG$signal"
}

kill_etcd() { etcd_signal "$(etcd_member "$@")" KILL; }
freeze_etcd() { etcd_signal "$(etcd_member "$@")" STOP; }
thaw_etcd() { etcd_signal "$(etcd_member "$@")" CONT; }

revive_etcd() {
  local member
  member=$(etcd_member "$@")
  etcd_run "$member"
  # Up when it answers for itself.
  for _ in $(seq 100); do
    ETCD_AT="127.0.0.1:$(etcd_client_port "$member")" etcdctl_root endpoint health \
      >/dev/null 2>&1 && break
    sleep 0.1
  done
}

# Leadership to a follower: a new raft term, as when a leader fails.
elect_etcd() {
  local follower id
  follower=$(etcd_member follower)
  id=$(etcdctl_root member list | grep ", $follower, " | cut -d, -f1)
  ETCD_AT="127.0.0.1:$(etcd_client_port "$(leader_etcd)")" etcdctl_root move-leader "$id" >&2
}

snapshot_etcd() {
  ETCD_AT="127.0.0.1:$(etcd_client_port "$(leader_etcd)")" etcdctl_root \
    snapshot save "$dir/etcd/snapshot.db" >/dev/null 2>&1 || die "etcd snapshot failed"
  say "etcd snapshot saved to $dir/etcd/snapshot.db"
}

# Every member stopped, restored from the snapshot, and started: the
# writes since are gone. The token of the last restore keeps the
# cluster's id; another ($1) gives it a new one, as a restore into a
# rebuilt cluster does.
restore_etcd() {
  local m token=${1:-$(cat "$dir/etcd/token" 2>/dev/null || etcd_token)}
  [ -f "$dir/etcd/snapshot.db" ] || die "no etcd snapshot: run snapshot etcd first"
  for m in $etcd_members; do etcd_signal "$m" CONT; stop_pid_file "etcd $m" "$dir/etcd/$m.pid"; done
  for m in $etcd_members; do
    rm -rf "$(memory_dir)/etcd/$m"
    ETCDCTL_API=3 etcdctl snapshot restore "$dir/etcd/snapshot.db" --name "$m" \
      --data-dir "$(memory_dir)/etcd/$m" --initial-cluster "$(etcd_initial_cluster)" \
      --initial-cluster-token "$token" \
      --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer_port "$m")" >/dev/null 2>&1 ||
      die "etcd: restoring $m from the snapshot failed"
  done
  echo "$token" > "$dir/etcd/token"
  for m in $etcd_members; do etcd_run "$m"; done
  etcd_ready
  say "etcd restored from $dir/etcd/snapshot.db"
}

# Deletes everything under /flakegen, one namespace's keys (and its name),
# or one record: what an operator's etcdctl del does.
wipe_etcd() {
  local ns=${1:-} worker=${2:-}
  ns=${ns//%/%25}
  ns=${ns//\//%2F}
  if [ -z "$ns" ]; then
    etcdctl_change del --prefix /flakegen/ >/dev/null
  elif [ -z "$worker" ]; then
    etcdctl_change del --prefix "/flakegen/ns/$ns/" >/dev/null
    etcdctl_change del "/flakegen/names/$ns" >/dev/null
  else
    etcdctl_change del "/flakegen/ns/$ns/w/$(printf '%020d' "$worker")" >/dev/null
  fi
}

# Namespace $1's mark replaced by one of another epoch (1, of 1970), dated
# $2 (ms since 1970): what a restore or a rebuilt cluster leaves behind.
plant_marker_etcd() {
  local ns=${1//%/%25}
  ns=${ns//\//%2F}
  etcdctl_change put "/flakegen/ns/$ns/mark" "1 $2 0" >/dev/null
}

pid_file_etcd() { echo "$dir/etcd/$(etcd_member "${1:-leader}").pid"; }

# Redis: a server of its own (redis), without persistence, so that a restart
# loses every lease, with TLS on a port of its own; and a replicated pair
# (redis-pair: a primary and a replica, members a and b). Sourced by
# scripts/services.sh, after common.sh.

redis_port=${FLAKEGEN_REDIS_PORT:-26379}
redis_tls_port=${FLAKEGEN_REDIS_TLS_PORT:-26380}
redis_a_port=${FLAKEGEN_REDIS_A_PORT:-$((redis_port + 2))}
redis_b_port=${FLAKEGEN_REDIS_B_PORT:-$((redis_port + 3))}
redis_url_at() { echo "redis://:$password@127.0.0.1:$1/0"; }
redis_cli_at() { redis-cli -p "$1" -a "$password" --no-auth-warning "${@:2}"; }

start_redis() {
  command -v redis-server >/dev/null || install redis-server
  if [ -f "$dir/redis.pid" ] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; then
    say "redis already running on port $redis_port"
    return
  fi
  port_free "$redis_port" || die "port $redis_port is taken: set FLAKEGEN_REDIS_PORT"
  port_free "$redis_tls_port" || die "port $redis_tls_port is taken: set FLAKEGEN_REDIS_TLS_PORT"
  say "starting redis on 127.0.0.1:$redis_port (no persistence)"
  # A directory of its own, emptied: nothing of a replica's sync (which
  # writes dump.rdb) is loaded at a start, and a restart comes back empty.
  rm -rf "$dir/redis-data"
  mkdir -p "$dir/redis-data"
  redis-server --bind 127.0.0.1 --port "$redis_port" --requirepass "$password" \
    --tls-port "$redis_tls_port" --tls-cert-file "$tls/server.crt" \
    --tls-key-file "$tls/server.key" --tls-ca-cert-file "$tls/ca.crt" --tls-auth-clients no \
    --save '' --appendonly no --daemonize yes --dir "$dir/redis-data" \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
  for _ in $(seq 500); do
    redis_cli_at "$redis_port" ping >/dev/null 2>&1 && return
    sleep 0.02
  done
  tail -20 "$dir/redis.log" >&2
  die "redis did not start"
}

stop_redis() { stop_pid_file redis "$dir/redis.pid"; }
restart_redis() { stop_redis; start_redis; }

exports_redis() {
  echo "export FLAKEGEN_TEST_REDIS_URL=$(redis_url_at "$redis_port")"
  echo "export FLAKEGEN_TEST_REDIS_TLS_URL='rediss://:$password@127.0.0.1:$redis_tls_port/0?sslrootcert=$tls/ca.crt'"
}

# SIGKILL, then a start: without persistence, it comes back empty.
crash_redis() {
  [ -f "$dir/redis.pid" ] || die "redis is not running"
  say "crashing redis"
  kill_pid_file "$dir/redis.pid"
  start_redis
}

# Deletes everything of flakegen's (FLUSHALL: the test server holds nothing
# else), one namespace's keys, or one record, at the server on port $1.
redis_wipe_at() {
  local port=$1 ns=${2:-} worker=${3:-}
  if [ -z "$ns" ]; then
    redis_cli_at "$port" flushall >/dev/null
  elif [ -z "$worker" ]; then
    redis_cli_at "$port" --scan --pattern "flakegen:{$ns}:*" |
      while read -r key; do redis_cli_at "$port" del "$key" >/dev/null; done
  else
    redis_cli_at "$port" del "flakegen:{$ns}:w:$worker" >/dev/null
  fi
}

wipe_redis() { redis_wipe_at "$redis_port" "$@"; }

# Namespace $2's marker replaced by one of another server process ($1 the
# port), dated $3 (ms since 1970).
redis_plant_at() { redis_cli_at "$1" set "flakegen:{$2}:mark" "00000000000000000000000000000000000000fe:$3:0" >/dev/null; }
plant_marker_redis() { redis_plant_at "$redis_port" "$@"; }

# --- redis-pair -------------------------------------------------------------

redis_pair_port() { if [ "$1" = a ]; then echo "$redis_a_port"; else echo "$redis_b_port"; fi; }
redis_pair_cli() { redis_cli_at "$(redis_pair_port "$1")" "${@:2}"; }
redis_pair_pid_file() { echo "$dir/redis-pair-$1.pid"; }

redis_pair_running() {
  [ -f "$(redis_pair_pid_file "$1")" ] && kill -0 "$(cat "$(redis_pair_pid_file "$1")")" 2>/dev/null
}

redis_pair_is_primary() {
  redis_pair_running "$1" && redis_pair_cli "$1" info replication 2>/dev/null | grep -q '^role:master'
}

# Member $1, empty, replicating from the port $2 if given.
redis_pair_run() {
  local member=$1 port replicaof=()
  port=$(redis_pair_port "$member")
  [ -n "${2:-}" ] && replicaof=(--replicaof 127.0.0.1 "$2" --masterauth "$password")
  port_free "$port" || die "port $port is taken: set FLAKEGEN_REDIS_${member^^}_PORT"
  rm -rf "$dir/redis-pair-$member"
  mkdir -p "$dir/redis-pair-$member"
  redis-server --bind 127.0.0.1 --port "$port" --requirepass "$password" \
    --save '' --appendonly no --daemonize yes --dir "$dir/redis-pair-$member" "${replicaof[@]}" \
    --repl-diskless-sync-delay 0 \
    --pidfile "$(redis_pair_pid_file "$member")" --logfile "$dir/redis-pair-$member.log" >&2
  for _ in $(seq 500); do
    redis_pair_cli "$member" ping >/dev/null 2>&1 && return
    sleep 0.02
  done
  die "redis-pair $member did not start"
}

# Waits (10 s) until the replica $1 has synchronised with its primary.
redis_pair_synced() {
  for _ in $(seq 500); do
    redis_pair_cli "$1" info replication 2>/dev/null | grep -q 'master_link_status:up' && return
    sleep 0.02
  done
  die "redis-pair $1 did not synchronise"
}

start_redis_pair() {
  command -v redis-server >/dev/null || install redis-server
  if [ -f "$dir/redis-pair.primary" ]; then
    say "redis-pair already set up"
    return
  fi
  say "redis-pair: a primary on $redis_a_port, a replica on $redis_b_port"
  redis_pair_run a
  redis_pair_run b "$redis_a_port"
  redis_pair_synced b
  echo a > "$dir/redis-pair.primary"
}

stop_redis_pair() {
  kill_pid_file "$(redis_pair_pid_file a)"
  kill_pid_file "$(redis_pair_pid_file b)"
  rm -f "$dir/redis-pair.primary"
}

exports_redis_pair() {
  echo "export FLAKEGEN_TEST_REDIS_A_URL=$(redis_url_at "$redis_a_port")"
  echo "export FLAKEGEN_TEST_REDIS_B_URL=$(redis_url_at "$redis_b_port")"
}

primary_redis_pair() { primary_of redis-pair; }

# An unreachable primary: the replica keeps its data and gets no more.
cut_redis_pair() {
  local replica
  replica=$(other "$(primary_of redis-pair)")
  redis_pair_cli "$replica" replicaof 127.0.0.1 1 >/dev/null
  say "redis-pair: replica $replica cut off"
}

promote_redis_pair() {
  local old new
  old=$(primary_of redis-pair)
  new=$(other "$old")
  kill_pid_file "$(redis_pair_pid_file "$old")"
  redis_pair_cli "$new" replicaof no one >/dev/null
  echo "$new" > "$dir/redis-pair.primary"
  say "redis-pair: $new promoted, $old killed"
}

restart_redis_pair() {
  local member
  member=$(primary_of redis-pair)
  stop_pid_file "redis-pair-$member" "$(redis_pair_pid_file "$member")"
  redis_pair_run "$member"
}

crash_redis_pair() {
  local member
  member=$(primary_of redis-pair)
  kill_pid_file "$(redis_pair_pid_file "$member")"
  redis_pair_run "$member"
}

rejoin_redis_pair() {
  local primary stale
  primary=$(primary_of redis-pair)
  stale=$(other "$primary")
  if redis_pair_running "$primary"; then
    redis_pair_cli "$primary" replicaof no one >/dev/null
  else
    redis_pair_run "$primary"
  fi
  kill_pid_file "$(redis_pair_pid_file "$stale")"
  redis_pair_run "$stale" "$(redis_pair_port "$primary")"
  redis_pair_synced "$stale"
  say "redis-pair: $stale rebuilt from $primary, replicating"
}

wipe_redis_pair() { redis_wipe_at "$(redis_pair_port "$(primary_of redis-pair)")" "$@"; }
plant_marker_redis_pair() { redis_plant_at "$(redis_pair_port "$(primary_of redis-pair)")" "$@"; }

pid_file_redis() { echo "$dir/redis.pid"; }
pid_file_redis_pair() { redis_pair_pid_file "$(primary_of redis-pair)"; }

#!/usr/bin/env bash
# Starts and stops the PostgreSQL and Redis servers that flakegen's lease
# tests run against, on loopback, under one temporary directory.
#
#   eval "$(scripts/services.sh start)"     # both; sets FLAKEGEN_TEST_*_URL
#   scripts/services.sh stop                # both; leaves nothing running
#   scripts/services.sh start redis         # one of them (the fault tests use this)
#   scripts/services.sh stop postgres
#   scripts/services.sh crash redis         # SIGKILL and start: a loss
#
# Missing servers are installed from the distribution's packages
# (apt-get install postgresql redis-server; this needs root). PostgreSQL runs
# as the unprivileged user `postgres`. Redis runs without persistence, as the
# fault tests need: a restart brings it back empty.
#
# Only `export NAME=value` lines go to stdout, so `eval` can take them, as
# with ssh-agent. Everything else goes to stderr.
#
# Settings (environment): FLAKEGEN_SERVICES_DIR (default /tmp/flakegen-services),
# FLAKEGEN_PG_PORT (55432), FLAKEGEN_REDIS_PORT (56379).
set -euo pipefail

dir=${FLAKEGEN_SERVICES_DIR:-/tmp/flakegen-services}
pg_port=${FLAKEGEN_PG_PORT:-55432}
redis_port=${FLAKEGEN_REDIS_PORT:-56379}
password=flakegen-test
pg_url="postgres://flakegen:$password@127.0.0.1:$pg_port/postgres"
redis_url="redis://:$password@127.0.0.1:$redis_port/0"

say() { printf 'services: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

apt_updated=
install() {
  [ "$(id -u)" -eq 0 ] || die "$1 is not installed and installing it needs root: apt-get install $1"
  if [ -z "$apt_updated" ]; then
    say "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    apt_updated=1
  fi
  say "installing $1 from the distribution's packages"
  # The package may try to start its own server; ours runs apart on its own port.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >&2
}

pg_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$bin" ] && [ -x "$bin/initdb" ] && echo "$bin"
}

# Runs a PostgreSQL tool as the unprivileged user.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start_postgres() {
  local bin data="$dir/postgres"
  bin=$(pg_bin) || { install postgresql; bin=$(pg_bin) || die "no initdb after installing postgresql"; }
  if [ -f "$data/postmaster.pid" ] && as_postgres "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1; then
    say "postgres already running on port $pg_port"
    return
  fi
  port_free "$pg_port" || die "port $pg_port is taken: set FLAKEGEN_PG_PORT"
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    chown postgres: "$dir" "$data" 2>/dev/null || true
    printf '%s\n' "$password" > "$dir/pgpass"
    chown postgres: "$dir/pgpass" 2>/dev/null || true
    say "initdb $data"
    as_postgres "$bin/initdb" -D "$data" -U flakegen --pwfile="$dir/pgpass" \
      --auth=scram-sha-256 --no-sync >/dev/null
    rm -f "$dir/pgpass"
  fi
  say "starting postgres on 127.0.0.1:$pg_port"
  as_postgres "$bin/pg_ctl" start -D "$data" -w -t 30 -l "$dir/postgres.log" \
    -o "-p $pg_port -k $data -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null ||
    { tail -20 "$dir/postgres.log" >&2; die "postgres did not start"; }
}

stop_postgres() {
  local bin data="$dir/postgres"
  bin=$(pg_bin) || return 0
  if [ -f "$data/postmaster.pid" ]; then
    say "stopping postgres"
    as_postgres "$bin/pg_ctl" stop -D "$data" -m immediate -w -t 30 >/dev/null 2>&1 || true
  fi
}

start_redis() {
  command -v redis-server >/dev/null || install redis-server
  if [ -f "$dir/redis.pid" ] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; then
    say "redis already running on port $redis_port"
    return
  fi
  port_free "$redis_port" || die "port $redis_port is taken: set FLAKEGEN_REDIS_PORT"
  mkdir -p "$dir"
  say "starting redis on 127.0.0.1:$redis_port (no persistence)"
  redis-server --bind 127.0.0.1 --port "$redis_port" --requirepass "$password" \
    --save '' --appendonly no --daemonize yes --dir "$dir" \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
  for _ in $(seq 500); do
    redis-cli -p "$redis_port" -a "$password" --no-auth-warning ping >/dev/null 2>&1 && return
    sleep 0.02
  done
  tail -20 "$dir/redis.log" >&2
  die "redis did not start"
}

# Waits (up to 5 s) until a process is gone, or a zombie its parent has yet
# to reap: either way, no longer listening.
wait_gone() {
  local state
  for _ in $(seq 500); do
    state=$(ps -o stat= -p "$1" 2>/dev/null || true)
    if [ -z "$state" ] || [ "${state:0:1}" = Z ]; then return 0; fi
    sleep 0.01
  done
  return 1
}

stop_redis() {
  [ -f "$dir/redis.pid" ] || return 0
  local pid
  pid=$(cat "$dir/redis.pid")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping redis"
    kill "$pid"
    wait_gone "$pid" || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/redis.pid"
}

# A crash: SIGKILL, then a start. Without persistence, Redis comes back empty.
crash_redis() {
  [ -f "$dir/redis.pid" ] || die "redis is not running"
  local pid
  pid=$(cat "$dir/redis.pid")
  say "crashing redis"
  kill -9 "$pid" 2>/dev/null || true
  wait_gone "$pid"
  rm -f "$dir/redis.pid"
  start_redis
}

command=${1:-}
which=${2:-all}
case "$which" in all | postgres | redis) ;; *) die "unknown service $which: use postgres or redis" ;; esac
case "$command" in
  start)
    mkdir -p "$dir"
    if [ "$which" != redis ]; then start_postgres; echo "export FLAKEGEN_TEST_POSTGRES_URL=$pg_url"; fi
    if [ "$which" != postgres ]; then start_redis; echo "export FLAKEGEN_TEST_REDIS_URL=$redis_url"; fi
    ;;
  crash)
    [ "$which" = redis ] || die "only redis can be crashed: use stop and start for postgres"
    crash_redis
    ;;
  stop)
    if [ "$which" != redis ]; then stop_postgres; fi
    if [ "$which" != postgres ]; then stop_redis; fi
    if [ "$which" = all ]; then rm -rf "$dir"; fi
    ;;
  *)
    die "usage: $0 start|stop [postgres|redis], or $0 crash redis"
    ;;
esac

#!/usr/bin/env bash
# Starts and stops the PostgreSQL, Redis and MariaDB servers that flakegen's
# lease and SQL tests run against, on loopback, under one temporary directory.
#
#   eval "$(scripts/services.sh start)"     # all three; sets FLAKEGEN_TEST_*_URL
#   scripts/services.sh stop                # all three; leaves nothing running
#   scripts/services.sh start redis         # one of them (the fault tests use this)
#   scripts/services.sh start mariadb       # MySQL's kin: the mysql registry, sqlx
#   scripts/services.sh stop postgres
#   scripts/services.sh crash redis         # SIGKILL and start: a loss
#   scripts/services.sh crash mariadb       # SIGKILL and start (its data stays)
#
# Missing servers are installed from the distribution's packages
# (apt-get install postgresql redis-server; this needs root). PostgreSQL runs
# as the unprivileged user `postgres`. Redis runs without persistence, as the
# fault tests need: a restart brings it back empty.
#
# Only `export NAME=value` lines go to stdout, so `eval` can take them, as
# with ssh-agent. Everything else goes to stderr.
#
# TLS: a throwaway CA (openssl) signs a certificate for 127.0.0.1 and
# localhost. PostgreSQL takes TLS on its port, and requires it of the role
# flakegen_tls; Redis takes TLS only, on a port of its own. A second CA signs
# nothing: the tests' unknown CA. MariaDB takes TLS on its port, and
# requires it of the user flakegen_tls. `start` exports the TLS URLs and
# FLAKEGEN_TEST_OTHER_CA too.
#
# Settings (environment): FLAKEGEN_SERVICES_DIR (default /tmp/flakegen-services),
# FLAKEGEN_PG_PORT (25432), FLAKEGEN_REDIS_PORT (26379), FLAKEGEN_REDIS_TLS_PORT (26380),
# FLAKEGEN_MYSQL_PORT (23306). The defaults lie below Linux's ephemeral ports
# (32768-60999): there, a client reconnecting while its server restarts can
# be given the server's own port, and the server cannot bind it again.
set -euo pipefail

dir=${FLAKEGEN_SERVICES_DIR:-/tmp/flakegen-services}
pg_port=${FLAKEGEN_PG_PORT:-25432}
redis_port=${FLAKEGEN_REDIS_PORT:-26379}
redis_tls_port=${FLAKEGEN_REDIS_TLS_PORT:-26380}
mysql_port=${FLAKEGEN_MYSQL_PORT:-23306}
password=flakegen-test
tls="$dir/tls"
pg_url="postgres://flakegen:$password@127.0.0.1:$pg_port/postgres"
redis_url="redis://:$password@127.0.0.1:$redis_port/0"
pg_tls_url="postgres://flakegen_tls:$password@127.0.0.1:$pg_port/postgres?sslmode=verify-full&sslrootcert=$tls/ca.crt"
mysql_url="mysql://flakegen:$password@127.0.0.1:$mysql_port/flakegen"
mysql_tls_url="mysql://flakegen_tls:$password@127.0.0.1:$mysql_port/flakegen?ssl-mode=VERIFY_IDENTITY&ssl-ca=$tls/ca.crt"
redis_tls_url="rediss://:$password@127.0.0.1:$redis_tls_port/0?sslrootcert=$tls/ca.crt"

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

# The CA, the server's certificate and key, and the CA that signs nothing.
make_certs() {
  [ -f "$tls/server.crt" ] && return
  command -v openssl >/dev/null || install openssl
  mkdir -p "$tls"
  say "making a throwaway CA and server certificate in $tls"
  (
    cd "$tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=flakegen test CA" \
      -keyout ca.key -out ca.crt
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 \
      -extfile san.ext -out server.crt
    openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=flakegen unknown CA" \
      -keyout other-ca.key -out other-ca.crt
  ) >/dev/null 2>&1 || die "openssl could not make the test certificates"
  chmod 600 "$tls/server.key"
  chown -R postgres: "$tls" 2>/dev/null || true
  chmod 755 "$tls"
  chmod 644 "$tls"/*.crt
}

# Whether nothing listens on port $1, waiting up to 5 s: a server killed a
# moment ago may hold its socket a little longer (MariaDB's io_uring).
port_free() {
  local _
  for _ in $(seq 50); do
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

start_postgres() {
  local bin data="$dir/postgres" fresh=
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
    # The role flakegen_tls may only connect over TLS.
    { printf 'hostnossl all flakegen_tls 127.0.0.1/32 reject\n'
      printf 'hostssl all flakegen_tls 127.0.0.1/32 scram-sha-256\n'
      cat "$data/pg_hba.conf"; } > "$data/pg_hba.new"
    mv "$data/pg_hba.new" "$data/pg_hba.conf"
    chown postgres: "$data/pg_hba.conf" 2>/dev/null || true
    fresh=1
  fi
  say "starting postgres on 127.0.0.1:$pg_port"
  # fsync=off: commits still reach the OS at once, so a killed server loses
  # none (the tests never crash the machine); synchronous_commit stays on.
  as_postgres "$bin/pg_ctl" start -D "$data" -w -t 30 -l "$dir/postgres.log" \
    -o "-p $pg_port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c ssl=on \
        -c ssl_cert_file=$tls/server.crt -c ssl_key_file=$tls/server.key \
        -c shared_preload_libraries=pg_stat_statements" >/dev/null ||
    { tail -20 "$dir/postgres.log" >&2; die "postgres did not start"; }
  if [ -n "${fresh:-}" ]; then
    PGPASSWORD=$password "$bin/psql" -q -h 127.0.0.1 -p "$pg_port" -U flakegen -d postgres \
      -c "CREATE ROLE flakegen_tls LOGIN SUPERUSER PASSWORD '$password'" >/dev/null ||
      die "could not create the role flakegen_tls"
  fi
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
  port_free "$redis_tls_port" || die "port $redis_tls_port is taken: set FLAKEGEN_REDIS_TLS_PORT"
  redis-server --bind 127.0.0.1 --port "$redis_port" --requirepass "$password" \
    --tls-port "$redis_tls_port" --tls-cert-file "$tls/server.crt" \
    --tls-key-file "$tls/server.key" --tls-ca-cert-file "$tls/ca.crt" --tls-auth-clients no \
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

# Stops the server $1 whose pid file is $2 (SIGTERM, then SIGKILL after 5 s).
stop_pid_file() {
  [ -f "$2" ] || return 0
  local pid
  pid=$(cat "$2")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping $1"
    kill "$pid"
    wait_gone "$pid" || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$2"
}

stop_redis() {
  stop_pid_file redis "$dir/redis.pid"
}

# A crash: SIGKILL, then a start. Without persistence, Redis comes back
# empty; InnoDB recovers every commit from its log.
crash() {
  local name=$1 pid_file=$2 pid
  [ -f "$pid_file" ] || die "$name is not running"
  pid=$(cat "$pid_file")
  say "crashing $name"
  kill -9 "$pid" 2>/dev/null || true
  wait_gone "$pid"
  rm -f "$pid_file"
  "start_$name"
}

mariadbd_bin() {
  local bin
  for bin in /usr/sbin/mariadbd /usr/sbin/mysqld; do
    [ -x "$bin" ] && { echo "$bin"; return; }
  done
  return 1
}

# MariaDB keeps its data, socket, pid and log in a directory of its own,
# owned by the unprivileged user `mysql`.
start_mariadb() {
  local bin data="$dir/mariadb" fresh=
  bin=$(mariadbd_bin) || { install mariadb-server; bin=$(mariadbd_bin) || die "no mariadbd after installing mariadb-server"; }
  if [ -f "$data/mariadb.pid" ] && kill -0 "$(cat "$data/mariadb.pid")" 2>/dev/null; then
    say "mariadb already running on port $mysql_port"
    return
  fi
  port_free "$mysql_port" || die "port $mysql_port is taken: set FLAKEGEN_MYSQL_PORT"
  if [ ! -d "$data/mysql" ]; then
    mkdir -p "$data"
    chown mysql: "$data" 2>/dev/null || true
    say "mariadb-install-db $data"
    mariadb-install-db --user=mysql --datadir="$data" --skip-test-db \
      --auth-root-authentication-method=socket >"$dir/mariadb-install.log" 2>&1 ||
      { tail -20 "$dir/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
    fresh=1
  fi
  # The server reads its own copy of the key: the user mysql owns it.
  cp "$tls/server.key" "$data/server.key"
  chown mysql: "$data/server.key" 2>/dev/null || true
  chmod 600 "$data/server.key"
  say "starting mariadb on 127.0.0.1:$mysql_port"
  # Commits reach the OS at once and the disk once a second: a SIGKILL
  # loses no commit (an OS crash could, which the tests never do). With 0,
  # a crash would forget the last second's renewals, which no registry can
  # tell from data it never had.
  "$bin" --no-defaults --user=mysql --datadir="$data" --port="$mysql_port" \
    --bind-address=127.0.0.1 --socket="$data/mariadb.sock" --pid-file="$data/mariadb.pid" \
    --log-error="$data/mariadb.log" --skip-log-bin --innodb-flush-log-at-trx-commit=2 \
    --ssl-ca="$tls/ca.crt" --ssl-cert="$tls/server.crt" --ssl-key="$data/server.key" \
    >/dev/null 2>&1 &
  for _ in $(seq 300); do
    mariadb-admin --socket="$data/mariadb.sock" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  mariadb-admin --socket="$data/mariadb.sock" ping >/dev/null 2>&1 ||
    { tail -20 "$data/mariadb.log" >&2; die "mariadb did not start"; }
  if [ -n "$fresh" ]; then
    # flakegen_tls may only connect over TLS.
    mariadb --socket="$data/mariadb.sock" -e "CREATE DATABASE flakegen; \
      CREATE USER 'flakegen'@'127.0.0.1' IDENTIFIED BY '$password'; \
      GRANT ALL ON *.* TO 'flakegen'@'127.0.0.1' WITH GRANT OPTION; \
      CREATE USER 'flakegen_tls'@'127.0.0.1' IDENTIFIED BY '$password' REQUIRE SSL; \
      GRANT ALL ON flakegen.* TO 'flakegen_tls'@'127.0.0.1';" ||
      die "could not create the users flakegen and flakegen_tls"
  fi
}

stop_mariadb() {
  stop_pid_file mariadb "$dir/mariadb/mariadb.pid"
}


command=${1:-}
which=${2:-all}
case "$which" in all | postgres | redis | mariadb) ;; *) die "unknown service $which: use postgres, redis or mariadb" ;; esac
case "$command" in
  start)
    mkdir -p "$dir"
    make_certs
    echo "export FLAKEGEN_TEST_OTHER_CA=$tls/other-ca.crt"
    if [ "$which" = all ] || [ "$which" = postgres ]; then
      start_postgres
      echo "export FLAKEGEN_TEST_POSTGRES_URL=$pg_url"
      echo "export FLAKEGEN_TEST_POSTGRES_TLS_URL='$pg_tls_url'"
    fi
    if [ "$which" = all ] || [ "$which" = redis ]; then
      start_redis
      echo "export FLAKEGEN_TEST_REDIS_URL=$redis_url"
      echo "export FLAKEGEN_TEST_REDIS_TLS_URL='$redis_tls_url'"
    fi
    if [ "$which" = all ] || [ "$which" = mariadb ]; then
      start_mariadb
      echo "export FLAKEGEN_TEST_MYSQL_URL=$mysql_url"
      echo "export FLAKEGEN_TEST_MYSQL_TLS_URL='$mysql_tls_url'"
    fi
    ;;
  crash)
    case "$which" in
      redis) crash redis "$dir/redis.pid" ;;
      mariadb) crash mariadb "$dir/mariadb/mariadb.pid" ;;
      *) die "redis or mariadb can be crashed: use stop and start for postgres" ;;
    esac
    ;;
  stop)
    if [ "$which" = all ] || [ "$which" = postgres ]; then stop_postgres; fi
    if [ "$which" = all ] || [ "$which" = redis ]; then stop_redis; fi
    if [ "$which" = all ] || [ "$which" = mariadb ]; then stop_mariadb; fi
    if [ "$which" = all ]; then rm -rf "$dir"; fi
    ;;
  *)
    die "usage: $0 start|stop [postgres|redis|mariadb], or $0 crash redis|mariadb"
    ;;
esac

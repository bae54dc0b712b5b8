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
# Beside each server, a replicated pair for failovers, a primary and a
# replica (members a and b), started with the rest or alone:
#
#   scripts/services.sh start postgres-pair # a primary and a streaming standby
#   scripts/services.sh start redis-pair    # a primary and a replica
#   scripts/services.sh start mariadb-pair  # two masters replicating both ways,
#                                           # one read-only (active-passive)
#   scripts/services.sh primary PAIR        # prints a or b
#   scripts/services.sh cut PAIR            # the replica stops replicating: it lags
#   scripts/services.sh promote PAIR        # the primary stops, the replica takes writes
#   scripts/services.sh flip mariadb-pair   # the primary becomes read-only, the other
#                                           # takes writes: a master-master switch
#   scripts/services.sh writable mariadb-pair both|one
#                                           # two writable masters at once, or one again
#   scripts/services.sh rejoin PAIR         # the old primary rebuilt as a replica of
#                                           # the new one, replicating
#   scripts/services.sh restart|crash PAIR  # its primary stops (or is killed) and starts
#
# And a three-member etcd cluster (etcd-server), with auth on (user
# flakegen, its keys under /flakegen) and TLS on a second port per member:
#
#   scripts/services.sh start etcd          # members e1, e2, e3
#   scripts/services.sh leader etcd         # prints the leader's name
#   scripts/services.sh kill|freeze|thaw|revive etcd MEMBER
#                                           # SIGKILL, SIGSTOP, SIGCONT, start again;
#                                           # MEMBER: e1, e2, e3, leader or follower
#   scripts/services.sh elect etcd          # the leader hands over: a new raft term
#   scripts/services.sh snapshot etcd       # saves the keyspace to $dir/etcd/snapshot.db
#   scripts/services.sh restore etcd        # every member stopped, restored from it
#                                           # (same token: the cluster keeps its id),
#                                           # and started: the writes since are gone
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
# FLAKEGEN_MYSQL_PORT (23306); the pairs' members on the next ports:
# FLAKEGEN_PG_A_PORT and _B_ (25433, 25434), FLAKEGEN_REDIS_A_PORT and _B_
# (26381, 26382), FLAKEGEN_MYSQL_A_PORT and _B_ (23307, 23308);
# FLAKEGEN_ETCD_PORT (22379): member N's client port is that plus 10 (N-1),
# its TLS port one more, its peer port two more. `start`
# exports each member's URL (FLAKEGEN_TEST_POSTGRES_A_URL, ..._B_URL, and
# REDIS_ and MYSQL_ alike). The defaults lie below Linux's ephemeral ports
# (32768-60999): there, a client reconnecting while its server restarts can
# be given the server's own port, and the server cannot bind it again.
set -euo pipefail

dir=${FLAKEGEN_SERVICES_DIR:-/tmp/flakegen-services}
pg_port=${FLAKEGEN_PG_PORT:-25432}
redis_port=${FLAKEGEN_REDIS_PORT:-26379}
redis_tls_port=${FLAKEGEN_REDIS_TLS_PORT:-26380}
mysql_port=${FLAKEGEN_MYSQL_PORT:-23306}
pg_a_port=${FLAKEGEN_PG_A_PORT:-$((pg_port + 1))}
pg_b_port=${FLAKEGEN_PG_B_PORT:-$((pg_port + 2))}
redis_a_port=${FLAKEGEN_REDIS_A_PORT:-$((redis_port + 2))}
redis_b_port=${FLAKEGEN_REDIS_B_PORT:-$((redis_port + 3))}
mysql_a_port=${FLAKEGEN_MYSQL_A_PORT:-$((mysql_port + 1))}
mysql_b_port=${FLAKEGEN_MYSQL_B_PORT:-$((mysql_port + 2))}
etcd_port=${FLAKEGEN_ETCD_PORT:-22379}
etcd_members="e1 e2 e3"
password=flakegen-test
tls="$dir/tls"
pg_url="postgres://flakegen:$password@127.0.0.1:$pg_port/postgres"
redis_url="redis://:$password@127.0.0.1:$redis_port/0"
pg_tls_url="postgres://flakegen_tls:$password@127.0.0.1:$pg_port/postgres?sslmode=verify-full&sslrootcert=$tls/ca.crt"
mysql_url="mysql://flakegen:$password@127.0.0.1:$mysql_port/flakegen"
mysql_tls_url="mysql://flakegen_tls:$password@127.0.0.1:$mysql_port/flakegen?ssl-mode=VERIFY_IDENTITY&ssl-ca=$tls/ca.crt"
redis_tls_url="rediss://:$password@127.0.0.1:$redis_tls_port/0?sslrootcert=$tls/ca.crt"
pg_url_at() { echo "postgres://flakegen:$password@127.0.0.1:$1/postgres"; }
redis_url_at() { echo "redis://:$password@127.0.0.1:$1/0"; }
mysql_url_at() { echo "mysql://flakegen:$password@127.0.0.1:$1/flakegen"; }

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



# --- The replicated pairs -----------------------------------------------
# Each pair keeps its members' data under $dir/<pair>-a and -b, and which
# member is the primary in $dir/<pair>.primary.

# The member that is not $1.
other() { if [ "$1" = a ]; then echo b; else echo a; fi; }

# Whether member $2 of pair $1 runs and takes writes.
is_primary() {
  running "$1" "$2" || return 1
  case "$1" in
    postgres-pair) [ "$(pg_pair_sql "$2" "SELECT pg_is_in_recovery()" 2>/dev/null)" = f ] ;;
    redis-pair) redis_pair_cli "$2" info replication 2>/dev/null | grep -q '^role:master' ;;
    mariadb-pair) [ "$(mariadb_pair_sql "$2" "SELECT @@read_only" 2>/dev/null)" = 0 ] ;;
  esac
}

# The member that takes writes: as noted, unless the servers say otherwise
# (a command that stopped half-way), or as noted if neither does.
primary_of() {
  local noted other_member
  noted=$(cat "$dir/$1.primary" 2>/dev/null || echo a)
  if ! is_primary "$1" "$noted"; then
    other_member=$(other "$noted")
    if is_primary "$1" "$other_member"; then
      echo "$other_member" > "$dir/$1.primary"
      noted=$other_member
    fi
  fi
  echo "$noted"
}

# Kills member $2 of pair $1 at once (SIGKILL), as a crash would.
kill_member() {
  local pid_file pid
  case "$1" in
    postgres-pair) pg_pair_stop "$2"; return ;;
    redis-pair) pid_file="$dir/redis-pair-$2.pid" ;;
    mariadb-pair) pid_file="$dir/mariadb-pair-$2/mariadb.pid" ;;
  esac
  [ -f "$pid_file" ] || return 0
  pid=$(head -n 1 "$pid_file")
  kill -9 "$pid" 2>/dev/null || true
  wait_gone "$pid"
  rm -f "$pid_file"
}

port_of() {
  local pair=$1 member=$2
  case "$pair-$member" in
    postgres-pair-a) echo "$pg_a_port" ;; postgres-pair-b) echo "$pg_b_port" ;;
    redis-pair-a) echo "$redis_a_port" ;; redis-pair-b) echo "$redis_b_port" ;;
    mariadb-pair-a) echo "$mysql_a_port" ;; mariadb-pair-b) echo "$mysql_b_port" ;;
  esac
}

# PostgreSQL: a primary, and a standby streaming from it (pg_basebackup -R).
pg_pair_run() {
  local member=$1 bin data="$dir/postgres-pair-$1" port sockets="$dir/postgres-pair-$1.sockets"
  bin=$(pg_bin)
  port=$(port_of postgres-pair "$member")
  port_free "$port" || die "port $port is taken: set FLAKEGEN_PG_${member^^}_PORT"
  # Sockets (and their lock files) apart from the data, which a clone copies.
  mkdir -p "$sockets"
  chown postgres: "$sockets" 2>/dev/null || true
  as_postgres "$bin/pg_ctl" start -D "$data" -w -t 30 -l "$dir/postgres-pair-$member.log" \
    -o "-p $port -k $sockets -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null ||
    { tail -20 "$dir/postgres-pair-$member.log" >&2; die "postgres-pair $member did not start"; }
}

pg_pair_stop() {
  local bin data="$dir/postgres-pair-$1"
  bin=$(pg_bin) || return 0
  [ -f "$data/postmaster.pid" ] || return 0
  as_postgres "$bin/pg_ctl" stop -D "$data" -m immediate -w -t 30 >/dev/null 2>&1 || true
}

# A standby of the primary on port $2, in $dir/postgres-pair-$1, anew.
pg_pair_clone() {
  local member=$1 from_port=$2 data="$dir/postgres-pair-$1"
  rm -rf "$data"
  mkdir -p "$data"
  chown postgres: "$data" 2>/dev/null || true
  chmod 700 "$data"
  as_postgres env PGPASSWORD="$password" pg_basebackup -h 127.0.0.1 -p "$from_port" \
    -U flakegen -D "$data" -R -X stream >/dev/null 2>"$dir/postgres-pair-$member.clone.log" ||
    { cat "$dir/postgres-pair-$member.clone.log" >&2; die "pg_basebackup for $member failed"; }
}

start_postgres_pair() {
  local bin data="$dir/postgres-pair-a"
  bin=$(pg_bin) || { install postgresql; bin=$(pg_bin) || die "no initdb after installing postgresql"; }
  if [ -f "$dir/postgres-pair.primary" ]; then
    say "postgres-pair already set up"
    return
  fi
  say "postgres-pair: a primary on $pg_a_port, a standby on $pg_b_port"
  rm -rf "$data" "$dir/postgres-pair-b"
  mkdir -p "$data"
  chown postgres: "$dir" "$data" 2>/dev/null || true
  printf '%s\n' "$password" > "$dir/pgpass-pair"
  chown postgres: "$dir/pgpass-pair" 2>/dev/null || true
  as_postgres "$bin/initdb" -D "$data" -U flakegen --pwfile="$dir/pgpass-pair" \
    --auth=scram-sha-256 --no-sync >/dev/null
  rm -f "$dir/pgpass-pair"
  pg_pair_run a
  pg_pair_clone b "$pg_a_port"
  pg_pair_run b
  echo a > "$dir/postgres-pair.primary"
}

stop_postgres_pair() {
  pg_pair_stop a
  pg_pair_stop b
  rm -f "$dir/postgres-pair.primary"
}

# psql on member $1 of a pair, as the superuser flakegen.
pg_pair_sql() {
  PGPASSWORD=$password psql -qAt -h 127.0.0.1 -p "$(port_of postgres-pair "$1")" -U flakegen \
    -d postgres -c "$2"
}

# Redis: a primary, and a replica of it; neither persists.
redis_pair_run() {
  local member=$1 port replicaof=()
  port=$(port_of redis-pair "$member")
  [ -n "${2:-}" ] && replicaof=(--replicaof 127.0.0.1 "$2" --masterauth "$password")
  port_free "$port" || die "port $port is taken: set FLAKEGEN_REDIS_${member^^}_PORT"
  # As the main server: its own directory, emptied, so it starts empty.
  rm -rf "$dir/redis-pair-$member"
  mkdir -p "$dir/redis-pair-$member"
  redis-server --bind 127.0.0.1 --port "$port" --requirepass "$password" \
    --save '' --appendonly no --daemonize yes --dir "$dir/redis-pair-$member" "${replicaof[@]}" \
    --repl-diskless-sync-delay 0 \
    --pidfile "$dir/redis-pair-$member.pid" --logfile "$dir/redis-pair-$member.log" >&2
  for _ in $(seq 500); do
    redis_pair_cli "$member" ping >/dev/null 2>&1 && return
    sleep 0.02
  done
  die "redis-pair $member did not start"
}

redis_pair_cli() {
  redis-cli -p "$(port_of redis-pair "$1")" -a "$password" --no-auth-warning "${@:2}"
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
  kill_member redis-pair a
  kill_member redis-pair b
  rm -f "$dir/redis-pair.primary"
}

# MariaDB: two masters, each replicating from the other (GTID), one of them
# read-only: an active-passive pair that a flip or a failover switches.
mariadb_pair_sql() {
  mariadb --socket="$dir/mariadb-pair-$1/mariadb.sock" -N -e "$2"
}

mariadb_pair_run() {
  local member=$1 bin data="$dir/mariadb-pair-$1" port id
  bin=$(mariadbd_bin)
  port=$(port_of mariadb-pair "$member")
  id=$([ "$member" = a ] && echo 11 || echo 12)
  port_free "$port" || die "port $port is taken: set FLAKEGEN_MYSQL_${member^^}_PORT"
  "$bin" --no-defaults --user=mysql --datadir="$data" --port="$port" \
    --bind-address=127.0.0.1 --socket="$data/mariadb.sock" --pid-file="$data/mariadb.pid" \
    --log-error="$data/mariadb.log" --server-id="$id" --log-bin="$data/binlog" \
    --binlog-format=ROW --log-slave-updates=0 --innodb-buffer-pool-size=32M \
    --innodb-flush-log-at-trx-commit=2 --skip-name-resolve >/dev/null 2>&1 &
  for _ in $(seq 300); do
    mariadb-admin --socket="$data/mariadb.sock" ping >/dev/null 2>&1 && return
    sleep 0.1
  done
  tail -20 "$data/mariadb.log" >&2
  die "mariadb-pair $member did not start"
}

mariadb_pair_stop() {
  stop_pid_file "mariadb-pair-$1" "$dir/mariadb-pair-$1/mariadb.pid"
}

# Member $1 replicates from member $2, from where GTIDs say.
mariadb_pair_follow() {
  mariadb_pair_sql "$1" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', \
    MASTER_PORT=$(port_of mariadb-pair "$2"), MASTER_USER='flakegen', \
    MASTER_PASSWORD='$password', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1; START SLAVE"
}

start_mariadb_pair() {
  local member data
  mariadbd_bin >/dev/null || install mariadb-server
  if [ -f "$dir/mariadb-pair.primary" ]; then
    say "mariadb-pair already set up"
    return
  fi
  say "mariadb-pair: masters on $mysql_a_port (writable) and $mysql_b_port (read-only)"
  for member in a b; do
    data="$dir/mariadb-pair-$member"
    rm -rf "$data"
    mkdir -p "$data"
    chown mysql: "$data" 2>/dev/null || true
    mariadb-install-db --user=mysql --datadir="$data" --skip-test-db \
      --auth-root-authentication-method=socket >"$dir/mariadb-pair-install.log" 2>&1 ||
      { tail -20 "$dir/mariadb-pair-install.log" >&2; die "mariadb-install-db failed"; }
    mariadb_pair_run "$member"
    mariadb_pair_sql "$member" "SET sql_log_bin = 0; CREATE DATABASE flakegen; \
      CREATE USER 'flakegen'@'127.0.0.1' IDENTIFIED BY '$password'; \
      GRANT ALL ON *.* TO 'flakegen'@'127.0.0.1' WITH GRANT OPTION; RESET MASTER;"
  done
  mariadb_pair_sql b "SET GLOBAL read_only = ON"
  mariadb_pair_follow b a
  mariadb_pair_follow a b
  echo a > "$dir/mariadb-pair.primary"
}

stop_mariadb_pair() {
  mariadb_pair_stop a
  mariadb_pair_stop b
  rm -f "$dir/mariadb-pair.primary"
}

# The replica stops replicating: from now on it misses every write.
cut_pair() {
  local pair=$1 replica
  replica=$(other "$(primary_of "$pair")")
  case "$pair" in
    postgres-pair)
      pg_pair_sql "$replica" "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null
      pg_pair_sql "$replica" "SELECT pg_reload_conf()" >/dev/null
      # Until its WAL receiver has gone.
      for _ in $(seq 100); do
        [ "$(pg_pair_sql "$replica" "SELECT count(*) FROM pg_stat_wal_receiver")" = 0 ] && break
        sleep 0.05
      done
      ;;
    # An unreachable primary: the replica keeps its data and gets no more.
    redis-pair) redis_pair_cli "$replica" replicaof 127.0.0.1 1 >/dev/null ;;
    mariadb-pair) mariadb_pair_sql "$replica" "STOP SLAVE" ;;
  esac
  say "$pair: replica $replica cut off"
}

# The primary dies (SIGKILL; an immediate stop for PostgreSQL); the
# replica takes writes.
promote() {
  local pair=$1 old new
  old=$(primary_of "$pair")
  new=$(other "$old")
  case "$pair" in
    postgres-pair)
      pg_pair_stop "$old"
      as_postgres "$(pg_bin)/pg_ctl" promote -D "$dir/postgres-pair-$new" -w -t 30 >/dev/null ||
        die "postgres-pair $new was not promoted"
      ;;
    redis-pair)
      kill_member "$pair" "$old"
      redis_pair_cli "$new" replicaof no one >/dev/null
      ;;
    mariadb-pair)
      kill_member "$pair" "$old"
      mariadb_pair_sql "$new" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF"
      ;;
  esac
  echo "$new" > "$dir/$pair.primary"
  say "$pair: $new promoted, $old killed"
}

# Master-master: the primary stays up, read-only; the other takes writes.
flip() {
  local old new
  old=$(primary_of mariadb-pair)
  new=$(other "$old")
  mariadb_pair_sql "$old" "SET GLOBAL read_only = ON"
  mariadb_pair_sql "$new" "SET GLOBAL read_only = OFF"
  echo "$new" > "$dir/mariadb-pair.primary"
  say "mariadb-pair: $new takes writes, $old read-only"
}

# Both masters writable (both), or the primary alone again (one).
writable() {
  local replica
  replica=$(other "$(primary_of mariadb-pair)")
  case "$1" in
    both) mariadb_pair_sql "$replica" "SET GLOBAL read_only = OFF" ;;
    one) mariadb_pair_sql "$replica" "SET GLOBAL read_only = ON" ;;
    *) die "writable mariadb-pair both|one" ;;
  esac
}

# The primary stops and starts again (crash: SIGKILL first, or an
# immediate stop for PostgreSQL); Redis comes back empty.
restart_primary() {
  local pair=$1 how=$2 member
  member=$(primary_of "$pair")
  case "$pair" in
    postgres-pair)
      pg_pair_stop "$member"
      pg_pair_run "$member"
      ;;
    redis-pair)
      if [ "$how" = crash ]; then
        kill_member "$pair" "$member"
      else
        stop_pid_file "redis-pair-$member" "$dir/redis-pair-$member.pid"
      fi
      redis_pair_run "$member"
      ;;
    mariadb-pair)
      if [ "$how" = crash ]; then
        kill_member "$pair" "$member"
      else
        mariadb_pair_stop "$member"
      fi
      mariadb_pair_run "$member"
      ;;
  esac
}

# Whether member $2 of pair $1 runs.
running() {
  local pid_file
  case "$1" in
    postgres-pair) pid_file="$dir/postgres-pair-$2/postmaster.pid" ;;
    redis-pair) pid_file="$dir/redis-pair-$2.pid" ;;
    mariadb-pair) pid_file="$dir/mariadb-pair-$2/mariadb.pid" ;;
  esac
  [ -f "$pid_file" ] && kill -0 "$(head -n 1 "$pid_file")" 2>/dev/null
}

# The pair made whole from whatever state a failover (or a test that
# stopped half-way) left: the primary running and taking writes, the other
# member rebuilt from it, replicating.
rejoin() {
  local pair=$1 primary stale file pos
  primary=$(primary_of "$pair")
  stale=$(other "$primary")
  case "$pair" in
    postgres-pair)
      running "$pair" "$primary" || pg_pair_run "$primary"
      if [ -f "$dir/postgres-pair-$primary/standby.signal" ]; then
        as_postgres "$(pg_bin)/pg_ctl" promote -D "$dir/postgres-pair-$primary" -w -t 30 >/dev/null
      fi
      pg_pair_stop "$stale"
      pg_pair_clone "$stale" "$(port_of postgres-pair "$primary")"
      pg_pair_run "$stale"
      ;;
    redis-pair)
      if running "$pair" "$primary"; then
        redis_pair_cli "$primary" replicaof no one >/dev/null
      else
        redis_pair_run "$primary"
      fi
      kill_member "$pair" "$stale"
      redis_pair_run "$stale" "$(port_of redis-pair "$primary")"
      redis_pair_synced "$stale"
      ;;
    mariadb-pair)
      running "$pair" "$primary" || mariadb_pair_run "$primary"
      mariadb_pair_sql "$primary" "SET GLOBAL read_only = OFF"
      running "$pair" "$stale" || mariadb_pair_run "$stale"
      # Its data and history are dropped, and the primary's loaded with
      # the GTID position they are at.
      mariadb_pair_sql "$stale" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = ON; \
        RESET MASTER; SET sql_log_bin = 0; DROP DATABASE IF EXISTS flakegen; \
        CREATE DATABASE flakegen"
      mariadb-dump --socket="$dir/mariadb-pair-$primary/mariadb.sock" --single-transaction \
        --gtid --master-data=1 flakegen > "$dir/mariadb-pair.dump" ||
        die "mariadb-dump of mariadb-pair $primary failed"
      { echo "SET sql_log_bin = 0;"; cat "$dir/mariadb-pair.dump"; } |
        mariadb --socket="$dir/mariadb-pair-$stale/mariadb.sock" flakegen ||
        die "loading the dump into mariadb-pair $stale failed"
      mariadb_pair_follow "$stale" "$primary"
      # The primary follows the rebuilt one again, from its fresh binlog.
      read -r file pos < <(mariadb_pair_sql "$stale" "SHOW MASTER STATUS" | cut -f1,2)
      mariadb_pair_sql "$primary" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', \
        MASTER_PORT=$(port_of mariadb-pair "$stale"), MASTER_USER='flakegen', \
        MASTER_PASSWORD='$password', MASTER_USE_GTID=no, MASTER_LOG_FILE='$file', \
        MASTER_LOG_POS=$pos, MASTER_CONNECT_RETRY=1; START SLAVE"
      ;;
  esac
  say "$pair: $stale rebuilt from $primary, replicating"
}


# etcd: three members on loopback, one data directory each.
etcd_index() { echo "${1#e}"; }
etcd_client_port() { echo $((etcd_port + 10 * ($(etcd_index "$1") - 1))); }
etcd_tls_port() { echo $(($(etcd_client_port "$1") + 1)); }
etcd_peer_port() { echo $(($(etcd_client_port "$1") + 2)); }
etcd_endpoints() {
  local m list=
  for m in $etcd_members; do list="${list:+$list,}127.0.0.1:$(etcd_client_port "$m")"; done
  echo "$list"
}
etcd_tls_endpoints() {
  local m list=
  for m in $etcd_members; do list="${list:+$list,}127.0.0.1:$(etcd_tls_port "$m")"; done
  echo "$list"
}
etcd_url="etcd://flakegen:$password@$(etcd_endpoints)/flakegen"
etcd_tls_url="etcds://flakegen:$password@$(etcd_tls_endpoints)/flakegen?sslrootcert=$tls/ca.crt"
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

etcd_running() {
  local pid_file="$dir/etcd/$1.pid"
  [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

etcd_run() {
  local m=$1 data="$dir/etcd/$1"
  etcd_running "$m" && return
  port_free "$(etcd_client_port "$m")" || die "port $(etcd_client_port "$m") is taken: set FLAKEGEN_ETCD_PORT"
  port_free "$(etcd_peer_port "$m")" || die "port $(etcd_peer_port "$m") is taken: set FLAKEGEN_ETCD_PORT"
  mkdir -p "$dir/etcd"
  # setsid: a member in a session of its own, so that a signal to the
  # caller's group (a test harness stopping) does not reach it.
  setsid etcd --name "$m" --data-dir "$data" \
    --listen-client-urls "http://127.0.0.1:$(etcd_client_port "$m"),https://127.0.0.1:$(etcd_tls_port "$m")" \
    --advertise-client-urls "http://127.0.0.1:$(etcd_client_port "$m")" \
    --cert-file "$tls/server.crt" --key-file "$tls/server.key" \
    --listen-peer-urls "http://127.0.0.1:$(etcd_peer_port "$m")" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer_port "$m")" \
    --initial-cluster "$(etcd_initial_cluster)" --initial-cluster-token "$(etcd_token)" \
    --initial-cluster-state new \
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
  [ -d "$dir/etcd/e1" ] || fresh=1
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

# The member that leads, by the cluster's own account (waiting up to 10 s
# for an election). The members that answer say; one down is no error here.
etcd_leader() {
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
  case "$1" in
    leader) etcd_leader ;;
    follower)
      leader=$(etcd_leader)
      for m in $etcd_members; do
        if [ "$m" != "$leader" ] && etcd_running "$m"; then echo "$m"; return; fi
      done
      die "etcd has no running follower" ;;
    e1 | e2 | e3) echo "$1" ;;
    *) die "no etcd member $1: use e1, e2, e3, leader or follower" ;;
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

etcd_restore() {
  local m
  [ -f "$dir/etcd/snapshot.db" ] || die "no etcd snapshot: run snapshot etcd first"
  for m in $etcd_members; do etcd_signal "$m" CONT; stop_pid_file "etcd $m" "$dir/etcd/$m.pid"; done
  for m in $etcd_members; do
    rm -rf "$dir/etcd/$m"
    ETCDCTL_API=3 etcdctl snapshot restore "$dir/etcd/snapshot.db" --name "$m" \
      --data-dir "$dir/etcd/$m" --initial-cluster "$(etcd_initial_cluster)" \
      --initial-cluster-token "$(etcd_token)" \
      --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer_port "$m")" >/dev/null 2>&1 ||
      die "etcd: restoring $m from the snapshot failed"
  done
  for m in $etcd_members; do etcd_run "$m"; done
  etcd_ready
  say "etcd restored from $dir/etcd/snapshot.db"
}

command=${1:-}
which=${2:-all}
# What was done to the servers, and when: for reading after a failed test.
[ -d "$dir" ] && printf '%s %s\n' "$(date +%T.%N)" "$*" >> "$dir/services.log"
pairs="postgres-pair redis-pair mariadb-pair"
case "$command" in
  leader | kill | freeze | thaw | revive | elect | snapshot | restore)
    [ "$which" = etcd ] || die "$command takes etcd" ;;
  cut | promote | rejoin | primary)
    case "$which" in postgres-pair | redis-pair | mariadb-pair) ;; *) die "$command takes a pair: $pairs" ;; esac ;;
  flip | writable)
    [ "$which" = mariadb-pair ] || die "$command takes mariadb-pair" ;;
  *)
    case "$which" in all | postgres | redis | mariadb | etcd | postgres-pair | redis-pair | mariadb-pair) ;;
      *) die "unknown service $which: use postgres, redis, mariadb, etcd or a pair ($pairs)" ;; esac ;;
esac
pair_exports() {
  case "$1" in
    postgres-pair)
      echo "export FLAKEGEN_TEST_POSTGRES_A_URL=$(pg_url_at "$pg_a_port")"
      echo "export FLAKEGEN_TEST_POSTGRES_B_URL=$(pg_url_at "$pg_b_port")" ;;
    redis-pair)
      echo "export FLAKEGEN_TEST_REDIS_A_URL=$(redis_url_at "$redis_a_port")"
      echo "export FLAKEGEN_TEST_REDIS_B_URL=$(redis_url_at "$redis_b_port")" ;;
    mariadb-pair)
      echo "export FLAKEGEN_TEST_MYSQL_A_URL=$(mysql_url_at "$mysql_a_port")"
      echo "export FLAKEGEN_TEST_MYSQL_B_URL=$(mysql_url_at "$mysql_b_port")" ;;
  esac
}
case "$command" in
  start)
    mkdir -p "$dir"
    make_certs
    echo "export FLAKEGEN_TEST_OTHER_CA=$tls/other-ca.crt"
    echo "export FLAKEGEN_SERVICES_DIR=$dir"
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
    for pair in $pairs; do
      if [ "$which" = all ] || [ "$which" = "$pair" ]; then
        "start_${pair//-/_}"
        pair_exports "$pair"
      fi
    done
    if [ "$which" = all ] || [ "$which" = etcd ]; then
      start_etcd
      echo "export FLAKEGEN_TEST_ETCD_URL=$etcd_url"
      echo "export FLAKEGEN_TEST_ETCD_TLS_URL='$etcd_tls_url'"
    fi
    ;;
  leader) etcd_leader ;;
  kill) etcd_signal "$(etcd_member "${3:-}")" KILL ;;
  freeze) etcd_signal "$(etcd_member "${3:-}")" STOP ;;
  thaw) etcd_signal "$(etcd_member "${3:-}")" CONT ;;
  revive)
    member=$(etcd_member "${3:-}")
    etcd_run "$member"
    # Up when it answers for itself.
    for _ in $(seq 100); do
      ETCD_AT="127.0.0.1:$(etcd_client_port "$member")" etcdctl_root endpoint health \
        >/dev/null 2>&1 && break
      sleep 0.1
    done
    ;;
  elect)
    # Leadership to a follower: a new raft term, as when a leader fails.
    follower=$(etcd_member follower)
    id=$(etcdctl_root member list | grep ", $follower, " | cut -d, -f1)
    ETCD_AT="127.0.0.1:$(etcd_client_port "$(etcd_leader)")" etcdctl_root move-leader "$id" >&2
    ;;
  snapshot)
    ETCD_AT="127.0.0.1:$(etcd_client_port "$(etcd_leader)")" etcdctl_root \
      snapshot save "$dir/etcd/snapshot.db" >/dev/null 2>&1 || die "etcd snapshot failed"
    say "etcd snapshot saved to $dir/etcd/snapshot.db"
    ;;
  restore) etcd_restore ;;
  crash)
    case "$which" in
      redis) crash redis "$dir/redis.pid" ;;
      mariadb) crash mariadb "$dir/mariadb/mariadb.pid" ;;
      *-pair) restart_primary "$which" crash ;;
      *) die "redis, mariadb or a pair's primary can be crashed: use stop and start for postgres" ;;
    esac
    ;;
  restart)
    case "$which" in
      *-pair) restart_primary "$which" restart ;;
      *) "stop_$which"; "start_$which" ;;
    esac
    ;;
  primary) primary_of "$which" ;;
  cut) cut_pair "$which" ;;
  promote) promote "$which" ;;
  flip) flip ;;
  writable) writable "${3:-}" ;;
  rejoin) rejoin "$which" ;;
  stop)
    if [ "$which" = all ] || [ "$which" = postgres ]; then stop_postgres; fi
    if [ "$which" = all ] || [ "$which" = redis ]; then stop_redis; fi
    if [ "$which" = all ] || [ "$which" = mariadb ]; then stop_mariadb; fi
    for pair in $pairs; do
      if [ "$which" = all ] || [ "$which" = "$pair" ]; then "stop_${pair//-/_}"; fi
    done
    if [ "$which" = all ] || [ "$which" = etcd ]; then stop_etcd; fi
    if [ "$which" = all ]; then rm -rf "$dir"; fi
    ;;
  *)
    die "usage: $0 start|stop [service], crash redis|mariadb, cut|promote|rejoin|primary PAIR, or leader|kill|freeze|thaw|revive|elect|snapshot|restore etcd (see the top of this file)"
    ;;
esac

# PostgreSQL: a server of its own (postgres), and a replicated pair
# (postgres-pair: a primary and a standby streaming from it, members a and
# b). Sourced by scripts/services.sh, after common.sh.

pg_port=${FLAKEGEN_PG_PORT:-25432}
pg_a_port=${FLAKEGEN_PG_A_PORT:-$((pg_port + 1))}
pg_b_port=${FLAKEGEN_PG_B_PORT:-$((pg_port + 2))}
pg_url_at() { echo "postgres://flakegen:$password@127.0.0.1:$1/postgres"; }

pg_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$bin" ] && [ -x "$bin/initdb" ] && echo "$bin"
}

# Runs a PostgreSQL tool as the unprivileged user.
postgres_user() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# A new data directory in $1, owned by postgres, its superuser flakegen.
pg_initdb() {
  local bin=$1 data=$2
  mkdir -p "$data"
  chown postgres: "$dir" "$data" 2>/dev/null || true
  printf '%s\n' "$password" > "$data.pwfile"
  chown postgres: "$data.pwfile" 2>/dev/null || true
  say "initdb $data"
  postgres_user "$bin/initdb" -D "$data" -U flakegen --pwfile="$data.pwfile" \
    --auth=scram-sha-256 --no-sync >/dev/null
  rm -f "$data.pwfile"
}

start_postgres() {
  local bin data="$dir/postgres" fresh=
  bin=$(pg_bin) || { install postgresql; bin=$(pg_bin) || die "no initdb after installing postgresql"; }
  if [ -f "$data/postmaster.pid" ] && postgres_user "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1; then
    say "postgres already running on port $pg_port"
    return
  fi
  port_free "$pg_port" || die "port $pg_port is taken: set FLAKEGEN_PG_PORT"
  if [ ! -f "$data/PG_VERSION" ]; then
    pg_initdb "$bin" "$data"
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
  postgres_user "$bin/pg_ctl" start -D "$data" -w -t 30 -l "$dir/postgres.log" \
    -o "-p $pg_port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c ssl=on \
        -c ssl_cert_file=$tls/server.crt -c ssl_key_file=$tls/server.key \
        -c shared_preload_libraries=pg_stat_statements" >/dev/null ||
    { tail -20 "$dir/postgres.log" >&2; die "postgres did not start"; }
  if [ -n "$fresh" ]; then
    PGPASSWORD=$password "$bin/psql" -q -h 127.0.0.1 -p "$pg_port" -U flakegen -d postgres \
      -c "CREATE ROLE flakegen_tls LOGIN SUPERUSER PASSWORD '$password'" >/dev/null ||
      die "could not create the role flakegen_tls"
  fi
}

stop_postgres() {
  local bin
  bin=$(pg_bin) || return 0
  [ -f "$dir/postgres/postmaster.pid" ] || return 0
  say "stopping postgres"
  postgres_user "$bin/pg_ctl" stop -D "$dir/postgres" -m immediate -w -t 30 >/dev/null 2>&1 || true
}

exports_postgres() {
  echo "export FLAKEGEN_TEST_POSTGRES_URL=$(pg_url_at "$pg_port")"
  echo "export FLAKEGEN_TEST_POSTGRES_TLS_URL='postgres://flakegen_tls:$password@127.0.0.1:$pg_port/postgres?sslmode=verify-full&sslrootcert=$tls/ca.crt'"
}

restart_postgres() { stop_postgres; start_postgres; }
# An immediate stop (no checkpoint), then a start: every commit comes back.
crash_postgres() { restart_postgres; }

# psql on the server at port $1, as the superuser flakegen.
pg_sql_at() {
  PGPASSWORD=$password psql -qAt -h 127.0.0.1 -p "$1" -U flakegen -d postgres -c "$2"
}

# A wipe that waits on a lock gives up after 10 s and says who holds what,
# rather than hang the test that asked for it.
pg_wipe_at() {
  local port=$1
  shift
  pg_sql_at "$port" "SET lock_timeout = '10s'; $(wipe_sql "$@")" >/dev/null && return
  pg_sql_at "$port" "SELECT pid, state, xact_start, wait_event_type, left(query, 120) \
    FROM pg_stat_activity WHERE datname = 'postgres' AND pid <> pg_backend_pid()" >&2
  die "postgres on port $port: the wipe did not get its locks within 10 s (sessions above)"
}

wipe_postgres() { pg_wipe_at "$pg_port" "$@"; }
plant_marker_postgres() { pg_sql_at "$pg_port" "$(plant_marker_sql "$@")" >/dev/null; }

# --- postgres-pair ----------------------------------------------------------

pg_pair_port() { if [ "$1" = a ]; then echo "$pg_a_port"; else echo "$pg_b_port"; fi; }
pg_pair_sql() { pg_sql_at "$(pg_pair_port "$1")" "$2"; }
pg_pair_pid_file() { echo "$dir/postgres-pair-$1/postmaster.pid"; }

postgres_pair_running() {
  local pid_file
  pid_file=$(pg_pair_pid_file "$1")
  [ -f "$pid_file" ] && kill -0 "$(head -n 1 "$pid_file")" 2>/dev/null
}

postgres_pair_is_primary() {
  postgres_pair_running "$1" && [ "$(pg_pair_sql "$1" "SELECT pg_is_in_recovery()" 2>/dev/null)" = f ]
}

pg_pair_run() {
  local member=$1 bin data="$dir/postgres-pair-$1" port sockets="$dir/postgres-pair-$1.sockets"
  bin=$(pg_bin)
  port=$(pg_pair_port "$member")
  port_free "$port" || die "port $port is taken: set FLAKEGEN_PG_${member^^}_PORT"
  # Sockets (and their lock files) apart from the data, which a clone copies.
  mkdir -p "$sockets"
  chown postgres: "$sockets" 2>/dev/null || true
  postgres_user "$bin/pg_ctl" start -D "$data" -w -t 30 -l "$dir/postgres-pair-$member.log" \
    -o "-p $port -k $sockets -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null ||
    { tail -20 "$dir/postgres-pair-$member.log" >&2; die "postgres-pair $member did not start"; }
}

pg_pair_stop() {
  local bin
  bin=$(pg_bin) || return 0
  [ -f "$(pg_pair_pid_file "$1")" ] || return 0
  postgres_user "$bin/pg_ctl" stop -D "$dir/postgres-pair-$1" -m immediate -w -t 30 >/dev/null 2>&1 || true
}

# A standby of the primary on port $2, in $dir/postgres-pair-$1, anew.
pg_pair_clone() {
  local member=$1 from_port=$2 data="$dir/postgres-pair-$1"
  rm -rf "$data"
  mkdir -p "$data"
  chown postgres: "$data" 2>/dev/null || true
  chmod 700 "$data"
  postgres_user env PGPASSWORD="$password" pg_basebackup -h 127.0.0.1 -p "$from_port" \
    -U flakegen -D "$data" -R -X stream >/dev/null 2>"$dir/postgres-pair-$member.clone.log" ||
    { cat "$dir/postgres-pair-$member.clone.log" >&2; die "pg_basebackup for $member failed"; }
}

start_postgres_pair() {
  local bin
  bin=$(pg_bin) || { install postgresql; bin=$(pg_bin) || die "no initdb after installing postgresql"; }
  if [ -f "$dir/postgres-pair.primary" ]; then
    say "postgres-pair already set up"
    return
  fi
  say "postgres-pair: a primary on $pg_a_port, a standby on $pg_b_port"
  rm -rf "$dir/postgres-pair-a" "$dir/postgres-pair-b"
  pg_initdb "$bin" "$dir/postgres-pair-a"
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

exports_postgres_pair() {
  echo "export FLAKEGEN_TEST_POSTGRES_A_URL=$(pg_url_at "$pg_a_port")"
  echo "export FLAKEGEN_TEST_POSTGRES_B_URL=$(pg_url_at "$pg_b_port")"
}

primary_postgres_pair() { primary_of postgres-pair; }

# The standby stops replicating: from now on it misses every write.
cut_postgres_pair() {
  local replica
  replica=$(other "$(primary_of postgres-pair)")
  pg_pair_sql "$replica" "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null
  pg_pair_sql "$replica" "SELECT pg_reload_conf()" >/dev/null
  # Until its WAL receiver has gone.
  for _ in $(seq 100); do
    [ "$(pg_pair_sql "$replica" "SELECT count(*) FROM pg_stat_wal_receiver")" = 0 ] && break
    sleep 0.05
  done
  say "postgres-pair: standby $replica cut off"
}

# The primary stops at once; the standby is promoted (a new timeline).
promote_postgres_pair() {
  local old new
  old=$(primary_of postgres-pair)
  new=$(other "$old")
  pg_pair_stop "$old"
  postgres_user "$(pg_bin)/pg_ctl" promote -D "$dir/postgres-pair-$new" -w -t 30 >/dev/null ||
    die "postgres-pair $new was not promoted"
  echo "$new" > "$dir/postgres-pair.primary"
  say "postgres-pair: $new promoted, $old stopped"
}

restart_postgres_pair() {
  local member
  member=$(primary_of postgres-pair)
  pg_pair_stop "$member"
  pg_pair_run "$member"
}

crash_postgres_pair() { restart_postgres_pair; }

# The pair made whole: the primary running and taking writes, the other
# member rebuilt from it, streaming.
rejoin_postgres_pair() {
  local primary stale
  primary=$(primary_of postgres-pair)
  stale=$(other "$primary")
  postgres_pair_running "$primary" || pg_pair_run "$primary"
  if [ -f "$dir/postgres-pair-$primary/standby.signal" ]; then
    postgres_user "$(pg_bin)/pg_ctl" promote -D "$dir/postgres-pair-$primary" -w -t 30 >/dev/null
  fi
  pg_pair_stop "$stale"
  pg_pair_clone "$stale" "$(pg_pair_port "$primary")"
  pg_pair_run "$stale"
  say "postgres-pair: $stale rebuilt from $primary, streaming"
}

wipe_postgres_pair() { pg_wipe_at "$(pg_pair_port "$(primary_of postgres-pair)")" "$@"; }
plant_marker_postgres_pair() {
  pg_pair_sql "$(primary_of postgres-pair)" "$(plant_marker_sql "$@")" >/dev/null
}

# The lease table saved as pg_dump has it (its rows, the sentinel among them).
dump_postgres_pair() {
  PGPASSWORD=$password pg_dump -h 127.0.0.1 -p "$(pg_pair_port "$(primary_of postgres-pair)")" \
    -U flakegen -d postgres -t flakegen_leases > "$dir/postgres-pair.dump" ||
    die "pg_dump of postgres-pair failed"
}

# The lease table dropped and loaded again from the dump: the same rows and
# sentinel, in a new table (a new oid).
undump_postgres_pair() {
  local port
  port=$(pg_pair_port "$(primary_of postgres-pair)")
  pg_sql_at "$port" "DROP TABLE flakegen_leases" >/dev/null
  PGPASSWORD=$password psql -qAt -h 127.0.0.1 -p "$port" -U flakegen -d postgres \
    -v ON_ERROR_STOP=1 -f "$dir/postgres-pair.dump" >/dev/null || die "loading the dump failed"
  say "postgres-pair: flakegen_leases restored from its dump"
}

# The primary's data directory copied aside, as a physical backup (the
# server stopped for the copy, and started again).
backup_postgres_pair() {
  local primary
  primary=$(primary_of postgres-pair)
  pg_pair_stop "$primary"
  rm -rf "$dir/postgres-pair.backup"
  cp -a "$dir/postgres-pair-$primary" "$dir/postgres-pair.backup"
  pg_pair_run "$primary"
  say "postgres-pair: $primary's data directory backed up"
}

# The backup put back in place and started as it was: the same cluster
# (system identifier), timeline, tables and rows, only older.
unbackup_postgres_pair() {
  local primary
  primary=$(primary_of postgres-pair)
  [ -d "$dir/postgres-pair.backup" ] || die "no backup: run backup postgres-pair first"
  pg_pair_stop "$primary"
  rm -rf "$dir/postgres-pair-$primary"
  cp -a "$dir/postgres-pair.backup" "$dir/postgres-pair-$primary"
  rm -f "$dir/postgres-pair-$primary/postmaster.pid"
  pg_pair_run "$primary"
  say "postgres-pair: $primary's data directory restored in place"
}

pid_file_postgres() { echo "$dir/postgres/postmaster.pid"; }
pid_file_postgres_pair() { pg_pair_pid_file "$(primary_of postgres-pair)"; }

# A statement run as the superuser, on the server or the pair's primary.
sql_postgres() { pg_sql_at "$pg_port" "$1"; }
sql_postgres_pair() { pg_pair_sql "${2:-$(primary_of postgres-pair)}" "$1"; }

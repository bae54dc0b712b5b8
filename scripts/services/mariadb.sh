# MariaDB (MySQL's kin): a server of its own (mariadb), with TLS, and a
# replicated pair (mariadb-pair: two masters replicating both ways, one of
# them read-only, members a and b). Sourced by scripts/services.sh, after
# common.sh.

mysql_port=${FLAKEGEN_MYSQL_PORT:-23306}
mysql_a_port=${FLAKEGEN_MYSQL_A_PORT:-$((mysql_port + 1))}
mysql_b_port=${FLAKEGEN_MYSQL_B_PORT:-$((mysql_port + 2))}
mysql_url_at() { echo "mysql://flakegen:$password@127.0.0.1:$1/flakegen"; }

mariadbd_bin() {
  local bin
  for bin in /usr/sbin/mariadbd /usr/sbin/mysqld; do
    [ -x "$bin" ] && { echo "$bin"; return; }
  done
  return 1
}

# A new data directory in $1, owned by the unprivileged user mysql.
mariadb_install_db() {
  rm -rf "$1"
  mkdir -p "$1"
  chown mysql: "$1" 2>/dev/null || true
  mariadb-install-db --user=mysql --datadir="$1" --skip-test-db \
    --auth-root-authentication-method=socket >"$1.install.log" 2>&1 ||
    { tail -20 "$1.install.log" >&2; die "mariadb-install-db failed"; }
}

# Waits (30 s) for the server whose data is in $1 to answer on its socket.
mariadb_up() {
  for _ in $(seq 300); do
    mariadb-admin --socket="$1/mariadb.sock" ping >/dev/null 2>&1 && return
    sleep 0.1
  done
  tail -20 "$1/mariadb.log" >&2
  die "mariadb in $1 did not start"
}

start_mariadb() {
  local bin data="$dir/mariadb" fresh=
  bin=$(mariadbd_bin) || { install mariadb-server; bin=$(mariadbd_bin) || die "no mariadbd after installing mariadb-server"; }
  if [ -f "$data/mariadb.pid" ] && kill -0 "$(cat "$data/mariadb.pid")" 2>/dev/null; then
    say "mariadb already running on port $mysql_port"
    return
  fi
  port_free "$mysql_port" || die "port $mysql_port is taken: set FLAKEGEN_MYSQL_PORT"
  [ -d "$data/mysql" ] || { mariadb_install_db "$data"; fresh=1; }
  # The server reads its own copy of the key: the user mysql owns it.
  cp "$tls/server.key" "$data/server.key"
  chown mysql: "$data/server.key" 2>/dev/null || true
  chmod 600 "$data/server.key"
  say "starting mariadb on 127.0.0.1:$mysql_port"
  # Commits reach the OS at once and the disk once a second: a SIGKILL
  # loses no commit (an OS crash could, which the tests never do).
  "$bin" --no-defaults --user=mysql --datadir="$data" --port="$mysql_port" \
    --bind-address=127.0.0.1 --socket="$data/mariadb.sock" --pid-file="$data/mariadb.pid" \
    --log-error="$data/mariadb.log" --skip-log-bin --innodb-flush-log-at-trx-commit=2 \
    --ssl-ca="$tls/ca.crt" --ssl-cert="$tls/server.crt" --ssl-key="$data/server.key" \
    >/dev/null 2>&1 &
  mariadb_up "$data"
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

stop_mariadb() { stop_pid_file mariadb "$dir/mariadb/mariadb.pid"; }
restart_mariadb() { stop_mariadb; start_mariadb; }

exports_mariadb() {
  echo "export FLAKEGEN_TEST_MYSQL_URL=$(mysql_url_at "$mysql_port")"
  echo "export FLAKEGEN_TEST_MYSQL_TLS_URL='mysql://flakegen_tls:$password@127.0.0.1:$mysql_port/flakegen?ssl-mode=VERIFY_IDENTITY&ssl-ca=$tls/ca.crt'"
}

# SIGKILL, then a start: InnoDB recovers every commit from its log.
crash_mariadb() {
  [ -f "$dir/mariadb/mariadb.pid" ] || die "mariadb is not running"
  say "crashing mariadb"
  kill_pid_file "$dir/mariadb/mariadb.pid"
  start_mariadb
}

wipe_mariadb() { mariadb --socket="$dir/mariadb/mariadb.sock" flakegen -e "$(wipe_sql "$@")"; }
plant_marker_mariadb() {
  mariadb --socket="$dir/mariadb/mariadb.sock" flakegen -e "$(plant_marker_sql "$@")"
}

# --- mariadb-pair -----------------------------------------------------------

mariadb_pair_port() { if [ "$1" = a ]; then echo "$mysql_a_port"; else echo "$mysql_b_port"; fi; }
mariadb_pair_sql() { mariadb --socket="$dir/mariadb-pair-$1/mariadb.sock" -N -e "$2"; }
mariadb_pair_pid_file() { echo "$dir/mariadb-pair-$1/mariadb.pid"; }

mariadb_pair_running() {
  local pid_file
  pid_file=$(mariadb_pair_pid_file "$1")
  [ -f "$pid_file" ] && kill -0 "$(head -n 1 "$pid_file")" 2>/dev/null
}

mariadb_pair_is_primary() {
  mariadb_pair_running "$1" && [ "$(mariadb_pair_sql "$1" "SELECT @@read_only" 2>/dev/null)" = 0 ]
}

mariadb_pair_run() {
  local member=$1 bin data="$dir/mariadb-pair-$1" port id
  bin=$(mariadbd_bin)
  port=$(mariadb_pair_port "$member")
  id=$([ "$member" = a ] && echo 11 || echo 12)
  port_free "$port" || die "port $port is taken: set FLAKEGEN_MYSQL_${member^^}_PORT"
  "$bin" --no-defaults --user=mysql --datadir="$data" --port="$port" \
    --bind-address=127.0.0.1 --socket="$data/mariadb.sock" --pid-file="$data/mariadb.pid" \
    --log-error="$data/mariadb.log" --server-id="$id" --log-bin="$data/binlog" \
    --binlog-format=ROW --log-slave-updates=0 --innodb-buffer-pool-size=32M \
    --innodb-flush-log-at-trx-commit=2 --skip-name-resolve >/dev/null 2>&1 &
  mariadb_up "$data"
}

mariadb_pair_stop() { stop_pid_file "mariadb-pair-$1" "$(mariadb_pair_pid_file "$1")"; }

# Member $1 replicates from member $2, from where GTIDs say.
mariadb_pair_follow() {
  mariadb_pair_sql "$1" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', \
    MASTER_PORT=$(mariadb_pair_port "$2"), MASTER_USER='flakegen', \
    MASTER_PASSWORD='$password', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1; START SLAVE"
}

start_mariadb_pair() {
  local member
  mariadbd_bin >/dev/null || install mariadb-server
  if [ -f "$dir/mariadb-pair.primary" ]; then
    say "mariadb-pair already set up"
    return
  fi
  say "mariadb-pair: masters on $mysql_a_port (writable) and $mysql_b_port (read-only)"
  for member in a b; do
    mariadb_install_db "$dir/mariadb-pair-$member"
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

exports_mariadb_pair() {
  echo "export FLAKEGEN_TEST_MYSQL_A_URL=$(mysql_url_at "$mysql_a_port")"
  echo "export FLAKEGEN_TEST_MYSQL_B_URL=$(mysql_url_at "$mysql_b_port")"
}

primary_mariadb_pair() { primary_of mariadb-pair; }

cut_mariadb_pair() {
  local replica
  replica=$(other "$(primary_of mariadb-pair)")
  mariadb_pair_sql "$replica" "STOP SLAVE"
  say "mariadb-pair: replica $replica cut off"
}

promote_mariadb_pair() {
  local old new
  old=$(primary_of mariadb-pair)
  new=$(other "$old")
  kill_pid_file "$(mariadb_pair_pid_file "$old")"
  mariadb_pair_sql "$new" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF"
  echo "$new" > "$dir/mariadb-pair.primary"
  say "mariadb-pair: $new promoted, $old killed"
}

# Master-master: the primary stays up, read-only; the other takes writes.
flip_mariadb_pair() {
  local old new
  old=$(primary_of mariadb-pair)
  new=$(other "$old")
  mariadb_pair_sql "$old" "SET GLOBAL read_only = ON"
  mariadb_pair_sql "$new" "SET GLOBAL read_only = OFF"
  echo "$new" > "$dir/mariadb-pair.primary"
  say "mariadb-pair: $new takes writes, $old read-only"
}

# Both masters writable (both), or the primary alone again (one).
writable_mariadb_pair() {
  local replica
  replica=$(other "$(primary_of mariadb-pair)")
  case "${1:-}" in
    both) mariadb_pair_sql "$replica" "SET GLOBAL read_only = OFF" ;;
    one) mariadb_pair_sql "$replica" "SET GLOBAL read_only = ON" ;;
    *) die "writable mariadb-pair both|one" ;;
  esac
}

restart_mariadb_pair() {
  local member
  member=$(primary_of mariadb-pair)
  mariadb_pair_stop "$member"
  mariadb_pair_run "$member"
}

crash_mariadb_pair() {
  local member
  member=$(primary_of mariadb-pair)
  kill_pid_file "$(mariadb_pair_pid_file "$member")"
  mariadb_pair_run "$member"
}

# The pair made whole: the primary taking writes, the other member's data
# and history dropped and loaded from a dump of the primary's, each
# replicating from the other.
rejoin_mariadb_pair() {
  local primary stale file pos
  primary=$(primary_of mariadb-pair)
  stale=$(other "$primary")
  mariadb_pair_running "$primary" || mariadb_pair_run "$primary"
  mariadb_pair_sql "$primary" "SET GLOBAL read_only = OFF"
  mariadb_pair_running "$stale" || mariadb_pair_run "$stale"
  mariadb_pair_sql "$stale" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = ON; \
    RESET MASTER; SET sql_log_bin = 0; DROP DATABASE IF EXISTS flakegen; \
    CREATE DATABASE flakegen"
  mariadb-dump --socket="$dir/mariadb-pair-$primary/mariadb.sock" --single-transaction \
    --gtid --master-data=1 flakegen > "$dir/mariadb-pair.rejoin.dump" ||
    die "mariadb-dump of mariadb-pair $primary failed"
  { echo "SET sql_log_bin = 0;"; cat "$dir/mariadb-pair.rejoin.dump"; } |
    mariadb --socket="$dir/mariadb-pair-$stale/mariadb.sock" flakegen ||
    die "loading the dump into mariadb-pair $stale failed"
  mariadb_pair_follow "$stale" "$primary"
  # The primary follows the rebuilt one again, from its fresh binlog.
  read -r file pos < <(mariadb_pair_sql "$stale" "SHOW MASTER STATUS" | cut -f1,2)
  mariadb_pair_sql "$primary" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='127.0.0.1', \
    MASTER_PORT=$(mariadb_pair_port "$stale"), MASTER_USER='flakegen', \
    MASTER_PASSWORD='$password', MASTER_USE_GTID=no, MASTER_LOG_FILE='$file', \
    MASTER_LOG_POS=$pos, MASTER_CONNECT_RETRY=1; START SLAVE"
  say "mariadb-pair: $stale rebuilt from $primary, replicating"
}

wipe_mariadb_pair() {
  mariadb_pair_sql "$(primary_of mariadb-pair)" "USE flakegen; $(wipe_sql "$@")"
}
plant_marker_mariadb_pair() {
  mariadb_pair_sql "$(primary_of mariadb-pair)" "USE flakegen; $(plant_marker_sql "$@")"
}

# The lease table saved as mariadb-dump has it, its sentinel row among the rows.
dump_mariadb_pair() {
  mariadb-dump --socket="$dir/mariadb-pair-$(primary_of mariadb-pair)/mariadb.sock" \
    --single-transaction flakegen flakegen_leases > "$dir/mariadb-pair.dump" ||
    die "mariadb-dump of mariadb-pair failed"
}

# The lease table loaded again from the dump on the same server: a logical
# restore (the table created anew, a second or more after the first).
undump_mariadb_pair() {
  local primary
  primary=$(primary_of mariadb-pair)
  sleep 1.1
  { echo "SET sql_log_bin = 0;"; cat "$dir/mariadb-pair.dump"; } |
    mariadb --socket="$dir/mariadb-pair-$primary/mariadb.sock" flakegen ||
    die "loading the dump into mariadb-pair $primary failed"
  say "mariadb-pair: flakegen_leases restored from its dump on $primary"
}

pid_file_mariadb() { echo "$dir/mariadb/mariadb.pid"; }
pid_file_mariadb_pair() { mariadb_pair_pid_file "$(primary_of mariadb-pair)"; }

# A statement run as the administrator in the database flakegen, on the
# server, or on the pair's primary (or member $2).
sql_mariadb() { mariadb --socket="$dir/mariadb/mariadb.sock" -N flakegen -e "$1"; }
sql_mariadb_pair() { mariadb_pair_sql "${2:-$(primary_of mariadb-pair)}" "USE flakegen; $1"; }

# The primary's data directory copied aside, as a physical backup (the
# server stopped for the copy, and started again).
backup_mariadb_pair() {
  local primary
  primary=$(primary_of mariadb-pair)
  mariadb_pair_stop "$primary"
  rm -rf "$dir/mariadb-pair.backup"
  cp -a "$dir/mariadb-pair-$primary" "$dir/mariadb-pair.backup"
  mariadb_pair_run "$primary"
  mariadb_pair_sql "$primary" "SET GLOBAL read_only = OFF"
  say "mariadb-pair: $primary's data directory backed up"
}

# The backup put back in place: the primary stopped, its data directory
# replaced by the copy, and started again on the same host and port, as
# the same server. Nothing in it differs from the moment of the copy.
unbackup_mariadb_pair() {
  local primary
  primary=$(primary_of mariadb-pair)
  [ -d "$dir/mariadb-pair.backup" ] || die "no backup: run backup mariadb-pair first"
  mariadb_pair_stop "$primary"
  rm -rf "$dir/mariadb-pair-$primary"
  cp -a "$dir/mariadb-pair.backup" "$dir/mariadb-pair-$primary"
  rm -f "$dir/mariadb-pair-$primary/mariadb.pid" "$dir/mariadb-pair-$primary/mariadb.sock"
  mariadb_pair_run "$primary"
  mariadb_pair_sql "$primary" "SET GLOBAL read_only = OFF"
  say "mariadb-pair: $primary's data directory restored in place"
}

# What every service's script shares: the services' directory, the ports,
# the password, the certificates, and the helpers that start and stop
# servers. Sourced by scripts/services.sh; nothing here runs by itself.

dir=${FLAKEGEN_SERVICES_DIR:-/tmp/flakegen-services}
password=flakegen-test
tls="$dir/tls"

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

# The CA, the server's certificate and key, the CA that signs nothing, and
# a key pair etcd signs its auth tokens with.
make_certs() {
  [ -f "$tls/jwt.key" ] && return
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
    openssl genrsa -out jwt.key 2048
    openssl rsa -in jwt.key -pubout -out jwt.pub
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
  pid=$(head -n 1 "$2")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping $1"
    kill "$pid"
    wait_gone "$pid" || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$2"
}

# Kills the server whose pid file is $1 at once (SIGKILL), as a crash would.
kill_pid_file() {
  local pid
  [ -f "$1" ] || return 0
  pid=$(head -n 1 "$1")
  kill -9 "$pid" 2>/dev/null || true
  wait_gone "$pid"
  rm -f "$1"
}

# The member of a pair that is not $1.
other() { if [ "$1" = a ]; then echo b; else echo a; fi; }

# The member of pair $1 that takes writes: as noted, unless the servers say
# otherwise (a command that stopped half-way), or as noted if neither does.
# The pair's script says whether a member is its primary (<pair>_is_primary).
primary_of() {
  local pair=$1 noted other_member
  noted=$(cat "$dir/$pair.primary" 2>/dev/null || echo a)
  if ! "${pair//-/_}_is_primary" "$noted"; then
    other_member=$(other "$noted")
    if "${pair//-/_}_is_primary" "$other_member"; then
      echo "$other_member" > "$dir/$pair.primary"
      noted=$other_member
    fi
  fi
  echo "$noted"
}

# The SQL that replaces a namespace's ($1) marker by one of another
# history dated $2 (ms since 1970): what a failover to a server whose clock
# ran ahead, or a restore, leaves behind.
plant_marker_sql() {
  local ns=${1//\'/\'\'} ms=$2
  echo "UPDATE flakegen_namespaces SET marker_ms = $ms, stamp = 'planted: another history' \
        WHERE namespace = '$ns'"
}

# Where a server keeps what raft must not wait on the disk for (etcd's
# WAL): a tmpfs where the machine has one, keyed by the services
# directory so that runs side by side stay apart; the services directory
# otherwise. CI's builds write to the same disk, and an fsync stalled
# behind them cost the etcd cluster its leader ("no quorum") in the
# middle of a rule. A member killed still keeps every write it confirmed
# (the page cache outlives the process), which is all a test asks of it.
memory_dir() {
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    echo "/dev/shm/flakegen-$(printf %s "$dir" | cksum | cut -d' ' -f1)"
  else
    echo "$dir/memory"
  fi
}

# A wipe's SQL for a namespace ($1) and worker ($2), either optional:
# everything of flakegen's, one namespace, or one record. The namespace's
# row goes before its records because flakegen's own writes lock them in
# that order: PostgreSQL runs the two statements as one transaction, and
# the other order met a renewal in a deadlock that the server broke by
# failing the wipe.
wipe_sql() {
  local ns=${1:-} worker=${2:-}
  ns=${ns//\'/\'\'}
  if [ -z "$ns" ]; then
    echo "DROP TABLE IF EXISTS flakegen_leases; DROP TABLE IF EXISTS flakegen_namespaces"
  elif [ -z "$worker" ]; then
    echo "DELETE FROM flakegen_namespaces WHERE namespace = '$ns'; \
          DELETE FROM flakegen_leases WHERE namespace = '$ns'"
  else
    echo "DELETE FROM flakegen_leases WHERE namespace = '$ns' AND worker = $worker"
  fi
}

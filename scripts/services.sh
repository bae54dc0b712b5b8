#!/usr/bin/env bash
# The servers flakegen's lease and SQL tests run against, on loopback, under
# one directory: PostgreSQL, Redis and MariaDB, each alone and as a
# replicated pair (members a and b), and a three-member etcd cluster. Each
# service's verbs live in scripts/services/<service>.sh; this dispatches.
#
#   eval "$(scripts/services.sh start)"     # every service; exports FLAKEGEN_TEST_*_URL
#   scripts/services.sh stop                # every service; leaves nothing running
#   scripts/services.sh VERB SERVICE [ARG…] # one service
#   scripts/services.sh verbs [SERVICE]     # what each service offers
#
# The services: postgres, redis, mariadb, etcd, kubernetes, and the pairs postgres-pair,
# redis-pair, mariadb-pair; and toxiproxy, the network-fault proxy the
# distance tests put in front of a registry (each test makes its own proxies
# through its API). Every registry takes start, stop, restart, exports,
# wipe [NAMESPACE [WORKER]] (everything of flakegen's, one namespace, one
# record), plant-marker NAMESPACE MS (its marker replaced by one of another
# history, dated MS) and pid-file; the pairs also primary, cut (the replica stops
# replicating), promote (the primary dies, the replica takes writes),
# rejoin (the other member rebuilt from the primary) and crash; then each
# its own (flip, writable both|one, dump, undump, backup, unbackup for
# mariadb-pair; dump, undump, backup, unbackup for postgres-pair;
# leader, kill|freeze|thaw|revive MEMBER, elect, snapshot, restore [TOKEN]
# for etcd). `verbs` lists them.
#
# kubernetes: a real kube-apiserver over an etcd member of its own, RBAC on,
# an admin token and a ServiceAccount holding the guide's Role (start,
# stop, restart, thaw, exports, wipe [NAMESPACE [WORKER|marker]], pid-file,
# snapshot, restore [OUTAGE_MS], bump-revision REV, resource-version
# NAMESPACE WORKER, token-without VERB, rotate-token SERVICEACCOUNT, api
# METHOD PATH [BODY]). Its
# binary is built from the Go module proxy once, into FLAKEGEN_TOOLS_DIR
# (default /var/cache/flakegen), and reused.
#
# Missing servers are installed from the distribution's packages (as root).
# Only `export NAME=value` lines go to stdout, so `eval` can take them, as
# with ssh-agent; everything else goes to stderr.
#
# Settings (environment): FLAKEGEN_SERVICES_DIR (default /tmp/flakegen-services),
# FLAKEGEN_PG_PORT (25432), FLAKEGEN_REDIS_PORT (26379), FLAKEGEN_REDIS_TLS_PORT
# (26380), FLAKEGEN_MYSQL_PORT (23306), each pair's members on the next ports
# (FLAKEGEN_PG_A_PORT and _B_, FLAKEGEN_REDIS_A_PORT and _B_, FLAKEGEN_MYSQL_A_PORT
# and _B_), FLAKEGEN_ETCD_PORT (22379: member N's client port is that plus
# 10 (N-1), its TLS port one more, its peer port two more), FLAKEGEN_KUBE_PORT
# (26443) and FLAKEGEN_KUBE_ETCD_PORT (22479, its peer port one more),
# FLAKEGEN_TOXIPROXY_PORT (28474, its API), FLAKEGEN_TOOLS_DIR (where the
# binaries built from the Go module proxy are kept). The defaults lie
# below Linux's ephemeral ports, where a client reconnecting while its
# server restarts could be given the server's own port.
set -euo pipefail

here=$(cd "$(dirname "$0")/services" && pwd)
# shellcheck source=services/common.sh
. "$here/common.sh"
for file in postgres redis mariadb etcd toxiproxy kubernetes; do
  # shellcheck disable=SC1090
  . "$here/$file.sh"
done

all="postgres redis mariadb postgres-pair redis-pair mariadb-pair etcd toxiproxy kubernetes"
verb=${1:-}
service=${2:-}

# The verbs SERVICE offers: the functions named <verb>_<service>.
verbs_of() {
  declare -F | sed -n "s/^declare -f \([a-z_-]*\)_${1//-/_}$/\1/p" | tr _ - | sort | tr '\n' ' '
}

case "$verb" in
  verbs)
    for s in ${service:-$all}; do echo "$s: $(verbs_of "$s")"; done
    exit 0 ;;
  start | stop)
    # What was done to the servers, and when: for reading after a failed test.
    mkdir -p "$dir"
    printf '%s %s\n' "$(date +%T.%N)" "$*" >> "$dir/services.log"
    if [ "$verb" = start ]; then
      make_certs
      echo "export FLAKEGEN_TEST_OTHER_CA=$tls/other-ca.crt"
      echo "export FLAKEGEN_SERVICES_DIR=$dir"
      # And every port, so that a verb run later by whoever evaluated this
      # (a test's failover, a wipe) reaches these servers, not the defaults'.
      for port in $(compgen -v | grep '_port$'); do echo "export FLAKEGEN_${port^^}=${!port}"; done
    fi
    for s in ${service:-$all}; do
      "${verb}_${s//-/_}"
      [ "$verb" = start ] && "exports_${s//-/_}"
    done
    if [ "$verb" = stop ] && [ -z "$service" ]; then rm -rf "$dir" "$(memory_dir)"; fi
    exit 0 ;;
  "") die "usage: $0 VERB [SERVICE [ARG…]] (see the top of this file, or: $0 verbs)" ;;
esac
case " $all " in
  *" $service "*) ;;
  *) die "no service ${service:-(none)}: use one of $all" ;;
esac
function="${verb//-/_}_${service//-/_}"
declare -F "$function" >/dev/null || die "$service has no verb $verb: it has $(verbs_of "$service")"
[ -d "$dir" ] && printf '%s %s\n' "$(date +%T.%N)" "$*" >> "$dir/services.log"
"$function" "${@:3}"

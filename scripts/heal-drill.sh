#!/usr/bin/env bash
# A service's lease through a Redis crash, as an operator would see it:
# integration/examples/async_service answers GET /id with 200 before the crash, 503
# while its lease's fence holds and the lease is leased again, and 200
# after, without a restart; its /metrics show the loss and the heal. Then it
# shuts down and gives its id back.
#
#   eval "$(scripts/services.sh start)"
#   scripts/heal-drill.sh target/debug/examples/async_service
#
# Needs FLAKEGEN_TEST_REDIS_URL (set by services.sh) and the built example.
# Short terms (TTL 1 s, skew 500 ms), so the pause is about 1.5 s; the drill
# fails if any answer is other than 200 or 503, if the 200s do not come
# back within 5 s of the crash, or if the service did not release its id.
# A request waits at most 100 ms for an ID: the new lease starts at least
# the skew allowance past the old one's fence (it waits from the moment
# the loss was seen, at or after the last renewal), so 503s must come;
# with the default second of waiting, a quick heal is answered 200 late.
set -euo pipefail

service=${1:?usage: $0 <path to the async_service example>}
url=${FLAKEGEN_TEST_REDIS_URL:?start the servers first: eval \"\$(scripts/services.sh start)\"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

"$service" "$url" --namespace "heal-drill-$$" --listen 127.0.0.1:0 \
  --ttl-ms 1000 --skew-ms 500 --max-wait-ms 100 > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 100); do
  grep -q '^listening on' "$work/out" && break
  sleep 0.1
done
address=$(sed -n 's|^listening on http://\([^/]*\)/id$|\1|p' "$work/out")
[ -n "$address" ] || { cat "$work/out" "$work/err" >&2; echo "heal drill: the service did not start" >&2; exit 1; }
host=${address%:*}
port=${address##*:}

# One GET /id over bash's /dev/tcp: prints the status code.
status() {
  local line
  exec 3<>"/dev/tcp/$host/$port" || { echo 000; return; }
  printf 'GET /id HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$address" >&3
  read -r line <&3 || line=""
  exec 3<&-
  line=${line#HTTP/1.1 }
  echo "${line%% *}"
}

now_ms() { date +%s%3N; }

# The Redis server process's id: a crash that restarted it changes it.
# (redis-cli reads redis://:password@ as the user "", whom Redis refuses.)
run_id() {
  redis-cli -u "${url/:\/\/:/://default:}" --no-auth-warning info server 2>/dev/null |
    sed -n 's/^run_id:\([0-9a-f]*\).*/\1/p'
}

# Requests every 20 ms: 1 s before the crash, then until 5 s after it.
codes=()
started=$(now_ms)
while [ $(( $(now_ms) - started )) -lt 1000 ]; do codes+=("$(status)"); sleep 0.02; done
before=$(run_id)
crashed=$(now_ms)
"$root/scripts/services.sh" crash redis 2> "$work/crash" || { cat "$work/crash" >&2; exit 1; }
after=$(run_id)
marks=${#codes[@]}
back=""
while [ $(( $(now_ms) - crashed )) -lt 5000 ]; do
  code=$(status)
  codes+=("$code")
  if [ "$code" = 503 ]; then saw_503=1; fi
  if [ -n "${saw_503:-}" ] && [ "$code" = 200 ] && [ -z "$back" ]; then back=$(( $(now_ms) - crashed )); fi
  sleep 0.02
done

summary=$(printf '%s\n' "${codes[@]}" | uniq -c | awk '{printf "%s x%s, ", $2, $1}')
echo "heal drill: ${summary%, } (crash after request $marks)"
bad=$(printf '%s\n' "${codes[@]}" | grep -cvE '^(200|503)$' || true)
[ "$bad" -eq 0 ] || { echo "heal drill: $bad answers other than 200 or 503" >&2; exit 1; }
printf '%s\n' "${codes[@]:0:$marks}" | grep -qvx 200 && { echo "heal drill: refused before the crash" >&2; exit 1; }
if [ -z "${saw_503:-}" ]; then
  cat "$work/crash" "$work/err" >&2
  if [ -z "$before" ] || [ "$before" = "$after" ]; then
    echo "heal drill: the crash did not restart Redis (run_id ${before:-unread} before, ${after:-unread} after)" >&2
  else
    echo "heal drill: Redis restarted (run_id $before, then $after) but the service never answered 503: its lease outlived the crash" >&2
  fi
  exit 1
fi
[ -n "$back" ] || { cat "$work/err" >&2; echo "heal drill: no 200 within 5 s of the crash" >&2; exit 1; }
[ "${codes[-1]}" = 200 ] || { echo "heal drill: refusing again at the end" >&2; exit 1; }
echo "heal drill: 200 again ${back} ms after the crash, with no restart"

# The metrics say what happened: one loss, one lease taken again, refusals
# at the fence meanwhile, and the lease held again.
exec 3<>"/dev/tcp/$host/$port"
printf 'GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$address" >&3
metrics=$(cat <&3)
exec 3<&-
metric() { sed -n "s/^$1 //p" <<<"$metrics"; }
losses=$(metric 'flakegen_lease_losses_total{namespace="heal-drill-[0-9]*"}')
again=$(metric 'flakegen_lease_reacquisitions_total{namespace="heal-drill-[0-9]*"}')
held=$(metric 'flakegen_lease_state{namespace="heal-drill-[0-9]*",state="held"}')
refused=$(metric 'flakegen_refusals_total{kind="lease_lost"}')
echo "heal drill: metrics: ${losses:-?} lost, ${again:-?} taken again, held ${held:-?}, ${refused:-0} refused at the fence"
[ "${losses:-0}" -ge 1 ] && [ "${again:-0}" -ge 1 ] && [ "${held:-0}" = 1 ] ||
  { printf '%s\n' "$metrics" >&2; echo "heal drill: the metrics do not show the loss and the heal" >&2; exit 1; }

kill -INT "$pid"
wait "$pid"
grep -q '^released worker id' "$work/out" || { cat "$work/out" "$work/err" >&2; echo "heal drill: the service did not release its id" >&2; exit 1; }

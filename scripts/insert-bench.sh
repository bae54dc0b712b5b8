#!/usr/bin/env bash
# Measures inserts into a real PostgreSQL under three primary keys: BIGINT
# from flakegen, UUID v4 and UUID v7 (integration/examples/insert_bench.rs).
#
#   scripts/insert-bench.sh            # 1,000,000 rows per pass (a few minutes)
#   scripts/insert-bench.sh --quick    # 20,000 rows per pass (seconds)
#   scripts/insert-bench.sh --rows 5000000
#
# Uses the server at FLAKEGEN_TEST_POSTGRES_URL, or starts one with
# scripts/services.sh (and stops it again).
set -euo pipefail
cd "$(dirname "$0")/.."

args=()
for arg in "$@"; do
  case "$arg" in
    --quick) args+=(--rows 20000 --batch 5000) ;;
    *) args+=("$arg") ;;
  esac
done

if [ -z "${FLAKEGEN_TEST_POSTGRES_URL:-}" ]; then
  # Stop the server afterwards only if this script started it.
  pid_file="${FLAKEGEN_SERVICES_DIR:-/tmp/flakegen-services}/postgres/postmaster.pid"
  [ -f "$pid_file" ] || trap 'scripts/services.sh stop postgres' EXIT
  eval "$(scripts/services.sh start postgres)"
fi

cargo run -p flakegen-integration --release --quiet --example insert_bench -- "$FLAKEGEN_TEST_POSTGRES_URL" "${args[@]}"

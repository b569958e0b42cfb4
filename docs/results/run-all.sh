#!/usr/bin/env bash
# Runs every experiment profile in full and writes its report here, in the shape of the
# source document it follows. Every step runs REPEAT times (default 3), interleaved, and the
# reports give the median with [min max]; each report's header names the date and the
# machine, and its notes the CPU verdict of every step.
# Usage: [REPEAT=N] docs/results/run-all.sh [profile-name ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
./dev setup
export WORKBENCH_STORE=${WORKBENCH_STORE:-$(mktemp -d)/results.sqlite3}
declare -A FORMAT=(
  [client-strategies]=criterion [client-strategies-pubsub]=criterion
  [value-sizes]=gobench [value-sizes-pubsub]=gobench
  [memory-limit-hit-rate]=hitrate
  [caching-proxy-bad-query]=wrk [caching-proxy-miss]=wrk [caching-proxy-hit]=wrk
  [kv-store]=wrk
)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${!FORMAT[@]}")
for name in "${names[@]}"; do
  echo "== $name" >&2
  id=$(.venv/bin/workbench run "profiles/$name.toml" --quiet --print-id --name "$name" \
    --repeat "${REPEAT:-3}") || echo "$name: run status $?" >&2
  .venv/bin/workbench report "$id" --format "${FORMAT[$name]}" -o "docs/results/$name.md"
  .venv/bin/workbench report "$id" --format table -o "docs/results/$name.table.md"
done

#!/usr/bin/env bash
# Regenerates the chart the README shows: a managed redis-server under 1 to 256 clients of
# the default strategy, run into a private store so that `last` is this run.
set -euo pipefail
cd "$(dirname "$0")/../.."
store=$(mktemp -d)/runs.sqlite3
workbench=${WORKBENCH:-.venv/bin/workbench}
"$workbench" run --quiet --store "$store" --name "redis over concurrency" \
    --set target.system=redis --set target.managed=true \
    --set 'load.concurrency=[1,4,16,64,256]' --set load.duration=3
"$workbench" report last --store "$store" --format svg --chart latency-vs-throughput \
    -o docs/images/latency-vs-throughput.svg
rm -rf "$(dirname "$store")"

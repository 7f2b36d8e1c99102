#!/usr/bin/env bash
# The criterion benches of mapfilter-core's methods in memory (fast
# methods against naive; the host naive method), with criterion's own
# reports under target/criterion/: no BENCHMARKS.md table is rendered from
# them. ARGS go to `cargo bench` (e.g. `--bench host_naive`).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo bench -p mapfilter-benches "$@"

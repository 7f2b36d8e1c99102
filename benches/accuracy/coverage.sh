#!/usr/bin/env bash
# Coverage of the 95 % class-area intervals of `mapfilter assess` (issue 37):
# 200 seeded rounds of sample (proportional, n = 300, at least 20 per
# class) -> label from a truth raster -> assess, on the synthetic 240 x 160
# map of tests/accuracy.rs whose true class areas are known. Prints how many
# of the 800 intervals (200 seeds x 4 classes) cover the true area; about
# 95 % is right. Deterministic: the seeds fix every point.
#
#   bash benches/accuracy/coverage.sh
#
# It runs the ignored test `accuracy::coverage_over_200_seeds` of the
# integration binary (the same scene and labelling helper as the CI test).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo test --test integration accuracy::coverage_over_200_seeds -- --ignored --nocapture 2>&1 \
  | grep '^coverage:'

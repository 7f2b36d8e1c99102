#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (unit, integration,
# device-vs-reference on PoCL, fixtures).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Device tests must not skip here: PoCL is installed above.
export MAPFILTER_REQUIRE_OPENCL=1
cargo test --workspace --locked

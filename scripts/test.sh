#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (unit, integration,
# device-vs-reference on PoCL, fixtures).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --locked

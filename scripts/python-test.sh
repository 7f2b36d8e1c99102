#!/usr/bin/env bash
# Builds the Python package (python/, PyO3 + maturin) into a virtual
# environment under the repository (.venv-py, git-ignored) and runs its
# pytest suite (python/tests). scripts/test.sh runs it after `cargo test`,
# whose build it reuses: the extension is built with the test profile's
# settings into the workspace's target/, so only the binding and pyo3 are
# compiled here, not mapfilter-core (the library below GDAL and the CLI,
# all the binding calls) or the dependencies again (python/Cargo.toml pins
# the features that make them the same).
# Extra arguments go to pytest (e.g. -k dask). `--prepare` only makes the
# environment and installs the suite's packages (scripts/test.sh runs that
# beside the cargo build: the downloads need the network, not the cores).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-py
if [ ! -x "$venv/bin/python" ]; then
  # Debian's interpreter (python3-venv, installed by scripts/setup.sh), not
  # whatever python3 comes first on PATH.
  /usr/bin/python3 -m venv "$venv"
fi
export PATH="$PWD/$venv/bin:$PATH"
pip install --quiet --disable-pip-version-check -r python/requirements-test.txt
if [ "${1:-}" = --prepare ]; then
  exit 0
fi
# --no-build-isolation: maturin from the pinned requirements, not a fresh
# download per build. The profile: dev with every setting of Cargo.toml's
# [profile.test] and its per-package overrides (opt-level 2 for the core
# and the dependencies, 0 for the layers above and below it, line tables
# for the workspace only), read from Cargo.toml itself so that the two can
# never drift apart: cargo then finds every crate `cargo test` built,
# mapfilter-core included (artifacts are keyed by a profile's settings, not
# by its name; the test profile itself cannot build a cdylib: it builds
# test harnesses), and compiles only pyo3, numpy and the binding here. One
# override missing (mapfilter-base's opt-level once was) rebuilt the core:
# about 95 s of a CI run. `pip install ./python` alone builds the release
# profile.
MATURIN_PEP517_ARGS="--profile dev $(/usr/bin/python3 scripts/test-profile-flags.py)"
export MATURIN_PEP517_ARGS
pip install --quiet --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps ./python
# The CLI the suite compares with: the one `cargo test` built.
export MAPFILTER_BIN="${MAPFILTER_BIN:-$PWD/target/debug/mapfilter}"
export MAPFILTER_REQUIRE_CLI=1
exec pytest -q -p no:cacheprovider python/tests "$@"

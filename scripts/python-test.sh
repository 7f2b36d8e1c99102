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
# download per build. The profile: dev with the test profile's settings
# (opt-level 2; line tables for the workspace's crates, no debug info for
# dependencies, as Cargo.toml's [profile.test] and
# [profile.test.package."*"] say), so that cargo finds every crate
# `cargo test` built, mapfilter-core and tiles included (artifacts are
# keyed by a profile's settings, not by its name; the test profile itself
# cannot build a cdylib: it builds test harnesses): only pyo3, numpy and
# the binding are compiled here. `pip install ./python` alone builds the
# release profile.
export MATURIN_PEP517_ARGS="--profile dev \
  --config profile.dev.opt-level=2 \
  --config 'profile.dev.debug=\"line-tables-only\"' \
  --config 'profile.dev.package.\"*\".opt-level=2' \
  --config 'profile.dev.package.\"*\".debug=false'"
pip install --quiet --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps ./python
# The CLI the suite compares with: the one `cargo test` built.
export MAPFILTER_BIN="${MAPFILTER_BIN:-$PWD/target/debug/mapfilter}"
export MAPFILTER_REQUIRE_CLI=1
exec pytest -q -p no:cacheprovider python/tests "$@"

#!/usr/bin/env bash
# Builds the Python package (python/, PyO3 + maturin) into a virtual
# environment under the repository (.venv-py, git-ignored) and runs its
# pytest suite (python/tests). scripts/test.sh runs it after `cargo test`,
# whose build it reuses: the extension is built with the test profile into
# the workspace's target/, so only the binding, pyo3 and the workspace's
# crates it uses (mapfilter-core, the library below GDAL and the CLI, and
# tiles) are compiled here, not the dependencies again (python/Cargo.toml
# pins the features that make them the same).
# Extra arguments go to pytest (e.g. -k dask).
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
# --no-build-isolation: maturin from the pinned requirements, not a fresh
# download per build. The profile: dev, whose dependencies get the settings
# of Cargo.toml's [profile.test.package."*"], so that cargo finds the ones
# `cargo test` built (artifacts are keyed by a profile's settings, not by
# its name; the test profile itself cannot build a cdylib: it builds test
# harnesses); the workspace's own crates (mapfilter-core and tiles, which the
# test build has at opt-level 2, and the binding) at opt-level 0, which
# compiles them in a fraction of the time and runs the suite's small
# arrays fast enough. `pip install ./python` alone builds the release profile.
export MATURIN_PEP517_ARGS="--profile dev \
  --config profile.dev.debug=false \
  --config 'profile.dev.package.\"*\".opt-level=2' \
  --config 'profile.dev.package.\"*\".debug=false'"
pip install --quiet --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps ./python
# The CLI the suite compares with: the one `cargo test` built.
export MAPFILTER_BIN="${MAPFILTER_BIN:-$PWD/target/debug/mapfilter}"
export MAPFILTER_REQUIRE_CLI=1
exec pytest -q -p no:cacheprovider python/tests "$@"

"""Prints Cargo.toml's [profile.test] (with its per-package overrides) as
cargo `--config` flags for the dev profile, for scripts/python-test.sh:
the Python extension is then built with exactly the settings of the
crates `cargo test` built, and reuses them instead of compiling them again.
"""
import json
import tomllib


def flags(prefix, table):
    for key, value in table.items():
        if isinstance(value, dict):
            yield from flags(f"{prefix}.{json.dumps(key)}", value)
        else:
            yield f"--config '{prefix}.{key}={json.dumps(value)}'"


with open("Cargo.toml", "rb") as manifest:
    test = tomllib.load(manifest)["profile"]["test"]
print(" ".join(flags("profile.dev", test)))

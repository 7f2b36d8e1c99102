#!/usr/bin/env python3
"""Writes qgis/mapfilter_provider/cli_help.json from `mapfilter describe
--json` (the CLI's own description of its commands, from the clap
definitions behind `--help`), kept to the commands the QGIS provider
offers, so its algorithms show the CLI's own help and defaults. With
--check, fails (exit 1) if the file differs from what the binary describes
now, naming the command that regenerates it.

    python3 qgis/tools/gen_cli_help.py --bin target/debug/mapfilter [--check]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN = os.path.join(HERE, "..", "mapfilter_provider")
sys.path.insert(0, PLUGIN)
import cli_help  # noqa: E402  (plain Python, no QGIS)

# The commands the provider has algorithms for (batch: its three steps).
COMMANDS = [
    "smooth", "compare", "filter", "gen", "info", "sieve",
    "batch", "batch plan", "batch run", "batch report",
]


def current(binary):
    out = subprocess.run(
        [binary, "describe", "--json"], capture_output=True, text=True, check=True
    )
    described = json.loads(out.stdout)["commands"]
    entries = {name: described[name] for name in COMMANDS}
    for name, entry in entries.items():
        cli_help.Command(name, entry)  # reads
    return {
        "generated_by": "qgis/tools/gen_cli_help.py from `mapfilter describe --json`",
        "commands": entries,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="mapfilter", help="the mapfilter binary")
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args()
    text = json.dumps(current(args.bin), indent=1, ensure_ascii=False) + "\n"
    if args.check:
        with open(cli_help.HELP_FILE, encoding="utf-8") as f:
            if f.read() != text:
                print(
                    "cli_help.json is stale: the CLI's options changed; regenerate it with "
                    f"python3 qgis/tools/gen_cli_help.py --bin {args.bin}",
                    file=sys.stderr,
                )
                return 1
        print("cli_help.json matches the binary's description")
        return 0
    with open(cli_help.HELP_FILE, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.normpath(cli_help.HELP_FILE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

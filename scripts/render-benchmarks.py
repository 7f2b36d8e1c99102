#!/usr/bin/env python3
"""Renders BENCHMARKS.md's tables from the JSON lines the bench scripts write.

Every measured row is one JSON object in benches/results/<machine>/<table>.jsonl:

    {"table": "naive-pocl", "row": 3, "machine": "dev-2core", "date": "2026-11-21",
     "commit": "30b0209", "command": "mapfilter bench ...",
     "columns": ["input", "host ms", ...], "align": "lrr...",
     "figures": ["--size 1024 ...", "69.1-75.9", ...]}

(`row` orders the rows of a table, which may come from several machines' files;
`align` is one letter per column, l or r; `date` and `commit` are null where the
measurement did not record them.) Every line must be such a row: raw bench
output goes elsewhere (the bench's $OUT), not under benches/results/.

In the Markdown, each table sits between `<!-- table:ID -->` and `<!-- /table -->`;
`render` replaces what is between them with the table built from the JSON lines,
and leaves everything else as it is. The same input always gives the same bytes.

    python3 scripts/render-benchmarks.py render [--in BENCHMARKS.md] [--out FILE]
    python3 scripts/render-benchmarks.py check  [--in FILE]   # exit 1 if stale

(The JSON lines were first made from the hand-written tables by a one-off
`import`, in git history.)
"""

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benches" / "results"
MARKER = re.compile(r"^<!-- table:([a-z0-9-]+) -->$")
END = "<!-- /table -->"


def load_rows(results):
    """Every table row under results/*/*.jsonl, by table id, in row order."""
    tables = {}
    for path in sorted(results.glob("*/*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON ({e}); fix or remove the line")
            if not isinstance(obj, dict) or "table" not in obj or "figures" not in obj:
                sys.exit(f"{path}:{n}: not a table row (no \"table\" and \"figures\"); "
                         "raw bench output does not belong under benches/results/")
            tables.setdefault(obj["table"], []).append((obj.get("row", 0), str(path), n, obj))
    return {t: [r[3] for r in sorted(rows)] for t, rows in tables.items()}


def cells_line(cells):
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def render_table(table, rows):
    columns, align = rows[0]["columns"], rows[0].get("align", "")
    for r in rows:
        if r["columns"] != columns or len(r["figures"]) != len(columns):
            sys.exit(f"table {table}: row {r.get('row')} has other columns than row 0")
    align = align.ljust(len(columns), "l")
    lines = [cells_line(columns), cells_line(["---:" if a == "r" else "---" for a in align])]
    lines += [cells_line(r["figures"]) for r in rows]
    return lines


def render(text, tables):
    out, lines, i = [], text.split("\n"), 0
    used = set()
    while i < len(lines):
        m = MARKER.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        table = m.group(1)
        if table not in tables:
            sys.exit(f"no JSON lines for table {table}: add them under benches/results/<machine>/")
        while i < len(lines) and lines[i] != END:
            i += 1
        if i == len(lines):
            sys.exit(f"table {table}: no closing {END}")
        out += render_table(table, tables[table])
        used.add(table)
    unused = sorted(set(tables) - used)
    if unused:
        print(f"note: tables with no marker: {', '.join(unused)}", file=sys.stderr)
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("action", choices=["render", "check"])
    p.add_argument("--in", dest="src", default=str(ROOT / "BENCHMARKS.md"))
    p.add_argument("--out", default=None, help="default: the input file (render), stdout if -")
    p.add_argument("--results", default=str(RESULTS))
    a = p.parse_args()
    src = pathlib.Path(a.src)
    text = src.read_text()
    rendered = render(text, load_rows(pathlib.Path(a.results)))
    if a.action == "check":
        if rendered != text:
            sys.exit(f"{src} is stale: run scripts/render-benchmarks.py render --in {src}")
        return
    if a.out == "-":
        sys.stdout.write(rendered)
    else:
        pathlib.Path(a.out or src).write_text(rendered)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Renders BENCHMARKS.md's tables from the JSON lines the bench scripts write.

Every measured row is one JSON object in benches/results/<machine>/<table>.jsonl:

    {"table": "naive-pocl", "row": 3, "machine": "dev-2core", "date": "2026-11-21",
     "commit": "30b0209", "command": "mapfilter bench ...",
     "columns": ["input", "host ms", ...], "align": "lrr...",
     "figures": ["--size 1024 ...", "69.1-75.9", ...]}

(`row` orders the rows of a table, which may come from several machines' files;
`align` is one letter per column, l or r; `date` and `commit` are null where the
measurement did not record them.) Lines without `table` and `figures` (raw bench
output kept beside them) are skipped.

In the Markdown, each table sits between `<!-- table:ID -->` and `<!-- /table -->`;
`render` replaces what is between them with the table built from the JSON lines,
and leaves everything else as it is. The same input always gives the same bytes.

    python3 scripts/render-benchmarks.py render [--in BENCHMARKS.md] [--out FILE]
    python3 scripts/render-benchmarks.py check  [--in FILE]   # exit 1 if stale
    python3 scripts/render-benchmarks.py import --in OLD.md --out MARKED.md
        (one-off: turns the tables of a Markdown file without markers into
        JSON lines and writes the file with markers)
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
                continue
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


# --- one-off import of the tables written by hand ------------------------------

# The tables of BENCHMARKS.md in order, with what its prose says of each: id,
# machine, date, commit, command (None: not recorded there; "skip": a table of
# words, not measurements, left as Markdown). A row whose first cell names a GPU
# machine is that machine's; a "recorded" or "binary" cell gives the row's own
# commit and date.
IMPORTED = [
    ("skip",),  # Machines and inputs
    ("skip",),  # Summary
    ("host-vs-grass", "dev-2core", "2026-11-21", "8e0c165", "bash benches/peers/run.sh"),
    ("bounded-memory", "dev-2core", "2026-11-21", "6a1f083",
     "/usr/bin/time -v mapfilter gen big.tif --size 40000x40000 --classes 12 -q; "
     "/usr/bin/time -v mapfilter smooth big.tif big_out.tif -k box:3 -q"),
    ("naive-pocl", "dev-2core", "2026-11-21", "30b0209",
     "mapfilter bench ARGS --device host|cpu --tile 512 --repeat 3 --warmup 1 --check; "
     "mapfilter smooth -q -k K --device host|cpu data/modis_igbp_2019_2048.tif out.tif"),
    ("naive-gpu", "h200", "2026-11-21", "bce906e", "QUICK=1 bash scripts/gpu-bench.sh"),
    ("naive-gpu-sweep", "h200", "2026-11-21", "4b58468", "bash scripts/gpu-bench.sh"),
    ("fast-agreement", "dev-2core", None, None,
     "mapfilter bench --size S --classes C --pattern P --kernel K --method svd|dct5 [--terms K] "
     "--device host|cpu --tile 1024 --repeat 1 --warmup 0 --check"),
    ("certified", "dev-2core", None, None,
     "mapfilter bench ... --method dct5|svd --exact --device host|cpu|gpu --check; "
     "bash scripts/gpu-fast-bench.sh carry/mapfilter OUT sweep|big"),
    ("dct5-sigma", "dev-2core", None, None,
     "RAYON_NUM_THREADS=1 mapfilter bench --size 2048 --classes 4 --kernel gaussian:S --method dct5 "
     "--device host|cpu --tile 2048 --repeat 5 --warmup 1; "
     "MF_BIG_SIZE=384 bash scripts/gpu-fast-bench.sh carry/mapfilter OUT big"),
    ("gpu-dct5-4096", "h200", None, None,
     "mapfilter bench --size 4096 --classes 17 --kernel gaussian:21 --method dct5 --device gpu "
     "--tile 4096 --repeat 10 --warmup 2"),
    ("dct5-vs-grass", "dev-2core", "2026-11-21/22", None,
     "chrt -r 10 bash benches/peers/grass-dct5.sh [--base OLD] NEW"),
    ("host-dct5-memory", "dev-2core", None, "d15b410",
     "mapfilter bench --input data/modis_igbp_2019_2048.tif --kernel gaussian:5 --method dct5 "
     "--device host --tile T --repeat 5 --warmup 1 [--exact]; mapfilter smooth -q -k gaussian:5 "
     "--method dct5 --device host data/modis_igbp_2019_2048.tif out.tif"),
    ("fixed-costs", "dev-2core", None, None,
     "mapfilter smooth -q -k gaussian:5 --method dct5 --device host data/modis_igbp_2019_2048.tif out.tif"),
    ("compression", "dev-2core", "2026-11-21", "c6b7e0d",
     "a C program timing GDALCreate + RasterIO + GDALClose (not in the repository)"),
    ("filters-host", "dev-2core", "2026-11-21", "8aa9f41",
     "/usr/bin/python3 scripts/bench_filters.py --bin target/release/mapfilter --repeat 3"),
    ("filters-gpu-umat", "h200", "2026-11-21", "04d3b55", "OUT=$OUT/gpu-filters bash scripts/gpu-filters.sh"),
    ("filters-gpu-papers", "h200", "2026-11-21", "04d3b55",
     "mapfilter bench-filter --op OP --size WxH --bands 3 --device gpu --repeat 20"),
    ("filters-pocl", "dev-2core", "2026-11-21", "0d8ae69",
     "mapfilter bench-filter --op OP --size 2048 --device cpu --repeat 3"),
    ("vs-gdal-gpu", "h100", "2026-11-24", "b43f3da",
     "bash scripts/gpu-bundle.sh; on the GPU machine OUT=dir bash scripts/gpu-throughput.sh"),
    ("vs-gdal-2core", "dev-2core", "2026-11-24", "2472f91", 'benches/peers/vs_gdal.py MAP --setting "..."'),
    ("engine-gpu", "h100", "2026-11-24", "8056e3e",
     "bash scripts/gpu-bundle.sh; on the GPU machine OUT=dir bash scripts/gpu-engine.sh"),
    ("engine-gpu-smooth", "h100", "2026-11-24", "8056e3e",
     "bash scripts/gpu-bundle.sh; on the GPU machine OUT=dir bash scripts/gpu-engine.sh"),
    ("batch", "dev-2core", "2026-11-24", "2472f91",
     "cargo build --release && chrt -r 10 bash benches/batch/run.sh 5"),
    ("sieve", "dev-2core", "2026-11-24", None, "bash benches/peers/sieve.sh"),
    ("imgops-host", "dev-2core", "2026-11-24", None, "python3 scripts/bench_filters.py --imgops"),
    ("imgops-gpu", "h100", "2026-11-24", "8056e3e",
     "source scripts/gpu-env.sh && SCALE=0 OUT=dir bash scripts/gpu-imgops.sh"),
]

GPU_ROW = re.compile(r"\b(H200|H100)\b")


def split_cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def row_facts(meta, columns, figures):
    """Machine, date and commit of one row: the table's, unless the row says."""
    _, machine, date, commit, _ = meta
    m = GPU_ROW.search(figures[0]) if figures else None
    if m:
        machine = m.group(1).lower()
    for name, cell in zip(columns, figures):
        if name in ("recorded", "binary"):
            c = re.search(r"`([0-9a-f]{7})`", cell)
            d = re.search(r"\b(2026-\d\d-\d\d)\b", cell)
            commit = c.group(1) if c else commit
            date = d.group(1) if d else date
    return machine, date, commit


def import_tables(text):
    """Turns each table into JSON lines; returns the text with markers and the rows."""
    body, out, rows, count, i = text.split("\n"), [], [], 0, 0
    sep = re.compile(r"^\|[\s:|-]+\|$")
    while i < len(body):
        line = body[i]
        if not (line.startswith("|") and i + 1 < len(body) and sep.match(body[i + 1])):
            out.append(line)
            i += 1
            continue
        if count >= len(IMPORTED):
            sys.exit("more tables than IMPORTED lists: add the new one there")
        meta, count = IMPORTED[count], count + 1
        if meta[0] == "skip":
            while i < len(body) and body[i].startswith("|"):
                out.append(body[i])
                i += 1
            continue
        table, columns = meta[0], split_cells(line)
        align = "".join("r" if c.endswith(":") else "l" for c in split_cells(body[i + 1]))
        i += 2
        n = 0
        while i < len(body) and body[i].startswith("|"):
            figures = split_cells(body[i])
            machine, date, commit = row_facts(meta, columns, figures)
            rows.append({"table": table, "row": n, "machine": machine, "date": date,
                         "commit": commit, "command": meta[4],
                         "columns": columns, "align": align, "figures": figures})
            n, i = n + 1, i + 1
        out += [f"<!-- table:{table} -->"]
        out += render_table(table, [r for r in rows if r["table"] == table]) + [END]
    if count != len(IMPORTED):
        sys.exit(f"{count} tables, IMPORTED lists {len(IMPORTED)}")
    return "\n".join(out), rows


def write_rows(rows, results):
    by_file = {}
    for r in rows:
        by_file.setdefault((r["machine"], r["table"]), []).append(r)
    for (machine, table), rs in sorted(by_file.items()):
        path = results / machine / f"{table}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rs))
        print(f"wrote {path} ({len(rs)} rows)", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("action", choices=["render", "check", "import"])
    p.add_argument("--in", dest="src", default=str(ROOT / "BENCHMARKS.md"))
    p.add_argument("--out", default=None, help="default: the input file (render), stdout if -")
    p.add_argument("--results", default=str(RESULTS))
    a = p.parse_args()
    src = pathlib.Path(a.src)
    text = src.read_text()
    if a.action == "import":
        marked, rows = import_tables(text)
        write_rows(rows, pathlib.Path(a.results))
        pathlib.Path(a.out or src).write_text(marked)
        return
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

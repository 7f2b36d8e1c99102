#!/usr/bin/env python3
"""Whole commands against GDAL's own copy, paired in one run.

Times `gdal_translate` (a tiled DEFLATE level-5 copy with all CPUs: the
I/O floor any GDAL tool pays) and each `mapfilter smooth` setting given, in
alternation, ROUNDS times, and prints one Markdown table (median and min
wall time, ratio of medians to the copy) plus one JSON line per setting to
--json (append). Outputs go to a temp directory and are removed.

Usage:
  benches/peers/vs_gdal.py INPUT --rounds 5 --bin target/release/mapfilter \
      --setting "-k gaussian:5 --method dct5" --setting "-k gaussian:2.5" \
      [--json OUT/vs_gdal.jsonl] [--timings]
      [--table benches/results/dev-2core/vs-gdal-2core.jsonl]
--table rewrites that file as the rows of BENCHMARKS.md's table of the same
name (scripts/render-benchmarks.py renders it), with this very command.
"""
import argparse, json, os, platform, shlex, socket, statistics, subprocess, sys, tempfile, time


def split_env(setting):
    """Leading KEY=VALUE words of a setting are environment variables."""
    words, env = shlex.split(setting), {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    return words, env


def run(cmd, env=None):
    if isinstance(cmd, tuple):
        cmd, extra = cmd
        env = {**os.environ, **extra}
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return dt, p.stderr


def clear(tmp):
    """Outputs are removed before each run (no run pays for replacing one)."""
    for name in ("copy.tif", "out.tif"):
        if os.path.exists(os.path.join(tmp, name)):
            os.remove(os.path.join(tmp, name))


def write_table(a, times, base, commit, date):
    """The rows of BENCHMARKS.md's table (command, median, min, ratio)."""
    name = os.path.splitext(os.path.basename(a.table))[0]
    machine = os.path.basename(os.path.dirname(os.path.abspath(a.table)))
    command = "chrt -r 10 python3 " + " ".join(shlex.quote(w) for w in sys.argv)
    with open(a.table, "w") as f:
        for row, (k, v) in enumerate(times.items()):
            label = "`gdal_translate` copy" if k == "gdal_translate copy" else f"`{k}`"
            m = statistics.median(v)
            f.write(json.dumps({"table": name, "row": row, "machine": machine, "date": date,
                                "commit": commit or None, "command": command,
                                "columns": ["command", "median", "min", "× copy"], "align": "lrrr",
                                "figures": [label, f"{m:.3f} s", f"{min(v):.3f} s", f"{m / base:.2f}"]},
                               ensure_ascii=False) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("--bin", default="target/release/mapfilter")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--setting", action="append", default=[])
    ap.add_argument("--json")
    ap.add_argument("--timings", action="store_true", help="print mapfilter's --timings of the last round")
    ap.add_argument("--label", default=socket.gethostname())
    ap.add_argument("--table", help="JSON lines file of BENCHMARKS.md's table (rewritten)")
    a = ap.parse_args()
    settings = a.setting or ["-k gaussian:5 --method dct5"]
    tmp = tempfile.mkdtemp(prefix="vs-gdal-")
    copy = ["gdal_translate", "-q", "-of", "GTiff", "-co", "TILED=YES", "-co", "COMPRESS=DEFLATE",
            "-co", "ZLEVEL=5", "-co", "NUM_THREADS=ALL_CPUS", a.input, os.path.join(tmp, "copy.tif")]
    cmds = {"gdal_translate copy": copy}
    for s in settings:
        words, env = split_env(s)
        cmds[f"smooth {s}"] = ([a.bin, "smooth", a.input, os.path.join(tmp, "out.tif"), *words, "-q"], env)
    times = {k: [] for k in cmds}
    last_timings = {}
    run(copy)  # warm the page cache
    for _ in range(a.rounds):
        for k, c in cmds.items():
            clear(tmp)
            dt, err = run(c)
            times[k].append(dt)
    if a.timings:
        for k, c in cmds.items():
            if k.startswith("smooth"):
                clear(tmp)
                _, err = run((c[0] + ["--timings"], c[1]))
                last_timings[k] = err.strip()
    base = statistics.median(times["gdal_translate copy"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    date = time.strftime("%Y-%m-%d")
    print(f"input {a.input}, {a.rounds} rounds, {os.cpu_count()} CPUs, {a.label}, commit {commit}, {date}\n")
    print("| command | median s | min s | × copy |")
    print("| --- | --- | --- | --- |")
    for k, v in times.items():
        m = statistics.median(v)
        print(f"| `{k}` | {m:.3f} | {min(v):.3f} | {m / base:.2f} |")
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps({"machine": a.label, "cpus": os.cpu_count(), "commit": commit, "date": date,
                                    "input": a.input, "command": k, "median_s": m, "min_s": min(v),
                                    "ratio_to_copy": m / base, "rounds": a.rounds}) + "\n")
    if a.table:
        write_table(a, times, base, commit, date)
    for k, t in last_timings.items():
        print(f"\n{k} --timings:\n{t}")
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()

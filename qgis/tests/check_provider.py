#!/usr/bin/env python3
"""End-to-end check of the QGIS provider, headless: installs the plugin into a
temporary QGIS profile, runs every algorithm with `qgis_process run` on the
bundled maps in data/ and checks that its outputs are byte-identical to the
same command run directly (batch: its three steps, compared tile by tile,
with the report's figures less timings); then an error case (mapfilter's
one-line message reaches QGIS), a missing binary (explained, with how to
build it), and, in PyQGIS (pyqgis_checks.py), progress, colour tables, HTML
outputs and Cancel (SIGINT; the existing output stays untouched, no temp
file is left, a cancelled batch leaves nothing in its folder). Prints one
line per check; exit 0 when all pass.

    python3 qgis/tests/check_provider.py --bin target/debug/mapfilter
"""

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PLUGIN = os.path.join(REPO, "qgis", "mapfilter_provider")
DATA = os.path.join(REPO, "data")
PLUGIN_NAME = "mapfilter_provider"

failures = []


def check(ok, what, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures.append(what)
    return ok


def qgis_process_binary():
    # Debian's /usr/bin/qgis_process wrapper passes --noversioncheck, which
    # qgis_process 3.22 itself rejects; the real binary is qgis_process.bin.
    for name in ("qgis_process.bin", "qgis_process"):
        path = shutil.which(name) or f"/usr/bin/{name}"
        if os.path.exists(path):
            return path
    sys.exit("qgis_process not found (apt-get install qgis python3-qgis)")


class Env:
    def __init__(self, binary, work):
        self.binary = os.path.abspath(binary)
        self.work = work
        self.qgis = qgis_process_binary()
        self.profile = os.path.join(work, "profile")
        plugins = os.path.join(self.profile, "profiles", "default", "python", "plugins")
        os.makedirs(plugins)
        shutil.copytree(PLUGIN, os.path.join(plugins, PLUGIN_NAME),
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.env = dict(
            os.environ,
            QT_QPA_PLATFORM="offscreen",
            QGIS_CUSTOM_CONFIG_PATH=self.profile,
            MAPFILTER=self.binary,
            XDG_RUNTIME_DIR=os.path.join(work, "xdg"),
        )
        os.makedirs(self.env["XDG_RUNTIME_DIR"], mode=0o700)
        self.env.pop("MAPFILTER_DEVICE", None)
        out = self.qgis_run(["plugins", "enable", PLUGIN_NAME])
        check(out.returncode == 0, "plugin enabled in a temporary profile", out.stderr)

    def qgis_run(self, args, env=None):
        return subprocess.run([self.qgis] + args, capture_output=True, text=True,
                              env=env or self.env, timeout=300)

    def algorithm(self, name, params, env=None):
        """`qgis_process --json run mapfilter:NAME -- K=V...`: (process, results)."""
        args = ["--json", "run", f"mapfilter:{name}", "--"]
        args += [f"{k}={v}" for k, v in params.items()]
        out = self.qgis_run(args, env)
        results = None
        if out.returncode == 0:
            start = out.stdout.find("{")
            results = json.loads(out.stdout[start:])["results"]
        return out, results

    def cli(self, args):
        env = {k: v for k, v in os.environ.items() if k != "MAPFILTER_DEVICE"}
        return subprocess.run([self.binary] + args, capture_output=True, text=True, timeout=300,
                              env=env)

    def path(self, *parts):
        p = os.path.join(self.work, *parts)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p


def without_provenance(path):
    """A report's text less what records the run itself (command line,
    version, date; a run summary's seconds and the paths it wrote), which
    differs between any two runs by design."""
    text = open(path, encoding="utf-8").read()
    if path.endswith(".json"):
        value = json.loads(text)
        if isinstance(value, dict):
            for key in ("provenance", "seconds", "outputs"):
                value.pop(key, None)
        return json.dumps(value, sort_keys=True)
    if path.endswith(".md"):
        lines = text.splitlines()
        kept, skip = [], False
        for line in lines:
            if line.startswith("- command: `"):
                skip = True  # the version and date line follows
                continue
            if skip:
                skip = False
                continue
            kept.append(line)
        return "\n".join(kept)
    return text


def same_file(a, b, what):
    if not (os.path.exists(a) and os.path.exists(b)):
        return check(False, what, f"missing {a if not os.path.exists(a) else b}")
    if a.endswith((".json", ".md")) and b.endswith((".json", ".md")):
        return check(without_provenance(a) == without_provenance(b), what + " (less provenance)", "")
    same = filecmp.cmp(a, b, shallow=False)
    detail = ""
    if not same and a.endswith(".tif"):
        infos = [subprocess.run(["gdalinfo", "-stats", p], capture_output=True, text=True).stdout
                 for p in (a, b)]
        detail = "gdalinfo differs" if infos[0] != infos[1] else "same gdalinfo, bytes differ"
    return check(same, what, detail)


def run_pair(env, name, params, cli_args, outputs):
    """Runs the algorithm and the CLI; `outputs` maps parameter names to the
    CLI's file of the same output. Returns qgis_process's results."""
    out, results = env.algorithm(name, params)
    if not check(out.returncode == 0, f"{name}: qgis_process run", out.stderr + out.stdout):
        return None
    cli = env.cli(cli_args)
    check(cli.returncode == 0, f"{name}: CLI run", cli.stderr)
    for param, cli_path in outputs.items():
        same_file(results[param], cli_path, f"{name}: {param} byte-identical to the CLI's")
    return results


def check_algorithms(env):
    modis = os.path.join(DATA, "modis_igbp_2019_2048.tif")
    continents = os.path.join(DATA, "ne_continents_1440x720.tif")
    simplex = os.path.join(DATA, "synthetic_simplex_512.tif")
    photo = os.path.join(DATA, "photo_grace_hopper.tif")
    dem = os.path.join(DATA, "dem_jacksboro.tif")

    # smooth, defaults but the kernel (gaussian:2.5, the dialog's start).
    q, c = env.path("q", "smooth.tif"), env.path("c", "smooth.tif")
    run_pair(env, "smooth", {"INPUT": modis, "OUTPUT": q},
             ["smooth", modis, c, "--kernel", "gaussian:2.5"], {"OUTPUT": c})

    # smooth with most options set, and a JSON report.
    q, c = env.path("q", "smooth2.tif"), env.path("c", "smooth2.tif")
    qr, cr = env.path("q", "smooth2.json"), env.path("c", "smooth2.json")
    results = run_pair(
        env, "smooth",
        {"INPUT": continents, "KERNEL": 2, "KERNEL_VALUE": 3, "CLASS_WEIGHTS": "1,2,3,0.5",
         "BORDER": 1, "FILL_NODATA": 1, "METHOD": 1, "DEVICE": 2, "RANK": 2, "TILE": 256,
         "COMPRESS": 3, "COMPRESS_LEVEL": 3, "OUTPUT": q, "REPORT": qr},
        ["smooth", continents, c, "--kernel", "disc:3", "--class-weights", "1:2,3:0.5",
         "--border", "valid", "--fill-nodata", "--method", "svd", "--device", "host",
         "--rank", "2", "--tile", "256", "--compress", "zstd", "--compress-level", "3",
         "--report", cr],
        {"OUTPUT": c},
    )
    if results:
        reports = []
        for p in (qr, cr):
            with open(p, encoding="utf-8") as f:
                reports.append(json.load(f)["summary"])
        check(reports[0] == reports[1], "smooth: REPORT (JSON) has the CLI's figures")

    # smooth of band 1 with its nodata ignored (255 smooths as a class) and
    # another output nodata: the input options of the CLI.
    q, c = env.path("q", "smooth_nd.tif"), env.path("c", "smooth_nd.tif")
    run_pair(env, "smooth",
             {"INPUT": modis, "BAND": 1, "SRC_NODATA": "none", "DST_NODATA": 250, "OUTPUT": q},
             ["smooth", modis, c, "--kernel", "gaussian:2.5", "--band", "1",
              "--src-nodata", "none", "--dst-nodata", "250"], {"OUTPUT": c})

    # smooth with the policies: ties to the smallest code, a class kept,
    # one that casts no vote, isolated pixels only, two passes.
    q, c = env.path("q", "smooth_pol.tif"), env.path("c", "smooth_pol.tif")
    run_pair(env, "smooth",
             {"INPUT": modis, "TIES": "smallest", "KEEP": "0", "NO_VOTE": "16",
              "ONLY_ISOLATED": 20, "ITERATIONS": 2, "OUTPUT": q},
             ["smooth", modis, c, "--kernel", "gaussian:2.5", "--ties", "smallest",
              "--keep", "0", "--no-vote", "16", "--only-isolated", "20", "--iterations", "2"],
             {"OUTPUT": c})

    # smooth with votes weighed by a confidence raster (the map itself, its
    # codes read as confidences out of 255).
    q, c = env.path("q", "smooth_conf.tif"), env.path("c", "smooth_conf.tif")
    run_pair(env, "smooth",
             {"INPUT": simplex, "CONFIDENCE": simplex, "CONFIDENCE_SCALE": 255, "OUTPUT": q},
             ["smooth", simplex, c, "--kernel", "gaussian:2.5", "--confidence", simplex,
              "--confidence-scale", "255"], {"OUTPUT": c})

    # smooth with a kernel in metres (the unit selector): 75 m on 30 m pixels.
    q, c = env.path("q", "smooth_m.tif"), env.path("c", "smooth_m.tif")
    run_pair(env, "smooth",
             {"INPUT": simplex, "KERNEL_VALUE": 75, "KERNEL_UNIT": 1, "OUTPUT": q},
             ["smooth", simplex, c, "--kernel", "gaussian:75m"], {"OUTPUT": c})

    # smooth with a kernel file.
    kernel = env.path("kernel.txt")
    with open(kernel, "w") as f:
        f.write("0 1 0\n1 4 1\n0 1 0\n")
    q, c = env.path("q", "smooth3.tif"), env.path("c", "smooth3.tif")
    run_pair(env, "smooth",
             {"INPUT": simplex, "KERNEL": 3, "KERNEL_FILE": kernel, "METHOD": 3, "OUTPUT": q},
             ["smooth", simplex, c, "--kernel", f"file:{kernel}", "--method", "auto"],
             {"OUTPUT": c})

    # compare the first two smooth outputs... of the same map: smooth modis twice.
    ref = env.path("c", "smooth.tif")
    cand = env.path("c", "modis_dct5.tif")
    env.cli(["smooth", modis, cand, "--kernel", "gaussian:2.5", "--method", "dct5", "--terms", "1"])
    files = {k: (env.path("q", f"cmp.{e}"), env.path("c", f"cmp.{e}"))
             for k, e in (("MISMATCH", "tif"), ("JSON", "json"), ("MARKDOWN", "md"))}
    qh = env.path("q", "cmp.html")
    results = run_pair(
        env, "compare",
        dict({"REFERENCE": ref, "CANDIDATE": cand, "HTML": qh},
             **{k: v[0] for k, v in files.items()}),
        ["compare", ref, cand] + sum(
            ([f"--{k.lower()}", v[1]] for k, v in files.items()), []),
        {k: v[1] for k, v in files.items()},
    )
    if results:
        with open(files["JSON"][1], encoding="utf-8") as f:
            summary = json.load(f)["summary"]
        check(results["AGREEMENT"] == summary["agreement_percent"]
              and results["KAPPA"] == summary["kappa"],
              "compare: AGREEMENT and KAPPA outputs are the CLI's figures",
              f"{results.get('AGREEMENT')} {results.get('KAPPA')} vs {summary}")
        check(summary["agreement_percent"] < 100.0, "compare: the candidate differs somewhere")
        with open(qh, encoding="utf-8") as f:
            html = f.read()
        check(html.startswith("<!") and "data:image/png;base64" in html,
              "compare: HTML report written with its maps")

    # filter: a chain on the photo, Scharr on the DEM with a constant border.
    q, c = env.path("q", "photo.tif"), env.path("c", "photo.tif")
    run_pair(env, "filter", {"INPUT": photo, "OPS": "median:5;gaussian:1.5", "OUTPUT": q},
             ["filter", photo, c, "--op", "median:5", "--op", "gaussian:1.5"], {"OUTPUT": c})
    q, c = env.path("q", "dem.tif"), env.path("c", "dem.tif")
    run_pair(env, "filter",
             {"INPUT": dem, "OPS": "scharr:3", "BORDER": 2, "BORDER_VALUE": 0, "DEVICE": 1,
              "OUTPUT": q},
             ["filter", dem, c, "--op", "scharr:3", "--border", "constant:0",
              "--device", "host-reference"], {"OUTPUT": c})

    # gen.
    q, c = env.path("q", "gen.tif"), env.path("c", "gen.tif")
    run_pair(env, "gen",
             {"WIDTH": 300, "HEIGHT": 200, "CLASSES": 5, "PATTERN": 1, "SEED": 7, "OUTPUT": q},
             ["gen", c, "--raster-size", "300x200", "--classes", "5", "--pattern", "random",
              "--seed", "7", "-q"], {"OUTPUT": c})

    check_sieve(env, modis, simplex)
    check_batch(env, continents)

    # info: the JSON file is what `mapfilter info --json` prints.
    q, c = env.path("q", "info.json"), env.path("c", "info.json")
    out, results = env.algorithm("info", {"INPUT": modis, "JSON": q})
    if check(out.returncode == 0, "info: qgis_process run", out.stderr):
        with open(c, "w", encoding="utf-8") as f:
            f.write(env.cli(["info", modis, "--json"]).stdout)
        same_file(q, c, "info: JSON byte-identical to the CLI's stdout")


def check_sieve(env, modis, simplex):
    # sieve by an area, 8-connected, on the geographic MODIS map (its
    # defaults: pyqgis_checks.py).
    q, c = env.path("q", "sieve2.tif"), env.path("c", "sieve2.tif")
    run_pair(env, "sieve",
             {"INPUT": modis, "THRESHOLD": 100, "THRESHOLD_UNIT": 3, "CONNECTIVITY": 1,
              "COMPRESS": 2, "OUTPUT": q},
             ["sieve", modis, c, "--threshold", "100km2", "--connectivity", "8",
              "--compress", "lzw"], {"OUTPUT": c})
    check(not filecmp.cmp(env.path("c", "sieve2.tif"), modis, shallow=False),
          "sieve: the MODIS map changed")
    # smooth with a minimum mapping unit in hectares.
    q, c = env.path("q", "smooth_mmu.tif"), env.path("c", "smooth_mmu.tif")
    run_pair(env, "smooth",
             {"INPUT": simplex, "MMU": 2, "MMU_UNIT": 1, "MMU_CONNECTIVITY": 1, "OUTPUT": q},
             ["smooth", simplex, c, "--kernel", "gaussian:2.5", "--mmu", "2ha",
              "--mmu-connectivity", "8"], {"OUTPUT": c})


def tiles_of(source, folder, n):
    """Cuts `source` into n x n GeoTIFF tiles in `folder` (a folder of tiles
    on one grid, as a tiled product comes). Also used by pyqgis_checks.py
    and qgis/tools/screenshots.py."""
    os.makedirs(folder, exist_ok=True)
    info = json.loads(subprocess.run(["gdalinfo", "-json", source], capture_output=True,
                                     text=True, check=True).stdout)
    width, height = info["size"]
    for row in range(n):
        for col in range(n):
            x0, x1 = width * col // n, width * (col + 1) // n
            y0, y1 = height * row // n, height * (row + 1) // n
            subprocess.run(["gdal_translate", "-q", "-srcwin", str(x0), str(y0), str(x1 - x0),
                            str(y1 - y0), "-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", source,
                            os.path.join(folder, f"tile_r{row}c{col}.tif")], check=True)


def report_figures(path):
    """A batch report.json less its timings and provenance (command line,
    date), which differ between runs."""
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    for key in ("task_seconds", "megapixels_per_second", "slowest", "times", "provenance"):
        report.pop(key, None)
    for sieved in (report.get("mmu") or {}).get("sieved", []):
        sieved.pop("seconds", None)
    return report


def same_batch(q, c, what):
    """Two batch folders: the same tiles under out/ byte for byte, the same
    report figures, the same mosaic (less the folder's own path)."""
    names = sorted(os.listdir(os.path.join(c, "out")))
    check(names and sorted(os.listdir(os.path.join(q, "out"))) == names,
          f"{what}: the CLI's tiles under out/", str(names))
    for name in names:
        if name.endswith(".tif"):
            same_file(os.path.join(q, "out", name), os.path.join(c, "out", name),
                      f"{what}: out/{name} byte-identical to the CLI's")
    check(report_figures(os.path.join(q, "report.json"))
          == report_figures(os.path.join(c, "report.json")),
          f"{what}: report.json has the CLI's figures (less timings and provenance)")
    vrts = []
    for folder in (q, c):
        with open(os.path.join(folder, "mosaic.vrt"), encoding="utf-8") as f:
            vrts.append(f.read().replace(folder, "FOLDER"))
    check(vrts[0] == vrts[1] and "FOLDER/out/" in vrts[0],
          f"{what}: mosaic.vrt is the CLI's (less the folder's path)")
    with open(os.path.join(q, "report.html"), encoding="utf-8") as f:
        check(f.read().startswith("<!DOCTYPE html>"), f"{what}: report.html written")


def check_batch(env, continents):
    tiles = env.path("tiles", "x")[:-2]
    tiles_of(continents, tiles, 2)
    # A folder of tiles, dct5 --exact.
    q, c = env.path("q", "batch"), env.path("c", "batch")
    out, results = env.algorithm(
        "batch", {"INPUT": tiles, "METHOD": 2, "EXACT": 1, "OUTPUT": q})
    if check(out.returncode == 0, "batch (folder): qgis_process run", out.stderr + out.stdout):
        check(results.get("MOSAIC") == os.path.join(q, "mosaic.vrt")
              and results.get("REPORT") == os.path.join(q, "report.html"),
              "batch (folder): MOSAIC and REPORT outputs", str(results))
        for args in (["plan", tiles, "--out", c, "--kernel", "gaussian:2.5", "--method", "dct5",
                      "--exact"], ["run", c], ["report", c]):
            cli = env.cli(["batch"] + args)
            check(cli.returncode == 0, f"batch (folder): CLI batch {args[0]}", cli.stderr)
        same_batch(q, c, "batch (folder)")
    # One raster cut into 2 x 2 tasks, compared with the exact baseline,
    # a minimum mapping unit over the whole mosaic, and a COG of the mosaic.
    q, c = env.path("q", "batch2"), env.path("c", "batch2")
    qc, cc = env.path("q", "batch2.tif"), env.path("c", "batch2.tif")
    out, results = env.algorithm(
        "batch", {"LAYERS": continents, "GRID": 2, "KERNEL": 1, "KERNEL_VALUE": 5, "COMPARE": 1,
                  "MMU": 20, "MMU_CONNECTIVITY": 1, "JOBS": 1, "COG": qc, "OUTPUT": q})
    if check(out.returncode == 0, "batch (layers, grid): qgis_process run",
             out.stderr + out.stdout):
        for args in (["plan", continents, "--out", c, "--grid", "2", "--compare-with", "naive",
                      "--kernel", "box:5", "--mmu", "20", "--mmu-connectivity", "8"],
                     ["run", c, "--jobs", "1"], ["report", c, "--cog", cc]):
            cli = env.cli(["batch"] + args)
            check(cli.returncode == 0, f"batch (layers, grid): CLI batch {args[0]}", cli.stderr)
        same_batch(q, c, "batch (layers, grid)")
        check(report_figures(os.path.join(q, "report.json")).get("comparison") is not None,
              "batch (layers, grid): the report compares with the exact baseline")
        same_file(qc, cc, "batch (layers, grid): COG byte-identical to the CLI's")


def check_errors(env):
    modis = os.path.join(DATA, "modis_igbp_2019_2048.tif")
    # A kernel the CLI refuses: its one-line error (with hint) reaches QGIS.
    q = env.path("q", "bad.tif")
    out, _ = env.algorithm("smooth", {"INPUT": modis, "KERNEL": 1, "KERNEL_VALUE": 4, "OUTPUT": q})
    cli = env.cli(["smooth", modis, env.path("c", "bad.tif"), "--kernel", "box:4"])
    line = cli.stderr.strip().splitlines()[-1] if cli.stderr.strip() else ""
    check(out.returncode != 0 and line.startswith("mapfilter: error:") and "hint" in line
          and line in out.stdout + out.stderr,
          "error: mapfilter's one-line message with its hint reaches the QGIS log",
          f"CLI said {line!r}; qgis_process said {out.stdout + out.stderr!r}")
    check(not os.path.exists(q), "error: no output left behind")
    # No binary at all.
    env2 = dict(env.env, MAPFILTER="", PATH="/usr/bin:/bin")
    if shutil.which("mapfilter", path=env2["PATH"]) is None:
        out, _ = env.algorithm("info", {"INPUT": modis}, env=env2)
        text = out.stdout + out.stderr
        check(out.returncode != 0 and "mapfilter binary not found" in text
              and "cargo build --release" in text,
              "missing binary: explained, with how to build and install it", text)


def check_cancel(env):
    """Progress and Cancel, in PyQGIS (qgis_process cannot be cancelled)."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "pyqgis_checks.py"),
                          "--work", os.path.join(env.work, "cancel-run")],
                         capture_output=True, text=True, env=env.env, timeout=300)
    print(out.stdout, end="")
    check(out.returncode == 0, "pyqgis_checks.py", f"exit {out.returncode}: {out.stderr[-2000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="the mapfilter binary")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mapfilter-qgis-")
    try:
        helpcheck = subprocess.run(
            [sys.executable, os.path.join(REPO, "qgis", "tools", "gen_cli_help.py"),
             "--bin", args.bin, "--check"], capture_output=True, text=True)
        check(helpcheck.returncode == 0, "cli_help.json matches the binary's description",
              helpcheck.stderr)
        env = Env(args.bin, work)
        check_algorithms(env)
        check_errors(env)
        check_cancel(env)
    finally:
        if args.keep:
            print(f"work directory: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} QGIS provider checks failed")
        return 1
    print("all QGIS provider checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

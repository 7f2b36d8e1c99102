#!/usr/bin/env python3
"""What qgis_process cannot show, checked in PyQGIS (headless): a smooth
run's progress reaches the feedback in order and ends at 100; its output
loads as a layer drawn with the input's colour table (a paletted renderer);
the HTML reports are HTML outputs (so the results viewer lists them); a run
cancelled at its first progress report stops (SIGINT), raises a
cancellation error, leaves the existing output file untouched and leaves no
temp file beside it; smooth with --mmu and a report, and batch, move the bar
forward through every phase (batch: a step per finished task) and the
batch's mosaic is loaded on completion with the input's colours; a batch
cancelled mid-run leaves nothing in a new folder and puts an earlier batch
in its folder back as it was; `--overwrite` goes with an existing output
when the binary takes it (a stand-in binary shows what is passed). Run by
check_provider.py with MAPFILTER naming the binary."""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
DATA = os.path.join(REPO, "data")

from qgis.core import (  # noqa: E402
    NULL,
    QgsApplication,
    QgsProcessingContext,
    QgsProcessingFeedback,
    QgsProcessingOutputHtml,
    QgsProject,
    QgsRasterLayer,
)

QgsApplication.setPrefixPath("/usr", True)
app = QgsApplication([], False)
app.initQgis()
sys.path.append("/usr/share/qgis/python/plugins")
import processing  # noqa: E402
from processing.core.Processing import Processing  # noqa: E402

Processing.initialize()
sys.path.insert(0, os.path.join(REPO, "qgis"))
from mapfilter_provider.provider import MapfilterProvider  # noqa: E402

# Kept referenced: the registry does not keep the Python object alive.
PROVIDER = MapfilterProvider()
QgsApplication.processingRegistry().addProvider(PROVIDER)

failures = []


def check(ok, what, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures.append(what)


class Feedback(QgsProcessingFeedback):
    """Records progress and errors; cancels at the first report above
    `cancel_above` when given."""

    def __init__(self, cancel_above=None):
        super().__init__()
        self.values, self.errors = [], []
        self.cancel_above = cancel_above
        self.progressChanged.connect(self.on_progress)

    def on_progress(self, value):
        self.values.append(value)
        if self.cancel_above is not None and value > self.cancel_above and not self.isCanceled():
            self.cancel()

    def reportError(self, error, fatalError=False):  # noqa: N802 (QGIS's name)
        self.errors.append(error)


def run(params, feedback, algorithm="mapfilter:smooth", context=None):
    try:
        return processing.run(algorithm, params, feedback=feedback, context=context), None
    except Exception as e:  # QgsProcessingException, with the cause in feedback
        return None, e


def same_palette(path, source):
    """Whether `path` loads as a layer drawn with the colour table of `source`."""
    layer, source = QgsRasterLayer(path, "output"), QgsRasterLayer(source, "input")
    return (
        layer.isValid()
        and layer.renderer().type() == "paletted"
        and [c.color.name() for c in layer.renderer().classes()]
        == [c.color.name() for c in source.renderer().classes()]
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    modis = os.path.join(DATA, "modis_igbp_2019_2048.tif")

    out = os.path.join(args.work, "progress.tif")
    fb = Feedback()
    results, error = run(
        {"INPUT": modis, "KERNEL": 0, "KERNEL_VALUE": 2.5, "TILE": 256, "OUTPUT": out}, fb
    )
    check(error is None and os.path.exists(out), "progress run finished", f"{error} {fb.errors}")
    values = fb.values
    check(
        len(values) >= 10 and values == sorted(values) and values[-1] == 100.0,
        "progress: at least 10 reports, in order, ending at 100",
        str(values),
    )

    check(same_palette(out, modis), "output loads as a layer with the input's colour table")
    # sieve at its defaults (the dialog's start: 25 pixels, 4-connected).
    sieved, cli = (os.path.join(args.work, f"sieved-{w}.tif") for w in ("qgis", "cli"))
    results, error = run({"INPUT": modis, "OUTPUT": sieved}, Feedback(), "mapfilter:sieve")
    subprocess.run([os.environ["MAPFILTER"], "sieve", modis, cli, "--threshold", "25", "-q"],
                   check=True)
    with open(sieved, "rb") as a, open(cli, "rb") as b:
        check(error is None and a.read() == b.read(),
              "sieve at its defaults: byte-identical to `sieve --threshold 25`", str(error))
    check(same_palette(sieved, modis),
          "sieve: output loads as a layer with the input's colour table")
    registry = QgsApplication.processingRegistry()
    for alg_id, name in (("mapfilter:smooth", "REPORT"), ("mapfilter:compare", "HTML"),
                         ("mapfilter:batch", "REPORT")):
        output = registry.algorithmById(alg_id).outputDefinition(name)
        check(
            isinstance(output, QgsProcessingOutputHtml),
            f"{alg_id} {name} is an HTML output (opens from the results viewer)",
            type(output).__name__,
        )

    folder = os.path.join(args.work, "cancel")
    os.makedirs(folder)
    out = os.path.join(folder, "existing.tif")
    with open(out, "wb") as f:
        f.write(b"an existing output\n")
    fb = Feedback(cancel_above=0)
    t0 = time.monotonic()
    results, error = run(
        {"INPUT": modis, "KERNEL": 0, "KERNEL_VALUE": 10, "TILE": 128, "DEVICE": 2,
         "OUTPUT": out},
        fb,
    )
    elapsed = time.monotonic() - t0
    check(
        error is not None and any("cancelled" in e for e in fb.errors + [str(error)]),
        "cancel: the run stops with a cancellation error",
        f"{error} {fb.errors}",
    )
    with open(out, "rb") as f:
        check(f.read() == b"an existing output\n", "cancel: the existing output is untouched")
    check(os.listdir(folder) == ["existing.tif"], "cancel: no temp file left",
          str(os.listdir(folder)))
    check(fb.values and max(fb.values) < 100.0, "cancel: stopped before the end",
          f"{max(fb.values or [0])} after {elapsed:.1f} s")
    check_mmu_progress(args.work)
    check_batch(args.work, modis)
    check_overwrite(args.work, modis)
    check_defaults_and_choices()
    QgsApplication.processingRegistry().removeProvider(PROVIDER)
    app.exitQgis()
    return 1 if failures else 0


def check_mmu_progress(work):
    """smooth with --mmu and a report: the bar goes through smoothing, the
    sieve, the baseline and the comparison in order, and ends at 100."""
    simplex = os.path.join(DATA, "synthetic_simplex_512.tif")
    fb = Feedback()
    out = os.path.join(work, "mmu.tif")
    results, error = run({"INPUT": simplex, "MMU": 10, "TILE": 128, "OUTPUT": out,
                          "REPORT": os.path.join(work, "mmu.json")}, fb)
    check(error is None and fb.values == sorted(fb.values) and fb.values[-1] == 100.0,
          "smooth --mmu --report: progress in order, ending at 100", f"{error} {fb.values}")
    # The dialog gives an empty class-weights table as [NULL].
    fb = Feedback()
    results, error = run({"INPUT": simplex, "CLASS_WEIGHTS": [NULL],
                          "OUTPUT": os.path.join(work, "no-weights.tif")}, fb)
    check(error is None, "smooth: an empty class-weights table from the dialog is no weight",
          f"{error} {fb.errors}")


def check_batch(work, modis):
    """batch: progress through the run, the mosaic loaded with the input's
    colours; Cancel mid-run leaves nothing in a new folder, and puts an
    earlier batch back as it was."""
    from mapfilter_provider.algorithms.batch import PLAN_SPAN, RUN_SPAN
    from check_provider import tiles_of

    continents = os.path.join(DATA, "ne_continents_1440x720.tif")
    tiles = os.path.join(work, "tiles")
    tiles_of(continents, tiles, 2)
    out = os.path.join(work, "batch")
    fb = Feedback()
    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    results, error = run({"INPUT": tiles, "OUTPUT": out}, fb, "mapfilter:batch", context)
    check(error is None, "batch: run", f"{error} {fb.errors}")
    inside_run = [v for v in fb.values if RUN_SPAN[0] < v <= RUN_SPAN[1]]
    check(fb.values == sorted(fb.values) and len(inside_run) >= 4 and fb.values[-1] == 100.0,
          "batch: progress through the run (a step per task), in order, ending at 100",
          str(fb.values))
    mosaic = os.path.join(out, "mosaic.vrt")
    check(mosaic in context.layersToLoadOnCompletion(),
          "batch: the mosaic is loaded as a layer on completion",
          str(list(context.layersToLoadOnCompletion())))
    check(same_palette(mosaic, continents),
          "batch: the mosaic loads with the input's colour table")

    # A folder holding other files is refused, and left as it was.
    other = os.path.join(work, "not-a-batch")
    os.makedirs(other)
    with open(os.path.join(other, "keep.txt"), "w") as f:
        f.write("mine\n")
    fb = Feedback()
    results, error = run({"INPUT": tiles, "OUTPUT": other}, fb, "mapfilter:batch")
    check(error is not None and "no mapfilter batch" in " ".join(fb.errors + [str(error)])
          and os.listdir(other) == ["keep.txt"],
          "batch: a folder of other files is refused and left as it was", f"{error} {fb.errors}")

    # A folder holding a plan.json is no proof of a batch: it is refused,
    # and nothing in it is moved or removed; a batch of this algorithm with
    # a file added since is refused too.
    from mapfilter_provider.algorithms.batch import MARKER
    stray = os.path.join(work, "stray-plan")
    os.makedirs(os.path.join(stray, "docs"))
    stray_files = {"plan.json": b"{}\n", os.path.join("docs", "thesis.txt"): b"years of work\n"}
    for name, data in stray_files.items():
        with open(os.path.join(stray, name), "wb") as f:
            f.write(data)
    fb = Feedback()
    results, error = run({"INPUT": tiles, "OUTPUT": stray}, fb, "mapfilter:batch")
    check(error is not None and "no mapfilter batch" in " ".join(fb.errors + [str(error)])
          and tree(stray) == stray_files
          and not [n for n in os.listdir(work) if "mapfilter-old" in n],
          "batch: a folder with a stray plan.json is refused, nothing removed",
          f"{error} {fb.errors} {sorted(tree(stray))}")
    with open(os.path.join(out, "notes.txt"), "w") as f:
        f.write("added after the batch\n")
    before = tree(out)
    fb = Feedback()
    results, error = run({"INPUT": tiles, "OUTPUT": out}, fb, "mapfilter:batch")
    check(error is not None and "notes.txt" in " ".join(fb.errors + [str(error)])
          and tree(out) == before and MARKER in before,
          "batch: a finished batch with a file added since is refused, left as it was",
          f"{error} {fb.errors}")

    # Cancel at the first finished task: slow tasks (a wide kernel, small
    # engine tiles) so that the others are in flight.
    slow = {"LAYERS": modis, "GRID": 4, "KERNEL_VALUE": 10, "DEVICE": 2, "TILE": 128}
    parent = os.path.join(work, "batch-cancel")
    os.makedirs(parent)
    new = os.path.join(parent, "new")
    fb = Feedback(cancel_above=PLAN_SPAN[1])
    results, error = run(dict(slow, OUTPUT=new), fb, "mapfilter:batch")
    check(error is not None and any("cancelled" in e for e in fb.errors + [str(error)])
          and max(fb.values) < RUN_SPAN[1],
          "batch cancel: stops mid-run with a cancellation error", f"{error} {fb.values}")
    check(os.listdir(parent) == [], "batch cancel: nothing left of a new folder",
          str(os.listdir(parent)))
    earlier = os.path.join(parent, "earlier")
    os.makedirs(os.path.join(earlier, "out"))
    files = {"plan.json": b"{}\n", os.path.join("out", "t.tif"): b"an earlier output\n"}
    listed = ["out" + os.sep, os.path.join("out", "t.tif"), "plan.json"]
    files[MARKER] = json.dumps({"kind": "mapfilter QGIS batch", "files": listed}).encode()
    for name, data in files.items():
        with open(os.path.join(earlier, name), "wb") as f:
            f.write(data)
    fb = Feedback(cancel_above=PLAN_SPAN[1])
    results, error = run(dict(slow, OUTPUT=earlier), fb, "mapfilter:batch")
    found = tree(earlier)
    check(error is not None and found == files and os.listdir(parent) == ["earlier"],
          "batch cancel: an earlier batch in the folder is back as it was",
          f"{error} {sorted(found)} {os.listdir(parent)}")


def tree(folder):
    """Every file under `folder`: its bytes by relative path."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                found[os.path.relpath(os.path.join(root, name), folder)] = f.read()
    return found


def check_defaults_and_choices():
    """Every parameter tied to a CLI option with a default starts at that
    default, and every enum choice is a value the option's help names."""
    from mapfilter_provider.algorithms.common import CLI_DEFAULT_DEVICE

    for alg in PROVIDER.algorithms():
        for definition in alg.parameterDefinitions():
            option = alg._cli.get(definition.name())
            if option is None or option.startswith("<"):
                continue
            entry = alg.cli_entry(option)
            ours = definition.defaultValue()
            if definition.type() == "enum":
                values = definition.options()
                ours = None if ours is None else values[int(ours)]
                unknown = [v for v in values if v != CLI_DEFAULT_DEVICE and v not in entry.text]
                check(not unknown, f"{alg.id()} {definition.name()}: choices named by --{option}",
                      str(unknown))
            if entry.default is None or definition.name() == "WIDTH":
                continue
            if definition.type() == "number" and ours is not None:
                same = float(ours) == float(entry.default)
            else:
                same = str(ours) == entry.default
            check(same, f"{alg.id()} {definition.name()}: default is the CLI's",
                  f"{ours!r} vs {entry.default!r}")


FAKE = """#!/bin/sh
# A stand-in mapfilter: its smooth --help names --overwrite; a run records
# its arguments and writes the output.
if [ "$2" = "--help" ]; then echo "      --overwrite  Replace an existing output"; exit 0; fi
echo "$@" > "$(dirname "$0")/args.txt"
echo written > "$3"
"""


def check_overwrite(work, modis):
    """`--overwrite` goes with an existing output when the binary takes it;
    the binary named by the provider setting comes before $MAPFILTER."""
    from processing.core.ProcessingConfig import ProcessingConfig
    from mapfilter_provider.binary import BINARY_SETTING

    folder = os.path.join(work, "overwrite")
    os.makedirs(folder)
    fake = os.path.join(folder, "mapfilter")
    with open(fake, "w") as f:
        f.write(FAKE)
    os.chmod(fake, 0o755)
    ProcessingConfig.setSettingValue(BINARY_SETTING, fake)
    try:
        out = os.path.join(folder, "out.tif")
        for exists in (False, True):
            results, error = run({"INPUT": modis, "OUTPUT": out}, Feedback())
            args_file = os.path.join(folder, "args.txt")
            ran = os.path.exists(args_file)
            check(ran, "the provider setting's binary comes before $MAPFILTER", str(error))
            if ran:
                with open(args_file) as f:
                    passed = "--overwrite" in f.read().split()
                check(error is None and passed == exists,
                      "--overwrite passed when the output exists" if exists
                      else "--overwrite not passed for a new output",
                      f"{error} {passed}")
        # The settings page only takes existing files: one that is no program.
        ProcessingConfig.setSettingValue(BINARY_SETTING, os.path.join(folder, "args.txt"))
        fb = Feedback()
        results, error = run({"INPUT": modis, "OUTPUT": out}, fb)
        text = " ".join(fb.errors + [str(error)])
        check(error is not None and "provider setting" in text and "cargo build" in text,
              "a setting naming no program: explained, with how to install it", text)
    finally:
        ProcessingConfig.setSettingValue(BINARY_SETTING, "")

if __name__ == "__main__":
    sys.exit(main())

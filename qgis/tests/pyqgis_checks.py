#!/usr/bin/env python3
"""What qgis_process cannot show, checked in PyQGIS (headless): a smooth
run's progress reaches the feedback in order and ends at 100; its output
loads as a layer drawn with the input's colour table (a paletted renderer);
the HTML reports are HTML outputs (so the results viewer lists them); a run
cancelled at its first progress report stops (SIGINT), raises a
cancellation error, leaves the existing output file untouched and leaves no
temp file beside it; `--overwrite` goes with an existing output when the
binary takes it (a stand-in binary shows what is passed). Run by
check_provider.py with MAPFILTER naming the binary."""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
DATA = os.path.join(REPO, "data")

from qgis.core import (  # noqa: E402
    QgsApplication,
    QgsProcessingFeedback,
    QgsProcessingOutputHtml,
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
    """Records progress and errors; cancels at the first report when asked."""

    def __init__(self, cancel_at_first_progress=False):
        super().__init__()
        self.values, self.errors = [], []
        self.cancel_early = cancel_at_first_progress
        self.progressChanged.connect(self.on_progress)

    def on_progress(self, value):
        self.values.append(value)
        if self.cancel_early and value > 0 and not self.isCanceled():
            self.cancel()

    def reportError(self, error, fatalError=False):  # noqa: N802 (QGIS's name)
        self.errors.append(error)


def run(params, feedback):
    try:
        return processing.run("mapfilter:smooth", params, feedback=feedback), None
    except Exception as e:  # QgsProcessingException, with the cause in feedback
        return None, e


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

    layer = QgsRasterLayer(out, "smoothed")
    source = QgsRasterLayer(modis, "input")
    check(
        layer.isValid()
        and layer.renderer().type() == "paletted"
        and [c.color.name() for c in layer.renderer().classes()]
        == [c.color.name() for c in source.renderer().classes()],
        "output loads as a layer with the input's colour table",
        f"{layer.renderer().type() if layer.isValid() else 'invalid'}",
    )
    registry = QgsApplication.processingRegistry()
    for alg_id, name in (("mapfilter:smooth", "REPORT"), ("mapfilter:compare", "HTML")):
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
    fb = Feedback(cancel_at_first_progress=True)
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
    check_overwrite(args.work, modis)
    check_defaults_and_choices()
    del layer, source
    QgsApplication.processingRegistry().removeProvider(PROVIDER)
    app.exitQgis()
    return 1 if failures else 0


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

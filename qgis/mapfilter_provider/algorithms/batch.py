"""`mapfilter batch`: smooths a folder of tiles (or several rasters) as one
seam-free mosaic, in the three steps of the CLI: `batch plan INPUT... --out
DIR [smoothing options]`, `batch run DIR`, `batch report DIR`. The folder
appears only complete: a cancelled or failed run removes what it made there,
and an earlier batch in the folder is set aside until the new one is done.

Only what this algorithm can prove it wrote is ever removed: a folder it
made (or found empty), or an earlier batch whose marker file (written when
that batch was done) lists every file in the folder. Any other folder (one
holding a stray plan.json, or a batch with files added since) is refused and
left as it is."""

import html
import json
import os
import shutil
import uuid

from qgis.core import (
    QgsProcessing,
    QgsProcessingContext,
    QgsProcessingException,
    QgsProcessingOutputHtml,
    QgsProcessingOutputRasterLayer,
    QgsProcessingParameterFile,
    QgsProcessingParameterFolderDestination,
    QgsProcessingParameterMultipleLayers,
    QgsProcessingParameterRasterDestination,
)

from .. import cli_help, runner
from .base import MapfilterAlgorithm
from .common import add_threshold, threshold_text
from .smoothing import add_smoothing, smoothing_args

# How the three steps fill the bar: planning reads headers (or scans the
# classes once), the run is the work, the report reads the outputs once.
PLAN_SPAN, RUN_SPAN, REPORT_SPAN = (0, 5), (5, 90), (90, 100)


# The marker a finished batch of this algorithm leaves in its folder: the
# relative path of every file and folder it holds.
MARKER = ".mapfilter-qgis-batch.json"
MARKER_KIND = "mapfilter QGIS batch"


def _contents(folder):
    """Every file and folder under `folder` (relative paths, sorted); a
    symlink is listed as a file and never followed."""
    found = []
    for root, dirs, files in os.walk(folder):
        for name in list(dirs):
            full = os.path.join(root, name)
            if os.path.islink(full):
                dirs.remove(name)
                files.append(name)
            else:
                found.append(os.path.relpath(full, folder) + os.sep)
        found += [os.path.relpath(os.path.join(root, f), folder) for f in files]
    return sorted(found)


def _strays(folder):
    """What in `folder` no marker of this algorithm accounts for: every
    entry when there is no valid marker."""
    held = [p for p in _contents(folder) if p != MARKER]
    try:
        with open(os.path.join(folder, MARKER), encoding="utf-8") as f:
            marker = json.load(f)
        listed = set(marker["files"]) if marker.get("kind") == MARKER_KIND else set()
    except (OSError, ValueError, KeyError, TypeError):
        listed = set()
    return [p for p in held if p not in listed]


class BatchFolder:
    """The batch folder of one run. Made by this run (or taken over empty),
    it is emptied again by `abandon`; an earlier batch of this algorithm
    found there (its marker lists every file in the folder) is moved to a
    hidden sibling first, put back by `abandon` and removed by `commit`.
    Any other non-empty folder is refused: nothing in it is ever removed."""

    def __init__(self, path, inputs):
        self.path = path
        self.aside = None
        if os.path.exists(path) and not os.path.isdir(path):
            raise QgsProcessingException(
                f"{path} is a file (hint: choose a folder for the batch's outputs)"
            )
        if os.path.islink(path):
            raise QgsProcessingException(
                f"{path} is a symbolic link (hint: choose a real folder for the batch)"
            )
        inside = [p for p in inputs if _within(p, path)]
        if inside:
            raise QgsProcessingException(
                f"input {inside[0]} is inside the batch folder {path} "
                "(hint: choose another output folder)"
            )
        self.existed = os.path.isdir(path)
        if self.existed and os.listdir(path):
            strays = _strays(path)
            if strays:
                shown = ", ".join(strays[:3]) + (" …" if len(strays) > 3 else "")
                raise QgsProcessingException(
                    f"{path} holds files that are no mapfilter batch of this algorithm "
                    f"({shown}) (hint: choose a new or empty folder; a batch this "
                    "algorithm finished there is replaced once the new one is done)"
                )
            parent, name = os.path.split(path)
            aside = os.path.join(parent, f".{name}.mapfilter-old-{uuid.uuid4().hex[:8]}")
            try:
                os.rename(path, aside)
            except OSError as e:
                raise QgsProcessingException(
                    f"cannot set the earlier batch in {path} aside: {e} "
                    "(hint: choose a new or empty folder)"
                ) from e
            self.aside = aside
            self.existed = False

    def abandon(self, feedback, extra=None):
        """Removes what this run wrote (and `extra`, a file outside the
        folder it made); puts an earlier batch back. The folder was new or
        empty when the run began: all it holds is this run's."""
        try:
            if self.existed:
                for entry in os.listdir(self.path):
                    full = os.path.join(self.path, entry)
                    if os.path.isdir(full) and not os.path.islink(full):
                        shutil.rmtree(full)
                    else:
                        os.remove(full)
            elif os.path.exists(self.path):
                shutil.rmtree(self.path)
            if extra is not None and os.path.exists(extra):
                os.remove(extra)
            if self.aside is not None:
                os.rename(self.aside, self.path)
                feedback.pushInfo(f"the earlier batch in {self.path} is back as it was")
            else:
                feedback.pushInfo(f"nothing of this run is left in {self.path}")
        except OSError as e:
            kept = f"; the earlier batch is in {self.aside}" if self.aside else ""
            feedback.reportError(f"cannot clear {self.path}: {e}{kept}")

    def commit(self):
        """Marks the folder as a finished batch of this algorithm (listing
        every file it holds), then removes the earlier batch set aside."""
        files = [p for p in _contents(self.path) if p != MARKER]
        with open(os.path.join(self.path, MARKER), "w", encoding="utf-8") as f:
            json.dump({"kind": MARKER_KIND, "files": files}, f, indent=1)
        if self.aside is not None:
            shutil.rmtree(self.aside)


def _within(path, folder):
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class BatchAlgorithm(MapfilterAlgorithm):
    command = "batch"
    help_command = "batch plan"
    label = "Smooth a folder of tiles (batch, seam-free mosaic)"
    group_key = "classes"

    def about(self):
        return (
            f"<p>{html.escape(cli_help.command('batch').about)}: "
            f"{html.escape(self.cli.about)}.</p>"
            "<p>Runs <code>mapfilter batch plan INPUT... --out FOLDER</code>, "
            "<code>batch run FOLDER</code> and <code>batch report FOLDER</code>; "
            "the folder then holds <code>out/</code> (one smoothed tile per input tile), "
            "<code>mosaic.vrt</code> (loaded as a layer) and <code>report.html</code>. "
            "Cancel or a failure leaves nothing of the run in the folder; an earlier "
            "batch there is replaced only once the new one is complete.</p>"
        )

    def define(self):
        self.add(
            QgsProcessingParameterFile(
                "INPUT", self.tr("Folder of input tiles"),
                behavior=QgsProcessingParameterFile.Folder, optional=True,
            ),
            "<INPUTS>",
        )
        self.add(
            QgsProcessingParameterMultipleLayers(
                "LAYERS", self.tr("Input rasters (with or instead of the folder)"),
                layerType=QgsProcessing.TypeRaster, optional=True,
            ),
            "<INPUTS>",
        )
        self.add(
            self.integer_parameter("GRID", "Cut a single raster into N × N tasks", "grid",
                                   optional=True, minValue=1),
            "grid",
        )
        add_smoothing(self, "Tile side (pixels)", variant_option="smooth:variant")
        # As smooth's: each mosaic is sieved as one raster once its tiles
        # are smoothed, so a patch crossing tiles is one patch.
        add_threshold(
            self, "MMU", ("Minimum mapping unit (empty: none)", "Minimum mapping unit: unit"),
            "mmu", optional=True,
        )
        self.add(
            self.enum_parameter(
                "MMU_CONNECTIVITY", "Minimum mapping unit: pixels that touch",
                "mmu-connectivity", ["4", "8"],
            ),
            "mmu-connectivity",
        )
        self.add(
            self.flag_parameter("COMPARE", "Compare with the exact baseline (agreement, kappa)"),
            "compare-with",
        )
        self.add(
            self.integer_parameter("JOBS", "Tasks in flight at once", None, optional=True,
                                   minValue=1),
            "batch run:jobs",
            advanced=True,
        )
        self.add(
            QgsProcessingParameterRasterDestination(
                "COG", self.tr("Also one Cloud Optimized GeoTIFF of the mosaic"),
                optional=True, createByDefault=False,
            ),
            "batch report:cog",
            advanced=True,
        )
        self.add(QgsProcessingParameterFolderDestination("OUTPUT", self.tr("Batch folder")),
                 "out")
        self.addOutput(QgsProcessingOutputRasterLayer("MOSAIC", self.tr("Smoothed mosaic")))
        self.addOutput(QgsProcessingOutputHtml("REPORT", self.tr("Batch report")))

    def inputs(self, parameters, context):
        paths = []
        folder = self.parameterAsFile(parameters, "INPUT", context)
        if folder:
            paths.append(os.path.abspath(folder))
        for layer in self.parameterAsLayerList(parameters, "LAYERS", context):
            if layer.providerType() != "gdal":
                raise QgsProcessingException(
                    f"{layer.name()} is not a file GDAL reads (hint: save it as GeoTIFF first)"
                )
            paths.append(os.path.abspath(layer.source().split("|")[0]))
        if not paths:
            raise QgsProcessingException(
                "no input (hint: choose a folder of tiles or some raster layers)"
            )
        return paths

    def steps(self, parameters, context, inputs, folder):
        """The three commands, each with how its progress fills the bar."""
        plan = ["batch", "plan"] + inputs + ["--out", folder]
        plan += self.number_args(parameters, context, [("GRID", "grid")])
        if self.parameterAsBoolean(parameters, "COMPARE", context):
            plan += ["--compare-with", "naive"]
        plan += smoothing_args(self, parameters, context)
        mmu = threshold_text(self, parameters, "MMU", context)
        if mmu is not None:
            plan += ["--mmu", mmu]
            plan += ["--mmu-connectivity", self.enum_text(parameters, "MMU_CONNECTIVITY", context)]
        run = ["batch", "run", folder]
        run += self.number_args(parameters, context, [("JOBS", "jobs")])
        report = ["batch", "report", folder]
        cog = self.parameterAsOutputLayer(parameters, "COG", context)
        if cog:
            report += ["--cog", cog] + (["--overwrite"] if os.path.exists(cog) else [])
        run_phases = runner.Phases(rest=RUN_SPAN)
        if mmu is not None:
            # The run smooths the tasks, then sieves each mosaic: the
            # sieve's lines fill the run's last tenth, never move it back.
            sieve_from = RUN_SPAN[1] - (RUN_SPAN[1] - RUN_SPAN[0]) / 10
            run_phases = runner.Phases(
                {"batch": (RUN_SPAN[0], sieve_from), "sieve": (sieve_from, RUN_SPAN[1])},
                rest=RUN_SPAN,
            )
        return [
            (plan, runner.Phases(rest=PLAN_SPAN)),
            (run, run_phases),
            (report, runner.Phases(rest=REPORT_SPAN)),
        ], cog

    def processAlgorithm(self, parameters, context, feedback):
        binary = self.binary()
        inputs = self.inputs(parameters, context)
        folder = os.path.abspath(self.parameterAsFileOutput(parameters, "OUTPUT", context))
        steps, cog = self.steps(parameters, context, inputs, folder)
        batch = BatchFolder(folder, inputs)
        # A COG made by this run (not one it would replace) goes with it.
        new_cog = cog if cog and not os.path.exists(cog) else None
        try:
            for args, phases in steps:
                if feedback.isCanceled():
                    raise QgsProcessingException("cancelled before " + " ".join(args[:2]))
                runner.run(binary, args, feedback, phases)
                feedback.setProgress(phases.rest[1])
        except BaseException:
            batch.abandon(feedback, new_cog)
            raise
        batch.commit()
        mosaic = os.path.join(folder, "mosaic.vrt")
        context.addLayerToLoadOnCompletion(
            mosaic,
            QgsProcessingContext.LayerDetails(
                self.tr("Smoothed mosaic"), context.project(), "MOSAIC"
            ),
        )
        results = {
            "OUTPUT": folder,
            "MOSAIC": mosaic,
            "REPORT": os.path.join(folder, "report.html"),
        }
        if cog:
            results["COG"] = cog
        return results

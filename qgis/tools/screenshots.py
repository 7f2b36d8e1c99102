"""Runs inside QGIS desktop (`qgis --code qgis/tools/screenshots.py`, see
screenshots.sh): loads the bundled MODIS land-cover map, runs the smooth
algorithm on it (its output loads with the colour table), filters the
Processing toolbox to mapfilter, and saves seven pictures into
$SCREENSHOT_DIR: the main window with the toolbox entry, the smooth
algorithm's dialog, the compare algorithm's dialog after a run (its log),
the main window with the mismatch raster and the HTML report in the
Results Viewer, the batch algorithm's dialog on a folder of tiles before
and after its run, and the main window with the batch's mosaic loaded and
its report in the Results Viewer. Then quits QGIS."""

import os
import sys
import traceback

import processing
from processing.core.ProcessingConfig import ProcessingConfig
from qgis.PyQt.QtCore import Qt, QTimer
from qgis.PyQt.QtWidgets import QDockWidget
from qgis.core import QgsProject, QgsRasterLayer
from qgis.utils import iface, plugins

OUT = os.environ["SCREENSHOT_DIR"]
REPO = os.environ["MAPFILTER_REPO"]
MODIS = os.path.join(REPO, "data", "modis_igbp_2019_2048.tif")
state = {}


def step(delay_ms, fn):
    def run():
        try:
            fn()
        except Exception:
            traceback.print_exc()
            with open(os.path.join(OUT, "error.txt"), "w") as f:
                f.write(traceback.format_exc())
            os._exit(1)

    QTimer.singleShot(delay_ms, run)


def load_and_smooth():
    iface.mainWindow().resize(1280, 800)
    layer = QgsRasterLayer(MODIS, "modis_igbp_2019_2048")
    QgsProject.instance().addMapLayer(layer)
    processing.runAndLoadResults(
        "mapfilter:smooth",
        {
            "INPUT": MODIS,
            "KERNEL": 0,
            "KERNEL_VALUE": 5,
            "OUTPUT": os.path.join(OUT, "smoothed.tif"),
        },
    )
    iface.mapCanvas().setExtent(layer.extent())
    toolbox = iface.mainWindow().findChild(QDockWidget, "ProcessingToolbox")
    toolbox.show()
    toolbox.raise_()
    toolbox.searchBox.setText("mapfilter")
    iface.mainWindow().resizeDocks([toolbox], [400], Qt.Horizontal)
    state["toolbox"] = toolbox
    step(4000, shoot_window)


def shoot_window():
    iface.mapCanvas().refreshAllLayers()
    state["toolbox"].algorithmTree.clearSelection()
    # The input's legend folded, the smoothed output's (its colour table) open.
    for node in QgsProject.instance().layerTreeRoot().findLayers():
        node.setExpanded(node.name() == "Smoothed")
    iface.mainWindow().grab().save(os.path.join(OUT, "qgis-toolbox.png"))
    dialog = processing.createAlgorithmDialog("mapfilter:smooth", {"INPUT": MODIS})
    dialog.resize(1100, 820)
    dialog.show()
    state["dialog"] = dialog
    step(2500, shoot_smooth_dialog)


def shoot_smooth_dialog():
    state["dialog"].grab().save(os.path.join(OUT, "qgis-smooth-dialog.png"))
    state["dialog"].close()
    dialog = processing.createAlgorithmDialog(
        "mapfilter:compare",
        {"REFERENCE": MODIS, "CANDIDATE": os.path.join(OUT, "smoothed.tif")},
    )
    dialog.resize(1000, 640)
    dialog.show()
    state["dialog"] = dialog
    step(2500, run_compare)


def run_compare():
    # Run from the dialog, kept open to show its log afterwards.
    ProcessingConfig.setSettingValue(ProcessingConfig.KEEP_DIALOG_OPEN, True)
    state["dialog"].runButton().click()
    state["waited"] = 0
    step(1000, wait_for_compare)


def wait_for_compare():
    dialog = state["dialog"]
    if not dialog.wasExecuted() and state["waited"] < 60:
        state["waited"] += 1
        step(1000, wait_for_compare)
        return
    dialog.grab().save(os.path.join(OUT, "qgis-compare-run.png"))
    dialog.close()
    plugins["processing"].resultsDock.show()
    step(2000, shoot_results)


def shoot_results():
    iface.mainWindow().grab().save(os.path.join(OUT, "qgis-results.png"))
    plugins["processing"].resultsDock.hide()
    # The MODIS map as a folder of 2 x 2 tiles, as a tiled product comes.
    sys.path.insert(0, os.path.join(REPO, "qgis", "tests"))
    from check_provider import tiles_of

    tiles = os.path.join(OUT, "modis_tiles")
    tiles_of(MODIS, tiles, 2)
    dialog = processing.createAlgorithmDialog(
        "mapfilter:batch",
        {"INPUT": tiles, "METHOD": 2, "EXACT": True, "COMPARE": True,
         "OUTPUT": os.path.join(OUT, "batch")},
    )
    dialog.resize(1100, 820)
    dialog.show()
    state["dialog"] = dialog
    step(2500, run_batch)


def run_batch():
    state["dialog"].grab().save(os.path.join(OUT, "qgis-batch-dialog.png"))
    state["dialog"].runButton().click()
    state["waited"] = 0
    step(1000, wait_for_batch)


def wait_for_batch():
    dialog = state["dialog"]
    if not dialog.wasExecuted() and state["waited"] < 120:
        state["waited"] += 1
        step(1000, wait_for_batch)
        return
    dialog.grab().save(os.path.join(OUT, "qgis-batch-run.png"))
    dialog.close()
    # The input map hidden: the smoothed mosaic shows, with its legend open.
    for node in QgsProject.instance().layerTreeRoot().findLayers():
        node.setItemVisibilityChecked(node.name() == "Smoothed mosaic")
        node.setExpanded(node.name() == "Smoothed mosaic")
    plugins["processing"].resultsDock.show()
    iface.mapCanvas().refreshAllLayers()
    step(3000, shoot_batch_results)


def shoot_batch_results():
    iface.mainWindow().grab().save(os.path.join(OUT, "qgis-batch-results.png"))
    # QGIS's own exit asks to save the project or crashes on the way out under
    # Xvfb; the pictures are saved by now.
    os._exit(0)


assert "mapfilter_provider" in plugins, "the mapfilter plugin is not loaded"
step(3000, load_and_smooth)

"""The Processing provider: its identity, its one setting (the mapfilter
binary) and its algorithms."""

import os

from qgis.PyQt.QtGui import QIcon
from qgis.core import QgsProcessingProvider

from .algorithms import ALGORITHMS
from .binary import BINARY_SETTING

ICON = os.path.join(os.path.dirname(__file__), "icon.svg")


class MapfilterProvider(QgsProcessingProvider):
    def id(self):
        return "mapfilter"

    def name(self):
        return "mapfilter"

    def longName(self):
        return "mapfilter (majority filter, accuracy reports, image filters)"

    def icon(self):
        return QIcon(ICON)

    def svgIconPath(self):  # noqa: N802 (QGIS's name)
        return ICON

    def load(self):
        try:
            from processing.core.ProcessingConfig import ProcessingConfig, Setting
        except ImportError:
            # Without the Processing plugin there is no settings page;
            # $MAPFILTER and the PATH still find the binary.
            self.refreshAlgorithms()
            return True
        ProcessingConfig.settingIcons[self.name()] = self.icon()
        ProcessingConfig.addSetting(
            Setting(
                self.name(),
                BINARY_SETTING,
                self.tr("mapfilter binary (empty: $MAPFILTER, else the PATH)"),
                "",
                valuetype=Setting.FILE,
            )
        )
        ProcessingConfig.readSettings()
        self.refreshAlgorithms()
        return True

    def unload(self):
        try:
            from processing.core.ProcessingConfig import ProcessingConfig
        except ImportError:
            return
        ProcessingConfig.removeSetting(BINARY_SETTING)

    def loadAlgorithms(self):  # noqa: N802
        for algorithm in ALGORITHMS:
            self.addAlgorithm(algorithm())

    def supportedOutputRasterLayerExtensions(self):  # noqa: N802
        # mapfilter writes GeoTIFF only.
        return ["tif"]

    def defaultRasterFileExtension(self):  # noqa: N802
        return "tif"

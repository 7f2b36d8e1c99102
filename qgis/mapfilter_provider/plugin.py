"""The plugin object: registers the provider with Processing (also in
qgis_process, through initProcessing) and removes it on unload."""

from qgis.core import QgsApplication

from .provider import MapfilterProvider


class MapfilterPlugin:
    def __init__(self, iface):
        self.iface = iface
        self.provider = None

    def initProcessing(self):  # noqa: N802 (QGIS's name)
        self.provider = MapfilterProvider()
        QgsApplication.processingRegistry().addProvider(self.provider)

    def initGui(self):  # noqa: N802
        self.initProcessing()

    def unload(self):
        if self.provider is not None:
            QgsApplication.processingRegistry().removeProvider(self.provider)
            self.provider = None

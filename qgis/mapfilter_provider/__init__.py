"""QGIS plugin entry point: the mapfilter Processing provider.

Install by copying (or zipping) this folder into a profile's python/plugins
folder and enabling it; `qgis_process plugins enable mapfilter_provider`
does the latter headless."""


def classFactory(iface):  # noqa: N802 (QGIS's name)
    from .plugin import MapfilterPlugin

    return MapfilterPlugin(iface)

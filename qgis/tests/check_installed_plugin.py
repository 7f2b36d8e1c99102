"""Checks that QGIS finds the plugin the Debian package installed: the
plugin folder lies in QGIS's system plugin path (pkgDataPath/python/plugins),
qgis.utils lists and loads it from there, and its provider registers its
algorithms and finds the installed binary on the PATH. Run headless by
tests/deb_package.rs after `dpkg -i`; prints "installed plugin OK"."""

import os
import sys

from qgis.core import QgsApplication

app = QgsApplication([], False)
app.initQgis()
import qgis.utils  # noqa: E402  (needs the application first)

system = os.path.join(QgsApplication.pkgDataPath(), "python", "plugins")
folder = os.path.join(system, "mapfilter_provider")
assert os.path.isfile(os.path.join(folder, "metadata.txt")), f"no plugin in {system}"
# What QGIS does at start-up for its system plugin path.
sys.path.insert(0, system)
qgis.utils.plugin_paths = [system]
qgis.utils.updateAvailablePlugins()
assert "mapfilter_provider" in qgis.utils.available_plugins, qgis.utils.available_plugins
assert qgis.utils.loadPlugin("mapfilter_provider"), "the plugin does not load"
import mapfilter_provider  # noqa: E402

assert os.path.dirname(mapfilter_provider.__file__) == folder, mapfilter_provider.__file__
from mapfilter_provider import binary  # noqa: E402
from mapfilter_provider.provider import MapfilterProvider  # noqa: E402

found = binary.find_binary()
assert found == "/usr/bin/mapfilter", found
provider = MapfilterProvider()
assert QgsApplication.processingRegistry().addProvider(provider)
ids = [a.id() for a in provider.algorithms()]
assert "mapfilter:smooth" in ids, ids
print("installed plugin OK:", len(ids), "algorithms")

"""The provider's algorithms, one class per mapfilter command. Adding a
command is one module with a MapfilterAlgorithm subclass, listed here."""

from .compare import CompareAlgorithm
from .filter import FilterAlgorithm
from .gen import GenAlgorithm
from .info import InfoAlgorithm
from .smooth import SmoothAlgorithm

ALGORITHMS = [SmoothAlgorithm, CompareAlgorithm, FilterAlgorithm, GenAlgorithm, InfoAlgorithm]

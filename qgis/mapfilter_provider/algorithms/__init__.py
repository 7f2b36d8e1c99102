"""The provider's algorithms, one class per mapfilter command. Adding a
command is one module with a MapfilterAlgorithm subclass, listed here."""

from .batch import BatchAlgorithm
from .compare import CompareAlgorithm
from .filter import FilterAlgorithm
from .gen import GenAlgorithm
from .info import InfoAlgorithm
from .sieve import SieveAlgorithm
from .smooth import SmoothAlgorithm

ALGORITHMS = [
    SmoothAlgorithm,
    SieveAlgorithm,
    BatchAlgorithm,
    CompareAlgorithm,
    FilterAlgorithm,
    GenAlgorithm,
    InfoAlgorithm,
]

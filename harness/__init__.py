"""privbench: a plugin-based benchmark harness for privacy-preserving mechanisms.

Quick start::

    import privbench as pb
    problem = pb.load_dataset("synthetic", m=6)
    res = pb.get_mechanism("expmec").solve(problem, delta=1.0)
    pb.metrics.mutual_information(problem, res.mapping)   # bits
"""

from __future__ import annotations

import importlib.metadata as _md

from . import metrics
from .api import get_dataset, get_lp_backend, get_mechanism, load_dataset
from .dataset import DatasetAdapter
from .distortion import Distortion, FeatureDistortion, MatrixDistortion
from .errors import (
    DataError,
    InvalidMappingError,
    PluginError,
    PrivbenchError,
    ValidationError,
)
from .executor import Executor, Reporter
from .hookspecs import hookimpl, hookspec
from .host import PluginHost, get_host
from .lp import LPBackend, LPSolution
from .mechanism import (
    MappingMechanism,
    Mechanism,
    MechanismResult,
    RecordMechanism,
    SelectionMechanism,
    validate_mapping,
)
from .metric import Metric
from .problem import PrivacyProblem

try:
    __version__ = _md.version("privbench")
except _md.PackageNotFoundError:  # running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "DataError",
    "DatasetAdapter",
    "Distortion",
    "Executor",
    "FeatureDistortion",
    "InvalidMappingError",
    "LPBackend",
    "LPSolution",
    "MappingMechanism",
    "MatrixDistortion",
    "Mechanism",
    "MechanismResult",
    "Metric",
    "PluginError",
    "PluginHost",
    "PrivacyProblem",
    "PrivbenchError",
    "RecordMechanism",
    "Reporter",
    "SelectionMechanism",
    "ValidationError",
    "__version__",
    "get_dataset",
    "get_host",
    "get_lp_backend",
    "get_mechanism",
    "hookimpl",
    "hookspec",
    "load_dataset",
    "metrics",
    "validate_mapping",
]

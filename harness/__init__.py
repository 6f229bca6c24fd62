"""privbench: a plugin-based benchmark harness for privacy-preserving mechanisms.

Quick start::

    import privbench as pb
    problem = pb.load_dataset("synthetic", m=6)
    res = pb.get_mechanism("expmec").solve(problem, delta=1.0)
    pb.metrics.mutual_information(problem, res.mapping)   # bits
"""

from __future__ import annotations

import importlib.metadata as _md

from privbench.api import get_dataset, get_lp_backend, get_mechanism, load_dataset
from privbench.host.hookspecs import hookimpl, hookspec
from privbench.host.manager import PluginHost, get_host
from privbench.measures import information as metrics
from privbench.protocol.certificate import Certificate
from privbench.protocol.context import RunContext
from privbench.protocol.dataset import DatasetAdapter
from privbench.protocol.distortion import Distortion, FeatureDistortion, MatrixDistortion
from privbench.protocol.errors import (
    DataError,
    InvalidMappingError,
    PluginError,
    PrivbenchError,
    ValidationError,
)
from privbench.protocol.executor import Executor, ProgressForwarder, Reporter
from privbench.protocol.figure import Figure
from privbench.protocol.lp import LinearProgram, LPBackend, LPResult, LPSolution
from privbench.protocol.mechanism import (
    MappingMechanism,
    Mechanism,
    MechanismResult,
    RecordMechanism,
    SelectionMechanism,
    SizeLimited,
    validate_mapping,
)
from privbench.protocol.metric import Metric, Output
from privbench.protocol.outputs import interval_of, output_of, outputs_of
from privbench.protocol.parts import Catalog, Holdout, ProfileCoding, Ratings, Targets
from privbench.protocol.problem import PrivacyProblem
from privbench.running.guards import RunTimeout
from privbench.running.specs import RunSpec

try:
    __version__ = _md.version("privbench")
except _md.PackageNotFoundError:  # running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "Catalog",
    "Certificate",
    "DataError",
    "DatasetAdapter",
    "Distortion",
    "Executor",
    "FeatureDistortion",
    "Figure",
    "Holdout",
    "InvalidMappingError",
    "LinearProgram",
    "LPBackend",
    "LPResult",
    "LPSolution",
    "MappingMechanism",
    "MatrixDistortion",
    "Mechanism",
    "MechanismResult",
    "Metric",
    "Output",
    "interval_of",
    "output_of",
    "outputs_of",
    "PluginError",
    "PluginHost",
    "PrivacyProblem",
    "ProfileCoding",
    "Ratings",
    "PrivbenchError",
    "ProgressForwarder",
    "RecordMechanism",
    "RunContext",
    "RunSpec",
    "RunTimeout",
    "Reporter",
    "SelectionMechanism",
    "SizeLimited",
    "Targets",
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


#: the store and what a reporter, benchmark or tool reads from it: public, but imported on
#: first use (they need pandas, which ``import privbench`` does not pay for)
_LAZY = {
    "load_runs": "privbench.results.views",
    "curves_of": "privbench.results.views",
    "excess_at": "privbench.results.views",
    "describe_excess": "privbench.results.views",
    "short_labels": "privbench.results.views",
    "delta_role_labels": "privbench.results.views",
    "mechanism_notes": "privbench.results.views",
    "DELTA_ROLE_NOTE": "privbench.results.views",
    "rank_rows": "privbench.results.pareto",
    "Curve": "privbench.results.pareto",
    "default_targets": "privbench.results.pareto",
    "pick_reference": "privbench.api",
    "reference_mechanisms": "privbench.api",
    "metric_names": "privbench.api",
    "summarise": "privbench.results.pareto",
    "ResultStore": "privbench.results.store",
    "ResourceMeter": "privbench.running.resources",
    "parse_spec": "privbench.running.specs",
    "execute_run": "privbench.running.runner",
    "failed_record": "privbench.running.runner",
    "sweep": "privbench.running.sweep",
    "iter_sweep": "privbench.running.sweep",
    "SweepSpec": "privbench.running.plan",
    "replicate_group": "privbench.results.significance",
    "collapse_replicates": "privbench.results.significance",
    "paired_difference": "privbench.results.significance",
    "certified_gap": "privbench.results.verdicts",
    "below_chord": "privbench.results.verdicts",
}


def __getattr__(name: str) -> object:
    """The results API of :data:`_LAZY`, imported when first asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'privbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

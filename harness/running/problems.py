"""Loading problems once per process, and handing each run a view it cannot change.

The cache keeps the last few problems a process loaded (sweeps revisit the same data
set for every mechanism and budget). Cached arrays live in immutable memory (read-only
for good: the flag cannot be switched back), and every run gets a shallow copy whose
mutable containers and distortion object are its own, so no mechanism can alter what a
later run sees.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import numpy as np

from privbench.host.manager import get_host
from privbench.protocol.errors import PrivbenchError
from privbench.protocol.problem import PrivacyProblem

_CACHE: OrderedDict[str, PrivacyProblem] = OrderedDict()
CACHE_SIZE = 4


def immutable(array: np.ndarray) -> np.ndarray:
    """A read-only copy of ``array`` whose memory is an immutable ``bytes`` object.

    Clearing the writeable flag of an array that owns its memory is not enough: any code
    may set it back (``a.flags.writeable = True``). NumPy refuses that for an array over
    read-only memory. Object arrays (pointers) can only be flagged.
    """
    if array.dtype.hasobject:
        array.flags.writeable = False
        return array
    data = np.ascontiguousarray(array).tobytes()
    return np.frombuffer(data, dtype=array.dtype).reshape(array.shape)


def _freeze_arrays(obj: Any, depth: int = 0) -> None:
    """Replace every numpy array reachable through ``obj``'s attributes by ``immutable``."""
    if depth > 2:
        return
    attributes = getattr(obj, "__dict__", {})
    for name, value in list(attributes.items()):
        if isinstance(value, np.ndarray):
            attributes[name] = immutable(value)
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            _freeze_arrays(value, depth + 1)


def freeze(problem: PrivacyProblem) -> PrivacyProblem:
    """Make ``problem``'s arrays (joint, marginals, features, distortion tables) read-only."""
    problem.p_b, problem.p_a, problem.prior_mi_bits  # noqa: B018 - fill the cached marginals first
    _freeze_arrays(problem)
    _freeze_arrays(problem.distortion)
    return problem


def run_view(problem: PrivacyProblem) -> PrivacyProblem:
    """A per-run copy: shared read-only arrays, its own records table, parts and metadata."""
    return problem.for_run()


def load_problem(name: str, params: dict[str, Any]) -> PrivacyProblem:
    """Load a data set through its adapter, cached per process (read-only)."""
    key = name + json.dumps(params, sort_keys=True, default=str)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    adapter = get_host().get("dataset", name).create(**params)
    problem = adapter.load()
    if not isinstance(problem, PrivacyProblem):
        raise PrivbenchError(f"dataset {name!r} returned {type(problem).__name__}, not a PrivacyProblem")
    _CACHE[key] = freeze(problem)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return problem

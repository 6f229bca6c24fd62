"""HiGHS runs one task scheduler per process, sized by the first model run; privbench's
HiGHS models ask for one thread. After another HiGHS user started the scheduler with
more (cvxpy solving with HiGHS at its default, or a highspy model with threads=2), the
LP mechanisms run on the scheduler as it is instead of failing with the master "Not
Set", and find the same mappings. Each case runs in a fresh interpreter: the scheduler
cannot be unset."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("highspy")

#: what starts HiGHS's scheduler with 2 threads before privbench's models run
FIRST = {
    "none": "",
    "cvxpy": ("import cvxpy as cp\n"
              "x = cp.Variable(2, nonneg=True)\n"
              "cp.Problem(cp.Minimize(cp.sum(x)), [x[0] >= 1]).solve(solver='HIGHS')\n"),
    "highspy threads=2": ("import highspy\n"
                          "h = highspy.Highs()\n"
                          "h.setOptionValue('output_flag', False)\n"
                          "h.setOptionValue('threads', 2)\n"
                          "assert h.run() == highspy.HighsStatus.kOk\n"),
}

SOLVE = """
import json, numpy as np, scipy.sparse as sp, privbench as pb
problem = pb.load_dataset('synthetic', m=4)
out = {}
for label, name, params in (('map', 'map_optimal', {}), ('pp', 'perfect_privacy', {}),
                            ('sppm', 'sppm', {'lp_backend': 'highs'})):
    try:
        X = pb.get_mechanism(name, **params).solve(problem, delta=1.0).mapping
        out[label] = sp.csr_array(X).toarray().round(12).tolist()
    except Exception as exc:
        out[label] = f'{type(exc).__name__}: {exc}'
print(json.dumps(out))
"""


def _solve_after(first: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", FIRST[first] + SOLVE], capture_output=True,
                          text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def alone() -> dict[str, object]:
    """The mappings in an interpreter where privbench's models start the scheduler."""
    return _solve_after("none")


@pytest.mark.slow  # fresh interpreters: 4-7 s each
@pytest.mark.parametrize("first", ["cvxpy", "highspy threads=2"])
def test_lp_mechanisms_solve_after_another_highs_started_the_scheduler(
        first: str, alone: dict[str, object]) -> None:
    """Before: map_optimal and perfect_privacy raised "the restricted master is Not Set",
    sppm with lp_backend=highs "LP backend 'highs' returned error: HiGHS: Not Set"."""
    if first == "cvxpy":
        pytest.importorskip("cvxpy")
    after = _solve_after(first)
    for label, mapping in after.items():
        assert not isinstance(mapping, str), (label, mapping)
        assert mapping == alone[label], label


def test_usable_threads_keeps_the_running_schedulers_count() -> None:
    """In this process the scheduler runs with some count k (started by the first HiGHS
    model of the test session, or here by the probe for 1): k is kept, any other count
    gives 0 (run on the scheduler as it is), 0 stays 0."""
    import highspy

    from privbench.plugins.lp.highs import usable_threads

    k = next(t for t in range(1, 257) if usable_threads(highspy, t) == t)
    assert usable_threads(highspy, k) == k
    assert usable_threads(highspy, k + 1) == 0 and usable_threads(highspy, 0) == 0

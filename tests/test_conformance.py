"""``privbench.testing``: one pytest item per (built-in mechanism, invariant), and each
named check catching the bug it names."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.testing import (
    CHECKS,
    INVARIANTS,
    InvariantError,
    check_budget,
    check_column_stochastic_mapping,
    check_data_processing,
    check_determinism,
    check_mechanism,
    check_promises,
    check_repeat,
    checks_for,
    parametrize_with_checks,
)

_HOST = pb.get_host()
#: pram and mondrian need coded problems (their own tests pass them); these two take seconds
_OWN_PROBLEMS = {"pram", "mondrian"}
_SLOW = {"mirror_descent", "smoothed_dual"}
_MAPPINGS = [cls for name, cls in sorted(_HOST.mechanisms().items())
             if name in _HOST.builtin_names("mechanism") and name not in _OWN_PROBLEMS]


@parametrize_with_checks([c for c in _MAPPINGS if c.name not in _SLOW])
def test_builtin_mechanism(mechanism, check) -> None:
    check(mechanism)


@pytest.mark.slow
@parametrize_with_checks([c for c in _MAPPINGS if c.name in _SLOW])
def test_builtin_mechanism_slow(mechanism, check) -> None:
    check(mechanism)


def test_every_invariant_has_a_check() -> None:
    assert set(CHECKS) == set(INVARIANTS)
    assert [c.__name__ for c in checks_for(_HOST.get("mechanism", "identity"))][-2:] == [
        "check_determinism", "check_repeat"]


class _Broken(pb.MappingMechanism):
    """A mechanism with one switchable bug."""

    name = "broken"
    bug = ""
    calls = 0

    def run(self, problem, delta):
        n = problem.n
        X = np.eye(n)
        if self.bug == "columns":
            X[0, 0] = 0.5  # a column summing to 0.5
        elif self.bug == "budget":
            X = np.zeros((n, n))
            X[0, :] = 1.0  # everything to symbol 0: E[d] > 0 = the smallest budget
        elif self.bug == "unseeded":
            X = np.eye(n) * 0.5 + np.random.default_rng().random((n, n)) * 1e-3
            X /= X.sum(axis=0)
        elif self.bug == "stateful":
            self.calls += 1  # state kept on the instance between runs
            w = 0.1 * (self.calls % 2)
            X = (1 - w) * np.eye(n) + w / n
        elif self.bug == "unseeded at 0" and delta == 0:  # a random start only at Δ = 0
            X = np.eye(n) * 0.5 + np.random.default_rng().random((n, n)) * 1e-3
            X /= X.sum(axis=0)
        elif self.bug == "stateful at 0" and delta == 0:  # a warm start only at Δ = 0
            self.calls += 1
            w = 0.1 * (self.calls % 2)
            X = (1 - w) * np.eye(n) + w / n
        return self.result(sp.csc_array(X))


def _with(bug: str, *, respects_budget: bool = False) -> type[pb.MappingMechanism]:
    return type(f"Broken_{bug}", (_Broken,), {"bug": bug, "respects_budget": respects_budget})


@pytest.mark.parametrize(("bug", "check", "invariant", "budget"), [
    ("columns", check_column_stochastic_mapping, "column-stochastic mapping", False),
    ("budget", check_budget, "budget", True),
    ("unseeded", check_determinism, "determinism", False),
    ("stateful", check_repeat, "repeat", False),
    ("unseeded at 0", check_determinism, "determinism", False),
    ("stateful at 0", check_repeat, "repeat", False),
])
def test_each_check_catches_its_bug(bug, check, invariant, budget) -> None:
    broken = _with(bug, respects_budget=budget)
    with pytest.raises(InvariantError) as caught:
        check(broken)
    assert caught.value.invariant == invariant
    check_data_processing(_with("stateful"))  # a correct invariant of a broken mechanism passes


def test_determinism_and_repeat_tell_the_two_bugs_apart() -> None:
    check_determinism(_with("stateful"))  # two fresh instances agree on their first run...
    with pytest.raises(InvariantError, match="after one prepare"):
        check_repeat(_with("stateful"))  # ...but the second run of one instance differs


@pytest.mark.parametrize(("bug", "invariant"), [("unseeded at 0", "determinism"),
                                                ("stateful at 0", "repeat")])
def test_determinism_and_repeat_are_checked_at_every_budget(bug, invariant) -> None:
    """Each case that ``check_mechanism`` reports as checked for determinism and repeat is
    solved twice: a bug at Δ = 0 alone, the smallest budget, is caught."""
    with pytest.raises(InvariantError, match="at delta=0:") as caught:
        check_mechanism(_with(bug))
    assert caught.value.invariant == invariant
    rows = check_mechanism(_with("none"))
    assert {r["delta"] for r in rows if r["delta"] == 0.0} and all(
        {"determinism", "repeat"} <= set(r["invariants"]) for r in rows)


class _Promising(pb.MappingMechanism):
    """Returns the identity whatever it promises."""

    name = "promising"
    respects_budget = False
    promised: dict = {}

    def __init__(self) -> None:
        pass

    def promises(self, delta):
        return {key: (delta if value is None else value) for key, value in self.promised.items()}

    def run(self, problem, delta):
        return self.result(sp.identity(problem.n, format="csc"))


def _promising(**promised) -> type[pb.MappingMechanism]:
    return type("Promising", (_Promising,), {"promised": promised})


def test_promises_are_checked_by_the_runners_own_check() -> None:
    lying = _promising(lip_epsilon=None)  # ε = Δ: the identity leaks everything
    for check in (check_mechanism, check_promises):
        with pytest.raises(InvariantError, match=r"broken promise \(ε-local information privacy\): "
                                                 "measured lip_epsilon = .* nats > 0") as caught:
            check(lying)
        assert caught.value.invariant == "promises"
    # the runner's sentence for a promise it does not know, and for a broken k-anonymity
    with pytest.raises(InvariantError, match="promise 'nope' is unknown"):
        check_mechanism(_promising(nope=1.0))
    with pytest.raises(InvariantError, match=r"smallest_cell_mass = .* < 1"):
        check_promises(_promising(smallest_cell_mass=1.0))
    # a promise the identity keeps is measured on every case; none declared: not counted
    rows = check_mechanism(_promising(ldp_epsilon_private=1e6))
    assert all("promises" in r["invariants"] for r in rows)
    assert not any("promises" in r["invariants"] for r in check_mechanism(_promising()))


def test_the_runner_finds_the_same_broken_promise() -> None:
    from privbench.running.problems import freeze
    from privbench.running.runner import check_promises as runner_check

    assert runner_check.__module__ == "privbench.running.runner"
    problem = freeze(pb.load_dataset("synthetic", m=3))
    mech = _promising(lip_epsilon=None).create()
    result = mech.solve(problem, delta=0.0)  # the first budget the helper checks
    record = {"mechanism": "promising", "metrics": {}, "distortion": 0.0}
    with pytest.raises(pb.InvalidMappingError) as runner:
        runner_check(mech, problem, result, record, 0.0)
    with pytest.raises(InvariantError) as helper:
        check_promises(_promising(lip_epsilon=None), problems=[problem])
    assert str(runner.value) in str(helper.value)

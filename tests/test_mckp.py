"""The ``mckp`` master against a general LP solver, on random and degenerate masters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import privbench as pb
from privbench.plugins.lp._mckp_kernel import OPTIMAL, group_order, solve_mckp


def linprog_master(n, cols, cost, budget, delta):
    A_eq = np.zeros((n, cols.size))
    A_eq[cols, np.arange(cols.size)] = 1.0
    return linprog(cost, A_ub=budget[None, :], b_ub=[delta], A_eq=A_eq, b_eq=np.ones(n),
                   bounds=(0, None), method="highs")


@st.composite
def masters(draw):
    n = draw(st.integers(1, 7))
    per = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    cols = np.repeat(np.arange(n), per)
    # few distinct values: ties in cost, in budget and collinear hull points
    cost = np.array(draw(st.lists(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]),
                                  min_size=cols.size, max_size=cols.size)))
    budget = np.array(draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]),
                                    min_size=cols.size, max_size=cols.size)))
    delta = draw(st.sampled_from([0.0, 0.3, 1.0, 2.5, 100.0]))
    perm = np.array(draw(st.permutations(range(cols.size))))
    return n, cols[perm], cost[perm], budget[perm], delta


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(masters())
def test_mckp_matches_linprog_and_certifies_itself(master) -> None:
    n, cols, cost, budget, delta = master
    status, x, lam, mu, obj = solve_mckp(cost, budget, *group_order(cols, budget, n), delta)
    ref = linprog_master(n, cols, cost, budget, delta)
    if ref.status == 2:
        assert status != OPTIMAL
        return
    assert ref.status == 0 and status == OPTIMAL
    assert obj == pytest.approx(ref.fun, abs=1e-9)
    # primal feasibility
    assert x.min() >= 0
    np.testing.assert_allclose(np.bincount(cols, x, minlength=n), 1.0, atol=1e-12)
    assert budget @ x <= delta + 1e-12
    # dual feasibility, complementary slackness, strong duality
    assert lam <= 0
    r = cost - lam * budget - mu[cols]
    assert r.min() >= -1e-12
    assert np.abs(r * x).max() <= 1e-12
    assert lam * delta + mu.sum() == pytest.approx(obj, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(masters(), st.integers(0, 30))
def test_incremental_order_equals_a_full_sort(master, cut: int) -> None:
    n, cols, _, budget, _ = master
    cut = min(cut, cols.size)
    head, _ = group_order(cols[:cut], budget[:cut], n)
    merged, ptr = group_order(cols, budget, n, head)
    full, ptr_full = group_order(cols, budget, n)
    np.testing.assert_array_equal(ptr, ptr_full)
    key = np.stack([cols, budget])
    np.testing.assert_array_equal(key[:, merged], key[:, full])
    assert sorted(merged.tolist()) == list(range(cols.size))


def test_mckp_backend_reports_uncovered_inputs() -> None:
    b = pb.get_lp_backend("mckp")
    b.start(3, 1.0)
    b.add_columns(np.array([0, 2]), np.array([1.0, 2.0]), np.array([0.0, 0.0]))
    sol = b.solve()
    assert sol.status == "infeasible" and "[1]" in sol.message


def test_mckp_backend_reports_an_unaffordable_budget() -> None:
    b = pb.get_lp_backend("mckp")
    b.start(2, 0.5)
    b.add_columns(np.array([0, 1, 1]), np.array([1.0, 2.0, 0.0]), np.array([0.4, 0.3, 0.9]))
    assert b.solve().status == "infeasible"
    b.start(2, 0.7)
    b.add_columns(np.array([0, 1, 1]), np.array([1.0, 2.0, 0.0]), np.array([0.4, 0.3, 0.9]))
    sol = b.solve()
    assert sol.status == "optimal" and sol.objective == pytest.approx(3.0)

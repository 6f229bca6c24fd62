"""Sums of per-output maxima (min-entropy leakage, maximal leakage, guessing entropy):
the contact-set bounds of :func:`bs.sum_bounds` against a brute-force computation, their
misses per side on simulated ties, and where the metric uses them
(:func:`bs.rejected_sum`)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import privbench as pb
from privbench.plugins.metrics import bootstrap as bs


def _brute_bounds(name: str, est: np.ndarray, boot: np.ndarray, users: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(D_hi, D_lo) by loops: per output the contact set (or, for guessing entropy, every
    order of the private values that keeps the estimated tie groups in place, by
    enumerating permutations), the chain rule written out term by term."""
    kappa = np.sqrt(2 * np.log(np.log(users)))
    Q = est / est.sum()
    Qb = boot / boot.sum(axis=(1, 2), keepdims=True)
    k, n = Q.shape
    pa, pab = Q.sum(axis=1), Qb.sum(axis=2)
    if name == "maximal_leakage":
        Q, Qb = Q / pa[:, None], Qb / pab[:, :, None]
    s = Qb.std(axis=0, ddof=1)
    hi, lo = np.zeros(len(boot)), np.zeros(len(boot))
    for b in range(len(boot)):
        h = Qb[b] - Q
        for y in range(n):
            if name == "guessing_entropy":
                order = sorted(range(k), key=lambda a: -Q[a, y])
                group = [0]
                for i in range(1, k):
                    tied = Q[order[i], y] >= Q[order[i - 1], y] - kappa * s[order[i], y]
                    group.append(group[-1] + (not tied))
                sums = [sum((r + 1) * h[order[p[r]], y] for r in range(k))
                        for p in itertools.permutations(range(k))
                        if all(group[p[r]] == group[r] for r in range(k))]
                hi[b] += max(sums)
                lo[b] += min(sums)
                continue
            near = [a for a in range(k) if Q[a, y] >= Q[:, y].max() - kappa * s[a, y]]
            hi[b] += max(h[a, y] for a in near)
            lo[b] += min(h[a, y] for a in near)
    if name == "guessing_entropy":
        return hi, lo
    total = Q.max(axis=0).sum()
    hi, lo = hi / (total * np.log(2)), lo / (total * np.log(2))
    if name == "min_entropy_leakage":
        sp_ = pab.std(axis=0, ddof=1)
        near = [a for a in range(k) if pa[a] >= pa.max() - kappa * sp_[a]]
        dp = pab[:, near] - pa[near]
        top = pa.max() * np.log(2)
        hi, lo = hi - dp.min(axis=1) / top, lo - dp.max(axis=1) / top
    return hi, lo


@pytest.mark.parametrize("name", sorted(bs.SUMS_OF_MAXIMA))
def test_sum_bounds_are_the_contact_set_derivatives(name: str) -> None:
    """On a |A| = 4 joint with exact and near ties (two outputs tied at the top, one tied
    in its middle ranks, a prior whose two largest values differ by 0.002) and 60 resamples
    of 3,000 users, :func:`bs.sum_bounds` equals the brute force (loops, every order of
    the tie groups enumerated) and θ̂ equals the notion's plug-in. Caught by hand: the
    prior's least deviation replaced by its largest in D_hi (min-entropy leakage), both
    of guessing entropy's bounds sorted the same way, κ = 0 (maximal leakage)."""
    rng = np.random.default_rng(7)
    est = np.array([[0.10, 0.10, 0.05, 0.02, 0.03],
                    [0.10, 0.04, 0.05, 0.08, 0.03],
                    [0.05, 0.04, 0.04, 0.04, 0.06],
                    [0.02, 0.10, 0.02, 0.02, 0.02]])
    est = est / est.sum()
    boot = rng.multinomial(3000, est.ravel(), size=60).reshape(60, *est.shape) / 3000
    theta, high, low = bs.sum_bounds(name, est, boot, 3000)
    assert theta == pytest.approx(bs.VECTORISED[name](est[None])[0], abs=1e-12)
    want_hi, want_lo = _brute_bounds(name, est, boot, 3000)
    assert high == pytest.approx(want_hi, abs=1e-12)
    assert low == pytest.approx(want_lo, abs=1e-12)
    assert np.all(high >= low - 1e-15)
    assert high.std() > 0 and not np.allclose(high, low)


def _tied_joint(post: list[float]) -> np.ndarray:
    """|A| = 2, equally likely outputs (identity mapping) with p(a0 | y) = ``post``."""
    p = np.asarray(post)
    return np.vstack([p, 1.0 - p]) / p.size


def _misses(name: str, P: np.ndarray, reps: int, seed: int, build=None) -> tuple[float, float]:
    """(share of intervals above the truth, share below it) of
    :func:`bs.contact_sum_interval` (or ``build``) over ``reps`` seeded samples of 2,000
    users from P, each with 200 resamples."""
    build = build or bs.contact_sum_interval
    truth = bs.VECTORISED[name](P[None])[0]
    rng = np.random.default_rng(seed)
    above = below = 0
    for _ in range(reps):
        est = rng.multinomial(2000, P.ravel()).reshape(P.shape) / 2000
        boot = rng.multinomial(2000, est.ravel(), size=200).reshape(200, *P.shape) / 2000
        lo, hi = build(name, est, boot, 2000, bounds=(-np.inf, np.inf))
        above += lo > truth + 1e-12
        below += hi < truth - 1e-12
    return above / reps, below / reps


def _plain(name: str, est: np.ndarray, boot: np.ndarray, users: int, bounds) -> list[float]:
    theta = bs.VECTORISED[name](est[None])[0]
    return bs.normal_interval(theta, bs.VECTORISED[name](boot), bounds=bounds)


def test_contact_sum_interval_on_exact_ties() -> None:
    """Four of six outputs exactly tied between the two private values, and the prior
    exactly tied (p(a0 | y) = 0.5, 0.5, 0.5, 0.5, 0.8, 0.2): the plug-ins are biased (up
    for the two leakages, down for guessing entropy) and the plain bias-corrected normal
    interval misses on the boundary side in 15.3 % (maximal leakage), 16.6 % (guessing
    entropy) and 4.9 % (min-entropy leakage) of 1,000 seeded samples. The contact-set
    bounds' end at the boundary (the lower end of a leakage, guessing entropy's upper
    end) misses 6.6 % / 7.6 % / 0 (Ĵ misses a tied value when the two estimates fall
    more than κ s apart, as for :func:`bs.contact_set_interval`; the prior's tie makes
    min-entropy leakage's lower end conservative) and its other end never (the least
    way over the contact sets). Caught by hand: the quantiles swapped (min-entropy
    leakage misses 73 % low, 41 % high), D_hi and D_lo exchanged (59 % / 27 %), the
    prior's largest deviation in D_hi (5.4 % low), κ = 1 or 0 (maximal leakage 11.9 % or
    19.4 % low), guessing entropy's two bounds sorted the same way (2.7 % low)."""
    P = _tied_joint([0.5, 0.5, 0.5, 0.5, 0.8, 0.2])
    ml_above, ml_below = _misses("min_entropy_leakage", P, 1000, 1)
    assert ml_above <= 0.01 and ml_below <= 0.01, (ml_above, ml_below)
    above, below = _misses("maximal_leakage", P, 1000, 1)
    assert 0.03 <= above <= 0.09 and below <= 0.01, (above, below)
    plain_above, _ = _misses("maximal_leakage", P, 1000, 1, _plain)
    assert plain_above >= 0.12, plain_above
    above, below = _misses("guessing_entropy", P, 1000, 1)
    assert above <= 0.01 and 0.04 <= below <= 0.10, (above, below)
    _, plain_below = _misses("guessing_entropy", P, 1000, 1, _plain)
    assert plain_below >= 0.12, plain_below


def test_contact_sum_interval_away_from_ties_is_about_its_level() -> None:
    """Every output's two values 0.2-0.4 apart (p(a0 | y) = 0.9, 0.8, 0.75, 0.3, 0.2,
    0.7): no ties, the plug-in is smooth and each end of the interval misses about its
    2.5 % (1,000 seeded samples: 1.5-4.5 % each side for maximal leakage and guessing
    entropy)."""
    P = _tied_joint([0.9, 0.8, 0.75, 0.3, 0.2, 0.7])
    for name in ("maximal_leakage", "guessing_entropy"):
        above, below = _misses(name, P, 1000, 2)
        assert 0.012 <= above <= 0.045 and 0.012 <= below <= 0.045, (name, above, below)
    assert bs.sum_bounds("maximal_leakage", P, np.full((3, 2, 6), np.nan), 2000) is None


def test_rejected_sum_takes_the_end_at_the_boundary_from_the_contact_bounds() -> None:
    """Where the test rejects, a leakage's lower end is the contact bounds' (kept just
    above the value under independence), guessing entropy's upper end likewise (kept just
    below G(A)), and the other end is the interval's own. Caught by hand: the sides
    exchanged for guessing entropy (hi 1.9 instead of 1.8), the floor dropped (lo 0.02
    below a boundary value of 0.0305), the other end replaced by the contact bounds' (hi
    0.06 instead of 0.07)."""
    assert bs.rejected_sum([0.02, 0.06], [0.031, 0.07], 1, 0.0) == [0.02, 0.07]
    floor = bs.rejected_sum([0.02, 0.06], [0.031, 0.07], 1, 0.0305)
    assert floor == [float(np.nextafter(0.0305, 1.0)), 0.07]
    assert bs.rejected_sum([1.5, 1.8], [1.6, 1.75], -1, 2.0) == [1.6, 1.8]
    top = bs.rejected_sum([1.5, 1.8], [1.6, 1.75], -1, 1.7)
    assert top == [1.6, float(np.nextafter(1.7, 0.0))]
    assert bs.rejected_sum(None, [0.031, 0.07], 1, 0.0) == [0.031, 0.07]


def test_the_metric_uses_the_contact_bounds_where_the_test_rejects() -> None:
    """A sample of 3,000 users from the main design's joint at |A| = 4, 0.05 bits (seed 3):
    the tests of the sums of maxima reject; maximal leakage's stored interval is
    :func:`bs.rejected_sum` of :func:`bs.contact_sum_interval` on the metric's own
    resamples and of the interval the metric built before it (the same metric without
    the resamples' output joints), and min-entropy leakage's and guessing entropy's are
    that interval unchanged (not in :data:`bs.CONTACT_SUMS`); maximal leakage's upper end
    is the calibrated interval's. Caught by hand: the step dropped, applied to all three,
    maximal leakage left out of :data:`bs.CALIBRATED`."""
    import importlib.util
    from pathlib import Path

    import scipy.sparse as sp

    path = Path(__file__).resolve().parents[1] / "tools" / "measure_ci_coverage.py"
    spec = importlib.util.spec_from_file_location("measure_ci_coverage", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    P, X = tool.known_joint(4, 30, 0.05, np.random.default_rng([3, 4]))
    prob = tool.sampled_problem(P, 3000, np.random.default_rng(4))
    metric = bs.BootstrapIntervals(resamples=200)
    values = metric.compute(prob, pb.MechanismResult("mapping", mapping=X), delta=0.0)
    terms: dict[str, np.ndarray] = {}
    stack: list[np.ndarray] = []
    samples = bs.bootstrap_samples(prob, X, resamples=200, seed=0, cell_values=terms,
                                   output_stack=stack)
    centre = bs.estimates(prob, X)
    before = metric._intervals(prob, X, samples, centre, terms)
    own = bs.output_joints(sp.csc_array(X), prob.joint[None])[0]
    zero = bs.independent_estimates(prob, X)
    changed = 0
    for name in sorted(bs.SUMS_OF_MAXIMA):
        contact = bs.contact_sum_interval(name, own, np.concatenate(stack), 3000,
                                          bounds=bs.value_range(name, 4))
        want = bs.rejected_sum(contact, before[f"{name}_ci95"], bs.BOUNDARY_SIDE[name],
                               zero[name])
        assert want != before[f"{name}_ci95"], name  # the test rejects, the step moves it
        if name in bs.CONTACT_SUMS:
            assert values[f"{name}_ci95"] == pytest.approx(want, abs=1e-15), name
            changed += 1
        else:
            assert values[f"{name}_ci95"] == before[f"{name}_ci95"], name
    assert changed == 1
    # maximal leakage's upper end is the calibrated base's (the double bootstrap)
    inner = metric._inner(prob, X, frozenset({"maximal_leakage"}))
    calibrated = bs.calibrated_interval(centre["maximal_leakage"], samples["maximal_leakage"],
                                        inner["maximal_leakage"], bounds=(0.0, 2.0))
    assert values["maximal_leakage_ci95"][1] == pytest.approx(calibrated[1], abs=1e-15)

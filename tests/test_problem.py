"""Validation of priors, distortions, budgets and mappings."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import privbench as pb
from privbench.protocol.checks import delta_value
from privbench.protocol.errors import InvalidMappingError, ValidationError


def test_from_arrays_normalises_counts() -> None:
    problem = pb.PrivacyProblem.from_arrays(joint=[[2, 0], [0, 2]], distortion=[[0, 1], [1, 0]])
    assert problem.joint.sum() == pytest.approx(1.0)
    assert problem.prior_mi_bits == pytest.approx(1.0)
    np.testing.assert_allclose(problem.p_b, [0.5, 0.5])


@pytest.mark.parametrize(
    ("joint", "message"),
    [
        ([[0.5, -0.1], [0.3, 0.3]], "negative probability"),
        ([[0.5, np.nan], [0.3, 0.2]], "NaN"),
        ([[0.5, np.inf], [0.3, 0.2]], "infinite"),
        ([[0.0, 0.0], [0.0, 0.0]], "zero total mass"),
        ([0.5, 0.5], "2-D"),
    ],
)
def test_bad_joint_is_rejected(joint, message) -> None:
    with pytest.raises(ValidationError, match=message):
        pb.PrivacyProblem.from_arrays(joint=joint, distortion=np.zeros((2, 2)))


def test_shape_mismatch_and_negative_distortion() -> None:
    with pytest.raises(ValidationError, match="n = 2"):
        pb.PrivacyProblem.from_arrays(joint=[[1, 1], [1, 1]], distortion=np.zeros((3, 3)))
    with pytest.raises(ValidationError, match="square"):
        pb.PrivacyProblem.from_arrays(joint=[[1, 1], [1, 1]], distortion=np.zeros((2, 3)))
    with pytest.raises(ValidationError, match=r"non-negative; D\[0, 1\]"):
        pb.PrivacyProblem.from_arrays(joint=[[1, 1], [1, 1]], distortion=[[0, -1], [1, 0]])


def test_zero_diagonal_and_delta_checks() -> None:
    problem = pb.PrivacyProblem.from_arrays(joint=[[1, 1], [1, 1]], distortion=[[0, 1], [1, 0.5]])
    with pytest.raises(ValidationError, match=r"d\(1, 1\) = 0.5"):
        problem.require_zero_diagonal("sppm")
    with pytest.raises(ValidationError, match="delta must be a finite number >= 0"):
        delta_value(-0.1, "budget")
    with pytest.raises(ValidationError, match="here: this mechanism's epsilon"):
        delta_value(float("nan"), "epsilon")
    with pytest.raises(ValidationError, match="delta must be a number"):
        delta_value(True, "budget")
    assert delta_value(0, "unused") == 0.0
    with pytest.raises(ValidationError, match="delta must be a finite number"):
        pb.get_mechanism("expmec").solve(problem, delta=-1)  # the convenience checks it too


def test_validate_mapping_catches_each_defect() -> None:
    good = sp.identity(3, format="csc")
    assert pb.validate_mapping(good, 3).shape == (3, 3)
    with pytest.raises(InvalidMappingError, match="shape"):
        pb.validate_mapping(sp.identity(2), 3)
    bad = np.eye(3)
    bad[0, 1], bad[1, 1] = -0.5, 1.5
    with pytest.raises(InvalidMappingError, match="negative entry .* column 1"):
        pb.validate_mapping(bad, 3)
    off = np.eye(3)
    off[2, 2] = 1 - 1e-6
    with pytest.raises(InvalidMappingError, match="column 2 sums to"):
        pb.validate_mapping(off, 3)
    near = np.eye(3)
    near[2, 2] = 1 - 1e-12  # within 1e-9
    pb.validate_mapping(near, 3)
    with pytest.raises(InvalidMappingError, match="NaN"):
        pb.validate_mapping(np.full((3, 3), np.nan), 3)


def test_feature_distortion_blocks_match_dense() -> None:
    rng = np.random.default_rng(3)
    pts = rng.integers(0, 3, size=(12, 4))
    for metric in ("hamming", "l1", "l2", "sq_l2"):
        dist = pb.FeatureDistortion(pts, metric)
        dense = dist.to_dense()
        diff = pts[:, None, :] - pts[None, :, :]
        expect = {
            "hamming": (diff != 0).sum(-1),
            "l1": np.abs(diff).sum(-1),
            "l2": np.sqrt((diff**2).sum(-1)),
            "sq_l2": (diff**2).sum(-1),
        }[metric]
        np.testing.assert_allclose(dense, expect, atol=1e-12)
        rows, cols = rng.integers(0, 12, 30), rng.integers(0, 12, 30)
        np.testing.assert_allclose(dist.pairs(rows, cols), expect[rows, cols], atol=1e-12)
        assert dist.max_value == pytest.approx(expect.max())


def test_dense_guard() -> None:
    dist = pb.FeatureDistortion(np.arange(10000.0), "sq_l2")
    with pytest.raises(ValidationError, match="refusing to build a dense"):
        dist.to_dense()
    assert dist.max_value == pytest.approx(9999.0**2)


def test_huge_counts_are_normalised_without_overflow() -> None:
    problem = pb.PrivacyProblem.from_arrays(joint=np.full((2, 2), 1e308), distortion=1 - np.eye(2))
    np.testing.assert_allclose(problem.joint, 0.25)
    skew = pb.PrivacyProblem.from_arrays(joint=[[1e308, 0.0], [0.0, 1e308]], distortion=1 - np.eye(2))
    assert skew.prior_mi_bits == pytest.approx(1.0)  # not 0: the prior survived


def test_complex_joint_is_refused() -> None:
    with pytest.raises(ValidationError, match="complex"):
        pb.PrivacyProblem.from_arrays(joint=np.array([[1 + 1j, 1], [1, 1]]), distortion=1 - np.eye(2))

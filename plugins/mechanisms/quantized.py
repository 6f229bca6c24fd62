"""Quantized privacy-preserving mapping (Salamatian et al., GlobalSIP 2013, Algorithm 1).

Cluster the public alphabet into K representatives (:mod:`._quantize`: k-medoids with
the data set's own distortion from seeded k-means++ starts, or greedy k-center for the
smallest radius r), aggregate the
prior onto the clusters (eq. 3), solve the mapping problem on the K-symbol alphabet
with any registered mapping mechanism (``inner``), and release ĉ for b with
probability q(ĉ | ψ(b)) (eq. 4).

Theorem 1: the leakage of the composed mapping equals the inner problem's objective,
I(A; Ĉ) computed on q(A, C), and - when d obeys the triangle inequality (Hamming, l1,
l2; not squared l2) - E[d(B, Ĉ)] <= Δ + E[d(ψ(B), B)] <= Δ + r. The budget therefore
binds the inner problem only, and ``respects_budget`` is False: the runner does not
treat a distortion above Δ as a breach. Reported: K, r, the quantisation distortion,
the inner leakage and distortion, and the bound Δ + r.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

import privbench as pb

from ._quantize import Quantization, aggregate, k_center, k_means_pp, k_medoids

METHODS = ("kmedoids", "kcenter")
INITS = ("best", "kmeans++", "kcenter")


def _value(text: str) -> Any:
    """'3' -> 3, '0.5' -> 0.5, 'true'/'false'/'none', else the string."""
    s = text.strip()
    special = {"true": True, "false": False, "none": None, "null": None}
    if s.lower() in special:
        return special[s.lower()]
    for convert in (int, float):
        try:
            return convert(s)
        except ValueError:
            pass
    return s


def parse_inner_params(value: Any) -> dict[str, Any]:
    """A dict as given, or the CLI form ``"k=v;k2=v2"`` (``;`` because ``,`` splits specs)."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str):
        out: dict[str, Any] = {}
        for item in value.split(";"):
            if not item.strip():
                continue
            key, eq, raw = item.partition("=")
            if not eq or not key.strip():
                raise pb.ValidationError(
                    f"quantized: bad inner_params item {item!r}; expected key=value;key=value")
            out[key.strip()] = _value(raw)
        return out
    raise pb.ValidationError(f"quantized: inner_params must be a dict or 'k=v;...'; got {value!r}")


class QuantizedMapping(pb.MappingMechanism):
    """Algorithm 1: quantise, solve on the clusters with ``inner``, map through ψ.

    :param n_clusters: K, the number of cluster representatives the alphabet is quantised to
        (an integer >= 1); the inner problem has K symbols.
    :param method: the quantiser: ``kmedoids`` (k-medoids with the data set's distortion, the
        least mean quantisation distortion) or ``kcenter`` (greedy farthest-first, the least
        radius r).
    :param inner: the mapping mechanism solved on the K-symbol problem (any other registered
        mapping mechanism, e.g. ``optimal``, ``sppm``, ``expmec``).
    :param inner_params: the inner mechanism's parameters, as ``k=v;k2=v2`` (``;`` since ``,``
        separates the outer ones) or a dict.
    :param init: the k-medoids starts: ``kcenter`` (the farthest-first one), ``kmeans++``
        (``n_init`` seeded k-means++ ones) or ``best`` (all of them; the least quantisation
        distortion wins).
    :param n_init: how many seeded k-means++ starts (an integer >= 1; with ``init`` best or
        kmeans++).
    :param max_iter: the k-medoids refinement iterations at most, per start (an integer >= 1).
    """

    name = "quantized"
    citation = 'Salamatian et al., How to hide the elephant - or the donkey - in the room, GlobalSIP 2013'
    randomized = True  # seeded: replicates differ
    description = "quantize the alphabet, solve on K clusters (Salamatian et al. 2013, Alg. 1)"
    test_parameters = {"n_clusters": [3], "inner": ["expmec"]}
    respects_budget = False  # distortion is bounded by Δ + r (Theorem 1), not Δ

    def __init__(self, n_clusters: int = 25, method: str = "kmedoids", inner: str = "optimal",
                 inner_params: Any = None, init: str = "best", n_init: int = 4,
                 max_iter: int = 50) -> None:
        self.n_clusters = n_clusters
        self.method = method
        self.inner = inner
        self.inner_params = inner_params
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter

    def check_params(self) -> None:
        inner = self.context.get_mechanism(self.inner, **self._validate())
        if inner.output != "mapping":
            raise pb.ValidationError(
                f"quantized: inner mechanism {self.inner!r} is a {inner.output} mechanism; "
                "it must produce a mapping")

    def _validate(self) -> dict[str, Any]:
        k = self.n_clusters
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise pb.ValidationError(f"quantized: n_clusters must be an integer >= 1; got {k!r}")
        if self.method not in METHODS:
            raise pb.ValidationError(
                f"quantized: method must be one of {', '.join(METHODS)}; got {self.method!r}")
        if self.init not in INITS:
            raise pb.ValidationError(
                f"quantized: init must be one of {', '.join(INITS)}; got {self.init!r}")
        for name in ("n_init", "max_iter"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise pb.ValidationError(
                    f"quantized: {name} must be an integer >= 1; got {value!r}")
        if not isinstance(self.inner, str) or self.inner == self.name:
            raise pb.ValidationError(
                f"quantized: inner must name another mapping mechanism; got {self.inner!r}")
        return parse_inner_params(self.inner_params)

    def quantize(self, problem: pb.PrivacyProblem, seed: int | None = None) -> Quantization:
        """ψ for this problem (exposed for tests and reports).

        ``kcenter``: farthest-first, the smallest radius r (Theorem 1's bound).
        ``kmedoids``: k-means-style refinement from the k-center start (``init=kcenter``),
        from ``n_init`` seeded k-means++ starts (``kmeans++``) or from all of them
        (``best``, the default); the run with the smallest quantisation distortion
        E[d(ψ(B), B)] wins (ties: smaller r). Neither start dominates: farthest-first
        keeps r small, k-means++ usually finds a lower mean.
        """
        d, p_b, k = problem.distortion, problem.p_b, self.n_clusters
        if self.method == "kcenter":
            return k_center(d, k, p_b)
        starts = []
        if self.init in ("best", "kcenter"):
            starts.append(k_center(d, k, p_b))
        if self.init in ("best", "kmeans++"):
            rng = np.random.default_rng(seed if seed is not None else 0)
            starts.extend(k_means_pp(d, k, p_b, rng) for _ in range(self.n_init))
        runs = [k_medoids(d, k, p_b, max_iter=self.max_iter, init=s) for s in starts]
        return min(runs, key=lambda q: (q.mean_distortion(p_b), q.radius))

    def run(self, problem: pb.PrivacyProblem, delta: float) -> pb.MechanismResult:
        seed = self.context.seed
        inner_params = self._validate()
        inner = self.context.get_mechanism(self.inner, **inner_params)
        if inner.output != "mapping":
            raise pb.ValidationError(
                f"quantized: inner mechanism {self.inner!r} is a {inner.output} mechanism; "
                "it must produce a mapping")
        q = self.quantize(problem, seed)
        centers = q.centers
        reduced = pb.PrivacyProblem.from_arrays(
            joint=aggregate(problem.joint, q),
            distortion=pb.MatrixDistortion(problem.distortion.block(centers, centers)),
            symbols=[problem.symbols[c] for c in centers] if problem.symbols is not None else None,
            private_labels=problem.private_labels,
            name=f"{problem.name}|quantized[K={centers.size}]",
        )
        skip, reason = inner.skip(reduced)
        if skip:
            raise pb.ValidationError(f"quantized: inner mechanism {self.inner!r} cannot run "
                                     f"on the quantized problem: {reason}")
        inner.prepare(reduced, self.context)
        inner_result = inner.run(reduced, delta)
        Q = pb.validate_mapping(inner_result.mapping, centers.size)
        # eq. (4): X[center_k, j] = q(ĉ_k | ψ(b_j))
        composed = sp.csc_array(Q[:, q.labels])  # (K, n): column j is column ψ(j) of Q
        coo = composed.tocoo()
        X = sp.csc_array((coo.data, (centers[coo.row], coo.col)), shape=(problem.n, problem.n))
        inner_mi = pb.metrics.mutual_information(reduced, Q)
        inner_distortion = pb.metrics.expected_distortion(reduced, Q)
        stats: dict[str, Any] = {
            "n_clusters": int(centers.size),
            "radius": q.radius,
            "quantization_distortion": q.mean_distortion(problem.p_b),
            "quantized_prior_mi_bits": reduced.prior_mi_bits,
            "inner": self.inner,
            "inner_mi_bits": inner_mi,
            "inner_distortion": inner_distortion,
            "distortion_bound": delta + q.radius,
        }
        # a certificate of the inner problem only: it bounds the gap to the best mapping
        # on the K representatives, not on the full alphabet, so it is not ``gap_bits``
        if inner_result.stats.get("gap_bits") is not None:
            stats["inner_gap_bits"] = inner_result.stats["gap_bits"]
        stats["inner_stats"] = {k: v for k, v in inner_result.stats.items()
                                if isinstance(v, int | float | str | bool) or v is None}
        return self.result(X, **stats)


@pb.hookimpl
def privbench_register_mechanisms() -> list[type]:
    return [QuantizedMapping]

"""Null-space cleaning internals (Xu et al., "Cleaning the Null Space", Algorithms 1-2).

Everything here is pure numpy/scipy on one matrix of (centred) feature rows:

* :func:`augmented_fractional_knapsack` - Fig. 1 with the paper's "augmented" change
  (maximise Σ α² G s.t. Σ α² H <= ε), vectorised over rows;
* :func:`eigen_basis` (Algorithm 1) and :func:`generalized_basis` (Algorithm 2) - a basis
  T of R^n in which B_d = A_d A_dᵀ (and B_c = A_c A_cᵀ) are diagonal, with the matrix
  that gives the coordinates of a vector in that basis;
* :func:`clean_rows` - x̃ = x - Σ_j α_j a_j v_j for every row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: the knapsack is solved for ε (1 - this), so rounding in A_dᵀ(x - x̃) cannot push
#: the measured e_utility above ε
BUDGET_MARGIN = 1e-10


def augmented_fractional_knapsack(G: np.ndarray, H: np.ndarray, eps: float) -> np.ndarray:
    """Solve max Σ_j α_j² G_j  s.t. Σ_j α_j² H_j <= ε, 0 <= α_j <= 1 (per row).

    In β = α² this is Dantzig's fractional knapsack, so the greedy order by G/H is
    optimal: items with H_j = 0 are free (α = 1), then whole items by decreasing G/H
    while the budget lasts, then one item at α = sqrt(remaining / H) (the paper's
    modified line 4), the rest at 0.

    :param G: gains, shape (n,) or (m, n), >= 0.
    :param H: costs, same shape, >= 0.
    :param eps: budget ε >= 0.
    :returns: α with the shape of ``G``.
    """
    G = np.asarray(G, dtype=float)
    H = np.asarray(H, dtype=float)
    if G.shape != H.shape:
        raise ValueError(f"knapsack: G has shape {G.shape} but H has shape {H.shape}")
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"knapsack: eps must be a finite number >= 0; got {eps!r}")
    if (H < 0).any() or (G < 0).any() or not (np.isfinite(G).all() and np.isfinite(H).all()):
        raise ValueError("knapsack: G and H must be finite and non-negative")
    single = G.ndim == 1
    G2, H2 = np.atleast_2d(G), np.atleast_2d(H)
    free = H2 <= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(free, np.inf, G2 / np.where(free, 1.0, H2))
    order = np.argsort(-ratio, axis=1, kind="stable")
    Hs = np.take_along_axis(H2, order, axis=1)
    before = np.cumsum(Hs, axis=1) - Hs  # Σ of the costs of the items ahead in the order
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip((eps - before) / Hs, 0.0, 1.0)
    alpha_sorted = np.where(Hs <= 0, 1.0, np.sqrt(frac))
    alpha = np.empty_like(alpha_sorted)
    np.put_along_axis(alpha, order, alpha_sorted, axis=1)
    return alpha[0] if single else alpha


@dataclass(frozen=True)
class Basis:
    """Columns of ``vectors`` form a basis of R^n; ``coords @ x`` gives x in it.

    ``lam_d[j] = v_jᵀ B_d v_j`` and ``lam_c[j] = v_jᵀ B_c v_j`` (None for Algorithm 1);
    both matrices are diagonal in this basis, which is what makes
    e_utility = Σ α_j² a_j² λ^d_j exact.
    """

    vectors: np.ndarray  # (n, n)
    coords: np.ndarray  # (n, n), the inverse of ``vectors``
    lam_d: np.ndarray
    lam_c: np.ndarray | None = None


def _rank_tol(values: np.ndarray, size: int) -> float:
    top = float(np.max(np.abs(values))) if values.size else 0.0
    return max(size, 1) * np.finfo(float).eps * top


def eigen_basis(A_d: np.ndarray) -> Basis:
    """Algorithm 1, step 1: eigenvectors of B_d = A_d A_dᵀ (orthonormal).

    Eigenvalues below the rank tolerance are set to exactly 0, so the exact null space
    is always removed in full, even at ε = 0 (the toy example).
    """
    A = np.atleast_2d(np.asarray(A_d, dtype=float).T).T
    B = A @ A.T
    lam, V = np.linalg.eigh((B + B.T) / 2)
    lam = np.where(lam <= _rank_tol(lam, B.shape[0]), 0.0, lam)
    return Basis(vectors=V, coords=V.T, lam_d=lam)


def _orthonormal_range(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal bases of range(M) and of its orthogonal complement."""
    U, s, _ = np.linalg.svd(M, full_matrices=True)
    rank = int(np.sum(s > _rank_tol(s, max(M.shape))))
    return U[:, :rank], U[:, rank:]


def generalized_basis(A_d: np.ndarray, A_c: np.ndarray) -> Basis:
    """Algorithm 2, step 2: generalized eigenvectors of B_d v = γ B_c v.

    B_c is rank deficient (rank <= number of confidential labels), so the pencil is
    singular and ``eigh(B_d, B_c)`` would fail. Instead: on the common null space of
    A_d and A_c both forms vanish (orthonormal basis N, λ^d = λ^c = 0); on
    range([A_d A_c]) (orthonormal Q) B_d + B_c is positive definite and
    ``scipy.linalg.eigh(Q'B_dQ, Q'(B_d+B_c)Q)`` gives W with Wᵀ(B_d+B_c)W = I and
    WᵀB_dW = diag(μ): the same eigenvectors, γ = μ / (1 - μ), and both B_d and B_c
    exactly diagonal (λ^d = μ, λ^c = 1 - μ).
    """
    import scipy.linalg as sla

    Ad = np.atleast_2d(np.asarray(A_d, dtype=float).T).T
    Ac = np.atleast_2d(np.asarray(A_c, dtype=float).T).T
    if Ad.shape[0] != Ac.shape[0]:
        raise ValueError(f"A_d has {Ad.shape[0]} rows but A_c has {Ac.shape[0]}")
    Q, N = _orthonormal_range(np.hstack([Ad, Ac]))
    if Q.shape[1] == 0:  # both predictors vanish: everything is null space
        zeros = np.zeros(N.shape[1])
        return Basis(vectors=N, coords=N.T, lam_d=zeros, lam_c=zeros.copy())
    Bd = Q.T @ Ad @ Ad.T @ Q
    Bc = Q.T @ Ac @ Ac.T @ Q
    M = Bd + Bc
    M = (M + M.T) / 2
    mu, W = sla.eigh((Bd + Bd.T) / 2, M)
    mu = np.clip(mu, 0.0, 1.0)
    tol = _rank_tol(np.array([1.0]), Q.shape[1]) * 10
    mu = np.where(mu <= tol, 0.0, np.where(mu >= 1 - tol, 1.0, mu))
    V = np.hstack([Q @ W, N])
    coords = np.vstack([W.T @ M @ Q.T, N.T])
    lam_d = np.concatenate([mu, np.zeros(N.shape[1])])
    lam_c = np.concatenate([1.0 - mu, np.zeros(N.shape[1])])
    return Basis(vectors=V, coords=coords, lam_d=lam_d, lam_c=lam_c)


def clean_rows(Z: np.ndarray, basis: Basis, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Clean every row z of Z (already centred): z̃ = z - Σ_j α_j a_j v_j.

    Algorithm 1 uses G_j = 1, H_j = λ_j a_j²; Algorithm 2 G_j = λ^c_j a_j²,
    H_j = λ^d_j a_j² (``basis.lam_c`` set).

    :returns: (cleaned rows, α) with α of shape (m, n).
    """
    Z = np.atleast_2d(np.asarray(Z, dtype=float))
    a = Z @ basis.coords.T  # coordinates a_j of every row
    H = basis.lam_d * a * a
    G = np.ones_like(H) if basis.lam_c is None else basis.lam_c * a * a
    budget = eps * (1.0 - BUDGET_MARGIN) if eps > 0 else 0.0
    alpha = augmented_fractional_knapsack(G, H, budget)
    cleaned = Z - (alpha * a) @ basis.vectors.T
    return cleaned, alpha

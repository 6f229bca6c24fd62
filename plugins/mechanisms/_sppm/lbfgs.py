"""A small projected L-BFGS for box constraints, whose memory outlives one call.

SPPM's dual mode maximises the smoothed dual thousands of times per solve over ~9,000
variables (census, every profile). scipy's L-BFGS-B spent ~1 ms of its own per
evaluation there (its Cauchy point and subspace step on every variable, and the Python
loop around ``setulb``), as much as the evaluation itself, and it forgets its curvature
pairs at every call although the dual rounds restart from nearly the same point on
nearly the same pairs. This one keeps the compiled work to one pass per iteration
(two-loop recursion on the free variables, projection), keeps its (s, y) pairs in a
:class:`Memory` the caller may reuse, and stops on the same tests as L-BFGS-B: the
projected gradient's largest entry below ``gtol``, or a relative decrease below
``ftol``.

It only finds a point: SPPM's bounds never rely on it (the lower bound is the exact
pricing of whatever point it returns).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np

#: curvature pairs kept (L-BFGS-B's default)
MEMORY = 10
#: sufficient decrease of the backtracking line search (Armijo)
ARMIJO = 1e-4
#: most backtracking steps per iteration
BACKTRACKS = 30
#: the kernels' dot products may be reassociated (vectorised); no other fast-math liberty
FAST = {"reassoc", "contract"}


@dataclass
class Memory:
    """The last (s, y) pairs, newest at ``head - 1`` (circular), and how many are valid."""

    n: int
    m: int = MEMORY
    S: np.ndarray = field(init=False)
    Y: np.ndarray = field(init=False)
    rho: np.ndarray = field(init=False)
    count: int = 0
    head: int = 0

    def __post_init__(self) -> None:
        self.S = np.zeros((self.m, self.n))
        self.Y = np.zeros((self.m, self.n))
        self.rho = np.zeros(self.m)

    def push(self, x: np.ndarray, xn: np.ndarray, g: np.ndarray, gn: np.ndarray) -> None:
        """Keep s = xn - x, y = gn - g when s·y > 0 (else keep the old pairs)."""
        sy, yy = _pair(x, xn, g, gn, self.S[self.head], self.Y[self.head])
        if sy <= 1e-12 * yy or not np.isfinite(sy):
            return  # no positive curvature along s (the slot is overwritten next time)
        self.rho[self.head] = 1.0 / sy
        self.head = (self.head + 1) % self.m
        self.count = min(self.count + 1, self.m)

    def clear(self) -> None:
        self.count = 0


@dataclass
class Result:
    """End point, its value and gradient, evaluations spent, why it stopped."""

    x: np.ndarray
    fun: float
    jac: np.ndarray
    nfev: int
    nit: int
    message: str


@numba.njit(cache=True, fastmath=FAST)
def _direction(g, x, lo, hi, S, Y, rho, count, head, d):  # pragma: no cover - compiled
    """d = -H g on the free variables (0 on those held at a bound), by the two-loop
    recursion; returns (g·d, max |projected gradient|)."""
    n = x.size
    m = S.shape[0]
    pg = 0.0
    for i in range(n):
        gi = g[i]
        p = x[i] - min(max(x[i] - gi, lo[i]), hi[i])
        pg = max(pg, abs(p))
        held = (x[i] <= lo[i] and gi > 0.0) or (x[i] >= hi[i] and gi < 0.0)
        d[i] = 0.0 if held else gi
    alpha = np.empty(m)
    for k in range(count):
        b = (head - 1 - k) % m
        a = 0.0
        for i in range(n):
            a += S[b, i] * d[i]
        a *= rho[b]
        alpha[k] = a
        for i in range(n):
            d[i] -= a * Y[b, i]
    if count > 0:
        b = (head - 1) % m
        yy = 0.0
        for i in range(n):
            yy += Y[b, i] * Y[b, i]
        gamma = 1.0 / (rho[b] * yy)
        for i in range(n):
            d[i] *= gamma
    for k in range(count - 1, -1, -1):
        b = (head - 1 - k) % m
        beta = 0.0
        for i in range(n):
            beta += Y[b, i] * d[i]
        beta *= rho[b]
        for i in range(n):
            d[i] += S[b, i] * (alpha[k] - beta)
    gd = 0.0
    for i in range(n):
        held = (x[i] <= lo[i] and g[i] > 0.0) or (x[i] >= hi[i] and g[i] < 0.0)
        if held:
            d[i] = 0.0
        else:
            d[i] = -d[i]
            gd += g[i] * d[i]
    return gd, pg


@numba.njit(cache=True, fastmath=FAST)
def _trial(x, d, step, lo, hi, g, out):  # pragma: no cover - compiled
    """out = the projection of x + step d on the box; returns g·(out - x)."""
    dec = 0.0
    for i in range(x.size):
        out[i] = min(max(x[i] + step * d[i], lo[i]), hi[i])
        dec += g[i] * (out[i] - x[i])
    return dec


@numba.njit(cache=True, fastmath=FAST)
def _pair(x, xn, g, gn, s, y):  # pragma: no cover - compiled
    """s = xn - x, y = gn - g in place; returns (s·y, y·y)."""
    sy = 0.0
    yy = 0.0
    for i in range(x.size):
        s[i] = xn[i] - x[i]
        y[i] = gn[i] - g[i]
        sy += s[i] * y[i]
        yy += y[i] * y[i]
    return sy, yy


def minimize(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray,
             lo: np.ndarray, hi: np.ndarray, memory: Memory | None = None, *,
             maxiter: int = 3000, gtol: float = 1e-5, ftol: float = 2.220446049250313e-09
             ) -> Result:
    """Minimise ``fun`` (value, gradient) over lo <= x <= hi from ``x0``.

    ``memory`` (updated in place) carries curvature pairs from an earlier call on a
    similar function; a fresh one is used when it is None.
    """
    n = x0.size
    mem = memory if memory is not None else Memory(n)
    x = np.clip(np.asarray(x0, dtype=np.float64), lo, hi)
    f, g = fun(x)
    nfev = 1
    d = np.empty(n)
    xn = np.empty(n)
    message = "maximum iterations reached"
    for it in range(maxiter):
        gd, pg = _direction(g, x, lo, hi, mem.S, mem.Y, mem.rho, mem.count, mem.head, d)
        if pg <= gtol:
            return Result(x, f, g, nfev, it, "projected gradient below gtol")
        if gd >= 0.0 or not np.isfinite(gd):  # not a descent direction: forget the pairs
            mem.clear()
            gd, _ = _direction(g, x, lo, hi, mem.S, mem.Y, mem.rho, 0, mem.head, d)
        step = 1.0 if mem.count else min(1.0, 1.0 / max(float(np.abs(d).max()), 1e-300))
        for _ in range(BACKTRACKS):
            decrease = _trial(x, d, step, lo, hi, g, xn)
            fn, gn = fun(xn)
            nfev += 1
            if fn <= f + ARMIJO * decrease:
                break
            # the minimiser of the quadratic through f, f' and fn, kept in [0.1, 0.5] step
            slope = gd * step
            curv = fn - f - slope
            cut = 0.5 if curv <= 0 else min(0.5, max(0.1, -slope / (2.0 * curv)))
            step *= cut
        else:
            return Result(x, f, g, nfev, it, "line search failed")
        mem.push(x, xn, g, gn)
        x, xn = xn, x
        f_old, f, g = f, fn, gn
        if (f_old - f) / max(abs(f_old), abs(f), 1.0) <= ftol:
            message = "relative reduction of f below ftol"
            return Result(x, f, g, nfev, it + 1, message)
    return Result(x, f, g, nfev, maxiter, message)

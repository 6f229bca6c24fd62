"""SPPM's Frank-Wolfe path, for comparing two checkouts (docs/studies/sppm-frontier.md).

Run it with each checkout's interpreter, alternately, so both see the same machine:

    python tools/measure_sppm_frontier.py solve 14           # one whole solve, m = 14
    python tools/measure_sppm_frontier.py snapshot 16 1500   # pickle the state at iteration 1500
    python tools/measure_sppm_frontier.py kernels /tmp/sppm-m16-1500.pkl

``solve`` prints wall and CPU seconds, iterations (and how many were restricted to the
working inputs), gap, I and the solver's timers of
``solve_sppm`` on ``synthetic:m=M`` (Δ = 2^(M-8), the ``sppm`` defaults; the kernels are
compiled by a small solve first, untimed). ``snapshot`` stops a solve (every iteration
full) at an iteration and
saves what one iteration works on (V, x, the decoder, λ, the master's vertex).
``kernels`` times each hot path on such a snapshot (best of 25 calls, ms) with whatever
code the interpreter imports, old or new.
"""

from __future__ import annotations

import inspect
import pickle
import sys
import time

import numpy as np

import privbench as pb


def _warm_solve_sppm():
    from privbench.plugins.mechanisms._sppm import solve as solve_mod
    from privbench.plugins.mechanisms.sppm import SPPMSettings, _own_arrays

    small = pb.load_dataset("synthetic", m=6)
    solve_mod.solve_sppm(_own_arrays(small), 0.25, pb.get_lp_backend("mckp"),
                         SPPMSettings(iterations=20))
    return solve_mod, SPPMSettings, _own_arrays


def solve(m: int) -> None:
    solve_mod, SPPMSettings, own = _warm_solve_sppm()
    problem = own(pb.load_dataset("synthetic", m=m))
    cpu, wall = time.process_time(), time.perf_counter()
    s = solve_mod.solve_sppm(problem, 2.0 ** (m - 8), pb.get_lp_backend("mckp"),
                             SPPMSettings()).stats
    print(f"{sys.prefix} m={m} wall={time.perf_counter() - wall:.2f} "
          f"cpu={time.process_time() - cpu:.2f} it={s['iterations']} gap={s['gap_bits']:.4e} "
          f"I={s['objective_bits']:.7f} pricing={s['time_pricing_s']:.2f} "
          f"lp={s['time_lp_s']:.2f} linesearch={s['time_linesearch_s']:.2f} "
          f"restricted={s.get('restricted_iterations', 0)}", flush=True)


def snapshot(m: int, at: int) -> None:
    from privbench.plugins.mechanisms._sppm import frank_wolfe as fw

    solve_mod, SPPMSettings, own = _warm_solve_sppm()
    original = fw._certified_step

    def capture(setup, state, trace, it, f, L, empty):
        step = original(setup, state, trace, it, f, L, empty)
        if it == at:
            V, path, p = state.V, f"/tmp/sppm-m{m}-{at}.pkl", setup.problem
            with open(path, "wb") as fh:
                pickle.dump({"P": p.joint, "p_a": p.p_a, "p_b": p.p_b,
                             "rows": V.rows, "cols": V.cols, "x": state.x, "a": V.a, "L": L,
                             "empty": empty, "lam": step.lam, "solx": step.sol.x,
                             "coord": V.line.coord, "delta": setup.delta, "n": V.n}, fh)
            print(path)
            raise SystemExit(0)
        return step

    fw._certified_step = capture
    problem = own(pb.load_dataset("synthetic", m=m))
    options = SPPMSettings(restricted_steps=0)  # every iteration full: one is captured at ``at``
    solve_mod.solve_sppm(problem, 2.0 ** (m - 8), pb.get_lp_backend("mckp"), options)


def kernels(path: str) -> None:
    from privbench.plugins.mechanisms._sppm import frank_wolfe as fw
    from privbench.plugins.mechanisms._sppm.leakage import (
        decoder_logratios,
        leakage_nats,
        output_joint,
        pair_costs,
    )
    from privbench.plugins.mechanisms._sppm.line_pricing import LinePricer
    from privbench.plugins.mechanisms._sppm.linesearch import exact_line_search

    with open(path, "rb") as fh:
        d = pickle.load(fh)
    P, rows, cols, x, a, n = d["P"], d["rows"], d["cols"], d["x"], d["a"], d["n"]
    vertex = np.concatenate([d["solx"], np.zeros(rows.size - d["solx"].size)])
    out: dict[str, float] = {}

    def best_of(name: str, call, reps: int = 25) -> None:
        call()
        best = np.inf
        for _ in range(reps):
            t = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - t)
        out[name] = best * 1e3

    Q = output_joint(P, rows, cols, x, n)
    best_of("Q(iterate)", lambda: output_joint(P, rows, cols, x, n))
    best_of("Q(vertex)", lambda: output_joint(P, rows, cols, vertex, n))
    best_of("decoder", lambda: decoder_logratios(Q, d["p_a"]))
    L, empty = decoder_logratios(Q, d["p_a"])
    best_of("normalise", lambda: fw.normalise_columns(cols, vertex, n))
    Q_new = output_joint(P, rows, cols, fw.normalise_columns(cols, vertex, n), n)
    kw = {"f0": leakage_nats(Q, d["p_a"])} \
        if "f0" in inspect.signature(exact_line_search).parameters else {}
    best_of("linesearch", lambda: exact_line_search(Q, Q_new, d["p_a"], 1.0, **kw))
    pricer = LinePricer(d["coord"], "sq_l2", threads=1)
    best_of("pricing(1 thread)", lambda: pricer.price(L, P, d["p_b"], d["lam"], empty))
    pricer.close()
    master = pb.get_lp_backend("mckp")
    master.start(n, d["delta"])
    master.add_columns(cols, pair_costs(L, P, rows, cols, empty, None), a)
    best_of("mckp", master.solve)
    print(sys.prefix, " ".join(f"{k}={v:.3f}" for k, v in out.items()), flush=True)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"solve": lambda: solve(int(args[0])), "snapshot": lambda: snapshot(int(args[0]), int(args[1])),
     "kernels": lambda: kernels(args[0])}[command]()

"""A run's fingerprint covers every plugin its parameters name (``plugin_params``), of any
kind and given or by default, not only an ``lp_backend``."""

from __future__ import annotations

import privbench as pb
from privbench.running.fingerprint import used_plugins


class Referee(pb.MappingMechanism):
    """Names a metric plugin (one that does not run by default) and an LP backend."""

    name = "referee"
    plugin_params = {"judge": "metric", "solver": "lp_backend"}

    def __init__(self, judge: str = "nb_attack", solver: str = "highs") -> None:
        self.judge, self.solver = judge, solver

    def run(self, problem, delta):
        import scipy.sparse as sp

        return self.result(sp.identity(problem.n, format="csc"))


def test_every_plugin_a_parameter_names_is_fingerprinted() -> None:
    class Plugin:
        @pb.hookimpl
        def privbench_register_mechanisms(self) -> list[type]:
            return [Referee]

    host = pb.get_host()
    host.register(Plugin(), name="referee_plugin")
    try:
        by_default = used_plugins(pb.RunSpec("referee", "synthetic", 1.0))
        assert ("lp_backend", "highs") in by_default and ("metric", "nb_attack") in by_default
        given = used_plugins(pb.RunSpec("referee", "synthetic", 1.0, {"solver": "scipy"}))
        assert ("lp_backend", "scipy") in given and ("lp_backend", "highs") not in given
    finally:
        host.pm.unregister(name="referee_plugin")


def test_the_lp_mechanisms_fingerprint_their_backend() -> None:
    assert ("lp_backend", "highs") in used_plugins(pb.RunSpec("maxleak_optimal", "synthetic", 1.0))
    assert ("lp_backend", "scipy") in used_plugins(
        pb.RunSpec("sppm", "synthetic", 1.0, {"lp_backend": "scipy"}))

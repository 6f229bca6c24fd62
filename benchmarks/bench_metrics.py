"""The ``bootstrap`` metric's cost per run, on data sets built from user records.

The metric evaluates every exact notion on 600 resampled joints and its double bootstrap
on 1,500 more (``plugins/metrics/_notion_kernels.py`` compiles the notions); its time grows
with n, and on census with every profile it had been longer than the solve it reports on
(docs/error-bars.md, 'Cost'). Timed on the identity mapping (every output used), after one
untimed call that loads the compiled kernels.
"""

from __future__ import annotations

import os

import privbench as pb

from ._common import DATA_ENV

#: label -> (dataset, params, needs real data)
DATASETS = {
    "politics_tv_surrogate": ("politics_tv_surrogate", {}, False),
    "census-top300": ("census", {"top_k": 300}, True),
    "census-all": ("census", {"top_k": "all"}, True),
}


class BootstrapMetric:
    """``BootstrapIntervals().compute`` on one run's identity mapping (200 resamples)."""

    params = (list(DATASETS),)
    param_names = ["dataset"]
    timeout = 300

    def setup(self, label: str) -> None:
        from privbench.plugins.metrics.bootstrap import BootstrapIntervals
        from privbench.protocol.context import RunContext

        name, params, real = DATASETS[label]
        if real:
            folder = os.environ.get(DATA_ENV)
            if not folder or not os.path.isdir(folder):
                raise NotImplementedError(f"{label}: set {DATA_ENV} to a folder with the data")
            params = {**params, "data_dir": folder, "download": False}
        self.problem = pb.load_dataset(name, **params)
        mech = pb.get_mechanism("identity")
        mech.prepare(self.problem, RunContext(seed=0))
        self.result = mech.run(self.problem, 0.0)
        self.metric = BootstrapIntervals()
        self.time_bootstrap(label)  # the compiled kernels load outside the timing

    def time_bootstrap(self, label: str) -> None:
        self.metric.compute(self.problem, self.result, delta=0.0, seed=0)

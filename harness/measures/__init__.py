"""The exact measures of a mapping: what the metric plugins, the runner and the
certificates compute, as plain functions of a problem and a mapping.

``information`` (I(A; B̂), E[d], support sizes; ``pb.metrics`` is this module, kept under
that name as a public contract), ``notions`` (maximal leakage, LIP/LDP ε, Sibson, ...),
``optimum`` (certified bounds on the least leakage at a distortion) and ``promises``
(the runner's test of what a mechanism promises). Not to be confused with the metric
*plugins* (``privbench.plugins.metrics``), which decide what a run records and call
these functions to do it.
"""

"""SPPM internals, one job per module.

``settings``        every parameter, declared once (``SPPMSettings``: default, help, check)
``solve``           the driver: perfect privacy, Frank-Wolfe, then the mode; the stats
``frank_wolfe``     Algorithm 1 with column generation and the certified gap; a solve's
                    ``Setup`` (read-only), ``State`` (what a step changes), ``Trace``
``leakage``         I(A; B̂) of a sparse mapping, decoder costs (the gradient), limits
``pricing``         blocked search for the most violated column per input (Algorithm 2)
``line_pricing``    exact pricing on a line (1-D feature distortions) without an n² scan
``hamming_pricing`` exact pricing for Hamming distortions on integer-coded profiles
``chunks``          a per-input kernel over all inputs, in chunks on a few threads
``linesearch``      exact line search on γ (problem (5))
``atoms``           the iterate as a combination of LP vertices (pairwise steps)
``perfect``         perfect privacy: the least E[d] with I(A; B̂) = 0
``modes``           what runs after Frank-Wolfe (``optimal``, ``dual``)
``polish``          the exact minimiser over mappings supported on the active pairs
``dual_mode``       the ``dual`` mode: smoothed ascent on the decoder with exact pricing
``benchmark_cmd``   ``privbench benchmark sppm`` (contributed through the commands hook)
``scaling_figure``  that benchmark's time-against-alphabet-size figure
"""

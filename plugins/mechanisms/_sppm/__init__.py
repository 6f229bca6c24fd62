"""SPPM internals, one job per module.

``leakage``     I(A; B̂) of a sparse mapping, decoder costs (the gradient), limits
``pricing``     blocked search for the most violated column per input (Algorithm 2)
``linesearch``  exact line search on γ (problem (5))
``feasible``    repairs that keep a mapping column-stochastic and within budget
``frank_wolfe`` Algorithm 1 with column generation and the certified gap
"""

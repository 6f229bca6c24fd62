"""The results store and the analyses read from it (run tables, Pareto curves)."""

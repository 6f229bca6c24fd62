"""The privacy notions the literature reports, for every mapping run (default metric).

One metric, ``privacy_notions``, computes the joint p(A, B̂) once and every notion of
:mod:`privbench.measures.notions` from it (formulas, units and citations in
``docs/privacy-notions.md``). Its cost is one sparse product X·P(A, B)ᵀ, O(nnz |A|), plus
O(|A| n log |A|): well under the solve time of any mapping mechanism on the toy example,
census top 300 and synthetic m = 12.
"""

from __future__ import annotations

from typing import Any

import privbench as pb
from privbench.measures import notions as N

CITE_ML = "Issa, Wagner, Kamath, An operational approach to information leakage, IEEE T-IT 2020"
CITE_LDP = ("Kasiviswanathan et al., SIAM J. Comput. 2011; Duchi, Jordan, Wainwright, "
            "FOCS 2013")

OUTPUTS = (
    pb.Output("maximal_leakage", "bits", "lower",
              "maximal leakage log2 Σ_b̂ max_a W(b̂|a) of A through B̂", CITE_ML, label="maximal leakage"),
    pb.Output("min_entropy_leakage", "bits", "lower",
              "log2 of the posterior over the prior Bayes vulnerability of A",
              "Smith, On the foundations of quantitative information flow, FoSSaCS 2009", label="min-entropy leakage"),
    pb.Output("sibson_mi", "bits", "lower",
              "Sibson's α-information I_α(A; B̂) at α = 2",
              "Sibson, Z. Wahrsch. 1969; Verdú, α-mutual information, ITA 2015", label="Sibson I₂(A; B̂)"),
    pb.Output("lip_epsilon", "nats", "lower",
              "local information privacy ε: max over a, b̂ of |ln p(b̂|a) / p(b̂)| (inf: unbounded)",
              "Jiang, Li, Tandon, Local information privacy and its application to "
              "privacy-preserving data aggregation, IEEE TDSC 2022", label="LIP ε"),
    pb.Output("ldp_epsilon_private", "nats", "lower",
              "local-DP ε with respect to the private A: max ln W(b̂|a) / W(b̂|a') (inf: unbounded)",
              CITE_LDP, label="LDP ε (private A)"),
    pb.Output("total_variation", "probability", "lower",
              "total variation ½ Σ |p(a, b̂) − p(a) p(b̂)| between the joint and independence",
              "Rassouli, Gündüz, Optimal utility-privacy trade-off with total variation "
              "distance as a privacy measure, IEEE TIFS 2020", label="total variation"),
    pb.Output("t_closeness", "probability", "lower",
              "t-closeness: max over b̂ of ½ Σ_a |p(a|b̂) − p(a)| (equal ground distance)",
              "Li, Li, Venkatasubramanian, t-Closeness, ICDE 2007", label="t-closeness"),
    pb.Output("guessing_entropy", "guesses", "higher",
              "expected guesses of A by an adversary who sees B̂ and guesses by posterior",
              "Massey, Guessing and entropy, ISIT 1994", label="guessing entropy"),
)


class PrivacyNotions(pb.Metric):
    name = "privacy_notions"
    description = ("maximal leakage, min-entropy leakage, Sibson I_2, LIP ε, LDP ε w.r.t. A, "
                   "total variation, t-closeness, guessing entropy (exact)")
    needs = frozenset({"mapping"})
    outputs = OUTPUTS

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        values = N.notions(problem, result.mapping)
        return {out.name: values[out.name] for out in OUTPUTS}


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [PrivacyNotions]

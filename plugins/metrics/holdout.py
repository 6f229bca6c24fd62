"""Metrics on held-out users: what a mapping designed on a sampled prior does to people
it never saw (data sets with ``holdout=F``; see :mod:`privbench.datasets._sampling`).

* ``holdout_leakage`` (default): I(A; B̂) and E[d(B, B̂)] under the held-out users' joint,
  the design-to-held-out gap of the leakage, how many held-out users there were
  (``holdout_outside``: those whose profile is not in the design alphabet, who are
  outside the problem like design users outside ``top_k``), and
  ``holdout_mi_bias_bits``: the leakage N held-out users show by sampling alone (the
  plug-in estimate is biased upwards; read the held-out leakage against it).
* ``holdout_attack`` (default): the exact posterior adversary built from the design
  prior and the mapping (what a deployer's adversary would know) applied to held-out
  users: ROC AUC and MAP accuracy, computed from the distributions with no sampling.

The opt-in ``nb_attack`` / ``lr_attack`` add ``*_holdout_auc`` / ``*_holdout_accuracy``
(trained on released design records, tested on released held-out records).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import privbench as pb
from privbench import metrics as M

from .attacks import exact_roc, map_accuracy


def held_out_problem(problem: pb.PrivacyProblem) -> pb.PrivacyProblem | None:
    """The held-out users' joint over the design alphabet, with the problem's distortion
    (None when no held-out user is in the alphabet)."""
    part = problem.holdout
    if part is None or float(np.sum(part.joint)) <= 0:
        return None
    return pb.PrivacyProblem.from_arrays(part.joint, problem.distortion,
                                         name=f"{problem.name} (held out)")


def plugin_bias_bits(counts: np.ndarray, released: np.ndarray) -> float:
    """Miller-Madow's first-order bias of a plug-in I(A; B̂) from N users:
    (|A| - 1)(m - 1) / (2 N ln 2) bits, m the outputs the held-out users can reach.

    The leakage a sample of N users shows on average when A and B̂ are in fact
    independent; a held-out leakage near it says little more than "N is small".
    """
    users = float(np.sum(counts))
    if users <= 0:
        return 0.0
    private = int(np.count_nonzero(np.sum(counts, axis=1)))
    outputs = int(np.count_nonzero(np.sum(released, axis=0) > 1e-12))
    return max(private - 1, 0) * max(outputs - 1, 0) / (2.0 * users * np.log(2.0))


def _counts(problem: pb.PrivacyProblem) -> dict[str, Any]:
    part = problem.holdout
    assert part is not None
    return {"holdout_users": part.n_users, "holdout_outside": part.n_outside,
            "design_users": problem.meta.get("n_design_users")}


class HoldoutLeakage(pb.Metric):
    name = "holdout_leakage"
    description = "I(A; B̂) and E[d] on held-out users (data sets with holdout=F)"
    needs = frozenset({"mapping", "holdout"})
    outputs = (
        pb.Output("holdout_mi_bits", "bits", "lower", "I(A; B̂) under the held-out users' joint",
                  label="held-out I(A; B̂)"),
        pb.Output("holdout_mi_bias_bits", "bits", "neutral",
                  "the leakage held-out users show by sampling alone (Miller-Madow bias)",
                  "Miller, Note on the bias of information estimates, 1955"),
        pb.Output("holdout_mi_gap_bits", "bits", "lower", "held-out minus design I(A; B̂)",
                  label="held-out − design I(A; B̂)"),
        pb.Output("holdout_distortion", "distortion", "neutral", "E[d(B, B̂)] on held-out users"),
        pb.Output("holdout_prior_mi_bits", "bits", "neutral", "I(A; B) of the held-out users",
                  of="holdout_mi_bits", relation="prior"),
        pb.Output("holdout_users", "count", "neutral", "held-out users"),
        pb.Output("holdout_outside", "count", "neutral", "held-out users outside the design alphabet"),
        pb.Output("design_users", "count", "neutral", "users the mapping was designed on"),
        pb.Output("holdout_error", "none", "neutral", "why the held-out metrics could not run",
                  of="holdout_mi_bits", relation="error"),
    )

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        held = held_out_problem(problem)
        if held is None:
            return {**_counts(problem), "holdout_error": "no held-out user is in the alphabet"}
        mi = M.mutual_information(held, result.mapping)
        return {
            **_counts(problem),
            "holdout_mi_bits": mi,
            "holdout_mi_bias_bits": plugin_bias_bits(problem.holdout.joint,
                                                     M.output_joint(held, result.mapping)),
            "holdout_mi_gap_bits": mi - M.mutual_information(problem, result.mapping),
            "holdout_distortion": M.expected_distortion(held, result.mapping),
            "holdout_prior_mi_bits": held.prior_mi_bits,
        }


class HoldoutAttack(pb.Metric):
    name = "holdout_attack"
    citation = 'Fawcett, An introduction to ROC analysis, Pattern Recogn. Lett. 2006'
    description = ("exact posterior adversary from the design prior, on held-out users: "
                   "AUC, MAP accuracy")
    needs = frozenset({"mapping", "holdout"})
    outputs = (
        pb.Output("holdout_auc", "probability", "lower",
                  "ROC AUC of the design-prior posterior adversary on held-out users", label="held-out posterior AUC"),
        pb.Output("holdout_map_accuracy", "probability", "lower",
                  "MAP accuracy of the design-prior adversary on held-out users", label="held-out MAP accuracy"),
        pb.Output("holdout_map_accuracy_prior", "probability", "neutral",
                  "MAP accuracy on held-out users with no release"),
    )

    def compute(self, problem, result, *, delta, seed=None) -> dict[str, Any]:
        held = held_out_problem(problem)
        if held is None:
            return {}
        believed = M.output_joint(problem, result.mapping)
        attacked = M.output_joint(held, result.mapping)
        _, _, auc = exact_roc(attacked, scorer=believed)
        return {
            "holdout_auc": auc,
            "holdout_map_accuracy": map_accuracy(attacked, scorer=believed),
            "holdout_map_accuracy_prior": map_accuracy(held.joint, scorer=problem.joint),
        }


@pb.hookimpl
def privbench_register_metrics() -> list[type]:
    return [HoldoutLeakage, HoldoutAttack]

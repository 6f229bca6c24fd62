"""One writer per record field: which metric may write which value of a run's record.

A metric writes only the values it declares among its ``outputs``: a top-level record
field (``mi_bits``, ``distortion``, ...) or a value under ``metrics``; never a field the
runner fills (``status``, ``runtime_s``, ...), and never a value another metric of the same
run already wrote. A metric that tries loses the offending values (an undeclared key is
dropped whatever its name) and the run records why (its ``metric_errors``, naming each
one); the true value stays. So a rogue metric returning ``mi_bits = -42``
cannot change a stored leakage.

Built-in metrics own the fields they declare: a metric of another distribution that
declares one of those too (say ``mi_bits``, and its name sorts before ``leakage``) has
its value stored under its own name, ``<metric>_<field>`` under ``metrics``, whether or not
the built-in runs; it can never claim the field first.

A metric that computes several outputs may return an exception as the value of one it
could not compute: that output is left out and the run's ``metric_errors`` names it, the
metric's other outputs are stored (the bootstrap metric does this per notion).
"""

from __future__ import annotations

from typing import Any

from privbench.protocol.record import RECORD_FIELDS


def merge_metric(values: dict[str, Any], owners: dict[str, str], name: str, cls: type,
                 produced: Any, runner_fields: tuple[str, ...],
                 reserved: frozenset[str] = frozenset()) -> str | None:
    """Merge metric ``name``'s ``produced`` values into ``values`` (``owners``: value ->
    the metric that wrote it), refusing what it may not write; ``reserved``: the fields
    built-in metrics own, which this (third-party) metric writes under its own name.

    A value that is an exception is an output the metric could not compute (it ran, and
    that one value failed): it is not stored, and the reason names it (``"x_ci95:
    ValueError: ..."``) while the metric's other values are kept.

    :returns: why something failed or was refused (the run's ``metric_errors[name]``), or None.
    """
    if not isinstance(produced, dict):
        return (f"compute() returned {type(produced).__name__}; expected a dict of output "
                "name -> value")
    declared = {getattr(o, "name", None) for o in getattr(cls, "outputs", ()) or ()}
    refused: list[str] = []
    failed: list[str] = []
    for key, value in produced.items():
        key = str(key)
        if isinstance(value, BaseException):  # an output the metric could not compute
            failed.append(f"{key}: {type(value).__name__}: {value}")
            continue
        if key not in declared or key in runner_fields:  # declared or not: never the runner's
            what = ("the runner's" if key in runner_fields else "a record field it does not "
                    "declare" if key in RECORD_FIELDS else "not among its outputs")
            refused.append(f"{key} ({what})")
            continue
        if key in reserved:  # a claim of a built-in's field
            key = f"{name}_{key}"
        if key in owners and owners[key] != name:
            refused.append(f"{key} (written by metric {owners[key]!r})")
        else:
            values[key] = value
            owners[key] = name
    if refused:
        failed.append(f"metric {name!r} may not write {', '.join(refused)}; those values "
                      "were dropped")
    return "; ".join(failed) or None

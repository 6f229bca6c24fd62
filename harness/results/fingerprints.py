"""Which stored rows were made by code other than the installed one (their fingerprint
differs from the one the installed privbench and plugins would give the same run).

``results`` and ``compare`` call :func:`other_code` to mark such rows; a row stored before
fingerprints existed counts as other code (nobody knows what made it). The installed code's
fingerprint comes from ``privbench.running.fingerprint.current_hash``, passed in by the
command (this layer reads stores; it does not load plugins).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

#: the marker put after a row made by other code, and the footnote that explains it
MARK = "†"
FOOTNOTE = (f"{MARK} made by other code than the installed privbench and plugins (its "
            "fingerprint differs); `privbench sweep SPEC --resume` re-runs it")


Current = Callable[[Any], "str | None"]


def _is_other(fingerprint: Any, provenance: Any, current_hash: Current) -> bool:
    if not isinstance(fingerprint, str) or not fingerprint:
        return True
    details = provenance.get("fingerprint") if isinstance(provenance, dict) else None
    try:
        now = current_hash(details)
    except Exception:  # noqa: BLE001 - a plugin that cannot be fingerprinted now
        return True
    return now != fingerprint


def other_code(df: pd.DataFrame, current_hash: Current) -> pd.Series:
    """A boolean per row of a store frame: True where the row's code differs from now.

    :param current_hash: provenance["fingerprint"] -> the installed code's fingerprint.
    """
    if df.empty:
        return pd.Series([], dtype=bool, index=df.index)
    fps = df["fingerprint"] if "fingerprint" in df else pd.Series(None, index=df.index)
    provs = df["provenance"] if "provenance" in df else pd.Series(None, index=df.index)
    return pd.Series([_is_other(f, p, current_hash) for f, p in zip(fps, provs, strict=True)],
                     index=df.index, dtype=bool)


def footnote(marked: pd.Series) -> str | None:
    """The line to print under a table with ``marked`` rows (None when there are none)."""
    count = int(marked.sum())
    if not count:
        return None
    return f"{FOOTNOTE} ({count} row{'s' if count != 1 else ''})"

"""Where a result came from: privbench version, git commit, package versions, machine."""

from __future__ import annotations

import functools
import importlib.metadata as md
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

PACKAGES = ("numpy", "scipy", "pandas", "pluggy", "highspy", "ortools", "cvxpy", "scikit-learn")


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    try:  # a slow or hanging git must never fail a run: the commit is still known
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here, capture_output=True, text=True, timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return out.stdout.strip() + "-unknown-state"
    return out.stdout.strip() + ("-dirty" if dirty else "")


@functools.cache
def provenance() -> dict[str, Any]:
    """Computed once per process; stored with every run."""
    return {
        "privbench": _version("privbench"),
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "packages": {p: v for p in PACKAGES if (v := _version(p))},
        "machine": {
            "platform": platform.platform(),
            "processor": platform.machine(),
            "cpus": os.cpu_count(),
            "hostname": platform.node(),
        },
    }

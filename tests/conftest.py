"""Shared fixtures: a fresh plugin host, the real-data folder, a temporary store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import privbench as pb
from privbench.host import manager as host_module

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
#: read once at start-up: data-set tests isolate themselves by deleting the variable
#: (autouse fixtures), and must still find the real data the user pointed at
ENV_DATA_DIR = os.environ.get("PRIVBENCH_DATA_DIR")


def real_data_path() -> Path | None:
    """PRIVBENCH_DATA_DIR (as set when the tests started), else ../shared/data."""
    env = ENV_DATA_DIR
    for cand in ([Path(env)] if env else []) + [SHARED_DATA]:
        if cand.is_dir():
            return cand
    return None


def _load_tool(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_tool():
    """Loads tools/<name>.py by path as a module (the tools are scripts, not a package):
    the experiments' tests check a script's kernels against independent computations."""
    return _load_tool


@pytest.fixture
def real_data_dir() -> Path:
    path = real_data_path()
    if path is None:
        pytest.skip("real data not available (set PRIVBENCH_DATA_DIR or provide ../shared/data)")
    return path


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch):
    """A fresh host with the installed plugins, installed as the process-wide host."""
    fresh = pb.PluginHost()
    previous = host_module.set_host(fresh)
    yield fresh
    host_module.set_host(previous)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.sqlite"


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch):
    """A plugin host that also loads tests/plugins/hostile_plugins.py (the trust tests' plugins)."""
    monkeypatch.syspath_prepend(str(REPO / "tests" / "plugins"))
    monkeypatch.setenv("PRIVBENCH_PLUGIN_MODULES", "hostile_plugins")
    previous = host_module.set_host(pb.PluginHost(env=dict(os.environ)))
    yield
    host_module.set_host(previous)


@pytest.fixture
def asv_common():
    """``benchmarks._common`` of the asv suite, imported as asv would. The package sets
    OMP/numba thread variables on import; they are restored afterwards, because numba
    refuses a changed NUMBA_NUM_THREADS once its threads run, which failed every later
    numba test in the same process."""
    import importlib.util
    import sys

    saved_env = dict(os.environ)
    saved = {k: sys.modules.get(k) for k in ("benchmarks", "benchmarks._common")}
    spec = importlib.util.spec_from_file_location(
        "benchmarks", REPO / "benchmarks" / "__init__.py",
        submodule_search_locations=[str(REPO / "benchmarks")])
    package = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks"] = package
    try:
        spec.loader.exec_module(package)
        import benchmarks._common as common

        yield common
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module

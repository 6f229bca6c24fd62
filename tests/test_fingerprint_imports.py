"""What a run's fingerprint covers: the host's protocol code, a plugin's modules reached
through relative imports of any depth, and every metric the run uses (requested ones
too, not only the defaults). A fingerprint that misses one of them lets ``--resume``
reuse a row the edited code would compute differently."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from privbench.running import fingerprint
from privbench.running.specs import RunSpec

FILES = {
    "fpkg/__init__.py": "",
    "fpkg/sibling.py": "VALUE = 1\n",
    "fpkg/shared/__init__.py": "",
    "fpkg/shared/helper.py": "def helper():\n    return 2\n",
    "fpkg/deep/__init__.py": "from ..shared.helper import helper  # two dots from a package\n",
    "fpkg/deep/local.py": "X = 3\n",
    "fpkg/deep/plugin.py": ("from ..shared import helper\nfrom .. import sibling\n"
                            "from .local import X\n"),
    "fpkg/deep/deeper/__init__.py": "",
    "fpkg/deep/deeper/leaf.py": "from ...sibling import VALUE  # three dots\n",
}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    fingerprint.clear_cache()
    yield tmp_path
    for name in [m for m in sys.modules if m == "fpkg" or m.startswith("fpkg.")]:
        del sys.modules[name]
    fingerprint.clear_cache()


def test_relative_imports_resolve_to_the_right_modules(package: Path) -> None:
    plugin = fingerprint._imports(package / "fpkg/deep/plugin.py", "fpkg.deep.plugin", False)
    assert {"fpkg.shared", "fpkg.shared.helper", "fpkg", "fpkg.sibling",
            "fpkg.deep.local"} <= plugin
    assert not any(name.startswith("fpkg.deep.shared") for name in plugin)
    init = fingerprint._imports(package / "fpkg/deep/__init__.py", "fpkg.deep", True)
    assert "fpkg.shared.helper" in init and "fpkg.deep.shared.helper" not in init
    leaf = fingerprint._imports(package / "fpkg/deep/deeper/leaf.py", "fpkg.deep.deeper.leaf",
                                False)
    assert "fpkg.sibling" in leaf


def test_a_plugins_closure_follows_two_dot_imports(package: Path) -> None:
    files = {p.relative_to(package).as_posix() for p in fingerprint.module_closure("fpkg.deep.plugin")}
    assert {"fpkg/deep/plugin.py", "fpkg/shared/helper.py", "fpkg/sibling.py",
            "fpkg/deep/local.py"} <= files


def test_non_default_metrics_a_run_requests_are_fingerprinted() -> None:
    """``lr_attack`` is not a default metric: a run that asks for it depends on its code."""
    asked = RunSpec(mechanism="identity", dataset="synthetic", delta=0.0,
                    metrics=("lr_attack",))
    plain = RunSpec(mechanism="identity", dataset="synthetic", delta=0.0)
    assert ("metric", "lr_attack") in fingerprint.used_plugins(asked)
    assert ("metric", "lr_attack") not in fingerprint.used_plugins(plain)
    assert ("metric", "bootstrap") in fingerprint.used_plugins(plain)  # defaults stay
    skipped = RunSpec(mechanism="identity", dataset="synthetic", delta=0.0,
                      metrics=("lr_attack",), skip_metrics=("lr_attack",))
    assert ("metric", "lr_attack") not in fingerprint.used_plugins(skipped)
    assert fingerprint.run_fingerprint(asked)["hash"] != fingerprint.run_fingerprint(plain)["hash"]


def test_the_host_hash_covers_the_protocol_and_every_layer_but_commands(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Path] = []

    def record(paths, root=None):
        seen.extend(paths)
        return "x"

    monkeypatch.setattr(fingerprint, "_hash_files", record)
    fingerprint.host_hash()
    import privbench

    root = Path(privbench.__file__).resolve().parent
    layers = {p.relative_to(root).parts[0] for p in seen if len(p.relative_to(root).parts) > 1}
    assert {"protocol", "host", "results", "running"} <= layers
    assert root / "protocol" / "feasibility.py" in seen
    assert "cli" not in layers


NESTED = '''\
import os
if os:
    from .a import A
else:
    import fpkg.b
try:
    from . import c
except ImportError:
    from .d import D
else:
    from .e import E
finally:
    from .f import F
for _ in ():
    from .g import G
else:
    from .h import H
while False:
    from .i import I
with open(__file__):
    from .j import J
match 1:
    case 1:
        from .k import K
def fn():
    from .l import L
    def inner():
        from .m import M
class C:
    from .n import N
    def method(self):
        from .o import O
async def co():
    from .p import P
    async with x:
        from .q import Q
    async for _ in y:
        from .r import R
VALUE = [__import__("fpkg.not_a_statement")]  # not an import statement: not followed
'''


def test_imports_are_found_at_every_depth_of_statements(tmp_path: Path) -> None:
    """The walk over statements alone finds what a walk over every node finds."""
    import ast

    path = tmp_path / "nested.py"
    path.write_text(NESTED)
    found = fingerprint._imports(path, "fpkg.nested", False)
    letters = "ADEFGHIJKLMNOPQR"
    assert {f"fpkg.{x.lower()}.{x}" for x in letters} <= found
    assert {"os", "fpkg.b", "fpkg.c"} <= found
    tree = ast.parse(NESTED)
    every = {n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)}
    assert every <= set(fingerprint._statements(tree))


def test_plugin_fingerprints_are_those_of_the_full_walk_and_import_no_solver() -> None:
    """Fingerprinting every installed plugin runs no plugin's solver modules (a fresh
    process: numba and sppm's solver stay unloaded; ``privbench results`` paid 2 s for
    them), and gives the hashes that importing every candidate module and walking every
    node gave: stored rows do not turn stale."""
    import ast
    import importlib.util
    import json
    import subprocess

    code = (
        "import json, sys\n"
        "from privbench.host.manager import get_host\n"
        "from privbench.running import fingerprint as f\n"
        "rows = [(p.kind, p.name) for p in get_host().plugins()]\n"
        "out = {f'{k}:{n}': f.plugin_fingerprint(k, n)['source'] for k, n in rows}\n"
        "print(json.dumps({'fp': out, 'loaded': sorted(m for m in ('numba', "
        "'privbench.plugins.mechanisms._sppm.solve') if m in sys.modules)}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    fresh = json.loads(done.stdout)
    assert fresh["loaded"] == []

    def plain_spec(name: str):
        try:
            return importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None

    fingerprint.clear_cache()
    mp = pytest.MonkeyPatch()
    mp.setattr(fingerprint, "_spec", plain_spec)
    mp.setattr(fingerprint, "_statements", ast.walk)
    try:
        full = {key: fingerprint.plugin_fingerprint(*key.split(":", 1))["source"]
                for key in fresh["fp"]}
    finally:
        mp.undo()
        fingerprint.clear_cache()
    assert fresh["fp"] == full
    assert len(full) > 20

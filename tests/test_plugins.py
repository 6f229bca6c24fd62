"""Plugin discovery: built-ins via entry points, third-party, broken and duplicate plugins."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import privbench as pb
from privbench.host.manager import HOOK_KINDS, OTHER_HOOKS, PluginHost

REPO = Path(__file__).resolve().parents[1]
BUILTIN = {"identity", "expmec", "synthetic", "random", "local", "process", "leakage"}


def test_builtins_load_through_entry_points(host: PluginHost) -> None:
    rows = {(r.kind, r.name): r for r in host.plugins()}
    for kind, name in [("mechanism", "identity"), ("mechanism", "expmec"), ("dataset", "synthetic"),
                       ("dataset", "random"), ("executor", "local"), ("metric", "leakage")]:
        row = rows[(kind, name)]
        assert row.status == "ok", row.reason
        assert row.distribution == "privbench"
        assert row.version == pb.__version__


def test_each_distribution_metadata_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host names every entry point's distribution without re-reading its METADATA
    (each ``Distribution.metadata`` access parses the file again)."""
    from privbench.host import manager

    eps = list(manager.md.entry_points(group="privbench"))
    dists = {id(ep.dist) for ep in eps}
    reads = []
    for cls in {type(ep.dist) for ep in eps}:  # the classes the host's own lookup returns
        real = cls.metadata

        def counting(self, real=real):  # noqa: ANN001, ANN202 - a property's getter
            reads.append(self)
            return real.fget(self)

        monkeypatch.setattr(cls, "metadata", property(counting))
    PluginHost()
    assert len(eps) > len(dists)  # dozens of built-in entry points, one distribution
    assert len(reads) == len(dists)


class _Dup(pb.MappingMechanism):
    name = "expmec"

    def __init__(self) -> None:
        pass


class _NotAMechanism:
    name = "bogus"


class _NeedsMissing(pb.MappingMechanism):
    name = "needs_missing"
    requirements = ("surely_not_installed_module_xyz",)
    extra = "xyz"

    def __init__(self) -> None:
        pass


def test_duplicates_invalid_and_unavailable_are_reported(host: PluginHost) -> None:
    class Fake:
        @pb.hookimpl
        def privbench_register_mechanisms(self):
            return [_Dup, _NotAMechanism, _NeedsMissing]

    host.pm.register(Fake(), name="fake")
    rows = [r for r in host.plugins() if r.plugin == "fake"]
    by_name = {r.name: r for r in rows}
    assert by_name["expmec"].status == "broken" and "duplicate" in by_name["expmec"].reason
    assert by_name["bogus"].status == "broken" and "not a subclass" in by_name["bogus"].reason
    assert by_name["needs_missing"].status == "unavailable"
    # no installed distribution to name: the missing module, never privbench's extra
    assert by_name["needs_missing"].reason.endswith("pip install surely_not_installed_module_xyz")
    # the built-in keeps its name and still works
    assert host.get("mechanism", "expmec").__module__.endswith("expmec")
    with pytest.raises(pb.PluginError, match="unavailable"):
        host.get("mechanism", "needs_missing")


def test_hook_that_raises_and_misspelt_hook(host: PluginHost) -> None:
    class Raises:
        @pb.hookimpl
        def privbench_register_datasets(self):
            raise RuntimeError("boom")

    host.pm.register(Raises(), name="raises")
    row = [r for r in host.plugins() if r.plugin == "raises"][0]
    assert row.status == "broken" and "boom" in row.reason

    class Misspelt:
        @pb.hookimpl
        def privbench_register_mechanismz(self):
            return []

    host.register(Misspelt(), name="misspelt")
    host._check_pending()
    row = [r for r in host.plugins() if r.plugin == "misspelt"][0]
    assert row.status == "broken" and "unknown hook" in row.reason
    assert not host.pm.has_plugin("misspelt")


def test_disable_and_module_env(tmp_path: Path) -> None:
    host = PluginHost(env={"PRIVBENCH_DISABLE_PLUGINS": "expmec"})
    assert "expmec" not in host.mechanisms()
    assert host.pm.is_blocked("expmec")
    (tmp_path / "brokenmod.py").write_text("raise ImportError('needs a thing')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        host = PluginHost(env={"PRIVBENCH_PLUGIN_MODULES": "brokenmod"})
    finally:
        sys.path.remove(str(tmp_path))
    row = [r for r in host.plugins() if r.plugin == "brokenmod"][0]
    assert row.status == "broken" and 'Error importing plugin "brokenmod"' in row.reason


def test_a_plugin_module_in_the_current_folder_loads_unpackaged(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """The README's `PRIVBENCH_PLUGIN_MODULES=my_mech` beside my_mech.py: the console
    script's sys.path holds no current folder, so the module was 'broken' and `run -m
    nearest` said only 'unknown mechanism'."""
    (tmp_path / "cwd_mech.py").write_text(textwrap.dedent("""
        import scipy.sparse as sp
        import privbench as pb

        class CwdNearest(pb.MappingMechanism):
            name = "cwd_nearest"
            def run(self, problem, delta):
                return self.result(sp.identity(problem.n, format="csc"))

        @pb.hookimpl
        def privbench_register_mechanisms():
            return [CwdNearest]
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "cwd_mech", raising=False)
    host = PluginHost(env={"PRIVBENCH_PLUGIN_MODULES": "cwd_mech"})
    assert host.get("mechanism", "cwd_nearest").name == "cwd_nearest"
    monkeypatch.delitem(sys.modules, "cwd_mech", raising=False)
    host = PluginHost(env={"PRIVBENCH_PLUGIN_MODULES": "cwd_mech_typo"})
    with pytest.raises(pb.PluginError, match=r"unknown mechanism 'cwd_nearest'.*1 plugin that "
                       r"may provide it failed to load: cwd_mech_typo: .*ModuleNotFoundError"):
        host.get("mechanism", "cwd_nearest")


def test_every_hook_is_documented() -> None:
    doc = (REPO / "docs" / "hooks.md").read_text()
    documented = set(re.findall(r"^## (privbench_\w+)\(", doc, flags=re.M))
    assert documented == set(HOOK_KINDS) | set(OTHER_HOOKS)
    host = PluginHost(autoload=False)
    specified = {name for name in dir(host.pm.hook) if name.startswith("privbench_")}
    assert specified == documented


FAKE_PLUGIN = '''
"""A third-party plugin distribution made by the test."""
import scipy.sparse as sp
import privbench as pb


class Swap(pb.MappingMechanism):
    name = "swap_first_two"

    def __init__(self, weight: float = 0.5) -> None:
        self.weight = weight

    def solve(self, problem, delta, *, seed=None):
        X = sp.lil_array((problem.n, problem.n))
        for j in range(problem.n):
            X[j, j] = 1.0
        X[0, 0], X[1, 0] = 1 - self.weight, self.weight
        return self.result(X)

    respects_budget = False


@pb.hookimpl
def privbench_register_mechanisms():
    return [Swap]
'''


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _make_dist(root: Path, name: str, module_source: str) -> Path:
    src = root / name
    src.mkdir()
    (src / f"{name}.py").write_text(module_source)
    (src / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools>=64"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{name}"
        version = "1.2.3"
        [project.entry-points.privbench]
        {name} = "{name}"
        [tool.setuptools]
        py-modules = ["{name}"]
    """))
    return src


def _privbench(args: list[str], site: Path, env_extra: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "PYTHONPATH": str(site), **(env_extra or {})}
    env.pop("PRIVBENCH_PLUGINS", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "privbench", *args], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.mark.slow
def test_third_party_distribution_is_discovered_and_runnable(tmp_path: Path) -> None:
    site = tmp_path / "site"
    good = _make_dist(tmp_path, "pb_fake_swap", FAKE_PLUGIN)
    broken = _make_dist(tmp_path, "pb_fake_broken", "import not_a_real_module_abc\n")
    for src in (good, broken):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--no-build-isolation", "--target", str(site), str(src)],
                       check=True, capture_output=True, timeout=300)
    out = _privbench(["plugins", "--json"], site)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {"kind", "name", "version", "distribution", "status", "reason"} <= set(rows[0])
    swap = [r for r in rows if r["name"] == "swap_first_two"][0]
    assert (swap["kind"], swap["status"], norm(swap["distribution"]), swap["version"]) == (
        "mechanism", "ok", "pb-fake-swap", "1.2.3")
    bad = [r for r in rows if norm(r["distribution"]) == "pb-fake-broken"][0]
    assert bad["status"] == "broken" and "not_a_real_module_abc" in bad["reason"]
    assert {r["name"] for r in rows if r["status"] == "ok"} >= BUILTIN

    run = _privbench(["run", "-m", "swap_first_two:weight=0.25", "-d", "synthetic:m=3",
                      "--delta", "1", "--json", "--no-store"], site)
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout.splitlines()[0])
    assert record["status"] == "ok" and record["params"] == {"weight": 0.25}
    # d(b̂_2, b_1) = 1 on the toy example, p(b_1) = 1/8: E[d] = 0.25 / 8
    assert record["distortion"] == pytest.approx(0.25 / 8)

    # an empty allow-list loads built-ins only; naming the distribution loads it
    only = _privbench(["plugins", "--json"], site, {"PRIVBENCH_PLUGINS": ""})
    names = {r["name"] for r in json.loads(only.stdout)}
    assert "swap_first_two" not in names and "expmec" in names
    allowed = _privbench(["plugins", "--json"], site, {"PRIVBENCH_PLUGINS": "pb_fake_swap"})
    rows = json.loads(allowed.stdout)
    assert "swap_first_two" in {r["name"] for r in rows}
    assert "pb-fake-broken" not in {norm(r["distribution"]) for r in rows}

"""Third-party plugins as installed distributions (a ``.dist-info`` folder on ``sys.path``,
no pip): two claiming one name, an optional dependency's install hint, how broken ones
are listed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import privbench as pb
from privbench.cli import main
from privbench.host import manager as host_module
from privbench.host.manager import PluginHost

MECHANISM = '''
import scipy.sparse as sp
import privbench as pb


class Krr(pb.MappingMechanism):
    name = "auditb_krr"
    respects_budget = False
    provider = "{provider}"

    def __init__(self) -> None:
        pass

    def run(self, problem, delta):
        return self.result(sp.identity(problem.n, format="csc"))


@pb.hookimpl
def privbench_register_mechanisms():
    return [Krr]
'''

NEEDS_FAST = '''
import privbench as pb


class Fast(pb.MappingMechanism):
    name = "auditb_fast"
    requirements = ("privbench_test_some_missing_lib",)
    extra = "fast"

    def __init__(self) -> None:
        pass


@pb.hookimpl
def privbench_register_mechanisms():
    return [Fast]
'''


def install(site: Path, dist: str, entry_points: dict[str, str], files: dict[str, str]) -> None:
    """Lay out distribution ``dist`` (version 1.0) in ``site`` as pip would: its modules
    and a ``.dist-info`` folder with METADATA and its ``privbench`` entry points."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[privbench]\n" + "".join(f"{name} = {value}\n" for name, value in entry_points.items()))
    for path, source in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(source)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of installed distributions on ``sys.path``: auditb-good (entry point
    ``auditb_good``) and auditb-bad (``auditb_dup``) both provide mechanism ``auditb_krr``."""
    site = tmp_path / "site"
    install(site, "auditb-good", {"auditb_good": "auditb_good_mod"},
            {"auditb_good_mod.py": MECHANISM.format(provider="good")})
    install(site, "auditb-bad", {"auditb_dup": "auditb_bad_mod"},
            {"auditb_bad_mod.py": MECHANISM.format(provider="bad")})
    monkeypatch.syspath_prepend(str(site))
    for env in ("PRIVBENCH_PLUGINS", "PRIVBENCH_DISABLE_PLUGINS", "PRIVBENCH_PLUGIN_MODULES"):
        monkeypatch.delenv(env, raising=False)
    yield site
    for module in ("auditb_good_mod", "auditb_bad_mod"):
        sys.modules.pop(module, None)


@pytest.fixture
def use_host():
    """Installs a host as the process-wide one (for ``main``), the previous one after."""
    previous = host_module.get_host()

    def use(host: PluginHost) -> PluginHost:
        host_module.set_host(host)
        return host

    yield use
    host_module.set_host(previous)


def test_two_third_parties_claiming_one_name_are_both_refused(site: Path, use_host, capsys
                                                              ) -> None:
    host = use_host(PluginHost(env={}))
    rows = [r for r in host.plugins() if r.name == "auditb_krr"]
    assert sorted(r.distribution for r in rows) == ["auditb-bad", "auditb-good"]
    for row in rows:  # neither is used, and each row names both providers
        assert row.status == "broken" and row.cls is None
        assert "ambiguous" in row.reason
        assert "auditb-good (auditb_good)" in row.reason and "auditb-bad (auditb_dup)" in row.reason
    assert "auditb_krr" not in host.mechanisms()
    with pytest.raises(pb.PluginError, match="PRIVBENCH_DISABLE_PLUGINS=auditb_dup uses "
                                             "auditb-good's"):
        host.get("mechanism", "auditb_krr")

    code = main(["run", "-m", "auditb_krr", "-d", "synthetic:m=3", "--delta", "1", "--no-store"])
    err = capsys.readouterr().err
    assert code == 2
    assert "auditb-good" in err and "auditb-bad" in err and "PRIVBENCH_DISABLE_PLUGINS" in err


@pytest.mark.parametrize(("env", "provider"), [
    ({"PRIVBENCH_DISABLE_PLUGINS": "auditb_dup"}, "good"),
    ({"PRIVBENCH_DISABLE_PLUGINS": "auditb_good"}, "bad"),
    ({"PRIVBENCH_PLUGINS": "auditb-good"}, "good"),
])
def test_with_the_other_left_out_the_one_kept_works(site: Path, use_host, capsys,
                                                     env: dict[str, str], provider: str) -> None:
    host = use_host(PluginHost(env=env))
    rows = [r for r in host.plugins() if r.name == "auditb_krr"]
    assert [r.status for r in rows] == ["ok"]
    assert host.get("mechanism", "auditb_krr").provider == provider
    assert main(["run", "-m", "auditb_krr", "-d", "synthetic:m=3", "--delta", "1", "--no-store",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["status"] == "ok"


def test_a_builtin_keeps_its_name_against_a_third_party(site: Path) -> None:
    install(site, "auditb-shadow", {"auditb_shadow": "auditb_shadow_mod"},
            {"auditb_shadow_mod.py": MECHANISM.format(provider="shadow").replace(
                '"auditb_krr"', '"expmec"')})
    host = PluginHost(env={"PRIVBENCH_DISABLE_PLUGINS": "auditb_dup"})
    rows = {r.distribution: r for r in host.plugins() if r.name == "expmec"}
    assert rows["privbench"].status == "ok"
    assert rows["auditb-shadow"].status == "broken"
    assert "already provided by privbench" in rows["auditb-shadow"].reason
    assert host.get("mechanism", "expmec").__module__.endswith("expmec")
    sys.modules.pop("auditb_shadow_mod", None)


def test_the_install_hint_names_the_providing_distribution(site: Path) -> None:
    install(site, "auditb-extra", {"auditb_extra": "auditb_extra_mod"},
            {"auditb_extra_mod.py": NEEDS_FAST})
    host = PluginHost(env={})
    row = next(r for r in host.plugins() if r.name == "auditb_fast")
    assert row.status == "unavailable"
    assert row.reason == ("missing privbench_test_some_missing_lib; install with: "
                          "pip install 'auditb-extra[fast]'")
    sys.modules.pop("auditb_extra_mod", None)


class _Twin(pb.Metric):
    name = "auditb_twin"
    default = False

    def compute(self, problem, result, *, delta, seed=None):
        return {}


def test_a_metric_two_plugins_name_is_refused_when_requested(site: Path, use_host, capsys
                                                             ) -> None:
    host = use_host(PluginHost(env={}))
    for plugin in ("twin-a", "twin-b"):
        class Plugin:
            @pb.hookimpl
            def privbench_register_metrics(self):
                return [_Twin]

        host.register(Plugin(), name=plugin)
    code = main(["run", "-m", "identity", "-d", "synthetic:m=3", "--delta", "1", "--no-store",
                 "-M", "auditb_twin"])
    err = capsys.readouterr().err
    assert code == 2
    assert "metric 'auditb_twin' is ambiguous" in err and "PRIVBENCH_DISABLE_PLUGINS=twin-a" in err


def test_broken_plugins_are_listed_without_guessing_or_repeating(site: Path, capsys,
                                                                 use_host) -> None:
    figures = "import privbench as pb\n\n@pb.hookimpl\ndef privbench_register_figures():\n" \
              "    return []\n"
    install(site, "auditb-broken", {
        # a package whose own __init__ fails: its figures module is read, not imported
        "auditb_pkgfig": "auditb_pkg.figs",
        # an object of a module: the module's source is read
        "auditb_attr": "auditb_attrmod:plugin",
        # hooks from a submodule that cannot be read: the kind is not known
        "auditb_starred": "auditb_starred",
        "auditb_misspelt": "auditb_misspelt",
        "auditb_badargs": "auditb_badargs",
    }, {
        "auditb_pkg/__init__.py": "import privbench_test_not_there\n",
        "auditb_pkg/figs.py": figures,
        "auditb_attrmod.py": "import privbench_test_not_there\n" + figures + "plugin = None\n",
        "auditb_starred/__init__.py": "from ._impl import *\n",
        "auditb_starred/_impl.py": "import privbench_test_not_there\n",
        "auditb_misspelt.py": figures.replace("_figures", "_figurez"),
        "auditb_badargs.py": figures.replace("figures()", "figures(foo)"),
    })
    use_host(PluginHost(env={}))
    assert main(["plugins", "--json"]) == 0
    rows = {r["plugin"]: r for r in json.loads(capsys.readouterr().out)
            if r["distribution"] == "auditb-broken"}
    role = {name: row["role"] for name, row in rows.items()}
    assert role == {"auditb_pkgfig": "figure", "auditb_attr": "figure",
                    "auditb_starred": "plugin", "auditb_misspelt": "plugin",
                    "auditb_badargs": "figure"}
    assert all(row["status"] == "broken" for row in rows.values())
    assert rows["auditb_misspelt"]["reason"] == (
        "unknown hook 'privbench_register_figurez' (did you mean 'privbench_register_figures' "
        "or 'privbench_register_reporters'?)")
    # pluggy's three lines, on one: which plugin, the signature, what is wrong
    reason = rows["auditb_badargs"]["reason"]
    assert "\n" not in reason
    assert "hookimpl definition: privbench_register_figures(foo); Argument(s) {'foo'}" in reason
    for module in ("auditb_pkg", "auditb_pkg.figs", "auditb_attrmod", "auditb_starred",
                   "auditb_starred._impl", "auditb_misspelt", "auditb_badargs"):
        sys.modules.pop(module, None)

"""Third-party plugins as installed distributions (a ``.dist-info`` folder on ``sys.path``,
no pip): two claiming one name, an optional dependency's install hint, how broken ones
are listed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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


def test_the_install_hint_names_the_providing_distribution(site: Path) -> None:
    install(site, "auditb-extra", {"auditb_extra": "auditb_extra_mod"},
            {"auditb_extra_mod.py": NEEDS_FAST})
    host = PluginHost(env={})
    row = next(r for r in host.plugins() if r.name == "auditb_fast")
    assert row.status == "unavailable"
    assert row.reason == ("missing privbench_test_some_missing_lib; install with: "
                          "pip install 'auditb-extra[fast]'")
    sys.modules.pop("auditb_extra_mod", None)

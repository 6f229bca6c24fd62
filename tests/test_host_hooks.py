"""Hooks are called through pluggy: wrappers and tracing work for third parties."""

from __future__ import annotations

import sys

import pluggy

import privbench as pb
from privbench.host.manager import PluginHost, _declared_kind


class _Extra(pb.MappingMechanism):
    name = "wrapped_extra"

    def __init__(self) -> None:
        pass


def test_a_hook_wrapper_sees_and_changes_every_registration(host: PluginHost) -> None:
    seen: list[str] = []

    class Wrapper:
        @pluggy.HookimplMarker("privbench")(wrapper=True)
        def privbench_register_mechanisms(self):
            result = yield  # one list of classes per implementation called
            seen.append(",".join(sorted(c.name for classes in result for c in classes)))
            return result + [[_Extra]] if "expmec" in seen[-1] else result

    host.pm.register(Wrapper(), name="wrapper")
    assert host.get("mechanism", "wrapped_extra") is _Extra
    assert any("expmec" in s for s in seen)
    assert host.get("mechanism", "expmec").name == "expmec"  # built-ins still listed once
    assert sum(1 for r in host.plugins() if r.name == "expmec" and r.kind == "mechanism") == 1


def test_tracing_shows_pluggy_hook_calls(capsys) -> None:
    PluginHost(env={"PRIVBENCH_TRACE_PLUGINS": "1", "PRIVBENCH_PLUGINS": ""}).plugins()
    err = capsys.readouterr().err
    assert "privbench_register_mechanisms" in err and "[privbench plugins] registered" in err


def test_kind_of_a_broken_module_comes_from_the_hooks_it_defines(tmp_path, monkeypatch) -> None:
    (tmp_path / "broken_reporter_plugin.py").write_text(
        "import does_not_exist\n\ndef privbench_register_datasets():\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _declared_kind("broken_reporter_plugin") == "dataset"  # not guessed from the name
    assert _declared_kind("no.such.module") == "plugin"  # not known: not guessed either
    assert "broken_reporter_plugin" not in sys.modules


class _Rival(pb.Executor):
    name = "rival"
    default = True

    def __init__(self) -> None:
        pass


class _Quiet(pb.Reporter):
    name = "quiet"

    def __init__(self) -> None:
        pass


def test_defaults_are_the_plugins_that_declare_themselves_default(host: PluginHost) -> None:
    """The host names no executor or reporter: the default is the one plugin whose class
    says ``default = True``; a second claimant or none is an error naming the way out."""
    assert host.default("executor") == "local" and host.default("reporter") == "html"

    class Plugins:
        @pb.hookimpl
        def privbench_register_executors(self):
            return [_Rival]

    host.register(Plugins(), name="rival-plugins")
    try:
        host.default("executor")
    except pb.PluginError as exc:
        assert "several executor plugins declare default = True: local, rival" in str(exc)
    else:
        raise AssertionError("two default executors were accepted")
    assert host.default("reporter") == "html"
    bare = PluginHost(autoload=False)

    class OnlyQuiet:
        @pb.hookimpl
        def privbench_register_reporters(self):
            return [_Quiet]

    bare.register(OnlyQuiet(), name="quiet-plugins")
    try:
        bare.default("reporter")
    except pb.PluginError as exc:
        assert "no available reporter plugin declares default = True" in str(exc)
    else:
        raise AssertionError("a reporter was chosen though none declares default")

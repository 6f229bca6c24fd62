"""The wheel installs under the ``privbench`` namespace and never shadows PyPI's ``datasets``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_in_fresh_venv_beside_a_datasets_package(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                    str(dist), str(REPO)], check=True, capture_output=True, timeout=600)
    (wheel,) = dist.glob("privbench-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "privbench/host/manager.py" in names and "privbench/datasets/synthetic.py" in names
    # every package folder of the source tree is in the wheel (a subpackage missing from
    # pyproject's list would install a privbench that fails at import)
    roots = {"harness": "privbench", "plugins": "privbench/plugins", "datasets": "privbench/datasets"}
    for folder, target in roots.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.relative_to(REPO / folder).as_posix()
            assert f"{target}/{rel}" in names, f"{folder}/{rel} is not packaged"
    assert not any(n.startswith(("datasets/", "harness/", "plugins/")) for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=900)
    # a module named `datasets` (as the popular PyPI package) on the path
    shadow = tmp_path / "shadow"
    (shadow / "datasets").mkdir(parents=True)
    (shadow / "datasets" / "__init__.py").write_text("WHO = 'the other datasets package'\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    env.pop("PRIVBENCH_PLUGIN_MODULES", None)
    out = subprocess.run([str(venv / "bin" / "privbench"), "plugins", "--json"], cwd=tmp_path,
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = {(r["kind"], r["name"]): r for r in json.loads(out.stdout)}
    assert rows[("dataset", "synthetic")]["status"] == "ok"
    assert rows[("mechanism", "expmec")]["distribution"] == "privbench"
    who = subprocess.run([str(py), "-c", "import datasets, privbench.datasets as p; "
                          "print(datasets.WHO); print(p.__name__)"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert who.stdout.split("\n")[:2] == ["the other datasets package", "privbench.datasets"]
    run = subprocess.run([str(venv / "bin" / "privbench"), "run", "-m", "expmec", "-d",
                          "synthetic:m=4", "--delta", "1", "--json", "--no-store"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["status"] == "ok"

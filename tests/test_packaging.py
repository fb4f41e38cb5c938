# Copyright 2026 The gesa authors. All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""`pip install .` (not editable): the wheel holds every flat module and the data files the package reads at run
time, and the package installed from it finds its metrics and card template without the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gesa.training.resources import METRICS, load_metric, metric_module, shipped_file

ROOT = Path(__file__).resolve().parents[1]
# the data files read at run time, relative to the package root gesa/ (where setup.cfg's package_data installs them)
DATA_FILES = [*(f"training/metrics/{name}/{name}.py" for name in METRICS), "model_cards/template.md"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel `pip install .` installs, built offline from a copy of what the build reads (no build/ in the
    checkout)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for path in ROOT.iterdir():
        if path.is_file():
            shutil.copy2(path, source / path.name)
    for folder in ("training", "model_cards"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q"]
    result = subprocess.run([*command, "-w", str(work / "dist")], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = (work / "dist").glob("gesa-*.whl")
    return built


def test_the_wheel_holds_every_flat_module_and_the_runtime_data_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f"gesa/{path.name}" for path in ROOT.glob("*.py") if path.name not in ("setup.py", "conftest.py")}
    modules |= {f"gesa/training/{path.name}" for path in (ROOT / "training").glob("*.py")}
    assert modules - names == set()
    assert {f"gesa/{relative}" for relative in DATA_FILES} - names == set()
    assert not [name for name in names if name.startswith(("gesa/tests/", "gesa/bench/", "gesa/examples/"))]


def test_the_installed_package_loads_its_metrics_and_card_template_away_from_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # a pure-Python wheel installs by unpacking
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = """
import json
import gesa
from gesa.training.cards import render_model_card
from gesa.training.resources import load_metric, metric_module, shipped_file
record = load_metric("record").compute(
    predictions=[{"id": "q1", "prediction_text": "the Eiffel Tower"}],
    references=[{"id": "q1", "answers": ["Eiffel Tower"]}],
)
print(json.dumps({
    "package": gesa.__file__,
    "template": str(shipped_file("model_cards/template.md")),
    "record": record,
    "record_function": metric_module("record").compute_record_scores({"q1": "Paris"}, {"q1": ["Paris", "Lyon"]}),
    "wikihop": load_metric("wikihop").compute(
        predictions=[{"id": "a", "prediction_text": "x"}, {"id": "b", "prediction_text": "y"}],
        references=[{"id": "a", "answer": "x"}, {"id": "b", "answer": "z"}],
    ),
    "card": "gesa-installed" in render_model_card("gesa-installed", results={"eval_exact_match": 50.0}),
}))
"""
    env = dict(os.environ, PYTHONPATH=str(site), HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=elsewhere, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(out["package"]).parent == site / "gesa"  # the installed copy, not the checkout
    assert Path(out["template"]) == site / "gesa" / "model_cards" / "template.md"
    assert out["record"] == {"exact_match": 100.0, "f1": 100.0}
    assert out["record_function"] == {"exact_match": 100.0, "f1": 100.0}
    assert out["wikihop"] == {"accuracy": 50.0}
    assert out["card"] is True


def test_a_checkout_loads_its_metrics_by_path_and_through_the_package():
    import evaluate

    assert shipped_file("training/metrics/record") == ROOT / "training" / "metrics" / "record"
    by_path = evaluate.load(str(ROOT / "training" / "metrics" / "fever"))
    assert type(by_path).__name__ == type(load_metric("fever")).__name__
    assert metric_module("wikihop") is metric_module("wikihop")


def test_an_unknown_metric_or_missing_file_names_what_gesa_ships():
    with pytest.raises(ValueError, match="record, hotpotqa, fever, wikihop"):
        load_metric("squad")
    with pytest.raises(FileNotFoundError, match=r"gesa ships no model_cards/nothing\.md .*package_data"):
        shipped_file("model_cards/nothing.md")


def test_every_metric_folder_of_the_checkout_is_a_shipped_metric():
    """A new metric folder must join `METRICS` (and thereby the wheel test above)."""
    metrics = ROOT / "training" / "metrics"
    folders = sorted(path.name for path in metrics.iterdir() if (path / f"{path.name}.py").is_file())
    assert folders == sorted(METRICS)


@pytest.mark.slow
def test_every_script_runs_from_another_folder_on_the_installed_package(wheel, tmp_path):
    """`pip install .` (not editable): each example script, run from a folder that is not the checkout, imports the
    installed copy; the main job's demo trains, evaluates and saves a folder carrying the root's modules only."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"),
               OMP_NUM_THREADS="1")  # fmt: skip
    scripts = sorted((ROOT / "examples").glob("*.py"))
    assert {path.name for path in scripts} >= {"run_record.py", "run_multihop.py", "run_entity_tasks.py"}
    for script in scripts:
        result = subprocess.run([sys.executable, str(script), "--help"], cwd=elsewhere, env=env, capture_output=True,
                                text=True, check=False)  # fmt: skip
        assert result.returncode == 0 and "usage:" in result.stdout, (script.name, result.stderr[-2000:])
    probe = "import gesa, gesa.training.driver as d; print(gesa.__file__); print(d.__file__)"
    paths = subprocess.run([sys.executable, "-c", probe], cwd=elsewhere, env=env, capture_output=True, text=True,
                           check=True).stdout.split()  # fmt: skip
    assert all(Path(path).is_relative_to(site) for path in paths), paths
    demo = subprocess.run([sys.executable, str(ROOT / "examples" / "run_record.py"), "--output_dir", "demo"],
                          cwd=elsewhere, env=env, capture_output=True, text=True, check=False)  # fmt: skip
    assert demo.returncode == 0, demo.stderr[-3000:]
    carried = {path.name for path in (elsewhere / "demo").glob("*.py")}
    assert "modeling_gesa.py" in carried and not carried & {path.name for path in (ROOT / "training").glob("*.py")}

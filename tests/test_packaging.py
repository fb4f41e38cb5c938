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

from gesa.resources_gesa import METRICS, load_metric, metric_module, shipped_file

ROOT = Path(__file__).resolve().parents[1]
DATA_FILES = [*(f"metrics/{name}/{name}.py" for name in METRICS), "model_cards/template.md"]


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
    for folder in ("metrics", "model_cards"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q"]
    result = subprocess.run([*command, "-w", str(work / "dist")], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = (work / "dist").glob("gesa-*.whl")
    return built


def test_the_wheel_holds_every_flat_module_and_the_runtime_data_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f"gesa/{path.name}" for path in ROOT.glob("*.py") if path.name not in ("setup.py", "conftest.py")}
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
from gesa.cards_gesa import render_model_card
from gesa.resources_gesa import load_metric, metric_module, shipped_file
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

    assert shipped_file("metrics/record") == ROOT / "metrics" / "record"
    by_path = evaluate.load(str(ROOT / "metrics" / "fever"))
    assert type(by_path).__name__ == type(load_metric("fever")).__name__
    assert metric_module("wikihop") is metric_module("wikihop")


def test_an_unknown_metric_or_missing_file_names_what_gesa_ships():
    with pytest.raises(ValueError, match="record, hotpotqa, fever, wikihop"):
        load_metric("squad")
    with pytest.raises(FileNotFoundError, match=r"gesa ships no model_cards/nothing\.md .*package_data"):
        shipped_file("model_cards/nothing.md")


def test_every_metric_folder_of_the_checkout_is_a_shipped_metric():
    """A new metric folder must join `METRICS` (and thereby the wheel test above)."""
    folders = sorted(path.name for path in (ROOT / "metrics").iterdir() if (path / f"{path.name}.py").is_file())
    assert folders == sorted(METRICS)

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
"""The data files gesa ships beside its modules: the official metrics and the model-card template.

``setup.cfg`` (``[options.package_data]``) installs ``training/metrics/<name>/`` and the top-level
``model_cards/template.md`` beside the flat modules, so the same path relative to the package root works in a
checkout, an editable install and ``pip install .``::

    from gesa.training.resources import load_metric, shipped_file

    load_metric("record").compute(predictions=..., references=...)  # evaluate.load of the shipped folder
    shipped_file("model_cards/template.md")

From a checkout the metrics also load by path: ``evaluate.load("path/to/gesa/training/metrics/record")``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import evaluate

# the package root: the checkout, or site-packages/gesa after a non-editable install (this module sits in training/)
PACKAGE_DIR = Path(__file__).resolve().parent.parent
METRICS = ("record", "hotpotqa", "fever", "wikihop", "scirex")


def shipped_file(relative: str | os.PathLike) -> Path:
    """The path of a file or folder shipped with gesa, ``relative`` to the package root (e.g. ``training/metrics/record``,
    ``model_cards/template.md``).

    Raises:
        FileNotFoundError: naming where it looked, when the installation lacks it.
    """
    path = PACKAGE_DIR / relative
    if not path.exists():
        raise FileNotFoundError(
            f"gesa ships no {Path(relative).as_posix()} (looked in {PACKAGE_DIR}): the installation is incomplete; "
            "reinstall gesa from its repository (pip install .), or check that the file is listed in setup.cfg's "
            "[options.package_data]"
        )
    return path


def _metric_folder(name: str) -> Path:
    if name not in METRICS:
        raise ValueError(f"unknown gesa metric {name!r}; gesa ships {', '.join(METRICS)}")
    return shipped_file(f"training/metrics/{name}")


def load_metric(name: str, **kwargs) -> evaluate.EvaluationModule:
    """``evaluate.load`` of the shipped metric ``name`` (``record``, ``hotpotqa``, ``fever``, ``wikihop``, ``scirex``), offline.

    Keyword arguments go to ``evaluate.load``.
    """
    import evaluate  # the train extra: only the scripts score

    return evaluate.load(str(_metric_folder(name)), **kwargs)


def metric_module(name: str) -> ModuleType:
    """The shipped metric file ``metrics/<name>/<name>.py`` imported as a module, for its plain functions
    (``metric_module("record").compute_record_scores``); imported once per process."""
    module_name = f"gesa_metric_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = _metric_folder(name) / f"{name}.py"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the {name} metric from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module

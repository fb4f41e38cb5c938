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
"""The test suite's own layout: test modules share fixtures through ``conftest.py`` and helpers through plain modules
beside it, never by importing another test module (pytest would import it under the importer's name rules, and a
helper hidden in a test file is found only by reading that file's tests)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> set[str]:
    """The top-level names of every module `path` imports, at any depth (function-local imports included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("importlib.import_module", "__import__"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value.split(".")[0])
    return names


def test_no_test_module_imports_another_test_module():
    test_modules = {path.stem for path in TESTS.glob("test_*.py")}
    assert len(test_modules) > 40
    offenders = {
        path.name: sorted(imported_modules(path) & test_modules)
        for path in sorted(TESTS.glob("*.py"))
        if imported_modules(path) & test_modules
    }
    assert not offenders, (
        f"test modules imported by other modules of tests/: {offenders}; move what they share into conftest.py "
        "(fixtures) or a helper module beside it (constants and functions)"
    )


def test_helper_modules_hold_no_tests():
    """A ``test_`` function in a helper module is never collected: it would be a test that cannot fail."""
    helpers = [path for path in TESTS.glob("*.py") if not path.name.startswith("test_")]
    assert {"conftest.py", "tiny_luke.py"} <= {path.name for path in helpers}
    offenders = {
        path.name: name
        for path in helpers
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and (name := node.name).startswith(("test_", "Test"))
    }
    assert not offenders, f"tests defined in helper modules (pytest does not collect them): {offenders}"


def test_the_layout_check_sees_a_test_module_import(tmp_path):
    """The import check reads module-level, function-local and dotted imports."""
    module = tmp_path / "test_example.py"
    module.write_text(
        "import os\nfrom test_modeling import TINY\n\ndef f():\n    import test_metric.sub\n    from . import x\n",
        encoding="utf-8",
    )
    assert imported_modules(module) == {"os", "test_modeling", "test_metric"}

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
"""The flat modules' imports point down the floors (structure -> labels -> kernels and the Eq. 1 reference ->
attention -> modeling -> variants -> processors -> pipelines) with no cycle, no kernel reads the module that calls
it, and the training side (the subpackage `training/`) sits above them all: it imports the root, the root never
imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLAT_MODULES = sorted(p for p in ROOT.glob("*.py") if p.stem not in ("__init__", "setup", "conftest"))
# the training side, named "training.<module>" in the import graph
TRAINING_MODULES = sorted(p for p in (ROOT / "training").glob("*.py") if p.stem != "__init__")
TRAINING_FLOOR = 9

# floor of each flat module by name (lower floors never import higher ones); a module whose name matches none is
# held to the no-cycle rule only
FLOORS = [
    (("structure_gesa", "checks_gesa", "conversion_gesa", "inputs_gesa", "loading_gesa", "configuration_"), 0),
    (("labels_gesa",), 1),  # the label terms q . r_label of Eq. 1
    (("kernel_", "attention_reference_gesa"), 2),  # one file per kernel, their shared pieces, Eq. 1 written plainly
    (("attention_gesa",), 3),
    (("modeling_gesa",), 4),
    (("modeling_variants",), 5),
    (("modeling_",), 6),
    (("records_", "candidates_", "collator_", "windows_", "answers_", "processing_", "render_"), 7),
    (("graph_context",), 7),  # the thesis's context graph, built from records like the processors' features
    (("pipeline_",), 8),
    (("extras_gesa",), 0),  # the optional libraries and the extra that installs each: the standard library only
    # the training side: the tasks, the driver and its machinery, the registry, metrics, cards; above every root floor
    (("training.",), TRAINING_FLOOR),
]
KERNELS = ["kernel_fused_gesa", "kernel_bias_gesa", "kernel_windowed_gesa", "kernel_flex_gesa"]
# below the attention functions: tensors in, tensors out
TENSOR_MODULES = ["structure_gesa", "labels_gesa", "attention_reference_gesa", "kernel_common_gesa", *KERNELS]


def floor_of(name: str) -> int | None:
    for prefixes, floor in FLOORS:
        if any(name == prefix or (prefix.endswith(("_", ".")) and name.startswith(prefix)) for prefix in prefixes):
            return floor
    return None


def module_path(name: str) -> Path:
    return ROOT / f"{name.replace('.', '/')}.py"


def relative_imports(path: Path) -> set[str]:
    """Package modules `path` imports (`from .x import ...`, `from ..x import ...`, at any depth of the file), named
    as in `import_graph`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_training = path.parent.name == "training"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and node.module:
            parts = node.module.split(".")
            if in_training and node.level == 1:
                found.add(f"training.{parts[0]}")
            elif parts[0] == "training" and len(parts) > 1:
                found.add(f"training.{parts[1]}")
            else:
                found.add(parts[0])
    return found


def import_graph() -> dict[str, set[str]]:
    graph = {path.stem: relative_imports(path) for path in FLAT_MODULES}
    graph.update({f"training.{path.stem}": relative_imports(path) for path in TRAINING_MODULES})
    return graph


def test_floor_of_names_the_layer_order():
    core = ("structure_gesa", "labels_gesa", "kernel_fused_gesa", "attention_gesa", "modeling_gesa")
    assert [floor_of(n) for n in core] == [0, 1, 2, 3, 4]
    assert {floor_of(n) for n in ("kernel_common_gesa", *KERNELS, "attention_reference_gesa")} == {2}
    assert floor_of("modeling_kar") == 6 and floor_of("pipeline_gesa") == 8 and floor_of("somewhere_else") is None
    assert {
        floor_of(n) for n in ("training.machinery", "training.tokenizer", "training.driver", "training.models")
    } == {9}


def test_no_root_module_imports_the_training_side():
    """The root is what checkpoints carry: a root module importing `training/` would put it in a checkpoint."""
    wrong = {name: sorted(i for i in imports if i.startswith("training"))
             for name, imports in import_graph().items() if not name.startswith("training.")}  # fmt: skip
    assert not {name: found for name, found in wrong.items() if found}


def test_the_scripts_machinery_sits_on_the_top_floor_and_imports_no_script():
    """What the example scripts share lives in the training subpackage (importable by tests, never copied next to
    checkpoints); its modules import each other and the root relatively, never the scripts, the tests or the metric
    files."""
    graph = import_graph()
    assert graph["training.tokenizer"] == {"training.machinery"}
    # the one loader calls down only: the registry, the loading and KB readers, the processors' saved settings
    assert graph["training.models"] <= {"inputs_gesa", "loading_gesa", "modeling_gesa_multiple_choice",
                                        "processing_base_gesa", "records_kb", "training.registry",
                                        "training.machinery", "training.tokenizer"}  # fmt: skip
    for path in TRAINING_MODULES:
        name = f"training.{path.stem}"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        absolute = {node.module.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and not node.level and node.module}  # fmt: skip
        absolute |= {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                     for alias in node.names}  # fmt: skip
        assert not absolute & {"examples", "tests", "bench", "gesa", "metrics"}, name


def called_names(path: Path) -> set[str]:
    """The plain names `path` calls (`f(...)`, not `x.f(...)`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


def test_the_tasks_load_their_models_through_the_one_loader():
    """A task declares what its model differs in (`training.models.ModelRecipe`) and `load_for_task` runs the
    sequence once: no task module checks a checkpoint or builds a variant's model itself. The entity tasks give it
    their own source check and build as hooks (their labels and pre-training vocabulary decide the head:
    `ModelRecipe.check_source` / `build_model`), and so does the paper system (its run folders checked by its hook, a
    LUKE checkpoint left to the loader's check; its five components built by its hook)."""
    steps = {"build_variant_model", "check_model_source"}
    own_way = {"models"}  # the loader itself
    for path in TRAINING_MODULES:
        if path.stem not in own_way:
            assert not called_names(path) & steps, path.stem
    modules = ("record", "wikihop", "xh", "xh_paper", "context_graph", "entity")
    for name in (f"training.{module}" for module in modules):
        assert "load_for_task" in called_names(module_path(name)), name


def test_flat_modules_import_without_a_cycle():
    graph = import_graph()
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            cycle = path[path.index(name) :] + [name]
            pytest.fail(f"import cycle: {' -> '.join(cycle)}")
        state[name] = "open"
        for other in sorted(graph.get(name, ())):
            visit(other, [*path, name])
        state[name] = "done"

    for name in sorted(graph):
        visit(name, [])


def test_flat_modules_import_only_lower_or_equal_floors():
    wrong = []
    for name, imports in import_graph().items():
        own = floor_of(name)
        for other in imports:
            theirs = floor_of(other)
            if own is not None and theirs is not None and theirs > own:
                wrong.append(f"{name} (floor {own}) imports {other} (floor {theirs})")
    assert not wrong, "imports pointing up: " + "; ".join(wrong)


def test_the_model_core_sits_on_the_expected_floors():
    """structure -> labels -> each kernel in its own file (sharing `kernel_common_gesa` only) and the Eq. 1
    reference (torch only) -> the attention functions -> modeling, which reaches the kernels through them only."""
    graph = import_graph()
    assert graph["structure_gesa"] == set()  # the bottom floor: torch only
    assert graph["labels_gesa"] == {"structure_gesa"}
    assert graph["attention_reference_gesa"] == set()
    assert graph["kernel_common_gesa"] == set()
    assert graph["kernel_fused_gesa"] == {"kernel_common_gesa", "structure_gesa"}  # computes its own label terms
    for kernel in ("kernel_bias_gesa", "kernel_windowed_gesa", "kernel_flex_gesa"):
        assert graph[kernel] == {"kernel_common_gesa", "labels_gesa", "structure_gesa"}, kernel
    assert graph["attention_gesa"] == {"attention_reference_gesa", "kernel_common_gesa", "labels_gesa", "structure_gesa",
                                       *KERNELS}  # fmt: skip
    assert not {"labels_gesa", "kernel_common_gesa", "attention_reference_gesa", *KERNELS} & graph["modeling_gesa"]
    assert graph["checks_gesa"] == set()
    for module in TENSOR_MODULES:
        top_level = {
            node.names[0].name.split(".")[0] if isinstance(node, ast.Import) else (node.module or "").split(".")[0]
            for node in ast.parse((ROOT / f"{module}.py").read_text()).body
            if isinstance(node, ast.Import | ast.ImportFrom) and not (isinstance(node, ast.ImportFrom) and node.level)
        }
        assert top_level <= {"__future__", "collections", "dataclasses", "sys", "typing", "torch"}, module


@pytest.mark.parametrize("module", TENSOR_MODULES)
def test_kernels_and_label_terms_take_tensors_not_the_calling_module(module):
    """No function below the attention functions takes the calling `module`, and nothing anywhere calls back into
    an attention module's private label methods."""
    tree = ast.parse((ROOT / f"{module}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
            assert "module" not in names, f"{module}.{node.name} takes the calling module"
    for path in FLAT_MODULES:
        source = path.read_text()
        assert "module._label_terms" not in source and "module._gathered_label_scores" not in source, path.name


def test_the_attention_functions_hand_the_kernels_tensors():
    """`attention_gesa` reads the module's label tables itself: no call gets `module`, neither one into a lower floor
    by name nor one through a kernel family's row (`family.kernel(...)`, `family.labels(...)`)."""
    from gesa import attention_gesa, kernel_bias_gesa, kernel_flex_gesa, kernel_fused_gesa, kernel_windowed_gesa

    tree = ast.parse((ROOT / "attention_gesa.py").read_text())
    lower = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in TENSOR_MODULES
        for alias in node.names
    }
    assert {"reference_attention", "fused_attention", "bias_attention", "windowed_attention"} <= lower
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    by_name = [call for call in calls if getattr(call.func, "id", None) in lower]
    by_family = [call for call in calls if ast.unparse(call.func) in ("family.kernel", "family.labels")]
    assert by_name and len(by_family) == 2
    for call in calls:
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        assert not any(isinstance(a, ast.Name) and a.id == "module" for a in arguments), ast.unparse(call)
    # the rows' kernels are the kernel modules' tensor functions
    kernels = {family.kernel for family in attention_gesa.KERNEL_FAMILIES.values()}
    assert kernels == {
        kernel_bias_gesa.bias_attention,
        kernel_fused_gesa.fused_attention,
        kernel_windowed_gesa.windowed_attention,
        kernel_flex_gesa.flex_label_attention,
    }


def test_entity_task_modules_sit_between_the_heads_and_the_scripts():
    assert (
        floor_of("training.entity_metrics") == 9
        and floor_of("records_entity") == 7
        and floor_of("training.entity") == 9
    )
    assert floor_of("modeling_kar_entity") == 6 and floor_of("modeling_ernie_entity") == 6
    graph = import_graph()
    assert "training.entity_metrics" in graph["training.entity"] and "training.registry" in graph["training.entity"]
    assert "training.entity" not in graph["pipeline_entity"]  # the features' inputs come from the processors


def test_every_records_module_reads_through_the_one_input_layer():
    """`inputs_gesa` (the one error class and the file readers) sits on the bottom floor with the standard library
    only; the four records modules import it and define no error class or file decoding of their own."""
    graph = import_graph()
    assert floor_of("inputs_gesa") == 0 and graph["inputs_gesa"] == set()
    tree = ast.parse((ROOT / "inputs_gesa.py").read_text(encoding="utf-8"))
    imported = {
        node.names[0].name.split(".")[0] if isinstance(node, ast.Import) else (node.module or "").split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
    }
    assert imported <= {"__future__", "bz2", "collections", "dataclasses", "json", "pathlib", "typing"}, imported
    for name in ("records_gesa", "records_wikihop", "records_xh", "records_entity", "training.abstracts"):
        assert "inputs_gesa" in graph[name], name
        module = ast.parse(module_path(name).read_text(encoding="utf-8"))
        errors = [node.name for node in ast.walk(module) if isinstance(node, ast.ClassDef) and "Error" in node.name]
        assert not errors, f"{name} defines {errors}: raise inputs_gesa.InputError"
        source = module_path(name).read_text(encoding="utf-8")
        assert "json.load" not in source and ".decode(" not in source and "read_text(" not in source, name


def test_pipelines_and_processors_import_no_registry_script_or_other_variant():
    """What a checkpoint carries follows the imports of its model, processor and pipeline modules: none of them may
    reach the variant registry, a task or training module, and a pipeline of one variant reaches no other variant's
    pipeline, processor or model."""
    graph = import_graph()

    def closure(name: str) -> set[str]:
        seen, todo = set(), [name]
        while todo:
            for other in graph.get(todo.pop(), ()):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        return seen

    shipped = [name for name in graph if name.startswith(("pipeline_", "processing_", "modeling_"))]
    for name in shipped:
        reached = closure(name)
        assert not {other for other in reached if other.startswith("training.")}, name
    others = {
        "pipeline_gesa": {"modeling_kar", "modeling_ernie", "modeling_xh", "modeling_luke_graph", "processing_kb",
                          "processing_xh", "configuration_variants", "configuration_luke_graph"},
        "pipeline_kb": {"modeling_kar", "modeling_ernie", "modeling_xh", "processing_xh"},
        "pipeline_xh": {"modeling_kar", "modeling_ernie", "processing_gesa", "processing_kb"},
        "pipeline_entity": {"processing_kb", "modeling_kar", "modeling_ernie"},
        "pipeline_wikihop": {"modeling_luke_graph", "modeling_kar", "modeling_ernie", "modeling_xh"},
        "modeling_kar_entity": {"modeling_ernie"},
        "modeling_ernie_entity": {"modeling_kar"},
        "modeling_gesa_multiple_choice": {"modeling_luke_graph"},
    }  # fmt: skip
    for name, foreign in others.items():
        assert not closure(name) & foreign, (name, closure(name) & foreign)

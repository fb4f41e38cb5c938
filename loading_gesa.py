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
"""What a checkpoint folder holds: weights checked before transformers reads them, the pipeline code that goes with
the weights, and the tokenizer read without running remote code.

A truncated ``model.safetensors`` (an interrupted save or copy) makes the safetensors library fail with
``incomplete metadata`` and no path; ``weights_problem`` reads the headers only and says which file is damaged and
how. Used by ``GesaPreTrainedModel.from_pretrained`` (every model class of the package) and by the scripts' resume
checks; ``checkpoint_weight_names`` lists the parameters a folder holds from the same headers. ``load_tokenizer`` reads a checkpoint's tokenizer without running (or asking to run) its remote code;
``forget_remote_head_mapping`` keeps one checkpoint's head from standing in for another's in later ``Auto*`` loads.

Code files: ``PreTrainedModel.save_pretrained`` copies the model's module and its relative imports (transformers'
``custom_object_save``), ``ProcessorMixin.save_pretrained`` the processor's; ``checkpoint_pipeline`` is the one place
that decides the rest: the head names its pipeline as data (``PipelineSpec``: the modeling files never import a
pipeline, which sits above them), and the checkpoint gets that pipeline's module, every sibling it imports relatively
and the ``custom_pipelines`` entry naming it; nothing else.

Knowledge files: a KnowBERT-KAR or ERNIE checkpoint also carries its own KB's alias table and entity list
(``KNOWLEDGE_FILES``, ``save_knowledge_files``; the vectors are in the weights), read back by ``records_kb``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import transformers
from transformers import AutoTokenizer, PretrainedConfig, PreTrainedTokenizerBase
from transformers.dynamic_module_utils import get_relative_import_files
from transformers.utils import logging

logger = logging.get_logger(__name__)

WEIGHTS_NAMES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
_MAX_HEADER = 1 << 28
# a KnowBERT-KAR / ERNIE checkpoint's own knowledge base, beside its weights (which hold the KB's vectors): the alias
# table it was trained with and its entity list (the KB's rows in order), in the formats --kb_alias_table reads
KB_ALIAS_TABLE_FILE = "kb_alias_table.tsv"
KB_ENTITIES_FILE = "kb_entities.txt"
KNOWLEDGE_FILES = (KB_ALIAS_TABLE_FILE, KB_ENTITIES_FILE)


def safetensors_problem(path: Path) -> str | None:
    """What is wrong with a ``.safetensors`` file (header unreadable, data shorter than its header says), or ``None``.
    Reads the header only."""
    try:
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            raw = handle.read(size) if 0 < size < _MAX_HEADER else b""
            if 0 < size < _MAX_HEADER and len(raw) < size:
                return f"{path} is truncated (its header alone needs {size + 8} bytes; an interrupted save or copy?)"
            header = json.loads(raw) if raw else None
    except (OSError, ValueError, UnicodeDecodeError) as error:
        return f"{path} cannot be read ({error})"
    if not isinstance(header, dict):
        return f"{path} is not a safetensors file (no readable header)"
    try:
        ends = [int(entry["data_offsets"][1]) for name, entry in header.items() if name != "__metadata__"]
    except (KeyError, IndexError, TypeError, ValueError):
        return f"{path} has a damaged header (a tensor entry without data_offsets)"
    expected = 8 + size + max(ends, default=0)
    actual = path.stat().st_size
    if actual < expected:
        return f"{path} is truncated ({actual} of {expected} bytes; an interrupted save or copy?)"
    return None


def weights_problem(folder: Path) -> str | None:
    """What makes the weights of a checkpoint folder unloadable (missing, truncated, a missing shard), or ``None``.
    A system of models saved as one folder (its ``config.json`` names ``components``: the paper's HotpotQA system)
    keeps its weights in the components' sub-folders: the first damaged one is named."""
    components = _components_of(folder)
    if components:
        return next((problem for name in components if (problem := component_problem(folder, name))), None)
    present = [name for name in WEIGHTS_NAMES if (folder / name).is_file()]
    if not present:
        return f"{folder} has no weights file ({', '.join(WEIGHTS_NAMES[::2])})"
    name = present[0]
    if name == "model.safetensors":
        return safetensors_problem(folder / name)
    if name.endswith(".index.json"):
        try:
            shards = sorted(set(json.loads((folder / name).read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            return f"{folder / name} cannot be read ({error})"
        for shard in shards:
            if not (folder / shard).is_file():
                return f"{folder / name} names the shard {shard}, which is missing"
            if shard.endswith(".safetensors") and (problem := safetensors_problem(folder / shard)):
                return problem
    return None


def component_problem(folder: Path, name: str) -> str | None:
    """What makes the component ``name`` of a system checkpoint ``folder`` unloadable (``its <name> model: ...``: no
    ``config.json``, or its weights' ``weights_problem``), or ``None``."""
    component = Path(folder) / name
    if not (component / "config.json").is_file():
        return f"its {name} model has no config.json ({component}/config.json is missing)"
    problem = weights_problem(component)
    return None if problem is None else f"its {name} model: {problem}"


def checkpoint_weight_names(folder: Path) -> set[str] | None:
    """The parameter names a local checkpoint folder's safetensors weights hold (read from the headers alone), or
    ``None`` where they cannot be read so cheaply (a Hub id, ``pytorch_model.bin``, a damaged file)."""
    folder = Path(folder)
    files = [folder / "model.safetensors"] if (folder / "model.safetensors").is_file() else []
    index = folder / "model.safetensors.index.json"
    if not files and index.is_file():
        try:
            return set(json.loads(index.read_text(encoding="utf-8"))["weight_map"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
    if not files or safetensors_problem(files[0]) is not None:
        return None
    with files[0].open("rb") as handle:
        size = int.from_bytes(handle.read(8), "little")
        return {name for name in json.loads(handle.read(size)) if name != "__metadata__"}


def _components_of(folder: Path) -> list[str]:
    """The sub-folder names a system checkpoint's ``config.json`` lists as ``components`` (none for a model)."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    components = config.get("components") if isinstance(config, dict) else None
    return [str(name) for name in components] if isinstance(components, dict) else []


def refuse_damaged_weights(name_or_path: str | os.PathLike, subfolder: str = "") -> None:
    """``OSError`` naming the damaged weights file of a local checkpoint folder and the fix; nothing for a Hub id
    (the download is checked by ``huggingface_hub``) or a folder without weights (transformers names that case)."""
    folder = Path(name_or_path) / subfolder
    if not folder.is_dir() or not any((folder / name).is_file() for name in WEIGHTS_NAMES):
        return
    problem = weights_problem(folder)
    if problem is not None:
        raise OSError(f"{problem}. Re-save the model with save_pretrained, or copy the checkpoint again.")


def load_tokenizer(
    name_or_path: str | os.PathLike, config: dict[str, Any] | None = None, **kwargs: Any
) -> PreTrainedTokenizerBase:
    """``AutoTokenizer.from_pretrained(name_or_path, **kwargs)`` for a checkpoint of this package (or LUKE's).

    ``AutoTokenizer`` reads the folder's ``config.json`` when given no config, and a GESA/variant config names remote
    code, so it would ask whether to run that code just to pick the tokenizer class (``tokenizer_config.json`` names
    it anyway). The config is handed over as a plain ``PretrainedConfig`` instead (``config``: its dict when the caller
    has read it). Registering the package's config classes with ``AutoConfig`` would do the same but changes every
    later remote-code load in the process: transformers then maps that config class to the first model class loaded
    for it, whatever head a later checkpoint holds.
    """
    hub = {key: kwargs[key] for key in ("cache_dir", "revision", "token") if kwargs.get(key) is not None}
    if config is None:
        try:
            config, _ = PretrainedConfig.get_config_dict(name_or_path, **hub)
        except OSError:  # a tokenizer folder without config.json: nothing to hand over
            return AutoTokenizer.from_pretrained(name_or_path, **kwargs)
    return AutoTokenizer.from_pretrained(name_or_path, config=PretrainedConfig.from_dict(dict(config)), **kwargs)


def forget_remote_head_mapping(model_class: type, config_class: type) -> None:
    """Undo the mapping ``AutoModelFor*.from_pretrained(..., trust_remote_code=True)`` made from ``config_class`` (the
    checkpoint's remote config class) to ``model_class`` (the head it loaded), before the head loads.

    transformers keeps that mapping for the process and prefers it to a later checkpoint's own ``auto_map``. Local
    checkpoints whose folders share a name (``.../typing/checkpoint-500`` and ``.../relation/checkpoint-500``) and whose
    code is the same share one remote module, hence one config class: the second checkpoint would load as the first's
    head (a size-mismatch error, or, with equal sizes, the wrong head). Without the mapping, each load reads its
    checkpoint's ``auto_map``. A mapping the user registered (a class outside ``transformers_modules``) is kept.
    """
    auto_name = getattr(model_class, "_auto_class", None)
    if not auto_name or not model_class.__module__.startswith("transformers_modules"):
        return
    mapping = getattr(getattr(transformers, str(auto_name), None), "_model_mapping", None)
    registered = getattr(mapping, "_extra_content", None)
    if isinstance(registered, dict) and registered.get(config_class) is model_class:
        del registered[config_class]


@dataclass(frozen=True)
class PipelineSpec:
    """The pipeline a head's checkpoints answer through, named as data: ``pipeline(model=dir,
    trust_remote_code=True)`` builds ``impl`` for ``task``.

    Args:
        task: the pipeline task (``"entity-cloze-qa"``, ...), written as the key of ``config.custom_pipelines``.
        impl: ``"module.Class"``, ``module`` a flat module of this package beside the head's own.
        auto_class: the ``Auto*`` class that loads the head for the pipeline; default: the head's own
            (``register_for_auto_class``).
    """

    task: str
    impl: str
    auto_class: str | None = None

    @property
    def module(self) -> str:
        return self.impl.rpartition(".")[0]


def _pipeline_module_file(model: Any, module: str) -> Path | None:
    """``module``'s file beside the model's code, or else in the folder the model was loaded from (a model loaded
    with ``trust_remote_code`` runs a copy of its modeling chain only); ``None`` when neither has it."""
    folders = [Path(sys.modules[type(model).__module__].__file__).parent]
    source = getattr(model.config, "_name_or_path", None)
    if source and Path(source).is_dir():
        folders.append(Path(source))
    for folder in folders:
        if (folder / f"{module}.py").is_file():
            return folder / f"{module}.py"
    return None


def checkpoint_pipeline(model: Any) -> tuple[dict[str, dict[str, Any]] | None, list[Path]]:
    """What a checkpoint of ``model`` carries for its pipeline: ``config.custom_pipelines`` (``None``: the head has
    none) and the code files to copy next to the weights, the pipeline's module and every module it imports
    relatively, at any depth (a head whose pipeline code cannot be found gets none, with a warning)."""
    spec: PipelineSpec | None = getattr(type(model), "pipeline", None)
    if spec is None:
        return None, []
    source = _pipeline_module_file(model, spec.module)
    if source is None:
        logger.warning(
            f"{type(model).__name__}: {spec.module}.py is not beside its code, so the checkpoint will not answer "
            f"through pipeline(model=..., trust_remote_code=True); save it from the installed gesa package"
        )
        return None, []
    auto_class = spec.auto_class or getattr(type(model), "_auto_class", None) or "AutoModel"
    custom = {spec.task: {"impl": spec.impl, "pt": [auto_class]}}
    return custom, [source, *map(Path, get_relative_import_files(str(source)))]


def save_pretrained_with_pipeline(
    model: Any, save: Any, save_directory: str | os.PathLike, *args: Any, **kwargs: Any
) -> None:
    """``save(save_directory, *args, **kwargs)`` (``PreTrainedModel.save_pretrained``: weights, config, its code)
    with the head's pipeline (``checkpoint_pipeline``): ``config.custom_pipelines`` names exactly that pipeline (an
    entry inherited from another checkpoint's config would name code this folder does not carry), and its code files
    are copied beside the model's by the main process."""
    custom, files = checkpoint_pipeline(model)
    if custom is None:
        model.config.__dict__.pop("custom_pipelines", None)
    else:
        model.config.custom_pipelines = custom
    save(save_directory, *args, **kwargs)
    if kwargs.get("is_main_process", args[0] if args else True):
        for path in files:
            target = Path(save_directory) / path.name
            if not (target.exists() and target.resolve() == path.resolve()):  # saved back where it was loaded from
                shutil.copyfile(path, target)
        save_knowledge_files(model, save_directory)


def knowledge_file(source: str | os.PathLike | None, name: str) -> Path | None:
    """``name`` (one of ``KNOWLEDGE_FILES``) beside a checkpoint's weights: in its folder, or in its Hub repo (fetched
    into the Hub cache as ``from_pretrained`` fetches the weights); ``None`` when the checkpoint carries no such file
    (or the Hub cannot be reached: the caller then refuses a user-KB model by name)."""
    if source is None:
        return None
    if os.path.isdir(source):
        path = Path(source) / name
        return path if path.is_file() else None
    from transformers.utils import cached_file

    try:
        found = cached_file(str(source), name, _raise_exceptions_for_missing_entries=False,
                            _raise_exceptions_for_connection_errors=False)  # fmt: skip
    except (OSError, ValueError):  # not a repo id, a gated or missing repo
        return None
    return Path(found) if found else None


def save_knowledge_files(model: Any, save_directory: str | os.PathLike) -> None:
    """A KAR/ERNIE model's own KB files (``KNOWLEDGE_FILES``) beside its weights: its ``knowledge_files`` (the run's
    ``--kb_alias_table`` / ``--kb_entity_vectors``, ``records_kb.KnowledgeBaseFiles``) written, else those of the
    folder it was loaded from copied, so the checkpoint reloads and opens its pipeline with the KB it was trained
    with. Models that read no knowledge inputs carry none."""
    if getattr(model, "knowledge_inputs", None) is None:
        return
    target = Path(save_directory)
    source = getattr(model.config, "_name_or_path", None)
    if source and Path(source).is_dir() and Path(source).resolve() == target.resolve():
        return  # saved back where it was loaded from: its files are there
    for name in KNOWLEDGE_FILES:  # a file of an earlier model in the folder must not describe this one
        (target / name).unlink(missing_ok=True)
    files = getattr(model, "knowledge_files", None)
    if files is not None:
        files.save(target)
    else:  # loaded from a folder or a Hub repo that carries them
        for name in KNOWLEDGE_FILES:
            if (found := knowledge_file(source, name)) is not None:
                shutil.copyfile(found, target / name)


__all__ = [
    "KB_ALIAS_TABLE_FILE",
    "KB_ENTITIES_FILE",
    "KNOWLEDGE_FILES",
    "knowledge_file",
    "PipelineSpec",
    "WEIGHTS_NAMES",
    "checkpoint_pipeline",
    "forget_remote_head_mapping",
    "load_tokenizer",
    "checkpoint_weight_names",
    "refuse_damaged_weights",
    "safetensors_problem",
    "save_knowledge_files",
    "save_pretrained_with_pipeline",
    "weights_problem",
]

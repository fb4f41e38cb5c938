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
"""The model a run starts from, for every task: ``--model_name_or_path`` read and matched against the variant's head
before any weight loads (``check_model_source``), then built (``build_variant_model``: a LUKE checkpoint converted
with ``from_luke_pretrained``, or a checkpoint of the head itself); the checkpoint a run resumes must be of the run's
model (``check_resume_config``). Every problem is one ``ScriptArgumentError`` naming the flag and the fix.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from transformers import LukeConfig, PreTrainedModel

from .loading_gesa import load_tokenizer
from .registry_gesa import VARIANTS, VariantSpec
from .training_gesa import ScriptArgumentError, checkpoint_config


def hub_kwargs(model_args: Any) -> dict[str, Any]:
    """``cache_dir``, ``revision`` and ``token`` of the model flags, for every download of the run."""
    return {
        "cache_dir": getattr(model_args, "cache_dir", None),
        "revision": getattr(model_args, "model_revision", None) or "main",
        "token": getattr(model_args, "token", None),
    }


def check_model_source(path: str, spec: VariantSpec, task_flags: str, **hub: Any) -> dict[str, Any]:
    """The config of ``--model_name_or_path`` as a dict, checked: a LUKE checkpoint (to convert), a checkpoint of
    ``spec``'s head (same ``model_type`` and architecture) or of the variant's pre-training head (its encoder under a
    new head: ``starts_new_head``); ``task_flags`` (``--task wikihop --variant gesa``) names the run in the error. A
    user-KB KAR/ERNIE checkpoint without its KB files is refused (``VariantSpec.check_knowledge_base``)."""
    head = spec.model_class
    own_type = spec.config_class.model_type
    config = checkpoint_config(path, f"a LUKE or {own_type!r}", **hub)
    check_config_fields(path, config)
    model_type = config.get("model_type")
    if model_type == "luke":
        check_config_values(path, config, LukeConfig)
        return config
    architectures = config.get("architectures") or [head.__name__]
    fits = architectures[0] == head.__name__ or spec.is_pretraining_checkpoint(config)  # a head, or its pre-training
    if model_type != own_type or not isinstance(architectures, list) or not fits:
        known = sorted({"luke", *(other.config_class.model_type for other in VARIANTS.values())})
        hint = " (a checkpoint of another variant or task: pass the --variant/--task it was trained with)"
        pretrained = f" (or {spec.pretraining_head})" if spec.pretraining_head else ""
        raise ScriptArgumentError(
            f"--model_name_or_path {path} holds a {model_type!r} model ({architectures}), but {task_flags} needs a LUKE "
            f"checkpoint to convert or a {own_type!r} {head.__name__}{pretrained}{hint if model_type in known else ''}"
        )
    check_config_values(path, config, spec.config_class)
    try:
        spec.check_knowledge_base(config, source=f"--model_name_or_path {path}", folder=path)
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None
    return config


def starts_new_head(config: dict[str, Any], spec: VariantSpec) -> bool:
    """Whether the run's head starts fresh on ``config``'s checkpoint: LUKE converted, or the variant's pre-training
    checkpoint (``VariantSpec.is_pretraining_checkpoint``); then the processor's added tokens take their rows from
    the source tokens (``init_added_word_embeddings``)."""
    return config.get("model_type") == "luke" or spec.is_pretraining_checkpoint(config)


def check_config_fields(path: str, config: Any) -> None:
    """What every checkpoint's ``config.json`` holds: a JSON object naming its ``model_type`` and, where it names
    them, a non-empty list of architectures (``ScriptArgumentError`` naming the field and the fix)."""
    where = f"--model_name_or_path {path}: its config.json"
    if not isinstance(config, dict):
        raise ScriptArgumentError(f"{where} holds a JSON {type(config).__name__}, not an object; save the model again")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise ScriptArgumentError(
            f"{where} names no model_type (got {model_type!r}): not a transformers checkpoint, or a damaged one; "
            "save the model again, or give a LUKE checkpoint"
        )
    architectures = config.get("architectures", None)
    if architectures is not None and (
        not isinstance(architectures, list) or not architectures or not all(isinstance(a, str) for a in architectures)
    ):
        raise ScriptArgumentError(
            f"{where} has architectures={architectures!r}: it must name the head class (e.g. "
            '["GesaForEntitySpanQA"]); save the model again'
        )


def check_config_values(path: str, config: dict[str, Any], config_class: type) -> None:
    """The config's values must build ``config_class`` (typed fields: ``hidden_size`` a number, ...), checked before
    any weight loads: ``ScriptArgumentError`` with the validator's reason."""
    try:
        config_class.from_dict({key: value for key, value in config.items() if key != "transformers_version"})
    except Exception as error:  # typed configs raise StrictDataclassFieldValidationError, others ValueError/TypeError
        reason = " ".join(line.strip() for line in str(error).strip().splitlines()[:2]) or type(error).__name__
        raise ScriptArgumentError(
            f"--model_name_or_path {path}: its config.json is not a valid {config_class.__name__} ({reason}); save "
            "the model again"
        ) from None


def load_run_tokenizer(model_args: Any, path: str, config: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """The run's tokenizer: ``--tokenizer_name`` when given, else the checkpoint's own (``path``; ``config``: its
    config dict, read already). One that cannot be loaded (missing, cut short, not a tokenizer) is one
    ``ScriptArgumentError`` naming the flag it came from."""
    source = model_args.tokenizer_name or path
    hub = {**hub_kwargs(model_args), **kwargs}
    try:
        return load_tokenizer(source, config if source == path else None, **hub)
    except Exception as error:  # OSError, ValueError, and the tokenizers library's bare Exception on a cut file
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if model_args.tokenizer_name:
            raise ScriptArgumentError(
                f"--tokenizer_name {source}: cannot load a tokenizer ({reason}); give a tokenizer folder or Hub id"
            ) from None
        raise ScriptArgumentError(
            f"--model_name_or_path {source}: cannot load its tokenizer ({reason}); its tokenizer files are missing or "
            "damaged: save them again, or give --tokenizer_name"
        ) from None


def build_variant_model(
    spec: VariantSpec,
    path: str,
    config: dict[str, Any],
    model_args: Any,
    entity_rows: list[int] | None = None,
    overrides: dict[str, Any] | None = None,
    checkpoint_overrides: dict[str, Any] | None = None,
) -> PreTrainedModel:
    """``spec``'s head from ``path``: a LUKE checkpoint converted (``entity_rows``: LUKE's rows kept; ``overrides``:
    config values such as ``ablation``), or a checkpoint of the head loaded as it was saved, then given
    ``checkpoint_overrides`` (values a run may change, e.g. ``attention_window``; ``ablation`` rebuilds the config so
    that its preset applies)."""
    hub = hub_kwargs(model_args)
    overrides = dict(overrides or {})
    if config.get("model_type") == "luke":
        return spec.from_luke(
            path,
            keep_entity_aware_queries=getattr(model_args, "keep_entity_aware_queries", False),
            entity_rows=entity_rows,
            hub=hub,
            **overrides,
        )
    loaded_config = spec.config_class.from_pretrained(path, **hub)
    ablation = overrides.get("ablation")
    if ablation is not None and ablation != getattr(loaded_config, "ablation", None):
        loaded_config = spec.config_class(**{**loaded_config.to_dict(), "ablation": ablation})
    for name, value in (checkpoint_overrides or {}).items():
        setattr(loaded_config, name, value)
    return spec.from_checkpoint(path, config=loaded_config, hub=hub)


def position_limit(spec: VariantSpec, config: dict[str, Any], overrides: dict[str, Any] | None = None) -> int | None:
    """The most words one sequence of the model built from ``config`` (a LUKE checkpoint's or the head's own, with the
    run's ``overrides``) can hold: ``max_position_embeddings - pad_token_id - 1`` when that model reads absolute
    positions (LUKE's backbone, XH's default), ``None`` when it reads relative labels only (no limit). Decided from
    the config alone, before any weight loads."""
    overrides = dict(overrides or {})
    try:
        if config.get("model_type") == "luke" or overrides.get("ablation") is not None:
            layers = int(config.get("num_hidden_layers") or 12)
            own = {} if config.get("model_type") == "luke" else config  # a LUKE config's fields are not the head's
            known = {item.name for item in dataclasses.fields(spec.config_class)}
            fields = {k: v for k, v in {**own, "num_hidden_layers": layers, **spec._overrides(layers, overrides)}.items()
                      if k in known}  # fmt: skip
            absolute = spec.config_class(**fields).use_absolute_position_embeddings
        else:
            absolute = bool(config.get("use_absolute_position_embeddings"))
    except (TypeError, ValueError):  # a config the build itself will refuse, naming the field
        return None
    if not absolute:
        return None
    return int(config.get("max_position_embeddings") or 0) - int(config.get("pad_token_id") or 0) - 1


def check_max_seq_length(length: int | None, limit: int | None, path: str, what: str = "words per sequence") -> None:
    """``--max_seq_length`` against the checkpoint's absolute positions (``position_limit``), before any weight loads:
    one ``ScriptArgumentError`` naming the flag, the checkpoint's limit and the fix."""
    if length is None or limit is None or length <= limit:
        return
    raise ScriptArgumentError(
        f"--max_seq_length {length} ({what}) is more than --model_name_or_path {path} holds: its absolute positions "
        f"reach {limit} words (max_position_embeddings - pad_token_id - 1); give --max_seq_length {limit} or less"
    )


def check_resume_config(checkpoint: str, spec: VariantSpec, variant: str, ablation: str | None) -> None:
    """The checkpoint's config must be of the run's model family and ablation (``ScriptArgumentError`` before anything
    loads); ``check_resume_fits`` compares the weights themselves once the model is built."""
    config_path = Path(checkpoint) / "config.json"
    if not config_path.is_file():
        return
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ScriptArgumentError(
            f"cannot resume from {checkpoint}: its config.json cannot be read ({error})"
        ) from None
    if not isinstance(config, dict):
        raise ScriptArgumentError(f"cannot resume from {checkpoint}: its config.json is not a JSON object")
    expected_type = spec.config_class.model_type
    ablation = spec.config_overrides.get("ablation", ablation)
    problems = []
    if config.get("model_type") != expected_type:
        problems.append(f"model_type {config.get('model_type')!r}, this run {expected_type!r} (--variant {variant})")
    if ablation is not None and config.get("ablation") != ablation:
        problems.append(f"ablation {config.get('ablation')!r}, this run {ablation!r}")
    architectures = config.get("architectures") or []
    if not problems and architectures and architectures[0] != spec.model_class.__name__:
        problems.append(f"head {architectures[0]}, this run {spec.model_class.__name__}")
    if problems:
        raise ScriptArgumentError(
            f"cannot resume from {checkpoint}: it was saved by another model ({'; '.join(problems)}). Resume with "
            "the run's own --task/--variant/--ablation, or give a new --output_dir"
        )


__all__ = [
    "build_variant_model",
    "check_config_fields",
    "check_config_values",
    "check_max_seq_length",
    "check_model_source",
    "check_resume_config",
    "hub_kwargs",
    "load_run_tokenizer",
    "position_limit",
    "starts_new_head",
]

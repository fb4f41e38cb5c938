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

``load_for_task`` is the one loading sequence of the tasks: a task declares what differs (``ModelRecipe``: the
variant, its processor and settings, the entity rows kept, the position rule, whether KB files apply; where the data
decides the head, its own source check and build as hooks) and one call returns the checked model, its processor and
tokenizer, going down the floors and coming back once.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from transformers import LukeConfig, PreTrainedModel

from ..inputs_gesa import InputError
from ..loading_gesa import KB_ENTITIES_FILE, load_tokenizer
from ..modeling_gesa_multiple_choice import ChoiceHeadMismatch, extend_position_embeddings
from ..processing_base_gesa import load_processor_settings
from ..records_kb import KnowledgeBaseFiles, checkpoint_knowledge_files, load_knowledge_files
from .machinery import ScriptArgumentError, apply_saved_settings, checkpoint_config
from .registry import VARIANTS, VariantSpec, head_run, variant_of
from .tokenizer import shrink_entity_vocab, special_entity_rows


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
    own_type = spec.config_class.model_type
    config = checkpoint_config(path, f"a LUKE or {own_type!r}", **hub)
    check_config_fields(path, config)
    if config.get("model_type") == "luke":
        check_config_values(path, config, LukeConfig)
        return config
    check_checkpoint_head(path, config, spec, task_flags)  # a head of the run's task and variant, or its pre-training
    check_config_values(path, config, spec.config_class)
    try:
        spec.check_knowledge_base(config, source=f"--model_name_or_path {path}", folder=path)
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None
    return config


def check_checkpoint_head(
    path: str, config: Mapping[str, Any], spec: VariantSpec, run: str, also: tuple[str, ...] = ()
) -> None:
    """A trained checkpoint (not LUKE) must hold the run's head: ``spec``'s ``model_type`` and head class, or the
    variant's pre-training head (``VariantSpec.is_pretraining_checkpoint``), or one of ``also`` (class names). Another
    one is one ``ScriptArgumentError`` saying what differs, the task (the head: ``registry.HEAD_RUNS`` names the run
    that trained it) and/or the variant (``model_type``), and the fix; ``run`` names this run (``--task ner --variant
    gesa``)."""
    head, own_type = spec.model_class.__name__, spec.config_class.model_type
    model_type = config.get("model_type")
    architectures = config.get("architectures") or [head]
    architecture = architectures[0] if isinstance(architectures, list) and architectures else None
    fits = architecture == head or architecture in also or spec.is_pretraining_checkpoint(config)
    if model_type == own_type and fits:
        return
    pretrained = f" (or {spec.pretraining_head})" if spec.pretraining_head else ""
    needs = f"{run} needs a LUKE checkpoint to convert or a {own_type!r} {head}{pretrained}"
    their_variant = variant_of(model_type, config.get("ablation"))
    if their_variant is None:  # not a model of this project
        raise ScriptArgumentError(
            f"--model_name_or_path {path} holds a {model_type!r} model ({architectures}), but {needs}"
        )
    theirs, ours = head_run(architecture), head_run(head)
    other_task = theirs != ours and architecture not in also and not spec.is_pretraining_checkpoint(config)
    other_variant = model_type != own_type
    trained = f", trained for {theirs}" if theirs else ""
    title = (ours or "this task").split(" (")[0]
    if other_task:
        where = theirs.split(" (")[-1].rstrip(")") if theirs else "the run that trained it"
        variant = f" --variant {their_variant}" if other_variant else ""
        what = "the task and the variant differ" if other_variant else "the task differs (its head)"
        fix = f"{what}: use it with {where}{variant}, or give {run} a LUKE checkpoint to train a new {title} head"
    else:
        fix = f"the variant differs: pass --variant {their_variant}, or give a LUKE checkpoint to convert"
    raise ScriptArgumentError(
        f"--model_name_or_path {path} holds a {architecture} (--variant {their_variant}{trained}), but {needs}; {fix}"
    )


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
    positions = None
    if config.get("model_type") == "luke":  # a conversion that sets its own positions (the long variant grows LUKE's)
        positions = overrides.get("max_position_embeddings") or spec.config_overrides.get("max_position_embeddings")
    return int(positions or config.get("max_position_embeddings") or 0) - int(config.get("pad_token_id") or 0) - 1


def check_max_seq_length(length: int | None, limit: int | None, path: str, what: str = "words per sequence") -> None:
    """``--max_seq_length`` against the checkpoint's absolute positions (``position_limit``), before any weight loads:
    one ``ScriptArgumentError`` naming the flag, the checkpoint's limit and the fix."""
    if length is None or limit is None or length <= limit:
        return
    raise ScriptArgumentError(
        f"--max_seq_length {length} ({what}) is more than --model_name_or_path {path} holds: its absolute positions "
        f"reach {limit} words (max_position_embeddings - pad_token_id - 1); give --max_seq_length {limit} or less"
    )


def resolve_max_seq_length(
    data_args: Any, limit: int | None, path: str, what: str = "words per sequence", default: int | None = None
) -> None:
    """``--max_seq_length`` checked against the checkpoint's absolute positions (``limit``, ``position_limit``;
    ``None``: relative positions, no limit), or when left out and the run has a ``default`` (XH's node length), that
    default, fewer where the checkpoint's positions hold fewer."""
    check_max_seq_length(data_args.max_seq_length, limit, path, what)
    if data_args.max_seq_length is None and default is not None:
        data_args.max_seq_length = default if limit is None else min(default, limit)


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


# ----------------------------------------------------------------------------------------------- the one loader


class TaskModel(NamedTuple):
    """What ``load_for_task`` returns: the checked model, its processor and its tokenizer."""

    model: PreTrainedModel
    processor: Any
    tokenizer: Any


@dataclass
class ModelRecipe:
    """What one task's model differs in; ``load_for_task`` runs the one sequence with it.

    Args:
        spec: the variant (``training.registry.VARIANTS``; its head is the task's).
        run: the run in error messages (``--task wikihop --variant gesa``).
        processor: the processor class, built as ``processor(tokenizer, **processor_settings)`` (a ``ValueError`` is
            the run's error) before any weight loads, so that its settings are checked; or a function ``(tokenizer,
            checkpoint config) -> processor`` with ``processor_settings`` left ``None``.
        processor_settings: the class's settings from the run's flags.
        checkpoint_settings: the processor settings a trained checkpoint's ``processor_config.json`` fixes (they
            replace the flags': WikiHop's graph rules).
        model_settings: the processor settings the built model's config decides (``entity_graph``): the processor
            is built again with them once the model is built.
        needs_path: the error when ``--model_name_or_path`` is missing.
        overrides: config values of the model (ablation, attention window, ...): all of them for a LUKE conversion,
            the ablation for a trained checkpoint (``build_variant_model``).
        checkpoint_overrides: values a run may change on a trained checkpoint (``attention_window``).
        configure: ``checkpoint config -> more overrides``, the head's own checks of the checkpoint (WikiHop's choice
            head, the context graph's rules), before any weight loads.
        saved_settings: a trained checkpoint's ``processor_config.json`` settings that become this run's defaults
            (saved name -> data argument; a flag given wins), said with ``settings_note`` as the line's start.
        positions: what ``--max_seq_length`` counts, checked against the checkpoint's absolute positions before any
            weight loads (``None``: not checked here); ``default_length``: its value when left out (XH's node length,
            fewer where the positions hold fewer).
        extend_positions: grow the model's absolute positions to ``--max_seq_length`` instead (WikiHop's long
            sequences).
        entity_rows: how many of LUKE's special entity rows a converted model keeps (``None``: the whole table, the
            KB of KAR/ERNIE); ``shrink_tokenizer``: the tokenizer's entity vocabulary shrinks with them (ReCoRD).
        check_vocab: the tokenizer's words must match the checkpoint's ``vocab_size`` (with the processor's added
            tokens for a trained checkpoint).
        init_added_words: a new head's added word tokens start from their source tokens' rows.
        processor_for_model: ``(model, tokenizer, config) -> processor``, the processor once the model is built (its
            config decides the features: the entity graph, the positions).
        knowledge_files: the ``--kb_*`` files (or a KAR/ERNIE checkpoint's own) are attached.
        check_source: ``(path, hub) -> checkpoint config``, the task's own check of ``--model_name_or_path`` in place
            of ``check_model_source`` (the entity tasks: a LUKE checkpoint, a fine-tuned head or a pre-training one);
            ``None`` leaves the source to ``check_model_source`` after the hook's own checks (the paper system: its
            run folders are its own, a LUKE checkpoint the common check's).
        build_model: ``(checkpoint config, tokenizer) -> (model, tokenizer)``, the task's head built in place of
            ``build_variant_model`` when the data decides it (the entity tasks: the training split's labels, the
            pre-training entity vocabulary, a pre-training checkpoint's encoder under a new task head) or the model
            is not one head (the paper system's five components); it may check the run's data files first, before
            any weight loads.
    """

    spec: VariantSpec
    run: str
    processor: type | Callable[[Any, dict[str, Any]], Any] | None
    processor_settings: dict[str, Any] | None = None
    checkpoint_settings: tuple[str, ...] = ()
    model_settings: tuple[str, ...] = ()
    needs_path: str = "--model_name_or_path is needed: a LUKE checkpoint, or a checkpoint of this task"
    overrides: dict[str, Any] = field(default_factory=dict)
    checkpoint_overrides: dict[str, Any] | None = None
    configure: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    saved_settings: Mapping[str, str] | None = None
    settings_note: str = "processor settings: "
    positions: str | None = None
    default_length: int | None = None
    extend_positions: bool = False
    entity_rows: int | None = 3
    shrink_tokenizer: bool = False
    check_vocab: bool = False
    init_added_words: bool = False
    processor_for_model: Callable[[PreTrainedModel, Any, dict[str, Any]], Any] | None = None
    knowledge_files: bool = False
    check_source: Callable[[str, dict[str, Any]], dict[str, Any] | None] | None = None
    build_model: Callable[[dict[str, Any], Any], tuple[PreTrainedModel, Any]] | None = None


def load_for_task(recipe: ModelRecipe, model_args: Any, data_args: Any, explicit: set[str] | None = None) -> TaskModel:
    """The model ``--model_name_or_path`` gives for ``recipe``'s task, its processor and tokenizer, every check done
    before any weight loads: the source (``check_model_source``, the head's own ``configure``), the checkpoint's saved
    settings, the positions, the tokenizer and its vocabulary, the processor's settings; then the model converted
    from LUKE (its special entity rows kept) or reloaded, its added word rows, its positions and KB files."""
    path = model_args.model_name_or_path
    if path is None:
        raise ScriptArgumentError(recipe.needs_path)
    spec = recipe.spec
    hub = hub_kwargs(model_args)
    config = recipe.check_source(path, hub) if recipe.check_source is not None else None
    if config is None:  # no hook, or the hook leaves a LUKE checkpoint or a head's own to the common check
        config = check_model_source(path, spec, recipe.run, **hub)
    luke = config.get("model_type") == "luke"
    overrides = {**recipe.overrides, **(recipe.configure(config) if recipe.configure is not None else {})}
    if not luke and recipe.saved_settings is not None:
        use_saved_settings(path, recipe.saved_settings, data_args, explicit, recipe.settings_note)
    if recipe.positions is not None:
        limit = position_limit(spec, config, overrides)
        resolve_max_seq_length(data_args, limit, path, recipe.positions, recipe.default_length)
    tokenizer_source = model_args.tokenizer_name or path
    tokenizer = load_run_tokenizer(model_args, path, config)
    fresh = starts_new_head(config, spec)  # LUKE converted, or the variant's pre-training checkpoint
    if recipe.check_vocab and fresh:
        check_vocab_size(tokenizer, config, path, tokenizer_source, added="")
    rows = None
    if luke and recipe.entity_rows is not None:
        if recipe.shrink_tokenizer:
            rows = shrink_entity_vocab(tokenizer, tokenizer_source)
        else:
            rows = special_entity_rows(tokenizer, "the LUKE checkpoint", count=recipe.entity_rows)
    settings = dict(recipe.processor_settings or {})
    if not luke and recipe.checkpoint_settings:  # a trained checkpoint's own (its graph is fixed)
        saved, _ = load_processor_settings(path, **hub)
        settings.update({name: saved[name] for name in recipe.checkpoint_settings if name in saved})
    processor = build_processor(recipe, tokenizer, config, settings)
    if recipe.check_vocab and not fresh:
        check_vocab_size(tokenizer, config, path, tokenizer_source, added=" (with [HL] [PLC] [ENT])")
    if recipe.build_model is not None:  # the head the task's data decides, with the tokenizer it reads
        model, tokenizer = recipe.build_model(config, tokenizer)
    else:
        try:
            model = build_variant_model(spec, path, config, model_args, rows, overrides, recipe.checkpoint_overrides)
        except ChoiceHeadMismatch as error:  # a Hub checkpoint's WikiHop head, found while loading
            raise ScriptArgumentError(str(error)) from None
    if recipe.init_added_words and fresh:
        model.init_added_word_embeddings(processor.added_token_sources())
    if recipe.extend_positions:  # absolute positions (LUKE, LUKE-Graph, entity-position presets) reach the longest
        extend_position_embeddings(model, data_args.max_seq_length + (model.config.pad_token_id or 0) + 1)
    if recipe.model_settings:  # the features carry what the model reads (the graph of its e2e labels)
        own = {name: getattr(model.config, name) for name in recipe.model_settings if hasattr(model.config, name)}
        processor = build_processor(recipe, tokenizer, config, {**settings, **own})
    if recipe.processor_for_model is not None:
        processor = recipe.processor_for_model(model, tokenizer, config)
    if recipe.knowledge_files:
        attach_knowledge_files(model_args, model, tokenizer, processor)
    return TaskModel(model, processor, tokenizer)


def build_processor(recipe: ModelRecipe, tokenizer: Any, config: dict[str, Any], settings: dict[str, Any]) -> Any:
    """``recipe``'s processor for ``tokenizer``: its class with ``settings`` (a refused setting is the run's error),
    or its function of the tokenizer and the checkpoint's config; ``None`` when the model decides it."""
    if recipe.processor is None:
        return None
    if recipe.processor_settings is None:
        return recipe.processor(tokenizer, config)
    try:
        return recipe.processor(tokenizer, **settings)
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None


def check_vocab_size(tokenizer: Any, config: dict[str, Any], path: str, source: str, added: str) -> None:
    """The tokenizer's word tokens must number the checkpoint's ``vocab_size`` (``added``: which tokens the processor
    added first, said in the error)."""
    if len(tokenizer) == int(config.get("vocab_size", -1)):
        return
    model_type = config.get("model_type")
    kind = "LUKE" if model_type == "luke" and not added else model_type
    raise ScriptArgumentError(
        f"--model_name_or_path {path}: the {kind} checkpoint has vocab_size={config.get('vocab_size')} but the "
        f"tokenizer of {source} has {len(tokenizer)} word tokens{added}: they do not belong together (give "
        "--tokenizer_name the checkpoint's own tokenizer)"
    )


def use_saved_settings(
    path: str, names: Mapping[str, str], data_args: Any, explicit: set[str] | None, note: str
) -> None:
    """A trained checkpoint's own processor settings (``processor_config.json``; ``names``: saved name -> data
    argument) become the defaults of this run, so that re-evaluating it scores what it was trained on; a flag given
    on the command line wins. Prints which won, after ``note``."""
    if explicit is None:
        return
    try:
        saved, source = load_processor_settings(path)
    except ValueError as error:
        raise ScriptArgumentError(f"--model_name_or_path {path}: {error}") from None
    if source is None:
        return
    lines = apply_saved_settings(data_args, saved, names, explicit, source)
    if lines:
        print(note + "; ".join(lines))


# ----------------------------------------------------------------------------------------------- KB files


def attach_knowledge_files(model_args: Any, model: Any, tokenizer: Any, processor: Any) -> KnowledgeBaseFiles | None:
    """Read ``--kb_alias_table`` / ``--kb_entity_vectors`` (``None`` without them), install the vectors as the model's
    KB and keep the files on ``processor`` (``knowledge_files``) for the collator; one ``ScriptArgumentError`` naming
    the flag, the file and the line of a problem."""
    alias_table = getattr(model_args, "kb_alias_table", None)
    entity_vectors = getattr(model_args, "kb_entity_vectors", None)
    if alias_table is None and entity_vectors is None:
        return attach_checkpoint_knowledge(model_args, model, tokenizer, processor)
    if VARIANTS[model_args.variant].knowledge_variant is None:
        raise ScriptArgumentError(
            f"--kb_alias_table / --kb_entity_vectors feed KnowBERT-KAR and ERNIE only, not --variant "
            f"{model_args.variant}: drop them, or pass --variant kar or ernie"
        )
    try:
        files = load_knowledge_files(
            alias_table,
            entity_vectors,
            getattr(tokenizer, "entity_vocab", None),
            alias_where=f"--kb_alias_table {alias_table}",
            vectors_where=f"--kb_entity_vectors {entity_vectors}",
        )
    except InputError as error:
        raise ScriptArgumentError(str(error)) from None
    if files.vectors is not None:
        width = model.config.entity_emb_size
        if files.vectors.size(1) != width:
            raise ScriptArgumentError(
                f"--kb_entity_vectors {entity_vectors}: its vectors have {files.vectors.size(1)} values, the model's "
                f"KB width (entity_emb_size) is {width}: give vectors of that size (e.g. train TransE with dim={width})"
            )
        model.set_knowledge_base(files.vectors)
    processor.knowledge_files = files
    model.knowledge_files = files  # saved with every checkpoint (loading_gesa.save_knowledge_files)
    return files


def attach_checkpoint_knowledge(
    model_args: Any, model: Any, tokenizer: Any, processor: Any
) -> KnowledgeBaseFiles | None:
    """The KB files a KAR/ERNIE checkpoint of a script carries (``records_kb.checkpoint_knowledge_files``), kept on
    ``processor`` and ``model`` as ``attach_knowledge_files`` keeps a run's; ``None`` when it carries none."""
    if getattr(model, "knowledge_inputs", None) is None:
        return None
    path = model_args.model_name_or_path
    try:
        files = checkpoint_knowledge_files(path, getattr(tokenizer, "entity_vocab", None))
    except InputError as error:
        raise ScriptArgumentError(f"--model_name_or_path {path}: {error}") from None
    if files is None:
        return None
    kb_size = getattr(model.config, "kb_size", None)
    if files.entities is not None and kb_size != len(files.entities):
        raise ScriptArgumentError(
            f"--model_name_or_path {path}: its {KB_ENTITIES_FILE} lists {len(files.entities)} entities, its KB has "
            f"kb_size={kb_size} rows: the folder's KB files belong to another model; copy the checkpoint again"
        )
    processor.knowledge_files = files
    model.knowledge_files = files
    return files


def graph_layer_overrides(model_args: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    """``--graph_layer`` (LUKE-Graph's relational layer: ``rgcn``, the released code's R-GCN, or ``rgat``, the
    paper's relational graph attention) as a config value for a LUKE conversion; a trained LUKE-Graph checkpoint keeps
    its own layer (its weights are that layer's): a different ``--graph_layer`` is refused before any weight loads."""
    layer = getattr(model_args, "graph_layer", None)
    if layer is None:
        return {}
    if config.get("model_type") == "luke":
        return {"graph_layer": layer}
    saved = config.get("graph_layer", "rgcn")  # a config without the field was saved with the R-GCN
    if saved != layer:
        raise ScriptArgumentError(
            f"--graph_layer {layer}: {model_args.model_name_or_path} is a trained LUKE-Graph checkpoint whose "
            f"relational layer is {saved!r}; it keeps it. Drop --graph_layer, or start from a LUKE checkpoint"
        )
    return {}


__all__ = [
    "ModelRecipe",
    "TaskModel",
    "attach_checkpoint_knowledge",
    "attach_knowledge_files",
    "build_processor",
    "build_variant_model",
    "check_vocab_size",
    "check_checkpoint_head",
    "check_config_fields",
    "check_config_values",
    "check_max_seq_length",
    "check_model_source",
    "check_resume_config",
    "graph_layer_overrides",
    "hub_kwargs",
    "load_for_task",
    "load_run_tokenizer",
    "position_limit",
    "resolve_max_seq_length",
    "starts_new_head",
    "use_saved_settings",
]

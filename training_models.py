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
"""The model a ReCoRD run starts from, checked before any weight loads: ``--model_name_or_path`` read and matched
against the variant, the tokenizer and the window settings (``check_checkpoint``), then built (``build_model_and_processor``:
a tiny model from scratch, a converted LUKE checkpoint, or a checkpoint of the variant); the checkpoint a run resumes
must be of the run's model (``check_resume_config``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .loading_gesa import load_tokenizer
from .processing_base_gesa import load_processor_settings
from .registry_gesa import VARIANTS
from .training_gesa import ScriptArgumentError, apply_saved_settings, checkpoint_config
from .training_record import make_processor
from .training_tokenizer import shrink_entity_vocab, train_sample_tokenizer

# The tiny GESA built when no checkpoint is given (the embedded demo; the word vocabulary comes from the tokenizer
# trained on the data). No dropout (42 training queries, 180 steps); an initialiser range wider than BERT's 0.02 suits
# the 64-wide model.
TINY_GESA = dict(
    hidden_size=64,
    entity_emb_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_relative_position=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    initializer_range=0.05,
)


def _config_kwargs(ablation: str | None) -> dict[str, Any]:
    """``ablation`` as a config override, only when set (a variant's own override, e.g. luke's, then stands)."""
    return {} if ablation is None else {"ablation": ablation}


@dataclass
class CheckedCheckpoint:
    """``--model_name_or_path`` as read and checked by ``check_checkpoint``: its config (a dict), the processor built
    on its tokenizer, and for LUKE the rows of its entity table to keep (``None``: the whole table)."""

    config_dict: dict[str, Any]
    processor: Any
    entity_rows: list[int] | None = None


def use_saved_settings(path: str, variant: str, data_args: Any, explicit: set[str] | None) -> None:
    """A checkpoint's own window / graph settings (``processor_config.json``) become the defaults of this run, so that
    re-evaluating it scores what it was trained on; a flag given on the command line wins. Says which won."""
    if explicit is None:
        return
    try:
        saved, source = load_processor_settings(path)
    except ValueError as error:
        raise ScriptArgumentError(f"--model_name_or_path {path}: {error}") from None
    if source is None:
        return
    if VARIANTS[variant].uses_gesa_features:
        names = {name: name for name in ("max_seq_length", "doc_stride", "max_query_length", "max_entities")}
    else:  # XH: a node is at most --max_seq_length word tokens
        names = {"max_node_length": "max_seq_length", "max_query_length": "max_query_length"}
    lines = apply_saved_settings(data_args, saved, names, explicit, source)
    if lines:
        print("run_record.py: processor settings: " + "; ".join(lines))


def check_checkpoint(model_args: Any, data_args: Any, explicit: set[str] | None = None) -> CheckedCheckpoint | None:
    """Read the config and tokenizer of ``--model_name_or_path`` and check that they fit the variant and each other
    (``ScriptArgumentError`` otherwise); ``None`` without a checkpoint. No weights are loaded: ``run`` calls this before
    logging starts, so that a wrong checkpoint ends the run with one error line."""
    path = model_args.model_name_or_path
    if path is None:
        return None
    variant = model_args.variant
    spec = VARIANTS[variant]
    hub = dict(cache_dir=model_args.cache_dir, revision=model_args.model_revision, token=model_args.token)
    config_dict = checkpoint_config(path, f"a LUKE or {spec.config_class.model_type}", **hub)
    model_type = config_dict.get("model_type")
    own_type = spec.config_class.model_type
    if model_type not in ("luke", own_type):
        known = sorted({"luke", *(other.config_class.model_type for other in VARIANTS.values())})
        hint = " (a checkpoint of another variant: pass its --variant)" if model_type in known else ""
        raise ScriptArgumentError(
            f"{path} is a {model_type!r} checkpoint; run_record.py --variant {variant} takes LUKE or {own_type!r} "
            f"checkpoints{hint}"
        )
    try:
        spec.check_knowledge_base(config_dict, source=f"--model_name_or_path {path}")
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None
    if model_type != "luke":
        use_saved_settings(path, variant, data_args, explicit)
    tokenizer_source = model_args.tokenizer_name or path
    try:
        tokenizer = load_tokenizer(tokenizer_source, config_dict if tokenizer_source == path else None, **hub)
    except (OSError, ValueError) as error:
        raise ScriptArgumentError(
            f"cannot load a tokenizer from {tokenizer_source}: {str(error).splitlines()[0]}"
        ) from None
    vocab_size = int(config_dict.get("vocab_size", -1))
    if model_type != "luke":
        processor = make_processor(tokenizer, data_args, variant)
        if len(tokenizer) != vocab_size:
            raise ScriptArgumentError(
                f"--model_name_or_path {path}: the {own_type} checkpoint has vocab_size={vocab_size} but the tokenizer "
                f"of {tokenizer_source} has {len(tokenizer)} word tokens (with [HL] [PLC] [ENT]): they do not belong "
                "together (give --tokenizer_name the checkpoint's own tokenizer)"
            )
        return CheckedCheckpoint(config_dict, processor)
    if len(tokenizer) != vocab_size:
        raise ScriptArgumentError(
            f"--model_name_or_path {path}: the LUKE checkpoint has vocab_size={vocab_size} but the tokenizer of "
            f"{tokenizer_source} has {len(tokenizer)} word tokens: they do not belong together (give --tokenizer_name "
            "the checkpoint's own tokenizer)"
        )
    # KAR and ERNIE use LUKE's entity table as their knowledge base: it stays whole (model and tokenizer).
    entity_rows = shrink_entity_vocab(tokenizer, tokenizer_source) if spec.shrink_entity_table else None
    processor = make_processor(tokenizer, data_args, variant)
    max_positions = int(config_dict.get("max_position_embeddings", 0))
    ablation = spec.config_overrides.get("ablation", model_args.ablation)
    if ablation == "luke" and data_args.max_seq_length + 2 > max_positions:
        raise ScriptArgumentError(
            f"--max_seq_length {data_args.max_seq_length} exceeds the absolute positions of {path} "
            f"(max_position_embeddings={max_positions}), which --variant {variant} uses"
        )
    return CheckedCheckpoint(config_dict, processor, entity_rows)


def build_model_and_processor(
    model_args: Any,
    data_args: Any,
    tokenizer_texts: list[str],
    checked: CheckedCheckpoint | None = None,
    scratch_config: Mapping[str, Any] = TINY_GESA,
) -> tuple[Any, Any]:
    """Tiny random model (no checkpoint), a converted LUKE checkpoint, or a checkpoint of the variant; checked
    vocabularies. The model is the variant's ``...ForEntitySpanQA`` (``registry_gesa.py``).

    ``checked``: ``check_checkpoint``'s answer, when the caller has it already (it is computed otherwise);
    ``scratch_config``: the size of the model built without a checkpoint (the tokenizer then trains on
    ``tokenizer_texts``).
    """
    variant = model_args.variant
    spec = VARIANTS[variant]
    ablation = spec.config_overrides.get("ablation", model_args.ablation)
    hub = dict(cache_dir=model_args.cache_dir, revision=model_args.model_revision, token=model_args.token)
    path = model_args.model_name_or_path
    if path is None:
        if model_args.tokenizer_name:
            tokenizer = load_tokenizer(model_args.tokenizer_name, **hub)
        else:
            tokenizer = train_sample_tokenizer(tokenizer_texts)
        entity_vocab = getattr(tokenizer, "entity_vocab", None) or {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
        processor = make_processor(tokenizer, data_args, variant)
        model = spec.from_scratch(
            vocab_size=len(tokenizer),
            entity_vocab_size=len(entity_vocab),
            max_position_embeddings=max(514, data_args.max_seq_length + 2),
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            **_config_kwargs(ablation),
            **scratch_config,
        )
        model.init_added_word_embeddings(processor.added_token_sources())
        return model, processor

    if checked is None:
        checked = check_checkpoint(model_args, data_args)
    processor = checked.processor
    if checked.config_dict.get("model_type") == "luke":
        model = spec.from_luke(
            path,
            keep_entity_aware_queries=model_args.keep_entity_aware_queries,
            entity_rows=checked.entity_rows,
            hub=hub,
            **_config_kwargs(ablation),
        )
        model.init_added_word_embeddings(processor.added_token_sources())
        return model, processor

    config = spec.config_class.from_pretrained(path, **hub)
    if ablation is not None and ablation != config.ablation:
        config_kwargs = config.to_dict()
        config_kwargs["ablation"] = ablation
        config = spec.config_class(**config_kwargs)
    model = spec.from_checkpoint(path, config=config, hub=hub)
    return model, processor


# ----------------------------------------------------------------------------------------------- resume


def check_resume_config(checkpoint: str, model_args: Any) -> None:
    """The checkpoint's config must be of the run's model family and ablation (``ScriptArgumentError`` before logging
    starts); ``check_resume_fits`` compares the weights themselves once the model is built."""
    config_path = Path(checkpoint) / "config.json"
    if not config_path.is_file():
        return
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ScriptArgumentError(
            f"cannot resume from {checkpoint}: its config.json cannot be read ({error})"
        ) from None
    variant = model_args.variant
    expected_type = VARIANTS[variant].config_class.model_type
    ablation = "luke" if variant == "luke" else model_args.ablation
    problems = []
    if config.get("model_type") != expected_type:
        problems.append(f"model_type {config.get('model_type')!r}, this run {expected_type!r} (--variant {variant})")
    if ablation is not None and config.get("ablation") != ablation:
        problems.append(f"ablation {config.get('ablation')!r}, this run {ablation!r}")
    if problems:
        raise ScriptArgumentError(
            f"cannot resume from {checkpoint}: it was saved by another model ({'; '.join(problems)}). Resume with "
            "the run's own --variant/--ablation, or give a new --output_dir"
        )


__all__ = [
    "CheckedCheckpoint",
    "TINY_GESA",
    "build_model_and_processor",
    "check_checkpoint",
    "check_resume_config",
    "use_saved_settings",
]

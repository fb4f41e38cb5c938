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
"""What ``--task wikihop|medhop --variant context_graph`` loads: the thesis's context-graph model and its processor.

``training.wikihop.WikihopTask.load`` hands the ``context_graph`` variant to ``load_context_graph``; reading, features
(``processor.map_function``), the collator, decoding (``processor.rank_candidates``) and scoring stay the task's.

- From a LUKE checkpoint: ``ContextGraphForMultipleChoice.from_luke_pretrained`` (the word encoder LUKE's own as
  pre-trained, or GESA's conversion with ``"token_embedder": "gesa"``; the graph modules fresh), with
  ``--graph_preset`` (a row of the thesis's table 5.1: ``hde_base``, ``att_base``, ``bert_base``), ``--graph_config``
  (a JSON object of ``ContextGraphConfig`` fields, e.g. ``'{"gnn_core": "sdp", "sentence_nodes": "all"}'``) and
  ``--ablation`` (a GESA preset of the ``"gesa"`` embedder).
- From a checkpoint of this head: loaded as saved (its graph and rules are fixed: the two flags are refused).
- The processor: ``ContextGraphProcessor`` with the model config's graph rules, ``--max_seq_length`` tokens per
  document (capped at the encoder's absolute positions where it has them), ``--max_query_length`` and
  ``--max_entities``.
- The training schedule of table 4.1 (``thesis_schedule``), on for a model of a ``--graph_preset`` (or with
  ``--graph_schedule thesis``; off with ``--graph_schedule none``): SGD, learning rate 0.001 with layer weight sharing
  and 0.01 without, the rate times 0.9 after every epoch (``exponential_epoch_decay``, the scheduler ``Trainer``
  steps), and a fine-tuned embedder frozen for its first 5 epochs (``freeze_word_encoder_epochs``). A flag given on
  the command line (``--optim``, ``--learning_rate``, ``--lr_scheduler_type``) replaces its part.
  ``FrozenEmbedderEpochs`` (a ``TrainerCallback``) holds the embedder for ``freeze_word_encoder_epochs`` epochs in
  every run.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

import torch
from transformers import TrainerCallback
from transformers.training_args import OptimizerNames

from ..configuration_context_graph import ContextGraphConfig
from ..configuration_gesa import GesaConfig
from ..processing_context_graph import ContextGraphProcessor
from .machinery import ScriptArgumentError
from .models import ModelRecipe, load_for_task
from .task import LoadedModel, Task

logger = logging.getLogger(__name__)

VARIANT = "context_graph"
RULE_FIELDS = ("co_document_edges", "complement_edges", "unconnected_edges", "sentence_nodes", "co_mention_edges")
# table 4.1 / 4.2: the learning rate with and without layer weight sharing, its decay per epoch, SGD; 4.2: a
# fine-tuned embedder is frozen for its first 5 epochs
THESIS_LEARNING_RATE = {True: 1e-3, False: 1e-2}
THESIS_DECAY = 0.9
THESIS_FROZEN_EPOCHS = 5
SCHEDULES = ("thesis", "none")


def exponential_epoch_decay(optimizer: torch.optim.Optimizer, steps_per_epoch: int, decay: float = THESIS_DECAY):
    """The thesis's schedule (4.2): "the effective learning rate at epoch n is LR x 0.9^n", stepped per optimizer
    update as ``Trainer`` steps its schedulers (``steps_per_epoch`` updates make an epoch)."""
    steps = max(1, int(steps_per_epoch))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: decay ** (step // steps))


class FrozenEmbedderEpochs(TrainerCallback):
    """Holds the context-graph model's word encoder fixed (no gradient, no dropout) during its first
    ``config.freeze_word_encoder_epochs`` epochs, then lets it be fine-tuned (4.2: "freeze the BERT parameters for the
    first 5 epochs"). Its parameters stay in the optimizer throughout; while held they get no gradient, so SGD and
    Adam leave them as they are."""

    def on_epoch_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        epochs = getattr(getattr(model, "config", None), "freeze_word_encoder_epochs", 0)
        if model is not None and hasattr(model, "word_encoder_held"):
            model.word_encoder_held = int(state.epoch or 0) < epochs

    def on_train_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if model is not None and hasattr(model, "word_encoder_held"):
            model.word_encoder_held = False


def schedule_wanted(model_args: Any, config: ContextGraphConfig) -> bool:
    """``--graph_schedule``: ``thesis`` / ``none``; unset, on for a model of a table 5.1 preset."""
    chosen = getattr(model_args, "graph_schedule", None)
    if chosen is None:
        return config.graph_preset is not None
    return chosen == "thesis"


def thesis_schedule(model: Any, explicit: set[str] | None) -> tuple[dict[str, Any], Any]:
    """Table 4.1's optimizer, learning rate and per-epoch decay for ``model``, each part where the command line
    (``explicit``: the flags given; ``None``: all count as given) did not set it: ``(TrainingArguments values, the
    scheduler factory or None)``."""
    if explicit is None:
        return {}, None
    given = explicit
    shared = bool(model.config.gnn_share_weights)
    arguments: dict[str, Any] = {}
    if "optim" not in given:
        arguments["optim"] = OptimizerNames.SGD
    if "learning_rate" not in given:
        arguments["learning_rate"] = THESIS_LEARNING_RATE[shared]
    scheduler = None if "lr_scheduler_type" in given else exponential_epoch_decay
    parts = []
    if "optim" in arguments:
        parts.append("SGD")
    if "learning_rate" in arguments:
        parts.append(f"learning rate {arguments['learning_rate']:g} ({'shared' if shared else 'distinct'} layer "
                     "weights)")  # fmt: skip
    if scheduler is not None:
        parts.append(f"x{THESIS_DECAY} per epoch")
    if model.config.freeze_word_encoder_epochs and not model.config.freeze_word_encoder:
        parts.append(f"embedder frozen for {model.config.freeze_word_encoder_epochs} epochs")
    if parts:
        logger.warning(
            "context graph: the thesis's training schedule (table 4.1): %s; --optim, --learning_rate or "
            "--lr_scheduler_type replace a part, --graph_schedule none all of it",
            ", ".join(parts),
        )
    return arguments, scheduler


def graph_overrides(model_args: Any, encoder: dict[str, Any]) -> dict[str, Any]:
    """``--graph_preset``, ``--graph_config`` and ``--ablation`` as ``ContextGraphConfig`` fields, checked against the
    encoder's dimensions before any weight loads (``ScriptArgumentError`` naming the flag); with the thesis's schedule
    a fine-tuned embedder is frozen for its first epochs unless ``freeze_word_encoder_epochs`` is given."""
    overrides: dict[str, Any] = {}
    text = getattr(model_args, "graph_config", None)
    if text:
        try:
            overrides = json.loads(text)
        except ValueError as error:
            raise ScriptArgumentError(f"--graph_config is not JSON ({error}); give an object such as "
                                      '\'{"gnn_core": "sdp"}\'') from None  # fmt: skip
        if not isinstance(overrides, dict):
            raise ScriptArgumentError("--graph_config must be a JSON object of ContextGraphConfig fields")
        graph_fields = set(ContextGraphConfig.__dataclass_fields__) - set(GesaConfig.__dataclass_fields__)
        unknown = sorted(set(overrides) - graph_fields)
        if unknown:
            raise ScriptArgumentError(f"--graph_config: {unknown} are not graph fields; known: {sorted(graph_fields)}")
    preset = getattr(model_args, "graph_preset", None)
    if preset is not None:
        overrides["graph_preset"] = preset
    if getattr(model_args, "ablation", None) is not None:  # a GESA preset: for token_embedder "gesa" only
        overrides["ablation"] = model_args.ablation
    try:
        dimensions = {key: encoder[key] for key in ("hidden_size", "num_attention_heads") if key in encoder}
        config = ContextGraphConfig(**dimensions, **overrides)
    except (ValueError, TypeError) as error:
        raise ScriptArgumentError(f"--graph_preset/--graph_config/--ablation: {error}") from None
    if (
        schedule_wanted(model_args, config)
        and not config.freeze_word_encoder
        and "freeze_word_encoder_epochs" not in overrides
    ):
        overrides["freeze_word_encoder_epochs"] = THESIS_FROZEN_EPOCHS  # 4.2: frozen first, then fine-tuned
    return overrides


def load_context_graph(task: Task, model_args: Any, data_args: Any, explicit: set[str] | None = None) -> LoadedModel:
    """The context-graph model ``--model_name_or_path`` gives (a LUKE checkpoint to convert or a checkpoint of this
    head), its processor and tokenizer (module docstring)."""
    window = {"attention_window": model_args.attention_window}
    recipe = ModelRecipe(
        task.variant_spec(VARIANT),
        f"--task {task.name} --variant {VARIANT}",
        None,  # the processor reads the built model's graph rules and positions
        overrides=window,
        checkpoint_overrides=window,
        configure=functools.partial(checked_graph_overrides, model_args),
        processor_for_model=functools.partial(context_graph_processor, data_args),
    )
    model, processor, tokenizer = load_for_task(recipe, model_args, data_args, explicit)
    loaded = LoadedModel(model, processor, tokenizer, callbacks=[FrozenEmbedderEpochs()])
    if schedule_wanted(model_args, model.config):
        loaded.training_arguments, loaded.lr_scheduler = thesis_schedule(model, explicit)
    return loaded


def checked_graph_overrides(model_args: Any, config: dict[str, Any]) -> dict[str, Any]:
    """A LUKE checkpoint's conversion takes the graph flags (``graph_overrides``); a trained checkpoint's graph is
    fixed: the flags are refused."""
    if config.get("model_type") == "luke":
        return graph_overrides(model_args, config)
    if getattr(model_args, "graph_preset", None) or getattr(model_args, "graph_config", None):
        raise ScriptArgumentError(
            f"--model_name_or_path {model_args.model_name_or_path} is a trained context-graph checkpoint: its graph "
            "is fixed; drop --graph_preset/--graph_config, or start from a LUKE checkpoint"
        )
    return {}


def context_graph_processor(
    data_args: Any, model: Any, tokenizer: Any, config: dict[str, Any]
) -> ContextGraphProcessor:
    """The processor of ``model``'s graph: its rules, documents no longer than its absolute positions reach."""
    document_length = data_args.max_seq_length
    if model.config.use_absolute_position_embeddings:  # LUKE's positions end at max_position_embeddings
        document_length = min(
            document_length, model.config.max_position_embeddings - (model.config.pad_token_id or 0) - 1
        )
    try:
        return ContextGraphProcessor(
            tokenizer,
            max_document_length=document_length,
            max_query_length=data_args.max_query_length,
            max_entities=data_args.max_entities,
            **{name: getattr(model.config, name) for name in RULE_FIELDS},
        )
    except (ValueError, TypeError) as error:
        raise ScriptArgumentError(str(error)) from None


__all__ = [
    "RULE_FIELDS",
    "SCHEDULES",
    "VARIANT",
    "FrozenEmbedderEpochs",
    "checked_graph_overrides",
    "context_graph_processor",
    "exponential_epoch_decay",
    "graph_overrides",
    "load_context_graph",
    "schedule_wanted",
    "thesis_schedule",
]

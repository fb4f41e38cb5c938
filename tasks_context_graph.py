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

``tasks_multihop.WikihopTask.load`` hands the ``context_graph`` variant to ``load_context_graph``; reading, features
(``processor.map_function``), the collator, decoding (``processor.rank_candidates``) and scoring stay the task's.

- From a LUKE checkpoint: ``ContextGraphForMultipleChoice.from_luke_pretrained`` (the word encoder converted as for
  GESA, the graph modules fresh), with ``--graph_preset`` (a row of the thesis's table 5.1: ``hde_base``,
  ``att_base``, ``bert_base``) and ``--graph_config`` (a JSON object of ``ContextGraphConfig`` fields, e.g.
  ``'{"gnn_core": "sdp", "sentence_nodes": "all"}'``).
- From a checkpoint of this head: loaded as saved (its graph and rules are fixed: the two flags are refused).
- The processor: ``ContextGraphProcessor`` with the model config's graph rules, ``--max_seq_length`` tokens per
  document (capped at the encoder's absolute positions where it has them), ``--max_query_length`` and
  ``--max_entities``.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import json
from typing import Any

from .configuration_context_graph import ContextGraphConfig
from .configuration_gesa import GesaConfig
from .loading_gesa import load_tokenizer
from .processing_context_graph import ContextGraphProcessor
from .tasks_base import LoadedModel, Task
from .training_gesa import ScriptArgumentError
from .training_models import build_variant_model, check_model_source, hub_kwargs
from .training_tokenizer import special_entity_rows

VARIANT = "context_graph"
RULE_FIELDS = ("co_document_edges", "complement_edges", "unconnected_edges", "sentence_nodes", "co_mention_edges")


def graph_overrides(model_args: Any, encoder: dict[str, Any]) -> dict[str, Any]:
    """``--graph_preset`` and ``--graph_config`` as ``ContextGraphConfig`` fields, checked against the encoder's
    dimensions before any weight loads (``ScriptArgumentError`` naming the flag)."""
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
    try:
        dimensions = {key: encoder[key] for key in ("hidden_size", "num_attention_heads") if key in encoder}
        ContextGraphConfig(**dimensions, **overrides)
    except (ValueError, TypeError) as error:
        raise ScriptArgumentError(f"--graph_preset/--graph_config: {error}") from None
    return overrides


def load_context_graph(task: Task, model_args: Any, data_args: Any) -> LoadedModel:
    """The context-graph model ``--model_name_or_path`` gives (a LUKE checkpoint to convert or a checkpoint of this
    head), its processor and tokenizer (module docstring)."""
    path = model_args.model_name_or_path
    if path is None:
        raise ScriptArgumentError("--model_name_or_path is needed: a LUKE checkpoint, or a checkpoint of this task")
    spec = task.variant_spec(VARIANT)
    config = check_model_source(path, spec, f"--task {task.name} --variant {VARIANT}", **hub_kwargs(model_args))
    tokenizer = load_tokenizer(model_args.tokenizer_name or path, cache_dir=model_args.cache_dir)
    window = {"attention_window": model_args.attention_window}
    if config.get("model_type") == "luke":
        overrides = {**graph_overrides(model_args, config), **window}
        if model_args.ablation is not None:
            overrides["ablation"] = model_args.ablation
        rows = special_entity_rows(tokenizer, "the LUKE checkpoint", count=3)
        model = build_variant_model(spec, path, config, model_args, entity_rows=rows, overrides=overrides)
    else:
        if getattr(model_args, "graph_preset", None) or getattr(model_args, "graph_config", None):
            raise ScriptArgumentError(
                f"--model_name_or_path {path} is a trained context-graph checkpoint: its graph is fixed; drop "
                "--graph_preset/--graph_config, or start from a LUKE checkpoint"
            )
        model = build_variant_model(spec, path, config, model_args, checkpoint_overrides=window)
    document_length = data_args.max_seq_length
    if model.config.use_absolute_position_embeddings:  # LUKE's positions end at max_position_embeddings
        document_length = min(
            document_length, model.config.max_position_embeddings - (model.config.pad_token_id or 0) - 1
        )
    try:
        processor = ContextGraphProcessor(
            tokenizer,
            max_document_length=document_length,
            max_query_length=data_args.max_query_length,
            max_entities=data_args.max_entities,
            **{name: getattr(model.config, name) for name in RULE_FIELDS},
        )
    except (ValueError, TypeError) as error:
        raise ScriptArgumentError(str(error)) from None
    return LoadedModel(model, processor, tokenizer)


__all__ = ["RULE_FIELDS", "VARIANT", "graph_overrides", "load_context_graph"]

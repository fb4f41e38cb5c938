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
"""``ContextGraphPipeline``: the ``context-graph-multiple-choice`` pipeline of a context-graph checkpoint.

Built by ``pipeline(model=<checkpoint>, trust_remote_code=True)`` (``config.custom_pipelines``: the pipeline
``ContextGraphForMultipleChoice`` names). Input: one dict ``{"query", "supports", "candidates"[, "id"]}`` or a
list of them; output per query: every candidate best first, ``[{"answer", "score"}, ...]`` (softmax probabilities
over the query's candidates). ``top_k`` keeps the first k. The processor is the checkpoint's own
(``processor_config.json``: the same graph rules and cuts as training).

Flat module: copied next to every saved context-graph checkpoint with its relative imports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from transformers import AutoModelForMultipleChoice
from transformers.pipelines import PIPELINE_REGISTRY

from .modeling_context_graph import CONTEXT_GRAPH_TASK
from .pipeline_base_gesa import TokenizerPipeline
from .processing_context_graph import MODEL_COLUMNS, ContextGraphProcessor
from .records_wikihop import to_example

TASK = CONTEXT_GRAPH_TASK


class ContextGraphPipeline(TokenizerPipeline):
    """Ranked candidates of WikiHop / MedHop queries by a context-graph model (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        processor = kwargs.pop("processor", None)
        super().__init__(*args, **kwargs)
        if processor is None:
            if self.tokenizer is None:
                raise ValueError(f"{TASK}: give tokenizer= or processor= (the model has no tokenizer to load)")
            processor = ContextGraphProcessor.from_checkpoint(self.tokenizer, self.model.config._name_or_path)
        self.graph_processor = processor
        self.collator = processor.get_data_collator()

    def _sanitize_parameters(self, top_k: int | None = None, **kwargs: Any) -> tuple[dict, dict, dict]:
        if kwargs:
            raise TypeError(f"{TASK} pipeline: unknown argument(s) {sorted(kwargs)}; it takes top_k and batch_size")
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        return {}, {}, {"top_k": top_k}

    def __call__(self, inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]], **kwargs: Any) -> Any:
        """One query dict -> its ranked list; a list of dicts -> one ranked list each."""
        if isinstance(inputs, Mapping):
            return super().__call__(dict(inputs), **kwargs)
        if isinstance(inputs, (list, tuple)):
            return [super(ContextGraphPipeline, self).__call__(dict(item), **kwargs) for item in inputs]
        raise TypeError(
            f"{TASK}: give a dict with query, supports, candidates (or a list of them), got {type(inputs)}"
        )

    def preprocess(self, record: dict[str, Any]) -> dict[str, Any]:
        record = dict(record)
        record.setdefault("id", "input")
        record["answer"] = None  # the pipeline predicts; it never reads a gold answer
        columns = self.graph_processor.encode_examples([to_example(record, 0, "pipeline input")])
        batch = self.collator([{name: columns[name][0] for name in MODEL_COLUMNS}])
        return {**batch, "candidate_texts": columns["candidate_texts"], "example_id": columns["example_id"]}

    def _forward(self, model_inputs: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        tensors = {name: value for name, value in model_inputs.items() if isinstance(value, torch.Tensor)}
        return {"logits": self.model(**tensors).logits, "candidate_texts": model_inputs["candidate_texts"],
                "example_id": model_inputs["example_id"]}  # fmt: skip

    def postprocess(self, model_outputs: dict[str, Any], top_k: int | None = None) -> list[dict[str, Any]]:
        ranked = ContextGraphProcessor.rank_candidates(
            model_outputs["example_id"], model_outputs["candidate_texts"], model_outputs["logits"]
        )
        answers = ranked[model_outputs["example_id"][0]]
        return answers[:top_k] if top_k else answers


if TASK not in PIPELINE_REGISTRY.supported_tasks:
    PIPELINE_REGISTRY.register_pipeline(TASK, ContextGraphPipeline, pt_model=AutoModelForMultipleChoice)

__all__ = ["TASK", "ContextGraphPipeline"]

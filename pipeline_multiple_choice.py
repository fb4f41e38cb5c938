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
"""``MultipleChoicePipeline``: what the pipelines of WikiHop-style multiple-choice checkpoints share (GESA's WikiHop
head, the thesis's context-graph model): one dict ``{"query", "supports", "candidates"[, "id"]}`` or a list of them
(a bad item named by its position) in, per query every candidate best first out, ``[{"answer", "score"}, ...]``
(``score``: the softmax probability over the query's candidates), ``top_k`` the first k. The processor is the
checkpoint's own (``processor_config.json``: the settings it was trained with).

Flat module: copied next to every saved multiple-choice checkpoint with its relative imports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from .pipeline_base_gesa import TokenizerPipeline
from .records_wikihop import to_example


class MultipleChoicePipeline(TokenizerPipeline):
    """Ranked candidates of QAngaroo queries (module docstring); a subclass names its ``task_name`` and its
    ``processor_class`` (``from_checkpoint``, ``encode_examples``, ``rank_candidates``)."""

    task_name: str = ""
    processor_class: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        processor = kwargs.pop("processor", None)
        super().__init__(*args, **kwargs)
        if processor is None:
            if self.tokenizer is None:
                raise ValueError(
                    f"{self.task_name}: give tokenizer= or processor= (the model has no tokenizer to load)"
                )
            processor = self.processor_class.from_checkpoint(self.tokenizer, self.model.config._name_or_path)
        self.records_processor = processor
        self.collator = processor.get_data_collator()

    def _sanitize_parameters(self, top_k: int | None = None, **kwargs: Any) -> tuple[dict, dict, dict]:
        if kwargs:
            raise TypeError(
                f"{self.task_name} pipeline: unknown argument(s) {sorted(kwargs)}; it takes top_k and batch_size"
            )
        if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        return {}, {}, {"top_k": top_k}

    def __call__(self, inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]], **kwargs: Any) -> Any:
        """One query dict -> its ranked list; a list of dicts -> one ranked list each (a bad item named by its
        position)."""
        if isinstance(inputs, Mapping):
            return super().__call__(dict(inputs), **kwargs)
        if isinstance(inputs, (list, tuple)):
            for position, item in enumerate(inputs):
                try:
                    self.check_input(item)
                except (TypeError, ValueError) as error:
                    raise ValueError(f"inputs[{position}] (of {len(inputs)}): {error}") from error
            return [super(MultipleChoicePipeline, self).__call__(dict(item), **kwargs) for item in inputs]
        raise TypeError(
            f"{self.task_name}: give a dict with query, supports, candidates (or a list of them), got {type(inputs)}"
        )

    def check_input(self, item: Any) -> None:
        self._example(item)

    def _example(self, record: Any) -> Any:
        if not isinstance(record, Mapping):
            raise TypeError(
                f"{self.task_name}: each input must be a dict with query, supports, candidates, got {type(record).__name__} "
                f"{record!r:.60}"
            )
        record = dict(record)
        record.setdefault("id", "input")
        record["answer"] = None  # the pipeline predicts; it never reads a gold answer
        return to_example(record, 0, "pipeline input")

    def preprocess(self, record: dict[str, Any]) -> dict[str, Any]:
        example = self._example(record)
        columns = self.records_processor.encode_examples([example])
        batch = self.collator([{name: columns[name][0] for name in self.model_columns(columns)}])
        return {**batch, "candidate_texts": columns["candidate_texts"], "example_id": columns["example_id"]}

    def model_columns(self, columns: Mapping[str, Any]) -> list[str]:
        """The encoded columns the collator batches for the model (not the ids, texts or gold)."""
        return [name for name in columns if name not in ("example_id", "candidate_texts", "answers", "labels")]

    def _forward(self, model_inputs: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        tensors = {name: value for name, value in model_inputs.items() if isinstance(value, torch.Tensor)}
        logits = self.model(**tensors).logits
        return {"logits": logits, "candidate_texts": model_inputs["candidate_texts"],
                "example_id": model_inputs["example_id"]}  # fmt: skip

    def postprocess(self, model_outputs: dict[str, Any], top_k: int | None = None) -> list[dict[str, Any]]:
        ranked = self.processor_class.rank_candidates(
            model_outputs["example_id"], model_outputs["candidate_texts"], model_outputs["logits"]
        )
        answers = ranked[model_outputs["example_id"][0]]
        return answers[:top_k] if top_k else answers


__all__ = ["MultipleChoicePipeline"]

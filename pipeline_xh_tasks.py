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
"""Inference pipelines for Transformer-XH on HotpotQA and FEVER.

* `XhHotpotQAPipeline` (`"xh-hotpot-qa"`): a HotpotQA question (a Hub or official row: `question`, `context`, ...)
  -> `{"answer", "score", "supporting_facts": [[title, sent_id], ...]}`.
* `XhFactVerificationPipeline` (`"xh-fact-verification"`): a FEVER claim (`{"id", "claim"}`, optionally
  `predicted_pages`/`predicted_sentences`) with the wiki pages given at construction (`pages={page: {line:
  sentence}}`, `records_xh.read_wiki_pages`) -> `{"label", "score", "evidence": [[page, line], ...]}`.

Both take the model, its tokenizer and optionally `processor=` (an `XhTaskProcessor`; default: one on the tokenizer
with the settings of the checkpoint's `processor_config.json` when it has one, else `max_node_length=512` and for FEVER
`max_nodes=5`). `score` is a probability (see `modeling_xh_tasks`).

Flat module: copied next to every saved checkpoint, so it imports only third-party packages and its siblings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification

from .modeling_xh_tasks import FEVER_LABELS, XhForHotpotQA, decode_fever
from .pipeline_base_gesa import TokenizerPipeline, register_pipelines
from .processing_xh_tasks import XhTaskProcessor
from .records_xh import to_fever_claim, to_hotpot_row


class _XhTaskPipeline(TokenizerPipeline):
    default_max_nodes: int | None = None
    task_name = "hotpotqa"

    def __init__(self, *args: Any, processor: XhTaskProcessor | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if processor is None:
            if self.tokenizer is None:
                raise ValueError(f"{type(self).__name__}: give tokenizer= or processor=")
            # the settings run_multihop.py trained with, where the checkpoint has them
            processor = XhTaskProcessor.from_checkpoint(
                self.tokenizer,
                self.model.config._name_or_path,
                max_node_length=512,
                max_nodes=self.default_max_nodes,
                task=self.task_name,
            )
        self.xh_processor = processor
        self.collator = processor.get_data_collator()

    def _sanitize_parameters(self, **kwargs: Any) -> tuple[dict, dict, dict]:
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown argument(s) {sorted(kwargs)}")
        return {}, {}, {}

    def _batch(self, feature: dict[str, Any]) -> dict[str, torch.Tensor]:
        batch = self.collator([feature])
        return {k: v for k, v in batch.items() if isinstance(v, torch.Tensor) and k not in self._label_names}


class XhHotpotQAPipeline(_XhTaskPipeline):
    """HotpotQA answers and supporting facts from an `XhForHotpotQA` (module docstring)."""

    _label_names = (
        "relevant_node",
        "start_positions",
        "end_positions",
        "answer_type",
        "sentence_labels",
        "node_labels",
    )

    def check_input(self, item: Any) -> None:
        to_hotpot_row(item, "pipeline input", default_id="input")

    def preprocess(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        row = to_hotpot_row(inputs, "pipeline input", default_id="input")
        feature = self.xh_processor.encode_hotpot_sentences(row)
        return {"batch": self._batch(feature), "feature": feature, "row": row}

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        return {**model_inputs, "output": self.model(**model_inputs["batch"])}

    def postprocess(self, model_outputs: dict[str, Any]) -> dict[str, Any]:
        feature, row = model_outputs["feature"], model_outputs["row"]
        node_mask = model_outputs["batch"]["node_mask"]
        decoded = XhForHotpotQA.decode_hotpot(model_outputs["output"], node_mask)[0]
        return {**self.xh_processor.hotpot_prediction(feature, decoded), "id": row["id"]}


class XhFactVerificationPipeline(_XhTaskPipeline):
    """FEVER labels and evidence from an `XhForFactVerification` (module docstring); `pages=` is required."""

    _label_names = ("labels", "node_labels")
    default_max_nodes = 5
    task_name = "fever"

    def __init__(self, *args: Any, pages: Mapping[str, Mapping[int, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if pages is None:
            raise ValueError("XhFactVerificationPipeline needs pages={page id: {line: sentence}} (read_wiki_pages)")
        self.pages = pages

    def check_input(self, item: Any) -> None:
        self._claim(item)

    @staticmethod
    def _claim(inputs: Any) -> dict[str, Any]:
        if not isinstance(inputs, Mapping):
            raise ValueError(
                f"xh-fact-verification: each input must be a dict with 'claim' (and optionally 'id', "
                f"'predicted_pages', 'predicted_sentences'), got {type(inputs).__name__} {inputs!r:.60}"
            )
        return to_fever_claim({"id": "input", **inputs}, "pipeline input")

    def preprocess(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        claim = self._claim(inputs)
        feature = self.xh_processor.encode_fever_claim(claim, self.pages, include_gold=False)
        return {"batch": self._batch(feature), "feature": feature, "claim": claim}

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        return {**model_inputs, "output": self.model(**model_inputs["batch"])}

    def postprocess(self, model_outputs: dict[str, Any]) -> dict[str, Any]:
        labels = [self.model.config.id2label.get(i, FEVER_LABELS[i]) for i in range(len(FEVER_LABELS))]
        if any(label.upper() not in FEVER_LABELS for label in labels):
            labels = list(FEVER_LABELS)
        decoded = decode_fever(model_outputs["output"], [model_outputs["feature"]["candidates"]], labels)[0]
        return {"id": model_outputs["claim"]["id"], **decoded}


_LABELS = ("labels", "relevant_node", "start_positions", "end_positions", "answer_type", "sentence_labels",
           "node_labels")  # fmt: skip


@torch.no_grad()
def model_outputs(
    model: Any, features: Sequence[Mapping[str, Any]], collator: Any, batch_size: int
) -> list[dict[str, torch.Tensor]]:
    """The model's outputs per feature (each a batch of one, on the CPU, with its `node_mask` and `node_adjacency`),
    in evaluation mode, `batch_size` graphs at a time; labels are left out of the inputs."""
    model.eval()
    device = next(model.parameters()).device
    results = []
    for begin in range(0, len(features), batch_size):
        chunk = list(features[begin : begin + batch_size])
        batch = collator(chunk)
        batch = {k: v.to(device) for k, v in batch.items() if isinstance(v, torch.Tensor) and k not in _LABELS}
        outputs = model(**batch)
        for g in range(len(chunk)):
            row = {k: v[g : g + 1].cpu() for k, v in outputs.items() if isinstance(v, torch.Tensor) and v.dim() > 1}
            row["node_mask"] = batch["node_mask"][g : g + 1].cpu().bool()
            row["node_adjacency"] = batch["node_adjacency"][g].cpu()
            results.append(row)
    return results


# `pipeline("xh-hotpot-qa", model=...)` / `pipeline("xh-fact-verification", model=..., pages=...)` once imported
register_pipelines(
    ("xh-hotpot-qa", XhHotpotQAPipeline, AutoModelForQuestionAnswering),
    ("xh-fact-verification", XhFactVerificationPipeline, AutoModelForSequenceClassification),
)

__all__ = [
    "XhFactVerificationPipeline",
    "XhHotpotQAPipeline",
    "model_outputs",
]

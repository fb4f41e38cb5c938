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
"""Inference pipelines of the entity-task heads, as LUKE's fine-tuned models are used:

* ``EntityTypingPipeline`` (``"entity-typing"``): ``{"text", "entity_span": [start, end]}`` (character offsets, end
  exclusive) -> ``[{"type", "score"}, ...]``, the types whose probability (sigmoid) is at least ``threshold`` (0.5,
  the typing head's decision: logit > 0), best first; ``threshold=0`` lists every type.
* ``RelationClassificationPipeline`` (``"relation-classification"``): ``{"text", "head_span", "tail_span"}`` ->
  ``[{"relation", "score"}, ...]``, every relation with its probability (softmax), best first (``top_k`` keeps the
  first k).
* ``EntitySpanClassificationPipeline`` (``"entity-span-classification"``): a sentence (a string, split at spaces, or
  ``{"tokens": [...]}``) -> ``[{"start", "end", "words", "type", "score"}, ...]``, the named entities of a
  ``GesaForEntitySpanClassification`` (NER; KAR/ERNIE: ``pipeline_entity_kb``) as word spans (end exclusive), decoded as ``run_entity_tasks.py`` decodes
  them (every candidate span scored, LUKE's greedy choice of the best non-overlapping ones).

The mention is the ``[MASK]`` entity (the tail: ``[MASK2]``) with GESA's graph inputs (``processing_entity.graph_inputs``:
one sentence, equal mention texts matched), exactly as ``run_entity_tasks.py`` trains (KAR/ERNIE checkpoints add their
knowledge inputs: ``pipeline_entity_kb``); a checkpoint trained with ``--input_format ernie|knowbert`` (its tokenizer
holds the markers) gets the markers around the mentions and its head reads them
(``processing_entity_markers.marked_inputs``). A trained checkpoint names its pipeline in ``config.custom_pipelines``, so
``pipeline(task, model=dir, trust_remote_code=True)`` builds it from the checkpoint's own copy of this file. A bad
input is one ``ValueError`` naming the field.

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import torch
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification

from .pipeline_base_gesa import TokenizerPipeline, register_pipelines
from .processing_entity import EntityTaskProcessor, decode_ner, encode_within, graph_inputs
from .processing_entity_markers import input_format_of, mark_text, marker_positions, markers_of

ENTITY_TYPING_TASK = "entity-typing"
RELATION_CLASSIFICATION_TASK = "relation-classification"
ENTITY_SPANS_TASK = "entity-span-classification"


def _text(inputs: Any, task: str, fields: Sequence[str]) -> str:
    if not isinstance(inputs, Mapping):
        raise ValueError(
            f"{task}: each input must be a dict with {list(fields)}, got {type(inputs).__name__}: "
            f"e.g. {{'text': 'Alice works at Acme.', {', '.join(repr(f) + ': [0, 5]' for f in fields[1:])}}}"
        )
    text = inputs.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{task}: 'text' must be a non-empty string, got {text!r}")
    return text


def _span(inputs: Mapping[str, Any], field: str, text: str, task: str) -> tuple[int, int]:
    span = inputs.get(field)
    ok = (
        isinstance(span, (list, tuple))
        and len(span) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in span)
        and 0 <= span[0] < span[1] <= len(text)
    )
    if not ok:
        raise ValueError(
            f"{task}: '{field}' must be [start, end], character offsets into 'text' with 0 <= start < end <= "
            f"{len(text)} (end exclusive), got {span!r}"
        )
    if not text[span[0] : span[1]].strip():
        raise ValueError(
            f"{task}: '{field}' {list(span)} covers only whitespace ({text[span[0] : span[1]]!r}): a mention needs a "
            "word; give the offsets of the mention's characters"
        )
    return int(span[0]), int(span[1])


class _EntityPipeline(TokenizerPipeline):
    task_name = ""
    task_key = ""  # the entity task (processing_entity.TASKS) whose input format the checkpoint may use
    fields: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()

    def _sanitize_parameters(self, max_length: int | None = None, **kwargs: Any) -> tuple[dict, dict, dict]:
        post = {name: kwargs.pop(name) for name in self.postprocess_parameters if name in kwargs}
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown argument(s) {sorted(kwargs)}")
        for name, value in post.items():
            self.check_option(name, value)
        if max_length is not None:
            longest = self.longest_input()
            if isinstance(max_length, bool) or not isinstance(max_length, int) or not 8 <= max_length <= longest:
                raise ValueError(
                    f"{self.task_name}: max_length must be an integer from 8 to {longest} (the model's positions), "
                    f"got {max_length!r}"
                )
        return ({"max_length": max_length} if max_length is not None else {}), {}, post

    postprocess_parameters: tuple[str, ...] = ()

    def check_option(self, name: str, value: Any) -> None:
        """A ``ValueError`` naming the option when ``value`` is no valid ``name`` (``top_k``, ``threshold``)."""

    def longest_input(self) -> int:
        """Word tokens one input may take: 512, or fewer where the model has fewer positions (RoBERTa's offset 2)."""
        positions = getattr(self.model.config, "max_position_embeddings", None)
        return 512 if not isinstance(positions, int) else max(8, min(512, positions - 2))

    def check_input(self, item: Any) -> None:
        text = _text(item, self.task_name, self.fields)
        for field in self.fields[1:]:
            _span(item, field, text, self.task_name)

    def preprocess(self, inputs: Any, max_length: int | None = None) -> dict[str, torch.Tensor]:
        text = _text(inputs, self.task_name, self.fields)
        spans = [_span(inputs, field, text, self.task_name) for field in self.fields[1:]]
        mentions = [text[start:end] for start, end in spans]
        # the checkpoint's input format: LUKE's, or ERNIE's / KnowBERT's markers around the mentions
        input_format = input_format_of(self.tokenizer, self.task_key)
        pairs = markers_of(input_format, self.task_key) if input_format != "luke" else ()
        if pairs:
            text, spans = mark_text(text, spans, pairs)
        # a text longer than max_length keeps the words around its mentions (LukeTokenizer cannot truncate entities)
        encoded, _ = encode_within(
            self.tokenizer, text, spans, self.entities, max_length or self.longest_input(), f"{self.task_name}: 'text'"
        )
        if pairs:
            encoded["marker_positions"] = marker_positions(encoded["input_ids"], self.tokenizer, pairs)
        encoded = {name: torch.tensor([values]) for name, values in encoded.items()}
        graph = graph_inputs(mentions)  # as run_entity_tasks.py's features
        return self.add_inputs({**encoded, **{name: torch.tensor([values]) for name, values in graph.items()}})

    def add_inputs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The model inputs of one encoded mention: the batch itself (a variant's pipeline adds its own inputs)."""
        return batch

    def _forward(self, model_inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = self.model(**model_inputs).logits[0]
        if not torch.isfinite(logits).all():
            raise ValueError(
                f"{self.task_name}: the model's scores are not finite (NaN or inf): the checkpoint "
                f"{self.model.config._name_or_path!r} diverged (or overflowed in half precision); no answer can be "
                "given; use an earlier checkpoint or retrain with a lower learning rate"
            )
        return logits

    def _labels(self) -> list[str]:
        return [self.model.config.id2label[i] for i in range(self.model.config.num_labels)]


class EntityTypingPipeline(_EntityPipeline):
    """Types of one mention from a ``GesaForEntityClassification`` (module docstring)."""

    task_name = ENTITY_TYPING_TASK
    task_key = "entity_typing"
    fields = ("text", "entity_span")
    entities = ("[MASK]",)
    postprocess_parameters = ("threshold",)

    def check_option(self, name: str, value: Any) -> None:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0
        if not ok or math.isnan(value):
            raise ValueError(f"{self.task_name}: threshold must be a probability from 0 to 1, got {value!r}")

    def postprocess(self, logits: torch.Tensor, threshold: float = 0.5) -> list[dict[str, Any]]:
        scores = torch.sigmoid(logits.float())
        kept = [(float(score), label) for score, label in zip(scores.tolist(), self._labels(), strict=True)]
        kept = [(score, label) for score, label in kept if score >= threshold]
        return [{"type": label, "score": score} for score, label in sorted(kept, key=lambda item: -item[0])]


class RelationClassificationPipeline(_EntityPipeline):
    """The relation between two mentions from a ``GesaForEntityPairClassification`` (module docstring)."""

    task_name = RELATION_CLASSIFICATION_TASK
    task_key = "relation_classification"
    fields = ("text", "head_span", "tail_span")
    entities = ("[MASK]", "[MASK2]")
    postprocess_parameters = ("top_k",)

    def check_option(self, name: str, value: Any) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{self.task_name}: top_k must be a positive integer (or None for all), got {value!r}")

    def postprocess(self, logits: torch.Tensor, top_k: int | None = None) -> list[dict[str, Any]]:
        scores = torch.softmax(logits.float(), dim=-1).tolist()
        ranked = sorted(zip(scores, self._labels(), strict=True), key=lambda item: -item[0])
        return [{"relation": label, "score": score} for score, label in ranked[:top_k]]


class EntitySpanClassificationPipeline(TokenizerPipeline):
    """Named entities of one sentence from a ``GesaForEntitySpanClassification`` (module docstring): the candidate
    spans and their features are the checkpoint's ``EntityTaskProcessor``'s (its saved ``max_span_length`` /
    ``max_entities``), so the pipeline scores exactly the spans ``run_entity_tasks.py`` evaluated."""

    def __init__(self, *args: Any, processor: EntityTaskProcessor | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        labels = [self.model.config.id2label[i] for i in range(self.model.config.num_labels)]
        self.processor = processor or EntityTaskProcessor.from_checkpoint(
            self.tokenizer, self.model.config._name_or_path, task="ner", label_names=labels, max_length=512
        )

    def _sanitize_parameters(self, **kwargs: Any) -> tuple[dict, dict, dict]:
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown argument(s) {sorted(kwargs)}")
        return {}, {}, {}

    def preprocess(self, inputs: Any) -> dict[str, Any]:
        tokens = (
            inputs.split()
            if isinstance(inputs, str)
            else inputs.get("tokens")
            if isinstance(inputs, Mapping)
            else None
        )
        if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) and t.strip() for t in tokens):
            raise ValueError(
                f"{ENTITY_SPANS_TASK}: give a sentence (a non-empty string) or {{'tokens': [words]}}, got {inputs!r}"
            )
        example = SimpleNamespace(id="input", tokens=tokens, spans=[])  # a NerExample without gold spans
        return {"tokens": tokens, "features": self.processor.encode(example)}

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        logits = []
        for feature in model_inputs["features"]:
            batch = self.add_inputs(self.processor.collate([feature]))
            batch.pop("labels")
            logits.append(torch.softmax(self.model(**batch).logits[0].float(), dim=-1))
        return {**model_inputs, "probabilities": logits}

    def add_inputs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The model inputs of one feature's batch: the batch itself (a variant's pipeline adds its own inputs)."""
        return batch

    def postprocess(self, model_outputs: dict[str, Any]) -> list[dict[str, Any]]:
        features, probabilities = model_outputs["features"], model_outputs["probabilities"]
        labels = self.processor.label_names
        scores = {tuple(span): row for feature, rows in zip(features, probabilities, strict=True)
                  for span, row in zip(feature["spans"], rows, strict=False)}  # fmt: skip
        tokens = model_outputs["tokens"]
        return [
            {"start": start, "end": end, "words": " ".join(tokens[start:end]), "type": kind,
             "score": float(scores[(start, end)][labels.index(kind)])}
            for start, end, kind in decode_ner(features, probabilities, labels, 1)[0]
        ]  # fmt: skip


# `pipeline("entity-typing", model=...)`, `pipeline("relation-classification", model=...)`,
# `pipeline("entity-span-classification", model=...)` once imported
register_pipelines(
    (ENTITY_TYPING_TASK, EntityTypingPipeline, AutoModelForSequenceClassification),
    (RELATION_CLASSIFICATION_TASK, RelationClassificationPipeline, AutoModelForSequenceClassification),
    (ENTITY_SPANS_TASK, EntitySpanClassificationPipeline, AutoModelForTokenClassification),
)

__all__ = [
    "ENTITY_SPANS_TASK",
    "ENTITY_TYPING_TASK",
    "EntitySpanClassificationPipeline",
    "RELATION_CLASSIFICATION_TASK",
    "EntityTypingPipeline",
    "RelationClassificationPipeline",
]

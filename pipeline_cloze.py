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
"""Entity cloze QA as a 🤗 ``pipeline``: ReCoRD-style queries in, ranked candidate answers with scores out.

``ClozeQAPipeline`` is what every entity-span QA checkpoint's pipeline shares: inputs, batching, ranking and output.
Each head names its own subclass (``config.custom_pipelines``, task ``entity-cloze-qa``), which says how the features
are built and ships with the checkpoint: ``pipeline_gesa.EntityClozeQAPipeline`` (GESA windows: GESA, ``--variant
luke``, LUKE-Graph), ``pipeline_kb.KnowledgeClozeQAPipeline`` (the same plus the KAR/ERNIE knowledge inputs) and
``pipeline_xh.XhClozeQAPipeline`` (Transformer-XH sentence graphs). So::

    from transformers import pipeline

    reader = pipeline(model="path/or/repo", trust_remote_code=True)  # task "entity-cloze-qa", read from the config
    reader({"passage": text, "query": "... @placeholder ...", "entity_spans": [(0, 13), ...]}, top_k=3)
    # -> [{"answer": "Angela Merkel", "score": 0.91, "start": 0, "end": 13}, ...]   best first

Inputs: a dict with ``passage`` and ``query`` (one ``@placeholder``) and optional ``entity_spans`` (candidate mentions
as ``(start, end)`` character offsets with a Python-slice, i.e. exclusive, ``end``; without them the candidates come
from spaCy NER: XH needs them), optional ``id``; a ReCoRD record in the original/SuperGLUE shape (``passage.text``,
``passage.entities`` with inclusive ends, ``qas``: it stands for its queries); or a list of those. Long passages are
cut into the processor's document-stride windows; a candidate's logit is the max over its mentions in all windows,
per normalised answer text, exactly as the ReCoRD evaluation merges them (``answers_gesa.ranked_answers``).

Output per query: a list of at most ``top_k`` dicts, best first (also for ``top_k=1``): ``answer`` (the surface text of
the best-scoring mention, a candidate string of the passage), ``score``, ``start`` and ``end`` (the first mention of
``answer`` in the passage, exclusive ``end``). ``score`` is ``sigmoid(logit)`` of the merged logit: the head is trained
with a per-candidate binary cross-entropy, so the score is the model's probability that this candidate answers the
query, in ``[0, 1]``, ranking exactly as the logits; scores of different candidates need not sum to 1 (several can be
right, or none). A single input gives one list (a record: one list per query); a list of inputs gives one list per
query, in input order (records expanded to their queries in ``qas`` order). Nothing is dropped: a bad input raises the
processor's ``ValueError`` naming the input (``input #N``) and the fix.

Call options: ``top_k`` (default 1), ``batch_size`` (queries per processor call; their windows go through the model
``batch_size`` at a time), ``return_html=True`` (instead of the lists: one HTML page drawing every query's passage
with its candidates shaded by score and the answer marked, ``render_gesa.render_html``). ``device``/``dtype`` as for
any pipeline.

Flat module: copied next to every saved entity-span QA checkpoint, so it imports third-party packages and its
siblings only.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from .answers_gesa import ranked_answers
from .modeling_gesa import ENTITY_CLOZE_TASK
from .pipeline_base_gesa import TokenizerPipeline
from .records_gesa import RecordExample, integer_spans, item_to_examples

TASK = ENTITY_CLOZE_TASK


class ClozeQAPipeline(TokenizerPipeline):
    """Ranked answers to ReCoRD-style cloze queries (module docstring: inputs, outputs, ``score``).

    A subclass gives ``processor_class`` (built from the checkpoint's tokenizer and its saved settings,
    ``processor_config.json``, unless ``processor=`` is passed), ``first_candidate`` (the first scored entity slot of
    a feature) and ``preprocess`` / ``_mentions``; ``make_collator`` may add inputs to the processor's batches.
    """

    processor_class: Any  # a ProcessorBase subclass, with from_checkpoint
    first_candidate = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        processor = kwargs.pop("processor", None)
        super().__init__(*args, **kwargs)
        if processor is None:
            if self.tokenizer is None:
                raise ValueError(f"{TASK}: give tokenizer= or processor= (the model has no tokenizer to load)")
            processor = self.processor_class.from_checkpoint(self.tokenizer, self.model.config._name_or_path)
        self.gesa_processor = processor
        self.collator = self.make_collator(processor)

    def make_collator(self, processor: Any) -> Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]:
        """The batches the model reads: the processor's collator."""
        return processor.get_data_collator()

    # ------------------------------------------------------------------ transformers' Pipeline interface

    def _sanitize_parameters(
        self, top_k: int | None = None, return_html: bool | None = None, **kwargs: Any
    ) -> tuple[dict, dict, dict]:
        if kwargs:
            raise TypeError(f"{TASK} pipeline: unknown argument(s) {sorted(kwargs)}; it takes top_k, batch_size, "
                            "return_html")  # fmt: skip
        postprocess: dict[str, Any] = {}
        if top_k is not None:
            postprocess["top_k"] = positive_integer("top_k", top_k)
        if return_html is not None:
            postprocess["return_html"] = bool(return_html)
        return {}, {}, postprocess

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        """Answer ``inputs`` (a dict, a ReCoRD record, or a list of them); see the module docstring."""
        batch_size = kwargs.pop("batch_size", None)
        batch_size = positive_integer("batch_size", self._batch_size or 1 if batch_size is None else batch_size)
        kwargs.pop("num_workers", None)
        preprocess_params, forward_params, postprocess_params = self._sanitize_parameters(**kwargs)
        postprocess_params = {**self._postprocess_params, **postprocess_params}
        single = isinstance(inputs, Mapping)
        examples = self.examples(inputs)
        return_html = postprocess_params.pop("return_html", False)
        if return_html:
            postprocess_params["top_k"] = None  # the picture shades every candidate
        results: list[list[dict[str, Any]]] = []
        mentions: list[list[tuple[int, int]]] = []
        for start in range(0, len(examples), batch_size):
            group = examples[start : start + batch_size]
            model_inputs = self.preprocess(group)
            results.extend(self.postprocess(self.forward_windows(model_inputs, batch_size), **postprocess_params))
            if return_html:
                mentions.extend(self._mentions(model_inputs))
        if return_html:
            from .render_gesa import render_html

            return render_html(examples, results, mentions)
        if single and len(examples) == 1:
            return results[0]
        return results

    def _mentions(self, model_inputs: dict[str, Any]) -> list[list[tuple[int, int]]]:
        """Per query of a group, the character spans of its candidate mentions (``return_html``)."""
        raise NotImplementedError(f"{type(self).__name__} draws no mentions")

    def examples(self, inputs: Any) -> list[RecordExample]:
        """Canonical examples (``records_gesa.RecordExample``, exclusive spans), one per query, checked by the
        processor's rules. Each is named by its input's position in the call and, where it has one, its own id:
        ``input #2 (q7)``; a record's queries ``input #1, query 0 (q3)``. A record without queries is refused."""
        items = [inputs] if isinstance(inputs, Mapping) else inputs
        if isinstance(items, str) or not isinstance(items, Sequence):
            raise TypeError(
                f"{TASK} pipeline takes a dict (passage, query[, entity_spans]), a ReCoRD record (passage, qas) or a "
                f"list of them; got {type(inputs).__name__}"
            )
        examples: list[RecordExample] = []
        for position, item in enumerate(items):
            label = f"input #{position}"
            if not isinstance(item, Mapping):
                raise TypeError(f"{label} is a {type(item).__name__}; give a dict with passage and query")
            spans = item.get("entity_spans")
            span_dicts = isinstance(spans, Mapping) or (
                isinstance(spans, Sequence) and len(spans) > 0 and isinstance(spans[0], Mapping)
            )
            is_record = "qas" in item
            if is_record or not isinstance(item.get("passage"), str) or "entity_spans" not in item or span_dicts:
                found = item_to_examples(item, position, source=label)  # records, Hub rows, rows without spans
            else:
                own = item.get("id")
                name = label if own is None else f"{label} ({own})"
                spans = None if spans is None else integer_spans(spans, name)
                found = [
                    RecordExample(
                        str(own) if own is not None else label,
                        item["passage"],
                        item.get("query"),
                        spans,
                        None if spans is None else [None] * len(spans),
                    )
                ]
            if not found:
                raise ValueError(f"{label} is a ReCoRD record with no query ('qas' is empty): give at least one query")
            for number, example in enumerate(found):
                own = example.example_id
                where = f"{label}, query {number}" if is_record else label
                example.example_id = where if own.startswith("sha1-") or own == label else f"{where} ({own})"
                example.answers = None  # a pipeline predicts; gold answers (if any) play no part
                example.answer_spans = None
                examples.append(example)
        return examples

    def preprocess(self, examples: list[RecordExample], **kwargs: Any) -> dict[str, Any]:
        """Features of a group of queries: ``features`` (the collator's input), ``example_ids``,
        ``candidate_texts``, ``candidate_spans`` (one row per feature) and the ``examples``."""
        raise NotImplementedError

    def forward_windows(self, model_inputs: dict[str, Any], batch_size: int) -> dict[str, Any]:
        """The model's logits for every window (graph), ``batch_size`` at a time (``Pipeline.forward``: device,
        inference mode); rows of different widths are kept as lists."""
        features = model_inputs["features"]
        rows: list[list[float]] = []
        for start in range(0, len(features), batch_size):
            batch = self.collator(features[start : start + batch_size])
            batch = {name: value for name, value in batch.items() if isinstance(value, torch.Tensor)}
            batch.pop("labels", None)
            logits = self.forward(batch)["logits"]
            rows.extend(logits.float().tolist())
        return {**model_inputs, "logits": rows}

    def _forward(self, model_inputs: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:
        return {"logits": self.model(**model_inputs).logits}

    def postprocess(self, model_outputs: dict[str, Any], top_k: int | None = 1, **kwargs: Any) -> list[list[dict]]:
        """One ranked list per query of the group (``answers_gesa.ranked_answers``), ``score = sigmoid(logit)``."""
        # A row is as wide as its batch (GESA) or its graph's scored candidates (XH: a candidate whose mentions all
        # fell outside the truncated nodes has no logit): such slots score -inf, i.e. 0.
        rows, texts = model_outputs["logits"], model_outputs["candidate_texts"]
        width = max([len(row) for row in rows] + [len(row) for row in texts] + [0])
        logits = [row + [-math.inf] * (width - len(row)) for row in rows]
        ranked = ranked_answers(
            model_outputs["example_ids"],
            texts,
            logits,
            candidate_spans=model_outputs["candidate_spans"],
            first_candidate=self.first_candidate,
            top_k=top_k,
            caller="rank_answers",
        )
        results = []
        for example in model_outputs["examples"]:
            if not ranked.get(example.example_id):  # the processor raises first; a query must never vanish silently
                raise ValueError(f"{example.example_id}: no candidate answer was scored")
            results.append(ranked[example.example_id])
        return results


def positive_integer(name: str, value: Any) -> int:
    """``value`` as an ``int`` >= 1 (numpy integers too); ``ValueError`` naming ``name`` for anything else (``0``,
    ``False``, ``2.0``, ``"2"``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {type(value).__name__} {value!r}")
    return int(value)


__all__ = ["TASK", "ClozeQAPipeline", "positive_integer"]

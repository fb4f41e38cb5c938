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

Every checkpoint of an entity-span QA head (GESA, ``--variant luke``, KAR, ERNIE, XH) carries this file and names it
in ``config.json`` (``custom_pipelines``), so that::

    from transformers import pipeline

    reader = pipeline(model="path/or/repo", trust_remote_code=True)  # task "entity-cloze-qa", read from the config
    reader({"passage": text, "query": "... @placeholder ...", "entity_spans": [(0, 13), ...]}, top_k=3)
    # -> [{"answer": "Angela Merkel", "score": 0.91, "start": 0, "end": 13}, ...]   best first

Inputs: a dict with ``passage`` and ``query`` (one ``@placeholder``) and optional ``entity_spans`` (candidate mentions
as ``(start, end)`` character offsets with a Python-slice, i.e. exclusive, ``end``; without them the candidates come
from spaCy NER: XH needs them), optional ``id``; a ReCoRD record in the original/SuperGLUE shape (``passage.text``,
``passage.entities`` with inclusive ends, ``qas``: it stands for its queries); or a list of those. Long passages are
cut into the processor's document-stride windows; a candidate's logit is the max over its mentions in all windows,
per normalised answer text, exactly as the ReCoRD evaluation merges them (``GesaProcessor.rank_answers``).

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

Flat module: copied next to every saved checkpoint, so it imports third-party packages and its siblings only.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForQuestionAnswering
from transformers.pipelines import PIPELINE_REGISTRY
from transformers.utils import cached_file, logging

from .modeling_gesa import ENTITY_CLOZE_PIPELINES, ENTITY_CLOZE_TASK
from .pipeline_base_gesa import TokenizerPipeline
from .processing_gesa import MODEL_INPUT_NAMES, GesaProcessor, RecordExample, normalize_entity_string
from .processing_kb import EntityCandidateGenerator, KnowledgeCollator, KnowledgeInputBuilder
from .processing_xh import XhProcessor
from .records_gesa import item_to_examples
from .registry_gesa import knowledge_variant_of, reads_sentence_graphs

logger = logging.get_logger(__name__)

TASK = ENTITY_CLOZE_TASK
CUSTOM_PIPELINES = ENTITY_CLOZE_PIPELINES  # written into config.json by GesaPreTrainedModel.save_pretrained
PROCESSOR_CONFIG = "processor_config.json"


def _checkpoint_file(name_or_path: str, filename: str) -> str | None:
    """The path of ``filename`` in the checkpoint, ``None`` when it has none."""
    try:
        return cached_file(name_or_path, filename, _raise_exceptions_for_missing_entries=False)
    except OSError:
        return None


def _load_processor_settings(name_or_path: str) -> tuple[dict[str, Any], str | None]:
    """The checkpoint's ``processor_config.json`` (its window / graph settings) and its path; ``({}, None)`` when it
    has none. A file that is not a JSON object is one ``ValueError`` naming it."""
    path = _checkpoint_file(name_or_path, PROCESSOR_CONFIG)
    if path is None:
        return {}, None
    try:
        with open(path, encoding="utf-8") as handle:
            settings = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(
            f"{path}: not valid JSON ({error}); repair the file or re-save the processor with "
            "processor.save_pretrained(checkpoint_dir)"
        ) from error
    if not isinstance(settings, Mapping):
        raise ValueError(f"{path}: must hold a JSON object of processor settings, got {type(settings).__name__}")
    return {key: value for key, value in settings.items() if key not in ("processor_class", "auto_map")}, path


def _keyword_subset(cls: type, settings: Mapping[str, Any]) -> dict[str, Any]:
    import inspect

    names = set(inspect.signature(cls.__init__).parameters) - {"self", "tokenizer", "kwargs"}
    return {key: value for key, value in settings.items() if key in names}


class EntityClozeQAPipeline(TokenizerPipeline):
    """Ranked answers to ReCoRD-style cloze queries (module docstring: inputs, outputs, ``score``).

    Built by ``pipeline(model=..., trust_remote_code=True)``; the processor is made from the checkpoint's tokenizer and
    its saved settings (``processor_config.json``), or passed as ``processor=`` (a ``GesaProcessor``, or an
    ``XhProcessor`` for XH).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        processor = kwargs.pop("processor", None)
        super().__init__(*args, **kwargs)
        model_type = self.model.config.model_type
        self.is_xh = reads_sentence_graphs(model_type)
        if processor is None:
            processor = self._processor_from_checkpoint(XhProcessor if self.is_xh else GesaProcessor)
        self.gesa_processor = processor
        self.collator = processor.get_data_collator()
        if knowledge_variant_of(model_type) is not None:  # the KB inputs, as the scripts' collator adds them
            tokenizer = processor.tokenizer
            candidates = EntityCandidateGenerator.from_tokenizer(tokenizer)
            builder = KnowledgeInputBuilder(tokenizer, candidates, knowledge_variant_of(model_type))
            self.collator = KnowledgeCollator(self.collator, builder)

    def _processor_from_checkpoint(self, cls: type) -> Any:
        """The processor from the checkpoint's tokenizer and saved settings; a damaged file is named with the fix."""
        source = self.model.config._name_or_path
        if self.tokenizer is None:
            raise ValueError(f"{TASK}: give tokenizer= or processor= (the model has no tokenizer to load)")
        settings, path = _load_processor_settings(source) if source else ({}, None)
        try:
            return cls(self.tokenizer, **_keyword_subset(cls, settings))
        except (TypeError, ValueError) as error:
            if path is not None and any(name in str(error) for name in _keyword_subset(cls, settings)):
                raise ValueError(
                    f"{path}: {error}. Fix that field in the file, or re-save the processor with "
                    "processor.save_pretrained(checkpoint_dir)"
                ) from error
            if source and _checkpoint_file(source, "tokenizer_config.json") is None:
                raise ValueError(
                    f"{source} has no tokenizer_config.json, so its tokenizer cannot be rebuilt ({error}). Save the "
                    "processor (or its tokenizer) into the checkpoint with save_pretrained(checkpoint_dir)"
                ) from error
            raise

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

    def entity_graph_svg(self, inputs: Mapping[str, Any], window: int | None = None) -> str:
        """The entity graph (PLC / SENT / MATCH edges) of one window of one query, as an SVG
        (``render_gesa.render_entity_graph``), titled with the query, the model's answer, its score and ``window k
        of n``; ``window=None`` draws the first window that holds the answer. GESA-feature checkpoints only (XH
        builds sentence graphs instead)."""
        if self.is_xh:
            raise ValueError("entity_graph_svg draws GESA's entity graph; an XH checkpoint reads sentence graphs")
        from .render_gesa import render_entity_graph

        examples = self.examples(inputs)[:1]
        model_inputs = self.preprocess(examples)
        windows = len(model_inputs["features"])
        (ranking,) = self.postprocess(self.forward_windows(model_inputs, self._batch_size or 1), top_k=1)
        answer = ranking[0]["answer"] if ranking else None
        if window is None:
            key = None if answer is None else normalize_entity_string(answer)
            holding = [
                index
                for index, texts in enumerate(model_inputs["candidate_texts"])
                if any(normalize_entity_string(text) == key for text in texts[1:])
            ]
            window = holding[0] if holding else 0
        if not 0 <= window < windows:
            raise ValueError(f"window {window}: the query has {windows} window(s)")
        return render_entity_graph(
            model_inputs["features"][window],
            model_inputs["candidate_texts"][window],
            query=examples[0].query,
            answer=answer,
            score=ranking[0]["score"] if ranking else None,
            window=window,
            windows=windows,
        )

    def _mentions(self, model_inputs: dict[str, Any]) -> list[list[tuple[int, int]]]:
        """Per query of a group, the character spans of its candidate mentions over all its windows."""
        if self.is_xh:  # XH reads annotated mentions only
            return [sorted(set(example.entity_spans or [])) for example in model_inputs["examples"]]
        found: dict[str, set[tuple[int, int]]] = {}
        for example_id, texts, spans in zip(
            model_inputs["example_ids"], model_inputs["candidate_texts"], model_inputs["candidate_spans"], strict=True
        ):
            found.setdefault(example_id, set()).update(
                (int(span[0]), int(span[1])) for text, span in zip(texts, spans, strict=True) if text and span[0] >= 0
            )
        return [sorted(found.get(example.example_id, ())) for example in model_inputs["examples"]]

    def examples(self, inputs: Any) -> list[RecordExample]:
        """Canonical examples (``processing_gesa.RecordExample``, exclusive spans), one per query, checked by the
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
                spans = None if spans is None else GesaProcessor._integer_spans(spans, name)
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
        """Features of a group of queries: GESA windows (``encode_examples``) or one XH graph per query."""
        if self.is_xh:
            features = [self.gesa_processor.encode_record_example(example) for example in examples]
            candidate_spans = [
                first_mentions(example.passage, example.entity_spans or [], feature["candidate_texts"])
                for example, feature in zip(examples, features, strict=True)
            ]
            return {
                "features": features,
                "example_ids": [feature["example_id"] for feature in features],
                "candidate_texts": [feature["candidate_texts"] for feature in features],
                "candidate_spans": candidate_spans,
                "examples": examples,
            }
        # skip_invalid=False: a bad input raises (naming it), whatever the saved processor says; nothing is dropped
        columns = self.gesa_processor.encode_examples(examples, skip_invalid=False, return_candidate_spans=True)
        names = [name for name in MODEL_INPUT_NAMES if name in columns]
        features = [dict(zip(names, values, strict=True)) for values in zip(*(columns[n] for n in names), strict=True)]
        return {
            "features": features,
            "example_ids": columns["example_id"],
            "candidate_texts": columns["candidate_texts"],
            "candidate_spans": columns["candidate_spans"],
            "examples": examples,
        }

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
        """One ranked list per query of the group (``GesaProcessor.rank_answers``), ``score = sigmoid(logit)``."""
        # A row is as wide as its batch (GESA) or its graph's scored candidates (XH: a candidate whose mentions all
        # fell outside the truncated nodes has no logit): such slots score -inf, i.e. 0.
        rows, texts = model_outputs["logits"], model_outputs["candidate_texts"]
        width = max([len(row) for row in rows] + [len(row) for row in texts] + [0])
        logits = [row + [-math.inf] * (width - len(row)) for row in rows]
        ranked = GesaProcessor.rank_answers(
            model_outputs["example_ids"],
            model_outputs["candidate_texts"],
            logits,
            candidate_spans=model_outputs["candidate_spans"],
            first_candidate=0 if self.is_xh else 1,
        )
        results = []
        for example in model_outputs["examples"]:
            answers = ranked.get(example.example_id)
            if not answers:  # the processor raises first; a query must never vanish silently
                raise ValueError(f"{example.example_id}: no candidate answer was scored")
            results.append(
                [
                    {"answer": entry["answer"], "score": answer_score(entry["logit"]), "start": entry["start"],
                     "end": entry["end"]}
                    for entry in answers[:top_k]
                ]
            )  # fmt: skip
        return results


# `pipeline("entity-cloze-qa", model=...)` where this module is imported (with gesa installed, or from a checkpoint).
if TASK not in PIPELINE_REGISTRY.supported_tasks:  # the first import wins (the package's, or a checkpoint's copy)
    PIPELINE_REGISTRY.register_pipeline(TASK, EntityClozeQAPipeline, pt_model=AutoModelForQuestionAnswering)


def first_mentions(passage: str, spans: Sequence[tuple[int, int]], texts: Sequence[str]) -> list[tuple[int, int]]:
    """Per candidate text, its first mention among ``spans`` (XH graphs list each candidate string once)."""
    first: dict[str, tuple[int, int]] = {}
    for start, end in sorted(spans):
        first.setdefault(passage[start:end], (start, end))
    return [first.get(text, (-1, -1)) for text in texts]


def positive_integer(name: str, value: Any) -> int:
    """``value`` as an ``int`` >= 1 (numpy integers too); ``ValueError`` naming ``name`` for anything else (``0``,
    ``False``, ``2.0``, ``"2"``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {type(value).__name__} {value!r}")
    return int(value)


def answer_score(logit: float) -> float:
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    value = math.exp(logit)
    return value / (1.0 + value)


__all__ = ["CUSTOM_PIPELINES", "TASK", "EntityClozeQAPipeline", "answer_score", "first_mentions", "positive_integer"]

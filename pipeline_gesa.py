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
"""``EntityClozeQAPipeline``: entity cloze QA (``pipeline_cloze``) on GESA's document windows.

The pipeline of every GESA, ``--variant luke`` and LUKE-Graph ReCoRD checkpoint (``GesaForEntitySpanQA.pipeline``),
and the base of the KAR/ERNIE one (``pipeline_kb``)::

    from transformers import pipeline

    reader = pipeline(model="path/or/repo", trust_remote_code=True)  # task "entity-cloze-qa", read from the config
    reader({"passage": text, "query": "... @placeholder ...", "entity_spans": [(0, 13), ...]}, top_k=3)
    # -> [{"answer": "Angela Merkel", "score": 0.91, "start": 0, "end": 13}, ...]   best first

Inputs, outputs and call options: ``pipeline_cloze``. The features are ``GesaProcessor``'s windows, with the
checkpoint's saved window settings (``processor_config.json``); ``entity_graph_svg`` draws one window's entity graph.
Importing the module registers the task, so ``pipeline("entity-cloze-qa", model=gesa_model, tokenizer=...)`` builds it
for a model in memory too.

Flat module: copied next to every saved checkpoint whose head names it, so it imports third-party packages and its
siblings only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformers import AutoModelForQuestionAnswering

from .answers_gesa import answer_score, first_mentions
from .candidates_gesa import normalize_entity_string
from .collator_gesa import MODEL_INPUT_NAMES
from .pipeline_base_gesa import register_pipelines
from .pipeline_cloze import TASK, ClozeQAPipeline, positive_integer
from .processing_gesa import GesaProcessor
from .records_gesa import RecordExample


class EntityClozeQAPipeline(ClozeQAPipeline):
    """Ranked answers to ReCoRD-style cloze queries from GESA windows (``pipeline_cloze``: inputs, outputs,
    ``score``); the processor is made from the checkpoint's tokenizer and its saved settings, or passed as
    ``processor=`` (a ``GesaProcessor``)."""

    processor_class = GesaProcessor
    first_candidate = 1  # entity 0 of a window is the placeholder

    def preprocess(self, examples: list[RecordExample], **kwargs: Any) -> dict[str, Any]:
        """The GESA windows of a group of queries (``GesaProcessor.encode_examples``)."""
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

    def _mentions(self, model_inputs: dict[str, Any]) -> list[list[tuple[int, int]]]:
        """Per query of a group, the character spans of its candidate mentions over all its windows."""
        found: dict[str, set[tuple[int, int]]] = {}
        for example_id, texts, spans in zip(
            model_inputs["example_ids"], model_inputs["candidate_texts"], model_inputs["candidate_spans"], strict=True
        ):
            found.setdefault(example_id, set()).update(
                (int(span[0]), int(span[1])) for text, span in zip(texts, spans, strict=True) if text and span[0] >= 0
            )
        return [sorted(found.get(example.example_id, ())) for example in model_inputs["examples"]]

    def entity_graph_svg(self, inputs: Mapping[str, Any], window: int | None = None) -> str:
        """The entity graph (PLC / SENT / MATCH edges) of one window of one query, as an SVG
        (``render_gesa.render_entity_graph``), titled with the query, the model's answer, its score and ``window k
        of n``; ``window=None`` draws the first window that holds the answer."""
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


# `pipeline("entity-cloze-qa", model=...)` where this module is imported (with gesa installed, or from a checkpoint).
register_pipelines((TASK, EntityClozeQAPipeline, AutoModelForQuestionAnswering))


__all__ = ["TASK", "EntityClozeQAPipeline", "answer_score", "first_mentions", "positive_integer"]

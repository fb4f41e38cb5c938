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
"""``XhClozeQAPipeline``: the entity cloze QA pipeline of Transformer-XH ReCoRD checkpoints.

Same inputs, outputs and options as every entity cloze pipeline (``pipeline_cloze``); the features are one
``XhProcessor`` sentence graph per query (with the checkpoint's saved graph settings, ``processor_config.json``), so
the candidates are the annotated ``entity_spans`` (XH reads no NER candidates) and each candidate string is scored
once per graph.

Flat module: copied next to every saved XH ReCoRD checkpoint, so it imports third-party packages and its siblings only.
"""

from __future__ import annotations

from typing import Any

from .answers_gesa import first_mentions
from .pipeline_cloze import ClozeQAPipeline
from .processing_xh import XhProcessor
from .records_gesa import RecordExample


class XhClozeQAPipeline(ClozeQAPipeline):
    """Ranked answers to ReCoRD-style cloze queries from XH sentence graphs (module docstring); ``processor=``: an
    ``XhProcessor``."""

    processor_class = XhProcessor
    first_candidate = 0  # a graph's candidates are its graph-wide candidate strings, no placeholder slot

    def preprocess(self, examples: list[RecordExample], **kwargs: Any) -> dict[str, Any]:
        """One XH graph per query of the group (``XhProcessor.encode_record_example``)."""
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

    def _mentions(self, model_inputs: dict[str, Any]) -> list[list[tuple[int, int]]]:
        """Per query of a group, its annotated mentions (XH reads annotated mentions only)."""
        return [sorted(set(example.entity_spans or [])) for example in model_inputs["examples"]]


__all__ = ["XhClozeQAPipeline"]

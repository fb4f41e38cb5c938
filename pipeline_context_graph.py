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

from collections.abc import Mapping
from typing import Any

from transformers import AutoModelForMultipleChoice

from .modeling_context_graph import CONTEXT_GRAPH_TASK
from .pipeline_base_gesa import register_pipelines
from .pipeline_multiple_choice import MultipleChoicePipeline
from .processing_context_graph import MODEL_COLUMNS, ContextGraphProcessor

TASK = CONTEXT_GRAPH_TASK


class ContextGraphPipeline(MultipleChoicePipeline):
    """Ranked candidates of WikiHop / MedHop queries by a context-graph model (module docstring): the multiple-choice
    pipeline with the context graph's processor."""

    task_name = TASK
    processor_class = ContextGraphProcessor

    def model_columns(self, columns: Mapping[str, Any]) -> list[str]:
        return list(MODEL_COLUMNS)


register_pipelines((TASK, ContextGraphPipeline, AutoModelForMultipleChoice))

__all__ = ["TASK", "ContextGraphPipeline"]

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
"""``WikihopPipeline``: ranked answers of a WikiHop checkpoint to ``{"query", "supports", "candidates"}`` queries.

Built by ``pipeline(model=<checkpoint>, trust_remote_code=True)`` (``config.custom_pipelines``: the pipeline
``GesaForEntityMultipleChoice`` names). Input: one dict or a list of dicts (``"id"`` optional); output per
query: every candidate best first, ``[{"answer", "score"}, ...]``, ``score`` the softmax probability over the
query's candidates (they sum to 1). ``top_k`` keeps the first k. The top answer is what ``run_multihop.py --do_eval``
predicts for the same record (the same processor settings, ``processor_config.json``, and the same head).

Flat module: copied next to every saved WikiHop checkpoint with its relative imports.
"""

from __future__ import annotations

from transformers import AutoModelForMultipleChoice

from .modeling_gesa_multiple_choice import WIKIHOP_TASK
from .pipeline_base_gesa import register_pipelines
from .pipeline_multiple_choice import MultipleChoicePipeline
from .processing_wikihop import WikihopProcessor

TASK = WIKIHOP_TASK


class WikihopPipeline(MultipleChoicePipeline):
    """Ranked candidates of WikiHop queries (module docstring)."""

    task_name = TASK
    processor_class = WikihopProcessor


register_pipelines((TASK, WikihopPipeline, AutoModelForMultipleChoice))

__all__ = ["TASK", "WikihopPipeline"]

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
"""``KnowledgeClozeQAPipeline``: the entity cloze QA pipeline of KnowBERT-KAR and ERNIE checkpoints.

GESA's windows (``pipeline_gesa.EntityClozeQAPipeline``: same inputs, outputs and options) plus the knowledge inputs
the head reads (``model.knowledge_inputs``: ``"kar"`` or ``"ernie"``), added to every batch by
``processing_kb.KnowledgeCollator`` from the KB files the checkpoint carries or the tokenizer's entity vocabulary
(``records_kb.checkpoint_knowledge_builder``), exactly as ``run_record.py``'s collator adds them.

Flat module: copied next to every saved KAR/ERNIE ReCoRD checkpoint, so it imports third-party packages and its
siblings only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .pipeline_gesa import EntityClozeQAPipeline
from .processing_kb import KnowledgeCollator
from .records_kb import checkpoint_knowledge_builder


class KnowledgeClozeQAPipeline(EntityClozeQAPipeline):
    """``EntityClozeQAPipeline`` whose batches carry the KAR/ERNIE knowledge inputs (module docstring)."""

    def make_collator(self, processor: Any) -> Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]:
        builder = checkpoint_knowledge_builder(self.model, processor.tokenizer, type(self).__name__)
        return KnowledgeCollator(processor.get_data_collator(), builder)


__all__ = ["KnowledgeClozeQAPipeline"]

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
"""The entity-typing, relation-classification and NER pipelines of KnowBERT-KAR and ERNIE checkpoints.

``pipeline_entity``'s pipelines (same inputs, outputs and options), each encoded mention also carrying the knowledge
inputs its head reads (``model.knowledge_inputs``: ``"kar"`` or ``"ernie"``; mentions matched to the KB the checkpoint
carries, or to the tokenizer's entity titles, by ``processing_kb.KnowledgeInputBuilder``:
``records_kb.checkpoint_knowledge_builder``), exactly as ``run_entity_tasks.py``'s collator adds them.

Flat module: copied next to every saved KAR/ERNIE entity-task checkpoint, so it imports third-party packages and its
siblings only.
"""

from __future__ import annotations

from typing import Any

import torch

from .pipeline_entity import EntitySpanClassificationPipeline, EntityTypingPipeline, RelationClassificationPipeline
from .records_kb import checkpoint_knowledge_builder


class KnowledgeInputs:
    """Mixin for ``pipeline_entity``'s pipelines: each encoded input gets the head's knowledge inputs, from the KB
    files its checkpoint carries (a run's ``--kb_alias_table`` / ``--kb_entity_vectors``) or LUKE's titles."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.knowledge = checkpoint_knowledge_builder(self.model, self.tokenizer, type(self).__name__)

    def add_inputs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return self.knowledge(batch)


class KnowledgeEntityTypingPipeline(KnowledgeInputs, EntityTypingPipeline):
    """Entity typing (``pipeline_entity.EntityTypingPipeline``) with the KAR/ERNIE knowledge inputs."""


class KnowledgeRelationClassificationPipeline(KnowledgeInputs, RelationClassificationPipeline):
    """Relation classification (``pipeline_entity.RelationClassificationPipeline``) with the knowledge inputs."""


class KnowledgeEntitySpanClassificationPipeline(KnowledgeInputs, EntitySpanClassificationPipeline):
    """NER (``pipeline_entity.EntitySpanClassificationPipeline``: the checkpoint's candidate spans, LUKE's greedy
    decoding) with the KAR/ERNIE knowledge inputs of every candidate span."""


__all__ = [
    "KnowledgeEntitySpanClassificationPipeline",
    "KnowledgeEntityTypingPipeline",
    "KnowledgeRelationClassificationPipeline",
]

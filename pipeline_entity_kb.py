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
"""The entity-typing and relation-classification pipelines of KnowBERT-KAR and ERNIE checkpoints.

``pipeline_entity``'s pipelines (same inputs, outputs and options), each encoded mention also carrying the knowledge
inputs its head reads (``model.knowledge_inputs``: ``"kar"`` or ``"ernie"``; mentions matched to the tokenizer's
entity titles by ``processing_kb.KnowledgeInputBuilder``), exactly as ``run_entity_tasks.py``'s collator adds them.

Flat module: copied next to every saved KAR/ERNIE entity-task checkpoint, so it imports third-party packages and its
siblings only.
"""

from __future__ import annotations

from typing import Any

import torch

from .pipeline_entity import EntityTypingPipeline, RelationClassificationPipeline
from .processing_kb import KnowledgeInputBuilder, knowledge_inputs_of


class KnowledgeInputs:
    """Mixin for ``pipeline_entity``'s pipelines: each encoded mention gets the head's knowledge inputs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        variant = knowledge_inputs_of(self.model, type(self).__name__)
        self.knowledge = KnowledgeInputBuilder.from_tokenizer(self.tokenizer, variant)

    def add_inputs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return self.knowledge(batch)


class KnowledgeEntityTypingPipeline(KnowledgeInputs, EntityTypingPipeline):
    """Entity typing (``pipeline_entity.EntityTypingPipeline``) with the KAR/ERNIE knowledge inputs."""


class KnowledgeRelationClassificationPipeline(KnowledgeInputs, RelationClassificationPipeline):
    """Relation classification (``pipeline_entity.RelationClassificationPipeline``) with the knowledge inputs."""


__all__ = ["KnowledgeEntityTypingPipeline", "KnowledgeRelationClassificationPipeline"]

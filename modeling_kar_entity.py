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
"""The entity-task heads on KnowBERT-KAR's encoder: entity typing, relation and span (NER) classification.

Each is GESA's head (``modeling_gesa_entity``) with KnowBERT-KAR's pre-trained base and encoder (``base_model_class``); the
forward is GESA's, its signature also naming the knowledge inputs (``kar_mention_spans``, ``kar_candidate_ids``, ``kar_candidate_priors``,
``kar_gold_candidates``: then KnowBERT's ``L_EL`` joins the loss, ``KarEntityHead``),
which the registry's collator (``VariantSpec.wrap_collator``) and the head's pipeline
(``pipeline_entity_kb``) add from the entity-task features.

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

import torch
from transformers.utils import ModelOutput

from .loading_gesa import PipelineSpec
from .modeling_gesa_entity import (
    GesaForEntityClassification,
    GesaForEntityPairClassification,
    GesaForEntitySpanClassification,
)
from .modeling_kar import KarModel, KarPreTrainedModel


class KarEntityHead:
    """What KnowBERT-KAR adds to every entity-task head: KnowBERT's linker loss `L_EL` (the encoder's `linking_loss`,
    given gold links: `kar_gold_candidates`) weighted by `kar_linking_loss_weight` and added to the task loss; while
    training, the task loss and `L_EL` are kept apart for the log (`pop_logged_losses`: `task_loss`,
    `linking_loss`)."""

    def add_auxiliary_loss(self, loss: torch.Tensor | None, outputs: ModelOutput) -> torch.Tensor | None:
        linking = outputs.get("linking_loss")
        if linking is None:
            return loss
        if self.training:
            logged = self.__dict__.setdefault("logged_losses", {})
            for name, value in (("task_loss", loss), ("linking_loss", linking)):
                if value is not None:
                    logged.setdefault(name, []).append(float(value.detach()))
        weighted = self.config.kar_linking_loss_weight * linking
        return weighted if loss is None else loss + weighted

    def pop_logged_losses(self) -> dict[str, float]:
        """The mean of each loss over the training steps since the last call (none without gold links)."""
        logged = self.__dict__.pop("logged_losses", {})
        return {name: sum(values) / len(values) for name, values in logged.items() if values}


class KarForEntityClassification(KarEntityHead, KarPreTrainedModel, GesaForEntityClassification):
    """Entity typing on KnowBERT-KAR's encoder."""

    base_model_class = KarModel
    pipeline = PipelineSpec("entity-typing", "pipeline_entity_kb.KnowledgeEntityTypingPipeline")


class KarForEntityPairClassification(KarEntityHead, KarPreTrainedModel, GesaForEntityPairClassification):
    """Relation classification on KnowBERT-KAR's encoder."""

    base_model_class = KarModel
    pipeline = PipelineSpec("relation-classification", "pipeline_entity_kb.KnowledgeRelationClassificationPipeline")


class KarForEntitySpanClassification(KarEntityHead, KarPreTrainedModel, GesaForEntitySpanClassification):
    """NER over candidate spans on KnowBERT-KAR's encoder."""

    base_model_class = KarModel
    pipeline = PipelineSpec(
        "entity-span-classification", "pipeline_entity_kb.KnowledgeEntitySpanClassificationPipeline"
    )


KarForEntityClassification.register_for_auto_class("AutoModelForSequenceClassification")
KarForEntityPairClassification.register_for_auto_class("AutoModelForSequenceClassification")
KarForEntitySpanClassification.register_for_auto_class("AutoModelForTokenClassification")

__all__ = [
    "KarEntityHead",
    "KarForEntityClassification",
    "KarForEntityPairClassification",
    "KarForEntitySpanClassification",
]

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
"""The entity-task heads on the knowledge variants' encoders: KnowBERT-KAR and ERNIE.

Each is GESA's head (``modeling_gesa_entity``) with the variant's pre-trained base and encoder (``base_model_class``);
the forward is GESA's, its signature also naming the variant's knowledge inputs (KAR: ``kar_mention_spans``,
``kar_candidate_ids``, ``kar_candidate_priors``; ERNIE: ``ernie_entity_ids``, ``ernie_entity_positions``), which the
registry's collator (``VariantSpec.wrap_collator``) adds from the entity-task features.

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from .modeling_ernie import ErnieModel, ErniePreTrainedModel
from .modeling_gesa_entity import (
    GesaForEntityClassification,
    GesaForEntityPairClassification,
    GesaForEntitySpanClassification,
)
from .modeling_kar import KarModel, KarPreTrainedModel


class KarForEntityClassification(KarPreTrainedModel, GesaForEntityClassification):
    """Entity typing on KnowBERT-KAR's encoder."""

    base_model_class = KarModel


class KarForEntityPairClassification(KarPreTrainedModel, GesaForEntityPairClassification):
    """Relation classification on KnowBERT-KAR's encoder."""

    base_model_class = KarModel


class KarForEntitySpanClassification(KarPreTrainedModel, GesaForEntitySpanClassification):
    """NER over candidate spans on KnowBERT-KAR's encoder."""

    base_model_class = KarModel


class ErnieForEntityClassification(ErniePreTrainedModel, GesaForEntityClassification):
    """Entity typing on ERNIE's encoder (knowledge fusion in the top layers)."""

    base_model_class = ErnieModel


class ErnieForEntityPairClassification(ErniePreTrainedModel, GesaForEntityPairClassification):
    """Relation classification on ERNIE's encoder."""

    base_model_class = ErnieModel


class ErnieForEntitySpanClassification(ErniePreTrainedModel, GesaForEntitySpanClassification):
    """NER over candidate spans on ERNIE's encoder."""

    base_model_class = ErnieModel


for _head in (KarForEntityClassification, KarForEntityPairClassification, ErnieForEntityClassification,
              ErnieForEntityPairClassification):  # fmt: skip
    _head.register_for_auto_class("AutoModelForSequenceClassification")
for _head in (KarForEntitySpanClassification, ErnieForEntitySpanClassification):
    _head.register_for_auto_class("AutoModelForTokenClassification")

__all__ = [
    "ErnieForEntityClassification",
    "ErnieForEntityPairClassification",
    "ErnieForEntitySpanClassification",
    "KarForEntityClassification",
    "KarForEntityPairClassification",
    "KarForEntitySpanClassification",
]

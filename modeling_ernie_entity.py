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
"""The entity-task heads on ERNIE's encoder: entity typing, relation and span (NER) classification, and ERNIE's
pre-training (`ErnieForPreTraining`: masked words + next-sentence prediction + the denoising entity auto-encoder,
each loss reported).

Each is GESA's head (``modeling_gesa_entity``) with ERNIE's pre-trained base and encoder (``base_model_class``); the
forward is GESA's, its signature also naming the knowledge inputs (``ernie_entity_ids``, ``ernie_entity_positions``),
which the registry's collator (``VariantSpec.wrap_collator``) and the head's pipeline
(``pipeline_entity_kb``) add from the entity-task features.

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, can_return_tuple

from .checks_gesa import pop_inputs
from .loading_gesa import PipelineSpec
from .modeling_ernie import (
    DenoisingEntityHead,
    ErnieInputs,
    ErnieModel,
    ErniePreTrainedModel,
    dea_accuracy_by_alignment,
    dea_accuracy_counts,
)
from .modeling_gesa import with_inputs_of
from .modeling_gesa_entity import (
    GesaEntityHeadBase,
    GesaForEntityClassification,
    GesaForEntityPairClassification,
    GesaForEntitySpanClassification,
    MaskedLmNspHeads,
)


class ErnieForEntityClassification(ErniePreTrainedModel, GesaForEntityClassification):
    """Entity typing on ERNIE's encoder (knowledge fusion in the top layers)."""

    base_model_class = ErnieModel
    pipeline = PipelineSpec("entity-typing", "pipeline_entity_kb.KnowledgeEntityTypingPipeline")


class ErnieForEntityPairClassification(ErniePreTrainedModel, GesaForEntityPairClassification):
    """Relation classification on ERNIE's encoder."""

    base_model_class = ErnieModel
    pipeline = PipelineSpec("relation-classification", "pipeline_entity_kb.KnowledgeRelationClassificationPipeline")


class ErnieForEntitySpanClassification(ErniePreTrainedModel, GesaForEntitySpanClassification):
    """NER over candidate spans on ERNIE's encoder."""

    base_model_class = ErnieModel
    pipeline = PipelineSpec(
        "entity-span-classification", "pipeline_entity_kb.KnowledgeEntitySpanClassificationPipeline"
    )


class ErniePreTrainingInputs(ErnieInputs, total=False):
    """ERNIE pre-training's own inputs over ERNIE's: MLM, dEA and NSP labels."""

    labels: torch.LongTensor | None
    dea_candidate_ids: torch.LongTensor | None
    dea_labels: torch.LongTensor | None
    next_sentence_label: torch.LongTensor | None


@dataclass
class ErniePreTrainingOutput(ModelOutput):
    """
    Args:
        loss: `mlm_loss + nsp_loss + dea_loss` (those given).
        mlm_loss: cross-entropy of the masked words (`labels`).
        nsp_loss: cross-entropy of next-sentence prediction (`next_sentence_label`), when the batch has pairs.
        dea_loss: cross-entropy of the aligned entities (`dea_labels`), ERNIE's dEA.
        logits: `(B, L, V)` word logits. dea_logits: `(B, L, N)` over the sequence's candidate entities.
        nsp_logits: `(B, 2)`: the second sentence follows the first (class 0) or is a random one (class 1).
    """

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    nsp_loss: torch.FloatTensor | None = None
    dea_loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    dea_logits: torch.FloatTensor | None = None
    nsp_logits: torch.FloatTensor | None = None


class ErnieForPreTraining(MaskedLmNspHeads, DenoisingEntityHead, ErniePreTrainedModel, GesaEntityHeadBase):
    """ERNIE's pre-training on its encoder: masked language modelling and next-sentence prediction (BERT's heads,
    `MaskedLmNspHeads`) and the denoising entity auto-encoder (dEA: `p(e_j | w_i) = softmax_j(linear(w_i) . e_j)` over
    the sequence's entities, `DenoisingEntityHead`); `loss = mlm_loss +
    nsp_loss + dea_loss` (those whose labels are given). While training, each loss is kept (`pop_logged_losses`) for
    the driver's log; while evaluating, dEA's accuracy and chance on the same words (`modeling_ernie.dea_accuracy_counts`,
    `pop_evaluation_metrics`: percent), also apart for the kept, masked and replaced alignments
    (`dea_accuracy_kept`, `dea_chance_kept`, ...: `modeling_ernie.dea_accuracy_by_alignment`).
    """

    base_model_class = ErnieModel

    def __init__(self, config: object) -> None:
        super().__init__(config)
        self.build_pretraining_heads(config)
        self.build_denoising_entity_head(config)
        self.post_init()

    @can_return_tuple
    @with_inputs_of(ErnieModel.forward, own=ErniePreTrainingInputs)
    def forward(
        self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[ErniePreTrainingInputs]
    ) -> ErniePreTrainingOutput:
        """`labels` `(B, L)` word ids at masked words (-100 elsewhere); `dea_candidate_ids` `(B, N)` (default:
        `ernie_entity_ids`) and `dea_labels` `(B, L)` as `modeling_ernie.corrupt_entity_alignments` returns them;
        `next_sentence_label` `(B,)`: 0 when the pair's second sentence follows the first, 1 when it is a random one
        (BERT's convention; -100 ignored)."""
        ernie_entity_ids, ernie_entity_positions, labels, dea_candidate_ids, dea_labels, next_sentence_label = (
            pop_inputs(kwargs, ErniePreTrainingInputs)
        )
        words = self.ernie_word_states(input_ids, ernie_entity_ids, ernie_entity_positions, kwargs)
        logits, mlm_loss, nsp_logits, nsp_loss = self.masked_lm_and_nsp(words, labels, next_sentence_label)
        dea_loss = dea_logits = None
        candidates = dea_candidate_ids if dea_candidate_ids is not None else ernie_entity_ids
        if candidates is not None:
            dea_logits, dea_loss = self.denoising_entities(words, candidates, dea_labels)
        elif dea_labels is not None:
            raise ValueError("dea_labels were given without dea_candidate_ids (or ernie_entity_ids).")
        loss = self.log_losses({"mlm_loss": mlm_loss, "nsp_loss": nsp_loss, "dea_loss": dea_loss})
        if not self.training and dea_labels is not None and dea_logits is not None:
            hits, chance, words = dea_accuracy_counts(dea_logits, candidates, dea_labels)
            self.count_for_evaluation({"dea_accuracy": hits, "dea_chance": chance}, words)
            if ernie_entity_ids is not None and dea_candidate_ids is not None:  # split by what the corruption did
                split = dea_accuracy_by_alignment(dea_logits, candidates, dea_labels, ernie_entity_ids)
                for kind, (kind_hits, kind_chance, kind_words) in split.items():
                    counts = {f"dea_accuracy_{kind}": kind_hits, f"dea_chance_{kind}": kind_chance}
                    self.count_for_evaluation(counts, kind_words)
        return ErniePreTrainingOutput(
            loss=loss,
            mlm_loss=mlm_loss,
            nsp_loss=nsp_loss,
            dea_loss=dea_loss,
            logits=logits,
            dea_logits=dea_logits,
            nsp_logits=nsp_logits,
        )


ErnieForEntityClassification.register_for_auto_class("AutoModelForSequenceClassification")
ErnieForEntityPairClassification.register_for_auto_class("AutoModelForSequenceClassification")
ErnieForEntitySpanClassification.register_for_auto_class("AutoModelForTokenClassification")

ErnieForPreTraining.register_for_auto_class("AutoModelForPreTraining")

__all__ = [
    "ErnieForEntityClassification",
    "ErnieForEntityPairClassification",
    "ErnieForEntitySpanClassification",
    "ErnieForPreTraining",
    "ErniePreTrainingOutput",
]

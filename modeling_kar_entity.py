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
"""The entity-task heads on KnowBERT-KAR's encoder: entity typing, relation and span (NER) classification, and
KnowBERT's pre-training of the KAR block (`KarForPreTraining`: masked words + next-sentence prediction + `L_EL`).

Each is GESA's head (``modeling_gesa_entity``) with KnowBERT-KAR's pre-trained base and encoder (``base_model_class``); the
forward is GESA's, its signature also naming the knowledge inputs (``kar_mention_spans``, ``kar_candidate_ids``, ``kar_candidate_priors``,
``kar_gold_candidates``: then KnowBERT's ``L_EL`` joins the loss, ``KarEntityHead``),
which the registry's collator (``VariantSpec.wrap_collator``) and the head's pipeline
(``pipeline_entity_kb``) add from the entity-task features.

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, can_return_tuple

from .checks_gesa import KAR_NULL_CANDIDATE, pop_inputs
from .loading_gesa import PipelineSpec
from .modeling_gesa import GesaInputs, with_inputs_of
from .modeling_gesa_entity import (
    GesaEntityHeadBase,
    GesaForEntityClassification,
    GesaForEntityPairClassification,
    GesaForEntitySpanClassification,
    MaskedLmNspHeads,
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


def linking_accuracy_counts(
    scores: torch.Tensor,
    candidate_ids: torch.Tensor,
    priors: torch.Tensor | None,
    gold: torch.Tensor,
    null_mask: torch.Tensor | None = None,
) -> dict[str, tuple[float, int]]:
    """Over the mentions with a gold candidate (`gold >= 0`), each metric's `(hits, items)`: how many the linker
    (highest `psi`; NULL where `null_mask`: no candidate passed the threshold) and the prior alone (highest prior)
    link to the gold entity (the same KB row, or NULL), out of the mentions (`linking_accuracy`,
    `linking_prior_accuracy`); and the linker's NULL precision (right NULLs out of its NULLs,
    `linking_null_precision`) and recall (out of the gold NULLs, `linking_null_recall`)."""
    rows, mentions = (gold >= 0).nonzero(as_tuple=True)
    if rows.numel() == 0:
        return {}
    ids = candidate_ids[rows, mentions]  # (M, K)
    target = ids.gather(1, gold[rows, mentions][:, None])[:, 0]
    valid = ids != -1
    picked = {
        "linking_accuracy": ids.gather(
            1, scores[rows, mentions].masked_fill(~valid, float("-inf")).argmax(-1, keepdim=True)
        )[:, 0]
    }
    if null_mask is not None:
        picked["linking_accuracy"] = picked["linking_accuracy"].masked_fill(
            null_mask[rows, mentions], KAR_NULL_CANDIDATE
        )
    if priors is not None:
        picked["linking_prior_accuracy"] = ids.gather(
            1, priors[rows, mentions].masked_fill(~valid, float("-inf")).argmax(-1, keepdim=True)
        )[:, 0]
    counts = {name: (float((choice == target).sum()), int(rows.numel())) for name, choice in picked.items()}
    linker_null, gold_null = picked["linking_accuracy"] == KAR_NULL_CANDIDATE, target == KAR_NULL_CANDIDATE
    both = float((linker_null & gold_null).sum())
    counts["linking_null_precision"] = (both, int(linker_null.sum()))
    counts["linking_null_recall"] = (both, int(gold_null.sum()))
    return counts


class KarPreTrainingInputs(GesaInputs, total=False):
    """KAR pre-training's own inputs: the MLM and NSP labels."""

    labels: torch.LongTensor | None
    next_sentence_label: torch.LongTensor | None


@dataclass
class KarPreTrainingOutput(ModelOutput):
    """
    Args:
        loss: `mlm_loss + nsp_loss + kar_linking_loss_weight * linking_loss` (those given).
        mlm_loss: cross-entropy of the masked words (`labels`).
        nsp_loss: cross-entropy of next-sentence prediction (`next_sentence_label`), when the batch has pairs.
        linking_loss: KnowBERT's `L_EL` over the mentions with gold links (`kar_gold_candidates`).
        logits: `(B, L, V)` word logits. nsp_logits: `(B, 2)`.
        linking_scores: `(B, C, K)` the linker's `psi`.
    """

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    nsp_loss: torch.FloatTensor | None = None
    linking_loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    nsp_logits: torch.FloatTensor | None = None
    linking_scores: torch.FloatTensor | None = None


class KarForPreTraining(MaskedLmNspHeads, KarPreTrainedModel, GesaEntityHeadBase):
    """KnowBERT's pre-training of the KAR block (seed 004, "the entity linkers and self-supervised language modeling
    objective are jointly trained end-to-end in a multitask setting"): BERT's masked language modelling and
    next-sentence prediction (`MaskedLmNspHeads`) on KAR's encoder, plus the linker's `L_EL` where gold links are
    given; `loss = mlm_loss + nsp_loss + kar_linking_loss_weight * linking_loss` (those given), each kept apart for the
    log; while evaluating, the linker's accuracy and the prior's on the gold links, and the linker's NULL precision
    and recall (`linking_accuracy_counts`, `pop_evaluation_metrics`: percent). Its checkpoint starts the entity heads and the ReCoRD head
    (`KarForEntitySpanQA`) with the pre-trained KAR block: only the task head is new."""

    base_model_class = KarModel

    def __init__(self, config: object) -> None:
        super().__init__(config)
        self.build_pretraining_heads(config)
        self.post_init()

    @can_return_tuple
    @with_inputs_of(KarModel.forward, own=KarPreTrainingInputs)
    def forward(
        self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[KarPreTrainingInputs]
    ) -> KarPreTrainingOutput:
        """`labels` `(B, L)` word ids at masked words (-100 elsewhere); `next_sentence_label` `(B,)` (0: the second
        sentence follows the first, 1: a random one); the encoder's inputs, KAR's included (`KarModel.forward`:
        `kar_gold_candidates` gives `linking_loss`)."""
        labels, next_sentence_label = pop_inputs(kwargs, KarPreTrainingInputs)
        outputs = self.gesa(input_ids, return_dict=True, **kwargs)
        logits, mlm_loss, nsp_logits, nsp_loss = self.masked_lm_and_nsp(
            outputs.last_hidden_state, labels, next_sentence_label
        )
        linking = outputs.linking_loss
        weighted = None if linking is None else self.config.kar_linking_loss_weight * linking
        loss = self.log_losses({"mlm_loss": mlm_loss, "nsp_loss": nsp_loss, "linking_loss": weighted})
        if self.training and linking is not None and self.config.kar_linking_loss_weight != 1:
            self.logged_losses["linking_loss"][-1] = float(linking.detach())  # logged unweighted, as fine-tuning's
        gold, ids = kwargs.get("kar_gold_candidates"), kwargs.get("kar_candidate_ids")
        if not self.training and gold is not None and ids is not None and outputs.linking_scores is not None:
            counts = linking_accuracy_counts(
                outputs.linking_scores, ids, kwargs.get("kar_candidate_priors"), gold, outputs.null_mask
            )
            for name, (hits, total) in counts.items():
                self.count_for_evaluation({name: hits}, total)
        return KarPreTrainingOutput(
            loss=loss,
            mlm_loss=mlm_loss,
            nsp_loss=nsp_loss,
            linking_loss=linking,
            logits=logits,
            nsp_logits=nsp_logits,
            linking_scores=outputs.linking_scores,
        )


KarForEntityClassification.register_for_auto_class("AutoModelForSequenceClassification")
KarForEntityPairClassification.register_for_auto_class("AutoModelForSequenceClassification")
KarForEntitySpanClassification.register_for_auto_class("AutoModelForTokenClassification")
KarForPreTraining.register_for_auto_class("AutoModelForPreTraining")

__all__ = [
    "KarEntityHead",
    "KarForEntityClassification",
    "KarForEntityPairClassification",
    "KarForEntitySpanClassification",
    "KarForPreTraining",
    "KarPreTrainingOutput",
    "linking_accuracy_counts",
]

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
"""KnowBERT's Knowledge Attention and Recontextualization (KAR) on GESA's LUKE backbone.

Peters et al. 2019, "Knowledge Enhanced Contextual Word Representations" (seed 004; spec `variants.md`). The KAR block
sits between backbone layers `kar_layer` and `kar_layer + 1` and rewrites the word states `H` (B, L, D):

1. `H_proj = H W1 + b1` (hidden D -> entity dim E).
2. `s_m`: self-attentive pooling of `H_proj` over mention m's word span; then one transformer layer of mention-span
   self-attention among the C mentions (KnowBERT's span encoder).
3. Linker: `psi_mk = MLP([s_m . e_mk / sqrt(E) ; prior_mk])` for each candidate KB entity `e_mk`; optional supervised
   loss `L_EL = -sum_m log softmax(psi_m)[gold]`.
4. `psi~` = softmax over the candidates with `psi >= delta`, 0 below; `e~_m = sum_k psi~_mk e_mk`, or the NULL
   embedding when no candidate passes; `s'_m = s_m + e~_m`.

With `kar_layer_norms` (default), KnowBERT's released code's three LayerNorms: the KB vectors `e_mk` (not the NULL
embedding) before steps 3-4 (`kg_layer_norm`), the pooled spans before the span encoder (`projected_span_layer_norm`)
and `s'_m = LayerNorm(s_m + dropout(e~_m))` (`weighted_entity_layer_norm`): the KB enters on the scale of the word
states whatever its vectors' norm (PyKEEN's TransE vectors have norm 1, the LayerNormed spans `sqrt(E)`).
5. `H'_proj = MLP(MultiHeadAttn(H_proj, S', S'))` (KnowBERT's span-attention layer: attention and feed-forward,
   each with residual + LayerNorm); `H' = dropout(H'_proj W2 + b2) + H`, `W2` initialised as the pseudo-inverse of
   `W1` (`kar_output_init="pinv"`) or as zero (`"zero"`: the model starts as its backbone).

LUKE's entity tokens pass the block unchanged. The KB is the backbone's entity table unless a separate one is set;
either way it is frozen (KnowBERT's fixed KB embeddings): the entity table is read detached for `e_mk`.

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput

from .checks_gesa import KAR_NULL_CANDIDATE, check_kar_inputs, pop_inputs
from .configuration_variants import KarConfig
from .loading_gesa import PipelineSpec
from .modeling_gesa import (
    ENTITY_CLOZE_TASK,
    GesaEntitySpanQAOutput,
    GesaForEntitySpanQA,
    GesaInputs,
    GesaModel,
    GesaModelOutput,
    LayerBlocks,
    with_inputs_of,
)
from .modeling_variants import EntityAttention, KnowledgeBase, KnowledgePreTrainedModel, knowledge_table

KAR_INPUTS = ("kar_mention_spans", "kar_candidate_ids", "kar_candidate_priors", "kar_gold_candidates")

# ---------------------------------------------------------------------------------------------
# Building blocks in the entity dimension
# ---------------------------------------------------------------------------------------------


class KarAttention(EntityAttention):
    """Multi-head attention of queries `(B, Q, E)` over keys/values `(B, S, E)` (`kar_num_attention_heads` heads);
    BERT-style output sublayer (`EntityAttention`)."""

    def __init__(self, config: KarConfig) -> None:
        super().__init__(config, config.kar_num_attention_heads)


class KarFeedForward(nn.Module):
    """`LayerNorm(x + dropout(W_b act(W_a x + c_a) + c_b))` in the entity dimension."""

    def __init__(self, config: KarConfig) -> None:
        super().__init__()
        self.intermediate = nn.Linear(config.entity_emb_size, config.kar_intermediate_size)
        self.activation = ACT2FN[config.hidden_act]
        self.output = nn.Linear(config.kar_intermediate_size, config.entity_emb_size)
        self.LayerNorm = nn.LayerNorm(config.entity_emb_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(x + self.dropout(self.output(self.activation(self.intermediate(x)))))


class KarTransformerLayer(nn.Module):
    """Attention (queries over keys) then feed-forward: KnowBERT's span encoder and span-attention layer."""

    def __init__(self, config: KarConfig) -> None:
        super().__init__()
        self.attention = KarAttention(config)
        self.feed_forward = KarFeedForward(config)

    def forward(
        self, queries: torch.Tensor, keys: torch.Tensor, key_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        attended, probs = self.attention(queries, keys, key_mask)
        return self.feed_forward(attended), probs


class KarLinker(nn.Module):
    """KnowBERT's `DotAttentionWithPrior`: `psi_mk = w2 . relu(W1 [s_m . e_mk / sqrt(E) ; prior_mk] + b1) + b2`."""

    def __init__(self, config: KarConfig) -> None:
        super().__init__()
        self.hidden = nn.Linear(2, config.kar_linker_hidden_size)
        self.score = nn.Linear(config.kar_linker_hidden_size, 1)

    def forward(
        self, spans: torch.Tensor, candidate_embeddings: torch.Tensor, candidate_priors: torch.Tensor
    ) -> torch.Tensor:
        """`(B, C, E)`, `(B, C, K, E)`, `(B, C, K)` -> raw scores `psi` `(B, C, K)` (invalid candidates not masked)."""
        dot = (spans.unsqueeze(2) * candidate_embeddings).sum(-1) / math.sqrt(candidate_embeddings.size(-1))
        features = torch.stack([dot, candidate_priors.to(dot.dtype)], dim=-1)
        return self.score(F.relu(self.hidden(features))).squeeze(-1)


def threshold_link_weights(
    scores: torch.Tensor, candidate_mask: torch.Tensor, threshold: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Step 4's `psi~`: softmax over valid candidates with `psi >= threshold`, exactly 0 for the others.

    Args:
        scores: `(B, C, K)` raw linker scores `psi`.
        candidate_mask: bool `(B, C, K)`, True for real candidates.
        threshold: `delta`.

    Returns:
        weights `(B, C, K)` (each row sums to 1, or to 0 when nothing passes) and bool `(B, C)` "some candidate
        passed" (False rows take the NULL embedding).
    """
    passing = candidate_mask & (scores >= threshold)
    logits = scores.masked_fill(~passing, torch.finfo(scores.dtype).min)
    weights = torch.softmax(logits, dim=-1) * passing.to(scores.dtype)
    return weights, passing.any(dim=-1)


# ---------------------------------------------------------------------------------------------
# The KAR block
# ---------------------------------------------------------------------------------------------


class KarLayer(GradientCheckpointingLayer):
    """Steps 1-5 of the module docstring; `bert_to_kg` is `W1, b1` and `kg_to_bert` is `W2, b2`."""

    def __init__(self, config: KarConfig) -> None:
        super().__init__()
        self.config = config
        size = config.entity_emb_size
        self.bert_to_kg = nn.Linear(config.hidden_size, size)
        self.span_attention_logits = nn.Linear(size, 1)
        self.span_encoder = KarTransformerLayer(config)
        self.linker = KarLinker(config)
        self.null_embedding = nn.Parameter(torch.zeros(size))
        if config.kar_layer_norms:  # KnowBERT's released code: kg_layer_norm, projected_span_ and weighted_entity_
            self.kb_layer_norm = nn.LayerNorm(size, eps=1e-5)
            self.span_layer_norm = nn.LayerNorm(size, eps=1e-5)
            self.enhanced_layer_norm = nn.LayerNorm(size, eps=1e-5)
        self.recontextualizer = KarTransformerLayer(config)
        self.kg_to_bert = nn.Linear(size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def pool_spans(self, projected: torch.Tensor, mention_spans: torch.Tensor) -> torch.Tensor:
        """Self-attentive span pooling: `(B, L, E)`, `(B, C, 2)` inclusive spans (-1 padded) -> `(B, C, E)`."""
        positions = torch.arange(projected.size(1), device=projected.device)
        inside = (positions[None, None, :] >= mention_spans[..., :1]) & (
            positions[None, None, :] <= mention_spans[..., 1:]
        )
        inside = inside & (mention_spans[..., :1] >= 0)
        logits = self.span_attention_logits(projected).squeeze(-1)[:, None, :]  # (B, 1, L)
        logits = logits.masked_fill(~inside, torch.finfo(logits.dtype).min)
        weights = torch.softmax(logits, dim=-1) * inside.to(logits.dtype)
        return torch.matmul(weights, projected)

    def forward(
        self,
        words: torch.Tensor,
        mention_spans: torch.Tensor,
        candidate_embeddings: torch.Tensor,
        candidate_priors: torch.Tensor,
        candidate_mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Steps 1-5 on one batch.

        Args:
            words: `(B, L, D)` backbone word states `H` after layer `kar_layer`.
            mention_spans: `(B, C, 2)` inclusive word spans of the candidate mentions, `-1` padded.
            candidate_embeddings: `(B, C, K, E)` KB embeddings `e_mk` of each mention's candidates.
            candidate_priors: `(B, C, K)` priors `p_mk`.
            candidate_mask: bool `(B, C, K)`, True for real candidates.

        Returns (a tuple, so that gradient checkpointing can wrap the block):
            words `(B, L, D)`: the recontextualised `H'`;
            linking_scores `(B, C, K)`: `psi`, `finfo.min` for padded candidates;
            linking_weights `(B, C, K)`: `psi~`;
            span_states `(B, C, E)`: the knowledge-enhanced spans `s'_m`;
            null_mask bool `(B, C)`: True where the mention took the NULL embedding;
            span_attentions `(B, H, L, C)`: the word-to-span attention of the recontextualisation.
        """
        span_mask = mention_spans[..., 0] >= 0
        projected = self.bert_to_kg(words)
        spans = self.pool_spans(projected, mention_spans)
        if self.config.kar_layer_norms:
            spans = self.span_layer_norm(spans)
        spans, _ = self.span_encoder(spans, spans, span_mask)
        scores = self.linker(spans, candidate_embeddings, candidate_priors)
        weights, linked = threshold_link_weights(scores, candidate_mask, self.config.kar_entity_threshold)
        entity = torch.einsum("bck,bcke->bce", weights, candidate_embeddings)
        entity = torch.where(linked[..., None], entity, self.null_embedding.to(entity.dtype))
        if self.config.kar_layer_norms:
            enhanced = self.enhanced_layer_norm(spans + self.dropout(entity))
        else:
            enhanced = spans + entity
        recontextualised, span_attentions = self.recontextualizer(projected, enhanced, span_mask)
        new_words = self.dropout(self.kg_to_bert(recontextualised)) + words
        linking_scores = scores.masked_fill(~candidate_mask, torch.finfo(scores.dtype).min)
        return new_words, linking_scores, weights, enhanced, ~linked, span_attentions


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


@dataclass
class KarModelOutput(GesaModelOutput):
    """`GesaModelOutput` (the state after layer `kar_layer` is recorded after the KAR block) plus the KAR block's
    linking results.

    Args:
        linking_scores: `(B, C, K)` linker scores `psi` (`finfo.min` for padded candidates).
        linking_weights: `(B, C, K)` `psi~`.
        null_mask: bool `(B, C)`, True where the mention took the NULL embedding.
        linking_loss: scalar `L_EL` (per-example sum over mentions, batch mean) when `kar_gold_candidates` is given.
    """

    linking_scores: torch.FloatTensor | None = None
    linking_weights: torch.FloatTensor | None = None
    null_mask: torch.BoolTensor | None = None
    linking_loss: torch.FloatTensor | None = None


class KarPreTrainedModel(KnowledgePreTrainedModel):
    """GESA's pre-trained base with the frozen KB (`KnowledgePreTrainedModel`) and a KAR block."""

    config_class = KarConfig
    _no_split_modules = ["GesaLayer", "GesaEntityEmbeddings", "KarLayer"]
    knowledge_inputs = "kar"

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """As `KnowledgePreTrainedModel`. KAR: NULL embedding 0; `W2 = pinv(W1)`, `b2 = -W2 b1` (or 0); the
        linker's output bias `delta + 1`, so that at the start every candidate passes the threshold and the task loss
        reaches the linker even without supervised linking (KnowBERT pre-trained its linkers with `L_EL` first)."""
        super()._init_weights(module)
        if isinstance(module, KarLayer):
            init.zeros_(module.null_embedding)
            # psi = delta + 1 + c * prior (c > 0) at the start: every candidate passes the threshold and the linker's
            # choice follows the prior; the context term (dot-product column) starts at 0 and is learned
            hidden = module.linker.hidden
            prior_only = torch.stack([torch.zeros_like(hidden.weight[:, 0]), hidden.weight[:, 1].abs() + 1e-3], 1)
            init.copy_(hidden.weight, prior_only)
            init.zeros_(hidden.bias)
            init.copy_(module.linker.score.weight, module.linker.score.weight.abs() + 1e-3)
            init.constant_(module.linker.score.bias, float(self.config.kar_entity_threshold) + 1.0)
            if self.config.kar_output_init == "pinv":
                w1 = module.bert_to_kg.weight.float()  # (E, D): H_proj = W1 h + b1
                w2 = torch.linalg.pinv(w1)  # (D, E): W1 W2 = I_E
                init.copy_(module.kg_to_bert.weight, w2.to(module.kg_to_bert.weight.dtype))
                init.copy_(
                    module.kg_to_bert.bias, (-(w2 @ module.bert_to_kg.bias.float())).to(module.kg_to_bert.bias.dtype)
                )
            else:
                init.zeros_(module.kg_to_bert.weight)
                init.zeros_(module.kg_to_bert.bias)


class KarInputs(GesaInputs, total=False):
    """KAR's inputs: the mention spans, their KB candidates and priors, and the gold candidate for the linking loss."""

    kar_mention_spans: torch.LongTensor | None
    kar_candidate_ids: torch.LongTensor | None
    kar_candidate_priors: torch.Tensor | None
    kar_gold_candidates: torch.LongTensor | None


class KarModel(KarPreTrainedModel, GesaModel):
    """GESA's encoder with the KAR block after layer `kar_layer`.

    Inputs: GESA's (README "Model inputs") plus the KAR candidates:

    - `kar_mention_spans` `(B, C, 2)` long: inclusive word spans of candidate mentions, `-1` padded. Default: the
      spans of the real, non-placeholder LUKE entities (`entity_position_ids`).
    - `kar_candidate_ids` `(B, C, K)` long: KB rows of each mention's candidates, `-1` padded,
      `KAR_NULL_CANDIDATE` (-2) for KnowBERT's NULL entity (embedding: the learned NULL embedding). Default: none
      (every mention takes the NULL embedding).
    - `kar_candidate_priors` `(B, C, K)` float: candidate priors (e.g. alias-table probabilities). Default: uniform
      over each mention's real candidates.
    - `kar_gold_candidates` `(B, C)` long: index of the gold candidate in `[0, K)` or `-1` (no supervision); gives
      `linking_loss`.
    """

    def build_variant_modules(self, config: KarConfig) -> None:
        # kar_num_layers=0: knowledge off, the backbone alone (no KAR parameters at all)
        self.kar = KarLayer(config) if config.kar_num_layers else None
        self.knowledge_base = KnowledgeBase(config.kb_size, config.entity_emb_size) if config.kb_size else None

    def _kar_inputs(
        self,
        batch_size: int,
        word_length: int,
        device: torch.device,
        entity_position_ids: torch.Tensor | None,
        entity_attention_mask: torch.Tensor | None,
        placeholder_entity_mask: torch.Tensor | None,
        kar_mention_spans: torch.Tensor | None,
        kar_candidate_ids: torch.Tensor | None,
        kar_candidate_priors: torch.Tensor | None,
        kar_gold_candidates: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Check the KAR inputs (`checks_gesa.check_kar_inputs`), fill the defaults; returns spans `(B,C,2)`, ids
        `(B,C,K)`, priors, gold."""
        if kar_mention_spans is None and kar_candidate_ids is None:
            kar_mention_spans = self._spans_from_entities(
                batch_size, device, entity_position_ids, entity_attention_mask, placeholder_entity_mask
            )
        check_kar_inputs(
            kar_mention_spans,
            kar_candidate_ids,
            kar_candidate_priors,
            kar_gold_candidates,
            batch_size,
            word_length,
            knowledge_table(self).size(0),
        )
        if kar_candidate_ids is None:
            kar_candidate_ids = torch.full(
                (batch_size, kar_mention_spans.size(1), 1), -1, dtype=torch.long, device=device
            )
        if kar_candidate_priors is None:
            valid = (kar_candidate_ids >= 0) | (kar_candidate_ids == KAR_NULL_CANDIDATE)
            kar_candidate_priors = valid.float() / valid.sum(-1, keepdim=True).clamp(min=1)
        return kar_mention_spans, kar_candidate_ids, kar_candidate_priors, kar_gold_candidates

    @staticmethod
    def _spans_from_entities(
        batch_size: int,
        device: torch.device,
        entity_position_ids: torch.Tensor | None,
        entity_attention_mask: torch.Tensor | None,
        placeholder_entity_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        if entity_position_ids is None:
            return torch.full((batch_size, 1, 2), -1, dtype=torch.long, device=device)
        present = entity_position_ids >= 0
        start = entity_position_ids.masked_fill(~present, torch.iinfo(torch.long).max).amin(-1)
        end = entity_position_ids.amax(-1)
        real = present.any(-1)
        if entity_attention_mask is not None:
            real = real & entity_attention_mask.bool()
        if placeholder_entity_mask is not None:
            real = real & ~placeholder_entity_mask.bool()
        spans = torch.stack([start, end], dim=-1)
        return torch.where(real[..., None], spans, torch.full_like(spans, -1))

    @with_inputs_of(GesaModel.forward, own=KarInputs)
    def forward(self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[KarInputs]) -> KarModelOutput:
        """Encode words `(B, L)` and entities `(B, E)` (GESA's inputs, `kwargs`) with the KAR block after layer
        `kar_layer`; the KAR inputs are described in the module docstring and the KAR model card."""
        kar_mention_spans, kar_candidate_ids, kar_candidate_priors, kar_gold_candidates = pop_inputs(kwargs, KarInputs)
        kar_inputs = {
            "kar_mention_spans": kar_mention_spans,
            "kar_candidate_ids": kar_candidate_ids,
            "kar_candidate_priors": kar_candidate_priors,
            "kar_gold_candidates": kar_gold_candidates,
        }
        return super().forward(input_ids, variant_inputs=kar_inputs, **kwargs)

    def layer_blocks(self, inputs: dict, words: torch.Tensor) -> KarBlocks:
        batch_size, word_length = words.shape[:2]
        if self.kar is None:
            given = [name for name in KAR_INPUTS if inputs[name] is not None]
            if given:
                raise ValueError(
                    f"{', '.join(given)} given to a model without a KAR block (kar_num_layers=0, knowledge off): "
                    "drop them, or use a model with kar_num_layers=1."
                )
            return KarBlocks(self, None, None, None, None, None)
        spans, candidate_ids, priors, gold = self._kar_inputs(
            batch_size,
            word_length,
            words.device,
            inputs["entity_position_ids"],
            inputs["entity_attention_mask"],
            inputs["placeholder_entity_mask"],
            inputs["kar_mention_spans"],
            inputs["kar_candidate_ids"],
            inputs["kar_candidate_priors"],
            inputs["kar_gold_candidates"],
        )
        null = candidate_ids == KAR_NULL_CANDIDATE
        in_kb = candidate_ids >= 0
        table = knowledge_table(self)
        candidate_embeddings = table[candidate_ids.clamp(min=0)]
        if self.config.kar_layer_norms:  # KnowBERT's kg_layer_norm: the KB on the word states' scale
            candidate_embeddings = self.kar.kb_layer_norm(candidate_embeddings.to(self.kar.kb_layer_norm.weight.dtype))
        candidate_embeddings = candidate_embeddings * in_kb[..., None].to(candidate_embeddings.dtype)
        # KnowBERT's NULL candidate: the learned NULL embedding (trained through the linker's weights)
        null_embedding = self.kar.null_embedding.to(candidate_embeddings.dtype)
        candidate_embeddings = torch.where(null[..., None], null_embedding, candidate_embeddings)
        return KarBlocks(self, spans, candidate_embeddings.to(words.dtype), priors, in_kb | null, gold)


class KarBlocks(LayerBlocks):
    """The KAR block between layers `kar_layer` and `kar_layer + 1` of `GesaEncoder`; its linking results join the
    output (`KarModelOutput`)."""

    def __init__(
        self,
        model: KarModel,
        spans: torch.Tensor | None,
        candidate_embeddings: torch.Tensor | None,
        priors: torch.Tensor | None,
        candidate_mask: torch.Tensor | None,
        gold: torch.Tensor | None,
    ) -> None:
        self.model, self.spans, self.candidate_embeddings = model, spans, candidate_embeddings
        self.priors, self.candidate_mask, self.gold = priors, candidate_mask, gold
        self.block = None

    def between(self, done: int, words: torch.Tensor, entities: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        if self.model.kar is None or done != self.model.config.kar_layer:
            return words, entities
        self.block = self.model.kar(words, self.spans, self.candidate_embeddings, self.priors, self.candidate_mask)
        return self.block[0], entities

    def output(self, encoded: ModelOutput) -> KarModelOutput:
        if self.block is None:  # knowledge off (kar_num_layers=0)
            return KarModelOutput(**encoded)
        _, linking_scores, linking_weights, _, null_mask, _ = self.block
        linking_loss = None
        if self.gold is not None:
            log_probs = torch.log_softmax(linking_scores.float(), dim=-1)
            supervised = self.gold >= 0
            picked = log_probs.gather(2, self.gold.clamp(min=0)[..., None])[..., 0]
            linking_loss = -(picked * supervised).sum() / linking_scores.size(0)
        return KarModelOutput(
            **encoded,
            linking_scores=linking_scores,
            linking_weights=linking_weights,
            null_mask=null_mask,
            linking_loss=linking_loss,
        )


@dataclass
class KarEntitySpanQAOutput(GesaEntitySpanQAOutput):
    """
    Args:
        loss: task BCE (when `labels`) + `kar_linking_loss_weight * linking_loss` (when `kar_gold_candidates`).
        logits: `(B, E)` candidate scores; the placeholder and padded entities hold `finfo.min`.
        linking_loss: scalar `L_EL`, when `kar_gold_candidates` is given.
        linking_scores: `(B, C, K)` linker scores `psi`.
        linking_weights: `(B, C, K)` `psi~`.
    """

    linking_loss: torch.FloatTensor | None = None
    linking_scores: torch.FloatTensor | None = None
    linking_weights: torch.FloatTensor | None = None


class KarForEntitySpanQA(KarPreTrainedModel, GesaForEntitySpanQA):
    """ReCoRD with KnowBERT-KAR: GESA's head (paper 3.5) on the entity states of `KarModel`, which takes the KAR
    inputs (`kar_mention_spans`, `kar_candidate_ids`, `kar_candidate_priors`, `kar_gold_candidates`) through the
    head's keyword inputs. `loss` = task BCE (with `labels`) + `kar_linking_loss_weight * L_EL` (with gold links)."""

    base_model_class = KarModel
    output_class = KarEntitySpanQAOutput
    pipeline = PipelineSpec(ENTITY_CLOZE_TASK, "pipeline_kb.KnowledgeClozeQAPipeline")

    def auxiliary_loss(self, outputs: KarModelOutput) -> torch.Tensor | None:
        if outputs.linking_loss is None:
            return None
        return self.config.kar_linking_loss_weight * outputs.linking_loss


KarConfig.register_for_auto_class()
KarModel.register_for_auto_class("AutoModel")
KarForEntitySpanQA.register_for_auto_class("AutoModelForQuestionAnswering")

__all__ = [
    "KarEntitySpanQAOutput",
    "KarForEntitySpanQA",
    "KarLayer",
    "KarModel",
    "KarModelOutput",
    "KarPreTrainedModel",
    "threshold_link_weights",
]

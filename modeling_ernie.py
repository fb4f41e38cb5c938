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
"""ERNIE's knowledgeable encoder (information fusion) on GESA's LUKE backbone.

Zhang et al. 2019, "ERNIE: Enhanced Language Representation with Informative Entities" (seed 004; spec
`variants.md`). Below the top M layers (`ernie_num_fusion_layers`) the backbone runs unchanged (ERNIE's T-Encoder).
In each of the top M layers (the K-Encoder's aggregators):

- token stream: the backbone layer's own attention gives `w~_j` for every token (LUKE's entity tokens included);
- entity stream: the knowledge entities `e_k` (frozen KB embeddings, as ERNIE's fixed TransE vectors: LUKE's entity
  table read detached, or a user-supplied one), each aligned to the first word token of its mention, have their own
  multi-head self-attention (+ residual, LayerNorm), giving `e~_k`;
- information fusion, for token j aligned to entity k:
      h_j = gelu(W~_t w~_j + W~_e e~_k + b~);  w_j = out_t(h_j);  e_k = out_e(h_j)
  and for a token with no aligned entity `h_j = gelu(W~_t w~_j + b~)`, `w_j = out_t(h_j)`.
- the head's entity (`ernie_head_entity`, ERNIE's released fine-tuning code: its `[CLS]` has an entity slot): a slot
  `ERNIE_HEAD_ENTITY` aligned to the token a task head reads (the opening marker), zero input, which gathers the
  sequence's entities in the entity self-attention and is fused into that token like any aligned entity.
  `W~_t, b~` are the backbone layer's FFN input (`intermediate.dense`) and `W_t, b_t` its FFN output
  (`output.dense`); `W~_e, W_e, b_e` are new. With `ernie_fusion_output="residual_layernorm"` (default, ERNIE's
  released code and the backbone's own sublayer) `out_t(h_j) = LayerNorm(w~_j + dropout(W_t h_j + b_t))` and
  `out_e(h_j) = LayerNorm_e(e~_k + dropout(W_e h_j + b_e))`; with `"gelu"` the paper's equations literally,
  `out_t(h_j) = gelu(W_t h_j + b_t)`, `out_e(h_j) = gelu(W_e h_j + b_e)`.

Optional dEA pre-training (`ErnieForDenoisingEntityAutoencoder`): `p(e_j | w_i) = softmax_j(linear(w_i) . e_j)` over
the sequence's entities, inputs corrupted by `corrupt_entity_alignments` (5% replaced, 15% alignment masked, 80% kept).

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, TransformersKwargs, can_return_tuple

from .checks_gesa import ERNIE_HEAD_ENTITY, check_kb_ids, check_shape, pop_inputs
from .configuration_variants import ErnieConfig
from .loading_gesa import PipelineSpec
from .modeling_gesa import (
    ENTITY_CLOZE_TASK,
    AttentionStructure,
    GesaForEntitySpanQA,
    GesaHeadBase,
    GesaInputs,
    GesaLayer,
    GesaModel,
    LayerBlocks,
    with_inputs_of,
)
from .modeling_variants import EntityAttention, KnowledgeBase, KnowledgePreTrainedModel, knowledge_table


class ErnieEntityAttention(EntityAttention):
    """The entity stream's multi-head self-attention (`ernie_entity_num_attention_heads` heads), with BERT's output
    sublayer: `e~ = LayerNorm(e + dropout(W_o MultiHead(e, e, e)))`; an entity attends to the real entities of its
    sequence."""

    def __init__(self, config: ErnieConfig) -> None:
        super().__init__(config, config.ernie_entity_num_attention_heads)

    def forward(self, entities: torch.Tensor, entity_mask: torch.Tensor) -> torch.Tensor:
        """`(B, N, E)`, bool `(B, N)` -> `(B, N, E)`."""
        return super().forward(entities, entities, entity_mask)[0]


class ErnieFusionLayer(GradientCheckpointingLayer):
    """One aggregator: the backbone layer's attention, the entity stream's attention, the information fusion.

    Holds only ERNIE's new parameters; the backbone layer (attention, `W~_t`, `W_t`) is passed to `forward`, so the
    backbone keeps its checkpoint names (`encoder.layer.N.*`).
    """

    def __init__(self, config: ErnieConfig) -> None:
        super().__init__()
        self.config = config
        self.entity_attention = ErnieEntityAttention(config)
        self.entity_to_intermediate = nn.Linear(config.entity_emb_size, config.intermediate_size, bias=False)  # W~_e
        self.intermediate_to_entity = nn.Linear(config.intermediate_size, config.entity_emb_size)  # W_e, b_e
        self.entity_LayerNorm = nn.LayerNorm(config.entity_emb_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.output_act = ACT2FN["gelu"]

    def forward(
        self,
        layer: GesaLayer,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        knowledge: torch.Tensor,
        knowledge_mask: torch.Tensor,
        alignment: torch.Tensor,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor | None]:
        """
        Args:
            layer: the backbone layer this aggregator replaces.
            words: `(B, L, D)`; entities: `(B, E, D)` LUKE entity tokens or None; structure: the attention structure.
            knowledge: `(B, N, E_kb)` knowledge-entity stream `e_k`.
            knowledge_mask: bool `(B, N)`, True for real knowledge entities.
            alignment: `(B, N)` word index `j` of each knowledge entity (the first token of its mention); any value
                for padding.
            kwargs: transformers' keywords, passed to the backbone layer's attention.

        Returns:
            words `(B, L, D)`, LUKE entities `(B, E, D)` or None, knowledge `(B, N, E_kb)` (0 in padded slots),
            attention probabilities.
        """
        word_length = words.size(1)
        attended, probs = layer.attention(words, entities, structure, output_attentions, **kwargs)  # w~, (B, P, D)
        knowledge_attended = self.entity_attention(knowledge, knowledge_mask)  # e~, (B, N, E_kb)
        pre = layer.intermediate.dense(attended)  # W~_t w~_j + b~, (B, P, I)
        entity_term = self.entity_to_intermediate(knowledge_attended) * knowledge_mask[..., None].to(pre.dtype)
        index = alignment.clamp(0, word_length - 1)[..., None].expand_as(entity_term)
        pre = torch.cat([pre[:, :word_length].scatter_add(1, index, entity_term), pre[:, word_length:]], dim=1)
        hidden = layer.intermediate.intermediate_act_fn(pre)  # h_j, (B, P, I)
        aligned_hidden = hidden.gather(1, index)  # h_j(k), (B, N, I)
        if self.config.ernie_fusion_output == "residual_layernorm":
            tokens = layer.output(hidden, attended)
            new_knowledge = self.entity_LayerNorm(
                knowledge_attended + self.dropout(self.intermediate_to_entity(aligned_hidden))
            )
        else:
            tokens = self.output_act(layer.output.dense(hidden))
            new_knowledge = self.output_act(self.intermediate_to_entity(aligned_hidden))
        # padded slots (no entity) gathered word 0's hidden state above: keep them at exactly 0
        new_knowledge = new_knowledge * knowledge_mask[..., None].to(new_knowledge.dtype)
        new_entities = None if entities is None else tokens[:, word_length:]
        return tokens[:, :word_length], new_entities, new_knowledge, probs


@dataclass
class ErnieModelOutput(ModelOutput):
    """`GesaModelOutput` plus the knowledge-entity stream.

    Args:
        last_hidden_state: `(B, L, D)`; entity_last_hidden_state: `(B, E, D)` LUKE entity tokens; pooler_output.
        knowledge_last_hidden_state: `(B, N, E_kb)` knowledge-entity stream after the last fusion layer; padded slots
            (`ernie_entity_ids == -1`) hold 0.
        hidden_states, entity_hidden_states, attentions: per layer, as in `GesaModelOutput`.
    """

    last_hidden_state: torch.FloatTensor | None = None
    entity_last_hidden_state: torch.FloatTensor | None = None
    pooler_output: torch.FloatTensor | None = None
    knowledge_last_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    entity_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class ErniePreTrainedModel(KnowledgePreTrainedModel):
    """GESA's pre-trained base with the frozen KB (`KnowledgePreTrainedModel`; `W~_e`, `W_e` initialised as GESA's
    linear layers, normal(0, initializer_range)) and ERNIE fusion."""

    config_class = ErnieConfig
    _no_split_modules = ["GesaLayer", "GesaEntityEmbeddings", "ErnieFusionLayer"]
    knowledge_inputs = "ernie"


class ErnieInputs(GesaInputs, total=False):
    """ERNIE's knowledge inputs: the aligned KB entities and the word each aligns to."""

    ernie_entity_ids: torch.LongTensor | None
    ernie_entity_positions: torch.LongTensor | None


class ErnieModel(ErniePreTrainedModel, GesaModel):
    """GESA's encoder whose top `ernie_num_fusion_layers` layers fuse a knowledge-entity stream into the words.

    Inputs: GESA's (README "Model inputs") plus

    - `ernie_entity_ids` `(B, N)` long: KB rows of the entities mentioned in the text, `-1` padded, or
      `ERNIE_HEAD_ENTITY` (-2) for the entity slot of a word the task head reads (zero input; with
      `ernie_head_entity`, else ignored);
    - `ernie_entity_positions` `(B, N)` long: word index of the first token of each entity's mention (the alignment),
      `-1` for padding only. At most one entity per word.

    Without `ernie_entity_ids` no token is aligned and the model computes exactly its backbone.
    """

    def build_variant_modules(self, config: ErnieConfig) -> None:
        self.fusion_layers = nn.ModuleList([ErnieFusionLayer(config) for _ in range(config.ernie_num_fusion_layers)])
        self.knowledge_base = KnowledgeBase(config.kb_size, config.entity_emb_size) if config.kb_size else None

    def _knowledge_inputs(
        self,
        batch_size: int,
        word_length: int,
        attention_mask: torch.Tensor,
        ernie_entity_ids: torch.Tensor | None,
        ernie_entity_positions: torch.Tensor | None,
        device: torch.device,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Check the knowledge inputs; returns ids `(B, N)` (-1 padded), mask `(B, N)`, alignment `(B, N)`."""
        if ernie_entity_ids is None:
            if ernie_entity_positions is not None:
                raise ValueError("ernie_entity_positions was given without ernie_entity_ids.")
            empty = torch.full((batch_size, 1), -1, dtype=torch.long, device=device)
            return empty, empty >= 0, empty.clamp(min=0)
        if ernie_entity_positions is None:
            raise ValueError(
                "ernie_entity_positions is required with ernie_entity_ids: the word index of the first token of each "
                "entity's mention (the token-entity alignment), -1 for padding."
            )
        if ernie_entity_ids.dim() != 2 or ernie_entity_ids.size(0) != batch_size:
            raise ValueError(
                f"ernie_entity_ids has shape {tuple(ernie_entity_ids.shape)}; expected (batch={batch_size}, entities)."
            )
        check_shape(
            "ernie_entity_positions", ernie_entity_positions, tuple(ernie_entity_ids.shape), "(batch, entities)"
        )
        special = (ERNIE_HEAD_ENTITY, "the entity slot of a word the head reads")
        check_kb_ids("ernie_entity_ids", ernie_entity_ids, knowledge_table(self).size(0), special)
        head_slots = ernie_entity_ids == ERNIE_HEAD_ENTITY
        if not self.config.ernie_head_entity:  # a model without the head's entity (saved before it): ignored
            ernie_entity_ids = ernie_entity_ids.masked_fill(head_slots, -1)
            ernie_entity_positions = ernie_entity_positions.masked_fill(head_slots, -1)
        real = ernie_entity_ids != -1
        if not torch.compiler.is_compiling() and real.any():
            positions = ernie_entity_positions[real]
            if (positions < 0).any():
                raise ValueError(
                    "ernie_entity_positions: every real entity (ernie_entity_ids >= 0) needs its alignment, the word "
                    "index of its mention's first token; found -1 (missing alignment)."
                )
            if (positions >= word_length).any():
                raise ValueError(
                    f"ernie_entity_positions must be word indices in [0, {word_length - 1}]; got "
                    f"{int(positions.max())}."
                )
            aligned = ernie_entity_positions.clamp(0, word_length - 1)
            if not attention_mask.bool().gather(1, aligned)[real].all():
                raise ValueError("ernie_entity_positions: an entity is aligned to a padding word (attention_mask 0).")
            counts = torch.zeros(batch_size, word_length, dtype=torch.long, device=device)
            counts.scatter_add_(1, aligned, real.long())
            if (counts > 1).any():
                raise ValueError("ernie_entity_positions: two entities are aligned to the same word; align each once.")
        return ernie_entity_ids, real, ernie_entity_positions.clamp(min=0)

    @with_inputs_of(GesaModel.forward, own=ErnieInputs)
    def forward(self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[ErnieInputs]) -> ErnieModelOutput:
        """Encode words `(B, L)`, LUKE entities `(B, E)` (GESA's inputs, `kwargs`) and knowledge entities `(B, N)`."""
        ernie_entity_ids, ernie_entity_positions = pop_inputs(kwargs, ErnieInputs)
        knowledge_inputs = {"ernie_entity_ids": ernie_entity_ids, "ernie_entity_positions": ernie_entity_positions}
        return super().forward(input_ids, variant_inputs=knowledge_inputs, **kwargs)

    def layer_blocks(self, inputs: dict, words: torch.Tensor) -> ErnieBlocks:
        batch_size, word_length = words.shape[:2]
        knowledge_ids, knowledge_mask, alignment = self._knowledge_inputs(
            batch_size,
            word_length,
            inputs["attention_mask"],
            inputs["ernie_entity_ids"],
            inputs["ernie_entity_positions"],
            words.device,
        )
        table = knowledge_table(self)
        in_kb = (knowledge_ids >= 0)[..., None].to(table.dtype)  # the head's entity slots start at zero
        knowledge = (table[knowledge_ids.clamp(min=0)] * in_kb).to(words.dtype)
        return ErnieBlocks(self, knowledge, knowledge_mask, alignment)


class ErnieBlocks(LayerBlocks):
    """ERNIE's fusion layers in place of the top `ernie_num_fusion_layers` layers of `GesaEncoder`, carrying the
    knowledge-entity stream from one to the next (`knowledge_last_hidden_state`)."""

    def __init__(
        self, model: ErnieModel, knowledge: torch.Tensor, knowledge_mask: torch.Tensor, alignment: torch.Tensor
    ) -> None:
        self.fusion_layers = model.fusion_layers
        self.first_fusion = model.config.num_hidden_layers - len(model.fusion_layers)
        self.knowledge, self.knowledge_mask, self.alignment = knowledge, knowledge_mask, alignment

    def layer(
        self,
        index: int,
        layer: GesaLayer,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if index < self.first_fusion:
            return super().layer(index, layer, words, entities, structure, output_attentions, **kwargs)
        words, entities, self.knowledge, _ = self.fusion_layers[index - self.first_fusion](
            layer,
            words,
            entities,
            structure,
            self.knowledge,
            self.knowledge_mask,
            self.alignment,
            output_attentions,
            **kwargs,
        )
        return words, entities

    def output(self, encoded: ModelOutput) -> ErnieModelOutput:
        return ErnieModelOutput(**encoded, knowledge_last_hidden_state=self.knowledge)


class ErnieForEntitySpanQA(ErniePreTrainedModel, GesaForEntitySpanQA):
    """ReCoRD with ERNIE fusion: GESA's head (paper 3.5) on the LUKE entity states of `ErnieModel`, which takes the
    knowledge inputs (`ernie_entity_ids`, `ernie_entity_positions`) through the head's keyword inputs."""

    base_model_class = ErnieModel
    pipeline = PipelineSpec(ENTITY_CLOZE_TASK, "pipeline_kb.KnowledgeClozeQAPipeline")


# ---------------------------------------------------------------------------------------------
# dEA: denoising entity auto-encoder
# ---------------------------------------------------------------------------------------------


LUKE_SPECIAL_ENTITY_IDS = (0, 1, 2, 3)
"""Rows of LUKE's entity table that are no entity: `[PAD]` 0, `[UNK]` 1, `[MASK]` 2, `[MASK2]` 3."""


def corrupt_entity_alignments(
    ernie_entity_ids: torch.Tensor,
    ernie_entity_positions: torch.Tensor,
    word_length: int,
    kb_size: int,
    replace_prob: float = 0.05,
    mask_prob: float = 0.15,
    generator: torch.Generator | None = None,
    special_ids: Sequence[int] = LUKE_SPECIAL_ENTITY_IDS,
) -> dict[str, torch.Tensor]:
    """ERNIE's dEA corruption of token-entity alignments, with the targets.

    Each real alignment is, independently: replaced by another KB entity with `replace_prob` (5%), masked (the entity
    is removed from the input, the token must still predict it) with `mask_prob` (15%), kept otherwise (80%). A
    replacement is drawn uniformly from the KB rows `[0, kb_size)` that are neither `special_ids` nor the original
    entity, so a "replaced" alignment is always wrong and never a padding/unknown/mask row.

    Args:
        ernie_entity_ids: `(B, N)` KB rows, -1 padded. ernie_entity_positions: `(B, N)` alignments, -1 padded.
        word_length: `L`. kb_size: rows a replacement is drawn from.
        special_ids: KB rows that are no entity and are never drawn. Default: LUKE's `[PAD]`, `[UNK]`, `[MASK]`,
            `[MASK2]` (0-3, `LUKE_SPECIAL_ENTITY_IDS`), right for the default KB (LUKE's entity table); pass `()` for a
            user-supplied KB (`set_knowledge_base`) whose rows are all entities.

    Returns:
        `ernie_entity_ids`, `ernie_entity_positions` (corrupted inputs; masked entities become -1/-1),
        `dea_candidate_ids` `(B, N)` (the uncorrupted entities: the softmax's candidates) and `dea_labels` `(B, L)`
        (for every originally aligned word, the index of its entity among the candidates; -100 elsewhere).

    Raises:
        ValueError: when the KB has fewer than two non-special rows (no different entity to replace one with), or
            when `replace_prob`/`mask_prob` are not probabilities summing to at most 1.
    """
    if not (0.0 <= replace_prob and 0.0 <= mask_prob and replace_prob + mask_prob <= 1.0):
        raise ValueError(
            f"replace_prob={replace_prob} and mask_prob={mask_prob} must be non-negative and sum to at most 1."
        )
    device = ernie_entity_ids.device
    allowed = torch.ones(kb_size, dtype=torch.bool, device=device)
    specials = [int(i) for i in special_ids if 0 <= int(i) < kb_size]
    allowed[specials] = False
    pool = allowed.nonzero().squeeze(1)  # sorted non-special KB rows
    if pool.numel() < 2:
        raise ValueError(
            f"corrupt_entity_alignments: kb_size={kb_size} with special_ids={tuple(special_ids)} leaves "
            f"{pool.numel()} non-special KB row(s); replacing an entity by a different one needs at least 2. Use a "
            "larger KB, or pass special_ids=() when the KB (a user-supplied one) has no special rows."
        )
    real = ernie_entity_ids >= 0
    draw = torch.rand(ernie_entity_ids.shape, generator=generator, device=device)
    replace = real & (draw < replace_prob)
    masked = real & (draw >= replace_prob) & (draw < replace_prob + mask_prob)
    # uniform over the pool without the original: draw an index among the others, skip the original's slot
    original = ernie_entity_ids.clamp(0, kb_size - 1)
    slot = torch.searchsorted(pool, original).clamp(max=pool.numel() - 1)
    in_pool = pool[slot] == original
    uniform = torch.rand(ernie_entity_ids.shape, generator=generator, device=device)
    index = (uniform * (pool.numel() - in_pool.long())).long().clamp(max=pool.numel() - 1 - in_pool.long())
    index = index + (in_pool & (index >= slot)).long()
    random_ids = pool[index]
    ids = torch.where(replace, random_ids, ernie_entity_ids).masked_fill(masked, -1)
    positions = ernie_entity_positions.masked_fill(masked, -1)
    labels = torch.full((ernie_entity_ids.size(0), word_length), -100, dtype=torch.long, device=device)
    entity_index = torch.arange(ernie_entity_ids.size(1), device=device).expand_as(ernie_entity_ids)
    rows = torch.arange(ernie_entity_ids.size(0), device=device)[:, None].expand_as(ernie_entity_ids)
    labels[rows[real], ernie_entity_positions[real]] = entity_index[real]
    return {
        "ernie_entity_ids": ids,
        "ernie_entity_positions": positions,
        "dea_candidate_ids": ernie_entity_ids,
        "dea_labels": labels,
    }


def denoising_entity_logits(
    table: torch.Tensor, projected: torch.Tensor, candidates: torch.Tensor, dea_labels: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """dEA's `linear(w_i) . e_j` over the sequence's candidate entities, and its cross-entropy.

    Args:
        table: the KB `(kb_size, E_kb)`. projected: `linear(w_i)` `(B, L, E_kb)`.
        candidates: `(B, N)` KB rows, -1 padded. dea_labels: `(B, L)` candidate index per word, -100 elsewhere.

    Returns:
        logits `(B, L, N)` (padding: `finfo.min`) and the loss (`None` without `dea_labels`).
    """
    check_kb_ids("dea_candidate_ids", candidates, table.size(0))
    candidate_embeddings = table[candidates.clamp(min=0)].to(projected.dtype)  # (B, N, E_kb)
    logits = torch.matmul(projected, candidate_embeddings.transpose(1, 2))
    logits = logits.masked_fill(~(candidates >= 0)[:, None, :], torch.finfo(logits.dtype).min)
    loss = None
    if dea_labels is not None:
        check_shape("dea_labels", dea_labels, tuple(logits.shape[:2]), "(batch, words)")
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), dea_labels.reshape(-1), ignore_index=-100)
    return logits, loss


DEA_ALIGNMENT_KINDS = ("kept", "masked", "replaced")
"""What dEA's corruption did to an alignment (`corrupt_entity_alignments`): kept (80%: the word's own entity is in
the input, a copy), masked (15%: no entity in the input) or replaced (5%: another entity in the input)."""


def _dea_word_scores(
    logits: torch.Tensor, candidates: torch.Tensor, dea_labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per word with a target: its row, its candidate index, hit (0/1) and chance (the share of its sequence's
    candidates that are its entity)."""
    rows, words = (dea_labels != -100).nonzero(as_tuple=True)
    targets = dea_labels[rows, words]
    gold = candidates[rows, targets]  # (W,) KB rows
    row_candidates = candidates[rows]  # (W, N)
    scores = logits[rows, words].masked_fill(row_candidates < 0, float("-inf"))
    predicted = row_candidates.gather(1, scores.argmax(-1, keepdim=True))[:, 0]
    same = (row_candidates == gold[:, None]).sum(-1).float()
    valid = (row_candidates >= 0).sum(-1).clamp(min=1).float()
    return rows, targets, (predicted == gold).float(), same / valid


def dea_accuracy_counts(
    logits: torch.Tensor, candidates: torch.Tensor, dea_labels: torch.Tensor
) -> tuple[float, float, int]:
    """dEA's accuracy over the words with a target, and chance on the same words: `(hits, chance, words)` where a hit
    is a word whose highest-scoring candidate is its entity (the same KB row: an entity aligned twice counts either
    slot) and chance sums, per word, the share of the sequence's candidates that are its entity (a uniform guess).

    Args:
        logits: `(B, L, N)` (`denoising_entity_logits`). candidates: `(B, N)` KB rows, -1 padded.
        dea_labels: `(B, L)` candidate index per word, -100 elsewhere.
    """
    _, _, hits, chance = _dea_word_scores(logits, candidates, dea_labels)
    return float(hits.sum()), float(chance.sum()), int(hits.numel())


def dea_accuracy_by_alignment(
    logits: torch.Tensor, candidates: torch.Tensor, dea_labels: torch.Tensor, ernie_entity_ids: torch.Tensor
) -> dict[str, tuple[float, float, int]]:
    """`dea_accuracy_counts` split by what the corruption did to each word's alignment (`DEA_ALIGNMENT_KINDS`):
    kept (the input holds the word's entity), masked (the input holds none), replaced (the input holds another).

    Args:
        logits, candidates, dea_labels: as `dea_accuracy_counts` (candidates: the uncorrupted entities).
        ernie_entity_ids: `(B, N)` the corrupted input entities (`corrupt_entity_alignments`' `ernie_entity_ids`,
            slot for slot with `candidates`; -1 where masked).
    """
    rows, targets, hits, chance = _dea_word_scores(logits, candidates, dea_labels)
    given, original = ernie_entity_ids[rows, targets], candidates[rows, targets]
    kinds = {"kept": given == original, "masked": given < 0, "replaced": (given >= 0) & (given != original)}
    return {
        kind: (float(hits[mask].sum()), float(chance[mask].sum()), int(mask.sum())) for kind, mask in kinds.items()
    }


class DenoisingEntityHead:
    """dEA's entity prediction head on an ERNIE encoder (`gesa`): `linear` = dense + act + LayerNorm into the entity
    dimension (ERNIE's), then `p(e_j | w_i) = softmax_j(linear(w_i) . e_j)` over the sequence's candidate entities."""

    def build_denoising_entity_head(self, config: ErnieConfig) -> None:
        self.transform = nn.Linear(config.hidden_size, config.entity_emb_size)
        self.transform_act = ACT2FN[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.entity_emb_size, eps=config.layer_norm_eps)

    def denoising_entities(
        self, words: torch.Tensor, candidates: torch.Tensor, dea_labels: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Word states `(B, L, D)` -> `denoising_entity_logits` over `candidates` `(B, N)`: logits `(B, L, N)`, loss."""
        projected = self.LayerNorm(self.transform_act(self.transform(words)))  # (B, L, E_kb)
        return denoising_entity_logits(knowledge_table(self.gesa), projected, candidates, dea_labels)

    def ernie_word_states(
        self,
        input_ids: torch.Tensor | None,
        ernie_entity_ids: torch.Tensor | None,
        ernie_entity_positions: torch.Tensor | None,
        kwargs: dict,
    ) -> torch.Tensor:
        """`ErnieModel`'s final word states `w_i^o` `(B, L, D)` on the inputs, the knowledge entities among them."""
        outputs = self.gesa(
            input_ids,
            ernie_entity_ids=ernie_entity_ids,
            ernie_entity_positions=ernie_entity_positions,
            return_dict=True,
            **kwargs,
        )
        return outputs.last_hidden_state


class ErnieDeaInputs(ErnieInputs, total=False):
    """The dEA head's own inputs over ERNIE's."""

    dea_candidate_ids: torch.LongTensor | None
    dea_labels: torch.LongTensor | None


@dataclass
class ErnieDeaOutput(ModelOutput):
    """
    Args:
        loss: cross-entropy of `dea_labels` under `p(e_j | w_i)`, when `dea_labels` are given.
        logits: `(B, L, N)` `linear(w_i) . e_j` over the sequence's candidate entities (padding: `finfo.min`).
        last_hidden_state: `(B, L, D)`.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    last_hidden_state: torch.FloatTensor | None = None


class ErnieForDenoisingEntityAutoencoder(DenoisingEntityHead, ErniePreTrainedModel, GesaHeadBase):
    """ERNIE's dEA objective (alone; MLM/NSP are the backbone's own pre-training): `DenoisingEntityHead` on
    `ErnieModel`'s final word states `w_i^o`. Corrupt inputs with `corrupt_entity_alignments`."""

    base_model_class = ErnieModel

    def __init__(self, config: ErnieConfig) -> None:
        super().__init__(config)
        self.build_denoising_entity_head(config)
        self.post_init()

    @can_return_tuple
    @with_inputs_of(ErnieModel.forward, own=ErnieDeaInputs)
    def forward(self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[ErnieDeaInputs]) -> ErnieDeaOutput:
        """`dea_candidate_ids` `(B, N)` (default: `ernie_entity_ids`) and `dea_labels` `(B, L)` as returned by
        `corrupt_entity_alignments`. Other inputs: `ErnieModel`'s."""
        ernie_entity_ids, ernie_entity_positions, dea_candidate_ids, dea_labels = pop_inputs(kwargs, ErnieDeaInputs)
        words = self.ernie_word_states(input_ids, ernie_entity_ids, ernie_entity_positions, kwargs)
        candidates = dea_candidate_ids if dea_candidate_ids is not None else ernie_entity_ids
        if candidates is None:
            raise ValueError("ErnieForDenoisingEntityAutoencoder needs dea_candidate_ids (or ernie_entity_ids).")
        logits, loss = self.denoising_entities(words, candidates, dea_labels)
        return ErnieDeaOutput(loss=loss, logits=logits, last_hidden_state=words)


ErnieConfig.register_for_auto_class()
ErnieModel.register_for_auto_class("AutoModel")
ErnieForEntitySpanQA.register_for_auto_class("AutoModelForQuestionAnswering")
ErnieForDenoisingEntityAutoencoder.register_for_auto_class("AutoModelForPreTraining")

__all__ = [
    "DEA_ALIGNMENT_KINDS",
    "LUKE_SPECIAL_ENTITY_IDS",
    "DenoisingEntityHead",
    "ErnieDeaOutput",
    "ErnieEntityAttention",
    "ErnieForDenoisingEntityAutoencoder",
    "ErnieForEntitySpanQA",
    "ErnieFusionLayer",
    "ErnieModel",
    "ErnieModelOutput",
    "ErniePreTrainedModel",
    "corrupt_entity_alignments",
    "dea_accuracy_by_alignment",
    "dea_accuracy_counts",
    "denoising_entity_logits",
]

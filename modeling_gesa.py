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
"""GESA: Graph-Enhanced Self-Attention on the LUKE backbone (Foolad & Kiani, 2023).

Reads like the paper: relative-position labels (3.3), embeddings (3.1), entity-aware self-attention with
label embeddings (3.4, Eq. 1), layer, encoder, model, the ReCoRD score head (3.5), and LUKE conversion (4.1).

Flat module: copied next to every saved checkpoint, so it imports only its sibling `configuration_gesa`.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from functools import wraps
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.activations import ACT2FN
from transformers.dynamic_module_utils import get_relative_import_files
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, TransformersKwargs, can_return_tuple, logging
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from .attention_gesa import ALL_ATTENTION_FUNCTIONS, LabelTerms, cached_plan, eager_attention_forward
from .configuration_gesa import GesaConfig
from .loading_gesa import refuse_damaged_weights

logger = logging.get_logger(__name__)

# Values of `global_attention_mask`.
LOCAL, CLS_GLOBAL, QUESTION_GLOBAL = 0, 1, 2


# ---------------------------------------------------------------------------------------------
# Relative-position labels (paper 3.3, spec section 4)
# ---------------------------------------------------------------------------------------------


class RelativeLabels:
    """Layout of a layer's label table. Row 0 is the fixed zero vector: "no label term" for that pair.

    `[1, 2k+1]` w2w distances; then CLS, question, PLC-question, mention, non-mention, e2e self, PLC edge,
    SENT edge, MATCH edge, no edge, shared edge label; then `2k+1` entity-index distances (e2e_local).
    """

    NULL = 0

    def __init__(self, max_relative_position: int) -> None:
        k = max_relative_position
        self.k = k
        self.distance_offset = 1
        base = 2 * k + 2
        (
            self.cls_global,
            self.question_global,
            self.plc_question,
            self.mention,
            self.non_mention,
            self.self_edge,
            self.plc_edge,
            self.sent_edge,
            self.match_edge,
            self.no_edge,
            self.any_edge,
        ) = range(base, base + 11)
        self.entity_distance_offset = base + 11
        self.size = self.entity_distance_offset + 2 * k + 1
        # label of a word rank (`word_label_ranks`): 0 local (distance labels), 1 question, 2 CLS
        self.rank_labels = (self.NULL, self.question_global, self.cls_global)
        # the only labels of the w2e / e2w blocks
        self.word_entity_labels = (self.NULL, self.plc_question, self.mention, self.non_mention)

    def distance(self, relative: torch.Tensor, offset: int) -> torch.Tensor:
        return relative.clamp(-self.k, self.k) + (self.k + offset)


def mention_membership(entity_position_ids: torch.Tensor, word_length: int) -> torch.Tensor:
    """`(B, E, M)` mention positions (-1 padded) -> `(B, E, L)` bool, True where word l is in entity e's mention."""
    batch_size, entity_length, _ = entity_position_ids.shape
    membership = torch.zeros(
        batch_size, entity_length, word_length + 1, dtype=torch.bool, device=entity_position_ids.device
    )
    # padded positions (-1) land in the extra last column, which is dropped
    index = torch.where(entity_position_ids < 0, word_length, entity_position_ids)
    membership.scatter_(2, index, True)
    return membership[:, :, :word_length]


def word_label_ranks(config: GesaConfig, global_attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """`(B, L)` long rank of each word for the w2w labels: 2 CLS-global, 1 question-global, 0 local.

    A word pair takes the label of the higher rank of its two words (`RelativeLabels.rank_labels`): CLS precedes
    question precedes distance. A switched-off global label leaves its words local (rank 0).
    """
    if global_attention_mask is None:
        return None
    switches = config.label_switches
    ranks = torch.zeros(global_attention_mask.shape, dtype=torch.long, device=global_attention_mask.device)
    if switches["question_global"]:
        ranks = ranks.masked_fill(global_attention_mask == QUESTION_GLOBAL, 1)
    if switches["cls_global"]:
        ranks = ranks.masked_fill(global_attention_mask == CLS_GLOBAL, 2)
    return ranks


def build_word_word_labels(
    layout: RelativeLabels, w2w_distance: bool, word_length: int, ranks: torch.Tensor | None, batch_size: int
) -> torch.Tensor:
    """w2w label ids `(B, L, L)`: clipped distance (NULL with `w2w_distance` off), overridden by the global ranks."""
    device = ranks.device if ranks is not None else torch.device("cpu")
    positions = torch.arange(word_length, device=device)
    if w2w_distance:
        w2w = layout.distance(positions[None, :] - positions[:, None], layout.distance_offset)
    else:
        w2w = torch.zeros(word_length, word_length, dtype=torch.long, device=device)
    w2w = w2w.expand(batch_size, word_length, word_length)
    if ranks is not None:
        pair_rank = torch.maximum(ranks[:, :, None], ranks[:, None, :])
        rank_labels = torch.tensor(layout.rank_labels, device=device)
        w2w = torch.where(pair_rank > 0, rank_labels[pair_rank], w2w)
    return w2w


def _entity_defaults(
    placeholder_entity_mask: torch.Tensor | None,
    entity_string_ids: torch.Tensor | None,
    entity_sentence_ids: torch.Tensor | None,
    batch_size: int,
    entity_length: int,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Missing structure inputs mean: no placeholder, no strings, no sentences."""
    if placeholder_entity_mask is None:
        placeholder = torch.zeros(batch_size, entity_length, dtype=torch.bool, device=device)
    else:
        placeholder = placeholder_entity_mask.bool()
    if entity_string_ids is None:
        entity_string_ids = torch.full((batch_size, entity_length), -1, dtype=torch.long, device=device)
    if entity_sentence_ids is None:
        entity_sentence_ids = torch.full((batch_size, entity_length), -1, dtype=torch.long, device=device)
    return placeholder, entity_string_ids, entity_sentence_ids


def build_entity_word_labels(
    config: GesaConfig,
    word_length: int,
    global_attention_mask: torch.Tensor | None,
    entity_position_ids: torch.Tensor,
    placeholder: torch.Tensor,
    entity_string_ids: torch.Tensor,
) -> torch.Tensor:
    """e2w label ids `(B, E, L)` (entity rows, word columns); w2e is its transpose (one shared label set)."""
    labels = RelativeLabels(config.max_relative_position)
    switches = config.label_switches
    batch_size, E = entity_string_ids.shape
    device = entity_string_ids.device
    if not switches["w2e_e2w"]:
        return torch.zeros(batch_size, E, word_length, dtype=torch.long, device=device)
    e2w = torch.full((batch_size, E, word_length), labels.non_mention, dtype=torch.long, device=device)
    if switches["mention"]:
        same_string = (entity_string_ids[:, :, None] == entity_string_ids[:, None, :]) & (
            entity_string_ids[:, :, None] >= 0
        )
        same_string = same_string | torch.eye(E, dtype=torch.bool, device=device)
        membership = mention_membership(entity_position_ids, word_length)
        # entity e is linked to every word of any mention whose string equals e's string
        linked = torch.bmm(same_string.float(), membership.float()) > 0
        e2w = torch.where(linked, labels.mention, e2w)
    if switches["plc_question"] and global_attention_mask is not None:
        plc_question = placeholder[:, :, None] & (global_attention_mask == QUESTION_GLOBAL)[:, None, :]
        e2w = torch.where(plc_question, labels.plc_question, e2w)
    return e2w


def build_entity_entity_labels(
    config: GesaConfig, placeholder: torch.Tensor, entity_string_ids: torch.Tensor, entity_sentence_ids: torch.Tensor
) -> torch.Tensor:
    """e2e label ids `(B, E, E)`: none, MATCH, SENT, PLC, self (graph) or entity-index distances (e2e_local)."""
    labels = RelativeLabels(config.max_relative_position)
    switches = config.label_switches
    batch_size, E = entity_string_ids.shape
    device = entity_string_ids.device
    entity_index = torch.arange(E, device=device)
    if not switches["e2e"]:
        return torch.zeros(batch_size, E, E, dtype=torch.long, device=device)
    if not switches["e2e_graph"]:
        e2e = labels.distance(entity_index[None, :] - entity_index[:, None], labels.entity_distance_offset)
        return e2e.expand(batch_size, E, E)
    single = switches["single_edge_label"]
    e2e = torch.full((batch_size, E, E), labels.no_edge, dtype=torch.long, device=device)
    has_sentence = entity_sentence_ids >= 0
    same_sentence = (entity_sentence_ids[:, :, None] == entity_sentence_ids[:, None, :]) & has_sentence[:, :, None]
    if switches["match_edges"]:
        same_string = (entity_string_ids[:, :, None] == entity_string_ids[:, None, :]) & (
            entity_string_ids[:, :, None] >= 0
        )
        match = same_string & ~same_sentence & has_sentence[:, :, None] & has_sentence[:, None, :]
        e2e = torch.where(match, labels.any_edge if single else labels.match_edge, e2e)
    if switches["sent_edges"]:
        e2e = torch.where(same_sentence, labels.any_edge if single else labels.sent_edge, e2e)
    if switches["plc_edges"]:
        plc = placeholder[:, :, None] | placeholder[:, None, :]
        e2e = torch.where(plc, labels.any_edge if single else labels.plc_edge, e2e)
    return torch.where(torch.eye(E, dtype=torch.bool, device=device), labels.self_edge, e2e)


def assemble_labels(w2w: torch.Tensor, e2w: torch.Tensor | None, e2e: torch.Tensor | None) -> torch.Tensor:
    """The four blocks -> one `(B, P, P)` label matrix, words first."""
    if e2w is None:
        return w2w.contiguous()
    top = torch.cat([w2w, e2w.transpose(1, 2)], dim=2)
    bottom = torch.cat([e2w, e2e], dim=2)
    return torch.cat([top, bottom], dim=1)


def build_relative_labels(
    config: GesaConfig,
    word_length: int,
    global_attention_mask: torch.Tensor | None,
    entity_position_ids: torch.Tensor | None,
    placeholder_entity_mask: torch.Tensor | None,
    entity_string_ids: torch.Tensor | None,
    entity_sentence_ids: torch.Tensor | None,
    batch_size: int,
    device: torch.device,
) -> torch.Tensor:
    """Label index of every token pair, `(B, P, P)` long with `P = L + E`, built on `device` (spec section 4).

    Rows are queries, columns keys; words first, then entities. The layers never build this matrix on their fast
    paths (they use the per-block pieces above); it serves the eager path and inspection.
    """
    w2w = build_word_word_labels(
        RelativeLabels(config.max_relative_position),
        config.label_switches["w2w_distance"],
        word_length,
        word_label_ranks(config, global_attention_mask),
        batch_size,
    ).to(device)
    if entity_position_ids is None:
        return assemble_labels(w2w, None, None)
    placeholder, strings, sentences = _entity_defaults(
        placeholder_entity_mask,
        entity_string_ids,
        entity_sentence_ids,
        batch_size,
        entity_position_ids.size(1),
        device,
    )
    e2w = build_entity_word_labels(
        config, word_length, global_attention_mask, entity_position_ids, placeholder, strings
    )
    return assemble_labels(w2w, e2w, build_entity_entity_labels(config, placeholder, strings, sentences))


def build_attention_allowed(
    attention_mask: torch.Tensor,
    word_length: int,
    global_attention_mask: torch.Tensor | None,
    attention_window: int | None,
) -> torch.Tensor:
    """Bool `(B, 1, P, P)` (or `(B, 1, 1, P)` without a window): may query i attend to key j.

    Keys are masked by padding; with `attention_window`, word pairs farther apart than the window are masked
    unless one side is a global token.
    """
    key_allowed = attention_mask.bool()[:, None, None, :]
    if attention_window is None:
        return key_allowed
    L = word_length
    P = attention_mask.size(1)
    positions = torch.arange(L, device=attention_mask.device)
    near = (positions[None, :] - positions[:, None]).abs() <= attention_window
    near = near.expand(attention_mask.size(0), L, L)
    if global_attention_mask is not None:
        is_global = global_attention_mask != LOCAL
        near = near | is_global[:, :, None] | is_global[:, None, :]
    allowed = torch.ones(attention_mask.size(0), P, P, dtype=torch.bool, device=attention_mask.device)
    allowed[:, :L, :L] = near
    return allowed[:, None] & key_allowed


@dataclass
class TokenStructure:
    """A batch's attention structure per token, linear in length; every mask and label of a layer derives from it.

    Args:
        attention_mask: `(B, P)`, 1 on real tokens (words then entities), 0 on padding.
        word_ranks: `(B, L)` long (`word_label_ranks`), or None when no word carries a global label.
        window_global: bool `(B, L)`, words exempt from `attention_window` (CLS and question), or None.
        entity_word_labels: `(B, E, L)` e2w label ids (w2e is the transpose), or None without labels or entities.
        entity_entity_labels: `(B, E, E)` e2e label ids, or None.
        layout: the label table layout (`RelativeLabels`).
        w2w_distance: local word pairs carry clipped-distance labels (else the NULL label).
        use_labels: layers add label terms at all.
        attention_window: hard window for local word pairs, or None.
    """

    attention_mask: torch.Tensor
    word_ranks: torch.Tensor | None
    window_global: torch.Tensor | None
    entity_word_labels: torch.Tensor | None
    entity_entity_labels: torch.Tensor | None
    layout: RelativeLabels
    w2w_distance: bool
    use_labels: bool
    attention_window: int | None
    # per-batch plans of the attention functions, shared by every layer, keyed by name (`attention_gesa.cached_plan`)
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def distance_k(self) -> int:
        """Clip distance of the w2w label term; 0 stands for "one label for every local pair" (NULL)."""
        return self.layout.k if self.w2w_distance else 0

    def dense_allowed(self, word_length: int) -> torch.Tensor:
        return build_attention_allowed(
            self.attention_mask,
            word_length,
            None if self.window_global is None else self.window_global.long(),
            self.attention_window,
        )

    def dense_labels(self, word_length: int) -> torch.Tensor | None:
        if not self.use_labels:
            return None
        w2w = build_word_word_labels(
            self.layout, self.w2w_distance, word_length, self.word_ranks, self.attention_mask.size(0)
        ).to(self.attention_mask.device)
        return assemble_labels(w2w, self.entity_word_labels, self.entity_entity_labels)


class AttentionStructure:
    """Everything a layer needs to know about which pairs attend and with which label; built once per batch.

    Either dense (`allowed`, `labels`: quadratic in length, what the eager path reads) or per token (`tokens`:
    linear, what the fast and the windowed paths read); the dense tensors are derived from `tokens` on first use.

    Args:
        allowed: bool `(B, 1, P, P)` or `(B, 1, 1, P)`: may query i attend to key j.
        labels: `(B, P, P)` label ids (`RelativeLabels`), or None for no label term.
        word_length: `L`; tokens `[0, L)` are words, `[L, P)` entities.
        tokens: the per-token form (`TokenStructure`), or None.
    """

    def __init__(
        self,
        allowed: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        word_length: int = 0,
        tokens: TokenStructure | None = None,
    ) -> None:
        if allowed is None and tokens is None:
            raise ValueError("AttentionStructure needs either the dense `allowed` mask or `tokens`.")
        self._allowed = allowed
        self._labels = labels
        self.word_length = word_length
        self.tokens = tokens

    @property
    def allowed(self) -> torch.Tensor:
        if self._allowed is None:
            self._allowed = self.tokens.dense_allowed(self.word_length)
        return self._allowed

    @property
    def labels(self) -> torch.Tensor | None:
        if self._labels is None and self.tokens is not None:
            self._labels = self.tokens.dense_labels(self.word_length)
        return self._labels


# ---------------------------------------------------------------------------------------------
# Embeddings (paper 3.1): no absolute positions unless switched on
# ---------------------------------------------------------------------------------------------


def create_position_ids_from_input_ids(input_ids: torch.Tensor, padding_idx: int) -> torch.Tensor:
    """LUKE/RoBERTa positions: `padding_idx + 1 + index` for real tokens, `padding_idx` for padding."""
    mask = input_ids.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


class GesaEmbeddings(nn.Module):
    """Word token embedding + token-type embedding (+ LUKE's absolute positions when configured)."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.position_embeddings = (
            nn.Embedding(config.max_position_embeddings, config.hidden_size, padding_idx=config.pad_token_id)
            if config.use_absolute_position_embeddings
            else None
        )
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.padding_idx = config.pad_token_id

    def forward(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """`(B, L)` ids -> `(B, L, D)`."""
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        embeddings = inputs_embeds + self.token_type_embeddings(token_type_ids)
        if self.position_embeddings is not None:
            if position_ids is None:
                if input_ids is not None:
                    position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
                else:
                    length = inputs_embeds.size(1)
                    position_ids = torch.arange(
                        self.padding_idx + 1, length + self.padding_idx + 1, device=inputs_embeds.device
                    ).expand(inputs_embeds.shape[:2])
            embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class GesaEntityEmbeddings(nn.Module):
    """Entity embedding (entity_emb_size) -> dense to hidden + token type (+ LUKE's averaged mention positions, with
    absolute positions or `use_entity_position_embeddings`)."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.entity_embeddings = nn.Embedding(config.entity_vocab_size, config.entity_emb_size, padding_idx=0)
        self.entity_embedding_dense = (
            nn.Linear(config.entity_emb_size, config.hidden_size, bias=False)
            if config.entity_emb_size != config.hidden_size
            else None
        )
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        # without mention labels, the mention positions are all that tells one [MASK] candidate from another
        self.position_embeddings = (
            nn.Embedding(config.max_position_embeddings, config.hidden_size)
            if config.use_absolute_position_embeddings or getattr(config, "use_entity_position_embeddings", False)
            else None
        )
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self, entity_ids: torch.Tensor, entity_token_type_ids: torch.Tensor, entity_position_ids: torch.Tensor | None
    ) -> torch.Tensor:
        """`(B, E)` ids -> `(B, E, D)`. Positions are used only with entity position embeddings."""
        embeddings = self.entity_embeddings(entity_ids)
        if self.entity_embedding_dense is not None:
            embeddings = self.entity_embedding_dense(embeddings)
        embeddings = embeddings + self.token_type_embeddings(entity_token_type_ids)
        if self.position_embeddings is not None and entity_position_ids is not None:
            # LUKE: the entity's position embedding is the mean over its mention's word positions
            # (LUKE's position ids are word indices shifted by nothing: it uses raw indices here)
            position_embeddings = self.position_embeddings(entity_position_ids.clamp(min=0))
            present = (entity_position_ids != -1).type_as(position_embeddings).unsqueeze(-1)
            position_embeddings = (position_embeddings * present).sum(dim=-2) / present.sum(dim=-2).clamp(min=1e-7)
            embeddings = embeddings + position_embeddings
        return self.dropout(self.LayerNorm(embeddings))


# ---------------------------------------------------------------------------------------------
# Entity-aware self-attention with relative-position labels (paper Eq. 1)
# ---------------------------------------------------------------------------------------------


def _label_ids(tokens: TokenStructure, labels: str) -> torch.Tensor:
    """The label ids `tokens.layout.<labels>` as a tensor on the batch's device, made once per batch (a host-to-device
    copy in every layer would wait for the device)."""
    ids = getattr(tokens.layout, labels)
    device = tokens.attention_mask.device
    return cached_plan(tokens, labels, lambda: torch.tensor(ids, dtype=torch.long).to(device, non_blocking=True))


def _entity_word_positions(tokens: TokenStructure) -> torch.Tensor:
    """e2w label ids `(B, E, L)` -> their positions in `RelativeLabels.word_entity_labels`."""

    def positions() -> torch.Tensor:
        labels = _label_ids(tokens, "word_entity_labels")
        position = torch.zeros(tokens.layout.size, dtype=torch.long, device=labels.device)
        position[labels] = torch.arange(len(labels), device=labels.device)
        return position[tokens.entity_word_labels]

    return cached_plan(tokens, "entity_word_positions", positions)


class GesaSelfAttention(nn.Module):
    """Eq. 1: four query matrices by token-type pair, shared K/V, `q_i . r_label(i,j)` added to the scores.

    Each token carries two queries, `q_to_word` (its w2w or e2w query) and `q_to_entity` (w2e or e2e): the first
    meets the word keys, the second the entity keys, which yields all four blocks without computing any score twice.
    The label term `q_i . r_label(i,j)` is computed per block over the few labels that block can use
    (`_label_terms`; the eager reference reads it from `q . R^T` by the dense labels, `_gathered_label_scores`).
    The attention itself is `ALL_ATTENTION_FUNCTIONS[config._attn_implementation]` (`attention_gesa`); probabilities
    (`output_attentions`) and V-type labels take `"eager"`, the only one that has the probabilities.
    """

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_heads * self.head_size
        self.scaling = self.head_size**-0.5
        self.entity_aware = config.use_entity_aware_attention
        self.w2w_query = nn.Linear(config.hidden_size, self.all_head_size)
        if self.entity_aware:
            self.w2e_query = nn.Linear(config.hidden_size, self.all_head_size)
            self.e2w_query = nn.Linear(config.hidden_size, self.all_head_size)
            self.e2e_query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout_prob = config.attention_probs_dropout_prob
        self.label_embeddings = (
            nn.Embedding(config.num_relative_labels, self.head_size, padding_idx=RelativeLabels.NULL)
            if config.use_relative_labels
            else None
        )
        self.value_label_embeddings = (
            nn.Embedding(config.num_relative_labels, self.head_size, padding_idx=RelativeLabels.NULL)
            if config.use_relative_labels and config.use_value_labels
            else None
        )
        self.config = config

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), x.size(1), self.num_heads, self.head_size).transpose(1, 2)

    def _queries(self, words: torch.Tensor, entities: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Per token, the query used against word keys and the one used against entity keys: 2 x `(B, H, P, d)`."""
        if entities is None:
            to_word = self._heads(self.w2w_query(words))
            return to_word, to_word
        if not self.entity_aware:
            both = self._heads(self.w2w_query(torch.cat([words, entities], dim=1)))
            return both, both
        to_word = torch.cat([self.w2w_query(words), self.e2w_query(entities)], dim=1)
        to_entity = torch.cat([self.w2e_query(words), self.e2e_query(entities)], dim=1)
        return self._heads(to_word), self._heads(to_entity)

    def forward(
        self,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`(B, L, D)`, `(B, E, D)` -> context `(B, P, D)` and the attention probabilities `(B, H, P, P)` (eager) or
        None. `structure`: which pairs attend and with which label (`AttentionStructure`)."""
        tokens = words if entities is None else torch.cat([words, entities], dim=1)
        key = self._heads(self.key(tokens))
        value = self._heads(self.value(tokens))
        q_to_word, q_to_entity = self._queries(words, entities)
        implementation = self.config._attn_implementation
        if output_attentions or self.value_label_embeddings is not None:
            implementation = "eager"
        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
        context, probs = attention_interface(
            self,
            q_to_word,
            key,
            value,
            structure,
            scaling=self.scaling,
            dropout=self.dropout_prob if self.training else 0.0,
            entity_query=q_to_entity,
            **kwargs,
        )
        return context.reshape(tokens.size(0), tokens.size(1), self.all_head_size), probs

    def _gathered_label_scores(
        self, q_to_word: torch.Tensor, q_to_entity: torch.Tensor, labels: torch.Tensor, word_length: int
    ) -> torch.Tensor:
        """`q_i . r_label(i,j)`: `(B, H, P, P)`, a gather from `q . R^T` (R shared across heads)."""
        table = self.label_embeddings.weight
        num_labels = table.size(0)
        scores_to_word = torch.matmul(q_to_word, table.t())
        if q_to_entity is q_to_word or labels.size(-1) == word_length:
            label_scores = scores_to_word
            index = labels
        else:
            label_scores = torch.cat([scores_to_word, torch.matmul(q_to_entity, table.t())], dim=-1)
            # entity columns read the to-entity half of the label scores
            column_offset = torch.zeros(labels.size(-1), dtype=labels.dtype, device=labels.device)
            column_offset[word_length:] = num_labels
            index = labels + column_offset
        B, H, P, _ = label_scores.shape
        return torch.gather(label_scores, 3, index[:, None].expand(B, H, P, index.size(-1)))

    def _label_terms(
        self,
        q_to_word: torch.Tensor,
        q_to_entity: torch.Tensor,
        tokens: TokenStructure,
        word_length: int,
    ) -> LabelTerms:
        """`q_i . r_l` for the few labels l each block can use (queries come scaled, so the terms do too); the CPU
        kernel (`attention_gesa.FusedAttention`) computes its own from the label table."""
        table = self.label_embeddings.weight
        layout = tokens.layout
        L, k = word_length, tokens.distance_k
        B, H, P, _ = q_to_word.shape
        word_queries = q_to_word[:, :, :L]
        # w2w: 2k + 1 clipped distances (or the NULL label alone), the global ranks
        distance_rows = table[layout.distance_offset : layout.distance_offset + 2 * k + 1] if k else table[:1]
        terms = LabelTerms(torch.matmul(word_queries, distance_rows.t()), distance_rows)
        if tokens.word_ranks is not None:
            terms.rank_table = table.index_select(0, _label_ids(tokens, "rank_labels"))
            terms.rank = torch.matmul(word_queries, terms.rank_table.t())
        if tokens.entity_word_labels is None or P == L:
            return terms
        # w2e / e2w: the four labels of that label set; e2e: the whole table (E x E pairs only)
        local = _entity_word_positions(tokens)
        rows = table.index_select(0, _label_ids(tokens, "word_entity_labels")).t()
        E = P - L
        w2e = torch.matmul(q_to_entity[:, :, :L], rows)
        terms.w2e = w2e.gather(3, local.transpose(1, 2)[:, None].expand(B, H, L, E))
        e2w = torch.matmul(q_to_word[:, :, L:], rows)
        terms.e2w = e2w.gather(3, local[:, None].expand(B, H, E, L))
        e2e = torch.matmul(q_to_entity[:, :, L:], table.t())
        terms.e2e = e2e.gather(3, tokens.entity_entity_labels[:, None].expand(B, H, E, E))
        return terms


class GesaSelfOutput(nn.Module):
    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + residual)


class GesaAttention(nn.Module):
    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.self = GesaSelfAttention(config)
        self.output = GesaSelfOutput(config)

    def forward(
        self,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        context, probs = self.self(words, entities, structure, output_attentions, **kwargs)
        tokens = words if entities is None else torch.cat([words, entities], dim=1)
        return self.output(context, tokens), probs


# ---------------------------------------------------------------------------------------------
# Layer and encoder
# ---------------------------------------------------------------------------------------------


class GesaIntermediate(nn.Module):
    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.intermediate_act_fn(self.dense(hidden_states))


class GesaOutput(nn.Module):
    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + residual)


class GesaLayer(GradientCheckpointingLayer):
    """Attention + feed-forward over the concatenated word and entity sequence, split back afterwards."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.attention = GesaAttention(config)
        self.intermediate = GesaIntermediate(config)
        self.output = GesaOutput(config)

    def forward(
        self,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """`(B, L, D)`, `(B, E, D)` -> the same shapes, plus the attention probabilities (eager) or None."""
        attended, probs = self.attention(words, entities, structure, output_attentions, **kwargs)
        tokens = self.output(self.intermediate(attended), attended)
        word_length = words.size(1)
        new_entities = None if entities is None else tokens[:, word_length:]
        return tokens[:, :word_length], new_entities, probs


@dataclass
class GesaModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state: `(B, L, D)` word representations of the last layer.
        entity_last_hidden_state: `(B, E, D)` entity representations of the last layer.
        pooler_output: `(B, D)` tanh(dense(`<s>`)).
        hidden_states: per layer (embeddings first) `(B, L, D)`, with `output_hidden_states`.
        entity_hidden_states: per layer `(B, E, D)`, with `output_hidden_states`.
        attentions: per layer `(B, H, P, P)` over words then entities, with `output_attentions`.
    """

    last_hidden_state: torch.FloatTensor | None = None
    entity_last_hidden_state: torch.FloatTensor | None = None
    pooler_output: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    entity_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class GesaEncoder(nn.Module):
    """The layers in turn; per-layer states and probabilities are recorded by `capture_outputs` (`GesaModel`)."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([GesaLayer(config) for _ in range(config.num_hidden_layers)])
        self.gradient_checkpointing = False

    def forward(
        self,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> GesaModelOutput:
        for layer in self.layer:
            words, entities, _ = layer(words, entities, structure, output_attentions, **kwargs)
        return GesaModelOutput(last_hidden_state=words, entity_last_hidden_state=entities)


class GesaPooler(nn.Module):
    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))


def _entity_states_follow_hidden_states(forward):
    """`capture_outputs` with LUKE's conventions: `output_hidden_states` also returns the entity states (None for a
    batch without entities, as in `entity_last_hidden_state`), and an output flag passed as None means the config's."""

    @wraps(forward)
    def wrapper(self, *args, **kwargs):
        return_dict = kwargs.pop("return_dict", None)
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        for flag in ("output_attentions", "output_hidden_states", "output_entity_hidden_states"):
            if kwargs.get(flag) is None:  # None (a head passing its own default on) means the config's value
                kwargs[flag] = getattr(self.config, flag, None) or False
        if not kwargs["output_entity_hidden_states"]:
            kwargs["output_entity_hidden_states"] = kwargs["output_hidden_states"]
        outputs = forward(self, *args, return_dict=True, **kwargs)
        entity_states = outputs.get("entity_hidden_states")
        if isinstance(entity_states, tuple) and len(entity_states) == 0:
            outputs = type(outputs)(**{k: v for k, v in outputs.items() if k != "entity_hidden_states"})
        return outputs if return_dict else outputs.to_tuple()

    return wrapper


# ---------------------------------------------------------------------------------------------
# Pre-trained model base: weights init, LUKE conversion, added word tokens
# ---------------------------------------------------------------------------------------------


# `config.custom_pipelines` of every entity-span QA checkpoint: `pipeline(model=dir, trust_remote_code=True)` builds
# pipeline_gesa.EntityClozeQAPipeline (the file and its relative imports are copied next to the weights).
ENTITY_CLOZE_TASK = "entity-cloze-qa"
ENTITY_CLOZE_PIPELINES = {
    ENTITY_CLOZE_TASK: {"impl": "pipeline_gesa.EntityClozeQAPipeline", "pt": ["AutoModelForQuestionAnswering"]}
}


class GesaPreTrainedModel(PreTrainedModel):
    config_class = GesaConfig
    base_model_prefix = "gesa"
    supports_gradient_checkpointing = True
    # attention through `ALL_ATTENTION_FUNCTIONS` (attention_gesa): eager, sdpa, flex_attention and GESA's own
    # gesa_bias / gesa_fused / gesa_windowed; one graph under torch.compile and torch.export
    _supports_sdpa = True
    _supports_flex_attn = True
    _can_compile_fullgraph = True
    # a generic attention backend (vLLM, TGI) knows neither the two queries per token nor the label terms
    _supports_attention_backend = False
    _can_record_outputs = {
        "hidden_states": OutputRecorder(GesaLayer, index=0),
        # the entity embeddings, then each layer's entity states (LUKE returns them with `output_hidden_states`)
        "entity_hidden_states": [OutputRecorder(GesaEntityEmbeddings, index=0), OutputRecorder(GesaLayer, index=1)],
        "attentions": OutputRecorder(GesaSelfAttention, index=1),
    }
    _no_split_modules = ["GesaLayer", "GesaEntityEmbeddings"]
    # the loss is a mean over real candidates, not over label tokens: Trainer must not pass num_items_in_batch
    accepts_loss_kwargs = False

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike, *args, **kwargs):
        """`PreTrainedModel.from_pretrained`; a truncated or damaged weights file of a local folder is named first."""
        if pretrained_model_name_or_path is not None:
            refuse_damaged_weights(pretrained_model_name_or_path, kwargs.get("subfolder") or "")
        return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)

    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs) -> None:
        """`PreTrainedModel.save_pretrained`, with `auto_map` also naming the base model for `AutoModel`."""
        auto_map = dict(getattr(self.config, "auto_map", None) or {})
        base_class = type(self.base_model)
        auto_map.setdefault("AutoModel", f"{base_class.__module__.split('.')[-1]}.{base_class.__name__}")
        self.config.auto_map = auto_map
        pipeline_file = Path(__file__).with_name("pipeline_gesa.py")
        is_head = getattr(type(self), "_auto_class", None) == "AutoModelForQuestionAnswering"
        if is_head and pipeline_file.is_file():  # `pipeline(model=dir, trust_remote_code=True)`: pipeline_gesa.py
            self.config.custom_pipelines = copy.deepcopy(ENTITY_CLOZE_PIPELINES)
        super().save_pretrained(save_directory, *args, **kwargs)
        if is_head and pipeline_file.is_file() and kwargs.get("is_main_process", True):
            for source in [pipeline_file, *map(Path, get_relative_import_files(str(pipeline_file)))]:
                shutil.copyfile(source, Path(save_directory) / source.name)

    def init_added_word_embeddings(self, sources: dict[int, int]) -> None:
        """Grow the word table to hold new token ids and copy each from its source token (spec section 1).

        Args:
            sources: `{new_token_id: existing_token_id}`, e.g. `GesaProcessor.added_token_sources()`.
        """
        embeddings = self.get_input_embeddings()
        needed = max(sources, default=-1) + 1
        for new_id, source_id in sources.items():
            if source_id >= min(embeddings.num_embeddings, needed) or source_id < 0:
                raise ValueError(f"sources[{new_id}]={source_id} is not an existing word token id.")
        if needed > embeddings.num_embeddings:
            self.resize_token_embeddings(needed, mean_resizing=False)
            embeddings = self.get_input_embeddings()
        with torch.no_grad():
            for new_id, source_id in sources.items():
                embeddings.weight[new_id] = embeddings.weight[source_id]

    @classmethod
    def from_luke_pretrained(
        cls,
        pretrained_model_name_or_path: str | os.PathLike,
        keep_entity_aware_queries: bool | None = None,
        entity_rows: list[int] | None = None,
        *,
        cache_dir: str | os.PathLike | None = None,
        revision: str | None = None,
        token: str | bool | None = None,
        local_files_only: bool = False,
        force_download: bool = False,
        subfolder: str = "",
        **config_overrides,
    ) -> GesaPreTrainedModel:
        """Build this GESA class from a transformers LUKE checkpoint (`LukeModel` or any `LukeFor*`).

        LUKE's word `query` is copied into all four query matrices (paper 4.1) unless `keep_entity_aware_queries`
        (default: only with `ablation="luke"`, which means exactly LUKE, entity-aware queries and all);
        key/value/output/FFN/LayerNorm/embeddings map one to one; absolute position
        tables are dropped unless `use_absolute_position_embeddings=True`; label tables and heads start fresh.
        `entity_rows` keeps only those rows of LUKE's entity table (in that order; e.g. `[PAD]`, `[UNK]`,
        `[MASK]`). Every GESA parameter not filled from LUKE and every LUKE weight left unused is logged and
        returned in `model.luke_conversion_info`. `cache_dir`, `revision`, `token`, `local_files_only`,
        `force_download` and `subfolder` mean what they mean in `from_pretrained`; other keyword arguments
        override config fields.
        """
        from transformers import LukeConfig, LukeModel, PreTrainedConfig

        hub_kwargs = dict(
            cache_dir=cache_dir,
            revision=revision,
            token=token,
            local_files_only=local_files_only,
            force_download=force_download,
            subfolder=subfolder,
        )
        # the checkpoint's type from its config.json alone: a GESA checkpoint's auto_map must not ask to run its code
        config_dict, _ = PreTrainedConfig.get_config_dict(pretrained_model_name_or_path, **hub_kwargs)
        model_type = config_dict.get("model_type")
        if model_type is None:
            raise ValueError(
                f"{pretrained_model_name_or_path!s} has no config.json with a model_type; from_luke_pretrained "
                "converts LUKE checkpoints (e.g. studio-ousia/luke-large; `subfolder` for a nested one)."
            )
        if model_type != "luke":
            raise ValueError(
                f"{pretrained_model_name_or_path!s} is a {model_type!r} checkpoint, not LUKE; "
                "from_luke_pretrained converts LUKE checkpoints (e.g. studio-ousia/luke-large). "
                f"Load {model_type} checkpoints with from_pretrained."
            )
        luke_config = LukeConfig.from_pretrained(pretrained_model_name_or_path, **hub_kwargs)
        luke, luke_loading = LukeModel.from_pretrained(
            pretrained_model_name_or_path, output_loading_info=True, **hub_kwargs
        )
        luke_state = luke.state_dict()
        fields = (
            "vocab_size entity_vocab_size hidden_size entity_emb_size num_hidden_layers num_attention_heads "
            "intermediate_size hidden_act hidden_dropout_prob attention_probs_dropout_prob max_position_embeddings "
            "type_vocab_size initializer_range layer_norm_eps use_entity_aware_attention classifier_dropout "
            "pad_token_id bos_token_id eos_token_id"
        ).split()
        config_kwargs = {name: getattr(luke_config, name) for name in fields if hasattr(luke_config, name)}
        exactly_luke = config_overrides.get("ablation") == "luke"
        if not exactly_luke:
            config_kwargs["use_entity_aware_attention"] = True  # the four typed queries of Eq. 1
        if keep_entity_aware_queries is None:
            keep_entity_aware_queries = exactly_luke
        if entity_rows is not None:
            config_kwargs["entity_vocab_size"] = len(entity_rows)
        config_kwargs.update(config_overrides)
        config = cls.config_class(**config_kwargs)  # variants: their GesaConfig subclass
        model = cls(config)

        # GESA key -> (tensor, LUKE key it came from)
        mapped: dict[str, tuple[torch.Tensor, str]] = {}
        for key, tensor in luke_state.items():
            if ".attention.self.query." in key:
                for name in ("w2w_query", "w2e_query", "e2w_query", "e2e_query"):
                    mapped[key.replace(".query.", f".{name}.")] = (tensor, key)
            elif ".position_embeddings." in key and not config.use_absolute_position_embeddings:
                # the entity table stays for use_entity_position_embeddings: it is LUKE's own
                if not (key.startswith("entity_embeddings.") and config.use_entity_position_embeddings):
                    continue
                mapped[key] = (tensor, key)
            elif key == "entity_embeddings.entity_embeddings.weight" and entity_rows is not None:
                mapped[key] = (tensor[torch.as_tensor(entity_rows, dtype=torch.long)], key)
            elif not any(f".attention.self.{n}." in key for n in ("w2e_query", "e2w_query", "e2e_query")):
                mapped[key] = (tensor, key)
            elif keep_entity_aware_queries:
                mapped[key] = (tensor, key)
        base = model.base_model
        base_state = base.state_dict()
        used = {}
        for key, (tensor, _) in mapped.items():
            if key not in base_state:
                continue
            if tensor.shape != base_state[key].shape:
                raise ValueError(
                    f"LUKE weight {key} has shape {tuple(tensor.shape)} but GESA expects {tuple(base_state[key].shape)}; "
                    "check the config overrides passed to from_luke_pretrained."
                )
            used[key] = tensor
        base.load_state_dict(used, strict=False)
        prefix = f"{cls.base_model_prefix}." if model is not base else ""
        missing = sorted(prefix + k for k in base_state if k not in used)
        if prefix:
            missing += sorted(k for k in model.state_dict() if not k.startswith(prefix))
        luke_keys_used = {mapped[k][1] for k in used}
        unused = sorted(k for k in luke_state if k not in luke_keys_used)
        unused += sorted(luke_loading.get("unexpected_keys", []))
        for key in missing:
            logger.info("GESA parameter %s is newly initialised (not in the LUKE checkpoint).", key)
        for key in unused:
            if not keep_entity_aware_queries and any(f".{n}." in key for n in ("w2e_query", "e2w_query", "e2e_query")):
                logger.info("LUKE weight %s is replaced by LUKE's word query (paper 4.1).", key)
            else:
                logger.warning("LUKE weight %s is not used by %s.", key, cls.__name__)
        model.luke_conversion_info = {"missing_keys": missing, "unexpected_keys": unused}
        logger.warning(
            "Converted LUKE checkpoint %s: %d GESA parameters newly initialised, %d LUKE weights unused.",
            pretrained_model_name_or_path,
            len(missing),
            len(unused),
        )
        return model


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


class GesaModel(GesaPreTrainedModel):
    """LUKE-style encoder of words and entities whose attention carries GESA's relative-position labels."""

    def __init__(self, config: GesaConfig, add_pooling_layer: bool = True) -> None:
        super().__init__(config)
        self.embeddings = GesaEmbeddings(config)
        self.entity_embeddings = GesaEntityEmbeddings(config)
        self.encoder = GesaEncoder(config)
        self.pooler = GesaPooler(config) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def get_entity_embeddings(self) -> nn.Embedding:
        return self.entity_embeddings.entity_embeddings

    @_entity_states_follow_hidden_states
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        position_ids: torch.LongTensor | None = None,
        entity_ids: torch.LongTensor | None = None,
        entity_attention_mask: torch.Tensor | None = None,
        entity_token_type_ids: torch.LongTensor | None = None,
        entity_position_ids: torch.LongTensor | None = None,
        global_attention_mask: torch.LongTensor | None = None,
        placeholder_entity_mask: torch.Tensor | None = None,
        entity_string_ids: torch.LongTensor | None = None,
        entity_sentence_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> GesaModelOutput | tuple:
        """Encode words `(B, L)` and entities `(B, E)`; see the README table for every input's shape and meaning.

        Per-layer states and probabilities (`output_hidden_states`, `output_attentions`) are recorded by
        `capture_outputs` from `_can_record_outputs`; other `TransformersKwargs` go down to the attention function.
        """
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        kwargs.pop("output_entity_hidden_states", None)  # read by the decorators
        check_unknown_inputs(self, kwargs)
        # before any shape is read: a 1-D or float input gets its own error (D14)
        self._check_inputs(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            global_attention_mask=global_attention_mask,
            entity_ids=entity_ids,
            entity_attention_mask=entity_attention_mask,
            entity_token_type_ids=entity_token_type_ids,
            entity_position_ids=entity_position_ids,
            placeholder_entity_mask=placeholder_entity_mask,
            entity_string_ids=entity_string_ids,
            entity_sentence_ids=entity_sentence_ids,
            inputs_embeds=inputs_embeds,
        )
        reference = input_ids if input_ids is not None else inputs_embeds
        batch_size, word_length = reference.shape[:2]
        device = reference.device

        if attention_mask is None:
            attention_mask = torch.ones(batch_size, word_length, dtype=torch.long, device=device)
        if token_type_ids is None:
            token_type_ids = torch.zeros(batch_size, word_length, dtype=torch.long, device=device)
        if entity_ids is not None:
            entity_length = entity_ids.size(1) if entity_ids.dim() == 2 else -1
            if entity_attention_mask is None:
                entity_attention_mask = torch.ones(batch_size, entity_length, dtype=torch.long, device=device)
            if entity_token_type_ids is None:
                entity_token_type_ids = torch.zeros(batch_size, entity_length, dtype=torch.long, device=device)

        words = self.embeddings(input_ids, token_type_ids, inputs_embeds=inputs_embeds, position_ids=position_ids)
        entities = None
        if entity_ids is not None:
            if entity_position_ids is None:
                entity_position_ids = torch.full((*entity_ids.shape, 1), -1, dtype=torch.long, device=device)
            entities = self.entity_embeddings(entity_ids, entity_token_type_ids, entity_position_ids)
            attention_mask = torch.cat([attention_mask, entity_attention_mask], dim=1)

        structure = self.build_attention_structure(
            attention_mask,
            word_length,
            global_attention_mask,
            entity_position_ids if entities is not None else None,
            placeholder_entity_mask,
            entity_string_ids,
            entity_sentence_ids,
        )
        encoded = self.encoder(words, entities, structure, output_attentions, **kwargs)
        encoded.pooler_output = self.pooler(encoded.last_hidden_state) if self.pooler is not None else None
        return encoded

    def build_attention_structure(
        self,
        attention_mask: torch.Tensor,
        word_length: int,
        global_attention_mask: torch.Tensor | None = None,
        entity_position_ids: torch.Tensor | None = None,
        placeholder_entity_mask: torch.Tensor | None = None,
        entity_string_ids: torch.Tensor | None = None,
        entity_sentence_ids: torch.Tensor | None = None,
    ) -> AttentionStructure:
        """Masks and labels shared by every layer, from the compact inputs; `attention_mask` is `(B, P)`.

        Per token only (`TokenStructure`, linear in length); the dense `(B, P, P)` forms appear only if the
        eager path asks for them.
        """
        config = self.config
        batch_size, device = attention_mask.size(0), attention_mask.device
        entity_length = attention_mask.size(1) - word_length
        use_labels = config.use_relative_labels
        entity_word_labels = entity_entity_labels = None
        if use_labels and entity_length > 0:
            if entity_position_ids is None:
                entity_position_ids = torch.full((batch_size, entity_length, 1), -1, dtype=torch.long, device=device)
            placeholder, strings, sentences = _entity_defaults(
                placeholder_entity_mask, entity_string_ids, entity_sentence_ids, batch_size, entity_length, device
            )
            entity_word_labels = build_entity_word_labels(
                config, word_length, global_attention_mask, entity_position_ids, placeholder, strings
            )
            entity_entity_labels = build_entity_entity_labels(config, placeholder, strings, sentences)
        tokens = TokenStructure(
            attention_mask=attention_mask,
            word_ranks=word_label_ranks(config, global_attention_mask) if use_labels else None,
            window_global=None if global_attention_mask is None else global_attention_mask != LOCAL,
            entity_word_labels=entity_word_labels,
            entity_entity_labels=entity_entity_labels,
            layout=RelativeLabels(config.max_relative_position),
            w2w_distance=config.label_switches["w2w_distance"],
            use_labels=use_labels,
            attention_window=config.attention_window,
        )
        return AttentionStructure(word_length=word_length, tokens=tokens)

    def _check_inputs(
        self, batch_size: int | None = None, word_length: int | None = None, **inputs: torch.Tensor | None
    ) -> None:
        """Raise a `ValueError` naming the input, and the fix, for inputs the model would crash on or misread.

        `inputs`: `GesaModel.forward`'s inputs (absent ones count as None); `batch_size`/`word_length` are derived
        from `input_ids`/`inputs_embeds` when not given. A head may add `labels` (`(B, E)`, 0/1) and
        `scored=True` (one placeholder per row with entities). Ranks, shapes and dtypes are read without touching the
        device; every value range comes back in one host sync. Skipped while compiling or exporting
        (`torch.compiler.is_compiling()`), and inside a head that has checked the same inputs (`checked_by_head`).
        """
        if torch.compiler.is_compiling() or self._inputs_checked_by_head:
            return
        get = inputs.get
        input_ids, inputs_embeds, entity_ids = get("input_ids"), get("inputs_embeds"), get("entity_ids")
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of input_ids (batch, words) or inputs_embeds (batch, words, hidden).")
        for name, value, rank, shape in (
            ("input_ids", input_ids, 2, "(batch, words)"),
            ("inputs_embeds", inputs_embeds, 3, "(batch, words, hidden_size)"),
            ("entity_ids", entity_ids, 2, "(batch, entities)"),
        ):
            if value is not None and value.dim() != rank:
                hint = f"; for one example add the batch dimension ({name}[None])" if value.dim() == rank - 1 else ""
                raise ValueError(f"{name} has shape {tuple(value.shape)}; expected {shape}{hint}.")
        for name in INTEGER_INPUTS:
            value = get(name)
            if value is not None and (value.is_floating_point() or value.is_complex()):
                raise ValueError(
                    f"{name} must hold integer ids or positions (torch.long), got dtype {value.dtype}; pass the "
                    "processor's output unchanged (or inputs_embeds for word vectors)."
                )
        reference = input_ids if input_ids is not None else inputs_embeds
        batch_size, word_length = reference.shape[:2] if batch_size is None else (batch_size, word_length)
        if inputs_embeds is not None and inputs_embeds.size(-1) != self.config.hidden_size:
            raise ValueError(
                f"inputs_embeds has shape {tuple(inputs_embeds.shape)}; its last dimension must be "
                f"hidden_size={self.config.hidden_size}."
            )
        word_shaped = ("input_ids", "attention_mask", "token_type_ids", "position_ids", "global_attention_mask")
        entity_shaped = (
            "entity_attention_mask",
            "entity_token_type_ids",
            "placeholder_entity_mask",
            "entity_string_ids",
            "entity_sentence_ids",
        )
        for name in word_shaped:
            value = get(name)
            if value is not None and tuple(value.shape) != (batch_size, word_length):
                raise ValueError(
                    f"{name} has shape {tuple(value.shape)}; expected (batch, words) = {(batch_size, word_length)}."
                )
        config = self.config
        if get("position_ids") is not None and not config.use_absolute_position_embeddings:
            raise ValueError(
                "position_ids are read only with use_absolute_position_embeddings=True (ablation='luke'); GESA's "
                "relative labels take word order from the input itself. Drop position_ids."
            )
        longest = config.max_position_embeddings - (config.pad_token_id or 0) - 1
        if config.use_absolute_position_embeddings and get("position_ids") is None and word_length > longest:
            raise ValueError(
                f"input_ids has {word_length} words, but absolute positions (use_absolute_position_embeddings=True) "
                f"number at most max_position_embeddings - pad_token_id - 1 = {longest} words "
                f"(config.max_position_embeddings={config.max_position_embeddings}). Shorten the input (the "
                "processor's max_seq_length) or use relative labels instead (use_absolute_position_embeddings=False)."
            )
        entity_length = 0
        if entity_ids is None:
            for name in (*entity_shaped, "entity_position_ids"):
                if get(name) is not None:
                    raise ValueError(f"{name} was given without entity_ids; pass entity_ids too or drop {name}.")
        else:
            if entity_ids.size(0) != batch_size:
                raise ValueError(
                    f"entity_ids has shape {tuple(entity_ids.shape)}; expected (batch={batch_size}, entities)."
                )
            entity_length = entity_ids.size(1)
            for name in entity_shaped:
                value = get(name)
                if value is not None and tuple(value.shape) != (batch_size, entity_length):
                    raise ValueError(
                        f"{name} has shape {tuple(value.shape)}; expected (batch, entities) = "
                        f"{(batch_size, entity_length)}."
                    )
            positions = get("entity_position_ids")
            if positions is not None and (
                positions.dim() != 3 or tuple(positions.shape[:2]) != (batch_size, entity_length)
            ):
                raise ValueError(
                    f"entity_position_ids has shape {tuple(positions.shape)}; expected (batch, entities, "
                    f"mention_length) with batch, entities = {(batch_size, entity_length)}."
                )
        checks = InputValueChecks()
        vocab, entity_vocab, types = config.vocab_size, config.entity_vocab_size, config.type_vocab_size
        last_position = word_length - 1
        if self.entity_embeddings.position_embeddings is not None:  # a mention position indexes LUKE's table too
            last_position = min(last_position, config.max_position_embeddings - 1)
        checks.within(
            "entity_position_ids",
            get("entity_position_ids"),
            -1,
            last_position,
            f"entity_position_ids must be word positions in [0, {last_position}] or -1 for padding"
            + (" (max_position_embeddings bounds entity positions)" if last_position < word_length - 1 else ""),
        )
        checks.within(
            "entity_ids",
            entity_ids,
            0,
            entity_vocab - 1,
            f"entity_ids must be in [0, {entity_vocab - 1}] (entity_vocab_size)",
        )
        checks.within(
            "input_ids",
            input_ids,
            0,
            vocab - 1,
            f"input_ids must be in [0, {vocab - 1}] (vocab_size)",
            " Added tokens need init_added_word_embeddings(processor.added_token_sources()).",
        )
        for name in ("token_type_ids", "entity_token_type_ids"):
            checks.within(name, get(name), 0, types - 1, f"{name} must be in [0, {types - 1}] (type_vocab_size)")
        checks.within(
            "position_ids",
            get("position_ids"),
            0,
            config.max_position_embeddings - 1,
            f"position_ids must be in [0, {config.max_position_embeddings - 1}] (max_position_embeddings)",
        )
        checks.within(
            "global_attention_mask",
            get("global_attention_mask"),
            0,
            2,
            "global_attention_mask must hold 0 (local), 1 (CLS-global) or 2 (question-global)",
        )
        for name in ("attention_mask", "entity_attention_mask", "placeholder_entity_mask"):
            checks.within(name, get(name), 0, 1, f"{name} must hold 0 or 1")
        if get("labels") is not None:
            check_candidate_labels(checks, get("labels"), batch_size, entity_length)
        if get("scored") and entity_ids is not None:
            check_one_placeholder(checks, get("placeholder_entity_mask"), get("entity_attention_mask"))
        checks.raise_first()

    _inputs_checked_by_head = False

    @contextlib.contextmanager
    def checked_by_head(self) -> Iterator[None]:
        """While a head runs this model on inputs it has just checked (with its own), skip the model's check."""
        self._inputs_checked_by_head = True
        try:
            yield
        finally:
            self._inputs_checked_by_head = False


# Inputs that index tables or positions: a float tensor there is a caller's mistake, not a value to round.
INTEGER_INPUTS = (
    "input_ids",
    "token_type_ids",
    "position_ids",
    "entity_ids",
    "entity_token_type_ids",
    "entity_position_ids",
    "global_attention_mask",
    "entity_string_ids",
    "entity_sentence_ids",
)


class InputValueChecks:
    """Value checks on the device, read back in one host sync (each `.item()` would stall an accelerator)."""

    def __init__(self) -> None:
        # (device scalars: bad?, first value or index, second; message from those two values)
        self.pending: list[tuple[torch.Tensor, Callable[[int, int], str]]] = []

    def add(self, bad: torch.Tensor, first: torch.Tensor, second: torch.Tensor, message: Callable[[int, int], str]):
        values = torch.stack([bad.long(), first.long(), second.long()])
        self.pending.append((values, message))

    def within(self, name: str, value: torch.Tensor | None, low: int, high: int, rule: str, hint: str = "") -> None:
        """`value` must lie in `[low, high]`; the error says `rule` and the range found."""
        if value is None or not value.numel() or value.dtype == torch.bool:
            return
        lowest, highest = value.min(), value.max()
        if lowest.is_floating_point():  # masks may be float: NaN is out of range too
            lowest = torch.nan_to_num(lowest, nan=low - 1).floor()
            highest = torch.nan_to_num(highest, nan=high + 1).ceil()
        bad = (lowest < low) | (highest > high)
        self.add(bad, lowest, highest, lambda a, b: f"{rule}; got values in [{a}, {b}].{hint}")

    def raise_first(self) -> None:
        if not self.pending:
            return
        device = self.pending[0][0].device
        values = torch.stack([v.to(device) for v, _ in self.pending]).tolist()
        for (bad, first, second), (_, message) in zip(values, self.pending, strict=True):
            if bad:
                raise ValueError(message(first, second))


def check_candidate_labels(
    checks: InputValueChecks, labels: torch.Tensor, batch_size: int, entity_length: int
) -> None:
    """`labels` of the entity-span QA head: `(B, E)`, every entry 0 or 1 (finite)."""
    if tuple(labels.shape) != (batch_size, entity_length):
        raise ValueError(
            f"labels has shape {tuple(labels.shape)}; expected (batch, entities) = {(batch_size, entity_length)}: "
            "1 for each entity that is a right answer, 0 otherwise."
        )
    if not labels.numel():
        return
    wrong = (labels != 0) & (labels != 1)  # NaN and inf compare unequal to both
    flat = wrong.reshape(-1).long().argmax()
    checks.add(
        wrong.any(),
        flat // entity_length,
        flat % entity_length,
        lambda b, e: f"labels must be 0 or 1 (finite), one per entity; labels[{b}, {e}] = {labels[b, e].item()!r}.",
    )


def check_one_placeholder(
    checks: InputValueChecks, placeholder_entity_mask: torch.Tensor | None, entity_attention_mask: torch.Tensor | None
) -> None:
    """Every row with a real entity has exactly one placeholder entity among its real entities (spec section 1)."""
    if placeholder_entity_mask is None or not placeholder_entity_mask.numel():
        return
    placeholder = placeholder_entity_mask.bool()
    real = entity_attention_mask.bool() if entity_attention_mask is not None else torch.ones_like(placeholder)
    counts = (placeholder & real).sum(dim=1)
    wrong = real.any(dim=1) & (counts != 1)
    row = wrong.long().argmax()
    checks.add(
        wrong.any(),
        row,
        counts[row],
        lambda b, n: (
            f"placeholder_entity_mask must mark exactly one real entity per example (the query's "
            f"placeholder); row {b} marks {n}. With none, entity 0 would be scored as a candidate; with two, one would be "
            "ignored. Build the inputs with the processor (GesaProcessor) or fix the mask."
        ),
    )


def check_unknown_inputs(model: nn.Module, kwargs: dict, accepted: type = TransformersKwargs) -> None:
    """Keyword inputs that `accepted` (a TypedDict: transformers' keywords, or `GesaInputs`) does not name are
    refused, naming them (a misspelt input would otherwise be ignored)."""
    unknown = sorted(set(kwargs) - set(accepted.__annotations__))
    if unknown:
        raise ValueError(
            f'{type(model).__name__}.forward got unexpected inputs {unknown}; see README "Model inputs" (and the '
            "variant's model card) for the accepted inputs."
        )


# ---------------------------------------------------------------------------------------------
# ReCoRD head (paper 3.5), shared by GESA and every variant
# ---------------------------------------------------------------------------------------------


class GesaInputs(TransformersKwargs, total=False):
    """`GesaModel.forward`'s inputs after `input_ids` (README "Model inputs") and transformers' own keywords
    (`output_attentions`, `output_hidden_states`, ...): what the heads and the variants' models pass on."""

    attention_mask: torch.Tensor | None
    token_type_ids: torch.LongTensor | None
    entity_ids: torch.LongTensor | None
    entity_attention_mask: torch.Tensor | None
    entity_token_type_ids: torch.LongTensor | None
    entity_position_ids: torch.LongTensor | None
    global_attention_mask: torch.LongTensor | None
    placeholder_entity_mask: torch.Tensor | None
    entity_string_ids: torch.LongTensor | None
    entity_sentence_ids: torch.LongTensor | None
    inputs_embeds: torch.Tensor | None


def with_inputs_of(*forwards: Callable) -> Callable[[Callable], Callable]:
    """Decorator: the decorated `forward`'s signature also names the inputs of `forwards`, which reach it through
    `**kwargs` (Trainer keeps the dataset columns a model's signature names; `help()` shows them)."""

    def decorate(forward: Callable) -> Callable:
        signature = inspect.signature(forward)
        own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        rest = [p for p in signature.parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
        names = {p.name for p in own}
        for other in forwards:
            for p in inspect.signature(other).parameters.values():
                if p.name not in names and p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                    own.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
                    names.add(p.name)
        forward.__signature__ = signature.replace(parameters=own + rest)
        return forward

    return decorate


@dataclass
class GesaEntitySpanQAOutput(ModelOutput):
    """
    Args:
        loss: scalar binary cross-entropy averaged over the real candidates, when `labels` are given.
        logits: `(B, E)` candidate scores; the placeholder and padded entities hold `finfo.min`.
        hidden_states, entity_hidden_states, attentions: the base model's, on request.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    entity_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class GesaForEntitySpanQA(GesaPreTrainedModel):
    """Cloze-style QA (ReCoRD): `logit_e = w . dropout([y_PLC ; y_e]) + b` for every candidate entity e.

    One head for GESA and every variant: a variant's head sets `base_model_class` (its encoder, which takes the
    variant's own inputs through `**kwargs`) and, where it adds outputs or a loss, `output_class` and
    `auxiliary_loss`; XH overrides `score_entities` (graphs of nodes).
    """

    base_model_class: type[GesaModel] = GesaModel
    output_class: type[ModelOutput] = GesaEntitySpanQAOutput
    # inputs the head cannot score without (XH adds its own)
    required_inputs: tuple[str, ...] = ("entity_ids",)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "forward" not in cls.__dict__:
            # a variant's head: the same forward, whose signature also names the base model's own inputs
            def forward(self: GesaForEntitySpanQA, *args: object, **kwargs: object) -> ModelOutput:
                return GesaForEntitySpanQA.forward(self, *args, **kwargs)

            forward.__doc__ = GesaForEntitySpanQA.forward.__doc__
            forward.__signature__ = inspect.signature(GesaForEntitySpanQA.forward)
            cls.forward = with_inputs_of(cls.base_model_class.forward)(forward)

    def __init__(self, config: GesaConfig) -> None:
        super().__init__(config)
        self.gesa = self.base_model_class(config, add_pooling_layer=False)
        # the base model's outputs the head passes on (read once: dataclass introspection does not trace)
        self._passed_output_fields = tuple(
            f.name for f in fields(self.output_class) if f.name not in ("loss", "logits")
        )
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(2 * config.hidden_size, 1)
        self.post_init()

    @can_return_tuple
    @with_inputs_of(GesaModel.forward)
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        *,
        labels: torch.Tensor | None = None,
        start_positions: torch.LongTensor | None = None,
        end_positions: torch.LongTensor | None = None,
        **kwargs: Unpack[GesaInputs],
    ) -> ModelOutput:
        """Score candidates: `logits` `(B, E)`; `labels` `(B, E)` in {0, 1} gives the BCE `loss`.

        Takes every input of the base model (`kwargs`; README "Model inputs", a variant's own inputs too).
        `start_positions` / `end_positions` (what extractive-QA code sends) are refused with a pointer to what this
        head takes.
        """
        refuse_span_positions(self, start_positions, end_positions)
        missing = [name for name in self.required_inputs if kwargs.get(name) is None]
        if missing:
            raise ValueError(
                f"{type(self).__name__} needs {', '.join(missing)}: the placeholder entity and the candidates "
                "(build the inputs with the processor)."
            )
        entity_ids = kwargs["entity_ids"]
        if entity_ids.dim() >= 2 and entity_ids.size(-1) == 0:
            raise ValueError(
                f"entity_ids has shape {tuple(entity_ids.shape)}: no entity, so nothing to score. "
                f"{type(self).__name__} needs the placeholder entity and at least one candidate per example; encode "
                "entity-free text with the base model."
            )
        return self.score_entities(self.run_base_model(input_ids, labels, kwargs), labels, kwargs)

    def run_base_model(self, input_ids: torch.Tensor | None, labels: torch.Tensor | None, kwargs: dict) -> ModelOutput:
        """The base model on the inputs; its input checks and the head's (labels, one placeholder) in one host sync."""
        if torch.compiler.is_compiling() or not self.check_head_inputs:
            return self.gesa(input_ids, **kwargs, return_dict=True)
        self.gesa._check_inputs(input_ids=input_ids, **kwargs, labels=labels, scored=True)
        with self.gesa.checked_by_head():
            return self.gesa(input_ids, **kwargs, return_dict=True)

    # XH checks its graph-shaped inputs itself (the base model flattens nodes first)
    check_head_inputs = True

    def score_entities(self, outputs: ModelOutput, labels: torch.Tensor | None, kwargs: dict) -> ModelOutput:
        """Paper Eq. 2 on the base model's entity states; the output carries the base model's other outputs."""
        logits, loss = score_candidates(
            self.classifier,
            self.dropout,
            outputs.entity_last_hidden_state,
            kwargs.get("entity_attention_mask"),
            kwargs.get("placeholder_entity_mask"),
            labels,
        )
        extra = self.auxiliary_loss(outputs)
        if extra is not None:
            loss = extra if loss is None else loss + extra
        passed = self._passed_output_fields
        return self.output_class(loss=loss, logits=logits, **{name: outputs.get(name) for name in passed})

    def auxiliary_loss(self, outputs: ModelOutput) -> torch.Tensor | None:
        """A variant's loss added to the task loss (KAR: its weighted entity-linking loss)."""
        return None


def classifier_dropout(config: GesaConfig) -> nn.Dropout:
    """The heads' dropout: `classifier_dropout`, else `hidden_dropout_prob` (as LUKE's heads)."""
    return nn.Dropout(
        config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
    )


def refuse_span_positions(model: nn.Module, start_positions: torch.Tensor | None, end_positions: torch.Tensor | None):
    """Generic extractive-QA code sends token spans; this head scores entity candidates instead."""
    if start_positions is not None or end_positions is not None:
        raise ValueError(
            f"{type(model).__name__} scores entity candidates, not token spans: it takes labels (batch, entities), "
            "1 for each entity that answers the query, and returns logits (batch, entities); start_positions / "
            "end_positions are not read. Build its inputs with the processor (GesaProcessor), or answer cloze "
            "queries with the entity-cloze pipeline: pipeline(model=<checkpoint>, trust_remote_code=True)."
        )


def score_candidates(
    classifier: nn.Linear,
    dropout: nn.Module,
    entity_states: torch.Tensor,
    entity_attention_mask: torch.Tensor | None,
    placeholder_entity_mask: torch.Tensor | None,
    labels: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Paper Eq. 2 on `(B, E, D)` entity states -> `(B, E)` logits (non-candidates masked) and the BCE loss.

    The placeholder is `placeholder_entity_mask`'s entity, else entity 0 (spec section 1). Inputs are checked by the
    head (`check_candidate_labels`, `check_one_placeholder`).
    """
    batch_size, entity_length, _ = entity_states.shape
    device = entity_states.device
    if placeholder_entity_mask is None:
        placeholder = torch.zeros(batch_size, entity_length, dtype=torch.bool, device=device)
        placeholder[:, 0] = True
    else:
        placeholder = placeholder_entity_mask.bool()
    if entity_attention_mask is None:
        entity_attention_mask = torch.ones(batch_size, entity_length, dtype=torch.bool, device=device)
    candidates = entity_attention_mask.bool() & ~placeholder
    placeholder_index = placeholder.float().argmax(dim=1)
    placeholder_states = entity_states[torch.arange(batch_size, device=device), placeholder_index]
    pair = torch.cat([placeholder_states[:, None].expand_as(entity_states), entity_states], dim=-1)
    logits = classifier(dropout(pair)).squeeze(-1)
    loss = None
    if labels is not None:
        per_candidate = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype), reduction="none")
        weights = candidates.to(logits.dtype)
        loss = (per_candidate * weights).sum() / weights.sum().clamp(min=1.0)
    logits = logits.masked_fill(~candidates, torch.finfo(logits.dtype).min)
    return logits, loss


GesaConfig.register_for_auto_class()
GesaModel.register_for_auto_class("AutoModel")
GesaForEntitySpanQA.register_for_auto_class("AutoModelForQuestionAnswering")

__all__ = [
    "GesaEntitySpanQAOutput",
    "GesaForEntitySpanQA",
    "GesaModel",
    "GesaModelOutput",
    "GesaPreTrainedModel",
    "AttentionStructure",
    "RelativeLabels",
    "build_attention_allowed",
    "build_relative_labels",
]

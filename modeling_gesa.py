"""GESA: Graph-Enhanced Self-Attention on the LUKE backbone (Foolad & Kiani, 2023).

Reads like the paper: relative-position labels (3.3), embeddings (3.1), entity-aware self-attention with
label embeddings (3.4, Eq. 1), layer, encoder, model, the ReCoRD score head (3.5), and LUKE conversion (4.1).

Flat module: copied next to every saved checkpoint, so it imports only its sibling `configuration_gesa`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.utils import ModelOutput, logging

from .configuration_gesa import GesaConfig

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
    # index tensors derived once per batch and shared by every layer (see `_dense_plan`, `_window_plan`)
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
    """Entity embedding (entity_emb_size) -> dense to hidden + token type (+ LUKE's averaged mention positions)."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.entity_embeddings = nn.Embedding(config.entity_vocab_size, config.entity_emb_size, padding_idx=0)
        self.entity_embedding_dense = (
            nn.Linear(config.entity_emb_size, config.hidden_size, bias=False)
            if config.entity_emb_size != config.hidden_size
            else None
        )
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.position_embeddings = (
            nn.Embedding(config.max_position_embeddings, config.hidden_size)
            if config.use_absolute_position_embeddings
            else None
        )
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self, entity_ids: torch.Tensor, entity_token_type_ids: torch.Tensor, entity_position_ids: torch.Tensor | None
    ) -> torch.Tensor:
        """`(B, E)` ids -> `(B, E, D)`. Positions are used only with absolute position embeddings."""
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

# The fused path computes the scores of one example and a group of heads at a time, at most this many bytes, so that
# a group's scores stay in the CPU cache from the label fill through the product, softmax, dropout and back.
SCORE_BLOCK_BYTES = 8 * 1024 * 1024
# Rows per query block of the windowed path: each block reads `WINDOW_BLOCK + 2 * window` keys.
WINDOW_BLOCK = 64


@dataclass
class _DensePlan:
    """Index tensors of the fused dense path for one batch (shared by every layer).

    Args:
        word_index: `(L, L + E)` long: column of each word-row score in its row's `[distance ; w2e]` terms.
        term_index: `(L, 2k + 1 + E)` long: the score column of each inner distance label (clamped into range),
            then the entity columns: where the backward reads each word-row term's gradient.
        term_inner: `(L, 2k + 1 + E)`: 1 where that column exists and is not a clipped end (0 and 2k).
        end_index: `(L, 3)` long: prefix-sum columns `i - k`, `L - 1`, `i + k - 1` (clamped) of row i.
        left_valid: `(L,)`: 1 where row i has pairs clipped to `-k`.
        global_words: per example, the words whose w2w labels are global ones (rank > 0).
        global_slots: `(B, G)` long: the same, padded with 0 (G = most of any example), or None if none.
        column_ranks: `(B, 1, L, G)` long: pair rank of every word with each global word.
        row_ranks: `(B, 1, G, L)` long: pair rank of each global word with every word.
        padded_keys: per example, the padded key positions.
        heads_per_block: heads whose scores are computed together.
    """

    word_length: int
    distance_k: int
    word_index: torch.Tensor
    term_index: torch.Tensor | None
    term_inner: torch.Tensor | None
    end_index: torch.Tensor | None
    left_valid: torch.Tensor | None
    global_words: list[torch.Tensor]
    global_slots: torch.Tensor | None
    column_ranks: torch.Tensor | None
    row_ranks: torch.Tensor | None
    padded_keys: list[torch.Tensor]
    heads_per_block: int


def _dense_plan(tokens: TokenStructure, word_length: int, num_heads: int, dtype: torch.dtype) -> _DensePlan:
    key = ("dense", word_length, num_heads, dtype)
    if key in tokens.cache:
        return tokens.cache[key]
    mask = tokens.attention_mask
    device = mask.device
    L, P = word_length, mask.size(1)
    k = tokens.distance_k
    positions = torch.arange(L, device=device)
    relative = positions[None, :] - positions[:, None]
    word_index = relative.clamp(-k, k) + k
    if P > L:
        # w2e terms follow the 2k + 1 distance terms in each row's terms
        entity_columns = torch.arange(2 * k + 1, 2 * k + 1 + P - L, device=device)
        word_index = torch.cat([word_index, entity_columns.expand(L, P - L)], dim=1)
    term_index, term_inner, end_index, left_valid = _band_sum_plan(positions, L, k, dtype)
    if k > 0:
        # the backward's gather also reads the w2e terms' gradients: the entity columns, as they are
        entities = torch.arange(L, P, device=device).expand(L, P - L)
        term_index = torch.cat([term_index, entities], dim=1)
        term_inner = torch.cat([term_inner, torch.ones(L, P - L, dtype=dtype, device=device)], dim=1)
    global_words, global_slots, column_ranks, row_ranks = [], None, None, None
    if tokens.word_ranks is not None and bool((tokens.word_ranks > 0).any()):
        ranks = tokens.word_ranks
        global_words = [row.nonzero().squeeze(1) for row in ranks > 0]
        global_slots = torch.zeros(mask.size(0), max(len(w) for w in global_words), dtype=torch.long, device=device)
        for b, words in enumerate(global_words):
            global_slots[b, : len(words)] = words
        pair = torch.maximum(ranks[:, :, None], ranks.gather(1, global_slots)[:, None, :])
        column_ranks, row_ranks = pair[:, None], pair.transpose(1, 2)[:, None]
    padded_keys = [row.nonzero().squeeze(1) for row in mask == 0]
    element = torch.finfo(dtype).bits // 8
    heads = num_heads if device.type != "cpu" else max(1, min(num_heads, SCORE_BLOCK_BYTES // (P * P * element)))
    plan = _DensePlan(
        L,
        k,
        word_index,
        term_index,
        term_inner,
        end_index,
        left_valid,
        global_words,
        global_slots,
        column_ranks,
        row_ranks,
        padded_keys,
        heads,
    )
    tokens.cache[key] = plan
    return plan


def _softmax_(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, in place on CPU (no second score buffer)."""
    if scores.device.type == "cpu":
        return torch.ops.aten._softmax.out(scores, -1, False, out=scores)
    return torch.softmax(scores, dim=-1)


class _FusedAttention(torch.autograd.Function):
    """`softmax(q k^T + label terms, padding masked) v` with dropout, one `_DensePlan` score block at a time.

    `q_word` meets the word keys, `q_entity` the entity keys (None: `q_word` meets all keys). The label terms
    arrive compact, each block over the labels it can use: `distance_table` `(2k + 1, d)` (the distance labels'
    embeddings: a block's word rows get `q . r` per clipped distance, computed in the block, in cache),
    `w2e` `(B, H, L, E)`, `rows` `(B, H, G, L)` and `columns` `(B, H, L, G)` (global words' rows and columns of
    the w2w block), `e2w` `(B, H, E, L)`, `e2e` `(B, H, E, E)`. The forward spreads them into a block's scores by
    one gather and two row/column copies; the backward sums the score gradients back per label (band diagonals
    and the two clipped ends), so no `(B, H, P, P)` index or bias tensor ever exists. Only the probabilities (and
    the dropout mask, as bool) are kept for the backward. `distance_table` None: no label terms at all.
    """

    @staticmethod
    def forward(ctx, q_word, q_entity, key, value, distance_table, w2e, rows, columns, e2w, e2e, plan, dropout_p):
        B, H, P, _ = q_word.shape
        L = plan.word_length
        save = any(ctx.needs_input_grad)
        q_word, key, value = q_word.contiguous(), key.contiguous(), value.contiguous()
        word_keys, entity_keys = key, None
        if q_entity is not None:
            # q_word . [k_words ; 0] and q_entity . k_entities: no product is computed twice
            q_entity = q_entity.contiguous()
            word_keys, entity_keys = key.clone(), key[:, :, L:]
            word_keys[:, :, L:] = 0
        context = value.new_empty(B, H, P, value.size(-1))
        saved = []
        for b in range(B):
            global_words = plan.global_words[b] if plan.global_words else None
            for h0 in range(0, H, plan.heads_per_block):
                heads = slice(h0, min(h0 + plan.heads_per_block, H))
                n = heads.stop - heads.start
                if distance_table is None:
                    scores = torch.bmm(q_word[b, heads], word_keys[b, heads].transpose(1, 2))
                else:
                    scores = q_word.new_empty(n, P, P)
                    terms = torch.matmul(q_word[b, heads, :L], distance_table.t())
                    if w2e is not None:
                        terms = torch.cat([terms, w2e[b, heads]], dim=-1)
                    torch.gather(terms, 2, plan.word_index.expand(n, L, P), out=scores[:, :L])
                    if columns is not None and len(global_words):
                        scores[:, :L].index_copy_(2, global_words, columns[b, heads, :, : len(global_words)])
                        scores[:, :, :L].index_copy_(1, global_words, rows[b, heads, : len(global_words)])
                    if e2w is not None:
                        scores[:, L:, :L] = e2w[b, heads]
                        scores[:, L:, L:] = e2e[b, heads]
                    scores.baddbmm_(q_word[b, heads], word_keys[b, heads].transpose(1, 2))
                if entity_keys is not None:
                    scores[:, :, L:] += torch.bmm(q_entity[b, heads], entity_keys[b, heads].transpose(1, 2))
                if len(plan.padded_keys[b]):
                    scores.index_fill_(2, plan.padded_keys[b], torch.finfo(scores.dtype).min)
                scores = _softmax_(scores)
                if dropout_p > 0:
                    # bernoulli as rand < keep: the same distribution at a third of bernoulli_'s CPU cost
                    kept = torch.rand_like(scores).lt_(1.0 - dropout_p)
                    if save:
                        saved.append(kept.bool())
                    torch.bmm(kept.mul_(scores), value[b, heads], out=context[b, heads])
                else:
                    torch.bmm(scores, value[b, heads], out=context[b, heads])
                if save:
                    saved.append(scores)
        if dropout_p > 0:
            context.mul_(1.0 / (1.0 - dropout_p))  # scale the small output rather than the P x P probabilities
        if save:
            ctx.save_for_backward(q_word, q_entity, word_keys, entity_keys, value, context, distance_table, *saved)
            ctx.plan, ctx.dropout_p = plan, dropout_p
            ctx.shapes = [None if t is None else t.shape for t in (w2e, rows, columns, e2w, e2e)]
        return context

    @staticmethod
    def backward(ctx, grad_context):
        q_word, q_entity, word_keys, entity_keys, value, context, distance_table, *saved = ctx.saved_tensors
        plan, dropout_p = ctx.plan, ctx.dropout_p
        B, H, P, _ = q_word.shape
        L = plan.word_length
        grad_context = grad_context.contiguous()
        # rowsum(P * dP) of the softmax backward is dO . O (the flash-attention identity), dropout or not
        delta = (grad_context * context).sum(-1, keepdim=True)
        if dropout_p > 0:
            grad_context = grad_context * (1.0 / (1.0 - dropout_p))
        grad_q_word, grad_key, grad_value = (
            torch.empty_like(q_word),
            torch.empty_like(word_keys),
            torch.empty_like(value),
        )
        grad_q_entity = None if q_entity is None else torch.empty_like(q_entity)
        w2e_shape, rows_shape, columns_shape, e2w_shape, e2e_shape = ctx.shapes
        grad_table = None if distance_table is None else torch.zeros_like(distance_table)
        grad_w2e = None if w2e_shape is None else q_word.new_empty(w2e_shape)
        grad_rows = None if rows_shape is None else q_word.new_zeros(rows_shape)
        grad_columns = None if columns_shape is None else q_word.new_zeros(columns_shape)
        grad_e2w = None if e2w_shape is None else q_word.new_empty(e2w_shape)
        grad_e2e = None if e2e_shape is None else q_word.new_empty(e2e_shape)
        blocks = iter(saved)
        for b in range(B):
            global_words = plan.global_words[b] if plan.global_words else None
            for h0 in range(0, H, plan.heads_per_block):
                heads = slice(h0, min(h0 + plan.heads_per_block, H))
                kept = next(blocks) if dropout_p > 0 else None
                probs = next(blocks)
                g = grad_context[b, heads]
                grad_scores = torch.bmm(g, value[b, heads].transpose(1, 2))
                used = probs if kept is None else torch.where(kept, probs, 0.0)  # the dropped-out probabilities
                torch.bmm(used.transpose(1, 2), g, out=grad_value[b, heads])
                grad_scores.mul_(used).addcmul_(probs, delta[b, heads], value=-1)  # dS = P' * dP' - P * delta
                del used
                torch.bmm(grad_scores, word_keys[b, heads], out=grad_q_word[b, heads])
                torch.bmm(grad_scores.transpose(1, 2), q_word[b, heads], out=grad_key[b, heads])
                if q_entity is not None:
                    to_entities = grad_scores[:, :, L:]
                    torch.bmm(to_entities, entity_keys[b, heads], out=grad_q_entity[b, heads])
                    grad_key[b, heads, L:] = torch.bmm(to_entities.transpose(1, 2), q_entity[b, heads])
                if distance_table is None:
                    continue
                if grad_e2w is not None:
                    grad_e2w[b, heads] = grad_scores[:, L:, :L]
                    grad_e2e[b, heads] = grad_scores[:, L:, L:]
                if grad_columns is not None and len(global_words):
                    # rows were written last: they own their pairs; then the columns; the rest is distance terms
                    words = grad_scores[:, :L, :L]
                    grad_rows[b, heads, : len(global_words)] = words.index_select(1, global_words)
                    words.index_fill_(1, global_words, 0)
                    grad_columns[b, heads, :, : len(global_words)] = words.index_select(2, global_words)
                    words.index_fill_(2, global_words, 0)
                sums = _word_term_sums(grad_scores[:, :L], plan)
                C = distance_table.size(0)
                distance_sums, word_queries = sums[..., :C], q_word[b, heads, :L]
                grad_q_word[b, heads, :L] += torch.matmul(distance_sums, distance_table)
                grad_table += torch.bmm(distance_sums.transpose(1, 2), word_queries).sum(0)
                if grad_w2e is not None:
                    grad_w2e[b, heads] = sums[..., C:]
        return (
            grad_q_word,
            grad_q_entity,
            grad_key,
            grad_value,
            grad_table,
            grad_w2e,
            grad_rows,
            grad_columns,
            grad_e2w,
            grad_e2e,
            None,
            None,
        )


def _word_term_sums(grad_words: torch.Tensor, plan: _DensePlan) -> torch.Tensor:
    """Word-row score gradients `(n, L, P)` -> per row, the sum per clipped distance and each w2e term `(n, L,
    2k + 1 + E)`. Overwrites the word-pair gradients (their prefix sums find the clipped ends)."""
    k, L = plan.distance_k, plan.word_length
    n = grad_words.size(0)
    if k == 0:
        return torch.cat([grad_words[..., :L].sum(-1, keepdim=True), grad_words[..., L:]], dim=-1)
    out = grad_words.new_empty(n, L, plan.term_index.size(1))
    # one gather reads the inner distance labels and the entity columns; then the clipped ends
    torch.gather(grad_words, 2, plan.term_index.expand(n, L, plan.term_index.size(1)), out=out)
    out.mul_(plan.term_inner)
    _clipped_end_sums(grad_words[..., :L], k, plan.end_index, plan.left_valid, out)
    return out


def _band_sum_plan(
    diagonal: torch.Tensor, width: int, k: int, dtype: torch.dtype
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """Where to find each clipped-distance label in score rows of `width` key columns whose column `diagonal[i]` is
    row i's own key (distance 0): the inner labels' columns `(R, 2k + 1)` (clamped), 1 where they exist and are not
    a clipped end, the prefix-sum columns `(R, 3)` of the two ends (`_clipped_end_sums`), 1 where label 0 has any."""
    if k == 0:
        return None, None, None, None
    labels = torch.arange(2 * k + 1, device=diagonal.device)
    columns = diagonal[:, None] + labels[None, :] - k
    inner = (columns >= 0) & (columns < width) & (labels > 0) & (labels < 2 * k)
    end_index = torch.stack(
        [
            (diagonal - k).clamp(0, width - 1),
            torch.full_like(diagonal, width - 1),
            (diagonal + k - 1).clamp(0, width - 1),
        ],
        dim=1,
    )
    return columns.clamp(0, width - 1), inner.to(dtype), end_index, (diagonal >= k).to(dtype)


def _clipped_end_sums(
    grad: torch.Tensor, k: int, end_index: torch.Tensor, left_valid: torch.Tensor, out: torch.Tensor
) -> None:
    """Labels 0 and 2k take every pair at distance <= -k and >= k: their gradient sums, from the row prefix sums of
    `grad` `(..., R, width)` (overwritten), into `out[..., 0]` (prefix at i - k) and `out[..., 2k]` (total - prefix
    at i + k - 1)."""
    prefix = grad.cumsum_(-1)
    ends = prefix.gather(-1, end_index.expand(*grad.shape[:-1], 3))
    out[..., 0] = ends[..., 0] * left_valid
    out[..., 2 * k] = ends[..., 1] - ends[..., 2]


@dataclass
class _LabelTerms:
    """Scaled label terms `q_i . r_l`, per block over the labels that block can use.

    Args:
        distance: `(B, H, L, 2k + 1)` w2w clipped distances (one NULL column when distance labels are off), or
            None when the consumer computes them.
        rank: `(B, H, L, 3)` the `RelativeLabels.rank_labels` (NULL, question, CLS), or None.
        w2e: `(B, H, L, E)`, e2w: `(B, H, E, L)`, e2e: `(B, H, E, E)`: the terms of each pair, or None.
        distance_table, rank_table: the label embeddings behind `distance` and `rank` (`(labels, d)`), for terms
            of a few more queries.
    """

    distance: torch.Tensor | None
    distance_table: torch.Tensor
    rank: torch.Tensor | None = None
    rank_table: torch.Tensor | None = None
    w2e: torch.Tensor | None = None
    e2w: torch.Tensor | None = None
    e2e: torch.Tensor | None = None


def _entity_word_positions(tokens: TokenStructure) -> torch.Tensor:
    """e2w label ids `(B, E, L)` -> their positions in `RelativeLabels.word_entity_labels`."""
    if "entity_word_positions" not in tokens.cache:
        labels = torch.tensor(tokens.layout.word_entity_labels, device=tokens.entity_word_labels.device)
        position = torch.zeros(tokens.layout.size, dtype=torch.long, device=labels.device)
        position[labels] = torch.arange(len(labels), device=labels.device)
        tokens.cache["entity_word_positions"] = position[tokens.entity_word_labels]
    return tokens.cache["entity_word_positions"]


def _typed_query_key(
    q_to_word: torch.Tensor, q_to_entity: torch.Tensor, key: torch.Tensor, word_length: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`[q_to_word ; q_to_entity]` and type-masked keys (`[k ; 0]` words, `[0 ; k]` entities): one product, 4 blocks."""
    if q_to_entity is q_to_word:
        return q_to_word, key
    query = torch.cat([q_to_word, q_to_entity], dim=-1)
    is_entity_key = torch.zeros(1, 1, key.size(2), 1, dtype=key.dtype, device=key.device)
    is_entity_key[:, :, word_length:] = 1
    return query, torch.cat([key * (1 - is_entity_key), key * is_entity_key], dim=-1)


def _dropout(probs: torch.Tensor, p: float) -> torch.Tensor:
    """Dropout of attention probabilities, the mask drawn as `rand >= p` (the same distribution as `bernoulli_`,
    a third of its CPU cost) and kept as bool for the backward."""
    if p == 0.0:
        return probs
    return torch.where(torch.rand_like(probs) >= p, probs * (1.0 / (1.0 - p)), 0.0)


@dataclass
class _WindowPlan:
    """Index tensors of the windowed path for one batch (shared by every layer).

    Word rows come in `blocks` blocks of `block` rows (words padded to `blocks * block`); block n reads the
    `width = block + 2 * window` word keys from `n * block - window` on (keys padded by `window` on both sides).

    Args:
        band_allowed: bool `(B, blocks, block, width)`: in the window, key real and not global (global keys are
            read once, separately).
        band_labels: `(block, width)` long: clipped-distance label of each window pair (the same in every block).
        term_index, term_inner, end_index, left_valid: `_label_sums` of a block row's window: the window column
            of each inner distance label, 1 where it exists, the prefix-sum columns of the two clipped ends.
        global_words: `(B, G)` long: the global words (padded with 0; G the most of any example), or None.
        global_allowed: bool `(B, G)`: the slot holds a real, unpadded global word.
        global_slots: `(N, 2)` long: (example, slot) of every real global word.
        local_global_ranks, local_global_distance: `(B, blocks * block, G)` long: pair rank and clipped-distance
            label of every (padded) word row with each global word.
        global_word_ranks, global_word_distance: `(B, 1, G, L)` long: the same for each global word's row.
        entity_allowed: bool `(B, E)`; key_allowed: bool `(B, 1, 1, P)`: real keys.
    """

    block: int
    blocks: int
    width: int
    band_allowed: torch.Tensor
    band_labels: torch.Tensor
    term_index: torch.Tensor | None
    term_inner: torch.Tensor | None
    end_index: torch.Tensor | None
    left_valid: torch.Tensor | None
    global_words: torch.Tensor | None
    global_allowed: torch.Tensor | None
    global_slots: torch.Tensor | None
    local_global_ranks: torch.Tensor | None
    local_global_distance: torch.Tensor | None
    global_word_ranks: torch.Tensor | None
    global_word_distance: torch.Tensor | None
    entity_allowed: torch.Tensor
    key_allowed: torch.Tensor
    heads_per_chunk: int
    blocks_per_chunk: int


def _window_plan(tokens: TokenStructure, word_length: int, num_heads: int, dtype: torch.dtype) -> _WindowPlan:
    key = ("window", word_length, num_heads, dtype)
    if key in tokens.cache:
        return tokens.cache[key]
    mask = tokens.attention_mask.bool()
    device = mask.device
    batch_size = mask.size(0)
    L, w, k = word_length, tokens.attention_window, tokens.distance_k
    block = min(WINDOW_BLOCK, L)
    blocks = -(-L // block)
    width = block + 2 * w
    rows = torch.arange(blocks * block, device=device).view(blocks, block)
    keys = torch.arange(blocks, device=device)[:, None] * block - w + torch.arange(width, device=device)
    relative = keys[:, None, :] - rows[:, :, None]
    is_global = tokens.window_global
    if is_global is None:
        is_global = torch.zeros(batch_size, L, dtype=torch.bool, device=device)
    key_ok = (mask[:, :L] & ~is_global)[:, keys.clamp(0, L - 1)] & ((keys >= 0) & (keys < L))
    band_allowed = (relative.abs() <= w) & key_ok[:, :, None, :]
    band_labels = relative[0].clamp(-k, k) + k
    term_index, term_inner, end_index, left_valid = _band_sum_plan(
        torch.arange(block, device=device) + w, width, k, dtype
    )
    ranks = tokens.word_ranks
    if ranks is None:
        ranks = torch.zeros(batch_size, L, dtype=torch.long, device=device)
    counts = is_global.sum(1)
    G = int(counts.max()) if batch_size else 0
    global_words = global_allowed = global_slots = None
    local_global_ranks = local_global_distance = global_word_ranks = global_word_distance = None
    if G:
        # global words first, in order (a stable sort of "is local")
        order = torch.sort((~is_global).to(torch.uint8), dim=1, stable=True).indices[:, :G]
        valid = torch.arange(G, device=device) < counts[:, None]
        global_words = torch.where(valid, order, 0)
        global_allowed = valid & mask.gather(1, global_words)
        global_slots = valid.nonzero()
        positions = torch.arange(L, device=device)
        pair = torch.maximum(ranks[:, :, None], ranks.gather(1, global_words)[:, None, :])
        distance = (global_words[:, None, :] - positions[None, :, None]).clamp(-k, k) + k
        global_word_ranks, global_word_distance = pair.transpose(1, 2)[:, None], (2 * k - distance).mT[:, None]
        padding = blocks * block - L
        local_global_ranks, local_global_distance = (
            F.pad(pair, (0, 0, 0, padding)),
            F.pad(distance, (0, 0, 0, padding)),
        )
    element = torch.finfo(dtype).bits // 8
    per_head_block = block * (width + G + mask.size(1) - L) * element
    heads = min(num_heads, max(1, SCORE_BLOCK_BYTES // (per_head_block * blocks)))
    chunk_blocks = min(blocks, max(1, SCORE_BLOCK_BYTES // (per_head_block * heads)))
    plan = _WindowPlan(
        block,
        blocks,
        width,
        band_allowed,
        band_labels,
        term_index,
        term_inner,
        end_index,
        left_valid,
        global_words,
        global_allowed,
        global_slots,
        local_global_ranks,
        local_global_distance,
        global_word_ranks,
        global_word_distance,
        mask[:, L:],
        mask[:, None, None, :],
        heads,
        chunk_blocks,
    )
    tokens.cache[key] = plan
    return plan


def _label_sums(grad: torch.Tensor, k: int, term_index, term_inner, end_index, left_valid, out: torch.Tensor) -> None:
    """Score gradients `(..., R, width)` of pairs with clipped-distance labels -> their sums per row and label into
    `out` `(..., R, 2k + 1)` (see `_band_sum_plan`). Overwrites `grad`."""
    if k == 0:
        torch.sum(grad, -1, keepdim=True, out=out)
        return
    torch.gather(grad, -1, term_index.expand(*grad.shape[:-1], 2 * k + 1), out=out)
    out.mul_(term_inner)
    _clipped_end_sums(grad, k, end_index, left_valid, out)


class _WindowedAttention(torch.autograd.Function):
    """The local word rows under `attention_window`, at a cost linear in length (queries come scaled).

    A block of rows attends to its window of word keys (`_WindowPlan`), to the global words and to the entities:
    scores `(rows, width + G + E)`, computed one chunk of rows and heads at a time (at most `SCORE_BLOCK_BYTES`),
    with label terms spread in from `distance` `(B, H, L, 2k + 1)` (window pairs and, for rank 0, global words),
    `rank` `(B, H, L, 3)` (global words of rank > 0) and `w2e` `(B, H, L, E)`. Backward by hand as in `_FusedAttention`; only the probabilities (and the bool dropout mask)
    are kept. Returns the context of every word row `(B, H, L, d)` (global words' rows are recomputed in full by
    the caller).
    """

    @staticmethod
    def forward(ctx, q_word, q_entity, key, value, distance, rank, w2e, plan, dropout_p):
        B, H, L, d = q_word.shape
        P = key.size(2)
        block, blocks, width = plan.block, plan.blocks, plan.width
        w = (width - block) // 2
        padding = blocks * block - L
        save = any(ctx.needs_input_grad)

        def rows_padded(x):
            if x is None:
                return None
            return F.pad(x, (0, 0, 0, padding)) if padding else x.contiguous()

        q_word, q_entity = rows_padded(q_word), rows_padded(q_entity)
        distance, rank, w2e = rows_padded(distance), rows_padded(rank), rows_padded(w2e)
        # keys and values padded by the window on both sides: block n's window starts at row n * block
        key_pad = F.pad(key[:, :, :L], (0, 0, w, w + padding)).contiguous()
        value_pad = F.pad(value[:, :, :L], (0, 0, w, w + padding)).contiguous()
        G = 0 if plan.global_words is None else plan.global_words.size(1)
        global_keys = global_values = None
        if G:
            index = plan.global_words[:, None, :, None].expand(B, H, G, d)
            global_keys, global_values = key[:, :, :L].gather(2, index), value[:, :, :L].gather(2, index)
        entity_keys, entity_values = key[:, :, L:].contiguous(), value[:, :, L:].contiguous()
        context = q_word.new_empty(B, H, blocks * block, value.size(-1))
        masked = torch.finfo(q_word.dtype).min
        saved = []
        for b, heads, chunk, rows in _window_chunks(plan, B, H):
            n, m = heads.stop - heads.start, chunk.stop - chunk.start
            queries = q_word[b, heads, rows].view(n, m, block, d)
            band = torch.matmul(queries, key_pad[b, heads].unfold(1, width, block)[:, chunk])
            if distance is not None:
                labels = plan.band_labels.expand(n, m, block, width)
                band.add_(distance[b, heads, rows].view(n, m, block, -1).gather(3, labels))
            parts = [band.masked_fill_(~plan.band_allowed[b, chunk], masked).view(n, m * block, width)]
            if G:
                to_global = torch.bmm(q_word[b, heads, rows], global_keys[b, heads].transpose(1, 2))
                if distance is not None:
                    to_global.add_(_global_key_terms(distance, rank, plan, b, heads, rows))
                parts.append(to_global.masked_fill_(~plan.global_allowed[b], masked))
            if P > L:
                to_entity = torch.bmm(q_entity[b, heads, rows], entity_keys[b, heads].transpose(1, 2))
                if w2e is not None:
                    to_entity.add_(w2e[b, heads, rows])
                parts.append(to_entity.masked_fill_(~plan.entity_allowed[b], masked))
            scores = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
            scores = _softmax_(scores)
            used = scores
            if dropout_p > 0:
                used = torch.rand_like(scores).lt_(1.0 - dropout_p)
                if save:
                    saved.append(used.bool())
                used.mul_(scores)
            value_windows = value_pad[b, heads].unfold(1, width, block)[:, chunk].transpose(-1, -2)
            out = torch.matmul(used[..., :width].view(n, m, block, width), value_windows).view(n, m * block, -1)
            if G:
                out.baddbmm_(used[..., width : width + G], global_values[b, heads])
            if P > L:
                out.baddbmm_(used[..., width + G :], entity_values[b, heads])
            context[b, heads, rows] = out
            if save:
                saved.append(scores)
        if dropout_p > 0:
            context.mul_(1.0 / (1.0 - dropout_p))
        if save:
            ctx.save_for_backward(
                q_word,
                q_entity,
                key_pad,
                value_pad,
                global_keys,
                global_values,
                entity_keys,
                entity_values,
                context,
                *saved,
            )
            ctx.plan, ctx.dropout_p, ctx.sizes = plan, dropout_p, (L, P)
            ctx.has_terms = (distance is not None, rank is not None, w2e is not None)
        return context[:, :, :L]

    @staticmethod
    def backward(ctx, grad_context):
        (
            q_word,
            q_entity,
            key_pad,
            value_pad,
            global_keys,
            global_values,
            entity_keys,
            entity_values,
            context,
            *saved,
        ) = ctx.saved_tensors
        saved = iter(saved)
        plan, dropout_p, (L, P) = ctx.plan, ctx.dropout_p, ctx.sizes
        B, H, Lp, d = q_word.shape
        block, width = plan.block, plan.width
        w = (width - block) // 2
        G = 0 if global_keys is None else global_keys.size(2)
        grad_context = F.pad(grad_context, (0, 0, 0, Lp - L))
        delta = (grad_context * context).sum(-1, keepdim=True)
        if dropout_p > 0:
            grad_context = grad_context * (1.0 / (1.0 - dropout_p))
        grad_q_word = torch.empty_like(q_word)
        grad_q_entity = None if q_entity is None else torch.empty_like(q_entity)
        grad_key_pad, grad_value_pad = torch.zeros_like(key_pad), torch.zeros_like(value_pad)
        grad_global_keys = None if G == 0 else torch.zeros_like(global_keys)
        grad_global_values = None if G == 0 else torch.zeros_like(global_values)
        grad_entity_keys, grad_entity_values = torch.zeros_like(entity_keys), torch.zeros_like(entity_values)
        has_distance, has_rank, has_w2e = ctx.has_terms
        k = 0 if plan.term_index is None else (plan.term_index.size(1) - 1) // 2
        grad_distance = q_word.new_empty(B, H, Lp, 2 * k + 1) if has_distance else None
        grad_rank = q_word.new_zeros(B, H, Lp, 3) if has_rank else None
        grad_w2e = q_word.new_empty(B, H, Lp, P - L) if has_w2e else None

        def span(m: int) -> int:
            return (m - 1) * block + width  # padded rows read by m consecutive windows

        for b, heads, chunk, rows in _window_chunks(plan, B, H):
            n, m = heads.stop - heads.start, chunk.stop - chunk.start
            kept = next(saved) if dropout_p > 0 else None
            probs = next(saved)
            g = grad_context[b, heads, rows]
            key_windows = key_pad[b, heads].unfold(1, width, block)[:, chunk]
            value_windows = value_pad[b, heads].unfold(1, width, block)[:, chunk]
            parts = [torch.matmul(g.view(n, m, block, d), value_windows).view(n, m * block, width)]
            if G:
                parts.append(torch.bmm(g, global_values[b, heads].transpose(1, 2)))
            if P > L:
                parts.append(torch.bmm(g, entity_values[b, heads].transpose(1, 2)))
            grad_scores = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
            used = probs if kept is None else torch.where(kept, probs, 0.0)
            windows = torch.matmul(
                used[..., :width].view(n, m, block, width).transpose(-1, -2), g.view(n, m, block, d)
            )
            first = chunk.start * block  # padded row of the chunk's first window
            grad_value_pad[b, heads, first : first + span(m)] += _fold_windows(windows, span(m), block)
            if G:
                grad_global_values[b, heads] += torch.bmm(used[..., width : width + G].transpose(1, 2), g)
            if P > L:
                grad_entity_values[b, heads] += torch.bmm(used[..., width + G :].transpose(1, 2), g)
            grad_scores.mul_(used).addcmul_(probs, delta[b, heads, rows], value=-1)
            del used
            band = grad_scores[..., :width].view(n, m, block, width)
            queries = q_word[b, heads, rows]
            grad_q = torch.matmul(band, key_windows.transpose(-1, -2)).view(n, m * block, d)
            windows = torch.matmul(band.transpose(-1, -2), queries.view(n, m, block, d))
            grad_key_pad[b, heads, first : first + span(m)] += _fold_windows(windows, span(m), block)
            if G:
                to_global = grad_scores[..., width : width + G]
                grad_q.baddbmm_(to_global, global_keys[b, heads])
                grad_global_keys[b, heads] += torch.bmm(to_global.transpose(1, 2), queries)
            grad_q_word[b, heads, rows] = grad_q
            if P > L:
                to_entity = grad_scores[..., width + G :]
                grad_q_entity[b, heads, rows] = torch.bmm(to_entity, entity_keys[b, heads])
                grad_entity_keys[b, heads] += torch.bmm(to_entity.transpose(1, 2), q_entity[b, heads, rows])
                if grad_w2e is not None:
                    grad_w2e[b, heads, rows] = to_entity
            if grad_distance is not None:
                out = grad_distance[b, heads, rows].view(n, m, block, -1)
                _label_sums(band, k, plan.term_index, plan.term_inner, plan.end_index, plan.left_valid, out)
                if G:
                    # global words' terms: rank > 0 reads `rank`, rank 0 the clipped distance
                    to_global = grad_scores[..., width : width + G]
                    ranks = plan.local_global_ranks[b, rows].expand_as(to_global)
                    by_rank = ranks > 0
                    grad_distance[b, heads, rows].scatter_add_(
                        2, plan.local_global_distance[b, rows].expand_as(to_global), to_global.masked_fill(by_rank, 0)
                    )
                    if grad_rank is not None:
                        grad_rank[b, heads, rows].scatter_add_(2, ranks, to_global.masked_fill(~by_rank, 0))
        grad_key = torch.cat([grad_key_pad[:, :, w : w + L], grad_entity_keys], dim=2)
        grad_value = torch.cat([grad_value_pad[:, :, w : w + L], grad_entity_values], dim=2)
        if G:
            index = plan.global_words[:, None, :, None].expand(B, H, G, d)
            grad_key[:, :, :L].scatter_add_(2, index, grad_global_keys)
            grad_value[:, :, :L].scatter_add_(2, index, grad_global_values)

        def rows_of(x):
            return None if x is None else x[:, :, :L]

        return (
            rows_of(grad_q_word),
            rows_of(grad_q_entity),
            grad_key,
            grad_value,
            rows_of(grad_distance),
            rows_of(grad_rank),
            rows_of(grad_w2e),
            None,
            None,
        )


def _global_key_terms(
    distance: torch.Tensor, rank: torch.Tensor | None, plan: _WindowPlan, b: int, heads: slice, rows: slice
) -> torch.Tensor:
    """Label terms of a chunk's word rows with the global words `(n, rows, G)`: pair rank's, else the distance's."""
    terms = distance[b, heads, rows]
    index = plan.local_global_distance[b, rows].expand(terms.size(0), -1, -1)
    by_distance = terms.gather(2, index)
    if rank is None:
        return by_distance
    ranks = plan.local_global_ranks[b, rows]
    return torch.where(ranks > 0, rank[b, heads, rows].gather(2, ranks.expand_as(index)), by_distance)


def _window_chunks(plan: _WindowPlan, batch_size: int, num_heads: int):
    """(example, heads, blocks, padded word rows) of every chunk of the windowed scores."""
    for b in range(batch_size):
        for h0 in range(0, num_heads, plan.heads_per_chunk):
            heads = slice(h0, min(h0 + plan.heads_per_chunk, num_heads))
            for n0 in range(0, plan.blocks, plan.blocks_per_chunk):
                chunk = slice(n0, min(n0 + plan.blocks_per_chunk, plan.blocks))
                yield b, heads, chunk, slice(chunk.start * plan.block, chunk.stop * plan.block)


def _fold_windows(windows: torch.Tensor, span: int, block: int) -> torch.Tensor:
    """Gradients of `m` overlapping key windows `(n, m, width, d)` (stride `block`) -> their `span` rows `(n, span, d)`."""
    n, m, width, d = windows.shape
    return torch.ops.aten.unfold_backward(windows.transpose(-1, -2), [n, span, d], 1, width, block)


def _windowed_attention(
    q_to_word: torch.Tensor,
    q_to_entity: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: _LabelTerms | None,
    tokens: TokenStructure,
    word_length: int,
    dropout_p: float,
) -> torch.Tensor:
    """The dense masked attention under `attention_window`, at a cost linear in length; queries come scaled.

    Local word rows: `_WindowedAttention` (window, global words, entities). Global words and entities attend to
    every token: scores `(B, H, G + E, P)`, their label terms gathered per pair from the compact `terms` (never a
    `(P, P)` tensor). Returns the context `(B, H, P, d)`.
    """
    B, H, P, d = q_to_word.shape
    L, E = word_length, P - word_length
    plan = _window_plan(tokens, L, H, q_to_word.dtype)
    G = 0 if plan.global_words is None else plan.global_words.size(1)
    distance = rank = w2e = None
    if terms is not None:
        distance, rank, w2e = terms.distance, terms.rank, terms.w2e
    words = _WindowedAttention.apply(
        q_to_word[:, :, :L],
        q_to_entity[:, :, :L] if E else None,
        key,
        value,
        distance,
        rank,
        w2e,
        plan,
        dropout_p,
    )
    if not G and not E:
        return words

    # rows that attend to every token: the global words, then the entities
    row_to_word, row_to_entity, row_terms = [], [], []
    if G:
        index = plan.global_words[:, None, :, None]
        row_to_word.append(q_to_word[:, :, :L].gather(2, index.expand(B, H, G, d)))
        row_to_entity.append(q_to_entity[:, :, :L].gather(2, index.expand(B, H, G, d)))
        if terms is not None:
            # the global rows' own terms from their queries (a gather from `distance` would cost a full-size backward)
            rows = torch.matmul(row_to_word[0], terms.distance_table.t())
            row_word_terms = rows.gather(3, plan.global_word_distance.expand(B, H, G, L))
            if terms.rank is not None:
                rows = torch.matmul(row_to_word[0], terms.rank_table.t())
                by_rank = rows.gather(3, plan.global_word_ranks.expand(B, H, G, L))
                row_word_terms = torch.where(plan.global_word_ranks > 0, by_rank, row_word_terms)
            if E:
                row_word_terms = torch.cat([row_word_terms, w2e.gather(2, index.expand(B, H, G, E))], dim=-1)
            row_terms.append(row_word_terms)
    if E:
        row_to_word.append(q_to_word[:, :, L:])
        row_to_entity.append(q_to_entity[:, :, L:])
        if terms is not None:
            row_terms.append(torch.cat([terms.e2w, terms.e2e], dim=-1))
    row_to_word, row_to_entity = torch.cat(row_to_word, dim=2), torch.cat(row_to_entity, dim=2)
    scores = torch.matmul(row_to_word, key[:, :, :L].transpose(-1, -2))
    if E:
        scores = torch.cat([scores, torch.matmul(row_to_entity, key[:, :, L:].transpose(-1, -2))], dim=-1)
    if row_terms:
        scores = scores + torch.cat(row_terms, dim=2)
    scores = scores.masked_fill_(~plan.key_allowed, torch.finfo(scores.dtype).min)
    full_rows = torch.matmul(_dropout(torch.softmax(scores, dim=-1), dropout_p), value)
    if G:
        # the global words' rows replace their windowed rows
        example, slot = plan.global_slots.unbind(1)
        words = words.transpose(1, 2).index_put(
            (example, plan.global_words[example, slot]), full_rows[:, :, :G].transpose(1, 2)[example, slot]
        )
        words = words.transpose(1, 2)
    return torch.cat([words, full_rows[:, :, G:]], dim=2) if E else words


class GesaSelfAttention(nn.Module):
    """Eq. 1: four query matrices by token-type pair, shared K/V, `q_i . r_label(i,j)` added to the scores.

    One fused attention product: each token carries two queries `[q_to_word ; q_to_entity]` and each key a
    type-masked copy (`[k ; 0]` for words, `[0 ; k]` for entities), so one product yields all four blocks. The
    label term `q_i . r_label(i,j)` is computed per block over the few labels that block can use (`_label_terms`)
    and spread into the scores inside the attention (`_FusedAttention`, or `_windowed_attention` with
    `attention_window`). `output_attentions`, V-type labels and `attn_implementation="eager"` take the eager
    path over the dense `(B, P, P)` labels (same numbers).
    """

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_heads * self.head_size
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
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`(B, L, D)`, `(B, E, D)` -> context `(B, P, D)` and, on request, attention probabilities `(B, H, P, P)`.

        `structure`: which pairs attend and with which label (`AttentionStructure`).
        """
        tokens = words if entities is None else torch.cat([words, entities], dim=1)
        key = self._heads(self.key(tokens))
        value = self._heads(self.value(tokens))
        q_to_word, q_to_entity = self._queries(words, entities)
        dropout_p = self.dropout_prob if self.training else 0.0
        eager = (
            output_attentions or self.value_label_embeddings is not None or self.config._attn_implementation == "eager"
        )
        if eager or structure.tokens is None:
            context, probs = self._dense_attention(q_to_word, q_to_entity, key, value, structure, eager, dropout_p)
        else:
            # scale the queries once: the label terms q . r then come out scaled too
            scale = 1.0 / math.sqrt(self.head_size)
            shared = q_to_entity is q_to_word
            q_to_word = q_to_word * scale
            q_to_entity = q_to_word if shared else q_to_entity * scale
            context, probs = self._structured_attention(q_to_word, q_to_entity, key, value, structure, dropout_p), None
        context = context.transpose(1, 2).reshape(tokens.size(0), tokens.size(1), self.all_head_size)
        return context, probs

    def _dense_attention(
        self,
        q_to_word: torch.Tensor,
        q_to_entity: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        structure: AttentionStructure,
        eager: bool,
        dropout_p: float,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Over the dense `allowed` mask and `(B, P, P)` labels: the eager path, and SDPA for hand-built structures."""
        word_length = structure.word_length
        allowed, labels = structure.allowed, structure.labels
        scale = 1.0 / math.sqrt(self.head_size)
        label_scores = None
        if self.label_embeddings is not None and labels is not None:
            label_scores = self._gathered_label_scores(q_to_word, q_to_entity, labels, word_length)
        masked_value = torch.finfo(q_to_word.dtype).min
        query, key_for_query = _typed_query_key(q_to_word, q_to_entity, key, word_length)
        if eager:
            scores = torch.matmul(query, key_for_query.transpose(-1, -2))
            if label_scores is not None:
                scores = scores + label_scores
            scores = (scores * scale).masked_fill(~allowed, masked_value)
            probs = F.dropout(torch.softmax(scores, dim=-1), p=dropout_p, training=self.training)
            context = torch.matmul(probs, value)
            if self.value_label_embeddings is not None:
                # V-type labels: sum_j a_ij r^V_label(i,j), by pooling probabilities per label first
                B, H, P, _ = probs.shape
                per_label = probs.new_zeros(B, H, P, self.value_label_embeddings.num_embeddings)
                per_label.scatter_add_(3, labels[:, None].expand(B, H, P, labels.size(-1)), probs)
                context = context + torch.matmul(per_label, self.value_label_embeddings.weight)
            return context, probs
        if label_scores is not None:
            bias = (label_scores * scale).masked_fill(~allowed, masked_value)
        else:
            bias = torch.zeros(allowed.shape, dtype=query.dtype, device=query.device).masked_fill(
                ~allowed, masked_value
            )
        context = F.scaled_dot_product_attention(
            query, key_for_query, value, attn_mask=bias, dropout_p=dropout_p, scale=scale
        )
        return context, None

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
        distance: bool = True,
    ) -> _LabelTerms:
        """`q_i . r_l` for the few labels l each block can use (queries come scaled, so the terms do too).

        `distance=False` leaves the distance terms to the consumer (`_FusedAttention` computes them per block).
        """
        table = self.label_embeddings.weight
        layout = tokens.layout
        L, k = word_length, tokens.distance_k
        B, H, P, _ = q_to_word.shape
        word_queries = q_to_word[:, :, :L]
        # w2w: 2k + 1 clipped distances (or the NULL label alone), the global ranks
        distance_rows = table[layout.distance_offset : layout.distance_offset + 2 * k + 1] if k else table[:1]
        terms = _LabelTerms(torch.matmul(word_queries, distance_rows.t()) if distance else None, distance_rows)
        if tokens.word_ranks is not None:
            terms.rank_table = table[list(layout.rank_labels)]
            terms.rank = torch.matmul(word_queries, terms.rank_table.t())
        if tokens.entity_word_labels is None or P == L:
            return terms
        # w2e / e2w: the four labels of that label set; e2e: the whole table (E x E pairs only)
        local = _entity_word_positions(tokens)
        rows = table[list(layout.word_entity_labels)].t()
        E = P - L
        w2e = torch.matmul(q_to_entity[:, :, :L], rows)
        terms.w2e = w2e.gather(3, local.transpose(1, 2)[:, None].expand(B, H, L, E))
        e2w = torch.matmul(q_to_word[:, :, L:], rows)
        terms.e2w = e2w.gather(3, local[:, None].expand(B, H, E, L))
        e2e = torch.matmul(q_to_entity[:, :, L:], table.t())
        terms.e2e = e2e.gather(3, tokens.entity_entity_labels[:, None].expand(B, H, E, E))
        return terms

    def _structured_attention(
        self,
        q_to_word: torch.Tensor,
        q_to_entity: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        structure: AttentionStructure,
        dropout_p: float,
    ) -> torch.Tensor:
        """Fast paths over `structure.tokens`; queries come scaled. Returns the context `(B, H, P, d)`."""
        tokens, L = structure.tokens, structure.word_length
        terms = None
        if tokens.use_labels and self.label_embeddings is not None:
            terms = self._label_terms(q_to_word, q_to_entity, tokens, L, distance=tokens.attention_window is not None)
        if tokens.attention_window is not None:
            return _windowed_attention(q_to_word, q_to_entity, key, value, terms, tokens, L, dropout_p)
        if terms is None and dropout_p == 0.0:
            # no label term: SDPA's fused CPU/GPU kernels need no help
            query, key_for_query = _typed_query_key(q_to_word, q_to_entity, key, L)
            mask = tokens.attention_mask.bool()[:, None, None, :]
            return F.scaled_dot_product_attention(query, key_for_query, value, attn_mask=mask, scale=1.0)
        plan = _dense_plan(tokens, L, self.num_heads, q_to_word.dtype)
        q_entity = None if q_to_entity is q_to_word or key.size(2) == L else q_to_entity
        table = rows = columns = w2e = e2w = e2e = None
        if terms is not None:
            table, w2e, e2w, e2e = terms.distance_table, terms.w2e, terms.e2w, terms.e2e
            if plan.global_slots is not None:
                B, H = q_to_word.shape[:2]
                G = plan.global_slots.size(1)
                # global words: a global term on their whole row and column of the w2w block (pair rank's label)
                columns = terms.rank.gather(3, plan.column_ranks.expand(B, H, L, G))
                global_rank_terms = terms.rank.gather(2, plan.global_slots[:, None, :, None].expand(B, H, G, 3))
                rows = global_rank_terms.gather(3, plan.row_ranks.expand(B, H, G, L))
        return _FusedAttention.apply(
            q_to_word, q_entity, key, value, table, w2e, rows, columns, e2w, e2e, plan, dropout_p
        )


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
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        context, probs = self.self(words, entities, structure, output_attentions)
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
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """`(B, L, D)`, `(B, E, D)` -> the same shapes, plus attention probabilities on request."""
        attended, probs = self.attention(words, entities, structure, output_attentions)
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
        output_hidden_states: bool = False,
    ) -> GesaModelOutput:
        all_words = (words,) if output_hidden_states else None
        all_entities = (entities,) if output_hidden_states and entities is not None else None
        all_attentions = () if output_attentions else None
        for layer in self.layer:
            words, entities, probs = layer(words, entities, structure, output_attentions)
            if output_hidden_states:
                all_words += (words,)
                if entities is not None:
                    all_entities += (entities,)
            if output_attentions:
                all_attentions += (probs,)
        return GesaModelOutput(
            last_hidden_state=words,
            entity_last_hidden_state=entities,
            hidden_states=all_words,
            entity_hidden_states=all_entities,
            attentions=all_attentions,
        )


class GesaPooler(nn.Module):
    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))


# ---------------------------------------------------------------------------------------------
# Pre-trained model base: weights init, LUKE conversion, added word tokens
# ---------------------------------------------------------------------------------------------


class GesaPreTrainedModel(PreTrainedModel):
    config_class = GesaConfig
    base_model_prefix = "gesa"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _no_split_modules = ["GesaLayer", "GesaEntityEmbeddings"]
    # the loss is a mean over real candidates, not over label tokens: Trainer must not pass num_items_in_batch
    accepts_loss_kwargs = False

    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs) -> None:
        """`PreTrainedModel.save_pretrained`, with `auto_map` also naming the base model for `AutoModel`."""
        auto_map = dict(getattr(self.config, "auto_map", None) or {})
        base_class = type(self.base_model)
        auto_map.setdefault("AutoModel", f"{base_class.__module__.split('.')[-1]}.{base_class.__name__}")
        self.config.auto_map = auto_map
        super().save_pretrained(save_directory, *args, **kwargs)

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
        keep_entity_aware_queries: bool = False,
        entity_rows: list[int] | None = None,
        **config_overrides,
    ) -> GesaPreTrainedModel:
        """Build this GESA class from a transformers LUKE checkpoint (`LukeModel` or any `LukeFor*`).

        LUKE's word `query` is copied into all four query matrices (paper 4.1) unless
        `keep_entity_aware_queries`; key/value/output/FFN/LayerNorm/embeddings map one to one; absolute position
        tables are dropped unless `use_absolute_position_embeddings=True`; label tables and heads start fresh.
        `entity_rows` keeps only those rows of LUKE's entity table (in that order; e.g. `[PAD]`, `[UNK]`,
        `[MASK]`). Every GESA parameter not filled from LUKE and every LUKE weight left unused is logged and
        returned in `model.luke_conversion_info`.
        """
        from transformers import AutoConfig, LukeModel

        luke_config = AutoConfig.from_pretrained(pretrained_model_name_or_path)
        if luke_config.model_type != "luke":
            raise ValueError(
                f"{pretrained_model_name_or_path!s} is a {luke_config.model_type!r} checkpoint, not LUKE; "
                "from_luke_pretrained converts LUKE checkpoints (e.g. studio-ousia/luke-large). "
                "Load GESA checkpoints with from_pretrained."
            )
        luke, luke_loading = LukeModel.from_pretrained(pretrained_model_name_or_path, output_loading_info=True)
        luke_state = luke.state_dict()
        fields = (
            "vocab_size entity_vocab_size hidden_size entity_emb_size num_hidden_layers num_attention_heads "
            "intermediate_size hidden_act hidden_dropout_prob attention_probs_dropout_prob max_position_embeddings "
            "type_vocab_size initializer_range layer_norm_eps use_entity_aware_attention classifier_dropout "
            "pad_token_id bos_token_id eos_token_id"
        ).split()
        config_kwargs = {name: getattr(luke_config, name) for name in fields if hasattr(luke_config, name)}
        config_kwargs["use_entity_aware_attention"] = True
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
                continue
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
        **kwargs,
    ) -> GesaModelOutput | tuple:
        """Encode words `(B, L)` and entities `(B, E)`; see the README table for every input's shape and meaning."""
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if kwargs:
            raise ValueError(
                f"GesaModel.forward got unexpected inputs {sorted(kwargs)}; see the README for the accepted inputs."
            )
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of input_ids or inputs_embeds.")
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
        self._check_inputs(
            batch_size,
            word_length,
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            global_attention_mask=global_attention_mask,
            entity_ids=entity_ids,
            entity_attention_mask=entity_attention_mask,
            entity_token_type_ids=entity_token_type_ids,
            entity_position_ids=entity_position_ids,
            placeholder_entity_mask=placeholder_entity_mask,
            entity_string_ids=entity_string_ids,
            entity_sentence_ids=entity_sentence_ids,
        )

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
        encoded = self.encoder(words, entities, structure, output_attentions, output_hidden_states)
        encoded.pooler_output = self.pooler(encoded.last_hidden_state) if self.pooler is not None else None
        return encoded if return_dict else encoded.to_tuple()

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

    def _check_inputs(self, batch_size: int, word_length: int, **inputs: torch.Tensor | None) -> None:
        """Raise a `ValueError` naming the input for shapes or values the model would silently misread."""
        if torch.compiler.is_compiling():
            return
        entity_ids = inputs["entity_ids"]
        word_shaped = ("input_ids", "attention_mask", "token_type_ids", "global_attention_mask")
        entity_shaped = (
            "entity_attention_mask",
            "entity_token_type_ids",
            "placeholder_entity_mask",
            "entity_string_ids",
            "entity_sentence_ids",
        )
        for name in word_shaped:
            value = inputs[name]
            if value is not None and tuple(value.shape) != (batch_size, word_length):
                raise ValueError(
                    f"{name} has shape {tuple(value.shape)}; expected (batch, words) = {(batch_size, word_length)}."
                )
        if entity_ids is None:
            for name in (*entity_shaped, "entity_position_ids"):
                if inputs[name] is not None:
                    raise ValueError(f"{name} was given without entity_ids; pass entity_ids too or drop {name}.")
        else:
            if entity_ids.dim() != 2 or entity_ids.size(0) != batch_size:
                raise ValueError(
                    f"entity_ids has shape {tuple(entity_ids.shape)}; expected (batch={batch_size}, entities)."
                )
            entity_length = entity_ids.size(1)
            for name in entity_shaped:
                value = inputs[name]
                if value is not None and tuple(value.shape) != (batch_size, entity_length):
                    raise ValueError(
                        f"{name} has shape {tuple(value.shape)}; expected (batch, entities) = "
                        f"{(batch_size, entity_length)}."
                    )
            positions = inputs["entity_position_ids"]
            if positions is not None:
                if positions.dim() != 3 or tuple(positions.shape[:2]) != (batch_size, entity_length):
                    raise ValueError(
                        f"entity_position_ids has shape {tuple(positions.shape)}; expected (batch, entities, "
                        f"mention_length) with batch, entities = {(batch_size, entity_length)}."
                    )
                if positions.numel() and (positions.min() < -1 or positions.max() >= word_length):
                    raise ValueError(
                        f"entity_position_ids must be word positions in [0, {word_length - 1}] or -1 for padding; "
                        f"got values in [{int(positions.min())}, {int(positions.max())}]."
                    )
            if entity_ids.numel() and (entity_ids.min() < 0 or entity_ids.max() >= self.config.entity_vocab_size):
                raise ValueError(
                    f"entity_ids must be in [0, {self.config.entity_vocab_size - 1}] (entity_vocab_size); got "
                    f"values in [{int(entity_ids.min())}, {int(entity_ids.max())}]."
                )
        input_ids = inputs["input_ids"]
        if input_ids is not None and input_ids.numel():
            if input_ids.min() < 0 or input_ids.max() >= self.config.vocab_size:
                raise ValueError(
                    f"input_ids must be in [0, {self.config.vocab_size - 1}] (vocab_size); got values in "
                    f"[{int(input_ids.min())}, {int(input_ids.max())}]. Added tokens need "
                    "init_added_word_embeddings(processor.added_token_sources())."
                )
        for name in ("token_type_ids", "entity_token_type_ids"):
            value = inputs[name]
            if value is not None and value.numel() and (value.min() < 0 or value.max() >= self.config.type_vocab_size):
                raise ValueError(f"{name} must be in [0, {self.config.type_vocab_size - 1}] (type_vocab_size).")
        global_mask = inputs["global_attention_mask"]
        if global_mask is not None and global_mask.numel() and (global_mask.min() < 0 or global_mask.max() > 2):
            raise ValueError(
                "global_attention_mask must hold 0 (local), 1 (CLS-global) or 2 (question-global); got values in "
                f"[{int(global_mask.min())}, {int(global_mask.max())}]."
            )


# ---------------------------------------------------------------------------------------------
# ReCoRD head (paper 3.5)
# ---------------------------------------------------------------------------------------------


@dataclass
class GesaEntitySpanQAOutput(ModelOutput):
    """
    Args:
        loss: scalar binary cross-entropy averaged over the real candidates, when `labels` are given.
        logits: `(B, E)` candidate scores; the placeholder and padded entities hold `finfo.min`.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    entity_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class GesaForEntitySpanQA(GesaPreTrainedModel):
    """Cloze-style QA (ReCoRD): `logit_e = w . dropout([y_PLC ; y_e]) + b` for every candidate entity e."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__(config)
        self.gesa = GesaModel(config, add_pooling_layer=False)
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(2 * config.hidden_size, 1)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        entity_ids: torch.LongTensor | None = None,
        entity_attention_mask: torch.Tensor | None = None,
        entity_token_type_ids: torch.LongTensor | None = None,
        entity_position_ids: torch.LongTensor | None = None,
        global_attention_mask: torch.LongTensor | None = None,
        placeholder_entity_mask: torch.Tensor | None = None,
        entity_string_ids: torch.LongTensor | None = None,
        entity_sentence_ids: torch.LongTensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> GesaEntitySpanQAOutput | tuple:
        """Score candidates: `logits` `(B, E)`; `labels` `(B, E)` in {0, 1} gives the BCE `loss`."""
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if entity_ids is None:
            raise ValueError("GesaForEntitySpanQA needs entity_ids: the placeholder entity and the candidates.")
        outputs = self.gesa(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            entity_ids=entity_ids,
            entity_attention_mask=entity_attention_mask,
            entity_token_type_ids=entity_token_type_ids,
            entity_position_ids=entity_position_ids,
            global_attention_mask=global_attention_mask,
            placeholder_entity_mask=placeholder_entity_mask,
            entity_string_ids=entity_string_ids,
            entity_sentence_ids=entity_sentence_ids,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            **kwargs,
        )
        logits, loss = score_candidates(
            self.classifier,
            self.dropout,
            outputs.entity_last_hidden_state,
            entity_attention_mask,
            placeholder_entity_mask,
            labels,
        )
        output = GesaEntitySpanQAOutput(
            loss=loss,
            logits=logits,
            hidden_states=outputs.hidden_states,
            entity_hidden_states=outputs.entity_hidden_states,
            attentions=outputs.attentions,
        )
        return output if return_dict else output.to_tuple()


def score_candidates(
    classifier: nn.Linear,
    dropout: nn.Module,
    entity_states: torch.Tensor,
    entity_attention_mask: torch.Tensor | None,
    placeholder_entity_mask: torch.Tensor | None,
    labels: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Paper Eq. 2 on `(B, E, D)` entity states -> `(B, E)` logits (non-candidates masked) and the BCE loss.

    The placeholder is `placeholder_entity_mask`'s entity, else entity 0 (spec section 1).
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
        if tuple(labels.shape) != (batch_size, entity_length):
            raise ValueError(
                f"labels has shape {tuple(labels.shape)}; expected (batch, entities) = {(batch_size, entity_length)}."
            )
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

"""GESA: Graph-Enhanced Self-Attention on the LUKE backbone (Foolad & Kiani, 2023).

Reads like the paper: relative-position labels (3.3), embeddings (3.1), entity-aware self-attention with
label embeddings (3.4, Eq. 1), layer, encoder, model, the ReCoRD score head (3.5), and LUKE conversion (4.1).

Flat module: copied next to every saved checkpoint, so it imports only its sibling `configuration_gesa`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import wraps

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, TransformersKwargs, logging
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from .attention_gesa import ALL_ATTENTION_FUNCTIONS, LabelTerms, cached_plan, eager_attention_forward
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
        distance: bool = True,
    ) -> LabelTerms:
        """`q_i . r_l` for the few labels l each block can use (queries come scaled, so the terms do too).

        `distance=False` leaves the distance terms to the consumer (`FusedAttention` computes them per block).
        """
        table = self.label_embeddings.weight
        layout = tokens.layout
        L, k = word_length, tokens.distance_k
        B, H, P, _ = q_to_word.shape
        word_queries = q_to_word[:, :, :L]
        # w2w: 2k + 1 clipped distances (or the NULL label alone), the global ranks
        distance_rows = table[layout.distance_offset : layout.distance_offset + 2 * k + 1] if k else table[:1]
        terms = LabelTerms(torch.matmul(word_queries, distance_rows.t()) if distance else None, distance_rows)
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

        LUKE's word `query` is copied into all four query matrices (paper 4.1) unless
        `keep_entity_aware_queries`; key/value/output/FFN/LayerNorm/embeddings map one to one; absolute position
        tables are dropped unless `use_absolute_position_embeddings=True`; label tables and heads start fresh.
        `entity_rows` keeps only those rows of LUKE's entity table (in that order; e.g. `[PAD]`, `[UNK]`,
        `[MASK]`). Every GESA parameter not filled from LUKE and every LUKE weight left unused is logged and
        returned in `model.luke_conversion_info`. `cache_dir`, `revision`, `token`, `local_files_only`,
        `force_download` and `subfolder` mean what they mean in `from_pretrained`; other keyword arguments
        override config fields.
        """
        from transformers import AutoConfig, LukeModel

        hub_kwargs = dict(
            cache_dir=cache_dir,
            revision=revision,
            token=token,
            local_files_only=local_files_only,
            force_download=force_download,
            subfolder=subfolder,
        )
        luke_config = AutoConfig.from_pretrained(pretrained_model_name_or_path, **hub_kwargs)
        if luke_config.model_type != "luke":
            raise ValueError(
                f"{pretrained_model_name_or_path!s} is a {luke_config.model_type!r} checkpoint, not LUKE; "
                "from_luke_pretrained converts LUKE checkpoints (e.g. studio-ousia/luke-large). "
                "Load GESA checkpoints with from_pretrained."
            )
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
        unexpected = sorted(set(kwargs) - set(TransformersKwargs.__annotations__))
        if unexpected:
            raise ValueError(
                f"GesaModel.forward got unexpected inputs {unexpected}; see the README for the accepted inputs."
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
            if positions is not None and (
                positions.dim() != 3 or tuple(positions.shape[:2]) != (batch_size, entity_length)
            ):
                raise ValueError(
                    f"entity_position_ids has shape {tuple(positions.shape)}; expected (batch, entities, "
                    f"mention_length) with batch, entities = {(batch_size, entity_length)}."
                )
        # value ranges: every minimum and maximum comes back in one host sync (each would stall an accelerator)
        vocab, entity_vocab, types = self.config.vocab_size, self.config.entity_vocab_size, self.config.type_vocab_size
        bounds = {
            "entity_position_ids": (
                -1,
                word_length - 1,
                f"entity_position_ids must be word positions in [0, {word_length - 1}] or -1 for padding",
            ),
            "entity_ids": (0, entity_vocab - 1, f"entity_ids must be in [0, {entity_vocab - 1}] (entity_vocab_size)"),
            "input_ids": (0, vocab - 1, f"input_ids must be in [0, {vocab - 1}] (vocab_size)"),
            "token_type_ids": (0, types - 1, f"token_type_ids must be in [0, {types - 1}] (type_vocab_size)"),
            "entity_token_type_ids": (
                0,
                types - 1,
                f"entity_token_type_ids must be in [0, {types - 1}] (type_vocab_size)",
            ),
            "global_attention_mask": (
                0,
                2,
                "global_attention_mask must hold 0 (local), 1 (CLS-global) or 2 (question-global)",
            ),
        }
        checked = [name for name in bounds if inputs[name] is not None and inputs[name].numel()]
        if not checked:
            return
        device = inputs[checked[0]].device
        extremes = torch.stack(
            [torch.stack([inputs[name].min(), inputs[name].max()]).long().to(device) for name in checked]
        ).tolist()
        for name, (low, high) in zip(checked, extremes, strict=True):
            allowed_low, allowed_high, message = bounds[name]
            if low < allowed_low or high > allowed_high:
                hint = ""
                if name == "input_ids":
                    hint = " Added tokens need init_added_word_embeddings(processor.added_token_sources())."
                raise ValueError(f"{message}; got values in [{low}, {high}].{hint}")


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

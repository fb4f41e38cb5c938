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
"""The bottom floor of GESA: which token pairs attend and with which relative-position label (paper 3.3).

Relative labels (`RelativeLabels`), the values of `global_attention_mask` (defined here only), mention membership, the
label builders (w2w, e2w/w2e and the one entity graph, e2e), and the per-batch structure every layer reads
(`TokenStructure`, `AttentionStructure`) with its plan cache (`cached_plan`). What a label adds to a score, the
label term `q . r_label`, is computed one floor up (`labels_gesa`).

Flat module: copied next to every saved checkpoint; it imports torch only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

# Values of `global_attention_mask`.
LOCAL, CLS_GLOBAL, QUESTION_GLOBAL = 0, 1, 2
# Id of `[MASK]` in LUKE's entity vocabulary: every candidate entity token starts as it.
LUKE_MASK_ENTITY_ID = 2
# The edge kinds of the thesis's context graph (Acton 2023, 3.1, rules 1-12, in rule order; `graph_context` builds
# them): with `entity_graph="context"` each is its own e2e label (`RelativeLabels.context_edge`).
CONTEXT_EDGE_KINDS = (
    "document_entity",
    "document_candidate",
    "co_mention",
    "entity_candidate",
    "candidate_candidate",
    "co_document",
    "complement",
    "unconnected",
    "sentence_document",
    "sentence_entity",
    "sentence_sequence",
    "sentence_cross_document",
)
# The kinds that label the pairs no other rule joined (rules 7 and 8, off by default): the context graph's "no edge",
# like the merged graph's `no_edge` label they are not turned towards a candidate at init (the other ten are).
CONTEXT_NO_EDGE_KINDS = ("complement", "unconnected")


class LabelConfig(Protocol):
    """What the label builders read from a model config (`GesaConfig` and every variant's config)."""

    max_relative_position: int
    label_switches: dict[str, bool]
    entity_graph: str


# ---------------------------------------------------------------------------------------------
# Relative-position labels (paper 3.3, spec section 4)
# ---------------------------------------------------------------------------------------------


class RelativeLabels:
    """Layout of a layer's label table. Row 0 is the fixed zero vector: "no label term" for that pair.

    `[1, 2k+1]` w2w distances; then CLS, question, PLC-question, mention, non-mention, e2e self, PLC edge,
    SENT edge, MATCH edge, no edge, shared edge label; then `2k+1` entity-index distances (e2e_local); then one
    label per edge kind of the thesis's context graph (`CONTEXT_EDGE_KINDS`), rows a layer's table holds only with
    `entity_graph="context"` (`GesaConfig.num_relative_labels`).
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
        self.context_edge_offset = self.entity_distance_offset + 2 * k + 1
        self.size = self.context_edge_offset + len(CONTEXT_EDGE_KINDS)
        # label of a word rank (`word_label_ranks`): 0 local (distance labels), 1 question, 2 CLS
        self.rank_labels = (self.NULL, self.question_global, self.cls_global)
        # the only labels of the w2e / e2w blocks
        self.word_entity_labels = (self.NULL, self.plc_question, self.mention, self.non_mention)

    def distance(self, relative: torch.Tensor, offset: int) -> torch.Tensor:
        return relative.clamp(-self.k, self.k) + (self.k + offset)

    def context_edge(self, kind: int | torch.Tensor) -> int | torch.Tensor:
        """The e2e label of context-graph edge kind `kind` (an index of `CONTEXT_EDGE_KINDS`)."""
        return self.context_edge_offset + kind


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


def word_label_ranks(config: LabelConfig, global_attention_mask: torch.Tensor | None) -> torch.Tensor | None:
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


def entity_defaults(
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
    config: LabelConfig,
    word_length: int,
    global_attention_mask: torch.Tensor | None,
    entity_position_ids: torch.Tensor,
    placeholder: torch.Tensor,
    entity_string_ids: torch.Tensor,
    question_string_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """e2w label ids `(B, E, L)` (entity rows, word columns); w2e is its transpose (one shared label set).

    The mention label links entity e to the words of every string-matched mention of e's string in the word input
    (paper 3.3): the passage mentions (`entity_position_ids` of the entities with e's string) and, with the
    `question_mentions` switch, the question's occurrences (`question_string_ids` `(B, L)`: the string id of the
    occurrence a question word belongs to, -1 elsewhere). Question occurrences are labels only: they never enter
    `entity_position_ids`, hence never LUKE's entity position embeddings.
    """
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
        if question_string_ids is not None and switches["question_mentions"]:
            # the query names e's string: the first hop of a reasoning chain starts from those words
            in_question = entity_string_ids[:, :, None] == question_string_ids[:, None, :]
            linked = linked | (in_question & (entity_string_ids >= 0)[:, :, None])
        e2w = torch.where(linked, labels.mention, e2w)
    if switches["plc_question"] and global_attention_mask is not None:
        plc_question = placeholder[:, :, None] & (global_attention_mask == QUESTION_GLOBAL)[:, None, :]
        e2w = torch.where(plc_question, labels.plc_question, e2w)
    return e2w


# Edge kinds of the entity graph (paper 3.2), by precedence: self, then PLC, SENT, MATCH; none otherwise.
EDGE_NONE, EDGE_SELF, EDGE_PLC, EDGE_SENT, EDGE_MATCH = 0, 1, 2, 3, 4


def build_entity_graph(
    placeholder: torch.Tensor,
    entity_string_ids: torch.Tensor,
    entity_sentence_ids: torch.Tensor,
    real: torch.Tensor | None = None,
    plc_edges: bool = True,
    sent_edges: bool = True,
    match_edges: bool = True,
) -> torch.Tensor:
    """THE entity graph (paper 3.2): edge kind `(B, E, E)` long (`EDGE_*`) of every entity pair.

    `placeholder` bool `(B, E)`; `entity_string_ids`, `entity_sentence_ids` `(B, E)`, -1 for none. Self on the
    diagonal; PLC between the placeholder and every entity; SENT between two entities of one sentence; MATCH between
    two entities with equal strings in different sentences (both in some sentence); none otherwise. A switched-off
    kind (`plc_edges`, ...) leaves its pairs to the next kind down. `real` bool `(B, E)`: pairs with a padded entity
    get `EDGE_NONE` (the model passes None: padded entities are masked as keys instead). Symmetric.
    """
    E = entity_string_ids.size(1)
    device = entity_string_ids.device
    graph = torch.full(entity_string_ids.shape + (E,), EDGE_NONE, dtype=torch.long, device=device)
    has_sentence = entity_sentence_ids >= 0
    same_sentence = (entity_sentence_ids[:, :, None] == entity_sentence_ids[:, None, :]) & has_sentence[:, :, None]
    if match_edges:
        same_string = (entity_string_ids[:, :, None] == entity_string_ids[:, None, :]) & (
            entity_string_ids[:, :, None] >= 0
        )
        match = same_string & ~same_sentence & has_sentence[:, :, None] & has_sentence[:, None, :]
        graph = graph.masked_fill(match, EDGE_MATCH)
    if sent_edges:
        graph = graph.masked_fill(same_sentence, EDGE_SENT)
    if plc_edges:
        graph = graph.masked_fill(placeholder[:, :, None] | placeholder[:, None, :], EDGE_PLC)
    graph = graph.masked_fill(torch.eye(E, dtype=torch.bool, device=device), EDGE_SELF)
    if real is not None:
        graph = graph.masked_fill(~(real[:, :, None] & real[:, None, :]), EDGE_NONE)
    return graph


def build_entity_entity_labels(
    config: LabelConfig, placeholder: torch.Tensor, entity_string_ids: torch.Tensor, entity_sentence_ids: torch.Tensor
) -> torch.Tensor:
    """e2e label ids `(B, E, E)`: the entity graph's edges (`build_entity_graph`: none, MATCH, SENT, PLC, self, or
    one shared label for every edge with `single_edge_label`), or entity-index distances (e2e_local)."""
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
    graph = build_entity_graph(
        placeholder,
        entity_string_ids,
        entity_sentence_ids,
        plc_edges=switches["plc_edges"],
        sent_edges=switches["sent_edges"],
        match_edges=switches["match_edges"],
    )
    single = switches["single_edge_label"]
    e2e = torch.full_like(graph, labels.no_edge)
    for kind, label in (
        (EDGE_SELF, labels.self_edge),
        (EDGE_PLC, labels.any_edge if single else labels.plc_edge),
        (EDGE_SENT, labels.any_edge if single else labels.sent_edge),
        (EDGE_MATCH, labels.any_edge if single else labels.match_edge),
    ):
        e2e = e2e.masked_fill(graph == kind, label)
    return e2e


def build_context_entity_labels(
    config: LabelConfig, entity_graph_edges: torch.Tensor, entity_length: int
) -> torch.Tensor:
    """e2e label ids `(B, E, E)` of the thesis's context graph (Acton 2023, 3.1; `entity_graph="context"`).

    `entity_graph_edges` `(B, K, 3)` long: rows `(i, j, kind)` of entity indices and a `CONTEXT_EDGE_KINDS` index,
    `-1` rows for padding; an edge is undirected (both `(i, j)` and `(j, i)` get its label). Every edge kind is its
    own label (`single_edge_label`: one shared label); the diagonal the e2e self label; a pair without an edge gets
    NULL, no learned label (the thesis leaves it unconnected unless rule 7 or 8, `complement` / `unconnected`, put an
    edge there). The `e2e` and `e2e_graph` switches act as for the merged graph.
    """
    labels = RelativeLabels(config.max_relative_position)
    switches = config.label_switches
    batch_size, device = entity_graph_edges.size(0), entity_graph_edges.device
    E = entity_length
    if not switches["e2e"]:
        return torch.zeros(batch_size, E, E, dtype=torch.long, device=device)
    entity_index = torch.arange(E, device=device)
    if not switches["e2e_graph"]:
        e2e = labels.distance(entity_index[None, :] - entity_index[:, None], labels.entity_distance_offset)
        return e2e.expand(batch_size, E, E)
    # padded rows (-1) land in an extra last row and column, dropped below
    first, second, kind = entity_graph_edges.unbind(-1)
    real = kind >= 0
    first = torch.where(real, first, E)
    second = torch.where(real, second, E)
    edge_label = labels.any_edge if switches["single_edge_label"] else labels.context_edge(kind.clamp(min=0))
    edge_label = torch.where(real, edge_label, labels.NULL)
    e2e = torch.full((batch_size, (E + 1) * (E + 1)), labels.NULL, dtype=torch.long, device=device)
    e2e.scatter_(1, first * (E + 1) + second, edge_label)
    e2e.scatter_(1, second * (E + 1) + first, edge_label)
    e2e = e2e.view(batch_size, E + 1, E + 1)[:, :E, :E]
    return e2e.masked_fill(torch.eye(E, dtype=torch.bool, device=device), labels.self_edge).contiguous()


def assemble_labels(w2w: torch.Tensor, e2w: torch.Tensor | None, e2e: torch.Tensor | None) -> torch.Tensor:
    """The four blocks -> one `(B, P, P)` label matrix, words first."""
    if e2w is None:
        return w2w.contiguous()
    top = torch.cat([w2w, e2w.transpose(1, 2)], dim=2)
    bottom = torch.cat([e2w, e2e], dim=2)
    return torch.cat([top, bottom], dim=1)


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
    # per-batch plans of the attention functions, shared by every layer, keyed by name (`cached_plan`)
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


def build_attention_structure(
    config: LabelConfig,
    attention_mask: torch.Tensor,
    word_length: int,
    global_attention_mask: torch.Tensor | None = None,
    entity_position_ids: torch.Tensor | None = None,
    placeholder_entity_mask: torch.Tensor | None = None,
    entity_string_ids: torch.Tensor | None = None,
    entity_sentence_ids: torch.Tensor | None = None,
    question_string_ids: torch.Tensor | None = None,
    entity_graph_edges: torch.Tensor | None = None,
) -> AttentionStructure:
    """Masks and labels shared by every layer, from the compact inputs; `attention_mask` is `(B, P)` (words then
    entities); `config` also gives `use_relative_labels` and `attention_window`. `question_string_ids` `(B, L)`:
    the question's string-matched occurrences of the candidates (`build_entity_word_labels`), or None.
    `entity_graph_edges` `(B, K, 3)`: the thesis's context-graph edges, read with `entity_graph="context"` (the e2e
    labels come from them instead of the merged PLC / SENT / MATCH graph; `build_context_entity_labels`).

    Per token only (`TokenStructure`, linear in length); the dense `(B, P, P)` forms appear only if the
    eager path asks for them.
    """
    batch_size, device = attention_mask.size(0), attention_mask.device
    entity_length = attention_mask.size(1) - word_length
    use_labels = config.use_relative_labels
    entity_word_labels = entity_entity_labels = None
    if use_labels and entity_length > 0:
        if entity_position_ids is None:
            entity_position_ids = torch.full((batch_size, entity_length, 1), -1, dtype=torch.long, device=device)
        placeholder, strings, sentences = entity_defaults(
            placeholder_entity_mask, entity_string_ids, entity_sentence_ids, batch_size, entity_length, device
        )
        entity_word_labels = build_entity_word_labels(
            config, word_length, global_attention_mask, entity_position_ids, placeholder, strings, question_string_ids
        )
        if getattr(config, "entity_graph", "merged") == "context":
            if entity_graph_edges is None:
                entity_graph_edges = torch.full((batch_size, 0, 3), -1, dtype=torch.long, device=device)
            entity_entity_labels = build_context_entity_labels(config, entity_graph_edges, entity_length)
        else:
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


# ---------------------------------------------------------------------------------------------
# Per-batch plans shared by every layer
# ---------------------------------------------------------------------------------------------


def _hashable(part: Any) -> Hashable:
    """A plan key part: a symbolic size (`torch.export` with dynamic shapes) is keyed by its symbol's name."""
    return str(part) if isinstance(part, torch.SymInt) else part


def cached_plan(tokens: TokenStructure, key: tuple, build: Callable[[], Any]) -> Any:
    """The batch's plan under `key`, built by `build()` on first use and shared by every layer.

    `key` names the plan and everything it bakes in beyond `tokens` itself (word length, heads, dtype, ...), so two
    callers asking for different plans never share one.
    """
    key = tuple(_hashable(part) for part in key)
    if key not in tokens.cache:
        tokens.cache[key] = build()
    return tokens.cache[key]


__all__ = [
    "CLS_GLOBAL",
    "CONTEXT_EDGE_KINDS",
    "CONTEXT_NO_EDGE_KINDS",
    "LOCAL",
    "build_attention_structure",
    "QUESTION_GLOBAL",
    "AttentionStructure",
    "RelativeLabels",
    "TokenStructure",
    "assemble_labels",
    "build_context_entity_labels",
    "build_attention_allowed",
    "EDGE_MATCH",
    "EDGE_NONE",
    "EDGE_PLC",
    "EDGE_SELF",
    "EDGE_SENT",
    "build_entity_entity_labels",
    "build_entity_graph",
    "build_entity_word_labels",
    "build_word_word_labels",
    "cached_plan",
    "mention_membership",
    "word_label_ranks",
]

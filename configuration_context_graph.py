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
"""Configuration of the thesis's context-graph GNN (Acton 2023, chapter 3) on this library's LUKE/GESA word encoder.

Every field of `GesaConfig` keeps its meaning and describes the token embedder (3.2.1: the word encoder run on each
document, candidate and the query separately); `token_embedder="luke"` (the default) makes it LUKE's encoder exactly
as pre-trained. The model dimension `f` is the encoder's `hidden_size` (the thesis couples the model dimension to its
token embedder, 4.2). The graph adds the fields below; `graph_preset` names a row of the thesis's table 5.1
(`CONTEXT_GRAPH_PRESETS`, the architectures of table 4.4).

Flat module: copied next to every saved checkpoint, so it imports only its sibling `configuration_gesa`.
"""

from __future__ import annotations

from typing import Any

from huggingface_hub.dataclasses import strict, validated_field

from .configuration_gesa import GesaConfig, activation, apply_preset_value, positive, probability

GNN_CORES = ("switch", "edge", "sage", "gat", "sdp")  # thesis 3.3.1
GNN_ASYMMETRIES = ("none", "sage", "mlp")  # the innermost in-out asymmetry of 3.3.2 (composed: Gate(TUF(.)))
SUMMARISERS = ("transformer", "switch")  # 3.2.3, 3.2.4
MESSAGE_PASSING = ("sparse", "dense")  # 4.1.2: an edge list (index_add) or (N, N) matrices
SDP_EDGE_EMBEDDINGS = ("k", "v", "kv")  # table 5.11: K-type (the thesis's SDP default), V-type, both
SAGE_AGGREGATIONS = ("sum", "mean")  # eq. 3.15 sums; the text calls it "mean-based"
# 3.2.1: the token embedder. "luke": LUKE's word encoder exactly as pre-trained (absolute positions, LUKE's queries:
# the GESA `ablation="luke"` preset), frozen by default like the thesis's GloVe / BERT; "gesa": GESA's conversion
# (relative labels drawn fresh), fine-tuned by default since its new rows must learn
TOKEN_EMBEDDERS = ("luke", "gesa")
SUMMARISER_HEADS = 6  # table 4.1
SENTENCE_NODES = ("none", "all", "restricted")  # 3.1
# How the graph modules' weights are drawn: "pytorch", as PyTorch (and PyTorch Geometric's GATConv / RGCNConv) draw
# the modules the thesis built its model from (4.1); "normal": N(0, initializer_range), transformers' convention
GRAPH_INITS = ("pytorch", "normal")
# The node types of 3.1 (switch-summariser: one Transformer each) and the edge kinds of rules 1-12, in
# `graph_context`'s order (the embedding rows of the edge-type tables).
NUM_NODE_TYPES = 4
NUM_EDGE_KINDS = 12

# Table 5.1's benchmark rows (their architectures: table 4.4; hyperparameters: table 4.1). The model dimension
# follows the token embedder (GloVe 300, BERT 512 there; the LUKE/GESA encoder's hidden size here).
CONTEXT_GRAPH_PRESETS: dict[str, dict[str, Any]] = {
    # Edge-Core (V-type edge embeddings), Gate asymmetry, one weight set for every layer, Transformer summariser
    "hde_base": {"gnn_core": "edge", "gnn_asymmetry": "none", "gnn_tuf": False, "gnn_gate": True,
                 "gnn_share_weights": True, "summariser": "transformer"},
    # GAT-Core, Gate + TUF, distinct layer weights, switch-summariser
    "att_base": {"gnn_core": "gat", "gnn_asymmetry": "none", "gnn_tuf": True, "gnn_gate": True,
                 "gnn_share_weights": False, "summariser": "switch"},
    # Att-Base on the pretrained (BERT there, LUKE here) embedder, Transformer summariser
    "bert_base": {"gnn_core": "gat", "gnn_asymmetry": "none", "gnn_tuf": True, "gnn_gate": True,
                  "gnn_share_weights": False, "summariser": "transformer"},
}  # fmt: skip


def one_of(choices: tuple[str, ...]):
    def check(value: str) -> None:
        if value not in choices:
            raise ValueError(f"must be one of {choices}, got {value!r}.")

    return check


def non_negative_int(value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"must be a non-negative integer, got {value!r}.")


def optional_positive(value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValueError(f"must be None or a positive integer, got {value!r}.")


def summariser_heads(hidden_size: int) -> int:
    """Table 4.1's 6 summariser heads where 6 divides the model dimension (luke-base's 768), else the largest
    divisor below 6 (luke-large's 1024: 4); `nn.MultiheadAttention` needs heads that divide it."""
    return next(heads for heads in range(SUMMARISER_HEADS, 0, -1) if hidden_size % heads == 0)


def preset_name(value: str | None) -> None:
    if value is not None and value not in CONTEXT_GRAPH_PRESETS:
        raise ValueError(f"graph_preset={value!r} is unknown; choose one of {sorted(CONTEXT_GRAPH_PRESETS)}.")


@strict
class ContextGraphConfig(GesaConfig):
    r"""The context-graph GNN of Acton 2023 (chapter 3) on the LUKE/GESA word encoder.

    Args:
        token_embedder (`str`, defaults to `"luke"`):
            The token embedder (3.2.1): `"luke"` is LUKE's word encoder exactly as pre-trained (absolute positions,
            LUKE's own attention: the GESA `ablation="luke"` preset, nothing newly initialised); `"gesa"` is GESA's
            conversion (no absolute positions, relative label rows drawn fresh; `ablation` picks any other GESA
            preset).
        freeze_word_encoder (`bool`, *optional*):
            The token embedder is fixed (the thesis's GloVe; its BERT-Base without fine-tuning); `False` fine-tunes
            it. Unset: `True` for `token_embedder="luke"` (a pre-trained embedder, as in the thesis), `False` for
            `"gesa"` (its fresh label rows must learn).
        freeze_word_encoder_epochs (`int`, defaults to 0):
            With `freeze_word_encoder=False`: the embedder stays fixed for this many epochs, then is fine-tuned (4.2:
            "freeze the BERT parameters for the first 5 epochs"; the thesis's schedule sets 5). Applied by
            `training.context_graph.FrozenEmbedderEpochs`, a `TrainerCallback`.
        coattention_layers (`int`, defaults to 1), summariser_layers (`int`, defaults to 1):
            Layers of the co-attention Transformer `Trans_c` (3.2.2, algorithm 2) and of the summariser `Trans_s`.
        summariser_num_heads (`int`, *optional*):
            Heads of both; unset: table 4.1's 6 where 6 divides `hidden_size`, else its largest divisor below 6.
        summariser (`str`, defaults to `"transformer"`):
            `"transformer"` (3.2.3) or `"switch"` (eq. 3.10: a Transformer per node type plus a global one).
        max_span_length (`int`, defaults to 512):
            Tokens of a node's span read by the co-attention (a document node's span is its whole document).
        gnn_core (`str`, defaults to `"gat"`):
            3.3.1: `"switch"` (eqs. 2.40/2.41), `"edge"` (3.12/3.13), `"sage"` (3.14/3.15), `"gat"` (3.16/3.17),
            `"sdp"` (3.19/3.20, K-type edge embeddings).
        gnn_asymmetry (`str`, defaults to `"none"`), gnn_tuf (`bool`, defaults to `True`), gnn_gate (`bool`,
            defaults to `True`): the update function (3.3.2) `Gate(TUF(asymmetry))`, each part optional;
            `gnn_asymmetry="mlp"` with `gnn_gate` and no TUF is HDE's composition (eq. 3.26).
        gnn_num_layers (`int`, defaults to 9), gnn_num_heads (`int`, defaults to 4):
            GNN layers and the attention cores' heads (table 4.1); 0 layers scores the summarised nodes directly (the
            same embedder without a GNN: the baseline of `bench/mechanism_context_graph.py`).
        gnn_sage_aggregation (`str`, defaults to `"sum"`): the SAGE-Core's aggregation, `"sum"` (eq. 3.15) or
            `"mean"` (3.3.1.3's text: "a mean-based aggregation function").
        gnn_share_weights (`bool`, defaults to `False`): one weight set for every GNN layer (HDE-Base).
        gnn_share_core, gnn_share_gate, gnn_share_tuf (`bool`, default `False`): share only that part across the
            layers (table 5.13; the core's switch also shares the innermost MLP/SAGE asymmetry).
        gnn_message_passing (`str`, defaults to `"sparse"`):
            `"sparse"`: messages over the edge list (`index_add`, memory linear in edges); `"dense"`: `(N, N)`
            matrices (thesis 4.1.2). Both compute the same function.
        gnn_activation (`str`, defaults to `"relu"`): σ of the update functions.
        graph_dropout (`float`, defaults to 0.1): dropout of the graph modules (table 4.1).
        graph_init (`str`, defaults to `"pytorch"`): how the graph modules (co-attention, summarisers, GNN, the
            eq. 2.63 scorers) are drawn when built. `"pytorch"`: as the modules the thesis built its model from (4.1)
            draw themselves: `nn.Linear` Kaiming-uniform, `nn.Embedding` (the type and edge-type embeddings) N(0, 1),
            `nn.MultiheadAttention` Xavier, and, as PyTorch Geometric's `GATConv` / `RGCNConv`, Glorot for the
            GAT-Core's projections and attention vectors and the Switch-Core's relation weights. `"normal"`: every
            weight and embedding N(0, `initializer_range`), transformers' convention (edge-type embeddings about 50x
            smaller than PyTorch's; `bench/mechanism_context_graph.py` measures what that costs). The word encoder
            is LUKE's, loaded, either way.
        co_document_edges, complement_edges, unconnected_edges (`bool`, default `False`), sentence_nodes (`str`,
            defaults to `"none"`): the optional rules 6, 7, 8 and the sentence nodes (rules 9-12) of 3.1, read by
            the processor that builds the graphs; `co_mention_edges=False` drops rule 3 (table 5.19).
        gnn_edge_types (`bool`, defaults to `True`): the cores read the edge types (V/K-type embeddings, the
            Switch-Core's per-type weights); `False` gives every edge one type: structure without edge information
            (tables 5.11, 5.14, 5.15's "None"/"No").
        gnn_directed_edge_types (`bool`, defaults to `False`): an edge type read from a later node to an earlier
            one (nodes in the order documents, entities, candidates, sentences) gets its own embeddings / weights
            (table 5.18's bidirectional edge embeddings).
        gnn_sdp_edge_embeddings (`str`, defaults to `"k"`): the SDP-Core's edge embeddings, `"k"` (K-type, eq.
            3.18), `"v"` (V-type, eq. 2.17) or `"kv"` (both; table 5.11).
        graph_preset (`str`, *optional*): a row of table 5.1 (`CONTEXT_GRAPH_PRESETS`): its fields are set; a field
            given with another value than the preset's is an error.
    """

    model_type = "gesa_context_graph"

    token_embedder: str = validated_field(one_of(TOKEN_EMBEDDERS), default="luke")
    freeze_word_encoder: bool | None = None
    freeze_word_encoder_epochs: int = validated_field(non_negative_int, default=0)
    coattention_layers: int = validated_field(positive, default=1)
    summariser_layers: int = validated_field(positive, default=1)
    summariser_num_heads: int | None = validated_field(optional_positive, default=None)
    summariser: str = validated_field(one_of(SUMMARISERS), default="transformer")
    max_span_length: int = validated_field(positive, default=512)
    gnn_core: str = validated_field(one_of(GNN_CORES), default="gat")
    gnn_asymmetry: str = validated_field(one_of(GNN_ASYMMETRIES), default="none")
    gnn_tuf: bool = True
    gnn_gate: bool = True
    gnn_num_layers: int = validated_field(non_negative_int, default=9)
    gnn_num_heads: int = validated_field(positive, default=4)
    gnn_share_weights: bool = False
    gnn_share_core: bool = False
    gnn_share_gate: bool = False
    gnn_share_tuf: bool = False
    gnn_message_passing: str = validated_field(one_of(MESSAGE_PASSING), default="sparse")
    gnn_activation: str = validated_field(activation, default="relu")
    graph_dropout: float | int = validated_field(probability, default=0.1)
    graph_init: str = validated_field(one_of(GRAPH_INITS), default="pytorch")
    co_document_edges: bool = False
    complement_edges: bool = False
    unconnected_edges: bool = False
    sentence_nodes: str = validated_field(one_of(SENTENCE_NODES), default="none")
    co_mention_edges: bool = True
    gnn_edge_types: bool = True
    gnn_directed_edge_types: bool = False
    gnn_sdp_edge_embeddings: str = validated_field(one_of(SDP_EDGE_EMBEDDINGS), default="k")
    gnn_sage_aggregation: str = validated_field(one_of(SAGE_AGGREGATIONS), default="sum")
    graph_preset: str | None = validated_field(preset_name, default=None)

    def __post_init__(self, **kwargs: Any) -> None:
        self._apply_graph_preset()
        self._apply_token_embedder()
        super().__post_init__(**kwargs)
        if self.summariser_num_heads is None:
            self.summariser_num_heads = summariser_heads(self.hidden_size)

    def _apply_token_embedder(self) -> None:
        """`token_embedder="luke"` is the GESA `ablation="luke"` preset (LUKE exactly); `"gesa"` any other preset.
        Unset `freeze_word_encoder` follows the embedder (class docstring)."""
        if self.token_embedder == "luke":
            if self.ablation not in (None, "luke"):
                raise ValueError(
                    f"ContextGraphConfig.ablation={self.ablation!r} is a GESA preset, but token_embedder='luke' is "
                    "LUKE's encoder as pre-trained; set token_embedder='gesa' to embed with GESA's conversion."
                )
            self.ablation = "luke"
        elif self.ablation == "luke":
            raise ValueError(
                "ContextGraphConfig.token_embedder='gesa' with ablation='luke' is LUKE's encoder: use "
                "token_embedder='luke' (the default) instead."
            )
        if self.freeze_word_encoder is None:
            self.freeze_word_encoder = self.token_embedder == "luke"

    def _apply_graph_preset(self) -> None:
        if self.graph_preset is None:
            return
        for key, value in CONTEXT_GRAPH_PRESETS[self.graph_preset].items():
            apply_preset_value(self, "ContextGraphConfig.graph_preset", key, value, "a row of the thesis's table 5.1")

    def validate_context_graph(self) -> None:
        """Combinations the graph modules cannot run with (on construction and on assignment)."""
        for name in ("summariser_num_heads", "gnn_num_heads"):
            if getattr(self, name) is not None and self.hidden_size % getattr(self, name):
                raise ValueError(
                    f"ContextGraphConfig.{name}={getattr(self, name)} must divide hidden_size={self.hidden_size} "
                    "(the model dimension of the graph is the word encoder's)."
                )
        for name in ("freeze_word_encoder", "gnn_tuf", "gnn_gate", "gnn_share_weights", "gnn_share_core",
                     "gnn_share_gate", "gnn_share_tuf", "co_document_edges",
                     "complement_edges", "unconnected_edges", "co_mention_edges", "gnn_edge_types",
                     "gnn_directed_edge_types"):  # fmt: skip
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"ContextGraphConfig.{name} must be True or False, got {getattr(self, name)!r}.")
        if (self.token_embedder == "luke") != (self.ablation == "luke"):
            raise ValueError(
                f"ContextGraphConfig.token_embedder={self.token_embedder!r} and ablation={self.ablation!r} disagree: "
                "the 'luke' embedder is the ablation='luke' preset, the 'gesa' embedder any other."
            )
        if self.graph_preset is not None:
            changed = {key: getattr(self, key) for key, value in CONTEXT_GRAPH_PRESETS[self.graph_preset].items()
                       if getattr(self, key) != value}  # fmt: skip
            if changed:
                raise ValueError(
                    f"ContextGraphConfig.graph_preset={self.graph_preset!r} no longer holds: {changed} differ from the "
                    "preset; set graph_preset=None for a custom combination."
                )

    @classmethod
    def luke_conversion_is_exact(cls, overrides: dict[str, Any]) -> bool:
        """A LUKE conversion with these overrides embeds with LUKE's encoder as pre-trained (`token_embedder="luke"`,
        the default): LUKE's own queries and absolute positions kept, nothing newly initialised."""
        return overrides.get("token_embedder", "luke") == "luke"

    @classmethod
    def from_preset(cls, name: str, **kwargs: Any) -> ContextGraphConfig:
        """A config for one row of table 5.1 (`CONTEXT_GRAPH_PRESETS`)."""
        return cls(graph_preset=name, **kwargs)


__all__ = [
    "CONTEXT_GRAPH_PRESETS",
    "GNN_ASYMMETRIES",
    "GRAPH_INITS",
    "GNN_CORES",
    "MESSAGE_PASSING",
    "NUM_EDGE_KINDS",
    "NUM_NODE_TYPES",
    "SAGE_AGGREGATIONS",
    "SDP_EDGE_EMBEDDINGS",
    "SENTENCE_NODES",
    "SUMMARISERS",
    "TOKEN_EMBEDDERS",
    "ContextGraphConfig",
    "summariser_heads",
]

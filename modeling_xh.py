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
"""Transformer-XH (eXtra Hop attention) on a LUKE backbone (`backbone="luke"`, the default) or GESA's.

Zhao et al. 2020, "Transformer-XH: Multi-Evidence Reasoning with eXtra Hop Attention" (seed 001; spec `variants.md`).
The input is a batch of graphs of text sequences: graph g has up to N nodes, each node a full backbone input starting
with `<s>` (its hub), and a node adjacency `E` with `E[g, tau, eta] = 1` when node tau attends to node eta.

- Layers below the last K (`xh_num_hop_layers`, paper: 3) are the plain backbone, node by node.
- After each of the last K layers, each hub attends to its neighbours' hubs with separate multi-head hop projections
  (Eq. 7) `h^_tau = sum_eta softmax_eta(q^_tau . k^_eta / sqrt(d)) v^_eta` over `eta` with `E[tau, eta] = 1`; then
  `h~_tau,0 = Linear([h_tau,0 ; h^_tau])` (Eq. 8) replaces the hub, and every other token is unchanged (Eq. 9). A node
  without neighbours gets `h^ = 0`. The combine Linear starts at `[I | 0]`, so a fresh model equals its backbone on
  every node until training opens the hop path. As in the released code (microsoft/Transformer-XH), the hop attention
  reads the layer's output hub. `xh_hop_attention="released_gat"` puts the released code's graph attention (DGL's
  GAT as that code runs it, `XhGatHop`) in place of Eq. 7.
- Heads: ReCoRD (GESA's head on each node's placeholder and mentions, max over a candidate's mentions), HotpotQA
  (node relevance, Eq. 11, and answer start/end inside a node, Eq. 12) and FEVER
  (`p(y | X, E) = sum_tau p(s | tau) p(y | tau)`, Eqs. 14-16). The graph-level heads (these two, `modeling_xh_tasks`'
  and `modeling_xh_paper`'s) share one forward, `XhGraphHead.forward` (`XhModel` over the graphs), and each writes only
  its `score_graphs`: its output layer, loss and label checks.

Padded nodes (`node_mask` 0) are dropped before the backbone and never attend or get attended.

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, TransformersKwargs, can_return_tuple

from .checks_gesa import (
    IGNORE_INDEX,
    InputValueChecks,
    check_candidate_labels,
    check_class_labels,
    check_token_positions,
    ignored_loss,
)
from .configuration_variants import XhConfig, xh_backbone
from .loading_gesa import PipelineSpec
from .modeling_gesa import (
    ENTITY_CLOZE_TASK,
    GesaForEntitySpanQA,
    GesaInputs,
    GesaModel,
    GesaPreTrainedModel,
    LayerBlocks,
    classifier_dropout,
    score_candidates,
    with_inputs_of,
)
from .modeling_variants import plain_attention

# GESA's per-node inputs (`(G, N, ...)`): flattened to the real nodes before `GesaModel.forward`
NODE_INPUTS = (
    "position_ids",
    *(name for name in GesaInputs.__annotations__ if name not in TransformersKwargs.__annotations__),
)

NODE_WORD_INPUTS = ("attention_mask", "token_type_ids", "global_attention_mask")
NODE_ENTITY_INPUTS = (
    "entity_attention_mask",
    "entity_token_type_ids",
    "placeholder_entity_mask",
    "entity_string_ids",
    "entity_sentence_ids",
)


class XhCombine(nn.Linear):
    """Eq. 8's `Linear([h_tau,0 ; h^_tau])`, `2D -> D`; initialised to `[I | 0]` with bias 0 (`_init_weights`)."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__(2 * hidden_size, hidden_size)


class XhGatHop(nn.Module):
    """The released code's hop attention (microsoft/Transformer-XH `model/model.py`, `GraphAttention`: "the standard
    implementation from DGL library"), as that code runs it, on the hubs of a batch of graphs.

    With `d = D / H`, each head's slice `h_tau^(k)` of the hub (`(G, N, H, d)`): `z = W h` (one `Linear(d, d)` shared by
    the heads, no bias), `e_tau,eta = LeakyReLU_0.2(a_l^(k) . z_eta + a_r^(k) . z_tau)` softmaxed over the neighbours
    `eta` of tau (DGL's edge `eta -> tau`: tau's mailbox), `h^_tau = ReLU(sum_eta alpha z_eta + W_res h_tau)` (a node
    without neighbours keeps only the residual: DGL's zero-filled reduce). `xh_hop_dropout` acts on `alpha` (0 by
    default: the released forward calls neither of its 0.6 dropouts).
    """

    def __init__(self, config: XhConfig) -> None:
        super().__init__()
        self.num_heads = config.xh_num_hop_attention_heads
        self.head_size = config.hidden_size // self.num_heads
        self.fc = nn.Linear(self.head_size, self.head_size, bias=False)
        # (1, H, d) as released: the shape sets xavier's fans
        self.attn_l = nn.Parameter(torch.empty(1, self.num_heads, self.head_size))
        self.attn_r = nn.Parameter(torch.empty(1, self.num_heads, self.head_size))
        self.res_fc = nn.Linear(self.head_size, self.head_size, bias=False)
        self.leaky_relu = nn.LeakyReLU(0.2)
        self.dropout = nn.Dropout(config.xh_hop_dropout)

    def forward(
        self, hubs: torch.Tensor, adjacency: torch.Tensor, output_attentions: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`(G, N, D)` hubs, bool `(G, N, N)` adjacency (row tau reads column eta) -> `h^` `(G, N, D)` and, with
        `output_attentions`, `alpha` `(G, H, N, N)`."""
        graphs, nodes, _ = hubs.shape
        heads = hubs.view(graphs, nodes, self.num_heads, self.head_size)
        z = self.fc(heads)
        source = (z * self.attn_l).sum(-1)  # (G, N, H): a_l . z_eta
        target = (z * self.attn_r).sum(-1)  # a_r . z_tau
        scores = self.leaky_relu(target.transpose(1, 2)[..., :, None] + source.transpose(1, 2)[..., None, :])
        allowed = adjacency[:, None]
        scores = scores.float().masked_fill(~allowed, float("-inf"))
        # rows without a neighbour: all -inf; softmax would give NaN, DGL gives 0
        probs = torch.softmax(scores.masked_fill(~allowed.any(-1, keepdim=True), 0.0), dim=-1)
        probs = probs.masked_fill(~allowed, 0.0).to(hubs.dtype)
        gathered = self.dropout(probs) @ z.transpose(1, 2)  # (G, H, N, d)
        hop = torch.relu(gathered.transpose(1, 2) + self.res_fc(heads)).reshape(graphs, nodes, -1)
        return hop, probs if output_attentions else None


class XhHopLayer(GradientCheckpointingLayer):
    """Eqs. 7-8 on the hubs of a batch of graphs: hop attention among neighbours (Eq. 7, or the released code's graph
    attention, `XhGatHop`), then the combine Linear."""

    def __init__(self, config: XhConfig) -> None:
        super().__init__()
        self.config = config
        self.num_heads = config.xh_num_hop_attention_heads
        self.head_size = config.hidden_size // self.num_heads
        if config.xh_hop_attention == "released_gat":
            self.gat = XhGatHop(config)
        else:
            self.hop_query = nn.Linear(config.hidden_size, config.hidden_size)
            self.hop_key = nn.Linear(config.hidden_size, config.hidden_size)
            self.hop_value = nn.Linear(config.hidden_size, config.hidden_size)
            self.dropout = nn.Dropout(config.xh_hop_dropout)
        self.combine = XhCombine(config.hidden_size)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), x.size(1), self.num_heads, self.head_size).transpose(1, 2)

    def forward(
        self, hubs: torch.Tensor, adjacency: torch.Tensor, output_attentions: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        Args:
            hubs: `(G, N, D)` hub states `h_tau,0` after the layer.
            adjacency: bool `(G, N, N)`, True where node tau (row) attends to node eta (column).

        Returns:
            the new hubs `h~_tau,0` `(G, N, D)` and, with `output_attentions`, the hop attention probabilities
            `(G, H, N, N)`.
        """
        if self.config.xh_hop_attention == "released_gat":
            hop, probs = self.gat(hubs, adjacency, output_attentions)
        else:
            q, k, v = (self._heads(self.hop_query(hubs)), self._heads(self.hop_key(hubs)),
                       self._heads(self.hop_value(hubs)))  # fmt: skip
            # no neighbour: h^ = 0 (plain_attention zeroes a query without an allowed key)
            hop, probs = plain_attention(self, q, k, v, adjacency[:, None], self.dropout.p, output_attentions)
        return self.combine(torch.cat([hubs, hop], dim=-1)), probs


@dataclass
class XhModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state: `(G, N, L, D)` word states of every node (zeros for padded nodes).
        entity_last_hidden_state: `(G, N, E, D)` entity states of every node, or None without entities.
        hub_states: `(G, N, D)` final hub (`<s>`) states `h_tau,0`.
        pooler_output: `(G, N, D)` tanh(dense(hub)), when the model has a pooler.
        hidden_states: per layer (embeddings first) `(G, N, L, D)`, with `output_hidden_states`.
        entity_hidden_states: per layer `(G, N, E, D)`, with `output_hidden_states`.
        attentions: per layer `(G, N, H, P, P)` in-sequence attention, with `output_attentions`.
        hop_attentions: per hop layer `(G, H, N, N)`, with `output_attentions`.
        node_mask: bool `(G, N)`, the real nodes (`node_mask` given or derived).
    """

    last_hidden_state: torch.FloatTensor | None = None
    entity_last_hidden_state: torch.FloatTensor | None = None
    hub_states: torch.FloatTensor | None = None
    pooler_output: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    entity_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None
    hop_attentions: tuple[torch.FloatTensor, ...] | None = None
    node_mask: torch.BoolTensor | None = None


class XhPreTrainedModel(GesaPreTrainedModel):
    """GESA's pre-trained base (LUKE conversion, added tokens, `save_pretrained` with `AutoModel`) for graphs."""

    config_class = XhConfig
    _no_split_modules = ["GesaLayer", "GesaEntityEmbeddings", "XhHopLayer"]

    @classmethod
    def from_luke_pretrained(cls, pretrained_model_name_or_path: Any, **kwargs: Any) -> XhPreTrainedModel:
        """`GesaPreTrainedModel.from_luke_pretrained`; the LUKE backbone (`XhConfig.backbone`, the default) is
        converted as `ablation="luke"`, i.e. with LUKE's own absolute positions and entity-aware queries."""
        backbone = xh_backbone(kwargs.get("backbone"), kwargs.get("ablation"), kwargs.get("use_relative_labels"),
                               kwargs.get("use_absolute_position_embeddings"))  # fmt: skip
        if backbone == "luke" and kwargs.get("ablation") is None:
            kwargs["ablation"] = "luke"
        return super().from_luke_pretrained(pretrained_model_name_or_path, **kwargs)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Linear/LayerNorm/Embedding as GESA; the combine Linear of every hop layer starts at `[I | 0]`, bias 0; the
        released code's graph attention (`XhGatHop`) as that code initialises it."""
        super()._init_weights(module)
        if isinstance(module, XhCombine):
            size = module.out_features
            identity = torch.cat([torch.eye(size), torch.zeros(size, size)], dim=1)
            init.copy_(module.weight, identity.to(module.weight.dtype))
            init.zeros_(module.bias)
        elif isinstance(module, XhGatHop):  # as the released GraphAttention: xavier normal, gain 1.414
            for weight in (module.fc.weight, module.attn_l, module.attn_r, module.res_fc.weight):
                init.xavier_normal_(weight, gain=1.414)


def _flatten_nodes(value: torch.Tensor | None, node_index: torch.Tensor) -> torch.Tensor | None:
    """`(G, N, ...)` -> `(T, ...)`, the real nodes only."""
    if value is None:
        return None
    return value.reshape(-1, *value.shape[2:])[node_index]


def _unflatten_nodes(value: torch.Tensor, node_index: torch.Tensor, graphs: int, nodes: int) -> torch.Tensor:
    """`(T, ...)` -> `(G, N, ...)`, zeros for padded nodes."""
    full = value.new_zeros(graphs * nodes, *value.shape[1:])
    return full.index_copy(0, node_index, value).view(graphs, nodes, *value.shape[1:])


class XhModel(XhPreTrainedModel, GesaModel):
    """GESA's encoder over a batch of graphs of sequences, with hop attention after each of the last K layers.

    Inputs: GESA's per-node inputs with a leading graph and node axis (README "Model inputs" with `(B, ...)` read as
    `(G, N, ...)`), plus

    - `node_adjacency` `(G, N, N)` (bool or 0/1): `node_adjacency[g, tau, eta] = 1` when node tau attends to node eta;
    - `node_mask` `(G, N)`: 1 for real nodes; default: nodes with at least one real word.
    """

    def build_variant_modules(self, config: XhConfig) -> None:
        self.hop_layers = nn.ModuleList([XhHopLayer(config) for _ in range(config.xh_num_hop_layers)])

    def _check_graph_inputs(
        self,
        graphs: int,
        nodes: int,
        node_mask: torch.Tensor,
        node_adjacency: torch.Tensor | None,
        inputs: dict[str, torch.Tensor | None],
    ) -> torch.Tensor:
        """Validate the graph-shaped inputs; returns the bool adjacency restricted to real nodes `(G, N, N)`."""
        if node_adjacency is None:
            raise ValueError(
                f"node_adjacency is required: a (graphs, nodes, nodes) = {(graphs, nodes, nodes)} matrix with 1 where "
                "node tau attends to node eta (all zeros for no edges)."
            )
        if tuple(node_adjacency.shape) != (graphs, nodes, nodes):
            raise ValueError(
                f"node_adjacency has shape {tuple(node_adjacency.shape)}; expected (graphs, nodes, nodes) = "
                f"{(graphs, nodes, nodes)} from input_ids (graphs, nodes, words)."
            )
        if tuple(node_mask.shape) != (graphs, nodes):
            raise ValueError(
                f"node_mask has shape {tuple(node_mask.shape)}; expected (graphs, nodes) = {(graphs, nodes)}."
            )
        if not torch.compiler.is_compiling():
            if node_adjacency.dtype != torch.bool and not ((node_adjacency == 0) | (node_adjacency == 1)).all():
                raise ValueError("node_adjacency must hold 0/1 (or bool) entries.")
            if not node_mask.bool().any(dim=1).all():
                raise ValueError("node_mask: every graph needs at least one real node.")
        for name, value in inputs.items():
            if value is not None and tuple(value.shape[:2]) != (graphs, nodes):
                raise ValueError(
                    f"{name} has shape {tuple(value.shape)}; expected a leading (graphs, nodes) = {(graphs, nodes)} "
                    "like input_ids."
                )
        real = node_mask.bool()
        return node_adjacency.bool() & real[:, :, None] & real[:, None, :]

    @can_return_tuple
    @with_inputs_of(GesaModel.forward)
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        *,
        node_adjacency: torch.Tensor | None = None,
        node_mask: torch.Tensor | None = None,
        **kwargs: Unpack[GesaInputs],
    ) -> XhModelOutput:
        """Encode graphs: words `(G, N, L)`, entities `(G, N, E)` (GESA's inputs per node, `kwargs`),
        `node_adjacency` `(G, N, N)`."""
        inputs_embeds = kwargs.pop("inputs_embeds", None)
        reference = input_ids if input_ids is not None else inputs_embeds
        if reference is None or reference.dim() != (3 if input_ids is not None else 4):
            raise ValueError(
                "XhModel takes graphs of sequences: input_ids of shape (graphs, nodes, words) (or inputs_embeds "
                f"(graphs, nodes, words, hidden)); got {None if reference is None else tuple(reference.shape)}."
            )
        graphs, nodes = reference.shape[:2]
        attention_mask = kwargs.get("attention_mask")
        if node_mask is None:
            node_mask = (
                attention_mask.bool().any(-1)
                if attention_mask is not None
                else torch.ones(graphs, nodes, dtype=torch.bool, device=reference.device)
            )
        node_inputs = {name: kwargs.pop(name) for name in NODE_INPUTS if kwargs.get(name) is not None}
        adjacency = self._check_graph_inputs(graphs, nodes, node_mask, node_adjacency, node_inputs)
        node_index = node_mask.bool().reshape(-1).nonzero().squeeze(1)
        flat = {name: _flatten_nodes(value, node_index) for name, value in node_inputs.items()}
        flat["inputs_embeds"] = _flatten_nodes(inputs_embeds, node_index)
        graph = {"node_adjacency": adjacency, "node_index": node_index, "graphs": graphs, "nodes": nodes}
        kwargs["return_dict"] = True
        encoded = super().forward(_flatten_nodes(input_ids, node_index), variant_inputs=graph, **kwargs, **flat)

        def per_node(value: torch.Tensor | None) -> torch.Tensor | None:
            return None if value is None else _unflatten_nodes(value, node_index, graphs, nodes)

        def per_layer(values: tuple[torch.Tensor, ...] | None) -> tuple[torch.Tensor, ...] | None:
            return None if values is None else tuple(per_node(x) for x in values)

        words = encoded.last_hidden_state
        return XhModelOutput(
            last_hidden_state=per_node(words),
            entity_last_hidden_state=per_node(encoded.entity_last_hidden_state),
            hub_states=per_node(words[:, 0]),
            pooler_output=per_node(encoded.pooler_output),
            hidden_states=per_layer(encoded.get("hidden_states")),
            entity_hidden_states=per_layer(encoded.get("entity_hidden_states")),
            attentions=per_layer(encoded.get("attentions")),
            hop_attentions=encoded.hop_attentions,
            node_mask=node_mask.bool(),
        )

    def layer_blocks(self, inputs: dict, words: torch.Tensor) -> XhBlocks:
        return XhBlocks(self, inputs)


class XhBlocks(LayerBlocks):
    """Hop attention (Eqs. 7-8) after each of the last K layers of `GesaEncoder`, on the hubs of the real nodes
    (`(T, L, D)`, flattened); the hop attention probabilities join the output (`hop_attentions`)."""

    def __init__(self, model: XhModel, inputs: dict) -> None:
        self.hop_layers = model.hop_layers
        self.first_hop = model.config.num_hidden_layers - len(model.hop_layers)
        self.adjacency, self.node_index = inputs["node_adjacency"], inputs["node_index"]
        self.graphs, self.nodes = inputs["graphs"], inputs["nodes"]
        self.output_attentions = inputs["output_attentions"]
        self.hop_attentions = () if self.output_attentions else None

    def between(self, done: int, words: torch.Tensor, entities: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        if done <= self.first_hop:
            return words, entities
        hubs = _unflatten_nodes(words[:, 0], self.node_index, self.graphs, self.nodes)
        new_hubs, hop_probs = self.hop_layers[done - 1 - self.first_hop](hubs, self.adjacency, self.output_attentions)
        new_hubs = new_hubs.reshape(self.graphs * self.nodes, -1)[self.node_index]
        if self.hop_attentions is not None:
            self.hop_attentions += (hop_probs,)
        return torch.cat([new_hubs[:, None], words[:, 1:]], dim=1), entities

    def output(self, encoded: ModelOutput) -> XhModelOutput:
        """The encoder's output over the real nodes `(T, ...)`, with the hop attentions (`XhModel` regroups it)."""
        return XhModelOutput(**encoded, hop_attentions=self.hop_attentions)


# ---------------------------------------------------------------------------------------------
# ReCoRD: sentence nodes, GESA's head per node, max over a candidate's mentions
# ---------------------------------------------------------------------------------------------


@dataclass
class XhEntitySpanQAOutput(ModelOutput):
    """
    Args:
        loss: binary cross-entropy averaged over the candidates that have at least one mention, when `labels`.
        logits: `(G, C)` candidate scores (max over the candidate's mentions in all nodes); `finfo.min` for a
            candidate with no mention.
        mention_logits: `(G, N, E)` GESA head score of each mention with its node's placeholder; `finfo.min` for
            the placeholder, padding and padded nodes.
        hub_states: `(G, N, D)`.
        hop_attentions: per hop layer `(G, H, N, N)`, with `output_attentions`.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    mention_logits: torch.FloatTensor | None = None
    hub_states: torch.FloatTensor | None = None
    hop_attentions: tuple[torch.FloatTensor, ...] | None = None


class XhForEntitySpanQA(XhPreTrainedModel, GesaForEntitySpanQA):
    """ReCoRD with Transformer-XH (spec): nodes are the passage's sentences, each with the query; edges join
    sentences sharing an entity string. Each node carries its copy of the placeholder and its candidate mentions;
    `logit(mention) = w . dropout([y_PLC(node) ; y_mention]) + b` (GESA's head), and a candidate's logit is the max
    over its mentions. `entity_string_ids` are graph-wide candidate indices in `[0, C)`; `labels` `(G, C)`.
    Inputs: GESA's per node `(G, N, ...)` plus `node_adjacency`, `node_mask` (`XhModel`). Features:
    `processing_xh.XhProcessor.encode_record_graphs`.
    """

    base_model_class = XhModel
    required_inputs = ("entity_ids", "placeholder_entity_mask", "entity_string_ids")
    pipeline = PipelineSpec(ENTITY_CLOZE_TASK, "pipeline_xh.XhClozeQAPipeline")
    # graph-shaped inputs: XhModel checks them per node; the graph-level labels are checked below
    check_head_inputs = False

    def score_entities(
        self, outputs: XhModelOutput, labels: torch.Tensor | None, kwargs: dict
    ) -> XhEntitySpanQAOutput:
        """GESA's score of each mention with its node's placeholder; a candidate's logit is the max over its mentions."""
        entity_ids, entity_string_ids = kwargs["entity_ids"], kwargs["entity_string_ids"]
        node_mask = outputs.node_mask
        entity_attention_mask = kwargs.get("entity_attention_mask")
        placeholder_entity_mask = kwargs["placeholder_entity_mask"]
        graphs, nodes, entity_length = entity_ids.shape
        if entity_attention_mask is None:
            entity_attention_mask = torch.ones_like(entity_ids)
        states = outputs.entity_last_hidden_state.reshape(graphs * nodes, entity_length, -1)
        real_node = node_mask.bool().reshape(-1, 1)
        mention_logits, _ = score_candidates(
            self.classifier,
            self.dropout,
            states,
            entity_attention_mask.reshape(graphs * nodes, entity_length).bool() & real_node,
            placeholder_entity_mask.reshape(graphs * nodes, entity_length),
            None,
        )
        placeholder = placeholder_entity_mask.bool()
        is_mention = (
            entity_attention_mask.bool() & ~placeholder & (entity_string_ids >= 0) & node_mask.bool()[..., None]
        )
        if labels is not None and (labels.dim() != 2 or labels.size(0) != graphs):
            raise ValueError(f"labels has shape {tuple(labels.shape)}; expected (graphs={graphs}, candidates).")
        num_candidates = labels.size(1) if labels is not None else int(entity_string_ids.max().clamp(min=0)) + 1
        if not torch.compiler.is_compiling():
            checks = InputValueChecks()
            if labels is not None:
                check_candidate_labels(checks, labels, graphs, num_candidates)
            checks.within(
                "entity_string_ids",
                entity_string_ids[is_mention],
                0,
                num_candidates - 1,
                f"entity_string_ids must be graph-wide candidate indices in [0, {num_candidates - 1}] (labels has "
                f"{num_candidates} candidates)",
            )
            checks.raise_first()
        minimum = torch.finfo(mention_logits.dtype).min
        mention_logits = mention_logits.view(graphs, nodes, entity_length).masked_fill(~is_mention, minimum)
        graph_index = torch.arange(graphs, device=entity_ids.device)[:, None, None].expand_as(entity_string_ids)
        slot = (graph_index * num_candidates + entity_string_ids.clamp(min=0))[is_mention]
        logits = mention_logits.new_full((graphs * num_candidates,), minimum)
        logits = logits.scatter_reduce(0, slot, mention_logits[is_mention], reduce="amax", include_self=True)
        logits = logits.view(graphs, num_candidates)
        has_mention = torch.zeros(graphs * num_candidates, dtype=torch.bool, device=logits.device)
        has_mention[slot] = True
        has_mention = has_mention.view(graphs, num_candidates)
        loss = None
        if labels is not None:
            per_candidate = F.binary_cross_entropy_with_logits(
                logits.masked_fill(~has_mention, 0.0), labels.to(logits.dtype), reduction="none"
            )
            weights = has_mention.to(logits.dtype)
            loss = (per_candidate * weights).sum() / weights.sum().clamp(min=1.0)
        return XhEntitySpanQAOutput(
            loss=loss,
            logits=logits,
            mention_logits=mention_logits,
            hub_states=outputs.hub_states,
            hop_attentions=outputs.hop_attentions,
        )


# ---------------------------------------------------------------------------------------------
# The graph heads: one forward (XhModel over the graphs), then each head's output layer and loss
# ---------------------------------------------------------------------------------------------


@dataclass
class XhEncodedGraphs:
    """What the one forward of the graph heads hands a head's `score_graphs`: the encoder's outputs over the graphs
    (`XhModelOutput`: per node `(G, N, ...)`, the hub states, the real nodes) and the inputs it read (GESA's per node,
    `node_adjacency`, ...)."""

    outputs: XhModelOutput
    model_inputs: dict[str, Any]


@dataclass
class XhGraphOutput(ModelOutput):
    """The fields of every graph head's output, in the one order that keeps each head's own: a head fills its fields
    (its output class, a subclass of this one, says which) and leaves the others None, which `to_tuple()` and
    `Trainer`'s predictions leave out.

    Args:
        loss: the sum of the head's loss terms that have labels.
        logits, probs: the graph's class scores `(G, Y)` (FEVER, question type).
        node_label_probs, node_importance: FEVER's per-node `p(y | tau)` `(G, N, Y)` and `p(s | tau)` `(G, N)`.
        relevance_logits: `(G, N)` node relevance (HotpotQA, supporting facts).
        start_logits, end_logits, answer_type_logits, supporting_logits: the answer span `(G, N, L)`, the answer type
            `(G, N, 3)` and the sentence scores `(G, N, S)` (HotpotQA, supporting facts).
        relevance_loss, span_loss, answer_type_loss, supporting_loss: the loss terms.
        hub_states: the final hubs `h_tau,0` `(G, N, D)`.
        hop_attentions: the hop attention of each hop layer, `(G, H, N, N)` each, with `output_attentions`.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    probs: torch.FloatTensor | None = None
    node_label_probs: torch.FloatTensor | None = None
    node_importance: torch.FloatTensor | None = None
    relevance_logits: torch.FloatTensor | None = None
    start_logits: torch.FloatTensor | None = None
    end_logits: torch.FloatTensor | None = None
    answer_type_logits: torch.FloatTensor | None = None
    supporting_logits: torch.FloatTensor | None = None
    relevance_loss: torch.FloatTensor | None = None
    span_loss: torch.FloatTensor | None = None
    answer_type_loss: torch.FloatTensor | None = None
    supporting_loss: torch.FloatTensor | None = None
    hub_states: torch.FloatTensor | None = None
    hop_attentions: tuple[torch.FloatTensor, ...] | None = None


class XhGraphHead(XhPreTrainedModel):
    """Every graph-level head (HotpotQA, FEVER, the paper system's question type and supporting facts): the XH encoder
    (`gesa`), the classifier dropout and one `forward`: `XhModel` over the graphs (the nodes flattened to the real
    ones, `GesaModel.forward` with the hop blocks, every output regrouped per node, the hub states), then the head's
    `score_graphs(encoded, inputs)`, which holds only the head's output layer, loss and label checks.

    A head declares its own inputs (labels, sentence boundaries) as a `TypedDict`, `head_inputs`; `score_graphs` gets
    each of them (None when not given), and the head's `forward` takes them beside `XhModel`'s (so `Trainer` keeps
    those columns and finds the labels) with `score_graphs`' docstring. `required_inputs` are refused before the
    encoder runs.
    """

    head_inputs: type[Mapping[str, Any]]
    # inputs the head cannot score without
    required_inputs: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "forward" in cls.__dict__:  # a head that writes its own forward keeps it
            return

        def forward(self: XhGraphHead, *args: Any, **kwargs: Any) -> ModelOutput:
            return XhGraphHead.forward(self, *args, **kwargs)

        # XhModel's graph inputs, the head's own, then XhModel's other inputs (README "Model inputs")
        encoder = [*inspect.signature(XhModel.forward).parameters.values()]
        graph = [parameter.name for parameter in encoder].index("node_mask") + 1
        own = [
            # the annotations are ForwardRefs under postponed evaluation: the signature shows their text
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=getattr(hint, "__forward_arg__", hint)
            )
            for name, hint in cls.head_inputs.__annotations__.items()
        ]
        score = inspect.signature(cls.score_graphs)
        forward.__signature__ = score.replace(
            parameters=[*encoder[:graph], *own, *encoder[graph:]], return_annotation=score.return_annotation
        )
        forward.__doc__ = cls.score_graphs.__doc__
        cls.forward = forward

    def __init__(self, config: XhConfig) -> None:
        super().__init__(config)
        self.gesa = XhModel(config, add_pooling_layer=False)
        self.dropout = classifier_dropout(config)

    @can_return_tuple
    def forward(self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaInputs]) -> ModelOutput:
        """`XhModel` over the graphs (`kwargs`: its inputs and the head's own), then the head's `score_graphs`."""
        inputs = {name: kwargs.pop(name, None) for name in self.head_inputs.__annotations__}
        missing = [name for name in self.required_inputs if inputs[name] is None]
        if missing:
            raise ValueError(
                f"{type(self).__name__} needs {' and '.join(missing)} (its forward's docstring says what each holds; "
                "its processor builds them)."
            )
        outputs = self.gesa(input_ids, return_dict=True, **kwargs)
        return self.score_graphs(XhEncodedGraphs(outputs, kwargs), inputs)


def node_logits(scorer: nn.Linear, hubs: torch.Tensor, node_mask: torch.Tensor) -> torch.Tensor:
    """`scorer(h_tau,0)` of every node, `(G, N)` from `(G, N, D)` hubs; padded nodes get `finfo.min`."""
    return scorer(hubs).squeeze(-1).masked_fill(~node_mask, torch.finfo(hubs.dtype).min)


def check_graph_labels(graphs: int, **labels: torch.Tensor | None) -> None:
    """One label per graph: each given label has shape `(graphs,)`."""
    for name, value in labels.items():
        if value is not None and tuple(value.shape) != (graphs,):
            raise ValueError(f"{name} has shape {tuple(value.shape)}; expected (graphs,) = ({graphs},).")


def class_loss(log_probs: torch.Tensor, labels: torch.LongTensor) -> torch.Tensor:
    """The negative log-likelihood of one class id per graph (`labels` `(G,)`, -100 ignored) under `log_probs`
    `(G, Y)`, a mean over the labelled graphs; 0 (still on the graph, never the 0/0 of a mean over none) when none is
    labelled."""
    check_graph_labels(log_probs.size(0), labels=labels)
    check_class_labels(labels, log_probs.size(-1))
    if torch.compiler.is_compiling() or (labels != IGNORE_INDEX).any():
        return F.nll_loss(log_probs, labels, ignore_index=IGNORE_INDEX)
    return ignored_loss(log_probs)


def best_span(start_logits: torch.Tensor, end_logits: torch.Tensor, max_answer_length: int) -> tuple[int, int]:
    """The span `start <= end < start + max_answer_length` of one node's `(L,)` start / end logits with the highest
    `start_logit + end_logit`, as `(start, end)` token indices."""
    length = start_logits.size(0)
    offsets = torch.arange(length, device=start_logits.device)
    offsets = offsets[None, :] - offsets[:, None]  # end - start
    allowed = (offsets >= 0) & (offsets < max_answer_length)
    scores = (start_logits[:, None] + end_logits[None, :]).masked_fill(~allowed, float("-inf"))
    best = int(scores.flatten().argmax())
    return best // length, best % length


# ---------------------------------------------------------------------------------------------
# HotpotQA: node relevance (Eq. 11) and answer span in a node (Eq. 12)
# ---------------------------------------------------------------------------------------------


@dataclass
class XhMultiHopQAOutput(XhGraphOutput):
    """
    Args:
        loss: `relevance_loss + span_loss`, when `relevant_node` (and spans) are given.
        relevance_logits: `(G, N)`; `p(relevance | tau) = softmax over real nodes` (padded: `finfo.min`).
        start_logits, end_logits: `(G, N, L)`; softmax over the node's context tokens (others: `finfo.min`).
        relevance_loss: cross-entropy of the relevant node, averaged over the graphs that have one (0 when none).
        span_loss: mean of the start and end cross-entropies inside the relevant node.
        hub_states: `(G, N, D)`.
        hop_attentions: per hop layer `(G, H, N, N)`, with `output_attentions`.
    """


class XhMultiHopQAInputs(TypedDict, total=False):
    """`XhForMultiHopQA`'s labels: `relevant_node` `(G,)` the gold node (-100: none); `start_positions` /
    `end_positions` `(G,)` the answer span's first and last token inside it (-100: no span, e.g. yes/no answers)."""

    relevant_node: torch.LongTensor | None
    start_positions: torch.LongTensor | None
    end_positions: torch.LongTensor | None


@dataclass
class XhGraphStep:
    """What `XhForMultiHopQA.graph_step` computes once for every head built on it: the encoder's outputs, the
    dropped-out word `(G, N, L, D)` and hub `(G, N, D)` states, the real nodes `(G, N)`, node relevance `(G, N)` and
    span logits `(G, N, L)`."""

    outputs: XhModelOutput
    words: torch.Tensor
    hubs: torch.Tensor
    node_mask: torch.Tensor
    relevance_logits: torch.Tensor
    start_logits: torch.Tensor
    end_logits: torch.Tensor


class XhForMultiHopQA(XhGraphHead):
    """HotpotQA with Transformer-XH: `p(relevance|tau) = softmax(Linear(h_tau,0))` over nodes (Eq. 11) and
    `p(start|tau,i), p(end|tau,j) = softmax(Linear(h_tau,i))` over the node's context tokens (Eq. 12), trained jointly.
    Features: `processing_xh.XhProcessor.encode_hotpot_graphs`. Prediction: `decode_answers`.
    """

    head_inputs = XhMultiHopQAInputs

    def __init__(self, config: XhConfig) -> None:
        super().__init__(config)
        self.relevance = nn.Linear(config.hidden_size, 1)
        self.span = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def score_graphs(self, encoded: XhEncodedGraphs, inputs: XhMultiHopQAInputs) -> XhMultiHopQAOutput:
        """Node relevance (Eq. 11) and the answer span inside each node (Eq. 12); `relevant_node` and
        `start_positions` / `end_positions` (`XhMultiHopQAInputs`) give the loss. Other inputs: `XhModel`'s."""
        step = self.graph_step(encoded)
        losses = self.relevance_and_span_losses(step, **inputs)
        return XhMultiHopQAOutput(
            loss=sum(losses.values()) if losses else None,
            relevance_logits=step.relevance_logits,
            start_logits=step.start_logits,
            end_logits=step.end_logits,
            relevance_loss=losses.get("relevance"),
            span_loss=losses.get("span"),
            hub_states=step.outputs.hub_states,
            hop_attentions=step.outputs.hop_attentions,
        )

    def graph_step(self, encoded: XhEncodedGraphs) -> XhGraphStep:
        """Node relevance (Eq. 11) and the span logits inside each node (Eq. 12) on the encoder's states; padded nodes
        and non-context tokens (question, padding) get `finfo.min`."""
        outputs = encoded.outputs
        attention_mask = encoded.model_inputs.get("attention_mask")
        global_attention_mask = encoded.model_inputs.get("global_attention_mask")
        words, hubs = self.dropout(outputs.last_hidden_state), self.dropout(outputs.hub_states)
        graphs, nodes, length = words.shape[:3]
        real = outputs.node_mask
        relevance_logits = node_logits(self.relevance, hubs, real)
        context = real[..., None].expand(graphs, nodes, length)
        if attention_mask is not None:
            context = context & attention_mask.bool()
        if global_attention_mask is not None:
            context = context & (global_attention_mask == 0)
        minimum = torch.finfo(hubs.dtype).min
        start_logits, end_logits = self.span(words).masked_fill(~context[..., None], minimum).unbind(-1)
        return XhGraphStep(outputs, words, hubs, real, relevance_logits, start_logits, end_logits)

    @staticmethod
    def relevance_and_span_losses(
        step: XhGraphStep,
        relevant_node: torch.LongTensor | None,
        start_positions: torch.LongTensor | None,
        end_positions: torch.LongTensor | None,
    ) -> dict[str, torch.Tensor]:
        """`{"relevance": ..., "span": ...}`: cross-entropy of the gold node over the real nodes (a mean over the
        graphs that have one) and of the gold span inside the gold node (graphs with a span only)."""
        losses: dict[str, torch.Tensor] = {}
        if relevant_node is None:
            return losses
        graphs, nodes = step.relevance_logits.shape
        check_graph_labels(graphs, relevant_node=relevant_node, start_positions=start_positions,
                           end_positions=end_positions)  # fmt: skip
        for name, value in (("start_positions", start_positions), ("end_positions", end_positions)):
            if value is not None:
                check_token_positions(value, step.start_logits.size(-1), name)
        given = relevant_node != -100
        if not torch.compiler.is_compiling() and given.any():
            picked = relevant_node[given]
            if (
                (picked < 0).any()
                or (picked >= nodes).any()
                or not step.node_mask[given, picked.clamp(0, nodes - 1)].all()
            ):
                raise ValueError(
                    f"relevant_node must be a real node index in [0, {nodes - 1}] (node_mask 1) or -100 (none); "
                    f"got {relevant_node.tolist()}."
                )
        # a mean over the graphs with a relevant node: 0 (still on the graph, so backward works) when none has one,
        # where F.cross_entropy's own mean would divide 0 by 0 (NaN)
        labelled = given.sum().clamp(min=1).to(step.relevance_logits.dtype)
        losses["relevance"] = (
            F.cross_entropy(step.relevance_logits.float(), relevant_node, ignore_index=-100, reduction="sum")
            / labelled
        )
        if start_positions is not None and end_positions is not None:
            has_span = given & (start_positions >= 0) & (end_positions >= 0)
            if has_span.any():
                rows = has_span.nonzero().squeeze(1)
                node = relevant_node[rows]
                start = F.cross_entropy(step.start_logits[rows, node].float(), start_positions[rows])
                end = F.cross_entropy(step.end_logits[rows, node].float(), end_positions[rows])
                losses["span"] = (start + end) / 2
        return losses

    @staticmethod
    def decode_answers(output: XhMultiHopQAOutput, max_answer_length: int = 30) -> list[tuple[int, int, int]]:
        """Paper's inference: the most relevant node, then its best span `start <= end < start + max_answer_length`.

        Returns one `(node, start, end)` per graph (token indices inside the node).
        """
        answers = []
        for graph in range(output.relevance_logits.size(0)):
            node = int(output.relevance_logits[graph].argmax())
            start_logits, end_logits = output.start_logits[graph, node], output.end_logits[graph, node]
            answers.append((node, *best_span(start_logits, end_logits, max_answer_length)))
        return answers


# ---------------------------------------------------------------------------------------------
# FEVER: p(y | X, E) = sum_tau p(s | tau) p(y | tau)
# ---------------------------------------------------------------------------------------------


@dataclass
class XhFactVerificationOutput(XhGraphOutput):
    """
    Args:
        loss: `-log p(y* | X, E)` + the node-importance loss `-log sum_{tau in gold} p(s | tau)`, when labels are given.
        logits: `(G, Y)` `log p(y | X, E)`.
        probs: `(G, Y)` `p(y | X, E)`; each row sums to 1.
        node_label_probs: `(G, N, Y)` `p(y | tau)` (Eq. 14).
        node_importance: `(G, N)` `p(s | tau)` (Eq. 15), a distribution over the real nodes.
        hop_attentions: per hop layer `(G, H, N, N)`, with `output_attentions`.
    """


class XhFactVerificationInputs(TypedDict, total=False):
    """`XhForFactVerification`'s labels: `labels` `(G,)` the claim's class id (-100: none); `node_labels` `(G, N)` 1
    on the gold evidence nodes (optional: the node-importance loss)."""

    labels: torch.LongTensor | None
    node_labels: torch.Tensor | None


class XhForFactVerification(XhGraphHead):
    """FEVER with Transformer-XH: per-node label distribution `p(y|tau) = softmax(Linear(h_tau,0))` (Eq. 14), node
    importance `p(s|tau) = softmax_tau(Linear(h_tau,0))` (Eq. 15), claim label `p(y|X,E) = sum_tau p(s|tau) p(y|tau)`
    (Eq. 16)."""

    # built with the wiki pages: pipeline(model=dir, trust_remote_code=True, pages={page: {line: sentence}})
    pipeline = PipelineSpec("xh-fact-verification", "pipeline_xh_tasks.XhFactVerificationPipeline")
    head_inputs = XhFactVerificationInputs

    def __init__(self, config: XhConfig) -> None:
        super().__init__(config)
        self.node_classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.node_scorer = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def score_graphs(self, encoded: XhEncodedGraphs, inputs: XhFactVerificationInputs) -> XhFactVerificationOutput:
        """Claim verification over the evidence graph: `probs` `(G, Y)` = Eq. 16; `labels` and `node_labels`
        (`XhFactVerificationInputs`) give the loss. Other inputs: `XhModel`'s."""
        labels, node_labels = inputs["labels"], inputs["node_labels"]
        outputs = encoded.outputs
        hubs = self.dropout(outputs.hub_states)
        graphs, nodes = hubs.shape[:2]
        node_mask = outputs.node_mask
        node_label_log_probs = torch.log_softmax(self.node_classifier(hubs).float(), dim=-1)
        importance_logits = self.node_scorer(hubs).squeeze(-1).float()
        importance_logits = importance_logits.masked_fill(~node_mask, torch.finfo(importance_logits.dtype).min)
        importance_log_probs = torch.log_softmax(importance_logits, dim=-1)
        # log sum_tau p(s|tau) p(y|tau), over real nodes only
        joint = importance_log_probs[..., None] + node_label_log_probs
        joint = joint.masked_fill(~node_mask[..., None], float("-inf"))
        logits = torch.logsumexp(joint, dim=1)
        loss = None if labels is None else class_loss(logits, labels)
        if node_labels is not None:
            if tuple(node_labels.shape) != (graphs, nodes):
                raise ValueError(
                    f"node_labels has shape {tuple(node_labels.shape)}; expected (graphs, nodes) = {(graphs, nodes)}."
                )
            gold = node_labels.bool() & node_mask
            has_gold = gold.any(dim=1)
            if has_gold.any():
                gold_log_prob = torch.logsumexp(importance_log_probs.masked_fill(~gold, float("-inf")), dim=1)
                node_loss = -gold_log_prob[has_gold].mean()
                loss = node_loss if loss is None else loss + node_loss
        importance = importance_log_probs.exp() * node_mask
        return XhFactVerificationOutput(
            loss=loss,
            logits=logits,
            probs=logits.exp(),
            node_label_probs=node_label_log_probs.exp(),
            node_importance=importance,
            hop_attentions=outputs.hop_attentions,
        )


XhConfig.register_for_auto_class()
XhModel.register_for_auto_class("AutoModel")
XhForEntitySpanQA.register_for_auto_class("AutoModelForQuestionAnswering")
XhForMultiHopQA.register_for_auto_class("AutoModelForQuestionAnswering")
XhForFactVerification.register_for_auto_class("AutoModelForSequenceClassification")

__all__ = [
    "XhCombine",
    "XhEntitySpanQAOutput",
    "XhFactVerificationOutput",
    "XhForEntitySpanQA",
    "XhForFactVerification",
    "XhForMultiHopQA",
    "XhGatHop",
    "XhHopLayer",
    "XhModel",
    "XhModelOutput",
    "XhMultiHopQAOutput",
    "XhPreTrainedModel",
]

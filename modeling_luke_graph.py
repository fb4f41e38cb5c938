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
"""LUKE-Graph (Foolad & Kiani, 2023): LUKE, then a gated relational graph network over the entity tokens.

The GESA paper's Table 2 compares GESA with LUKE and with LUKE-Graph; this module puts LUKE-Graph on the same
backbone, processor, head and training script, so that all three are measured by one library. Only what differs from
GESA lives here:

1. **Backbone**: LUKE itself (`GesaModel` with `ablation="luke"`: absolute word and entity positions, LUKE's
   entity-aware queries, no relative-position labels).
2. **Graph**: the heterogeneous entity graph GESA puts into its e2e labels (paper 3.2), read from the same structure
   inputs (`placeholder_entity_mask`, `entity_string_ids`, `entity_sentence_ids`) by the same builder
   (`structure_gesa.build_entity_entity_labels`), as one dense adjacency per edge type: `A` `(B, R, E, E)` with
   `R = 3` (PLC, SENT-BASED, MATCH), padded entities cut off.
3. **Relational layer** (`config.graph_layer`): by default an R-GCN with mean aggregation per relation, as the
   released LUKE-Graph code's `RGCNConv`: `h'_i = relu(W_0 h_i + b + sum_r sum_{j in N_r(i)} W_r h_j / |N_r(i)|)`;
   with `graph_layer="rgat"` the relational graph attention the paper names (Busbridge et al.'s RGAT, attention
   within each relation): `1 / |N_r(i)|` becomes `alpha^r_ij = softmax_{j in N_r(i)} LeakyReLU(q^r . W_r h_i +
   k^r . W_r h_j)`.
4. **Question-aware gate** after each relational layer, over the question tokens' final word states `q_t`
   (`global_attention_mask == 2`):
   `s_it = sigmoid(W_s [h_i ; q_t] + b_s)` (one weight per feature), `q~_i = sum_t s_it * q_t`,
   `a_i = sigmoid(W_a [h_i ; q~_i] + b_a)`, `h_i <- a_i * tanh(q~_i) + (1 - a_i) * h_i`.
5. **Head**: GESA's (paper 3.5, Eq. 2), unchanged, on the gated entity states.

Everything is batched: the adjacency is dense per relation and the gate scores every (node, question token) pair in
one broadcast, so there is no Python loop over nodes, edges or examples (the public LUKE-Graph code loops over nodes
in its gate and builds PyTorch Geometric edge lists per example). Entity graphs are small (ReCoRD windows hold at
most `max_entities` = 128 entities), so `(B, R, E, E)` costs less than an edge list's index bookkeeping and needs no
graph library.

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.processing_utils import Unpack
from transformers.utils import can_return_tuple

from .configuration_luke_graph import LUKE_GRAPH_RELATIONS, LukeGraphConfig
from .modeling_gesa import (
    GesaForEntitySpanQA,
    GesaInputs,
    GesaModel,
    GesaModelOutput,
    GesaPreTrainedModel,
    with_inputs_of,
)
from .structure_gesa import QUESTION_GLOBAL, RelativeLabels, build_entity_entity_labels, entity_defaults

# ---------------------------------------------------------------------------------------------
# The entity graph: one adjacency per edge type, from GESA's e2e graph
# ---------------------------------------------------------------------------------------------


def relation_adjacency(
    config: LukeGraphConfig,
    entity_attention_mask: torch.Tensor,
    placeholder_entity_mask: torch.Tensor | None,
    entity_string_ids: torch.Tensor | None,
    entity_sentence_ids: torch.Tensor | None,
) -> torch.Tensor:
    """Bool `(B, R, E, E)`: `[b, r, i, j]` is an edge of type `LUKE_GRAPH_RELATIONS[r]` between real entities i and j.

    The edges are GESA's e2e graph labels (`build_entity_entity_labels`), one relation per edge label; no self loops
    (the relational layer's root weight carries the node itself). Missing structure inputs mean no edges of that kind.
    """
    batch_size, entity_length = entity_attention_mask.shape
    placeholder, strings, sentences = entity_defaults(
        placeholder_entity_mask,
        entity_string_ids,
        entity_sentence_ids,
        batch_size,
        entity_length,
        entity_attention_mask.device,
    )
    labels = build_entity_entity_labels(config, placeholder, strings, sentences)
    layout = RelativeLabels(config.max_relative_position)
    edge_labels = {"plc": layout.plc_edge, "sent": layout.sent_edge, "match": layout.match_edge}
    relation_labels = torch.tensor([edge_labels[name] for name in LUKE_GRAPH_RELATIONS], device=labels.device)
    adjacency = labels[:, None] == relation_labels[None, :, None, None]
    real = entity_attention_mask.bool()
    # padded entities carry PLC labels in GESA's graph (their keys are masked there); here they must send nothing
    return adjacency & real[:, None, :, None] & real[:, None, None, :]


# ---------------------------------------------------------------------------------------------
# Relational layer and question-aware gate
# ---------------------------------------------------------------------------------------------


class LukeGraphRelationalLayer(nn.Module):
    """`h'_i = relu(W_0 h_i + b + sum_r mean_{j in N_r(i)} W_r h_j)` for every node of every example at once."""

    def __init__(self, config: LukeGraphConfig) -> None:
        super().__init__()
        self.num_relations = len(LUKE_GRAPH_RELATIONS)
        self.root = nn.Linear(config.hidden_size, config.hidden_size)
        # W_1 .. W_R as one product: (B, E, D) -> (B, E, R * D)
        self.relations = nn.Linear(config.hidden_size, self.num_relations * config.hidden_size, bias=False)

    def forward(self, nodes: torch.Tensor, adjacency: torch.Tensor) -> torch.Tensor:
        """`nodes` `(B, E, D)`, bool `adjacency` `(B, R, E, E)` -> `(B, E, D)`."""
        batch_size, entity_length, hidden = nodes.shape
        messages = self.relations(nodes).view(batch_size, entity_length, self.num_relations, hidden)
        edges = adjacency.to(nodes.dtype)
        # mean over each relation's neighbours; a node without neighbours of a relation receives nothing from it
        edges = edges / edges.sum(dim=-1, keepdim=True).clamp(min=1)
        aggregated = torch.einsum("brij,bjrd->bid", edges, messages)
        return F.relu(self.root(nodes) + aggregated)


class LukeGraphAttentionLayer(LukeGraphRelationalLayer):
    """Relational graph attention (Busbridge et al., 2019: WIRGAT, additive logits), the R-GCN's per-relation mean
    replaced by attention over the same neighbours:

    `g^r_i = W_r h_i`, `e^r_ij = LeakyReLU(q^r . g^r_i + k^r . g^r_j)` (slope 0.2), `alpha^r_ij = softmax_{j in N_r(i)}
    e^r_ij`, `h'_i = relu(W_0 h_i + b + sum_r sum_{j in N_r(i)} alpha^r_ij g^r_j)`.

    `q^r`, `k^r` are the query and key kernels of relation r (one head); with both zero every neighbour weighs
    `1 / |N_r(i)|` and the layer is the R-GCN's."""

    def __init__(self, config: LukeGraphConfig) -> None:
        super().__init__(config)
        # q^r and k^r of every relation: (2, R, D)
        self.attention = nn.Parameter(torch.empty(2, self.num_relations, config.hidden_size))
        nn.init.normal_(self.attention, std=config.initializer_range)

    def forward(self, nodes: torch.Tensor, adjacency: torch.Tensor) -> torch.Tensor:
        """`nodes` `(B, E, D)`, bool `adjacency` `(B, R, E, E)` -> `(B, E, D)`."""
        batch_size, entity_length, hidden = nodes.shape
        messages = self.relations(nodes).view(batch_size, entity_length, self.num_relations, hidden)  # g^r_j
        queries = torch.einsum("bjrd,rd->brj", messages, self.attention[0])
        keys = torch.einsum("bjrd,rd->brj", messages, self.attention[1])
        logits = F.leaky_relu(queries[..., :, None] + keys[..., None, :], 0.2)  # (B, R, E_i, E_j)
        # softmax over each relation's neighbours; a node without neighbours of a relation receives nothing from it
        weights = logits.masked_fill(~adjacency, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        aggregated = torch.einsum("brij,bjrd->bid", weights, messages)
        return F.relu(self.root(nodes) + aggregated)


RELATIONAL_LAYERS = {"rgcn": LukeGraphRelationalLayer, "rgat": LukeGraphAttentionLayer}


class LukeGraphQuestionGate(nn.Module):
    """Blend a per-node summary of the question into each node through a sigmoid gate.

    `s_it = sigmoid(W_s [h_i ; q_t] + b_s)`, `q~_i = sum_t s_it * q_t` (padded question slots excluded),
    `a_i = sigmoid(W_a [h_i ; q~_i] + b_a)`, `h_i <- a_i * tanh(q~_i) + (1 - a_i) * h_i`.
    """

    def __init__(self, config: LukeGraphConfig) -> None:
        super().__init__()
        self.hidden_size = config.hidden_size
        self.question_attention = nn.Linear(2 * config.hidden_size, config.hidden_size)  # W_s, b_s
        self.gate = nn.Linear(2 * config.hidden_size, config.hidden_size)  # W_a, b_a

    def pair_scores(self, nodes: torch.Tensor, question: torch.Tensor) -> torch.Tensor:
        """`W_s [h_i ; q_t] + b_s` for every (node, question token) pair: `(B, E, D)`, `(B, Q, D)` -> `(B, E, Q, D)`.

        Computed as `W_s^h h_i + W_s^q q_t`: two small products and one broadcast, never the `(B, E, Q, 2D)` pairs
        (the published code applies `W_s` to each pair: E x Q products of a `2D x D` matrix per example, the same
        numbers at about E x Q / (E + Q) times the cost)."""
        node_weight, question_weight = self.question_attention.weight.split(self.hidden_size, dim=1)
        node_part = F.linear(nodes, node_weight)
        question_part = F.linear(question, question_weight, self.question_attention.bias)
        return node_part[:, :, None] + question_part[:, None]

    def forward(self, nodes: torch.Tensor, question: torch.Tensor, question_mask: torch.Tensor) -> torch.Tensor:
        """`nodes` `(B, E, D)`, `question` `(B, Q, D)`, bool `question_mask` `(B, Q)` -> `(B, E, D)`."""
        scores = torch.sigmoid(self.pair_scores(nodes, question))
        scores = scores * question_mask[:, None, :, None].to(scores.dtype)
        summary = (scores * question[:, None]).sum(dim=2)
        alpha = torch.sigmoid(self.gate(torch.cat([nodes, summary], dim=-1)))
        return alpha * torch.tanh(summary) + (1 - alpha) * nodes


class LukeGraphNetwork(nn.Module):
    """`graph_num_layers` x (relational layer, question-aware gate) over the entity states; the layer is
    `config.graph_layer`'s (R-GCN or relational graph attention)."""

    def __init__(self, config: LukeGraphConfig) -> None:
        super().__init__()
        layer = RELATIONAL_LAYERS[config.graph_layer]
        self.layers = nn.ModuleList([layer(config) for _ in range(config.graph_num_layers)])
        self.gates = nn.ModuleList([LukeGraphQuestionGate(config) for _ in range(config.graph_num_layers)])

    def forward(
        self, nodes: torch.Tensor, adjacency: torch.Tensor, question: torch.Tensor, question_mask: torch.Tensor
    ) -> torch.Tensor:
        for layer, gate in zip(self.layers, self.gates, strict=True):
            nodes = gate(layer(nodes, adjacency), question, question_mask)
        return nodes


def question_states(
    words: torch.Tensor, global_attention_mask: torch.Tensor, attention_mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The question tokens' word states, packed: `(B, Q, D)` and bool `(B, Q)` with `Q` the most question tokens of
    any example (one host sync, for the size)."""
    is_question = global_attention_mask == QUESTION_GLOBAL
    if attention_mask is not None:
        is_question = is_question & attention_mask.bool()
    counts = is_question.sum(dim=1)
    length = int(counts.max()) if counts.numel() else 0
    # stable sort puts each example's question tokens first, in their order
    order = torch.argsort((~is_question).to(torch.int8), dim=1, stable=True)[:, :length]
    question = words.gather(1, order[..., None].expand(-1, -1, words.size(-1)))
    mask = torch.arange(length, device=words.device)[None, :] < counts[:, None]
    return question, mask


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


@dataclass
class LukeGraphModelOutput(GesaModelOutput):
    """`GesaModelOutput` whose `entity_last_hidden_state` `(B, E, D)` is the graph network's output.

    Args:
        encoder_entity_last_hidden_state: `(B, E, D)` LUKE's entity states, the graph network's input.
        hidden_states, entity_hidden_states, attentions: the encoder's, per layer, as in `GesaModelOutput`.
    """

    encoder_entity_last_hidden_state: torch.FloatTensor | None = None


class LukeGraphPreTrainedModel(GesaPreTrainedModel):
    """GESA's pre-trained base (LUKE conversion, added tokens, `save_pretrained` with `AutoModel`) for LUKE-Graph."""

    config_class = LukeGraphConfig
    _no_split_modules = ["GesaLayer", "GesaEntityEmbeddings", "LukeGraphNetwork"]

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, LukeGraphAttentionLayer):  # its query and key kernels, like every other weight
            init.normal_(module.attention, std=self.config.initializer_range)

    @classmethod
    def from_luke_pretrained(
        cls,
        pretrained_model_name_or_path,
        keep_entity_aware_queries: bool = True,
        entity_rows: list[int] | None = None,
        **kwargs,
    ) -> LukeGraphPreTrainedModel:
        """`GesaPreTrainedModel.from_luke_pretrained`, keeping LUKE's own entity-aware queries by default (LUKE-Graph
        fine-tunes LUKE as it is; on the released checkpoints they equal the word query anyway). The graph network and
        the head start fresh."""
        return super().from_luke_pretrained(
            pretrained_model_name_or_path, keep_entity_aware_queries, entity_rows, **kwargs
        )


class LukeGraphModel(LukeGraphPreTrainedModel, GesaModel):
    """LUKE's encoder, then the gated relational graph network over its entity states.

    Inputs: GESA's (README "Model inputs"). The graph reads `placeholder_entity_mask`, `entity_string_ids` and
    `entity_sentence_ids`; the gate reads the question tokens from `global_attention_mask` (required).
    """

    def build_variant_modules(self, config: LukeGraphConfig) -> None:
        self.graph = LukeGraphNetwork(config)

    @can_return_tuple
    @with_inputs_of(GesaModel.forward)
    def forward(self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaInputs]) -> LukeGraphModelOutput:
        """Encode words `(B, L)` and entities `(B, E)` with LUKE (`GesaModel`'s inputs), then refine the entity states
        on the graph."""
        entity_ids, global_attention_mask = kwargs.get("entity_ids"), kwargs.get("global_attention_mask")
        if entity_ids is None:
            raise ValueError("LukeGraphModel needs entity_ids: its graph network runs over the entity tokens.")
        if global_attention_mask is None:
            raise ValueError(
                "LukeGraphModel needs global_attention_mask (2 on the question tokens) for its question-aware gate; "
                "GesaProcessor produces it."
            )
        encoded = super().forward(input_ids, **{**kwargs, "return_dict": True})
        attention_mask, entity_attention_mask = kwargs.get("attention_mask"), kwargs.get("entity_attention_mask")
        placeholder_entity_mask = kwargs.get("placeholder_entity_mask")
        entities = encoded.entity_last_hidden_state
        if entity_attention_mask is None:
            entity_attention_mask = torch.ones(entities.shape[:2], dtype=torch.long, device=entities.device)
        adjacency = relation_adjacency(
            self.config,
            entity_attention_mask,
            placeholder_entity_mask,
            kwargs.get("entity_string_ids"),
            kwargs.get("entity_sentence_ids"),
        )
        question, question_mask = question_states(encoded.last_hidden_state, global_attention_mask, attention_mask)
        return LukeGraphModelOutput(
            last_hidden_state=encoded.last_hidden_state,
            entity_last_hidden_state=self.graph(entities, adjacency, question, question_mask),
            pooler_output=encoded.pooler_output,
            hidden_states=encoded.hidden_states,
            entity_hidden_states=encoded.entity_hidden_states,
            attentions=encoded.attentions,
            encoder_entity_last_hidden_state=entities,
        )


class LukeGraphForEntitySpanQA(LukeGraphPreTrainedModel, GesaForEntitySpanQA):
    """ReCoRD with LUKE-Graph: GESA's head (paper 3.5, Eq. 2) on the graph network's entity states."""

    base_model_class = LukeGraphModel


LukeGraphConfig.register_for_auto_class()
LukeGraphModel.register_for_auto_class("AutoModel")
LukeGraphForEntitySpanQA.register_for_auto_class("AutoModelForQuestionAnswering")

__all__ = [
    "LukeGraphAttentionLayer",
    "LukeGraphForEntitySpanQA",
    "LukeGraphModel",
    "LukeGraphModelOutput",
    "LukeGraphNetwork",
    "LukeGraphPreTrainedModel",
    "LukeGraphQuestionGate",
    "LukeGraphRelationalLayer",
    "question_states",
    "relation_adjacency",
]

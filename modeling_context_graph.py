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
"""The context-graph GNN for multiple-choice multi-hop QA (Acton 2023, "From GNNs to Sparse Transformers", ch. 3).

Read top to bottom as the thesis's pipeline (figure 3.2), on a batch of graphs flattened into one node set:

1. token embedding (3.2.1, eqs. 3.1-3.3): the word encoder run on every text separately (the query, each document,
   each candidate): `(T, L)` token ids -> `(T, L, f)`; by default LUKE's encoder exactly as pre-trained (absolute
   positions and all, `token_embedder="luke"`) and frozen, as the thesis's GloVe / BERT;
2. co-attention (3.2.2, algorithm 2, eq. 3.7): each node's token span `X_t` plus the context type embedding,
   concatenated with its query's tokens plus the query type embedding, through a Transformer encoder `Trans_c`;
   the first `l_t` outputs are kept;
3. summariser (3.2.3, eqs. 3.8/3.9) `Trans_s`, or the switch-summariser (3.2.4, eq. 3.10)
   `Trans_r(X) + Trans_g(LayerNorm(X + T^r))`; the first output is the node's initial state `h^1`;
4. GNN encoding (3.3): `gnn_num_layers` layers (one shared weight set, or one each; 0: no GNN), each a core (message
   and aggregation, 3.3.1: Switch, Edge, SAGE, GAT, SDP) and an update function (3.3.2: `Gate(TUF(asymmetry))`),
   computed over the edge list (`index_add`, linear in edges) or over `(N, N)` matrices (`gnn_message_passing`);
5. output (3.4, eq. 2.62): `score_c = MLP_c(h_c) + max_{e in E_c} MLP_e(h_e)`, two-layer tanh MLPs of width f/2
   (eq. 2.63), softmax over the query's candidates and cross-entropy.

Inputs (what `processing_context_graph.ContextGraphCollator` builds; `T` texts, `N` nodes, `M` directed edges, `B`
graphs, `C` most candidates of a graph): `input_ids`, `attention_mask` `(T, L)`; `query_text` `(B,)` the text row of
each graph's query; `node_text`, `node_start`, `node_end` (token span, exclusive end), `node_type`, `node_graph`,
`entity_candidate` (the candidate an entity node mentions, -1 otherwise) `(N,)`; `edge_index` `(2, M)` (sender,
receiver) and `edge_type` `(M,)`; `candidate_nodes` `(B, C)` (-1: padding); `labels` `(B,)` the answer's candidate
index (-100: unlabelled).

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.utils import ModelOutput, can_return_tuple

from .checks_gesa import IGNORE_INDEX
from .configuration_context_graph import NUM_EDGE_KINDS, NUM_NODE_TYPES, ContextGraphConfig
from .loading_gesa import PipelineSpec
from .modeling_candidate_output import Scorer, candidate_choice_loss, candidate_scores
from .modeling_gesa import GesaModel, GesaPreTrainedModel

# the pipeline task of every context-graph checkpoint: `pipeline(model=dir, trust_remote_code=True)`
CONTEXT_GRAPH_TASK = "context-graph-multiple-choice"


@dataclass
class ContextGraphOutput(ModelOutput):
    """
    Args:
        loss: softmax cross-entropy over each graph's candidates, mean over labelled graphs.
        logits: `(B, C)` candidate scores (eq. 2.62); padded candidate slots hold `finfo.min`.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None


def transformer_encoder(config: ContextGraphConfig, layers: int) -> nn.TransformerEncoder:
    """A standard Transformer encoder of model dimension `hidden_size`: PyTorch's, as the thesis's (its ReLU; the
    feed-forward width is the word encoder's `intermediate_size`)."""
    layer = nn.TransformerEncoderLayer(
        config.hidden_size,
        config.summariser_num_heads,
        dim_feedforward=config.intermediate_size,
        dropout=config.graph_dropout,
        activation="relu",
        batch_first=True,
    )
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


# ---------------------------------------------------------------------------------------------
# 3.2 Graph embedding: co-attention with type embeddings, then the (switch-)summariser
# ---------------------------------------------------------------------------------------------


class ContextGraphEmbedding(nn.Module):
    """Token states -> one query-aware vector per node (algorithm 2, eqs. 3.5-3.10)."""

    def __init__(self, config: ContextGraphConfig) -> None:
        super().__init__()
        self.max_span_length = config.max_span_length
        self.type_embeddings = nn.Embedding(2, config.hidden_size)  # 'context', 'query' (eq. 3.7)
        self.coattention = transformer_encoder(config, config.coattention_layers)
        self.summariser = transformer_encoder(config, config.summariser_layers)  # Trans_s, or Trans_g of eq. 3.10
        self.switch = config.summariser == "switch"
        if self.switch:
            self.type_summarisers = nn.ModuleList(
                transformer_encoder(config, config.summariser_layers) for _ in range(NUM_NODE_TYPES)
            )
            self.node_type_embeddings = nn.Embedding(NUM_NODE_TYPES, config.hidden_size)  # t^r of eq. 3.10
            self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(
        self,
        token_states: torch.Tensor,
        attention_mask: torch.Tensor,
        query_text: torch.Tensor,
        node_text: torch.Tensor,
        node_start: torch.Tensor,
        node_end: torch.Tensor,
        node_type: torch.Tensor,
        node_graph: torch.Tensor,
    ) -> torch.Tensor:
        """`token_states` `(T, L, f)` -> node states `(N, f)`; each node type in its own call (a document's span is
        long, a mention's short: padding every span to the longest would multiply the co-attention's cost)."""
        query_length = int(attention_mask[query_text].sum(dim=1).max())
        out = token_states.new_zeros(node_text.size(0), token_states.size(-1))
        for kind in range(NUM_NODE_TYPES):
            rows = (node_type == kind).nonzero().squeeze(1)
            if len(rows):
                query_rows = query_text[node_graph[rows]]
                query = token_states[query_rows, :query_length]  # X_q: (n, Lq, f)
                query_mask = attention_mask[query_rows, :query_length].bool()
                states = self.embed_nodes(token_states, node_text[rows], node_start[rows], node_end[rows], query,
                                          query_mask, kind)  # fmt: skip
                out = out.index_copy(0, rows, states)
        return out

    def embed_nodes(
        self,
        token_states: torch.Tensor,
        node_text: torch.Tensor,
        node_start: torch.Tensor,
        node_end: torch.Tensor,
        query: torch.Tensor,
        query_mask: torch.Tensor,
        kind: int,
    ) -> torch.Tensor:
        """Algorithm 2 for `n` nodes of type `kind`: their spans and their queries `(n, Lq, f)` -> `(n, f)`."""
        lengths = (node_end - node_start).clamp(min=1, max=self.max_span_length)
        span = int(lengths.max())
        offsets = torch.arange(span, device=token_states.device)
        positions = (node_start[:, None] + offsets).clamp(max=token_states.size(1) - 1)
        span_mask = offsets[None, :] < lengths[:, None]  # (n, S)
        spans = token_states[node_text[:, None], positions]  # X_t: (n, S, f)
        types = self.type_embeddings.weight
        joint = torch.cat([spans + types[0], query + types[1]], dim=1)  # Concat_s(X_t + T_c, X_q + T_q)
        joint_mask = torch.cat([span_mask, query_mask], dim=1)
        attended = self.coattention(joint, src_key_padding_mask=~joint_mask)[:, :span]  # Y_t = Y_tq[1 : l_t]
        if not self.switch:
            return self.summariser(attended, src_key_padding_mask=~span_mask)[:, 0]  # h^1 = Trans_s(Y_t)[1]
        # eq. 3.10: ST(X, r) = Trans_r(X) + Trans_g(LayerNorm(X + T^r))
        typed = self.norm(attended + self.node_type_embeddings.weight[kind])
        summary = self.summariser(typed, src_key_padding_mask=~span_mask)
        specific = self.type_summarisers[kind](attended, src_key_padding_mask=~span_mask)
        return (summary + specific)[:, 0]


# ---------------------------------------------------------------------------------------------
# 3.3.1 GNN cores: message and aggregation, over an edge list (sparse) or (N, N) matrices (dense)
# ---------------------------------------------------------------------------------------------


def segment_softmax(scores: torch.Tensor, receivers: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Softmax of `(M, H)` edge scores over the edges of each receiver (`softmax_j` of eqs. 2.16 / 2.28)."""
    heads = scores.size(1)
    index = receivers[:, None].expand(-1, heads)
    maximum = scores.new_full((num_nodes, heads), float("-inf")).scatter_reduce(
        0, index, scores, reduce="amax", include_self=False
    )
    weights = (scores - maximum[receivers]).exp()
    total = weights.new_zeros(num_nodes, heads).index_add(0, receivers, weights)
    return weights / total[receivers]


def dense_softmax(scores: torch.Tensor, adjacency: torch.Tensor) -> torch.Tensor:
    """Softmax of `(H, N, N)` scores over each row's edges (`adjacency` `(N, N)` bool); rows without one get 0."""
    weights = scores.masked_fill(~adjacency, float("-inf")).softmax(dim=-1)
    return weights.nan_to_num(0.0)


class GnnCore(nn.Module):
    """One of thesis 3.3.1's cores: `A_i = sum_j omega(phi(h_i, h_j, E), h_i, h_j)` for the in-node `i`.

    `forward(states, senders, receivers, kinds)` over the edge list (`j -> i` per edge) or `dense(states, kinds)`
    over the `(N, N)` kind matrix (`kinds[i, j]` the edge type of `j -> i`, -1: no edge); both give `A` `(N, f)`.

    The GAT-Core is the one the thesis ran (4.1, footnote 10: PyTorch Geometric's `GATConv` with edge features):
    every node its own neighbour (2.5.2.2: "i in N(i)"; the self-loop's edge feature the mean of the node's incoming
    ones, `GATConv`'s `fill_value="mean"`), `gnn_num_heads` heads each of full width f (`W_v` maps f -> H f), the
    edge-type embedding in the attention logits (`a_e . W_e V_ij`, `GATConv`'s `edge_dim` form), and the heads joined
    by `W_m` (eq. 2.33). The SDP-Core is PyTorch's multi-head attention (4.1): heads split f, an output projection.
    """

    def __init__(self, config: ContextGraphConfig) -> None:
        super().__init__()
        self.core = config.gnn_core
        size = config.hidden_size
        self.num_heads = config.gnn_num_heads if self.core in ("gat", "sdp") else 1
        # GAT: full-width heads (eq. 2.33); SDP: the Transformer's split heads
        self.head_size = size if self.core == "gat" else size // self.num_heads
        self.sage_mean = config.gnn_sage_aggregation == "mean"
        # table 5.18: each edge type read in each direction has its own embedding (types K..2K-1: backwards)
        self.num_kinds = num_kinds = NUM_EDGE_KINDS * (2 if config.gnn_directed_edge_types else 1)
        # the SDP-Core's edge embeddings: K-type (eq. 3.18, in the keys), V-type (in the messages) or both (table 5.11)
        self.key_edges = self.core == "sdp" and "k" in config.gnn_sdp_edge_embeddings
        self.value_edges = self.core in ("edge", "sage") or (
            self.core == "sdp" and "v" in config.gnn_sdp_edge_embeddings
        )
        if self.core == "switch":  # eq. 2.40: one W^r per edge type
            self.relation_weights = nn.Parameter(torch.empty(num_kinds, size, size))
            nn.init.normal_(self.relation_weights, std=config.initializer_range)
        if self.core in ("edge", "sdp"):
            self.value = nn.Linear(size, size)  # W_v
        if self.value_edges or self.core == "gat":  # V-type (eq. 3.11); GAT: the edge feature of its logits
            self.edge_embeddings = nn.Embedding(num_kinds, size)
        if self.key_edges:  # K-type (eq. 3.18)
            self.key_edge_embeddings = nn.Embedding(num_kinds, size)
        if self.core == "gat":
            width = self.num_heads * size
            self.value = nn.Linear(size, width, bias=False)  # W_v of eqs. 2.27 / 2.29, one f-wide block per head
            self.edge_projection = nn.Linear(size, width, bias=False)  # W_e: GATConv's lin_edge
            # W_a of eq. 2.27 split into its receiver, sender and edge parts (GATConv's att_dst, att_src, att_edge)
            self.attention = nn.Parameter(torch.empty(3, self.num_heads, size))
            nn.init.normal_(self.attention, std=config.initializer_range)
            self.output = nn.Linear(width, size)  # W_m of eq. 2.33
        if self.core == "sdp":
            self.query = nn.Linear(size, size)
            self.key = nn.Linear(size, size)
            self.output = nn.Linear(size, size)  # the output projection of PyTorch's multi-head attention

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(*x.shape[:-1], self.num_heads, self.head_size)

    def gat_edge_scores(self) -> torch.Tensor:
        """`a_e . W_e V_k` for every edge type `k`: `(K, H)` (the edge part of eq. 2.27's logit, linear in `V`)."""
        edges = self._heads(self.edge_projection(self.edge_embeddings.weight))  # (K, H, f)
        return (edges * self.attention[2]).sum(-1)

    def forward(
        self, states: torch.Tensor, senders: torch.Tensor, receivers: torch.Tensor, kinds: torch.Tensor
    ) -> torch.Tensor:
        """Sparse message passing: `(N, f)` states and `M` directed edges -> `A` `(N, f)`; memory linear in `M`."""
        num_nodes = states.size(0)
        degree = states.new_zeros(num_nodes).index_add(0, receivers, torch.ones_like(receivers, dtype=states.dtype))
        per_node = degree.clamp(min=1)[:, None]  # |N(i)|; a node without neighbours gets A = 0
        if self.core == "switch":
            # eqs. 2.40/2.41: W^r h_j / |E_i^r|, summed, / |N(i)|
            slots = receivers * self.num_kinds + kinds
            per_kind = states.new_zeros(num_nodes * self.num_kinds).index_add(
                0, slots, torch.ones_like(receivers, dtype=states.dtype)
            )
            transformed = torch.einsum("nf,kfg->kng", states, self.relation_weights)
            messages = transformed[kinds, senders] / per_kind[slots][:, None]
            return states.new_zeros(states.shape).index_add(0, receivers, messages) / per_node
        if self.core in ("edge", "sage"):
            # eqs. 3.12/3.13 (W_v h_j + V_ij, mean) and 3.14/3.15 (h_j + V_ij, summed; or the mean)
            sent = self.value(states) if self.core == "edge" else states
            messages = sent[senders] + self.edge_embeddings(kinds)
            total = states.new_zeros(states.shape).index_add(0, receivers, messages)
            return total if self.core == "sage" and not self.sage_mean else total / per_node
        values = self._heads(self.value(states))  # (N, H, d)
        if self.core == "gat":
            # eqs. 3.16/3.17 with 2.27/2.28 over N(i) and i itself: alpha = softmax_j LeakyReLU(a_r . W_v h_i +
            # a_s . W_v h_j + a_e . W_e V_ij); the self-loop's V is the mean of i's incoming V (linear: so is its term)
            kind_scores = self.gat_edge_scores()  # (K, H)
            edge_term = kind_scores[kinds]  # (M, H)
            self_term = states.new_zeros(num_nodes, self.num_heads).index_add(0, receivers, edge_term) / per_node
            nodes = torch.arange(num_nodes, device=states.device)
            senders, receivers = torch.cat([senders, nodes]), torch.cat([receivers, nodes])
            own = (values * self.attention[0]).sum(-1)
            other = (values * self.attention[1]).sum(-1)
            scores = F.leaky_relu(own[receivers] + other[senders] + torch.cat([edge_term, self_term]), 0.2)
            messages = values[senders]  # eq. 2.29: W_v h_j (GATConv: the edge feature enters the logits only)
        else:
            # eqs. 3.19/3.20 with 2.15/2.16: alpha = softmax_j (W_q h_i) . (W_k h_j + K_ij) / sqrt(d)
            queries = self._heads(self.query(states))
            keys = self._heads(self.key(states))[senders]
            if self.key_edges:
                keys = keys + self._heads(self.key_edge_embeddings(kinds))
            scores = (queries[receivers] * keys).sum(-1) / self.head_size**0.5
            messages = values[senders]
            if self.value_edges:  # eq. 2.17's V_ij
                messages = messages + self._heads(self.edge_embeddings(kinds))
        weights = segment_softmax(scores, receivers, num_nodes)
        out = values.new_zeros(values.shape).index_add(0, receivers, weights[..., None] * messages)
        if self.core == "sdp":  # a node without in-edges gets A = 0, as under the other cores
            return self.output(out.reshape(num_nodes, -1)) * (degree > 0)[:, None]
        return self.output(out.reshape(num_nodes, -1))  # eq. 2.33: concatenated heads, W_m

    def dense(self, states: torch.Tensor, kinds: torch.Tensor) -> torch.Tensor:
        """Dense message passing: `(N, f)` states and the `(N, N)` edge-type matrix -> `A` `(N, f)`; the edge
        embeddings are the thesis's `(N, N, f)` tensors (eqs. 3.11, 3.18), so memory grows with `N^2`."""
        adjacency = kinds >= 0
        onehot = F.one_hot(kinds.clamp(min=0), self.num_kinds).to(states.dtype) * adjacency[..., None]  # (N, N, K)
        degree = adjacency.sum(dim=1, keepdim=True).to(states.dtype)
        per_node = degree.clamp(min=1)
        if self.core == "switch":
            per_kind = onehot.sum(dim=1).clamp(min=1)  # |E_i^r|: (N, K)
            transformed = torch.einsum("nf,kfg->kng", states, self.relation_weights)
            return torch.einsum("ijk,ik,kjg->ig", onehot, 1.0 / per_kind, transformed) / per_node
        if self.core in ("edge", "sage"):
            sent = self.value(states) if self.core == "edge" else states
            embedded = self.edge_embeddings(kinds.clamp(min=0)) * adjacency[..., None]  # V: (N, N, f)
            total = adjacency.to(states.dtype) @ sent + embedded.sum(dim=1)
            return total if self.core == "sage" and not self.sage_mean else total / per_node
        values = self._heads(self.value(states))  # (N, H, d)
        if self.core == "gat":
            edge_term = torch.einsum("ijk,kh->hij", onehot, self.gat_edge_scores())  # (H, N, N)
            self_term = edge_term.sum(dim=2) / per_node.T  # (H, N): the mean incoming edge term
            eye = torch.eye(states.size(0), dtype=torch.bool, device=states.device)
            edge_term = torch.where(eye, self_term[:, :, None], edge_term)
            own = (values * self.attention[0]).sum(-1)  # (N, H)
            other = (values * self.attention[1]).sum(-1)
            scores = F.leaky_relu(own.T[:, :, None] + other.T[:, None, :] + edge_term, 0.2)  # (H, N, N)
            weights = dense_softmax(scores, adjacency | eye)
            out = torch.einsum("hij,jhd->ihd", weights, values)
            return self.output(out.reshape(states.size(0), -1))
        queries = self._heads(self.query(states))
        keys = self._heads(self.key(states))
        scores = torch.einsum("ihd,jhd->hij", queries, keys)
        if self.key_edges:
            key_heads = self._heads(self.key_edge_embeddings(kinds.clamp(min=0)))  # K: (N, N, H, d)
            scores = scores + torch.einsum("ihd,ijhd->hij", queries, key_heads)
        weights = dense_softmax(scores / self.head_size**0.5, adjacency)
        out = torch.einsum("hij,jhd->ihd", weights, values)
        if self.value_edges:
            edge_heads = self._heads(self.edge_embeddings(kinds.clamp(min=0)))  # V: (N, N, H, d)
            out = out + torch.einsum("hij,ijhd->ihd", weights, edge_heads)
        return self.output(out.reshape(states.size(0), -1)) * (degree > 0)


# ---------------------------------------------------------------------------------------------
# 3.3.2 Update functions: Gate(TUF(asymmetry)), each part optional
# ---------------------------------------------------------------------------------------------


UPDATE_PARTS = ("asymmetry", "tuf", "gate")
LAYER_PARTS = ("core", *UPDATE_PARTS)


class GnnUpdate(nn.Module):
    """`gamma(h_i, A_i)`: the innermost asymmetry (none: `A`; MLP, eq. 3.23: `A + W_4 h`; SAGE, eq. 3.22:
    `[h ; A] W_3`), then the TUF (eq. 2.11: `Norm(X' + MLP(X'))`, `X' = Norm(h + .)`), then the Gate (eq. 2.37:
    `tanh(u) g + h (1 - g)`, `u = h W_u + .`, `g = sigmoid([h ; u] W_g)`), composed as eq. 3.27; sigma (eq. 3.21) only
    when neither TUF nor Gate ends the update (3.3.2.6 removes the intermediate activations).

    `parts`: the parts whose weights this module holds; the others are read from `shared` (table 5.13's weight
    sharing of single components across layers)."""

    def __init__(self, config: ContextGraphConfig, parts: tuple[str, ...] = UPDATE_PARTS) -> None:
        super().__init__()
        size = config.hidden_size
        self.asymmetry, self.tuf, self.gate = config.gnn_asymmetry, config.gnn_tuf, config.gnn_gate
        self.parts = tuple(parts)
        self.activation = ACT2FN[config.gnn_activation]
        if "asymmetry" in parts and self.asymmetry == "mlp":
            self.own = nn.Linear(size, size)  # W_4
        elif "asymmetry" in parts and self.asymmetry == "sage":
            self.combine = nn.Linear(2 * size, size)  # W_3
        if "tuf" in parts and self.tuf:
            self.tuf_norm = nn.LayerNorm(size, eps=config.layer_norm_eps)
            self.tuf_mlp = nn.Sequential(  # MLP_l of eq. 2.13: one ReLU hidden layer (width: intermediate_size)
                nn.Linear(size, config.intermediate_size), nn.ReLU(), nn.Linear(config.intermediate_size, size)
            )
            self.tuf_out_norm = nn.LayerNorm(size, eps=config.layer_norm_eps)
        if "gate" in parts and self.gate:
            self.gate_input = nn.Linear(size, size)  # W_u
            self.gate_weights = nn.Linear(2 * size, size)  # W_g

    def forward(self, states: torch.Tensor, aggregated: torch.Tensor, shared: GnnUpdate | None = None) -> torch.Tensor:
        asymmetry, tuf, gate = (self if part in self.parts else shared for part in UPDATE_PARTS)
        x = aggregated
        if self.asymmetry == "mlp":
            x = x + asymmetry.own(states)
        elif self.asymmetry == "sage":
            x = asymmetry.combine(torch.cat([states, x], dim=-1))
        if self.tuf:
            mixed = tuf.tuf_norm(states + x)
            x = tuf.tuf_out_norm(mixed + tuf.tuf_mlp(mixed))
        if self.gate:
            u = gate.gate_input(states) + x
            g = torch.sigmoid(gate.gate_weights(torch.cat([states, u], dim=-1)))
            return torch.tanh(u) * g + states * (1 - g)
        return x if self.tuf else self.activation(x)


class GnnLayer(nn.Module):
    """One GNN layer: core, then update; `parts` it holds itself, the others read from `shared` (a layer of the
    parts every layer shares)."""

    def __init__(self, config: ContextGraphConfig, parts: tuple[str, ...] = LAYER_PARTS) -> None:
        super().__init__()
        self.core = GnnCore(config) if "core" in parts else None
        self.update = GnnUpdate(config, tuple(part for part in parts if part in UPDATE_PARTS))
        self.dropout = nn.Dropout(config.graph_dropout)
        self.edge_types = config.gnn_edge_types
        self.directed = config.gnn_directed_edge_types

    def forward(
        self,
        states: torch.Tensor,
        edge_index: torch.Tensor,
        edge_type: torch.Tensor,
        kind_matrix: torch.Tensor | None,
        shared: GnnLayer | None = None,
    ) -> torch.Tensor:
        core = self.core if self.core is not None else shared.core
        if not self.edge_types:  # structure only: every edge one type
            edge_type = torch.zeros_like(edge_type)
            kind_matrix = None if kind_matrix is None else kind_matrix.clamp(max=0)
        if self.directed:  # an edge read from a later node to an earlier one is a type of its own (K + type)
            edge_type = edge_type + NUM_EDGE_KINDS * (edge_index[0] > edge_index[1]).long()
            if kind_matrix is not None:
                later = torch.ones_like(kind_matrix, dtype=torch.bool).triu(diagonal=1)  # [receiver i, sender j > i]
                kind_matrix = torch.where(kind_matrix >= 0, kind_matrix + NUM_EDGE_KINDS * later.long(), kind_matrix)
        if kind_matrix is not None:
            aggregated = core.dense(states, kind_matrix)
        else:
            aggregated = core(states, edge_index[0], edge_index[1], edge_type)
        return self.update(states, self.dropout(aggregated), None if shared is None else shared.update)


def kind_matrix_of(edge_index: torch.Tensor, edge_type: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """The `(N, N)` edge-type matrix of the dense path: `[receiver, sender]` = type, -1 where no edge."""
    kinds = edge_type.new_full((num_nodes, num_nodes), -1)
    kinds[edge_index[1], edge_index[0]] = edge_type
    return kinds


def shared_parts(config: ContextGraphConfig) -> tuple[str, ...]:
    """The layer parts one weight set serves at every layer: all (`gnn_share_weights`), or the core (with the
    innermost asymmetry), the gate and the TUF each by its own switch (table 5.13)."""
    if config.gnn_share_weights:
        return LAYER_PARTS
    switches = {"core": config.gnn_share_core, "asymmetry": config.gnn_share_core, "tuf": config.gnn_share_tuf,
                "gate": config.gnn_share_gate}  # fmt: skip
    return tuple(part for part in LAYER_PARTS if switches[part])


class ContextGraphEncoder(nn.Module):
    """`gnn_num_layers` GNN layers (3.3): one weight set applied at every layer (`gnn_share_weights`), one each, or
    some parts shared (`shared_layer`) and the others per layer."""

    def __init__(self, config: ContextGraphConfig) -> None:
        super().__init__()
        self.num_layers = config.gnn_num_layers
        shared = shared_parts(config)
        if self.num_layers == 0:  # no GNN: the summarised nodes are scored as they are
            self.layers = nn.ModuleList()
            self.shared_layer = None
        elif shared == LAYER_PARTS:
            self.layers = nn.ModuleList([GnnLayer(config)])
            self.shared_layer = None
        else:
            own = tuple(part for part in LAYER_PARTS if part not in shared)
            self.layers = nn.ModuleList(GnnLayer(config, own) for _ in range(config.gnn_num_layers))
            self.shared_layer = GnnLayer(config, shared) if shared else None
        self.dense = config.gnn_message_passing == "dense"

    def forward(self, states: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor) -> torch.Tensor:
        kinds = kind_matrix_of(edge_index, edge_type, states.size(0)) if self.dense else None
        for index in range(self.num_layers):
            layer = self.layers[index % len(self.layers)]
            states = layer(states, edge_index, edge_type, kinds, self.shared_layer)
        return states


def glorot_(tensor: torch.Tensor) -> None:
    """PyTorch Geometric's `glorot`: uniform in +-sqrt(6 / (the sizes of the last two axes))."""
    bound = (6.0 / (tensor.size(-2) + tensor.size(-1))) ** 0.5
    init.uniform_(tensor, -bound, bound)


def draw_as_pytorch(module: nn.Module) -> None:
    """Draw one graph module's own weights as the thesis's modules draw themselves when built (4.1): `nn.Linear`,
    `nn.Embedding`, `nn.LayerNorm`, `nn.MultiheadAttention` by their `reset_parameters`; a `GnnCore` (drawn after its
    children) as PyTorch Geometric draws what its `GATConv` (`lin`, `lin_edge`, the attention vectors) and `RGCNConv`
    (the relation weights) hold: Glorot. Through transformers' guarded init functions, so loaded weights stay."""
    if isinstance(module, nn.MultiheadAttention):
        module._reset_parameters()
    elif isinstance(module, (nn.Linear, nn.Embedding, nn.LayerNorm)):
        module.reset_parameters()
    elif isinstance(module, GnnCore):
        if hasattr(module, "relation_weights"):
            glorot_(module.relation_weights)
        if module.core == "gat":
            for weight in (module.value.weight, module.edge_projection.weight, module.attention):
                glorot_(weight)


# 3.4 Output: eq. 2.62 (`Scorer`, `candidate_scores`) is `modeling_candidate_output`'s, shared with the WikiHop
# heads of GESA, LUKE and LUKE-Graph.


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


class ContextGraphWordEncoder(GesaModel):
    """The token embedder (3.2.1), words only: LUKE's encoder as pre-trained (`token_embedder="luke"`: the GESA
    `ablation="luke"` preset, equal to `transformers.LukeModel`) or GESA's conversion (`"gesa"`)."""

    config_class = ContextGraphConfig


class ContextGraphForMultipleChoice(GesaPreTrainedModel):
    """Thesis chapter 3's GNN-based multiple-choice QA model (module docstring)."""

    config_class = ContextGraphConfig
    pipeline = PipelineSpec(CONTEXT_GRAPH_TASK, "pipeline_context_graph.ContextGraphPipeline")
    _no_split_modules = ["GesaLayer"]

    def __init__(self, config: ContextGraphConfig) -> None:
        super().__init__(config)
        self.gesa = ContextGraphWordEncoder(config, add_pooling_layer=False)
        self.embedding = ContextGraphEmbedding(config)
        self.encoder = ContextGraphEncoder(config)
        self.candidate_scorer = Scorer(config.hidden_size)  # MLP_c
        self.entity_scorer = Scorer(config.hidden_size)  # MLP_e
        for part in (self.embedding, self.encoder, self.candidate_scorer, self.entity_scorer):
            for module in part.modules():
                module.graph_part = True  # drawn by `config.graph_init` (`_init_weights`)
        self.post_init()
        self.freeze_word_encoder(config.freeze_word_encoder)
        # set by `training.context_graph.FrozenEmbedderEpochs` for the first `freeze_word_encoder_epochs` epochs
        self.word_encoder_held = False

    def _init_weights(self, module: nn.Module) -> None:
        """The word encoder as GESA's; the graph modules (marked `graph_part`) as PyTorch builds them
        (`graph_init="pytorch"`, `draw_as_pytorch`) or N(0, `initializer_range`) (`"normal"`). Loaded weights are never
        redrawn (transformers' guards)."""
        if self.config.graph_init == "pytorch" and getattr(module, "graph_part", False):
            draw_as_pytorch(module)
            return
        super()._init_weights(module)
        if isinstance(module, GnnCore):  # its own parameters (the Linear / Embedding ones are handled above)
            for name in ("relation_weights", "attention"):
                if hasattr(module, name):
                    init.normal_(getattr(module, name), std=self.config.initializer_range)

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> Any:
        """``PreTrainedModel.from_pretrained``, the word encoder frozen again as the config says (loading puts new
        parameters in place, all trainable: parameter counts and optimisers would see a frozen encoder as trained)."""
        loaded = super().from_pretrained(*args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded  # (model, loading_info) with output_loading_info
        model.freeze_word_encoder(model.config.freeze_word_encoder)
        return loaded

    def freeze_word_encoder(self, frozen: bool = True) -> None:
        """Fix the token embedder (the thesis's GloVe) or let it be fine-tuned."""
        self.gesa.requires_grad_(not frozen)

    def embed_tokens(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Eqs. 3.1-3.3: every text through the word encoder on its own: `(T, L)` -> `(T, L, f)`; a fixed embedder
        (frozen, or held for its first epochs) runs in eval mode without gradients."""
        if not (self.config.freeze_word_encoder or self.word_encoder_held):
            return self.gesa(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        training = self.gesa.training
        self.gesa.eval()  # a fixed embedder: no dropout either
        try:
            with torch.no_grad():
                return self.gesa(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        finally:
            self.gesa.train(training)

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor,
        query_text: torch.LongTensor,
        node_text: torch.LongTensor,
        node_start: torch.LongTensor,
        node_end: torch.LongTensor,
        node_type: torch.LongTensor,
        node_graph: torch.LongTensor,
        entity_candidate: torch.LongTensor,
        edge_index: torch.LongTensor,
        edge_type: torch.LongTensor,
        candidate_nodes: torch.LongTensor,
        labels: torch.LongTensor | None = None,
    ) -> ContextGraphOutput:
        """Score each graph's candidates: `logits` `(B, C)`; `labels` `(B,)` gives the loss (shapes: module
        docstring)."""
        check_graph_inputs(node_text, node_start, node_end, edge_index, edge_type, candidate_nodes, input_ids, labels)
        tokens = self.embed_tokens(input_ids, attention_mask)
        states = self.embedding(
            tokens, attention_mask, query_text, node_text, node_start, node_end, node_type, node_graph
        )
        states = self.encoder(states, edge_index, edge_type)
        logits = candidate_scores(
            self.candidate_scorer(states), self.entity_scorer(states), candidate_nodes, node_graph, entity_candidate
        )
        return ContextGraphOutput(loss=candidate_choice_loss(logits, labels), logits=logits)


def check_graph_inputs(
    node_text: torch.Tensor,
    node_start: torch.Tensor,
    node_end: torch.Tensor,
    edge_index: torch.Tensor,
    edge_type: torch.Tensor,
    candidate_nodes: torch.Tensor,
    input_ids: torch.Tensor,
    labels: torch.Tensor | None,
) -> None:
    """One clear error for inputs that would index out of range deep inside the model."""
    num_nodes = node_text.size(0)
    if edge_index.dim() != 2 or edge_index.size(0) != 2 or edge_type.shape != edge_index.shape[1:]:
        raise ValueError(
            f"edge_index must be (2, M) and edge_type (M,), got {tuple(edge_index.shape)} and {tuple(edge_type.shape)};"
            " build the inputs with ContextGraphProcessor"
        )
    if len(edge_type) and (int(edge_type.min()) < 0 or int(edge_type.max()) >= NUM_EDGE_KINDS):
        raise ValueError(f"edge_type must lie in [0, {NUM_EDGE_KINDS}), got {edge_type.min()}..{edge_type.max()}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index names a node outside [0, {num_nodes}): the edges of another batch?")
    if int(node_text.max()) >= input_ids.size(0) or bool((node_end <= node_start).any()):
        raise ValueError("every node needs a text row of input_ids and a non-empty span (node_end > node_start)")
    if bool((candidate_nodes >= num_nodes).any()) or bool((candidate_nodes.max(dim=1).values < 0).any()):
        raise ValueError("candidate_nodes must name nodes of the batch, and every graph needs a candidate")
    if labels is not None:
        count = (candidate_nodes >= 0).sum(dim=1)
        bad = (labels != IGNORE_INDEX) & ((labels < 0) | (labels >= count))
        if bool(bad.any()):
            row = int(bad.nonzero()[0])
            raise ValueError(
                f"labels[{row}] = {int(labels[row])} is not a candidate index of that graph (it has {int(count[row])}); "
                "give the answer's candidate index, or -100 for an unlabelled graph"
            )


ContextGraphConfig.register_for_auto_class()
ContextGraphWordEncoder.register_for_auto_class("AutoModel")
ContextGraphForMultipleChoice.register_for_auto_class("AutoModelForMultipleChoice")

__all__ = [
    "CONTEXT_GRAPH_TASK",
    "ContextGraphEmbedding",
    "ContextGraphEncoder",
    "ContextGraphForMultipleChoice",
    "ContextGraphOutput",
    "ContextGraphWordEncoder",
    "GnnCore",
    "GnnLayer",
    "GnnUpdate",
    "Scorer",
    "candidate_scores",
    "check_graph_inputs",
    "draw_as_pytorch",
    "kind_matrix_of",
    "segment_softmax",
    "shared_parts",
]

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
"""Configuration of LUKE-Graph (Foolad & Kiani, 2023) on this library's LUKE backbone.

LUKE-Graph is LUKE (absolute positions, entity-aware queries, no relative-position labels: GESA's `ablation="luke"`)
followed by a two-layer gated relational graph network over the entity tokens: an R-GCN by default (the released
code's `RGCNConv`), or the relational graph attention the paper names (`graph_layer="rgat"`). Every field of
`GesaConfig` keeps its meaning; the graph adds `graph_num_layers` and `graph_layer`. Documented field by field in
`model_cards/luke_graph.md`.

Flat module: copied next to every saved checkpoint, so it imports only its sibling `configuration_gesa`.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict, validated_field

from .configuration_gesa import GesaConfig, positive

# The edge types of GESA's heterogeneous entity graph (paper 3.2), in the order of the relation axis.
LUKE_GRAPH_RELATIONS = ("plc", "sent", "match")
# The relational layer: "rgcn" (mean over each relation's neighbours, the released code's RGCNConv) or "rgat"
# (attention over them, the "relational graph attention" of the paper's title and abstract)
LUKE_GRAPH_LAYERS = ("rgcn", "rgat")


def graph_layer_name(value: str) -> None:
    if value not in LUKE_GRAPH_LAYERS:
        raise ValueError(f"must be one of {LUKE_GRAPH_LAYERS}, got {value!r}.")


def luke_backbone(value: str | None) -> None:
    # a field check, so it speaks before GesaConfig's preset checks do
    if value != "luke":
        raise ValueError(
            f"LukeGraphConfig.ablation={value!r}: LUKE-Graph's backbone is LUKE, so ablation must be 'luke' "
            "(for GESA's label ablations use GesaConfig)."
        )


@strict
class LukeGraphConfig(GesaConfig):
    r"""LUKE + LUKE-Graph's gated relational graph network over the entity tokens.

    Args:
        graph_num_layers (`int`, defaults to 2):
            Relational graph layers after the encoder, each followed by the question-aware gate (LUKE-Graph: 2).
        graph_layer (`str`, defaults to `"rgcn"`):
            The relational layer. `"rgcn"`: `relu(W_0 h_i + b + sum_r mean_{j in N_r(i)} W_r h_j)`, PyTorch
            Geometric's `RGCNConv` as the released LUKE-Graph code runs it (the default: the code behind the
            published numbers). `"rgat"`: relational graph attention (Busbridge et al., 2019, the RGAT the paper's
            title and abstract name): the mean replaced by attention within each relation, `alpha^r_ij =
            softmax_{j in N_r(i)} LeakyReLU(q^r . W_r h_i + k^r . W_r h_j)`; the rest (root weight, bias, ReLU,
            the gate) unchanged.
        ablation (`str`, defaults to `"luke"`):
            The backbone is LUKE: absolute word and entity positions, no relative-position labels. Other presets are
            refused (they would put GESA's labels under the graph network, which is not LUKE-Graph).

    Validated on construction and on assignment, like every `GesaConfig` (`strict`).
    """

    model_type = "gesa_luke_graph"

    graph_num_layers: int = validated_field(positive, default=2)
    graph_layer: str = validated_field(graph_layer_name, default="rgcn")
    ablation: str | None = validated_field(luke_backbone, default="luke")

    def validate_luke_graph(self) -> None:
        """LUKE-Graph reads its three edge types from GESA's entity graph."""
        switches = self.label_switches
        if not (switches["e2e"] and switches["e2e_graph"]) or switches["single_edge_label"]:
            raise ValueError(
                "LukeGraphConfig.label_switches: LUKE-Graph reads its three edge types from GESA's entity graph, so "
                "e2e and e2e_graph must stay on and single_edge_label off (plc_edges, sent_edges and match_edges may "
                "be switched off to drop that edge type)."
            )


__all__ = ["LUKE_GRAPH_LAYERS", "LUKE_GRAPH_RELATIONS", "LukeGraphConfig"]

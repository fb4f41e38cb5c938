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
"""Tiny configurations and hand-made batches of each variant (KAR, ERNIE, Transformer-XH) on `model_helpers`' tiny
GESA, and the three QA heads with a batch each, for the tests that compare or drive the variants."""

from __future__ import annotations

import torch
from model_helpers import TINY, record_like_batch

from gesa.configuration_variants import ErnieConfig, KarConfig, XhConfig
from gesa.modeling_ernie import ErnieForEntitySpanQA
from gesa.modeling_kar import KarForEntitySpanQA
from gesa.modeling_xh import XhForEntitySpanQA, XhModel
from gesa.processing_xh import XhGraphCollator

# ---------------------------------------------------------------------------------------------
# KnowBERT-KAR
# ---------------------------------------------------------------------------------------------


def kar_config(**overrides) -> KarConfig:
    return KarConfig(**{**TINY, "kar_layer": 1, **overrides})


def kar_batch() -> dict:
    """`record_like_batch` plus KAR candidates: mentions 1-4 of example 0 and 1-2 of example 1 (LUKE's entities)."""
    batch = record_like_batch()
    batch["kar_mention_spans"] = torch.tensor(
        [[[-1, -1], [7, 8], [9, 9], [11, 12], [10, 10]], [[-1, -1], [7, 8], [9, 9], [-1, -1], [-1, -1]]]
    )
    ids = torch.full((2, 5, 3), -1)
    ids[0, 1] = torch.tensor([1, 2, 3])
    ids[0, 2] = torch.tensor([3, -1, -1])
    ids[0, 3] = torch.tensor([0, 2, -1])
    ids[1, 1] = torch.tensor([2, 1, -1])
    batch["kar_candidate_ids"] = ids  # example 0 mention 4 and example 1 mention 2: no candidate -> NULL
    batch["kar_candidate_priors"] = torch.where(ids >= 0, torch.tensor([0.5, 0.3, 0.2]), torch.zeros(()))
    return batch


# ---------------------------------------------------------------------------------------------
# ERNIE
# ---------------------------------------------------------------------------------------------


ENTITY_IDS = torch.tensor([[1, 3, 2], [2, -1, -1]])
POSITIONS = torch.tensor([[7, 9, 11], [7, -1, -1]])  # first word of a mention; example 1 has one entity


def ernie_config(**overrides) -> ErnieConfig:
    return ErnieConfig(**{**TINY, **overrides})


def ernie_batch() -> dict:
    return {**record_like_batch(), "ernie_entity_ids": ENTITY_IDS.clone(), "ernie_entity_positions": POSITIONS.clone()}


# ---------------------------------------------------------------------------------------------
# Transformer-XH
# ---------------------------------------------------------------------------------------------


LAYERS, HOPS = 3, 2


def xh_config(**overrides) -> XhConfig:
    return XhConfig(**{**TINY, "num_hidden_layers": LAYERS, "xh_num_hop_layers": HOPS, **overrides})


def graph_feature(num_nodes: int, lengths: list[int], seed: int, candidates: int = 3) -> dict:
    """A ReCoRD-like graph feature (python lists, as `XhProcessor` emits): per node
    `<s> q [PLC] q </s> </s> d ... </s>` with the placeholder on position 2 and two mentions of graph-wide
    candidates."""
    g = torch.Generator().manual_seed(seed)
    feature = {k: [] for k in ("input_ids", "global_attention_mask", "entity_position_ids", "placeholder_entity_mask")}
    feature.update(entity_string_ids=[], entity_sentence_ids=[])
    for node in range(num_nodes):
        length = max(lengths[node], 10)  # room for <s> q [PLC] q </s> </s> m m ... m </s>
        ids = torch.randint(5, 64, (length,), generator=g).tolist()
        ids[0], ids[4], ids[5], ids[-1] = 0, 2, 2, 2
        feature["input_ids"].append(ids)
        feature["global_attention_mask"].append([1, 2, 2, 2] + [0] * (length - 4))
        strings = torch.randint(0, candidates, (2,), generator=g).tolist()
        feature["entity_position_ids"].append([[2], [6, 7], [length - 2]])
        feature["placeholder_entity_mask"].append([1, 0, 0])
        feature["entity_string_ids"].append([-1, *strings])
        feature["entity_sentence_ids"].append([-1, node, node])
    feature["node_adjacency"] = [[0] * num_nodes for _ in range(num_nodes)]
    feature["labels"] = [float(c == 0) for c in range(candidates)]
    return feature


def collate(features: list[dict]) -> dict:
    return XhGraphCollator(pad_token_id=1, entity_id=2)(features)


def randomise_hops(model: XhModel, std: float = 0.3, seed: int = 0) -> None:
    torch.manual_seed(seed)
    with torch.no_grad():
        for hop in model.hop_layers:
            for parameter in hop.parameters():
                parameter.normal_(std=std)


def node_inputs(batch: dict, g: int, n: int) -> dict:
    """One node of a graph batch as a GESA batch of one, without its padding."""
    length = int(batch["attention_mask"][g, n].sum())
    entities = int(batch["entity_attention_mask"][g, n].sum())
    words = {k: batch[k][g, n, :length][None] for k in ("input_ids", "attention_mask", "global_attention_mask")}
    ents = {
        k: batch[k][g, n, :entities][None]
        for k in ("entity_ids", "entity_attention_mask", "placeholder_entity_mask", "entity_string_ids")
    }
    ents["entity_sentence_ids"] = batch["entity_sentence_ids"][g, n, :entities][None]
    ents["entity_position_ids"] = batch["entity_position_ids"][g, n, :entities][None]
    return {**words, **ents}


GRAPH_KEYS = (
    "input_ids",
    "attention_mask",
    "global_attention_mask",
    "entity_ids",
    "entity_attention_mask",
    "entity_position_ids",
    "placeholder_entity_mask",
    "entity_string_ids",
    "entity_sentence_ids",
    "node_mask",
    "node_adjacency",
)


def model_inputs(batch: dict) -> dict:
    return {k: batch[k] for k in GRAPH_KEYS}


# ---------------------------------------------------------------------------------------------
# The three QA heads, each with a batch that carries labels
# ---------------------------------------------------------------------------------------------


def labels_for(batch: dict) -> torch.Tensor:
    """Entity-span QA labels: the second entity of every example is the answer."""
    labels = torch.zeros(batch["entity_ids"].shape)
    labels[:, 1] = 1
    return labels


def variant_models() -> dict:
    """KAR, ERNIE and Transformer-XH entity-span QA heads (seed 0, hops randomised) with a labelled batch each."""
    torch.manual_seed(0)
    kar = KarForEntitySpanQA(KarConfig(**{**TINY, "kar_layer": 1, "classifier_dropout": 0.0}))
    ernie = ErnieForEntitySpanQA(ErnieConfig(**{**TINY, "ernie_num_fusion_layers": 2, "classifier_dropout": 0.0}))
    xh = XhForEntitySpanQA(xh_config(classifier_dropout=0.0))
    randomise_hops(xh.gesa, std=0.1)
    xh_batch = collate([graph_feature(3, [9, 10, 11], seed=1), graph_feature(2, [12, 10], seed=2)])
    xh_batch["node_adjacency"][0] = 1 - torch.eye(3, dtype=torch.long)
    xh_batch["node_adjacency"][1, 0, 1] = 1
    return {
        "kar": (kar, {**kar_batch(), "labels": labels_for(kar_batch())}),
        "ernie": (ernie, {**ernie_batch(), "labels": labels_for(ernie_batch())}),
        "xh": (xh, xh_batch),
    }

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
"""The one entity graph (paper 3.2): the graph the processor shows (`build_entity_graph`), and the model's e2e labels
(under every switch) both equal a plain loop written from the paper's rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from gesa import GesaConfig
from gesa.processing_gesa import EDGE_MATCH, EDGE_NONE, EDGE_PLC, EDGE_SELF, EDGE_SENT
from gesa.processing_gesa import build_entity_graph as processor_graph
from gesa.structure_gesa import RelativeLabels, build_entity_entity_labels

SWITCHES = ("plc_edges", "sent_edges", "match_edges")


def reference_edge(i, j, placeholder, strings, sentences, on) -> int:
    """Edge of entities i, j by the paper's precedence: self, PLC, SENT, MATCH, none (switched-off kinds skipped)."""
    if i == j:
        return EDGE_SELF
    if on["plc_edges"] and (placeholder[i] or placeholder[j]):
        return EDGE_PLC
    both_in_a_sentence = sentences[i] >= 0 and sentences[j] >= 0
    if on["sent_edges"] and both_in_a_sentence and sentences[i] == sentences[j]:
        return EDGE_SENT
    if on["match_edges"] and both_in_a_sentence and sentences[i] != sentences[j]:
        if strings[i] >= 0 and strings[i] == strings[j]:
            return EDGE_MATCH
    return EDGE_NONE


def random_entities(seed: int, E: int = 7):
    g = torch.Generator().manual_seed(seed)
    placeholder = torch.zeros(E, dtype=torch.bool)
    placeholder[int(torch.randint(E, (1,), generator=g))] = True
    strings = torch.randint(-1, 3, (E,), generator=g)
    sentences = torch.randint(-1, 3, (E,), generator=g)
    real = torch.rand(E, generator=g) > 0.2
    return placeholder, strings, sentences, real


@pytest.mark.parametrize("seed", range(20))
def test_the_processor_graph_follows_the_paper(seed):
    placeholder, strings, sentences, real = random_entities(seed)
    on = dict.fromkeys(SWITCHES, True)
    graph = processor_graph(sentences.tolist(), strings.tolist(), placeholder.long().tolist(), real.long().tolist())
    E = len(strings)
    expected = [
        [
            reference_edge(i, j, placeholder, strings, sentences, on) if real[i] and real[j] else EDGE_NONE
            for j in range(E)
        ]
        for i in range(E)
    ]
    assert isinstance(graph, np.ndarray) and graph.tolist() == expected


@pytest.mark.parametrize("switches", list(itertools.product([True, False], repeat=4)))
def test_the_model_labels_are_the_graph_under_every_switch(switches):
    *kinds, single = switches
    on = dict(zip(SWITCHES, kinds, strict=True))
    config = GesaConfig(hidden_size=16, num_attention_heads=2, label_switches={**on, "single_edge_label": single})
    layout = RelativeLabels(config.max_relative_position)
    label_of = {
        EDGE_NONE: layout.no_edge,
        EDGE_SELF: layout.self_edge,
        EDGE_PLC: layout.any_edge if single else layout.plc_edge,
        EDGE_SENT: layout.any_edge if single else layout.sent_edge,
        EDGE_MATCH: layout.any_edge if single else layout.match_edge,
    }
    batch = [random_entities(seed) for seed in range(4)]
    placeholder, strings, sentences = (torch.stack([b[k] for b in batch]) for k in range(3))
    labels = build_entity_entity_labels(config, placeholder, strings, sentences)
    for b in range(len(batch)):
        E = strings.size(1)
        expected = [
            [label_of[reference_edge(i, j, placeholder[b], strings[b], sentences[b], on)] for j in range(E)]
            for i in range(E)
        ]
        assert labels[b].tolist() == expected

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
"""GESA on WikiHop with the thesis's context graph (Acton 2023, 3.1): document and sentence nodes as entity tokens
on their words, every edge kind of ``graph_context`` its own e2e label, NULL where no edge joins a pair; the merged
mapping (PLC / SENT / MATCH) kept as the ``merged_graph`` preset, equal to the default config and features."""

from __future__ import annotations

import pytest
import torch
from long_helpers import structure_of
from transformers import AutoModelForMultipleChoice, LukeTokenizer
from wikihop_fixtures import velmor_record

from gesa.configuration_gesa import ABLATION_PRESETS, NUM_CONTEXT_EDGE_KINDS, GesaConfig
from gesa.graph_context import DOCUMENT, EDGE_KINDS, ENTITY, GraphRules, build_context_graph
from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
from gesa.processing_wikihop import GRAPH_EDGES, WikihopProcessor
from gesa.structure_gesa import CONTEXT_EDGE_KINDS, RelativeLabels

RECORD = velmor_record("WH_ctx_0")
RICH = {"entity_graph": "context", "sentence_nodes": "all", "co_document_edges": True}


@pytest.fixture(scope="module")
def tokenizer(tiny_luke_dir):
    return LukeTokenizer.from_pretrained(tiny_luke_dir)


def tiny_config(**overrides):
    kwargs = dict(vocab_size=2100, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=37, max_position_embeddings=1100, max_relative_position=8,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attention_window=16)  # fmt: skip
    kwargs.update(overrides)
    return GesaConfig(**kwargs)


def e2e_labels(model, batch):
    """The e2e label ids `(B, E, E)` the model's layers read for `batch`."""
    entity_length = batch["entity_ids"].size(1)
    structure = structure_of(model.gesa, batch)
    return structure.tokens.entity_entity_labels, structure.tokens.entity_word_labels, entity_length


def test_the_edge_kinds_are_one_list_and_size_the_label_table():
    assert EDGE_KINDS is CONTEXT_EDGE_KINDS and NUM_CONTEXT_EDGE_KINDS == len(CONTEXT_EDGE_KINDS)
    merged, context = tiny_config(), tiny_config(entity_graph="context")
    assert context.num_relative_labels == merged.num_relative_labels + len(CONTEXT_EDGE_KINDS)
    layout = RelativeLabels(8)
    assert layout.context_edge(len(CONTEXT_EDGE_KINDS) - 1) < context.num_relative_labels
    model = GesaForEntityMultipleChoice(context)
    assert model.gesa.encoder.layer[0].attention.self.label_embeddings.weight.shape[0] == context.num_relative_labels
    with pytest.raises(Exception, match="entity_graph"):
        tiny_config(entity_graph="thesis")


def test_a_built_feature_gives_every_edge_kind_its_own_label_and_no_label_without_an_edge(tokenizer):
    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, **RICH)
    batch = processor(RECORD, return_tensors="pt")
    model = GesaForEntityMultipleChoice(tiny_config(entity_graph="context")).eval()
    e2e, e2w, E = e2e_labels(model, batch)
    layout = RelativeLabels(8)
    edges = batch[GRAPH_EDGES][0]
    expected = torch.full((E, E), RelativeLabels.NULL)
    for i, j, kind in edges.tolist():
        expected[i, j] = expected[j, i] = layout.context_edge(kind)
    expected.fill_diagonal_(layout.self_edge)
    torch.testing.assert_close(e2e[0], expected)
    kinds = {CONTEXT_EDGE_KINDS[kind] for kind in edges[:, 2].tolist()}
    # rules 1-6 and 9-12 all occur in this record (7, 8 are off by default)
    assert kinds == set(CONTEXT_EDGE_KINDS) - {"complement", "unconnected"}
    labels_of_kind = {
        kind: {int(e2e[0, i, j]) for i, j, k in edges.tolist() if k == kind} for kind in set(edges[:, 2].tolist())
    }
    assert all(len(labels) == 1 for labels in labels_of_kind.values())
    assert len({next(iter(labels)) for labels in labels_of_kind.values()}) == len(labels_of_kind)
    # the query entity joins no edge (the thesis has no query node): NULL to every other entity
    assert (e2e[0, 0, 1:] == RelativeLabels.NULL).all()
    # a document entity is linked to its own words, and only those, by the mention label
    strings = batch["entity_string_ids"][0]
    first_document = int((batch["entity_sentence_ids"][0] == 1).nonzero().flatten()[-1])
    positions = batch["entity_position_ids"][0, first_document]
    positions = positions[positions >= 0]
    linked = (e2w[0, first_document] == layout.mention).nonzero().flatten()
    assert torch.equal(linked, positions) and int(strings[first_document]) not in strings[:first_document].tolist()


def test_the_edges_are_the_context_graph_builders_edges(tokenizer):
    rules = GraphRules(co_document=True, sentences="all")
    graph = build_context_graph(RECORD["supports"], RECORD["candidates"], "velmor", rules)
    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, **RICH)
    features = processor(RECORD)
    edges = features[GRAPH_EDGES][0]
    assert sorted(kind for _, _, kind in edges) == sorted(kind for _, _, kind in graph.edges)
    # entities: the query entity, the candidates, the graph's mention nodes, documents, sentences
    assert len(features["entity_ids"][0]) == 1 + len(graph.nodes)
    assert len(graph.indices(ENTITY)) + len(graph.indices(DOCUMENT)) > 0


def test_the_complement_and_unconnected_switches_put_a_label_on_the_pairs_without_an_edge(tokenizer):
    model = GesaForEntityMultipleChoice(tiny_config(entity_graph="context")).eval()
    layout = RelativeLabels(8)
    for rule, kind in (("complement_edges", "complement"), ("unconnected_edges", "unconnected")):
        processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, entity_graph="context",
                                     **{rule: True})  # fmt: skip
        batch = processor(RECORD, return_tensors="pt")
        e2e, _, E = e2e_labels(model, batch)
        label = layout.context_edge(CONTEXT_EDGE_KINDS.index(kind))
        assert (e2e[0] == label).any()
        if kind == "unconnected":  # a complete graph: every pair of graph nodes has an edge label
            off = ~torch.eye(E - 1, dtype=torch.bool)
            assert (e2e[0, 1:, 1:][off] != RelativeLabels.NULL).all()


def test_the_merged_graph_preset_is_todays_config_features_and_logits(tokenizer):
    assert ABLATION_PRESETS["merged_graph"] == {"entity_graph": "merged"}
    today, preset = tiny_config(), tiny_config(ablation="merged_graph")
    assert {**preset.to_dict(), "ablation": None} == today.to_dict()
    default = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32)
    merged = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, entity_graph=preset.entity_graph)
    assert default.entity_graph == "merged" and default(RECORD) == merged(RECORD)
    assert GRAPH_EDGES not in merged(RECORD)
    torch.manual_seed(0)
    reference = GesaForEntityMultipleChoice(today).eval()
    model = GesaForEntityMultipleChoice(preset).eval()
    model.load_state_dict(reference.state_dict())
    batch = merged(RECORD, return_tensors="pt")
    output, expected = model(**batch), reference(**batch)
    torch.testing.assert_close(output.logits, expected.logits)
    torch.testing.assert_close(output.loss, expected.loss)


def test_a_model_refuses_features_of_the_other_graph(tokenizer):
    context = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, entity_graph="context")
    merged = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32)
    with pytest.raises(
        ValueError, match=r"no entity_graph_edges were given.*WikihopProcessor\(entity_graph='context'\)"
    ):
        GesaForEntityMultipleChoice(tiny_config(entity_graph="context"))(**merged(RECORD, return_tensors="pt"))
    with pytest.raises(ValueError, match=r"entity_graph_edges were given to a model with entity_graph='merged'"):
        GesaForEntityMultipleChoice(tiny_config())(**context(RECORD, return_tensors="pt"))
    batch = context(RECORD, return_tensors="pt")
    batch[GRAPH_EDGES][0, 0, 2] = NUM_CONTEXT_EDGE_KINDS
    with pytest.raises(ValueError, match="entity_graph_edges kinds must be context-graph edge kinds"):
        GesaForEntityMultipleChoice(tiny_config(entity_graph="context"))(**batch)


def test_a_context_graph_model_trains_a_step_and_reloads_with_trust_remote_code(tokenizer, tmp_path):
    torch.manual_seed(0)
    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, **RICH)
    second = {**RECORD, "id": "WH_ctx_1", "candidates": ["spain", "france"], "answer": "spain"}
    batch = processor([RECORD, second], return_tensors="pt")
    model = GesaForEntityMultipleChoice(tiny_config(entity_graph="context"))
    output = model(**batch)
    output.loss.backward()
    rows = model.gesa.encoder.layer[0].attention.self.label_embeddings.weight.grad
    layout = RelativeLabels(8)
    assert rows[layout.context_edge_offset : layout.size].abs().sum(dim=1).gt(0).sum() >= 8
    model.eval().save_pretrained(tmp_path)
    processor.save_pretrained(tmp_path)
    reloaded = AutoModelForMultipleChoice.from_pretrained(tmp_path, trust_remote_code=True).eval()
    assert reloaded.config.entity_graph == "context"
    again = WikihopProcessor.from_pretrained(tmp_path)
    assert again.entity_graph == "context" and again.sentence_nodes == "all"
    torch.testing.assert_close(reloaded(**again([RECORD, second], return_tensors="pt")).logits, model(**batch).logits)


def test_a_context_graph_model_converts_from_luke_with_the_bigger_label_table(tiny_luke_dir, tokenizer):
    model = GesaForEntityMultipleChoice.from_luke_pretrained(tiny_luke_dir, entity_graph="context")
    table = model.gesa.encoder.layer[0].attention.self.label_embeddings.weight
    assert table.shape[0] == model.config.num_relative_labels
    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, entity_graph="context")
    assert torch.isfinite(model(**processor(RECORD, return_tensors="pt")).loss)


@pytest.mark.parametrize(
    ("implementation", "window"),
    [("sdpa", None), ("gesa_fused", None), ("gesa_bias", None), ("gesa_windowed", 8), ("gesa_bias", 8)],
)
def test_every_attention_implementation_reads_the_context_labels_as_eager_does(tokenizer, implementation, window):
    from long_helpers import assert_same, outputs_and_grads

    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, **RICH)
    records = [RECORD, {**RECORD, "id": "WH_ctx_1", "candidates": ["spain", "france"], "answer": "spain"}]
    batch = dict(processor(records, return_tensors="pt"))
    batch = {name: value for name, value in batch.items() if name not in ("labels", "candidate_entity_mask")}
    torch.manual_seed(0)
    model = GesaForEntityMultipleChoice(tiny_config(entity_graph="context", attention_window=window)).gesa
    with torch.no_grad():  # distinct label rows, so a wrong row would show
        for module in model.modules():
            if hasattr(module, "label_embeddings") and module.label_embeddings is not None:
                module.label_embeddings.weight.normal_(0, 0.5)[RelativeLabels.NULL] = 0.0
    expected = outputs_and_grads(model, batch, "eager")
    assert_same(outputs_and_grads(model, batch, implementation), expected, atol=1e-4)

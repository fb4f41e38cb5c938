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
"""LUKE-Graph on GESA's LUKE backbone: the gated relational graph network (R-GCN, or relational graph attention with
`graph_layer="rgat"`) against a plain per-node loop, the graph it reads against the processor's, padding, LUKE
conversion, the attention option trained and reloaded, and the `trust_remote_code` reload.

`run_record.py --variant luke_graph` (training lowers the loss, evaluation, reload) is a case of
tests/test_run_record_variants.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from huggingface_hub.errors import StrictDataclassError
from model_helpers import LUKE_GRAPH_TINY
from transformers import AutoTokenizer, LukeModel
from variant_helpers import gesa_features, reload_in_fresh_process

from gesa import LukeGraphConfig, LukeGraphForEntitySpanQA, LukeGraphModel
from gesa.configuration_luke_graph import LUKE_GRAPH_RELATIONS
from gesa.modeling_luke_graph import (
    LukeGraphAttentionLayer,
    LukeGraphNetwork,
    LukeGraphQuestionGate,
    LukeGraphRelationalLayer,
    relation_adjacency,
)
from gesa.processing_gesa import EDGE_MATCH, EDGE_NONE, EDGE_PLC, EDGE_SELF, EDGE_SENT, build_entity_graph

RELATION_OF_EDGE = {EDGE_PLC: "plc", EDGE_SENT: "sent", EDGE_MATCH: "match"}


# ---------------------------------------------------------------------------------------------
# 1. The relational layer and the gate against the equations, node by node (float64)
# ---------------------------------------------------------------------------------------------


def loop_relational_layer(layer: LukeGraphRelationalLayer, nodes: torch.Tensor, adjacency: torch.Tensor):
    """`h'_i = relu(W_0 h_i + b + sum_r (1 / |N_r(i)|) sum_{j in N_r(i)} W_r h_j)`, one node at a time."""
    batch_size, entity_length, hidden = nodes.shape
    w_root, b_root = layer.root.weight, layer.root.bias
    out = torch.zeros_like(nodes)
    for b in range(batch_size):
        for i in range(entity_length):
            total = w_root @ nodes[b, i] + b_root
            for r in range(len(LUKE_GRAPH_RELATIONS)):
                w_r = layer.relations.weight[r * hidden : (r + 1) * hidden]
                neighbours = [j for j in range(entity_length) if adjacency[b, r, i, j]]
                if neighbours:
                    total = total + sum(w_r @ nodes[b, j] for j in neighbours) / len(neighbours)
            out[b, i] = torch.relu(total)
    return out


def loop_attention_layer(layer: LukeGraphAttentionLayer, nodes: torch.Tensor, adjacency: torch.Tensor):
    """Busbridge et al.'s WIRGAT node by node: `g^r_j = W_r h_j`, `e^r_ij = LeakyReLU(q^r . g^r_i + k^r . g^r_j)`,
    `alpha^r_ij = softmax over j in N_r(i)`, `h'_i = relu(W_0 h_i + b + sum_r sum_j alpha^r_ij g^r_j)`."""
    batch_size, entity_length, hidden = nodes.shape
    out = torch.zeros_like(nodes)
    for b in range(batch_size):
        for i in range(entity_length):
            total = layer.root.weight @ nodes[b, i] + layer.root.bias
            for r in range(len(LUKE_GRAPH_RELATIONS)):
                w_r = layer.relations.weight[r * hidden : (r + 1) * hidden]
                neighbours = [j for j in range(entity_length) if adjacency[b, r, i, j]]
                if not neighbours:
                    continue
                g_i = w_r @ nodes[b, i]
                logits = torch.stack([torch.nn.functional.leaky_relu(layer.attention[0, r] @ g_i
                                                                     + layer.attention[1, r] @ (w_r @ nodes[b, j]), 0.2)
                                      for j in neighbours])  # fmt: skip
                weights = logits.softmax(dim=0)
                total = total + sum(w * (w_r @ nodes[b, j]) for w, j in zip(weights, neighbours, strict=True))
            out[b, i] = torch.relu(total)
    return out


def loop_gate(gate: LukeGraphQuestionGate, nodes: torch.Tensor, question: torch.Tensor, question_mask: torch.Tensor):
    """`q~_i = sum_t sigmoid(W_s [h_i ; q_t] + b_s) * q_t`, `a_i = sigmoid(W_a [h_i ; q~_i] + b_a)`,
    `h_i <- a_i * tanh(q~_i) + (1 - a_i) * h_i`, one node (and question token) at a time."""
    out = torch.zeros_like(nodes)
    for b in range(nodes.size(0)):
        for i in range(nodes.size(1)):
            h = nodes[b, i]
            summary = torch.zeros_like(h)
            for t in range(question.size(1)):
                if question_mask[b, t]:
                    weights = torch.sigmoid(gate.question_attention(torch.cat([h, question[b, t]])))
                    summary = summary + weights * question[b, t]
            alpha = torch.sigmoid(gate.gate(torch.cat([h, summary])))
            out[b, i] = alpha * torch.tanh(summary) + (1 - alpha) * h
    return out


def random_graph(
    seed: int = 0, batch_size: int = 2, entity_length: int = 6, hidden: int = 8, question_length: int = 5
):
    g = torch.Generator().manual_seed(seed)
    nodes = torch.randn(batch_size, entity_length, hidden, generator=g, dtype=torch.float64)
    upper = torch.rand(batch_size, len(LUKE_GRAPH_RELATIONS), entity_length, entity_length, generator=g) < 0.4
    adjacency = torch.triu(upper, diagonal=1)
    adjacency = adjacency | adjacency.transpose(-1, -2)
    adjacency[1, :, 4:, :] = False  # example 1 has 4 real entities
    adjacency[1, :, :, 4:] = False
    question = torch.randn(batch_size, question_length, hidden, generator=g, dtype=torch.float64)
    question_mask = torch.ones(batch_size, question_length, dtype=torch.bool)
    question_mask[1, 3:] = False
    return nodes, adjacency, question, question_mask


def test_relational_layer_and_gate_equal_a_plain_loop_over_nodes():
    config = LukeGraphConfig(**{**LUKE_GRAPH_TINY, "hidden_size": 8, "num_attention_heads": 2})
    torch.manual_seed(0)
    network = LukeGraphNetwork(config).double()
    with torch.no_grad():  # biases nonzero, weights large enough that the sigmoids are not all ~0.5
        for parameter in network.parameters():
            parameter.normal_(0.0, 0.5)
    nodes, adjacency, question, question_mask = random_graph()
    assert adjacency.sum(dim=-1).amax() >= 2 and (adjacency.sum(dim=(1, 3)) == 0).any()  # means, and isolated nodes
    layer, gate = network.layers[0], network.gates[0]
    with torch.no_grad():
        torch.testing.assert_close(
            layer(nodes, adjacency), loop_relational_layer(layer, nodes, adjacency), atol=1e-10, rtol=0
        )
        torch.testing.assert_close(
            gate(nodes, question, question_mask),
            loop_gate(gate, nodes, question, question_mask),
            atol=1e-10,
            rtol=0,
        )
        expected = nodes
        for layer, gate in zip(network.layers, network.gates, strict=True):
            expected = loop_gate(gate, loop_relational_layer(layer, expected, adjacency), question, question_mask)
        torch.testing.assert_close(network(nodes, adjacency, question, question_mask), expected, atol=1e-10, rtol=0)


def test_attention_layer_equals_a_plain_loop_and_is_the_rgcn_with_zero_kernels():
    config = LukeGraphConfig(**{**LUKE_GRAPH_TINY, "hidden_size": 8, "num_attention_heads": 2, "graph_layer": "rgat"})
    torch.manual_seed(0)
    network = LukeGraphNetwork(config).double()
    assert all(isinstance(layer, LukeGraphAttentionLayer) for layer in network.layers)
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.normal_(0.0, 0.5)
    nodes, adjacency, question, question_mask = random_graph()
    layer = network.layers[0]
    with torch.no_grad():
        attended = layer(nodes, adjacency)
        torch.testing.assert_close(attended, loop_attention_layer(layer, nodes, adjacency), atol=1e-10, rtol=0)
        mean = LukeGraphRelationalLayer(config).double()
        mean.load_state_dict({k: v for k, v in layer.state_dict().items() if k != "attention"})
        assert not torch.allclose(attended, mean(nodes, adjacency))  # the attention weighs the neighbours
        layer.attention.zero_()  # equal logits: every neighbour weighs 1 / |N_r(i)|, the R-GCN's mean
        torch.testing.assert_close(layer(nodes, adjacency), mean(nodes, adjacency), atol=1e-10, rtol=0)


# ---------------------------------------------------------------------------------------------
# 2. The graph the model reads is the processor's graph (ReCoRD records)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def record_batch(tiny_luke_dir):
    """Collated GesaProcessor features of the project's ReCoRD sample (windows of 128 tokens), and the processor."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    features, processor = gesa_features(tokenizer, count=3, max_seq_length=128)
    return features, processor


def _tensors(batch) -> dict:
    return {key: value for key, value in batch.items() if isinstance(value, torch.Tensor)}


def test_graph_edges_the_model_reads_equal_the_processor_graph(tiny_luke_dir, record_batch):
    features, processor = record_batch
    batch = _tensors(processor.get_data_collator()(features))
    model = LukeGraphForEntitySpanQA.from_luke_pretrained(tiny_luke_dir).eval()
    model.init_added_word_embeddings(processor.added_token_sources())
    seen = []
    hook = model.gesa.graph.layers[0].register_forward_pre_hook(lambda module, args: seen.append(args[1]))
    with torch.no_grad():
        model(**batch)
    hook.remove()
    (adjacency,) = seen
    assert adjacency.shape == (len(features), 3, *batch["entity_ids"].shape[1:], batch["entity_ids"].shape[1])
    counts = dict.fromkeys(RELATION_OF_EDGE.values(), 0)
    for row, feature in enumerate(features):
        graph = build_entity_graph(
            feature["entity_sentence_ids"],
            feature["entity_string_ids"],
            feature["placeholder_entity_mask"],
        )
        entity_count = len(feature["entity_ids"])
        assert not adjacency[row, :, entity_count:].any() and not adjacency[row, :, :, entity_count:].any()
        for r, name in enumerate(LUKE_GRAPH_RELATIONS):
            expected = np.isin(graph, [edge for edge, relation in RELATION_OF_EDGE.items() if relation == name])
            assert (adjacency[row, r, :entity_count, :entity_count].numpy() == expected).all(), (row, name)
            counts[name] += int(expected.sum())
        # every processor edge but self and none is exactly one relation
        real = adjacency[row, :, :entity_count, :entity_count]
        assert (real.sum(0).numpy() == ~np.isin(graph, [EDGE_SELF, EDGE_NONE])).all()
    assert all(count > 0 for count in counts.values()), counts  # the sample exercises every edge type


# ---------------------------------------------------------------------------------------------
# 3. Batching and padding
# ---------------------------------------------------------------------------------------------


def test_example_alone_equals_example_in_padded_batch(tiny_luke_dir, record_batch):
    features, processor = record_batch
    torch.manual_seed(0)
    model = LukeGraphForEntitySpanQA.from_luke_pretrained(tiny_luke_dir).eval()
    model.init_added_word_embeddings(processor.added_token_sources())
    collator = processor.get_data_collator()
    # differently sized features: different word, question and entity lengths pad each other
    sizes = [
        (len(f["input_ids"]), len(f["entity_ids"]), sum(g == 2 for g in f["global_attention_mask"])) for f in features
    ]
    assert len(set(sizes)) > 1, sizes
    with torch.no_grad():
        together = model(**_tensors(collator(features))).logits
        for row, feature in enumerate(features):
            alone = model(**_tensors(collator([feature]))).logits[0]
            entity_count = len(feature["entity_ids"])
            torch.testing.assert_close(alone, together[row, :entity_count], atol=1e-5, rtol=1e-5)
            assert (together[row, entity_count:] == torch.finfo(together.dtype).min).all()


# ---------------------------------------------------------------------------------------------
# 4. Conversion from LUKE, save and reload with trust_remote_code
# ---------------------------------------------------------------------------------------------


def test_conversion_from_luke_leaves_every_luke_weight_in_place(tmp_path):
    from tiny_luke import build_tiny_luke

    # entity-aware queries that differ from the word query: LUKE-Graph must keep LUKE's own
    luke_dir = build_tiny_luke(tmp_path / "luke", seed=3, tie_entity_queries=False)
    luke = LukeModel.from_pretrained(luke_dir).eval()
    model = LukeGraphModel.from_luke_pretrained(luke_dir).eval()
    state = model.state_dict()
    for key, tensor in luke.state_dict().items():
        target = key.replace(".attention.self.query.", ".attention.self.w2w_query.")
        assert torch.equal(state[target], tensor), key
    assert model.luke_conversion_info["unexpected_keys"] == []
    assert all(key.startswith("graph.") for key in model.luke_conversion_info["missing_keys"])
    # the encoder is LUKE exactly; the graph network changes the entity states
    g = torch.Generator().manual_seed(0)
    inputs = dict(
        input_ids=torch.randint(5, 1000, (1, 12), generator=g),
        entity_ids=torch.full((1, 3), 2),
        entity_position_ids=torch.tensor([[[3, -1], [6, 7], [9, -1]]]),
    )
    with torch.no_grad():
        expected = luke(**inputs)
        actual = model(
            **inputs,
            global_attention_mask=torch.tensor([[1, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0]]),
            placeholder_entity_mask=torch.tensor([[1, 0, 0]]),
        )
    torch.testing.assert_close(actual.last_hidden_state, expected.last_hidden_state, atol=1e-5, rtol=0)
    torch.testing.assert_close(
        actual.encoder_entity_last_hidden_state, expected.entity_last_hidden_state, atol=1e-5, rtol=0
    )
    assert not torch.allclose(actual.entity_last_hidden_state, expected.entity_last_hidden_state)


def test_save_and_reload_with_remote_code_in_fresh_process(tiny_luke_dir, record_batch, tmp_path):
    features, processor = record_batch
    torch.manual_seed(0)
    model = LukeGraphForEntitySpanQA.from_luke_pretrained(tiny_luke_dir).eval()
    model.init_added_word_embeddings(processor.added_token_sources())
    batch = _tensors(processor.get_data_collator()(features))
    with torch.no_grad():
        expected = model(**batch).logits
    out_dir = tmp_path / "luke-graph"
    model.save_pretrained(out_dir)
    saved = json.loads((out_dir / "config.json").read_text())
    assert saved["model_type"] == "gesa_luke_graph" and saved["ablation"] == "luke"
    assert saved["auto_map"] == {
        "AutoConfig": "configuration_luke_graph.LukeGraphConfig",
        "AutoModel": "modeling_luke_graph.LukeGraphModel",
        "AutoModelForQuestionAnswering": "modeling_luke_graph.LukeGraphForEntitySpanQA",
    }
    for name in ("modeling_luke_graph.py", "configuration_luke_graph.py", "modeling_gesa.py", "configuration_gesa.py"):
        assert (out_dir / name).is_file(), name
    reloaded = reload_in_fresh_process(
        out_dir, batch, tmp_path, "AutoModelForQuestionAnswering", "LukeGraphForEntitySpanQA", "LukeGraphModel"
    )
    torch.testing.assert_close(reloaded, expected, atol=1e-5, rtol=0)


def test_the_attention_option_trains_and_reloads(tiny_luke_dir, record_batch, tmp_path):
    """`graph_layer="rgat"` from a LUKE checkpoint: its kernels are drawn (not left empty), a training step moves
    them, and the checkpoint reloads with the attention layer and the same scores."""
    features, processor = record_batch
    torch.manual_seed(0)
    model = LukeGraphForEntitySpanQA.from_luke_pretrained(tiny_luke_dir, graph_layer="rgat")
    model.init_added_word_embeddings(processor.added_token_sources())
    kernels = model.gesa.graph.layers[0].attention
    assert isinstance(model.gesa.graph.layers[0], LukeGraphAttentionLayer)
    assert torch.isfinite(kernels.detach()).all() and 0 < float(kernels.detach().std()) < 1
    batch = _tensors(processor.get_data_collator()(features))
    before = kernels.detach().clone()
    model.train()
    loss = model(**batch).loss
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.5).step()
    assert torch.isfinite(loss) and not torch.equal(kernels.detach(), before)
    model.eval().save_pretrained(tmp_path / "rgat")
    reloaded = LukeGraphForEntitySpanQA.from_pretrained(tmp_path / "rgat").eval()
    assert reloaded.config.graph_layer == "rgat" and isinstance(reloaded.gesa.graph.layers[1], LukeGraphAttentionLayer)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**batch).logits, model(**batch).logits)


def test_the_graph_layer_flag_reaches_a_luke_conversion_and_a_trained_checkpoint_keeps_its_own():
    """`run_record.py` / `run_multihop.py --variant luke_graph --graph_layer rgat`: a config value for a LUKE
    conversion; a trained checkpoint of another layer is refused before any weight loads (its weights are its layer's);
    the other variants refuse the flag (tests/test_script_flags.py)."""
    from types import SimpleNamespace

    from gesa.training.machinery import ScriptArgumentError
    from gesa.training.models import graph_layer_overrides

    args = SimpleNamespace(graph_layer="rgat", model_name_or_path="out/luke-graph")
    assert graph_layer_overrides(args, {"model_type": "luke"}) == {"graph_layer": "rgat"}
    assert graph_layer_overrides(args, {"model_type": "gesa_luke_graph", "graph_layer": "rgat"}) == {}
    refused = "--graph_layer rgat: out/luke-graph is a trained LUKE-Graph checkpoint whose relational layer is 'rgcn'"
    with pytest.raises(ScriptArgumentError, match=refused):
        graph_layer_overrides(args, {"model_type": "gesa_luke_graph"})  # saved before the field: the R-GCN
    assert graph_layer_overrides(SimpleNamespace(graph_layer=None), {"model_type": "luke"}) == {}


# ---------------------------------------------------------------------------------------------
# 5. Bad configuration and input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ablation": "full"}, "ablation must be 'luke'"),
        ({"graph_num_layers": 0}, "graph_num_layers.*must be a positive integer"),
        ({"label_switches": {"single_edge_label": True}}, "single_edge_label off"),
        ({"graph_layer": "gat"}, "graph_layer.*must be one of \\('rgcn', 'rgat'\\)"),
    ],
)
def test_bad_config_values_raise_clear_errors(kwargs, message):
    with pytest.raises((ValueError, StrictDataclassError), match=rf"(?s){message}"):
        LukeGraphConfig(**kwargs)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("graph_num_layers", -3, "graph_num_layers.*must be a positive integer"),
        ("graph_num_layers", True, "graph_num_layers.*must be a positive integer"),
        ("ablation", None, "ablation must be 'luke'"),
        ("ablation", "full", "ablation must be 'luke'"),
    ],
)
def test_bad_config_assignments_are_refused_like_construction(tmp_path, field, value, message):
    """An assignment is validated as construction is; the refused value is not kept, so the config still saves
    and loads as LUKE-Graph."""
    config = LukeGraphConfig(**LUKE_GRAPH_TINY)
    before = getattr(config, field)
    with pytest.raises((ValueError, StrictDataclassError), match=rf"(?s){message}"):
        setattr(config, field, value)
    assert getattr(config, field) == before
    config.save_pretrained(tmp_path)
    reloaded = LukeGraphConfig.from_pretrained(tmp_path)
    assert reloaded.graph_num_layers == config.graph_num_layers and reloaded.ablation == "luke"


def test_the_gate_needs_the_question_tokens():
    model = LukeGraphModel(LukeGraphConfig(**LUKE_GRAPH_TINY)).eval()
    inputs = dict(input_ids=torch.randint(5, 64, (1, 8)), entity_ids=torch.full((1, 2), 2))
    with pytest.raises(ValueError, match="global_attention_mask"):
        model(**inputs)
    # a switched-off edge type leaves its relation empty
    config = LukeGraphConfig(**LUKE_GRAPH_TINY, label_switches={"plc_edges": False})
    adjacency = relation_adjacency(
        config, torch.ones(1, 3), torch.tensor([[1, 0, 0]]), torch.tensor([[-1, 0, 1]]), torch.tensor([[-1, 0, 0]])
    )
    assert not adjacency[:, LUKE_GRAPH_RELATIONS.index("plc")].any()
    assert adjacency[0, LUKE_GRAPH_RELATIONS.index("sent"), 1, 2]

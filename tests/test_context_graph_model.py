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
"""The thesis's context-graph model (Acton 2023, ch. 3): every GNN core against a plain loop over its equations, sparse
and dense message passing alike, eq. 2.62 against a plain loop, the update functions of 3.3.2, every core x update
combination trained a step and reloaded, the table 5.1 presets, the graph modules drawn as the thesis's PyTorch
modules draw themselves, and the processor's node spans."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from huggingface_hub.errors import StrictDataclassClassValidationError, StrictDataclassFieldValidationError

from gesa.configuration_context_graph import CONTEXT_GRAPH_PRESETS, GNN_CORES, NUM_EDGE_KINDS, ContextGraphConfig
from gesa.graph_context import CANDIDATE, DOCUMENT, ENTITY
from gesa.modeling_context_graph import (
    ContextGraphForMultipleChoice,
    GnnCore,
    GnnUpdate,
    candidate_scores,
    draw_as_pytorch,
    kind_matrix_of,
)

SIZE, HEADS = 8, 2


def tiny_config(**kwargs) -> ContextGraphConfig:
    settings = dict(vocab_size=40, entity_vocab_size=4, hidden_size=SIZE, entity_emb_size=4, num_hidden_layers=1,
                    num_attention_heads=HEADS, intermediate_size=12, max_position_embeddings=40, gnn_num_layers=2,
                    gnn_num_heads=HEADS, summariser_num_heads=HEADS, graph_dropout=0.0, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0)  # fmt: skip
    settings.update(kwargs)
    return ContextGraphConfig(**settings)


def random_graph(num_nodes: int = 7, num_edges: int = 16, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    pairs = {(int(a), int(b)) for a, b in torch.randint(0, num_nodes, (num_edges, 2), generator=generator) if a != b}
    pairs = sorted(pairs)
    senders = torch.tensor([a for a, _ in pairs])
    receivers = torch.tensor([b for _, b in pairs])
    kinds = torch.randint(0, NUM_EDGE_KINDS, (len(pairs),), generator=generator)
    states = torch.randn(num_nodes, SIZE, generator=generator)
    return states, senders, receivers, kinds


def loop_core(core: GnnCore, states, senders, receivers, kinds) -> torch.Tensor:
    """Thesis 3.3.1 node by node: A_i = sum over the in-edges j -> i of omega(phi(h_i, h_j, E_ij)); the GAT-Core as
    PyTorch Geometric's GATConv computes it (self-loops, full-width heads, edge features in the logits) and W_m."""
    out = torch.zeros_like(states)
    heads, d = core.num_heads, core.head_size
    for i in range(states.size(0)):
        edges = [(int(j), int(k)) for j, r, k in zip(senders, receivers, kinds, strict=True) if int(r) == i]
        if core.core == "gat":  # eqs. 2.27-2.29, 2.33, 3.16/3.17; i in N(i) (2.5.2.2)
            features = [core.edge_embeddings.weight[k] for _, k in edges]
            self_feature = torch.stack(features).mean(0) if features else torch.zeros(states.size(1))
            neighbours = [(j, core.edge_embeddings.weight[k]) for j, k in edges] + [(i, self_feature)]
            joined = []
            for h in range(heads):
                block = slice(h * d, (h + 1) * d)  # head h's f-wide block of W_v and W_e
                w_i = core.value.weight[block] @ states[i]
                scores, messages = [], []
                for j, feature in neighbours:
                    w_j = core.value.weight[block] @ states[j]
                    w_e = core.edge_projection.weight[block] @ feature
                    logit = core.attention[0, h] @ w_i + core.attention[1, h] @ w_j + core.attention[2, h] @ w_e
                    scores.append(F.leaky_relu(logit, 0.2))
                    messages.append(w_j)  # GATConv: the edge feature is not part of the message
                weights = torch.stack(scores).softmax(dim=0)
                joined.append(sum(w * m for w, m in zip(weights, messages, strict=True)))
            out[i] = core.output.weight @ torch.cat(joined) + core.output.bias  # eq. 2.33: [heads] W_m
            continue
        if not edges:
            continue
        if core.core == "switch":  # eqs. 2.40/2.41
            for j, k in edges:
                same_kind = sum(1 for _, other in edges if other == k)
                out[i] += states[j] @ core.relation_weights[k] / same_kind / len(edges)
        elif core.core in ("edge", "sage"):  # eqs. 3.12/3.13 (mean) and 3.14/3.15 (sum, or the mean)
            divide = len(edges) if core.core == "edge" or core.sage_mean else 1
            for j, k in edges:
                sent = core.value(states[j]) if core.core == "edge" else states[j]
                out[i] += (sent + core.edge_embeddings.weight[k]) / divide
        else:
            joined = []
            for h in range(heads):
                part = slice(h * d, (h + 1) * d)
                scores, messages = [], []
                for j, k in edges:
                    v_j = core.value(states[j])[part]
                    edge = core.edge_embeddings.weight[k][part] if core.value_edges else 0.0  # V_ij
                    # eqs. 2.15/2.16 (K_ij), 3.19/3.20; 2.17 (V_ij) where asked
                    q_i, k_j = core.query(states[i])[part], core.key(states[j])[part]
                    key_edge = core.key_edge_embeddings.weight[k][part] if core.key_edges else 0.0
                    scores.append(q_i @ (k_j + key_edge) / math.sqrt(d))
                    messages.append(v_j + edge)
                weights = torch.stack(scores).softmax(dim=0)
                joined.append(sum(w * m for w, m in zip(weights, messages, strict=True)))
            out[i] = core.output(torch.cat(joined))  # PyTorch's multi-head attention: the output projection
    return out


CORE_CASES = [(name, "k", "sum") for name in GNN_CORES] + [("sdp", "v", "sum"), ("sdp", "kv", "sum"),
                                                             ("sage", "k", "mean")]  # fmt: skip


@pytest.mark.parametrize(("core_name", "sdp_edges", "sage_aggregation"), CORE_CASES)
def test_each_core_matches_a_plain_loop_over_its_equations_sparse_and_dense(core_name, sdp_edges, sage_aggregation):
    torch.manual_seed(0)
    core = GnnCore(tiny_config(gnn_core=core_name, gnn_sdp_edge_embeddings=sdp_edges,
                               gnn_sage_aggregation=sage_aggregation))  # fmt: skip
    assert core.key_edges == (core_name == "sdp" and "k" in sdp_edges)
    if core_name == "switch":
        torch.nn.init.normal_(core.relation_weights, std=0.3)
    states, senders, receivers, kinds = random_graph()
    with torch.no_grad():
        expected = loop_core(core, states, senders, receivers, kinds)
        sparse = core(states, senders, receivers, kinds)
        dense = core.dense(states, kind_matrix_of(torch.stack([senders, receivers]), kinds, states.size(0)))
    assert expected.abs().sum() > 0
    torch.testing.assert_close(sparse, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dense, expected, rtol=1e-5, atol=1e-5)
    isolated = sorted(set(range(states.size(0))) - set(receivers.tolist()))
    assert isolated  # a node without in-edges: A = 0, except under GAT, where it reads itself (its self-loop)
    assert all((sparse[i].abs().sum() > 0) == (core_name == "gat") for i in isolated)


def test_gat_core_is_pyg_gatconv_with_self_loops_full_width_heads_and_w_m():
    """The thesis's GAT-Core as it ran it: H heads of width f each (W_v: f -> H f) joined by W_m (eq. 2.33), a node
    attends to itself, and an edge type enters the attention logits, not the messages (GATConv's edge_dim form)."""
    config = tiny_config(gnn_core="gat")
    core = GnnCore(config)
    assert core.value.weight.shape == (HEADS * SIZE, SIZE) and core.output.weight.shape == (SIZE, HEADS * SIZE)
    states = torch.randn(3, SIZE)
    one = torch.tensor([1])
    with torch.no_grad():  # a node with one neighbour j: alpha over {j, i}; its state matters through the self-loop
        base = core(states, torch.tensor([0]), one, torch.tensor([2]))
        moved = core(torch.cat([states[:1], states[1:2] + 1.0, states[2:]]), torch.tensor([0]), one,
                     torch.tensor([2]))  # fmt: skip
        assert not torch.allclose(base[1], moved[1])
        two = (torch.tensor([0, 2]), torch.tensor([1, 1]))
        typed = core(states, *two, torch.tensor([2, 5]))
        assert not torch.allclose(typed[1], core(states, *two, torch.tensor([2, 2]))[1])
        core.attention[2] = 0.0  # no edge part in the logits: the edge types no longer matter (not in the messages)
        torch.testing.assert_close(core(states, *two, torch.tensor([2, 5])), core(states, *two, torch.tensor([7, 7])))


def test_sparse_message_passing_memory_follows_the_edges_not_the_node_pairs():
    """The sparse path never builds an (N, N) tensor: its intermediate sizes scale with M, the dense path's with N^2."""
    core = GnnCore(tiny_config(gnn_core="sdp"))
    states, senders, receivers, kinds = random_graph(num_nodes=300, num_edges=600)
    seen = []

    def record(module, inputs, output):
        seen.append(output.numel())

    handle = core.key_edge_embeddings.register_forward_hook(record)
    with torch.no_grad():
        core(states, senders, receivers, kinds)
        core.dense(states, kind_matrix_of(torch.stack([senders, receivers]), kinds, 300))
    handle.remove()
    assert seen[0] == len(kinds) * SIZE and seen[1] == 300 * 300 * SIZE


def test_eq_2_62_candidate_score_is_mlp_c_plus_the_max_over_its_entities():
    candidate_term = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    entity_term = torch.tensor([5.0, -1.0, 2.0, 3.0, 0.5, 9.0, 1.0])
    node_graph = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    entity_candidate = torch.tensor([0, 0, 1, -1, -1, 0, -1])  # nodes 0, 1: candidate 0 of graph 0, ...
    candidate_nodes = torch.tensor([[3, 2, -1], [4, 6, 5]])
    logits = candidate_scores(candidate_term, entity_term, candidate_nodes, node_graph, entity_candidate)
    expected = torch.full((2, 3), torch.finfo(torch.float32).min)
    for b in range(2):
        for c in range(3):
            node = int(candidate_nodes[b, c])
            if node < 0:
                continue
            entities = [float(entity_term[n]) for n in range(7) if node_graph[n] == b and entity_candidate[n] == c]
            expected[b, c] = candidate_term[node] + (max(entities) if entities else 0.0)
    torch.testing.assert_close(logits, expected)
    assert logits[0, 0] == pytest.approx(0.4 + 5.0) and logits[1, 0] == pytest.approx(0.5 + 9.0)


def test_the_update_functions_follow_section_3_3_2():
    torch.manual_seed(0)
    h, a = torch.randn(5, SIZE), torch.randn(5, SIZE)
    none = GnnUpdate(tiny_config(gnn_asymmetry="none", gnn_tuf=False, gnn_gate=False))
    torch.testing.assert_close(none(h, a), torch.relu(a))  # eq. 3.21
    mlp = GnnUpdate(tiny_config(gnn_asymmetry="mlp", gnn_tuf=False, gnn_gate=False))
    torch.testing.assert_close(mlp(h, a), torch.relu(a + mlp.own(h)))  # eq. 3.23
    sage = GnnUpdate(tiny_config(gnn_asymmetry="sage", gnn_tuf=False, gnn_gate=False))
    torch.testing.assert_close(sage(h, a), torch.relu(sage.combine(torch.cat([h, a], -1))))  # eq. 3.22
    tuf = GnnUpdate(tiny_config(gnn_asymmetry="none", gnn_tuf=True, gnn_gate=False))
    mixed = tuf.tuf_norm(h + a)
    torch.testing.assert_close(tuf(h, a), tuf.tuf_out_norm(mixed + tuf.tuf_mlp(mixed)))  # eq. 2.11
    hde = GnnUpdate(tiny_config(gnn_asymmetry="mlp", gnn_tuf=False, gnn_gate=True))
    u = hde.gate_input(h) + a + hde.own(h)  # eq. 3.26: Gate(h, A + W_4 h), eqs. 2.37-2.39
    g = torch.sigmoid(hde.gate_weights(torch.cat([h, u], -1)))
    torch.testing.assert_close(hde(h, a), torch.tanh(u) * g + h * (1 - g))


def hand_batch():
    """Two graphs: graph 0 (query text 0, document text 1, candidate texts 2, 3), graph 1 (texts 4-6)."""
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(4, 40, (7, 9), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[0, 5:] = 0
    attention_mask[2, 3:] = 0
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        query_text=torch.tensor([0, 4]),
        node_text=torch.tensor([1, 1, 1, 2, 3, 5, 5, 6]),
        node_start=torch.tensor([1, 2, 5, 1, 1, 1, 3, 1]),
        node_end=torch.tensor([8, 4, 6, 2, 8, 8, 5, 4]),
        node_type=torch.tensor([DOCUMENT, ENTITY, ENTITY, CANDIDATE, CANDIDATE, DOCUMENT, ENTITY, CANDIDATE]),
        node_graph=torch.tensor([0, 0, 0, 0, 0, 1, 1, 1]),
        entity_candidate=torch.tensor([-1, 0, 1, -1, -1, -1, 0, -1]),
        edge_index=torch.tensor(
            [[0, 1, 0, 2, 1, 3, 2, 4, 3, 4, 5, 6, 6, 7], [1, 0, 2, 0, 3, 1, 4, 2, 4, 3, 6, 5, 7, 6]]
        ),
        edge_type=torch.tensor([0, 0, 0, 0, 3, 3, 3, 3, 4, 4, 0, 0, 3, 3]),
        candidate_nodes=torch.tensor([[3, 4], [7, -1]]),
        labels=torch.tensor([1, 0]),
    )


UPDATES = {  # (gnn_asymmetry, gnn_tuf, gnn_gate): tables 5.2, 5.3, 5.5, 5.6
    "none": ("none", False, False),
    "sage": ("sage", False, False),
    "mlp": ("mlp", False, False),
    "gate": ("none", False, True),
    "tuf": ("none", True, False),
    "gate_mlp_hde": ("mlp", False, True),
    "gate_sage": ("sage", False, True),
    "gate_tuf": ("none", True, True),
    "gate_tuf_mlp": ("mlp", True, True),
}


@pytest.mark.parametrize("update", list(UPDATES))
@pytest.mark.parametrize("core_name", GNN_CORES)
def test_every_core_and_update_trains_a_step_and_reloads(tmp_path, core_name, update):
    asymmetry, tuf, gate = UPDATES[update]
    torch.manual_seed(0)
    config = tiny_config(gnn_core=core_name, gnn_asymmetry=asymmetry, gnn_tuf=tuf, gnn_gate=gate)
    model = ContextGraphForMultipleChoice(config)
    batch = hand_batch()
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    before = {name: p.detach().clone() for name, p in model.encoder.named_parameters()}
    loss = model(**batch).loss
    assert torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is None for p in model.gesa.parameters())  # the frozen token embedder
    optimizer.step()
    changed = [name for name, p in model.encoder.named_parameters() if not torch.equal(before[name], p)]
    assert changed, "no GNN weight moved"
    model.eval()
    model.save_pretrained(tmp_path)
    reloaded = ContextGraphForMultipleChoice.from_pretrained(tmp_path).eval()
    assert reloaded.config.gnn_core == core_name and reloaded.config.gnn_asymmetry == asymmetry
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**inputs).logits, model(**inputs).logits)


@pytest.mark.parametrize("summariser", ["transformer", "switch"])
@pytest.mark.parametrize("shared", [True, False])
def test_dense_and_sparse_models_give_the_same_scores(summariser, shared):
    torch.manual_seed(0)
    sparse = ContextGraphForMultipleChoice(tiny_config(summariser=summariser, gnn_share_weights=shared)).eval()
    dense = ContextGraphForMultipleChoice(sparse.config.__class__(**{**sparse.config.to_dict(),
                                                                    "gnn_message_passing": "dense"})).eval()  # fmt: skip
    dense.load_state_dict(sparse.state_dict())
    batch = {k: v for k, v in hand_batch().items() if k != "labels"}
    with torch.no_grad():
        torch.testing.assert_close(dense(**batch).logits, sparse(**batch).logits, rtol=1e-5, atol=1e-5)
    assert len(sparse.encoder.layers) == (1 if shared else 2)


def test_the_word_encoder_is_fine_tuned_only_when_asked():
    model = ContextGraphForMultipleChoice(tiny_config(freeze_word_encoder=False))
    model(**hand_batch()).loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.gesa.parameters())


def test_padded_candidates_are_never_chosen_and_bad_labels_are_named():
    model = ContextGraphForMultipleChoice(tiny_config()).eval()
    batch = hand_batch()
    logits = model(**batch).logits
    assert logits[1, 1] == torch.finfo(logits.dtype).min
    with pytest.raises(ValueError, match=r"labels\[1\] = 1 is not a candidate index"):
        model(**{**batch, "labels": torch.tensor([0, 1])})
    with pytest.raises(ValueError, match="edge_type must lie in"):
        model(**{**batch, "edge_type": batch["edge_type"] + NUM_EDGE_KINDS})


def test_a_batch_without_labelled_graphs_has_loss_zero_with_padded_candidate_slots():
    model = ContextGraphForMultipleChoice(tiny_config())
    batch = hand_batch()
    batch["candidate_nodes"] = torch.tensor([[3, 4, -1, -1], [7, -1, -1, -1]])  # five padded slots: finfo.min each
    output = model(**{**batch, "labels": torch.tensor([-100, -100])})
    assert output.loss.item() == 0.0
    output.loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("preset", sorted(CONTEXT_GRAPH_PRESETS))
def test_table_5_1_presets_set_their_rows(preset):
    config = tiny_config(graph_preset=preset)
    for key, value in CONTEXT_GRAPH_PRESETS[preset].items():
        assert getattr(config, key) == value
    other = "sdp" if config.gnn_core != "sdp" else "gat"
    with pytest.raises(ValueError, match="graph_preset"):
        tiny_config(graph_preset=preset, gnn_core=other)
    with pytest.raises(StrictDataclassClassValidationError, match="no longer holds"):
        config.gnn_core = other
    assert config.gnn_core == CONTEXT_GRAPH_PRESETS[preset]["gnn_core"]


def test_presets_follow_table_4_4():
    assert (
        CONTEXT_GRAPH_PRESETS["hde_base"]["gnn_core"] == "edge"
        and CONTEXT_GRAPH_PRESETS["hde_base"]["gnn_share_weights"]
    )
    assert CONTEXT_GRAPH_PRESETS["att_base"]["summariser"] == "switch"
    assert CONTEXT_GRAPH_PRESETS["bert_base"]["summariser"] == "transformer"
    assert all(CONTEXT_GRAPH_PRESETS[name]["gnn_tuf"] and CONTEXT_GRAPH_PRESETS[name]["gnn_core"] == "gat"
               for name in ("att_base", "bert_base"))  # fmt: skip


def test_config_refuses_heads_that_do_not_divide_the_model_dimension():
    with pytest.raises(StrictDataclassClassValidationError, match="gnn_num_heads=3 must divide hidden_size=8"):
        tiny_config(gnn_num_heads=3)


@pytest.mark.parametrize("message_passing", ["sparse", "dense"])
def test_without_edge_types_the_model_reads_the_structure_only(message_passing):
    torch.manual_seed(0)
    model = ContextGraphForMultipleChoice(
        tiny_config(gnn_edge_types=False, gnn_message_passing=message_passing, initializer_range=0.3)
    )  # GAT: edge types move the logits
    model.eval()
    batch = {k: v for k, v in hand_batch().items() if k != "labels"}
    with torch.no_grad():
        plain = model(**batch).logits
        retyped = model(**{**batch, "edge_type": (batch["edge_type"] + 5) % NUM_EDGE_KINDS}).logits
        model.config.gnn_edge_types = True
        typed = ContextGraphForMultipleChoice(model.config).eval()
        typed.load_state_dict(model.state_dict())
        differs = typed(**{**batch, "edge_type": (batch["edge_type"] + 5) % NUM_EDGE_KINDS}).logits
    torch.testing.assert_close(retyped, plain)
    assert not torch.allclose(differs, plain)


@pytest.mark.parametrize("core_name", GNN_CORES)
def test_directed_edge_types_read_each_direction_with_its_own_embedding(core_name):
    torch.manual_seed(0)
    config = tiny_config(gnn_core=core_name, gnn_directed_edge_types=True, gnn_num_layers=1, initializer_range=0.3)
    sparse = ContextGraphForMultipleChoice(config).eval()
    assert sparse.encoder.layers[0].core.num_kinds == 2 * NUM_EDGE_KINDS
    dense = ContextGraphForMultipleChoice(config.__class__(**{**config.to_dict(), "gnn_message_passing": "dense"}))
    dense.load_state_dict(sparse.state_dict())
    batch = {k: v for k, v in hand_batch().items() if k != "labels"}
    with torch.no_grad():
        torch.testing.assert_close(dense.eval()(**batch).logits, sparse(**batch).logits, rtol=1e-5, atol=1e-5)
        core = sparse.encoder.layers[0].core
        for table in ("edge_embeddings", "key_edge_embeddings", "relation_weights"):
            if hasattr(core, table):  # the backward rows differ from the forward ones: outputs change with them
                weights = getattr(core, table)
                weights = weights.weight if isinstance(weights, torch.nn.Embedding) else weights
                before = sparse(**batch).logits
                weights[NUM_EDGE_KINDS:] += torch.randn_like(weights[NUM_EDGE_KINDS:])  # (a constant: LayerNorm)
                assert not torch.allclose(sparse(**batch).logits, before)


SHARING = {"core": {"gnn_share_core": True}, "gate": {"gnn_share_gate": True}, "tuf": {"gnn_share_tuf": True},
           "core_gate": {"gnn_share_core": True, "gnn_share_gate": True},
           "all_three": {"gnn_share_core": True, "gnn_share_gate": True, "gnn_share_tuf": True}}  # fmt: skip


@pytest.mark.parametrize("sharing", list(SHARING))
def test_single_components_share_one_weight_set_across_layers(tmp_path, sharing):
    """Table 5.13: the shared parts exist once; the model computes what unshared layers holding copies of them do;
    it trains a step and reloads."""
    share = SHARING[sharing]
    fields = dict(gnn_num_layers=3, gnn_core="gat", gnn_asymmetry="mlp", gnn_tuf=True, gnn_gate=True)
    torch.manual_seed(0)
    model = ContextGraphForMultipleChoice(tiny_config(**fields, **share)).eval()
    modules = list(model.encoder.modules())
    assert sum(isinstance(m, GnnCore) for m in modules) == (1 if "gnn_share_core" in share else 3)
    assert sum(hasattr(m, "own") for m in modules) == (1 if "gnn_share_core" in share else 3)
    assert sum(hasattr(m, "gate_input") for m in modules) == (1 if "gnn_share_gate" in share else 3)
    assert sum(hasattr(m, "tuf_mlp") for m in modules) == (1 if "gnn_share_tuf" in share else 3)
    reference = ContextGraphForMultipleChoice(tiny_config(**fields)).eval()
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("encoder.")}
    for index in range(3):
        for source in (model.encoder.layers[index % len(model.encoder.layers)], model.encoder.shared_layer):
            if source is None:
                continue
            for key, value in source.state_dict().items():
                state.setdefault(f"encoder.layers.{index}.{key}", value)
    reference.load_state_dict(state)
    batch = hand_batch()
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs).logits, reference(**inputs).logits)
    model.train()
    model(**batch).loss.backward()
    torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1).step()
    model.eval().save_pretrained(tmp_path)
    reloaded = ContextGraphForMultipleChoice.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**inputs).logits, model(**inputs).logits)


@pytest.mark.parametrize("shared", [True, False])
def test_without_gnn_layers_the_summarised_nodes_are_scored_as_they_are(shared):
    """``gnn_num_layers=0``: the thesis's model without its GNN (the mechanism check's baseline): no GNN weight, the
    encoder passes the node states through, the model still trains."""
    model = ContextGraphForMultipleChoice(tiny_config(gnn_num_layers=0, gnn_share_weights=shared))
    assert not list(model.encoder.parameters())
    states = torch.randn(5, SIZE)
    assert torch.equal(model.encoder(states, torch.tensor([[0, 1], [1, 0]]), torch.tensor([0, 0])), states)
    loss = model(**hand_batch()).loss
    loss.backward()
    assert torch.isfinite(loss) and model.candidate_scorer.out.weight.grad is not None


def test_a_reloaded_model_keeps_its_word_encoder_frozen(tmp_path):
    """Loading puts new (trainable) parameters in place: the frozen word encoder is frozen again, saved and reloaded,
    and a fine-tuned one stays trainable."""
    for frozen in (True, False):
        ContextGraphForMultipleChoice(tiny_config(freeze_word_encoder=frozen)).save_pretrained(tmp_path / str(frozen))
        model = ContextGraphForMultipleChoice.from_pretrained(tmp_path / str(frozen))
        assert {parameter.requires_grad for parameter in model.gesa.parameters()} == {not frozen}
        assert all(
            parameter.requires_grad for name, parameter in model.named_parameters() if not name.startswith("gesa.")
        )


def test_graph_modules_are_drawn_as_pytorch_builds_them_unless_normal_is_asked(tmp_path):
    """`graph_init="pytorch"` (default): each graph module as a fresh PyTorch module of its kind (`nn.Embedding`:
    N(0, 1), `nn.Linear`: Kaiming-uniform) and PyTorch Geometric's Glorot for the GAT-Core's projections and attention
    vectors; `"normal"`: N(0, initializer_range). Weights loaded from a checkpoint are never redrawn."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(SIZE, 3)
    torch.manual_seed(0)
    drawn = torch.nn.Linear(SIZE, 3)
    torch.nn.init.normal_(drawn.weight, std=0.02)
    torch.manual_seed(0)
    draw_as_pytorch(drawn)
    assert torch.equal(drawn.weight, linear.weight) and torch.equal(drawn.bias, linear.bias)

    config = tiny_config(gnn_core="gat", initializer_range=0.02)
    assert config.graph_init == "pytorch"
    torch.manual_seed(0)
    model = ContextGraphForMultipleChoice(config)
    core = model.encoder.layers[0].core
    assert 0.7 < float(core.edge_embeddings.weight.std()) < 1.3  # nn.Embedding: N(0, 1)
    assert 0.7 < float(model.embedding.type_embeddings.weight.std()) < 1.3
    assert float(model.candidate_scorer.hidden.weight.abs().max()) <= SIZE**-0.5  # Kaiming-uniform: 1/sqrt(fan_in)
    glorot = (6.0 / (HEADS + SIZE)) ** 0.5  # att_src / att_dst / att_edge of shape (heads, f)
    assert float(core.attention.abs().max()) <= glorot and float(core.attention.std()) > glorot / 4
    value_bound = (6.0 / (HEADS * SIZE + SIZE)) ** 0.5  # lin: f -> heads * f
    assert float(core.value.weight.abs().max()) <= value_bound and float(core.value.weight.std()) > value_bound / 4
    # the word encoder is not a graph module: transformers' draw either way
    assert float(model.gesa.embeddings.word_embeddings.weight.std()) < 0.05

    torch.manual_seed(0)
    normal = ContextGraphForMultipleChoice(tiny_config(gnn_core="gat", initializer_range=0.02, graph_init="normal"))
    normal_core = normal.encoder.layers[0].core
    for weight in (normal_core.edge_embeddings.weight, normal_core.attention, normal.candidate_scorer.hidden.weight):
        assert float(weight.std()) < 0.05

    model.save_pretrained(tmp_path)
    reloaded = ContextGraphForMultipleChoice.from_pretrained(tmp_path)
    for (name, weight), (_, again) in zip(model.state_dict().items(), reloaded.state_dict().items(), strict=True):
        assert torch.equal(weight, again), name
    with pytest.raises(StrictDataclassFieldValidationError, match="graph_init"):
        tiny_config(graph_init="xavier")

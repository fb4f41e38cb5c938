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
"""The WikiHop heads of GESA, LUKE and LUKE-Graph score candidates with the thesis's eq. 2.62 (HDE's output, Acton
2023, 3.4) by default, one implementation shared with the context-graph GNN; the linear head on [query; candidate]
stays as ``choice_head="query_candidate"``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from transformers import LukeTokenizer
from wikihop_fixtures import velmor_record

import gesa.modeling_candidate_output as output_module
import gesa.modeling_context_graph as context_graph_module
from gesa.configuration_gesa import GesaConfig
from gesa.configuration_luke_graph import LukeGraphConfig
from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
from gesa.modeling_luke_graph_multiple_choice import LukeGraphForEntityMultipleChoice
from gesa.processing_wikihop import WikihopProcessor

RECORD = velmor_record("WH_hde_0", answer="spain")
SECOND = {**RECORD, "id": "WH_hde_1", "candidates": ["velmor", "france"], "answer": "france"}
HEADS = {
    "gesa": (GesaForEntityMultipleChoice, GesaConfig, {}),
    "luke": (GesaForEntityMultipleChoice, GesaConfig, {"ablation": "luke"}),
    "luke_graph": (LukeGraphForEntityMultipleChoice, LukeGraphConfig, {"ablation": "luke"}),
}


@pytest.fixture(scope="module")
def tokenizer(tiny_luke_dir):
    return LukeTokenizer.from_pretrained(tiny_luke_dir)


def tiny(head, **overrides):
    model_class, config_class, fields = HEADS[head]
    kwargs = dict(vocab_size=2100, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=37, max_position_embeddings=1100, max_relative_position=8,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attention_window=16)  # fmt: skip
    return model_class(config_class(**{**kwargs, **fields, **overrides})).eval()


def plain_eq_2_62(model, batch, states):
    """Eq. 2.62 written as a loop: for each candidate c, MLP_c(h_c) + max over c's entity nodes of MLP_e(h_e)."""
    logits = torch.full(batch["candidate_entity_mask"].shape, torch.finfo(states.dtype).min)
    for row in range(states.size(0)):
        strings = batch["entity_string_ids"][row].tolist()
        for c in batch["candidate_entity_mask"][row].nonzero().flatten().tolist():
            score = model.candidate_scorer(states[row, c])
            nodes = [e for e, s in enumerate(strings)
                     if s == strings[c] and not batch["candidate_entity_mask"][row, e]
                     and not batch["placeholder_entity_mask"][row, e] and batch["entity_attention_mask"][row, e]]  # fmt: skip
            if nodes:
                score = score + max(model.entity_scorer(states[row, e]) for e in nodes)
            logits[row, c] = score
    return logits


@pytest.mark.parametrize("head", sorted(HEADS))
@pytest.mark.parametrize("graph", ["merged", "context"])
def test_the_default_head_is_eq_2_62_against_a_plain_loop(tokenizer, head, graph):
    if graph == "context" and head != "gesa":
        pytest.skip("LUKE reads no labels and LUKE-Graph its own three relations: both keep the merged features")
    torch.manual_seed(0)
    model = tiny(head, **({"entity_graph": "context"} if graph == "context" else {}))
    assert model.config.choice_head == "hde" and not hasattr(model, "classifier")
    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32, entity_graph=graph)
    batch = processor([RECORD, SECOND], return_tensors="pt")
    output = model(**batch)
    # the entity states the head reads: the encoder's (LUKE-Graph: after its graph network)
    inputs = {name: value for name, value in batch.items() if name not in ("labels", "candidate_entity_mask")}
    states = model.gesa(**inputs).entity_last_hidden_state
    expected = plain_eq_2_62(model, batch, states)
    torch.testing.assert_close(output.logits, expected)
    mentioned = [int((batch["entity_string_ids"][0] == batch["entity_string_ids"][0, c]).sum()) for c in (1, 2, 3)]
    assert mentioned[0] > 1 and mentioned[2] == 1  # france has entity nodes, norway none (MLP_c alone)
    torch.testing.assert_close(output.loss, F.cross_entropy(expected, batch["labels"]))
    output.loss.backward()
    assert model.entity_scorer.hidden.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("head", sorted(HEADS))
@pytest.mark.parametrize("choice_head", ["hde", "query_candidate"])
def test_each_head_reloads_with_from_pretrained(tokenizer, tmp_path, head, choice_head):
    torch.manual_seed(0)
    model = tiny(head, choice_head=choice_head)
    model.save_pretrained(tmp_path)
    assert (tmp_path / "modeling_candidate_output.py").is_file()
    reloaded = type(model).from_pretrained(tmp_path).eval()
    assert reloaded.config.choice_head == choice_head
    batch = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32)([RECORD], return_tensors="pt")
    torch.testing.assert_close(reloaded(**batch).logits, model(**batch).logits)


def test_the_context_graph_gnn_and_the_wikihop_heads_share_one_eq_2_62():
    assert context_graph_module.Scorer is output_module.Scorer
    assert context_graph_module.candidate_scores is output_module.candidate_scores
    scorer = output_module.Scorer(8)
    assert (scorer.hidden.in_features, scorer.hidden.out_features, scorer.out.out_features) == (8, 4, 1)


def test_the_candidate_loss_is_the_mean_cross_entropy_over_labelled_examples_and_zero_without_any():
    import gesa.modeling_gesa_multiple_choice as choice_module

    assert context_graph_module.candidate_choice_loss is output_module.candidate_choice_loss
    assert choice_module.candidate_choice_loss is output_module.candidate_choice_loss
    minimum = torch.finfo(torch.float32).min
    logits = torch.tensor([[0.5, -1.0, minimum, minimum], [2.0, minimum, minimum, minimum], [0.1, 0.3, 0.2, minimum]])
    labels = torch.tensor([1, -100, 2])
    plain = [-torch.log_softmax(logits[row], -1)[label] for row, label in enumerate(labels.tolist()) if label != -100]
    torch.testing.assert_close(output_module.candidate_choice_loss(logits, labels), sum(plain) / len(plain))
    assert output_module.candidate_choice_loss(logits, None) is None
    # no labelled example: 0 and a zero gradient, never NaN (the padded slots sum past the float range)
    leaf = logits.clone().requires_grad_()
    loss = output_module.candidate_choice_loss(leaf, torch.full((3,), -100))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(leaf.grad, torch.zeros_like(logits))


@pytest.mark.parametrize("head", sorted(HEADS))
def test_a_checkpoint_saved_before_choice_head_existed_keeps_its_linear_head(tokenizer, tmp_path, head):
    """A saved config always names its head; one without ``choice_head`` (saved before the field existed, when the
    linear head was the only one) reloads with that head and its trained weights, not fresh eq. 2.62 scorers."""
    import json

    torch.manual_seed(0)
    fresh = tiny(head)
    fresh.save_pretrained(tmp_path / "new")
    assert json.loads((tmp_path / "new" / "config.json").read_text())["choice_head"] == "hde"  # the default, written
    older = tiny(head, choice_head="query_candidate")
    older.save_pretrained(tmp_path / "old")
    path = tmp_path / "old" / "config.json"
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "choice_head"}))
    reloaded = type(older).from_pretrained(tmp_path / "old").eval()
    assert reloaded.config.choice_head == "query_candidate"
    batch = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32)([RECORD], return_tensors="pt")
    torch.testing.assert_close(reloaded(**batch).logits, older(**batch).logits)
    assert type(fresh).from_pretrained(tmp_path / "new").config.choice_head == "hde"

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
"""The task heads' labels: a batch whose labels are all -100 has loss 0 (not NaN) in the multiple-choice heads (GESA,
LUKE-Graph), ``XhForFactVerification`` and the entity heads; a class label out of range is one ``ValueError`` naming
the entry (not an index error inside torch); typing targets outside [0, 1] (2.0, NaN) are refused, not trained on."""

from __future__ import annotations

import pytest
import torch
from transformers import LukeTokenizer
from variant_inputs import collate, graph_feature, xh_config
from wikihop_fixtures import velmor_record

from gesa.configuration_gesa import GesaConfig
from gesa.configuration_luke_graph import LukeGraphConfig
from gesa.modeling_gesa_entity import GesaForEntityClassification, GesaForEntityPairClassification
from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
from gesa.modeling_luke_graph_multiple_choice import LukeGraphForEntityMultipleChoice
from gesa.modeling_xh import XhForFactVerification
from gesa.processing_wikihop import WikihopProcessor

RECORD = velmor_record("WH_0", supports=["Velmor is a town in Abo Province.", "Abo Province is a region of France."])
TINY = dict(vocab_size=2100, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=37, max_position_embeddings=600, max_relative_position=8,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attention_window=16)  # fmt: skip


@pytest.fixture(scope="module")
def wikihop_batch(tiny_luke_dir):
    processor = WikihopProcessor(LukeTokenizer.from_pretrained(tiny_luke_dir), max_seq_length=256, max_query_length=16)
    return processor([RECORD, {**RECORD, "id": "WH_1"}], return_tensors="pt")


@pytest.mark.parametrize("head, config", [(GesaForEntityMultipleChoice, GesaConfig),
                                          (LukeGraphForEntityMultipleChoice, LukeGraphConfig)])  # fmt: skip
def test_multiple_choice_loss_is_zero_not_nan_when_every_label_is_ignored(wikihop_batch, head, config):
    torch.manual_seed(0)
    model = head(config(**TINY))
    batch = {**wikihop_batch, "labels": torch.tensor([-100, -100])}
    loss = model(**batch).loss
    assert torch.isfinite(loss) and float(loss) == 0.0
    loss.backward()  # still on the graph: a Trainer step on such a batch works


def _fever_inputs():
    batch = collate([graph_feature(3, [9, 7, 11], seed=9), graph_feature(2, [8, 10], seed=10)])
    keys = ("input_ids", "attention_mask", "global_attention_mask", "node_mask", "node_adjacency")
    return {k: batch[k] for k in keys}


def test_fact_verification_loss_is_zero_not_nan_when_every_label_is_ignored():
    torch.manual_seed(0)
    model = XhForFactVerification(xh_config(classifier_dropout=0.0))
    loss = model(**_fever_inputs(), labels=torch.tensor([-100, -100])).loss
    assert torch.isfinite(loss) and float(loss) == 0.0
    loss.backward()


@pytest.mark.parametrize("labels, entry", [([0, 3], r"labels\[1\] = 3"), ([-1, 0], r"labels\[0\] = -1")])
def test_fact_verification_refuses_a_class_label_out_of_range(labels, entry):
    model = XhForFactVerification(xh_config(classifier_dropout=0.0))
    with pytest.raises(ValueError, match=entry + r" is not a class id: the head has 3 classes"):
        model(**_fever_inputs(), labels=torch.tensor(labels))


def _entity_inputs():
    entity_position_ids = torch.full((2, 2, 4), -1)
    entity_position_ids[:, 0, :2] = torch.tensor([1, 2])
    entity_position_ids[:, 1, :1] = 4
    return dict(input_ids=torch.randint(5, 100, (2, 9), generator=torch.Generator().manual_seed(0)),
                attention_mask=torch.ones(2, 9, dtype=torch.long), entity_ids=torch.tensor([[2, 3], [2, 3]]),
                entity_attention_mask=torch.ones(2, 2, dtype=torch.long),
                entity_position_ids=entity_position_ids)  # fmt: skip


@pytest.fixture(scope="module")
def relation_head(tiny_luke_dir):
    return GesaForEntityPairClassification.from_luke_pretrained(tiny_luke_dir, num_labels=4)


@pytest.fixture(scope="module")
def typing_head(tiny_luke_dir):
    return GesaForEntityClassification.from_luke_pretrained(tiny_luke_dir, num_labels=3)


def test_relation_head_refuses_a_class_label_out_of_range(relation_head):
    with pytest.raises(ValueError, match=r"labels\[1\] = 4 is not a class id: the head has 4 classes"):
        relation_head(**_entity_inputs(), labels=torch.tensor([0, 4]))


def test_relation_head_loss_is_zero_not_nan_when_every_label_is_ignored(relation_head):
    loss = relation_head(**_entity_inputs(), labels=torch.tensor([-100, -100])).loss
    assert torch.isfinite(loss) and float(loss) == 0.0


@pytest.mark.parametrize("bad", [2.0, float("nan"), -1.0])
def test_typing_head_refuses_targets_outside_zero_one(typing_head, bad):
    labels = torch.tensor([[1.0, 0.0, 0.0], [0.0, bad, 1.0]])
    with pytest.raises(ValueError, match=r"labels\[1, 1\] = .* is not a target in \[0, 1\]"):
        typing_head(**_entity_inputs(), labels=labels)


def test_question_type_head_gives_zero_loss_on_all_ignored_labels_and_names_a_bad_class():
    from gesa.configuration_variants import XhConfig
    from gesa.modeling_xh_paper import XhForQuestionType

    torch.manual_seed(0)
    config = XhConfig(vocab_size=64, entity_vocab_size=4, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=64, xh_num_hop_layers=0, num_labels=2)  # fmt: skip
    model = XhForQuestionType(config).eval()
    inputs = {"input_ids": torch.randint(5, 60, (2, 1, 6)), "node_mask": torch.ones(2, 1, dtype=torch.bool),
              "node_adjacency": torch.zeros(2, 1, 1)}  # fmt: skip
    loss = model(**inputs, labels=torch.tensor([-100, -100])).loss
    assert loss.item() == 0.0 and loss.requires_grad
    with pytest.raises(ValueError, match="labels"):
        model(**inputs, labels=torch.tensor([0, 7]))

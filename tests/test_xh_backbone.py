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
"""Transformer-XH's backbone switch: `backbone="luke"` (the default) is LUKE itself under the hop layers, `"gesa"` is
GESA's relative-label attention; the field resolves and validates against `ablation`."""

from __future__ import annotations

import pytest
import torch
from model_helpers import record_like_batch
from transformers import LukeModel

from gesa.configuration_variants import XhConfig
from gesa.modeling_xh import XhModel
from gesa.training.registry import VARIANTS

LUKE_INPUTS = ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask", "entity_position_ids")


def as_graph(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The two sequences of `batch` as the two nodes of one graph, without edges."""
    graph = {name: batch[name][None] for name in LUKE_INPUTS}
    graph["node_adjacency"] = torch.zeros(1, 2, 2, dtype=torch.long)
    return graph


@pytest.mark.parametrize("hops", [0, 2])
def test_luke_backbone_without_hops_equals_luke_model(tiny_luke_dir, hops):
    """With no hop layer (or hop layers over a graph without edges, the combine at `[I | 0]`) every node's hidden
    states are `transformers.LukeModel`'s on that node, same weights."""
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    xh = XhModel.from_luke_pretrained(tiny_luke_dir, xh_num_hop_layers=hops).eval()
    assert xh.config.backbone == "luke" and xh.config.ablation == "luke"
    batch = record_like_batch(vocab_size=1000)
    with torch.no_grad():
        expected = luke(**{name: batch[name] for name in LUKE_INPUTS}, output_hidden_states=True)
        actual = xh(**as_graph(batch), output_hidden_states=True)
    real = batch["attention_mask"].bool()
    for layer, (mine, theirs) in enumerate(zip(actual.hidden_states, expected.hidden_states, strict=True)):
        torch.testing.assert_close(mine[0][real], theirs[real], atol=1e-5, rtol=0, msg=f"layer {layer}")
    torch.testing.assert_close(actual.last_hidden_state[0][real], expected.last_hidden_state[real], atol=1e-5, rtol=0)
    entities = batch["entity_attention_mask"].bool()
    torch.testing.assert_close(
        actual.entity_last_hidden_state[0][entities], expected.entity_last_hidden_state[entities], atol=1e-5, rtol=0
    )
    torch.testing.assert_close(actual.pooler_output[0], expected.pooler_output, atol=1e-5, rtol=0)


def test_gesa_backbone_differs_from_luke(tiny_luke_dir):
    """The GESA backbone drops LUKE's absolute positions and adds label tables: not LUKE's states."""
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    xh = XhModel.from_luke_pretrained(tiny_luke_dir, backbone="gesa", xh_num_hop_layers=0).eval()
    assert xh.config.backbone == "gesa" and not xh.config.use_absolute_position_embeddings
    batch = record_like_batch(vocab_size=1000)
    with torch.no_grad():
        expected = luke(**{name: batch[name] for name in LUKE_INPUTS})
        actual = xh(**as_graph(batch))
    real = batch["attention_mask"].bool()
    assert (actual.last_hidden_state[0][real] - expected.last_hidden_state[real]).abs().max() > 1e-3


def test_backbone_resolves_from_the_config_fields():
    assert XhConfig().backbone == "luke" and XhConfig().ablation == "luke"
    assert XhConfig().use_absolute_position_embeddings and not XhConfig().use_relative_labels
    assert XhConfig(backbone="gesa").ablation is None and XhConfig(backbone="gesa").use_relative_labels
    assert XhConfig(ablation="w2w_local").backbone == "gesa"
    # a GESA-backbone config saved before the field existed reloads as GESA
    saved = XhConfig(backbone="gesa").to_dict()
    del saved["backbone"]
    assert XhConfig.from_dict(saved).backbone == "gesa"
    assert XhConfig.from_dict(XhConfig().to_dict()).backbone == "luke"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backbone": "bert"}, "'bert' is unknown; choose one of \\['luke', 'gesa'\\]"),
        ({"backbone": "luke", "ablation": "w2w_local"}, "backbone='luke' contradicts ablation='w2w_local'"),
        ({"backbone": "gesa", "ablation": "luke"}, "backbone='gesa' contradicts ablation='luke'"),
        ({"backbone": "luke", "use_relative_labels": True}, "ablation='luke' sets use_relative_labels=False"),
    ],
)
def test_backbone_contradictions_are_refused(kwargs, message):
    with pytest.raises(Exception, match=message):
        XhConfig(**kwargs)


def test_dropping_the_luke_preset_keeps_luke_fields_and_refuses_gesa_ones():
    """`ablation = None` keeps the preset's fields as a custom combination (as for every config): still LUKE's
    backbone; a GESA-only field on it is then refused."""
    config = XhConfig()
    config.ablation = None
    assert config.backbone == "luke" and config.use_absolute_position_embeddings and not config.use_relative_labels
    with pytest.raises(Exception, match="backbone='luke' does not fit ablation=None"):
        config.use_relative_labels = True
    assert not config.use_relative_labels


def test_xh_variant_converts_luke_with_the_luke_backbone_by_default(tiny_luke_dir):
    """The `xh` variant of the scripts (ReCoRD, HotpotQA, FEVER) gets the LUKE backbone unless asked otherwise."""
    model = VARIANTS["xh"].from_luke(tiny_luke_dir)
    assert model.config.backbone == "luke" and model.config.use_absolute_position_embeddings
    assert VARIANTS["xh"].from_luke(tiny_luke_dir, ablation="w2w_local").config.backbone == "gesa"

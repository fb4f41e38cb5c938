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
"""Knowledge off: KnowBERT-KAR and ERNIE on their default LUKE backbone (``backbone="luke"``, no flag) with no
knowledge layer (``kar_num_layers=0``, ``ernie_num_fusion_layers=0``) and no KB inputs are exactly
``transformers.LukeModel``, so every difference a knowledge run shows is the knowledge's; GESA's backbone is the named
option ``backbone="gesa"``, and a config saved before the field loads with the backbone it was trained with."""

from __future__ import annotations

import pytest
import torch
from model_helpers import assert_answers_as_luke, config_error, record_like_batch
from transformers import LukeModel

from gesa.configuration_variants import ErnieConfig, KarConfig
from gesa.modeling_ernie import ErnieForEntitySpanQA, ErnieModel
from gesa.modeling_ernie_entity import ErnieForEntityPairClassification
from gesa.modeling_kar import KarForEntitySpanQA, KarModel
from gesa.modeling_kar_entity import KarForEntityClassification
from gesa.training.registry import VARIANTS

LUKE_INPUTS = ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask", "entity_position_ids")


@pytest.mark.parametrize(
    "model_class, knowledge_off",
    [(KarModel, {"kar_num_layers": 0}), (ErnieModel, {"ernie_num_fusion_layers": 0})],
)
def test_variant_without_knowledge_is_luke_model(tiny_luke_dir, model_class, knowledge_off):
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    model = model_class.from_luke_pretrained(tiny_luke_dir, **knowledge_off).eval()  # no backbone flag
    assert model.config.backbone == "luke" and model.config.use_absolute_position_embeddings
    assert model.luke_conversion_info["unexpected_keys"] == []  # LUKE's positions and entity-aware queries all used
    assert not any("kar." in name or "fusion_layers" in name for name, _ in model.named_parameters())
    batch = record_like_batch(vocab_size=1000)
    inputs = {key: batch[key] for key in LUKE_INPUTS}
    assert_answers_as_luke(model, luke, inputs)


def test_kar_with_knowledge_differs_from_luke_model(tiny_luke_dir):
    """The comparison above can fail: the same backbone with its KAR block (W2 = pinv(W1)) is not LukeModel."""
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    model = KarModel.from_luke_pretrained(tiny_luke_dir, kar_layer=1).eval()
    batch = record_like_batch(vocab_size=1000)
    inputs = {key: batch[key] for key in ("input_ids", "attention_mask")}
    with torch.no_grad():
        difference = (model(**inputs).last_hidden_state - luke(**inputs).last_hidden_state).abs().max()
    assert difference > 1e-3


def test_kar_inputs_without_a_kar_block_are_refused(tiny_luke_dir):
    model = KarModel.from_luke_pretrained(tiny_luke_dir, kar_num_layers=0).eval()
    batch = record_like_batch(vocab_size=1000)
    spans = torch.tensor([[[1, 2]], [[0, 0]]])
    with pytest.raises(ValueError, match="kar_mention_spans given to a model without a KAR block"):
        model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], kar_mention_spans=spans)
    with config_error("kar_num_layers", "0 \\(knowledge off\\) or 1"):
        KarConfig(kar_num_layers=2)


@pytest.mark.parametrize(
    "model_class, knowledge_off",
    [(KarModel, {"kar_num_layers": 0}), (ErnieModel, {"ernie_num_fusion_layers": 0})],
)
def test_gesa_backbone_is_the_named_option_and_differs_from_luke(tiny_luke_dir, model_class, knowledge_off):
    """``backbone="gesa"``: GESA's relative labels, no absolute positions (LUKE's position tables left unused), so
    not LUKE's states: the comparison above can fail."""
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    model = model_class.from_luke_pretrained(tiny_luke_dir, backbone="gesa", **knowledge_off).eval()
    assert model.config.backbone == "gesa" and not model.config.use_absolute_position_embeddings
    assert any("position_embeddings" in key for key in model.luke_conversion_info["unexpected_keys"])
    inputs = {key: value for key, value in record_like_batch(vocab_size=1000).items() if key in LUKE_INPUTS}
    with torch.no_grad():
        difference = (model(**inputs).last_hidden_state - luke(**inputs).last_hidden_state).abs().max()
    assert difference > 1e-3


@pytest.mark.parametrize("config_class", [KarConfig, ErnieConfig])
def test_backbone_resolves_and_saved_configs_keep_theirs(config_class):
    assert config_class().backbone == "luke" and config_class().ablation == "luke"
    assert config_class(backbone="gesa").use_relative_labels and config_class(ablation="w2w_local").backbone == "gesa"
    # a GESA-backbone config saved before the field existed (what every KAR/ERNIE checkpoint had) reloads as GESA
    saved = config_class(backbone="gesa").to_diff_dict()
    del saved["backbone"]
    assert config_class.from_dict(saved).backbone == "gesa"
    assert not config_class.from_dict(saved).use_absolute_position_embeddings
    assert config_class.from_dict(config_class().to_diff_dict()).backbone == "luke"
    with config_error("backbone", "'bert' is unknown"):
        config_class(backbone="bert")
    with pytest.raises(ValueError, match="backbone='gesa' contradicts ablation='luke'"):
        config_class(backbone="gesa", ablation="luke")


@pytest.mark.parametrize(
    "head, knowledge_off",
    [
        (KarForEntitySpanQA, {"kar_num_layers": 0}),
        (KarForEntityClassification, {"kar_num_layers": 0}),
        (ErnieForEntitySpanQA, {"ernie_num_fusion_layers": 0}),
        (ErnieForEntityPairClassification, {"ernie_num_fusion_layers": 0}),
    ],
)
def test_record_and_entity_heads_convert_with_the_luke_backbone(tiny_luke_dir, head, knowledge_off):
    """ReCoRD's and the entity tasks' heads alike: LUKE's encoder under the head, with no flag."""
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    model = head.from_luke_pretrained(tiny_luke_dir, **knowledge_off).eval()
    assert model.config.backbone == "luke"
    inputs = {key: value for key, value in record_like_batch(vocab_size=1000).items() if key in LUKE_INPUTS}
    with torch.no_grad():
        expected, actual = luke(**inputs), model.gesa(**inputs)
    real = inputs["attention_mask"].bool()
    torch.testing.assert_close(actual.last_hidden_state[real], expected.last_hidden_state[real], atol=1e-5, rtol=0)


@pytest.mark.parametrize("variant", ["kar", "ernie"])
def test_the_scripts_variants_get_the_luke_backbone_unless_asked(tiny_luke_dir, variant):
    assert VARIANTS[variant].from_luke(tiny_luke_dir).config.backbone == "luke"
    assert VARIANTS[variant].from_luke(tiny_luke_dir, ablation="full").config.backbone == "gesa"

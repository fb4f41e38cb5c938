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
"""The context-graph model's token embedder (thesis 3.2.1): by default LUKE's word encoder exactly as pre-trained
(equal to ``transformers.LukeModel``, word order read through its absolute positions, nothing newly initialised) and
frozen; GESA's conversion only when asked (``token_embedder="gesa"``), then fine-tuned unless asked otherwise."""

from __future__ import annotations

import pytest
import torch
from transformers import LukeModel, LukeTokenizer

from gesa.configuration_context_graph import ContextGraphConfig
from gesa.modeling_context_graph import ContextGraphForMultipleChoice

TEXT = "Velmor is a small town in Abo Province, which lies north of the river Elbe in Germany."


def token_ids(tiny_luke_dir) -> torch.Tensor:
    ids = LukeTokenizer.from_pretrained(tiny_luke_dir)(TEXT, return_tensors="pt")["input_ids"]
    assert ids.size(1) >= 20
    return ids


def test_the_frozen_default_embedder_is_lukes_encoder_as_trained(tiny_luke_dir):
    model = ContextGraphForMultipleChoice.from_luke_pretrained(tiny_luke_dir).eval()
    assert model.config.token_embedder == "luke" and model.config.freeze_word_encoder
    assert model.config.use_absolute_position_embeddings and not model.config.use_relative_labels
    fresh = [name for name in model.luke_conversion_info["missing_keys"] if name.startswith("gesa.")]
    assert fresh == []  # no parameter of the embedder is newly initialised
    assert not any(p.requires_grad for p in model.gesa.parameters())
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    ids = token_ids(tiny_luke_dir)
    mask = torch.ones_like(ids)
    model.train()  # a frozen embedder runs without dropout even while the model trains
    states = model.embed_tokens(ids, mask)
    with torch.no_grad():
        expected = luke(input_ids=ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(states, expected, rtol=1e-5, atol=1e-5)
    # word order: the reversed words (between <s> and </s>) get other states, each word compared with itself
    reversed_ids = torch.cat([ids[:, :1], ids[:, 1:-1].flip(1), ids[:, -1:]], dim=1)
    back = model.embed_tokens(reversed_ids, mask)[:, 1:-1].flip(1)
    assert (back - states[:, 1:-1]).abs().max() > 1e-2


def test_the_gesa_embedder_is_converted_only_when_asked_and_then_fine_tuned(tiny_luke_dir):
    model = ContextGraphForMultipleChoice.from_luke_pretrained(tiny_luke_dir, token_embedder="gesa")
    assert model.config.ablation is None and not model.config.use_absolute_position_embeddings
    assert not model.config.freeze_word_encoder and all(p.requires_grad for p in model.gesa.parameters())
    assert any(".label_embeddings." in name for name in model.luke_conversion_info["missing_keys"])
    frozen = ContextGraphForMultipleChoice.from_luke_pretrained(
        tiny_luke_dir, token_embedder="gesa", freeze_word_encoder=True
    )
    assert not any(p.requires_grad for p in frozen.gesa.parameters())


def test_a_gesa_preset_needs_the_gesa_embedder():
    with pytest.raises(ValueError, match="token_embedder=.gesa."):
        ContextGraphConfig(ablation="no_plc_edges")
    assert ContextGraphConfig(ablation="no_plc_edges", token_embedder="gesa").ablation == "no_plc_edges"
    with pytest.raises(ValueError, match="use token_embedder=.luke."):
        ContextGraphConfig(ablation="luke", token_embedder="gesa")

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
"""Tiny GESA configurations and a ReCoRD-shaped batch shared by the model and variant tests, and the error a
rejected config value raises."""

from __future__ import annotations

import pytest
import torch
from huggingface_hub.errors import StrictDataclassError

from gesa import GesaConfig

TINY = dict(
    vocab_size=64,
    entity_vocab_size=4,
    hidden_size=32,
    entity_emb_size=16,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_relative_position=3,
)


def tiny_config(**overrides) -> GesaConfig:
    return GesaConfig(**{**TINY, **overrides})


def record_like_batch(vocab_size: int = 64, seed: int = 0) -> dict[str, torch.Tensor]:
    """Two examples shaped like ReCoRD features; the second is padded (words and entities)."""
    g = torch.Generator().manual_seed(seed)
    L, E = 14, 5
    input_ids = torch.randint(5, vocab_size, (2, L), generator=g)
    attention_mask = torch.ones(2, L, dtype=torch.long)
    attention_mask[1, 11:] = 0
    input_ids[1, 11:] = 1
    # <s> q q [PLC] q </s> </s> d d d d d d </s>
    global_attention_mask = torch.zeros(2, L, dtype=torch.long)
    global_attention_mask[:, 0] = 1
    global_attention_mask[:, 1:5] = 2
    entity_position_ids = torch.full((2, E, 3), -1)
    entity_position_ids[:, 0, 0] = 3  # placeholder on [PLC]
    entity_position_ids[:, 1, :2] = torch.tensor([7, 8])
    entity_position_ids[:, 2, 0] = 9
    entity_position_ids[0, 3, :2] = torch.tensor([11, 12])
    entity_position_ids[0, 4, 0] = 10
    entity_attention_mask = torch.ones(2, E, dtype=torch.long)
    entity_attention_mask[1, 3:] = 0
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        entity_ids=torch.full((2, E), 2),
        entity_attention_mask=entity_attention_mask,
        entity_position_ids=entity_position_ids,
        global_attention_mask=global_attention_mask,
        placeholder_entity_mask=torch.tensor([[1, 0, 0, 0, 0], [1, 0, 0, 0, 0]]),
        entity_string_ids=torch.tensor([[-1, 0, 1, 0, 2], [-1, 0, 1, -1, -1]]),
        entity_sentence_ids=torch.tensor([[-1, 0, 0, 1, 1], [-1, 0, 1, -1, -1]]),
    )


# The LUKE-Graph tests' tiny model: the same, with max_relative_position left at its default
LUKE_GRAPH_TINY = {key: value for key, value in TINY.items() if key != "max_relative_position"}


def config_error(field: str, message: str = ""):
    """The error of a rejected config value: `strict`'s field/class validation errors, or a `ValueError`, naming
    `field` (then `message`)."""
    return pytest.raises((ValueError, StrictDataclassError), match=rf"(?s){field}.*{message}")

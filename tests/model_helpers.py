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

import contextlib
import textwrap
from collections.abc import Iterator

import pytest
import torch
from huggingface_hub.errors import StrictDataclassError
from tiny_luke import TINY_SIZES

from gesa import GesaConfig

TINY = dict(TINY_SIZES, vocab_size=64, entity_vocab_size=4, max_relative_position=3)


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


# Code run first in a fresh process that loads a saved checkpoint: `gesa` cannot be imported there, so the checkpoint
# must carry all its code (the way a user without the package loads it from the Hub).
WITHOUT_GESA = textwrap.dedent("""
    import importlib.abc, sys

    class NoGesa(importlib.abc.MetaPathFinder):  # the checkpoint must carry all its code
        def find_spec(self, name, path=None, target=None):
            if name == "gesa" or name.startswith("gesa."):
                raise ModuleNotFoundError(f"No module named {name!r}")

    sys.meta_path.insert(0, NoGesa())
    try:
        import gesa
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit("gesa is importable")
""")


@contextlib.contextmanager
def lukes_own_queries() -> Iterator[None]:
    """Conversions inside keep the entity-aware queries exact copies of LUKE's word query
    (`GesaPreTrainedModel.entity_query_gain = None`): for tests whose label tables are drawn at a size chosen for the
    tiny LUKE's own query scale (`randomize_label_tables`)."""
    from gesa.modeling_gesa import GesaPreTrainedModel

    previous = GesaPreTrainedModel.entity_query_gain
    GesaPreTrainedModel.entity_query_gain = None
    try:
        yield
    finally:
        GesaPreTrainedModel.entity_query_gain = previous


def randomize_label_tables(model: torch.nn.Module, std: float, seed: int = 0) -> None:
    """Draw every layer's relative-label embeddings from N(0, std^2) (one generator seeded `seed`, layer by layer),
    the NULL label's row kept at zero: a freshly converted model's label terms are zero until trained."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in model.gesa.encoder.layer:
            table = layer.attention.self.label_embeddings
            if table is not None:
                table.weight.copy_(torch.randn(table.weight.shape, generator=generator) * std)
                table.weight[0] = 0.0  # the NULL label


def assert_answers_as_luke(model: torch.nn.Module, luke: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> None:
    """`model` gives the reference `luke`'s outputs on `inputs` and on their words alone: word states at the real
    positions, the pooled output, and the entity states where entities are given (atol 1e-5)."""
    with torch.no_grad():
        for given in (inputs, {key: inputs[key] for key in ("input_ids", "attention_mask")}):
            expected, actual = luke(**given), model(**given)
            real = given["attention_mask"].bool()
            torch.testing.assert_close(
                actual.last_hidden_state[real], expected.last_hidden_state[real], atol=1e-5, rtol=0
            )
            torch.testing.assert_close(actual.pooler_output, expected.pooler_output, atol=1e-5, rtol=0)
            if "entity_ids" in given:
                torch.testing.assert_close(
                    actual.entity_last_hidden_state, expected.entity_last_hidden_state, atol=1e-5, rtol=0
                )


def config_error(field: str, message: str = ""):
    """The error of a rejected config value: `strict`'s field/class validation errors, or a `ValueError`, naming
    `field` (then `message`)."""
    return pytest.raises((ValueError, StrictDataclassError), match=rf"(?s){field}.*{message}")

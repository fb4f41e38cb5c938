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
"""Long-input fixtures shared by the long-input and the kernel tests: a tiny labelled GESA model and
ReCoRD-shaped batches of different lengths."""

from __future__ import annotations

import model_helpers
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gesa import GesaConfig, GesaModel

# model_helpers.TINY narrower: the long-input tests run thousands of words through it.
TINY = dict(model_helpers.TINY, max_relative_position=5)
TINY.update(hidden_size=16, entity_emb_size=8, num_attention_heads=2, intermediate_size=24)


def long_batch(word_lengths: list[int], entities: int = 6, question: int = 4, seed: int = 0) -> dict:
    """ReCoRD-shaped examples of different lengths padded to the longest: `<s>`, question tokens (one of them
    `[PLC]`), passage; entities with mentions in the passage, repeated strings and sentences, then padding."""
    g = torch.Generator().manual_seed(seed)
    B, L, E = len(word_lengths), max(word_lengths), entities
    batch = dict(
        input_ids=torch.randint(5, 64, (B, L), generator=g),
        attention_mask=torch.zeros(B, L, dtype=torch.long),
        global_attention_mask=torch.zeros(B, L, dtype=torch.long),
        entity_ids=torch.full((B, E), 2),
        entity_attention_mask=torch.ones(B, E, dtype=torch.long),
        entity_position_ids=torch.full((B, E, 3), -1),
        placeholder_entity_mask=torch.zeros(B, E, dtype=torch.long),
        entity_string_ids=torch.full((B, E), -1),
        entity_sentence_ids=torch.full((B, E), -1),
    )
    for b, length in enumerate(word_lengths):
        batch["attention_mask"][b, :length] = 1
        batch["input_ids"][b, length:] = 1
        batch["global_attention_mask"][b, 0] = 1
        batch["global_attention_mask"][b, 1 : 1 + question] = 2
        batch["entity_position_ids"][b, 0, 0] = 2  # the placeholder sits on a question token
        batch["placeholder_entity_mask"][b, 0] = 1
        real = E if b == 0 else E - 2  # the other examples pad their last entities
        batch["entity_attention_mask"][b, real:] = 0
        passage = torch.arange(question + 3, length)
        for e in range(1, real):
            start = int(passage[torch.randint(len(passage) - 1, (1,), generator=g)])
            batch["entity_position_ids"][b, e, :2] = torch.tensor([start, start + 1])
            batch["entity_string_ids"][b, e] = e % 3
            batch["entity_sentence_ids"][b, e] = start * 3 // length
    return batch


def model_with_labels(seed: int = 0, **overrides) -> GesaModel:
    torch.manual_seed(seed)
    model = GesaModel(GesaConfig(**{**TINY, **overrides})).train()
    for layer in model.encoder.layer:
        attention = layer.attention.self
        # scores of order one, so that each of the four query matrices and every label term moves the output
        for name in ("w2w_query", "w2e_query", "e2w_query", "e2e_query", "key"):
            if hasattr(attention, name):
                torch.nn.init.normal_(getattr(attention, name).weight, std=0.5)
        if attention.label_embeddings is not None:
            torch.nn.init.normal_(attention.label_embeddings.weight, std=1.0)
        torch.nn.init.normal_(layer.attention.output.dense.weight, std=0.5)
    return model


def outputs_and_grads(model: GesaModel, batch: dict, implementation: str) -> tuple[list[torch.Tensor], dict]:
    model.config._attn_implementation = implementation
    model.zero_grad()
    out = model(**batch)
    real = batch["attention_mask"].bool()
    words = out.last_hidden_state[real]
    (words.pow(2).mean() + out.entity_last_hidden_state.pow(2).mean()).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return [words, out.entity_last_hidden_state], grads


def assert_same(fast, dense, atol: float) -> None:
    (fast_out, fast_grads), (dense_out, dense_grads) = fast, dense
    for a, b in zip(fast_out, dense_out, strict=True):
        torch.testing.assert_close(a, b, atol=atol, rtol=atol)
    assert fast_grads.keys() == dense_grads.keys()
    for name, grad in dense_grads.items():
        torch.testing.assert_close(fast_grads[name], grad, atol=atol, rtol=atol, msg=name)


def structure_of(model: GesaModel, batch: dict):
    """The attention structure (masks and labels) `model`'s layers read for `batch`; the question's string ids and
    the context graph's edges where the batch has them."""
    return model.build_attention_structure(
        torch.cat([batch["attention_mask"], batch["entity_attention_mask"]], dim=1),
        batch["input_ids"].size(1),
        batch["global_attention_mask"],
        batch["entity_position_ids"],
        batch["placeholder_entity_mask"],
        batch["entity_string_ids"],
        batch["entity_sentence_ids"],
        batch.get("question_string_ids"),
        batch.get("entity_graph_edges"),
    )


class LargestTensor(TorchDispatchMode):
    """Records the largest number of elements of any tensor an operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out

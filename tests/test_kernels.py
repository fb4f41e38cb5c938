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
"""The attention kernels (`kernels_gesa`) on their own: hand-written backwards equal autograd's gradient (gradcheck
in float64, dropout masks fixed by reseeding), dropout keeps each element with probability 1 - p, and the windowed
kernel allocates nothing quadratic in length."""

from __future__ import annotations

import pytest
import torch
from long_helpers import TINY, long_batch, model_with_labels, structure_of
from torch.utils._python_dispatch import TorchDispatchMode

from gesa import kernels_gesa
from gesa.kernels_gesa import FusedAttention
from gesa.structure_gesa import label_terms


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


def test_windowed_attention_allocates_nothing_quadratic():
    model = model_with_labels(attention_window=4, num_hidden_layers=1)
    L = 1024
    batch = long_batch([L, L - 100])
    with LargestTensor() as probe:
        out = model(**batch)
        (out.last_hidden_state.sum() + out.entity_last_hidden_state.sum()).backward()
    B, H, width = 2, TINY["num_attention_heads"], kernels_gesa.WINDOW_BLOCK + 2 * 4
    # the biggest tensors are the window scores (B, H, L, width + globals + entities), far below one (P, P) matrix
    assert probe.largest <= B * H * L * (width + 5 + 6) < L * L


# ---------------------------------------------------------------------------------------------
# Fused dense path == eager path
# ---------------------------------------------------------------------------------------------


# every ablation through every implementation: tests/test_attention_implementations.py


def test_fused_attention_backward_with_dropout_is_the_gradient():
    """gradcheck in float64 with the dropout masks fixed by reseeding: the hand-written backward is exact."""
    model = model_with_labels(num_hidden_layers=1)
    batch = long_batch([9, 7], entities=3, question=2)
    structure = structure_of(model, batch)
    attention = model.encoder.layer[0].attention.self.double()
    plan = kernels_gesa.dense_plan(structure.tokens, 9, 2, torch.float64)
    g = torch.Generator().manual_seed(0)
    B, H, P, d = 2, 2, 12, 8
    q_word, q_entity, key, value = (torch.randn(B, H, P, d, generator=g, dtype=torch.float64) for _ in range(4))
    assert sum(len(words) for words in plan.global_words) and plan.entity_ids is not None  # every kind of label
    table = attention.label_embeddings.weight
    inputs = [t.detach().clone().requires_grad_() for t in (q_word, q_entity, key, value, table)]

    def attend(*tensors):
        torch.manual_seed(1)  # the same dropout masks at every evaluation
        return FusedAttention.apply(*tensors, plan, 0.3)

    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-6, fast_mode=True)
    assert (attend(*inputs) != FusedAttention.apply(*inputs, plan, 0.0)).any()  # dropout did act


def test_windowed_attention_backward_with_dropout_is_the_gradient(monkeypatch):
    """gradcheck of the local-row function in float64 (dropout masks fixed by reseeding), over several chunks."""
    monkeypatch.setattr(kernels_gesa, "WINDOW_BLOCK", 4)
    monkeypatch.setattr(kernels_gesa, "SCORE_BLOCK_BYTES", 1)
    model = model_with_labels(num_hidden_layers=1, attention_window=6)
    batch = long_batch([11, 9], entities=3, question=2)
    structure = structure_of(model, batch)
    B, H, P, d, L = 2, 2, 14, 8, 11
    plan = kernels_gesa.window_plan(structure.tokens, L, H, torch.float64)
    assert plan.blocks == 3 and plan.heads_per_chunk == 1 and plan.blocks_per_chunk == 1
    g = torch.Generator().manual_seed(0)
    k, E = structure.tokens.distance_k, P - L
    # q_word, q_entity, key, value, distance terms, rank terms (NULL, question, CLS), w2e terms
    shapes = [(B, H, L, d), (B, H, L, d), (B, H, P, d), (B, H, P, d), (B, H, L, 2 * k + 1), (B, H, L, 3), (B, H, L, E)]
    inputs = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in shapes]

    def attend(*tensors):
        torch.manual_seed(1)  # the same dropout masks at every evaluation
        return kernels_gesa.WindowedAttention.apply(*tensors, plan, 0.3)

    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-6, fast_mode=True)
    assert (attend(*inputs) != kernels_gesa.WindowedAttention.apply(*inputs, plan, 0.0)).any()


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout_keep_mask_keeps_each_element_with_probability_one_minus_p(p):
    """Two 16-bit draws per random word: the keep rate is 1 - p (to 2^-17), independent across neighbours and
    positions, for odd sizes too, and reproducible under a seed."""
    like = torch.empty(3, 301, 333)  # an odd number of elements
    torch.manual_seed(0)
    kept = kernels_gesa.dropout_keep_mask(like, p)
    assert kept.shape == like.shape and kept.dtype == torch.bool
    n = kept.numel()
    sigma = (p * (1 - p) / n) ** 0.5
    assert abs(kept.float().mean().item() - (1 - p)) < 5 * sigma
    flat = kept.flatten().float()
    # the two halves of a random word are independent: P(both kept) = (1 - p)^2
    both = (flat[0 : n - 1 : 2] * flat[1::2]).mean().item()
    assert abs(both - (1 - p) ** 2) < 5 * ((1 - p) ** 2 * (1 - (1 - p) ** 2) / (n // 2)) ** 0.5
    for rate in (kept[0].float().mean(), kept[..., -1].float().mean(), kept[:, :, 0].float().mean()):
        assert abs(rate.item() - (1 - p)) < 0.02
    torch.manual_seed(0)
    assert torch.equal(kernels_gesa.dropout_keep_mask(like, p), kept)


# ---------------------------------------------------------------------------------------------
# Bias path (accelerators: one label bias + one SDPA call per layer) == eager path
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ablation", ["full", "w2w_local", "no_labels_w2w"])
def test_label_bias_backward_is_the_gradient(ablation):
    """gradcheck in float64 of the hand-written per-label sums: clipped ends, globals, padded keys, entity blocks."""
    model = model_with_labels(num_hidden_layers=1, max_relative_position=3, ablation=ablation)
    batch = long_batch([13, 9], entities=4, question=2)  # 13 words: pairs clipped at both ends of k = 3
    tokens = structure_of(model, batch).tokens
    B, H, L, E = 2, 2, 13, 4
    plan = kernels_gesa.bias_plan(tokens, L, True, torch.float64)
    C = 2 * tokens.distance_k + 1
    g = torch.Generator().manual_seed(0)
    shapes = [(B, H, L, C), (B, H, L, 3), (B, H, L, E), (B, H, E, L), (B, H, E, E)]
    inputs = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in shapes]
    if tokens.word_ranks is None:
        inputs[1] = None
    if ablation == "full":  # every kind of word pair: local, question-global, CLS-global, padded key
        assert set(plan.pair_kind.unique().tolist()) == {0, 1, 2, 3}

    def bias(*tensors):
        return kernels_gesa.LabelBias.apply(*tensors, plan)

    assert torch.autograd.gradcheck(bias, inputs, eps=1e-6, atol=1e-6)
    # P = 17: rows padded to 32 elements, so that SDPA's memory-efficient kernel needs no aligned copy
    assert bias(*inputs).shape == (B, H, L + E, L + E) and bias(*inputs).stride()[:3] == (H * 17 * 32, 17 * 32, 32)


def test_bias_attention_backward_with_dropout_is_the_gradient():
    """gradcheck of the whole bias path (bias, entity-key correction, SDPA) in float64, dropout masks fixed by
    reseeding."""
    model = model_with_labels(num_hidden_layers=1)
    batch = long_batch([9, 7], entities=3, question=2)
    tokens = structure_of(model, batch).tokens
    attention = model.encoder.layer[0].attention.self.double()
    B, H, P, d, L = 2, 2, 12, 8, 9
    g = torch.Generator().manual_seed(0)
    q_word, q_entity, key, value = (
        torch.randn(B, H, P, d, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(4)
    )

    def attend(q_word, q_entity, key, value, dropout_p=0.3):
        torch.manual_seed(1)  # the same dropout masks at every evaluation
        terms = label_terms(attention.label_embeddings.weight, q_word, q_entity, tokens, L)
        return kernels_gesa.bias_attention(q_word, q_entity, key, value, terms, tokens, L, dropout_p)

    inputs = (q_word, q_entity, key, value)
    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-6, fast_mode=True)
    assert (attend(*inputs) != attend(*inputs, dropout_p=0.0)).any()  # dropout did act

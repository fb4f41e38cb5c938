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
"""The attention kernels on their own, tensors in: each kernel (`kernel_fused_gesa`, `kernel_bias_gesa`,
`kernel_windowed_gesa`, `kernel_flex_gesa`) equals Eq. 1 written plainly (`attention_reference_gesa`), outputs and
gradients; the hand-written backwards equal autograd's gradient (gradcheck in float64, dropout masks fixed by
reseeding), dropout keeps each element with probability 1 - p, and the windowed kernel allocates nothing quadratic in
length."""

from __future__ import annotations

import pytest
import torch
from long_helpers import TINY, LargestTensor, long_batch, model_with_labels, structure_of

from gesa import kernel_bias_gesa, kernel_common_gesa, kernel_fused_gesa, kernel_windowed_gesa
from gesa.attention_reference_gesa import reference_attention
from gesa.kernel_bias_gesa import LabelBias, bias_attention
from gesa.kernel_flex_gesa import flex_label_attention
from gesa.kernel_fused_gesa import FusedAttention, fused_attention
from gesa.kernel_windowed_gesa import WindowedAttention, windowed_attention
from gesa.labels_gesa import label_terms


def test_windowed_attention_allocates_nothing_quadratic():
    model = model_with_labels(attention_window=4, num_hidden_layers=1)
    L = 1024
    batch = long_batch([L, L - 100])
    with LargestTensor() as probe:
        out = model(**batch)
        (out.last_hidden_state.sum() + out.entity_last_hidden_state.sum()).backward()
    B, H, width = 2, TINY["num_attention_heads"], kernel_windowed_gesa.WINDOW_BLOCK + 2 * 4
    # the biggest tensors are the window scores (B, H, L, width + globals + entities), far below one (P, P) matrix
    assert probe.largest <= B * H * L * (width + 5 + 6) < L * L


# ---------------------------------------------------------------------------------------------
# Every kernel == Eq. 1 written plainly (attention_reference_gesa), outputs and gradients
# ---------------------------------------------------------------------------------------------

# (kernel, attention_window): the fused kernel is dense only, the windowed one needs a window
KERNEL_CASES = [("fused", None), ("bias", None), ("bias", 4), ("windowed", 4), ("flex", None), ("flex", 4)]
# every kind of label term: all on, no global labels, no w2w labels, e2e by entity distance, none at all
REFERENCE_ABLATIONS = ["full", "w2w_local", "no_labels_w2w", "e2e_local", "luke"]


@pytest.fixture
def tiny_kernel_blocks(monkeypatch):
    """One head per fused score block, 8-row windows, one head and block per windowed chunk: every loop runs."""
    monkeypatch.setattr(kernel_fused_gesa, "SCORE_BLOCK_BYTES", 1)
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", 8)
    monkeypatch.setattr(kernel_windowed_gesa, "SCORE_CHUNK_BYTES", 1)


def kernel_context(kernel, q_word, q_entity, key, value, table, tokens, L):
    """`kernel`'s context `(B, H, P, d)` for scaled queries, given the label table as a tensor (None: no labels)."""
    if not tokens.use_labels:
        table = None
    terms = None if table is None else label_terms(table, q_word, q_entity, tokens, L)
    if kernel == "fused":
        return fused_attention(q_word, q_entity, key, value, table, tokens, L, 0.0)
    if kernel == "bias":
        return bias_attention(q_word, q_entity, key, value, terms, tokens, L, 0.0)
    if kernel == "windowed":
        return windowed_attention(q_word, q_entity, key, value, terms, tokens, L, 0.0)
    return flex_label_attention(q_word, q_entity, key, value, terms, tokens, L)


def kernel_and_reference(kernel, window, ablation, shared_query, backward=True):
    """The kernel's and the reference's context on the real query rows and, with `backward`, the gradients of a
    random weighting of them with respect to both queries, keys, values and the label table (float64)."""
    model = model_with_labels(num_hidden_layers=1, ablation=ablation, attention_window=window)
    batch = long_batch([37, 30])  # padded words and entities, CLS and question globals, mentions, the entity graph
    structure = structure_of(model, batch)
    tokens, L = structure.tokens, structure.word_length
    table = model.encoder.layer[0].attention.self.label_embeddings
    table = None if table is None else table.weight.detach().double()
    B, H, P, d = 2, TINY["num_attention_heads"], tokens.attention_mask.size(1), 8
    g = torch.Generator().manual_seed(0)
    q_word, q_entity, key, value = (torch.randn(B, H, P, d, generator=g, dtype=torch.float64) for _ in range(4))
    inputs = [q_word, q_word if shared_query else q_entity, key, value] + ([] if table is None else [table])
    real = tokens.attention_mask.bool()
    weights = torch.randn(B, H, P, d, generator=g, dtype=torch.float64).masked_fill(~real[:, None, :, None], 0)
    scaling = d**-0.5

    def run(attend):
        leaves = [t.detach().clone().requires_grad_(backward) for t in inputs[2 if shared_query else 1 :]]
        q_word = inputs[0].detach().clone().requires_grad_(backward)
        q_entity = q_word if shared_query else leaves.pop(0)
        key, value, *rest = leaves
        table = rest[0] if rest else None
        with torch.set_grad_enabled(backward):
            context = attend(q_word, q_entity, key, value, table)
            if not backward:
                return [context.transpose(1, 2)[real]]
            (context * weights).sum().backward()
        grads = [q_word.grad] + ([] if shared_query else [q_entity.grad]) + [key.grad, value.grad]
        return [context.transpose(1, 2)[real]] + grads + ([] if table is None else [table.grad])

    def by_kernel(q_word, q_entity, key, value, table):
        scaled_word = q_word * scaling
        scaled_entity = scaled_word if q_entity is q_word else q_entity * scaling
        return kernel_context(kernel, scaled_word, scaled_entity, key, value, table, tokens, L)

    def by_reference(q_word, q_entity, key, value, table):
        labels = structure.labels
        return reference_attention(q_word, q_entity, key, value, structure.allowed, labels, L, scaling, table=table)[0]

    return run(by_kernel), run(by_reference)


@pytest.mark.parametrize("shared_query", [False, True])
@pytest.mark.parametrize("ablation", REFERENCE_ABLATIONS)
@pytest.mark.parametrize("kernel, window", [case for case in KERNEL_CASES if case[0] != "flex"])
def test_kernel_equals_the_reference_with_gradients(tiny_kernel_blocks, kernel, window, ablation, shared_query):
    """Each kernel against `reference_attention` in float64: the context of every real query row and the gradients
    of both queries (or the one shared query), keys, values and the label table."""
    actual, expected = kernel_and_reference(kernel, window, ablation, shared_query)
    assert len(actual) == len(expected) == (4 if shared_query else 5) + (ablation != "luke")
    for a, e in zip(actual, expected, strict=True):
        torch.testing.assert_close(a, e, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("shared_query", [False, True])
@pytest.mark.parametrize("ablation", REFERENCE_ABLATIONS)
@pytest.mark.parametrize("window", [None, 4])
def test_flex_kernel_equals_the_reference(ablation, window, shared_query):
    """FlexAttention has no CPU backward (torch 2.13): its forward only."""
    actual, expected = kernel_and_reference("flex", window, ablation, shared_query, backward=False)
    torch.testing.assert_close(actual[0], expected[0], atol=1e-10, rtol=1e-10)


def test_flex_kernel_refuses_dropout():
    """The kernels share one calling convention, dropout included; FlexAttention applies none, so it refuses one."""
    model = model_with_labels(num_hidden_layers=1)
    tokens = structure_of(model, long_batch([9, 7], entities=3, question=2)).tokens
    q_word, q_entity, key, value = (torch.randn(2, 2, 12, 8) for _ in range(4))
    with pytest.raises(ValueError, match="applies no dropout of the probabilities; got dropout_p=0.1"):
        flex_label_attention(q_word, q_entity, key, value, None, tokens, 9, 0.1)


def test_fused_attention_backward_with_dropout_is_the_gradient():
    """gradcheck in float64 with the dropout masks fixed by reseeding: the hand-written backward is exact."""
    model = model_with_labels(num_hidden_layers=1)
    batch = long_batch([9, 7], entities=3, question=2)
    structure = structure_of(model, batch)
    attention = model.encoder.layer[0].attention.self.double()
    plan = kernel_fused_gesa.dense_plan(structure.tokens, 9, 2, torch.float64)
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
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", 4)
    monkeypatch.setattr(kernel_windowed_gesa, "SCORE_CHUNK_BYTES", 1)
    model = model_with_labels(num_hidden_layers=1, attention_window=6)
    batch = long_batch([11, 9], entities=3, question=2)
    structure = structure_of(model, batch)
    B, H, P, d, L = 2, 2, 14, 8, 11
    plan = kernel_windowed_gesa.window_plan(structure.tokens, L, H, torch.float64)
    assert plan.blocks == 3 and plan.heads_per_chunk == 1 and plan.blocks_per_chunk == 1
    g = torch.Generator().manual_seed(0)
    k, E = structure.tokens.distance_k, P - L
    # q_word, q_entity, key, value, distance terms, rank terms (NULL, question, CLS), w2e terms
    shapes = [(B, H, L, d), (B, H, L, d), (B, H, P, d), (B, H, P, d), (B, H, L, 2 * k + 1), (B, H, L, 3), (B, H, L, E)]
    inputs = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in shapes]

    def attend(*tensors):
        torch.manual_seed(1)  # the same dropout masks at every evaluation
        return WindowedAttention.apply(*tensors, plan, 0.3)

    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-6, fast_mode=True)
    assert (attend(*inputs) != WindowedAttention.apply(*inputs, plan, 0.0)).any()


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout_keep_mask_keeps_each_element_with_probability_one_minus_p(p):
    """Two 16-bit draws per random word: the keep rate is 1 - p (to 2^-17), independent across neighbours and
    positions, for odd sizes too, and reproducible under a seed."""
    like = torch.empty(3, 301, 333)  # an odd number of elements
    torch.manual_seed(0)
    kept = kernel_common_gesa.dropout_keep_mask(like, p)
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
    assert torch.equal(kernel_common_gesa.dropout_keep_mask(like, p), kept)


# ---------------------------------------------------------------------------------------------
# Bias path (accelerators: one label bias + one SDPA call per layer): its hand-written backward
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ablation", ["full", "w2w_local", "no_labels_w2w"])
def test_label_bias_backward_is_the_gradient(ablation):
    """gradcheck in float64 of the hand-written per-label sums: clipped ends, globals, padded keys, entity blocks."""
    model = model_with_labels(num_hidden_layers=1, max_relative_position=3, ablation=ablation)
    batch = long_batch([13, 9], entities=4, question=2)  # 13 words: pairs clipped at both ends of k = 3
    tokens = structure_of(model, batch).tokens
    B, H, L, E = 2, 2, 13, 4
    plan = kernel_bias_gesa.bias_plan(tokens, L, True, torch.float64)
    C = 2 * tokens.distance_k + 1
    g = torch.Generator().manual_seed(0)
    shapes = [(B, H, L, C), (B, H, L, 3), (B, H, L, E), (B, H, E, L), (B, H, E, E)]
    inputs = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in shapes]
    if tokens.word_ranks is None:
        inputs[1] = None
    if ablation == "full":  # every kind of word pair: local, question-global, CLS-global, padded key
        assert set(plan.pair_kind.unique().tolist()) == {0, 1, 2, 3}

    def bias(*tensors):
        return LabelBias.apply(*tensors, plan)

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
        return bias_attention(q_word, q_entity, key, value, terms, tokens, L, dropout_p)

    inputs = (q_word, q_entity, key, value)
    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-6, fast_mode=True)
    assert (attend(*inputs) != attend(*inputs, dropout_p=0.0)).any()  # dropout did act

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
"""Fast attention paths: the fused and bias dense paths and the linear-cost windowed path equal the dense eager
computation (outputs and gradients), and their hand-written backwards are the gradient."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gesa import ABLATION_PRESETS, GesaConfig, GesaModel, attention_gesa
from gesa.attention_gesa import FusedAttention

TINY = dict(
    vocab_size=64,
    entity_vocab_size=4,
    hidden_size=16,
    entity_emb_size=8,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=24,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_relative_position=5,
)


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
    return model.build_attention_structure(
        torch.cat([batch["attention_mask"], batch["entity_attention_mask"]], dim=1),
        batch["input_ids"].size(1),
        batch["global_attention_mask"],
        batch["entity_position_ids"],
        batch["placeholder_entity_mask"],
        batch["entity_string_ids"],
        batch["entity_sentence_ids"],
    )


# ---------------------------------------------------------------------------------------------
# Windowed (linear) path == dense masked eager path
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block, chunk_bytes", [(8, 1), (8, None), (64, None)])
@pytest.mark.parametrize(
    "lengths, window",
    [([40, 40], 3), ([53, 37], 5), ([64, 64], 8), ([97, 71], 1), ([30, 21], 0), ([45, 45], 200)],
)
def test_windowed_equals_dense_masked(monkeypatch, block, chunk_bytes, lengths, window):
    # lengths not multiples of the block, padding, windows below, at and above k = 5, window 0 and one > length;
    # chunk_bytes=1: every chunk of the scores is one head and one block
    monkeypatch.setattr(attention_gesa, "WINDOW_BLOCK", block)
    if chunk_bytes:
        monkeypatch.setattr(attention_gesa, "SCORE_BLOCK_BYTES", chunk_bytes)
    model = model_with_labels(attention_window=window)
    batch = long_batch(lengths)
    assert_same(outputs_and_grads(model, batch, "sdpa"), outputs_and_grads(model, batch, "eager"), atol=1e-4)


@pytest.mark.parametrize("ablation", sorted(ABLATION_PRESETS))
def test_windowed_equals_dense_masked_for_every_ablation(monkeypatch, ablation):
    monkeypatch.setattr(attention_gesa, "WINDOW_BLOCK", 8)
    model = model_with_labels(attention_window=4, ablation=ablation)
    batch = long_batch([43, 29])
    assert_same(outputs_and_grads(model, batch, "sdpa"), outputs_and_grads(model, batch, "eager"), atol=1e-4)


@pytest.mark.parametrize("inputs", ["words_only", "no_globals", "no_structure"])
def test_windowed_equals_dense_masked_with_missing_inputs(monkeypatch, inputs):
    monkeypatch.setattr(attention_gesa, "WINDOW_BLOCK", 8)
    model = model_with_labels(attention_window=3)
    batch = long_batch([33, 26])
    if inputs == "words_only":
        batch = {k: batch[k] for k in ("input_ids", "attention_mask", "global_attention_mask")}
    elif inputs == "no_globals":
        batch.pop("global_attention_mask")
    else:
        batch = {k: batch[k] for k in ("input_ids", "attention_mask", "entity_ids", "entity_position_ids")}
    real = batch["attention_mask"].bool()
    words = []
    for implementation in ("sdpa", "eager"):
        model.config._attn_implementation = implementation
        words.append(model(**batch).last_hidden_state[real])
    torch.testing.assert_close(words[0], words[1], atol=1e-4, rtol=1e-4)


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
    B, H, width = 2, TINY["num_attention_heads"], attention_gesa.WINDOW_BLOCK + 2 * 4
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
    plan = attention_gesa.dense_plan(structure.tokens, 9, 2, torch.float64)
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
    monkeypatch.setattr(attention_gesa, "WINDOW_BLOCK", 4)
    monkeypatch.setattr(attention_gesa, "SCORE_BLOCK_BYTES", 1)
    model = model_with_labels(num_hidden_layers=1, attention_window=6)
    batch = long_batch([11, 9], entities=3, question=2)
    structure = structure_of(model, batch)
    B, H, P, d, L = 2, 2, 14, 8, 11
    plan = attention_gesa.window_plan(structure.tokens, L, H, torch.float64)
    assert plan.blocks == 3 and plan.heads_per_chunk == 1 and plan.blocks_per_chunk == 1
    g = torch.Generator().manual_seed(0)
    k, E = structure.tokens.distance_k, P - L
    # q_word, q_entity, key, value, distance terms, rank terms (NULL, question, CLS), w2e terms
    shapes = [(B, H, L, d), (B, H, L, d), (B, H, P, d), (B, H, P, d), (B, H, L, 2 * k + 1), (B, H, L, 3), (B, H, L, E)]
    inputs = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in shapes]

    def attend(*tensors):
        torch.manual_seed(1)  # the same dropout masks at every evaluation
        return attention_gesa.WindowedAttention.apply(*tensors, plan, 0.3)

    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-6, fast_mode=True)
    assert (attend(*inputs) != attention_gesa.WindowedAttention.apply(*inputs, plan, 0.0)).any()


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout_keep_mask_keeps_each_element_with_probability_one_minus_p(p):
    """Two 16-bit draws per random word: the keep rate is 1 - p (to 2^-17), independent across neighbours and
    positions, for odd sizes too, and reproducible under a seed."""
    like = torch.empty(3, 301, 333)  # an odd number of elements
    torch.manual_seed(0)
    kept = attention_gesa.dropout_keep_mask(like, p)
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
    assert torch.equal(attention_gesa.dropout_keep_mask(like, p), kept)


# ---------------------------------------------------------------------------------------------
# Bias path (accelerators: one label bias + one SDPA call per layer) == eager path
# ---------------------------------------------------------------------------------------------


def test_sdpa_picks_its_kernel_by_device_and_window():
    """GESA's "sdpa": the fused kernel for CPU tensors, the bias + SDPA call elsewhere, the windowed kernel with a
    window (one place chooses: `attention_gesa.sdpa_kernel`)."""
    batch = long_batch([9, 7], entities=3, question=2)
    dense = structure_of(model_with_labels(num_hidden_layers=1), batch)
    windowed = structure_of(model_with_labels(num_hidden_layers=1, attention_window=2), batch)
    assert attention_gesa.sdpa_kernel(dense, torch.device("cpu")) == "gesa_fused"
    assert attention_gesa.sdpa_kernel(dense, torch.device("cuda")) == "gesa_bias"
    assert attention_gesa.sdpa_kernel(dense, torch.device("mps")) == "gesa_bias"
    assert attention_gesa.sdpa_kernel(windowed, torch.device("cuda")) == "gesa_windowed"
    assert not hasattr(attention_gesa, "DENSE_KERNEL")


def test_explicit_kernels_refuse_the_wrong_window_setting():
    batch = long_batch([9, 7], entities=3, question=2)
    with pytest.raises(ValueError, match="'gesa_fused' computes dense attention but config.attention_window=2"):
        model = model_with_labels(num_hidden_layers=1, attention_window=2)
        model.config._attn_implementation = "gesa_fused"
        model(**batch)
    with pytest.raises(ValueError, match="'gesa_windowed' needs config.attention_window"):
        model = model_with_labels(num_hidden_layers=1)
        model.config._attn_implementation = "gesa_windowed"
        model(**batch)


@pytest.mark.parametrize("kernel", ["gesa_fused", "gesa_bias"])
@pytest.mark.parametrize("entity_aware", [True, False])
def test_dense_paths_equal_eager_without_entities_or_entity_aware_queries(kernel, entity_aware):
    model = model_with_labels(use_entity_aware_attention=entity_aware)
    batch = long_batch([25, 19])
    words_only = {k: batch[k] for k in ("input_ids", "attention_mask", "global_attention_mask")}
    for inputs in (batch, words_only):
        results = []
        for implementation in (kernel, "eager"):
            model.config._attn_implementation = implementation
            model.zero_grad()
            words = model(**inputs).last_hidden_state[inputs["attention_mask"].bool()]
            words.pow(2).mean().backward()
            results.append([words, *(p.grad.clone() for p in model.parameters() if p.grad is not None)])
        for fast, eager in zip(*results, strict=True):
            torch.testing.assert_close(fast, eager, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("ablation", ["full", "w2w_local", "no_labels_w2w"])
def test_label_bias_backward_is_the_gradient(ablation):
    """gradcheck in float64 of the hand-written per-label sums: clipped ends, globals, padded keys, entity blocks."""
    model = model_with_labels(num_hidden_layers=1, max_relative_position=3, ablation=ablation)
    batch = long_batch([13, 9], entities=4, question=2)  # 13 words: pairs clipped at both ends of k = 3
    tokens = structure_of(model, batch).tokens
    B, H, L, E = 2, 2, 13, 4
    plan = attention_gesa.bias_plan(tokens, L, True, torch.float64)
    C = 2 * tokens.distance_k + 1
    g = torch.Generator().manual_seed(0)
    shapes = [(B, H, L, C), (B, H, L, 3), (B, H, L, E), (B, H, E, L), (B, H, E, E)]
    inputs = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in shapes]
    if tokens.word_ranks is None:
        inputs[1] = None
    if ablation == "full":  # every kind of word pair: local, question-global, CLS-global, padded key
        assert set(plan.pair_kind.unique().tolist()) == {0, 1, 2, 3}

    def bias(*tensors):
        return attention_gesa.LabelBias.apply(*tensors, plan)

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
        terms = attention._label_terms(q_word, q_entity, tokens, L)
        return attention_gesa.bias_attention(q_word, q_entity, key, value, terms, tokens, L, dropout_p)

    inputs = (q_word, q_entity, key, value)
    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-6, fast_mode=True)
    assert (attend(*inputs) != attend(*inputs, dropout_p=0.0)).any()  # dropout did act


class HostTraffic(TorchDispatchMode):
    """Counts the operations that make the host wait on an accelerator or copy host data to it."""

    WAITS = ("aten._local_scalar_dense", "aten.nonzero", "aten.is_nonzero", "aten.item", "aten.equal")
    COPIES = ("aten.lift_fresh", "aten._to_copy")

    def __init__(self) -> None:
        super().__init__()
        self.waits = self.copies = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        self.waits += name.startswith(self.WAITS)
        self.copies += name.startswith(self.COPIES)
        return func(*args, **(kwargs or {}))


def test_bias_path_has_no_host_sync_in_the_layers():
    """A training step's host traffic does not grow with depth: the layers queue work and never wait on it."""
    counts = []
    for layers in (1, 3):
        model = model_with_labels(num_hidden_layers=layers, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
        model.config._attn_implementation = "gesa_bias"
        batch = long_batch([37, 30])
        with HostTraffic() as traffic:
            out = model(**batch)
            (out.last_hidden_state.sum() + out.entity_last_hidden_state.sum()).backward()
        counts.append((traffic.waits, traffic.copies))
    assert counts[0] == counts[1]
    assert counts[0][0] == 0  # the input check reads its value ranges with one `tolist` (no dispatched wait)


def test_bias_path_compiles_as_one_graph():
    model = model_with_labels(num_hidden_layers=2)
    model.config._attn_implementation = "gesa_bias"
    batch = long_batch([37, 30])
    explanation = torch._dynamo.explain(model)(**batch)
    assert explanation.graph_break_count == 0, explanation.break_reasons


def test_bias_path_in_bfloat16_stays_close_to_float32():
    model = model_with_labels(num_hidden_layers=2).eval()
    model.config._attn_implementation = "gesa_bias"
    batch = long_batch([37, 30])
    batch["attention_mask"][1, 20:] = 0  # more padding: masked keys in half precision
    with torch.no_grad():
        expected = model(**batch).last_hidden_state
        actual = model.to(torch.bfloat16)(**batch).last_hidden_state.float()
    real = batch["attention_mask"].bool()
    assert not torch.isnan(actual).any()
    torch.testing.assert_close(actual[real], expected[real], atol=0.1, rtol=0.05)

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
from long_helpers import assert_same, long_batch, model_with_labels, outputs_and_grads, structure_of
from torch.utils._python_dispatch import TorchDispatchMode

from gesa import ABLATION_PRESETS, attention_gesa, kernel_windowed_gesa

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
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", block)
    if chunk_bytes:
        monkeypatch.setattr(kernel_windowed_gesa, "SCORE_CHUNK_BYTES", chunk_bytes)
    model = model_with_labels(attention_window=window)
    batch = long_batch(lengths)
    assert_same(outputs_and_grads(model, batch, "sdpa"), outputs_and_grads(model, batch, "eager"), atol=1e-4)


@pytest.mark.parametrize("ablation", sorted(ABLATION_PRESETS))
def test_windowed_equals_dense_masked_for_every_ablation(monkeypatch, ablation):
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", 8)
    model = model_with_labels(attention_window=4, ablation=ablation)
    batch = long_batch([43, 29])
    assert_same(outputs_and_grads(model, batch, "sdpa"), outputs_and_grads(model, batch, "eager"), atol=1e-4)


@pytest.mark.parametrize("inputs", ["words_only", "no_globals", "no_structure"])
def test_windowed_equals_dense_masked_with_missing_inputs(monkeypatch, inputs):
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", 8)
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


@pytest.mark.parametrize("tracing", [False, True])
def test_host_plan_kernels_answer_alike_compiled_or_not(monkeypatch, tracing):
    """Under torch.compile / torch.export the fused and windowed kernels (plans read on the host) run the bias
    kernel in their place: the same numbers as eager for a setting they accept, the same error for one they refuse."""
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: tracing)
    batch = long_batch([9, 7], entities=3, question=2)
    g = torch.Generator().manual_seed(0)
    query, entity_query, key, value = (torch.randn(2, 2, 12, 8, generator=g) for _ in range(4))
    refused = {"gesa_fused": (2, "computes dense attention but config.attention_window=2")}
    refused["gesa_windowed"] = (None, "needs config.attention_window")
    for name, (wrong_window, message) in refused.items():
        for window in (wrong_window, 2 if wrong_window is None else None):
            model = model_with_labels(num_hidden_layers=1, attention_window=window)
            module, structure = model.encoder.layer[0].attention.self, structure_of(model, batch)

            def attend(implementation, module=module, structure=structure):
                function = attention_gesa.ALL_ATTENTION_FUNCTIONS.get_interface(
                    implementation, attention_gesa.eager_attention_forward
                )
                return function(module, query, key, value, None, 0.5, structure=structure, entity_query=entity_query)

            if window == wrong_window:
                with pytest.raises(ValueError, match=f"'{name}' {message}"):
                    attend(name)
            else:
                torch.testing.assert_close(attend(name)[0], attend("eager")[0], atol=1e-5, rtol=1e-5)


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

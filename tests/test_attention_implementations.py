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
"""Attention through `ALL_ATTENTION_FUNCTIONS`: every `attn_implementation` equals the eager reference (outputs and
gradients, every ablation preset), `set_attn_implementation` / `from_pretrained(attn_implementation=...)` switch it,
`torch.compile(fullgraph=True)` and `torch.export` run the default config as one graph, and `capture_outputs` records
word states, entity states and attention probabilities."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from long_helpers import TINY, assert_same, long_batch, model_with_labels, outputs_and_grads, structure_of
from transformers import AttentionInterface

from gesa import (
    ABLATION_PRESETS,
    GesaConfig,
    GesaForEntitySpanQA,
    GesaModel,
    attention_gesa,
    kernel_fused_gesa,
    kernel_windowed_gesa,
)

DENSE = ["sdpa", "gesa_fused", "gesa_bias"]
WINDOWED = ["sdpa", "gesa_windowed", "gesa_bias"]


@pytest.fixture
def small_score_blocks(monkeypatch):
    """One head per fused score block, 8-row windows, one head and block per windowed chunk: the kernels' loops are
    exercised at tiny sizes."""
    monkeypatch.setattr(kernel_fused_gesa, "SCORE_BLOCK_BYTES", 1)
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", 8)
    monkeypatch.setattr(kernel_windowed_gesa, "SCORE_CHUNK_BYTES", 1)


@pytest.mark.parametrize("ablation", sorted(ABLATION_PRESETS))
@pytest.mark.parametrize("implementation", DENSE)
def test_dense_implementations_equal_eager_for_every_ablation(small_score_blocks, implementation, ablation):
    model = model_with_labels(ablation=ablation)
    batch = long_batch([37, 30])
    expected = outputs_and_grads(model, batch, "eager")
    assert_same(outputs_and_grads(model, batch, implementation), expected, atol=1e-5)


@pytest.mark.parametrize("ablation", ["full", "luke", "no_labels_w2w", "w2w_local", "e2e_local"])
@pytest.mark.parametrize("implementation", WINDOWED)
def test_windowed_implementations_equal_eager(small_score_blocks, implementation, ablation):
    # "gesa_bias" with a window is what torch.compile / torch.export run: the window as a mask of the dense bias
    model = model_with_labels(ablation=ablation, attention_window=4)
    batch = long_batch([43, 29])
    expected = outputs_and_grads(model, batch, "eager")
    assert_same(outputs_and_grads(model, batch, implementation), expected, atol=1e-4)


@pytest.mark.parametrize(
    ("implementation", "window"),
    [("sdpa", None), ("gesa_fused", None), ("gesa_bias", None), ("sdpa", 4), ("gesa_windowed", 4), ("gesa_bias", 4)],
)
def test_cpu_kernels_train_under_bfloat16_autocast_like_eager(implementation, window):
    # --bf16 on a CPU: autocast runs the projections in bfloat16 while the label table stays a float32 parameter
    model = model_with_labels(attention_window=window)
    batch = long_batch([37, 30])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = outputs_and_grads(model, batch, "eager")
        result = outputs_and_grads(model, batch, implementation)
    table = model.encoder.layer[0].attention.self.label_embeddings.weight
    assert table.dtype == torch.float32 and table.grad is not None and table.grad.dtype == torch.float32
    assert_same(result, expected, atol=0.1)


@pytest.mark.parametrize("window", [None, 4])
@pytest.mark.parametrize("ablation", sorted(ABLATION_PRESETS))
def test_flex_attention_forward_equals_eager(ablation, window):
    """FlexAttention has no CPU backward in torch 2.13: its forward only here (gradients need a GPU)."""
    model = model_with_labels(ablation=ablation, attention_window=window).eval()
    batch = long_batch([43, 29])
    real = batch["attention_mask"].bool()
    outputs = []
    with torch.no_grad():
        for implementation in ("flex_attention", "eager"):
            model.config._attn_implementation = implementation
            out = model(**batch)
            outputs.append((out.last_hidden_state[real], out.entity_last_hidden_state))
    for actual, expected in zip(*outputs, strict=True):
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)


def test_flex_attention_refuses_attention_dropout():
    model = model_with_labels(attention_probs_dropout_prob=0.1).train()
    model.config._attn_implementation = "flex_attention"
    with pytest.raises(ValueError, match="'flex_attention' has no attention dropout"):
        model(**long_batch([9, 7], entities=3, question=2))


def test_set_attn_implementation_round_trip(tmp_path):
    model = model_with_labels(num_hidden_layers=1).eval()
    assert model.config._attn_implementation == "sdpa"  # the default; on CPU tensors it runs the fused kernel
    batch = long_batch([21, 16])
    with torch.no_grad():
        expected = model(**batch).entity_last_hidden_state
        for implementation in ("eager", "gesa_fused", "gesa_bias", "flex_attention", "sdpa"):
            model.set_attn_implementation(implementation)
            assert model.config._attn_implementation == implementation
            torch.testing.assert_close(model(**batch).entity_last_hidden_state, expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match='Specified `attn_implementation="gesa_fast"` is not supported'):
        model.set_attn_implementation("gesa_fast")
    assert model.config._attn_implementation == "sdpa"
    model.save_pretrained(tmp_path)
    for implementation in ("eager", "gesa_fused", "flex_attention"):
        reloaded = GesaModel.from_pretrained(tmp_path, attn_implementation=implementation)
        assert reloaded.config._attn_implementation == implementation
    assert GesaModel.from_pretrained(tmp_path).config._attn_implementation == "sdpa"


def test_attention_functions_take_the_structure_by_name_and_refuse_a_mask():
    """The transformers signature `(module, query, key, value, attention_mask, scaling, dropout, **kwargs)`: the
    batch's `AttentionStructure` comes as `structure=`, `attention_mask` is None; a mask (or the structure under the
    mask's name) is refused with one error naming the fix."""
    batch = long_batch([9, 7], entities=3, question=2)
    functions = {
        "eager": attention_gesa.eager_attention_forward,
        "sdpa": attention_gesa.sdpa_attention_forward,
        "gesa_fused": attention_gesa.fused_attention_forward,
        "gesa_bias": attention_gesa.bias_attention_forward,
        "gesa_windowed": attention_gesa.windowed_attention_forward,
        "flex_attention": attention_gesa.flex_attention_forward,
    }
    g = torch.Generator().manual_seed(0)
    query, entity_query, key, value = (torch.randn(2, 2, 12, 8, generator=g) for _ in range(4))
    for name, function in functions.items():
        model = model_with_labels(num_hidden_layers=1, attention_window=2 if name == "gesa_windowed" else None)
        module, structure = model.encoder.layer[0].attention.self, structure_of(model, batch)
        context, _ = function(module, query, key, value, None, 0.5, structure=structure, entity_query=entity_query)
        expected, _ = attention_gesa.eager_attention_forward(
            module, query, key, value, None, 0.5, structure=structure, entity_query=entity_query
        )
        assert context.shape == (2, 12, 2, 8)
        torch.testing.assert_close(context, expected, atol=1e-5, rtol=1e-5)
        for mask, by_name in ((structure, None), (structure.allowed, structure)):
            with pytest.raises(ValueError, match=f"'{name}' reads the batch's .* from `structure=`"):
                function(module, query, key, value, mask, 0.5, structure=by_name, entity_query=entity_query)


def test_transformers_kwargs_reach_the_attention_function():
    seen = []

    def spy(module, query, key, value, attention_mask, **kwargs):
        seen.append(kwargs)
        return attention_gesa.eager_attention_forward(module, query, key, value, attention_mask, **kwargs)

    AttentionInterface.register("gesa_test_spy", spy)
    model = model_with_labels(num_hidden_layers=2).eval()
    model.set_attn_implementation("gesa_test_spy")
    with torch.no_grad():
        model(**long_batch([9, 7], entities=3, question=2), max_length_q=9)
    assert len(seen) == 2 and all(kwargs["max_length_q"] == 9 for kwargs in seen)


def test_capture_outputs_records_word_and_entity_states_and_probabilities():
    model = model_with_labels(num_hidden_layers=2).eval()
    batch = long_batch([9, 7], entities=3, question=2)
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True, output_attentions=True)
        as_tuple = model(**batch, output_hidden_states=True, return_dict=False)
        words_only = model(input_ids=batch["input_ids"], output_hidden_states=True)
    assert len(out.hidden_states) == len(out.entity_hidden_states) == 3 and len(out.attentions) == 2
    assert out.hidden_states[0].shape == (2, 9, 16) and out.entity_hidden_states[0].shape == (2, 3, 16)
    torch.testing.assert_close(out.entity_hidden_states[-1], out.entity_last_hidden_state)
    assert out.attentions[0].shape == (2, 2, 12, 12)
    torch.testing.assert_close(out.attentions[0].sum(-1), torch.ones(2, 2, 12))
    assert len(as_tuple) == 5 and len(as_tuple[3]) == len(as_tuple[4]) == 3  # states, pooler, hidden, entity hidden
    assert words_only.entity_hidden_states is None and len(words_only.hidden_states) == 3


# ---------------------------------------------------------------------------------------------
# torch.compile and torch.export of the default config (every label family, entities, structure inputs)
# ---------------------------------------------------------------------------------------------

TINY_DEFAULT = TINY  # the same tiny dims as tests/test_long_inputs.py


def test_torch_compile_fullgraph_forward_and_backward_equal_eager():
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(GesaConfig(**TINY_DEFAULT)).train()
    batch = long_batch([23, 17])
    labels = (torch.arange(6) % 2).float().expand(2, 6)

    def step(forward):
        model.zero_grad()
        loss = forward(**batch, labels=labels).loss
        loss.backward()
        return [loss.detach()] + [p.grad.clone() for p in model.parameters() if p.grad is not None]

    expected = step(model)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    actual = step(compiled)
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_export_of_the_default_config_matches_eager(dynamic):
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(GesaConfig(**TINY_DEFAULT)).eval()
    batch = long_batch([23, 17])
    dynamic_shapes = None
    if dynamic:
        batch_dim, words, entities = torch.export.Dim("batch"), torch.export.Dim("words"), torch.export.Dim("entities")
        word_shaped, entity_shaped = {0: batch_dim, 1: words}, {0: batch_dim, 1: entities}
        dynamic_shapes = {
            name: word_shaped if value.shape[1] == 23 else entity_shaped for name, value in batch.items()
        }
    exported = torch.export.export(model, (), batch, dynamic_shapes=dynamic_shapes)
    with torch.no_grad():
        expected = model(**batch).logits
        torch.testing.assert_close(exported.module()(**batch).logits, expected, atol=1e-5, rtol=1e-5)
        if dynamic:  # other lengths and batch size through the same program
            other = long_batch([31, 26, 12], entities=7)
            torch.testing.assert_close(exported.module()(**other).logits, model(**other).logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", ["pure", "autocast"])
@pytest.mark.parametrize(("implementation", "window"), [("gesa_fused", None), ("gesa_windowed", 8)])
def test_hand_written_backwards_lose_no_more_precision_than_eager_in_bfloat16(implementation, window, mode):
    """Against float64, the fused and windowed kernels' attention gradients in bfloat16 (the model cast, or float32
    weights under autocast) are as close as eager's: their backward runs in float32 and sums the softmax backward's
    row from the block, not from the rounded output (bench/bf16_numerics.py measures it at luke-large's width)."""
    sizes = dict(hidden_size=64, num_attention_heads=4, intermediate_size=128, num_hidden_layers=2)
    torch.manual_seed(0)
    model = GesaModel(GesaConfig(**{**TINY, **sizes}, attention_window=window)).train()  # no dropout
    for layer in model.encoder.layer:  # label rows of a trained model's size
        torch.nn.init.normal_(layer.attention.self.label_embeddings.weight, std=0.5)
    batch = long_batch([120, 96])
    weights = [torch.randn(2, 120, 64, dtype=torch.float64), torch.randn(2, 6, 64, dtype=torch.float64)]

    def gradients(implementation: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        run = copy.deepcopy(model).to(dtype)
        run.config._attn_implementation = implementation
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "autocast" and dtype == torch.float32):
            out = run(**batch)
        # a random weighting of the states (a sum of squares of LayerNorm outputs has almost no gradient)
        states = [out.last_hidden_state, out.entity_last_hidden_state]
        sum((s.double() * w).sum() for s, w in zip(states, weights, strict=True)).backward()
        return {name: p.grad.double() for name, p in run.named_parameters() if "attention.self" in name}

    expected = gradients("eager", torch.float64)
    dtype = torch.bfloat16 if mode == "pure" else torch.float32

    def errors(implementation: str) -> dict[str, float]:
        got = gradients(implementation, dtype)
        return {name: ((got[name] - expected[name]).norm() / expected[name].norm()).item() for name in expected}

    kernel, eager = errors(implementation), errors("eager")
    ratios = {name: kernel[name] / eager[name] for name in kernel}
    # on the whole as close as eager (geometric mean), and no tensor far off (before: 1.7-6.5 and 1.7-2.0)
    mean = math.exp(sum(math.log(ratio) for ratio in ratios.values()) / len(ratios))
    assert mean < 1.3 and max(ratios.values()) < 1.6, {name: round(ratio, 2) for name, ratio in ratios.items()}

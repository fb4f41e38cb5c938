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
"""The variants run through `GesaModel.forward`: their blocks sit in the encoder's layer loop, so `capture_outputs`
records every layer's state (after the variant's block), transformers' keywords reach every layer's attention, and
each model runs `post_init` once."""

from __future__ import annotations

import pytest
import torch
from model_helpers import LUKE_GRAPH_TINY, TINY, record_like_batch
from transformers import AttentionInterface, PreTrainedModel
from variant_inputs import ernie_batch, ernie_config, kar_batch, kar_config, variant_models, xh_config

from gesa import LukeGraphConfig, LukeGraphForEntitySpanQA, LukeGraphModel
from gesa.attention_gesa import ALL_ATTENTION_FUNCTIONS as GESA_ATTENTION_FUNCTIONS
from gesa.modeling_ernie import ErnieForEntitySpanQA, ErnieModel
from gesa.modeling_kar import KarForEntitySpanQA, KarModel
from gesa.modeling_xh import XhForEntitySpanQA, XhModel

VARIANTS = ["kar", "kar_first", "kar_last", "ernie", "xh"]


def base_model_and_inputs(name: str) -> tuple[torch.nn.Module, dict]:
    """A variant's base model (eval mode) whose block changes the states, and its inputs (no labels)."""
    torch.manual_seed(0)
    if name.startswith("kar"):
        kar_layer = {"kar": 1, "kar_first": 0, "kar_last": 2}[name]
        return KarModel(kar_config(kar_layer=kar_layer)).eval(), kar_batch()
    if name == "ernie":  # layer 0 the backbone's, layer 1 a fusion layer
        return ErnieModel(ernie_config(ernie_num_fusion_layers=1)).eval(), ernie_batch()
    model, batch = variant_models()["xh"]  # hop attention randomised, so the hubs change
    return model.gesa.eval(), {k: v for k, v in batch.items() if k != "labels"}


def layer_inputs(model: torch.nn.Module) -> tuple[list[torch.Tensor], list]:
    """Hooks recording the words each backbone layer (or the ERNIE fusion layer replacing it) receives."""
    seen: list[torch.Tensor] = []
    fusion = getattr(model, "fusion_layers", [])
    first_fusion = model.config.num_hidden_layers - len(fusion)
    handles = [layer.register_forward_pre_hook(lambda m, a: seen.append(a[0])) for layer in model.encoder.layer]
    handles += [layer.register_forward_pre_hook(lambda m, a: seen.append(a[1])) for layer in fusion]
    assert first_fusion >= 0
    return seen, handles


def per_real_node(value: torch.Tensor, output) -> torch.Tensor:
    """XH's `(G, N, ...)` outputs as the `(T, ...)` real nodes the encoder runs on."""
    node_mask = getattr(output, "node_mask", None)
    if node_mask is None:
        return value
    return value.reshape(-1, *value.shape[2:])[node_mask.reshape(-1)]


@pytest.mark.parametrize("name", VARIANTS)
def test_hidden_states_and_attentions_are_recorded_for_every_layer(name):
    model, batch = base_model_and_inputs(name)
    config = model.config
    seen, handles = layer_inputs(model)
    with torch.no_grad():
        output = model(**batch, output_hidden_states=True, output_attentions=True)
    for handle in handles:
        handle.remove()
    layers = config.num_hidden_layers
    assert len(output.hidden_states) == layers + 1
    assert len(output.entity_hidden_states) == layers + 1
    assert len(output.attentions) == layers
    words, entities = output.last_hidden_state, output.entity_last_hidden_state
    word_length, entity_length = words.shape[-2], entities.shape[-2]
    for state in output.hidden_states:
        assert state.shape == words.shape
    for state in output.entity_hidden_states:
        assert state.shape == entities.shape
    for probs in output.attentions:
        lead = words.shape[:-2]
        assert probs.shape == (
            *lead,
            config.num_attention_heads,
            word_length + entity_length,
            word_length + entity_length,
        )
    # the state recorded for step i is what layer i receives: after the variant's block (KAR, XH hubs), not before
    assert len(seen) == layers
    for index in range(layers):
        torch.testing.assert_close(per_real_node(output.hidden_states[index], output), seen[index])
    torch.testing.assert_close(output.hidden_states[-1], words)
    torch.testing.assert_close(output.entity_hidden_states[-1], entities)
    if name == "xh":
        assert len(output.hop_attentions) == config.xh_num_hop_layers


@pytest.mark.parametrize("name", VARIANTS)
def test_recorded_state_is_the_one_after_the_variant_block(name):
    """The variant's block changes the states it records: the recorded state after layer i differs from the output of
    the plain backbone layer i, exactly where a block runs (KAR: after layer `kar_layer`; XH: after the hop layers)."""
    model, batch = base_model_and_inputs(name)
    outputs: list[torch.Tensor] = []
    handles = [layer.register_forward_hook(lambda m, a, out: outputs.append(out[0])) for layer in model.encoder.layer]
    with torch.no_grad():
        output = model(**batch, output_hidden_states=True)
    for handle in handles:
        handle.remove()
    config = model.config
    if name.startswith("kar"):
        changed = {config.kar_layer} - {0}
    elif name == "xh":
        changed = set(range(config.num_hidden_layers - config.xh_num_hop_layers + 1, config.num_hidden_layers + 1))
    else:  # ERNIE's fusion layer replaces backbone layer 1 (which never runs); layer 0 is recorded as it is
        changed = set()
    assert len(outputs) == len(model.encoder.layer) - len(getattr(model, "fusion_layers", []))
    for done, layer_output in enumerate(outputs, start=1):
        recorded = per_real_node(output.hidden_states[done], output)
        assert torch.equal(recorded, layer_output) == (done not in changed), done


def recording_attention(calls: list):
    sdpa = GESA_ATTENTION_FUNCTIONS["sdpa"]  # GESA's "sdpa" (its kernels), what the backbone layers use

    def attention(module, *args, **kwargs):
        calls.append((type(module).__name__, kwargs.get("max_length_q")))
        return sdpa(module, *args, **kwargs)

    return attention


@pytest.mark.parametrize("name", VARIANTS)
def test_keywords_reach_the_attention_of_every_layer(name):
    """A transformers keyword given to the variant's model reaches the attention function of every backbone layer
    (ERNIE's fusion layers included), which `config._attn_implementation` picks from `ALL_ATTENTION_FUNCTIONS`."""
    model, batch = base_model_and_inputs(name)
    calls: list = []
    AttentionInterface.register("gesa_test_recording", recording_attention(calls))
    try:
        with torch.no_grad():
            model.config._attn_implementation = "sdpa"
            expected = model(**batch).last_hidden_state
            model.config._attn_implementation = "gesa_test_recording"
            got = model(**batch, max_length_q=11).last_hidden_state
    finally:
        model.config._attn_implementation = "sdpa"
        del AttentionInterface._global_mapping["gesa_test_recording"]
    backbone = [value for caller, value in calls if caller == "GesaSelfAttention"]
    assert backbone == [11] * model.config.num_hidden_layers
    torch.testing.assert_close(got, expected)


def model_builders() -> dict:
    luke_graph = LukeGraphConfig(**LUKE_GRAPH_TINY)
    return {
        "KarModel": lambda: KarModel(kar_config()),
        "KarForEntitySpanQA": lambda: KarForEntitySpanQA(kar_config()),
        "ErnieModel": lambda: ErnieModel(ernie_config()),
        "ErnieForEntitySpanQA": lambda: ErnieForEntitySpanQA(ernie_config()),
        "XhModel": lambda: XhModel(xh_config()),
        "XhForEntitySpanQA": lambda: XhForEntitySpanQA(xh_config()),
        "LukeGraphModel": lambda: LukeGraphModel(luke_graph),
        "LukeGraphForEntitySpanQA": lambda: LukeGraphForEntitySpanQA(luke_graph),
    }


@pytest.mark.parametrize("name", list(model_builders()))
def test_post_init_runs_once_per_model(name, monkeypatch):
    counts: dict[int, int] = {}
    post_init = PreTrainedModel.post_init

    def counting(self):
        counts[id(self)] = counts.get(id(self), 0) + 1
        return post_init(self)

    monkeypatch.setattr(PreTrainedModel, "post_init", counting)
    model = model_builders()[name]()
    models = [m for m in model.modules() if isinstance(m, PreTrainedModel)]  # a head holds its base model
    assert sorted(counts) == sorted(id(m) for m in models)
    assert set(counts.values()) == {1}, {type(m).__name__: counts[id(m)] for m in models}


def test_gesa_model_records_the_same_states_as_its_layers():
    """GESA itself: the states recorded after each step are its layers' outputs (no block in between)."""
    from gesa import GesaConfig, GesaModel

    torch.manual_seed(0)
    model = GesaModel(GesaConfig(**TINY)).eval()
    outputs: list[torch.Tensor] = []
    handles = [layer.register_forward_hook(lambda m, a, out: outputs.append(out[0])) for layer in model.encoder.layer]
    with torch.no_grad():
        output = model(**record_like_batch(), output_hidden_states=True)
    for handle in handles:
        handle.remove()
    for done, layer_output in enumerate(outputs, start=1):
        assert torch.equal(output.hidden_states[done], layer_output)

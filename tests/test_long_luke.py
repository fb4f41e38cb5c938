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
"""LUKE for whole documents (`--variant long_luke`, seed 002 4.1.1): with a window covering the input it is
`transformers.LukeModel`; its sliding window and global words are `transformers.LongformerSelfAttention`'s; its
dilation and random keys are what a plain loop over their definition computes; its cost is linear (no `(P, P)`
tensor); positions beyond LUKE's 512 are LUKE's copied; a bad pattern gets one error naming the field."""

from __future__ import annotations

import pytest
import torch
from long_helpers import TINY, LargestTensor, assert_same, long_batch, outputs_and_grads
from model_helpers import assert_answers_as_luke, config_error
from transformers import LongformerConfig, LukeModel
from transformers.models.longformer.modeling_longformer import LongformerSelfAttention

from gesa import LongLukeConfig, LongLukeModel, attention_gesa, kernel_windowed_gesa
from gesa.modeling_long_luke import LongLukeForEntitySpanQA
from gesa.structure_gesa import random_key_blocks
from gesa.training.models import position_limit
from gesa.training.registry import VARIANTS

LUKE_INPUTS = ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask", "entity_position_ids")


def document_batch(lengths: list[int], vocab_size: int = 1000, entities: int = 4, seed: int = 0) -> dict:
    """LUKE's inputs for documents of `lengths` words (`<s>` ... `</s>`, padded to the longest) with entities whose
    mentions lie anywhere in their document; the last example has one entity padded."""
    g = torch.Generator().manual_seed(seed)
    B, L = len(lengths), max(lengths)
    input_ids = torch.randint(5, vocab_size, (B, L), generator=g)
    attention_mask = torch.zeros(B, L, dtype=torch.long)
    entity_position_ids = torch.full((B, entities, 2), -1)
    entity_attention_mask = torch.ones(B, entities, dtype=torch.long)
    for b, length in enumerate(lengths):
        attention_mask[b, :length] = 1
        input_ids[b, 0], input_ids[b, length - 1], input_ids[b, length:] = 0, 2, 1
        for e in range(entities):
            start = int(torch.randint(1, length - 2, (1,), generator=g))
            entity_position_ids[b, e] = torch.tensor([start, start + 1])
    entity_attention_mask[-1, -1] = 0
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        entity_ids=torch.full((B, entities), 2),
        entity_attention_mask=entity_attention_mask,
        entity_position_ids=entity_position_ids,
    )


def tiny_long(**overrides) -> LongLukeModel:
    torch.manual_seed(0)
    config = {**TINY, "max_position_embeddings": 4098, **overrides}
    config.pop("max_relative_position")
    return LongLukeModel(LongLukeConfig(**config)).eval()


# ---------------------------------------------------------------------------------------------
# The references: LukeModel, LongformerSelfAttention, a plain loop over the pattern's definition
# ---------------------------------------------------------------------------------------------


def test_a_window_covering_the_input_is_luke_model(tiny_luke_dir):
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    model = LongLukeModel.from_luke_pretrained(tiny_luke_dir, attention_window=512, num_random_blocks=0).eval()
    # LUKE's four queries kept as they are (no entity-aware copy brought to unit gain)
    assert model.luke_conversion_info == {"missing_keys": [], "unexpected_keys": [], "scaled_queries": {}}
    batch = document_batch([180, 131])
    inputs = {key: batch[key] for key in LUKE_INPUTS}
    # the long path: every layer runs the windowed kernel
    structure = model.build_attention_structure(
        torch.cat([inputs["attention_mask"], inputs["entity_attention_mask"]], 1), 180
    )
    for index in range(model.config.num_hidden_layers):
        assert attention_gesa.sdpa_kernel(structure.layer(index), torch.device("cpu")) == "gesa_windowed"
    assert_answers_as_luke(model, luke, inputs)
    with torch.no_grad():
        expected = luke(**inputs, output_hidden_states=True)
        actual = model(**inputs, output_hidden_states=True)
    real = inputs["attention_mask"].bool()
    for ours, theirs in zip(actual.hidden_states, expected.hidden_states, strict=True):
        torch.testing.assert_close(ours[real], theirs[real], atol=1e-5, rtol=0)
    # the comparison can fail: a window narrower than the input is not LUKE
    narrow = LongLukeModel.from_luke_pretrained(tiny_luke_dir, attention_window=16, num_random_blocks=0).eval()
    with torch.no_grad():
        difference = (narrow(**inputs).last_hidden_state - expected.last_hidden_state)[real].abs().max()
    assert difference > 1e-3


@pytest.mark.parametrize("window, global_words", [(8, [0, 5, 6, 30]), (16, [0]), (4, [])])
def test_window_and_global_words_equal_longformer_self_attention(tiny_luke_dir, window, global_words):
    """On words alone, with LUKE's word query: the sliding window and the global words are Longformer's (its
    global projections set to the local ones), given the same weights, window and global mask."""
    model = LongLukeModel.from_luke_pretrained(tiny_luke_dir, attention_window=window, num_random_blocks=0).eval()
    attention = model.encoder.layer[0].attention.self
    config = LongformerConfig(
        hidden_size=model.config.hidden_size,
        num_attention_heads=model.config.num_attention_heads,
        attention_window=[window],
        attention_probs_dropout_prob=0.0,
    )
    reference = LongformerSelfAttention(config, layer_id=0).eval()
    with torch.no_grad():
        for ours, theirs in (("w2w_query", "query"), ("key", "key"), ("value", "value")):
            for name in (theirs, f"{theirs}_global"):
                getattr(reference, name).weight.copy_(getattr(attention, ours).weight)
                getattr(reference, name).bias.copy_(getattr(attention, ours).bias)
    B, L = 2, 48  # Longformer takes lengths that are multiples of the window
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(B, L, config.hidden_size, generator=g)
    attention_mask = torch.ones(B, L, dtype=torch.long)
    attention_mask[1, 41:] = 0
    global_attention_mask = torch.zeros(B, L, dtype=torch.long)
    global_attention_mask[:, global_words] = 1
    with torch.no_grad():
        structure = model.build_attention_structure(attention_mask, L, global_attention_mask)
        context, _ = attention(hidden, None, structure)
        # Longformer's layer mask: 0 local, a large negative value padded, a large positive one global
        mask = torch.zeros(B, L).masked_fill(global_attention_mask.bool(), 10000.0)
        mask = mask.masked_fill(~attention_mask.bool(), torch.finfo(torch.float32).min)
        expected = reference(
            hidden, attention_mask=mask, is_index_masked=mask < 0, is_index_global_attn=mask > 0,
            is_global_attn=bool(global_words),
        )[0]  # fmt: skip
    real = attention_mask.bool()
    torch.testing.assert_close(context[real], expected[real], atol=1e-5, rtol=0)


def plain_pattern_attention(q_word, q_entity, key, value, attention_mask, word_length, is_global, pattern, drawn):
    """Each row's softmax over the keys it may attend, from the pattern's definition, one query at a time (queries
    scaled): real keys only; a global word or an entity (either side) attends and is attended by everything; local
    words attend within `|i - j| <= window * dilation` with `dilation` dividing `i - j`, and the words of the key
    blocks `drawn[b, i // block]`."""
    B, H, P, d = q_word.shape
    L, block = word_length, pattern.random_block_size
    out = torch.zeros_like(value)
    for b in range(B):
        for i in range(P):
            keys = []
            for j in range(P):
                if not attention_mask[b, j]:
                    continue
                if i >= L or j >= L or is_global[b, i] or is_global[b, j]:
                    keys.append(j)
                    continue
                near = abs(i - j) <= pattern.window * pattern.dilation and (i - j) % pattern.dilation == 0
                if near or j // block in drawn[b, i // block].tolist():
                    keys.append(j)
            keys = torch.tensor(keys)
            to_words, to_entities = keys[keys < L], keys[keys >= L]
            scores = torch.cat(
                [
                    torch.einsum("hd,hkd->hk", q_word[b, :, i], key[b, :, to_words]),
                    torch.einsum("hd,hkd->hk", q_entity[b, :, i], key[b, :, to_entities]),
                ],
                dim=-1,
            )
            values = value[b, :, torch.cat([to_words, to_entities])]
            out[b, :, i] = torch.einsum("hk,hkd->hd", torch.softmax(scores, -1), values)
    return out


@pytest.mark.parametrize(
    "patterns",
    [
        dict(attention_window=[6, 4], attention_dilation=[1, 3], num_random_blocks=0),
        dict(attention_window=[2, 8], num_random_blocks=[2, 1], random_block_size=8),
        dict(attention_window=4, attention_dilation=[2, 1], num_random_blocks=[0, 3], random_block_size=4),
    ],
)
def test_dilation_and_random_keys_equal_a_plain_loop_over_their_definition(monkeypatch, patterns):
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", 8)
    monkeypatch.setattr(kernel_windowed_gesa, "SCORE_CHUNK_BYTES", 1)
    model = tiny_long(**patterns)
    batch = long_batch([61, 44], entities=3, question=2)
    attention_mask = torch.cat([batch["attention_mask"], batch["entity_attention_mask"]], 1)
    L = batch["input_ids"].size(1)
    structure = model.build_attention_structure(attention_mask, L, batch["global_attention_mask"])
    B, H, P, d = 2, TINY["num_attention_heads"], attention_mask.size(1), 4
    g = torch.Generator().manual_seed(1)
    q_word, q_entity, key, value = (torch.randn(B, H, P, d, generator=g, dtype=torch.float64) for _ in range(4))
    real = attention_mask.bool()
    for index in range(model.config.num_hidden_layers):
        tokens = structure.layer(index).tokens
        pattern = tokens.pattern
        counts = batch["attention_mask"].sum(1)
        drawn = random_key_blocks(
            counts, -(-L // pattern.random_block_size), pattern.random_blocks, pattern.random_block_size, pattern.seed
        )
        context = kernel_windowed_gesa.windowed_attention(q_word, q_entity, key, value, None, tokens, L, 0.0)
        expected = plain_pattern_attention(
            q_word, q_entity, key, value, attention_mask, L, batch["global_attention_mask"] != 0, pattern, drawn
        )
        torch.testing.assert_close(context.transpose(1, 2)[real], expected.transpose(1, 2)[real], atol=1e-10, rtol=0)


@pytest.mark.parametrize(
    "patterns",
    [
        dict(attention_window=4, num_random_blocks=2, random_block_size=4),
        dict(attention_window=6, attention_dilation=2, num_random_blocks=0),
    ],
)
def test_the_recomputing_backward_is_the_gradient_with_dropout(monkeypatch, patterns):
    """The long variant's layers keep no probabilities (the backward computes each chunk's scores again): gradcheck
    of the local-row function in float64 over several chunks, dropout masks fixed by reseeding."""
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", 4)
    monkeypatch.setattr(kernel_windowed_gesa, "SCORE_CHUNK_BYTES", 1)
    model = tiny_long(num_hidden_layers=1, **patterns)
    batch = long_batch([17, 13], entities=3, question=2)
    attention_mask = torch.cat([batch["attention_mask"], batch["entity_attention_mask"]], 1)
    L, P = 17, 20
    tokens = model.build_attention_structure(attention_mask, L, batch["global_attention_mask"]).layer(0).tokens
    order = None
    if tokens.pattern.dilation > 1:
        order = kernel_windowed_gesa.dilation_order(L, tokens.pattern.dilation, torch.device("cpu"))
    plan = kernel_windowed_gesa.window_plan(tokens, L, 2, torch.float64, order)
    assert plan.recompute and plan.blocks > 1 and plan.heads_per_chunk == 1
    g = torch.Generator().manual_seed(0)
    shapes = [(2, 2, L, 8), (2, 2, L, 8), (2, 2, P, 8), (2, 2, P, 8)]
    inputs = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in shapes]

    def attend(*tensors):
        torch.manual_seed(1)  # the same dropout masks at every evaluation
        return kernel_windowed_gesa.WindowedAttention.apply(*tensors, None, None, None, plan, 0.3)

    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-6, fast_mode=True)
    assert (
        attend(*inputs) != kernel_windowed_gesa.WindowedAttention.apply(*inputs, None, None, None, plan, 0.0)
    ).any()


def test_random_key_blocks_are_distinct_other_blocks_drawn_by_seed_and_length():
    counts = torch.tensor([200, 200, 70, 16])
    drawn = random_key_blocks(counts, 13, 3, 16, seed=5)
    for b, count in enumerate(counts.tolist()):
        blocks = -(-count // 16)
        for n in range(blocks):
            chosen = [int(x) for x in drawn[b, n] if x >= 0]
            assert len(chosen) == min(3, blocks - 1) and len(set(chosen)) == len(chosen)
            assert n not in chosen and all(0 <= x < blocks for x in chosen)
        assert (drawn[b, blocks:] == -1).all()
    # the same length draws the same blocks, whatever the batch; another seed (another layer) draws others
    assert torch.equal(drawn[0], drawn[1])
    assert torch.equal(random_key_blocks(torch.tensor([200]), 13, 3, 16, seed=5)[0], drawn[0])
    assert not torch.equal(random_key_blocks(torch.tensor([200]), 13, 3, 16, seed=6)[0], drawn[0])
    # each block is drawn about equally often (20 layers' draws: 3,200 draws of 40 blocks, 80 each expected)
    many = torch.cat([random_key_blocks(torch.tensor([64 * 40]), 40, 4, 64, seed=seed) for seed in range(20)])
    hits = torch.bincount(many.flatten(), minlength=40).float()
    assert hits.sum() == 3200 and 40 < hits.min() and hits.max() < 120


@pytest.mark.parametrize(
    "patterns",
    [
        dict(attention_window=[4, 6], attention_dilation=[1, 2], num_random_blocks=[1, 0], random_block_size=8),
        dict(attention_window=[2, 4], num_random_blocks=2, random_block_size=8),
    ],
)
def test_the_windowed_and_bias_paths_equal_the_dense_path_with_gradients(monkeypatch, patterns):
    """The windowed kernel (CPU `"sdpa"`) and the bias path (what `torch.compile` and accelerators run) against the
    eager path over the dense mask, outputs and gradients."""
    monkeypatch.setattr(kernel_windowed_gesa, "WINDOW_BLOCK", 8)
    model = tiny_long(**patterns).train()
    batch = {k: v for k, v in long_batch([53, 37]).items() if k in (*LUKE_INPUTS, "global_attention_mask")}
    dense = outputs_and_grads(model, batch, "eager")
    assert_same(outputs_and_grads(model, batch, "sdpa"), dense, atol=1e-4)
    assert_same(outputs_and_grads(model, batch, "gesa_bias"), dense, atol=1e-4)
    model.config._attn_implementation = "flex_attention"
    if any(p.dilation > 1 or p.random_blocks for p in model.layer_patterns()):
        with pytest.raises(ValueError, match="dilation or random keys"):
            model.eval()(**batch)


def test_a_long_document_allocates_nothing_quadratic():
    model = tiny_long(
        attention_window=[16, 32], attention_dilation=[1, 4], num_random_blocks=[2, 0], random_block_size=16
    ).train()
    L = 2048
    batch = {k: v for k, v in document_batch([L, L - 300], vocab_size=64).items()}
    with LargestTensor() as probe:
        out = model(**batch)
        (out.last_hidden_state.sum() + out.entity_last_hidden_state.sum()).backward()
    B, H, P = 2, model.config.num_attention_heads, L + 4
    # the largest tensors are a layer's window scores (B, H, L, block + window + globals + entities + random keys)
    assert probe.largest <= B * H * L * (64 + 32 + 2 + 4 + 2 * 16) < P * P


# ---------------------------------------------------------------------------------------------
# Conversion, positions, global words, reproducibility
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("position_init", ["copy", "random"])
def test_positions_beyond_lukes_are_copied_from_its_learned_ones(tiny_luke_dir, position_init):
    luke = LukeModel.from_pretrained(tiny_luke_dir)
    model = LongLukeModel.from_luke_pretrained(
        tiny_luke_dir, max_position_embeddings=2000, position_init=position_init
    )
    old_words = luke.embeddings.position_embeddings.weight
    old_entities = luke.entity_embeddings.position_embeddings.weight
    words = model.embeddings.position_embeddings.weight
    entities = model.entity_embeddings.position_embeddings.weight
    period = old_words.size(0) - 2  # the tiny LUKE's learned positions (luke-large: 512)
    assert words.shape[0] == entities.shape[0] == 2000
    torch.testing.assert_close(words[: old_words.size(0)], old_words)  # LUKE's rows kept
    torch.testing.assert_close(entities[:period], old_entities[:period])
    beyond = torch.arange(old_words.size(0), 2000)
    copied_words = old_words[2 + (beyond - 2) % period]
    copied_entities = old_entities[beyond % period]
    if position_init == "copy":
        torch.testing.assert_close(words[beyond], copied_words)
        torch.testing.assert_close(entities[beyond], copied_entities)
    else:
        assert not torch.allclose(words[beyond], copied_words)
    # a document longer than LUKE's positions runs; one longer than the table is refused, naming the field
    batch = document_batch([900, 700], vocab_size=1000)
    assert model(**batch).last_hidden_state.shape == (2, 900, model.config.hidden_size)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(**document_batch([2100], vocab_size=1000))


def test_special_tokens_are_global_unless_a_mask_is_given(tiny_luke_dir):
    model = LongLukeModel.from_luke_pretrained(tiny_luke_dir, attention_window=4, num_random_blocks=0).eval()
    batch = document_batch([120, 90])
    none_global = torch.zeros_like(batch["input_ids"])
    special = (batch["input_ids"] == 0) | (batch["input_ids"] == 2)
    with torch.no_grad():
        by_default = model(**batch).last_hidden_state
        given = model(**batch, global_attention_mask=special.long()).last_hidden_state
        local = model(**batch, global_attention_mask=none_global).last_hidden_state
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(by_default[real], given[real])
    assert (by_default[real] - local[real]).abs().max() > 1e-4


def test_a_document_gets_the_same_random_keys_whatever_its_batch_and_mode(tiny_luke_dir):
    model = LongLukeModel.from_luke_pretrained(
        tiny_luke_dir, attention_window=8, num_random_blocks=2, random_block_size=16,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    batch = document_batch([200, 300], vocab_size=1000)
    alone = {
        key: value[:1, :200]
        for key, value in batch.items()
        if key not in ("entity_ids", "entity_attention_mask", "entity_position_ids")
    }
    with torch.no_grad():
        batched = model.train()(**{k: v for k, v in batch.items() if k in ("input_ids", "attention_mask")})
        single = model.eval()(**alone)
        other = LongLukeModel.from_luke_pretrained(tiny_luke_dir, attention_window=8, num_random_blocks=2,
                                                   random_block_size=16, random_seed=1).eval()(**alone)  # fmt: skip
    torch.testing.assert_close(batched.last_hidden_state[0, :200], single.last_hidden_state[0], atol=1e-5, rtol=0)
    assert (other.last_hidden_state - single.last_hidden_state).abs().max() > 1e-4  # the seed matters


def test_the_variant_converts_saves_and_reloads_through_the_registry(tiny_luke_dir, tmp_path):
    spec = VARIANTS["long_luke"]
    model = spec.from_luke(tiny_luke_dir).eval()
    assert isinstance(model, LongLukeForEntitySpanQA) and model.config.ablation == "luke"
    assert model.config.attention_window == [128, 512] and model.config.max_position_embeddings == 16386
    luke_config = LukeModel.from_pretrained(tiny_luke_dir).config.to_dict()
    assert position_limit(spec, luke_config) == 16384
    model.save_pretrained(tmp_path / "saved")
    again = spec.from_checkpoint(str(tmp_path / "saved")).eval()
    saved, loaded = model.config.to_dict(), again.config.to_dict()
    assert loaded["attention_window"] == [128, 512]
    assert {k: v for k, v in loaded.items() if k != "_name_or_path"} == {
        k: v for k, v in saved.items() if k != "_name_or_path"
    }
    batch = document_batch([300, 250], vocab_size=1000)
    with torch.no_grad():
        torch.testing.assert_close(again.gesa(**batch).last_hidden_state, model.gesa(**batch).last_hidden_state)


def test_output_attentions_are_the_dense_probabilities_of_each_layers_pattern():
    model = tiny_long(attention_window=[2, 8], num_random_blocks=0)
    batch = document_batch([40, 33], vocab_size=64)
    out = model(**batch, output_attentions=True)
    P = 40 + 4
    first, second = out.attentions
    assert first.shape == second.shape == (2, TINY["num_attention_heads"], P, P)
    # layer 0 sees 1 word each side, layer 1 four: word 20 attends word 23 only in layer 1
    assert first[0, :, 20, 23].abs().max() == 0 and second[0, :, 20, 23].min() > 0


# ---------------------------------------------------------------------------------------------
# Bad configuration: one error naming the field
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, field, message",
    [
        (dict(attention_window=[64, 128, 256]), "attention_window", "3 values but num_hidden_layers=2"),
        (dict(attention_window=65), "attention_window", "positive even number"),
        (dict(attention_window=[64, -2]), "attention_window", r"\[1\]=-2 must be a positive even"),
        (dict(attention_window=0), "attention_window", "positive even number"),
        (dict(attention_dilation=0), "attention_dilation", "at least 1"),
        (dict(attention_dilation=[1, 2, 2]), "attention_dilation", "3 values but num_hidden_layers=2"),
        (dict(num_random_blocks=-1), "num_random_blocks", "0 \\(none\\) or more"),
        (dict(attention_dilation=[1, 2], num_random_blocks=3), "num_random_blocks", "layer 1 .*attention_dilation=2"),
        (dict(random_block_size=0), "random_block_size", "positive integer"),
        (dict(position_init="zeros"), "position_init", "one of"),
        (dict(ablation="full"), "ablation", "must be 'luke'"),
    ],
)
def test_a_bad_pattern_is_refused_naming_the_field(fields, field, message):
    with config_error(field, message):
        LongLukeConfig(num_hidden_layers=2, **fields)


def test_a_refused_assignment_keeps_the_config():
    config = LongLukeConfig(num_hidden_layers=2)
    with config_error("attention_window", "3 values"):
        config.attention_window = [8, 8, 8]
    with config_error("attention_window", "2 values but num_hidden_layers=3"):
        config.num_hidden_layers = 3
    assert config.attention_window == [128, 512] and config.num_hidden_layers == 2

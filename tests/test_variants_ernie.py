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
"""ERNIE fusion on the GESA backbone: identity, the fusion equations against a plain implementation (aligned and
unaligned tokens, both output forms), dEA, bad input, and conversion + training + fresh-process reload."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from model_helpers import record_like_batch
from variant_helpers import (
    assert_qa_model_reloads,
    knowledge_record_batches,
    same_backbone,
    train_steps,
    variant_on_its_backbone,
)
from variant_inputs import ENTITY_IDS, POSITIONS, ernie_batch, ernie_config

from gesa import GesaModel
from gesa.checks_gesa import ERNIE_HEAD_ENTITY
from gesa.configuration_variants import ErnieConfig
from gesa.modeling_ernie import (
    ErnieForDenoisingEntityAutoencoder,
    ErnieForEntitySpanQA,
    ErnieModel,
    corrupt_entity_alignments,
)

# ---------------------------------------------------------------------------------------------
# 1. Identity: fusion disabled -> the backbone
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fusion_layers", [1, 2])
def test_no_knowledge_entities_equals_backbone(fusion_layers):
    model, backbone = variant_on_its_backbone(
        ErnieModel, ernie_config, "fusion_layers.", ernie_num_fusion_layers=fusion_layers
    )
    batch = record_like_batch()
    with torch.no_grad():
        expected = backbone(**batch, output_hidden_states=True)
        for inputs in (
            batch,
            {**batch, "ernie_entity_ids": torch.full((2, 2), -1), "ernie_entity_positions": torch.full((2, 2), -1)},
        ):
            actual = model(**inputs, output_hidden_states=True)
            real = batch["attention_mask"].bool()
            torch.testing.assert_close(
                actual.last_hidden_state[real], expected.last_hidden_state[real], atol=1e-5, rtol=0
            )
            torch.testing.assert_close(
                actual.entity_last_hidden_state, expected.entity_last_hidden_state, atol=1e-5, rtol=0
            )
            torch.testing.assert_close(actual.pooler_output, expected.pooler_output, atol=1e-5, rtol=0)


def test_zero_entity_projection_equals_backbone_and_otherwise_fusion_acts():
    torch.manual_seed(0)
    backbone = GesaModel(ernie_config()).eval()
    model = ErnieModel(ernie_config(ernie_num_fusion_layers=2)).eval()
    same_backbone(model, backbone)
    batch = ernie_batch()
    with torch.no_grad():
        expected = backbone(**record_like_batch())
        fused = model(**batch)
        for fusion in model.fusion_layers:
            fusion.entity_to_intermediate.weight.zero_()  # W~_e = 0: the knowledge stream runs but is not fused
        unfused = model(**batch)
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(unfused.last_hidden_state[real], expected.last_hidden_state[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(unfused.entity_last_hidden_state, expected.entity_last_hidden_state, atol=1e-5, rtol=0)
    assert (fused.last_hidden_state[0, 7] - expected.last_hidden_state[0, 7]).abs().max() > 1e-3
    assert model.config.ernie_num_fusion_layers == 2 and ErnieConfig().ernie_num_fusion_layers == 12


# ---------------------------------------------------------------------------------------------
# 2. The fusion equations, token by token
# ---------------------------------------------------------------------------------------------


def plain_entity_attention(module, entities: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Multi-head self-attention among the real entities, then LayerNorm(e + W_o context), one entity at a time."""
    heads, size = module.num_heads, module.head_size
    out = torch.zeros_like(entities)
    for b in range(entities.size(0)):
        q = module.query(entities[b]).view(-1, heads, size)
        k = module.key(entities[b]).view(-1, heads, size)
        v = module.value(entities[b]).view(-1, heads, size)
        for i in range(entities.size(1)):
            context = []
            for h in range(heads):
                scores = torch.stack([q[i, h] @ k[j, h] / math.sqrt(size) for j in range(entities.size(1))])
                real = mask[b]
                weights = torch.softmax(scores[real], dim=0) if real.any() else scores[real]
                context.append((weights[:, None] * v[real, h]).sum(0))
            out[b, i] = module.LayerNorm(entities[b, i] + module.dense(torch.cat(context)))
    return out


@pytest.mark.parametrize("fusion_output", ["residual_layernorm", "gelu"])
def test_fusion_layer_matches_the_equations(fusion_output):
    torch.manual_seed(0)
    model = ErnieModel(ernie_config(ernie_num_fusion_layers=1, ernie_fusion_output=fusion_output)).eval()
    with torch.no_grad():
        for parameter in model.fusion_layers.parameters():  # trained-looking, not identity-like, weights
            parameter.normal_(std=0.2)
    batch = ernie_batch()
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
        layer, fusion = model.encoder.layer[1], model.fusion_layers[0]
        words_in, entities_in = out.hidden_states[1], out.entity_hidden_states[1]  # inputs of the top layer
        table = model.get_entity_embeddings().weight
        knowledge_mask = ENTITY_IDS >= 0
        knowledge_in = table[ENTITY_IDS.clamp(min=0)] * knowledge_mask[..., None]
        structure = model.build_attention_structure(
            torch.cat([batch["attention_mask"], batch["entity_attention_mask"]], dim=1),
            14,
            batch["global_attention_mask"],
            batch["entity_position_ids"],
            batch["placeholder_entity_mask"],
            batch["entity_string_ids"],
            batch["entity_sentence_ids"],
        )
        attended, _ = layer.attention(words_in, entities_in, structure)  # w~_j for every token
        e_tilde = plain_entity_attention(fusion.entity_attention, knowledge_in, knowledge_mask)
        W_t, b_t = layer.intermediate.dense.weight, layer.intermediate.dense.bias  # W~_t, b~
        W_e = fusion.entity_to_intermediate.weight  # W~_e
        W_out, b_out = layer.output.dense.weight, layer.output.dense.bias  # W_t, b_t
        W_ent, b_ent = fusion.intermediate_to_entity.weight, fusion.intermediate_to_entity.bias  # W_e, b_e
        aligned_words = 0
        for b in range(2):
            aligned = {int(p): k for k, p in enumerate(POSITIONS[b].tolist()) if p >= 0}
            for j in range(attended.size(1)):
                w = attended[b, j]
                if j in aligned:  # h_j = gelu(W~_t w~_j + W~_e e~_k + b~)
                    k = aligned[j]
                    h = F.gelu(W_t @ w + W_e @ e_tilde[b, k] + b_t)
                    aligned_words += 1
                else:  # h_j = gelu(W~_t w~_j + b~)
                    h = F.gelu(W_t @ w + b_t)
                if fusion_output == "gelu":
                    w_new = F.gelu(W_out @ h + b_out)
                else:
                    w_new = layer.output.LayerNorm(w + W_out @ h + b_out)
                target = out.last_hidden_state[b, j] if j < 14 else out.entity_last_hidden_state[b, j - 14]
                torch.testing.assert_close(target, w_new, atol=1e-5, rtol=1e-5)
                if j in aligned:
                    if fusion_output == "gelu":
                        e_new = F.gelu(W_ent @ h + b_ent)
                    else:
                        e_new = fusion.entity_LayerNorm(e_tilde[b, k] + W_ent @ h + b_ent)
                    torch.testing.assert_close(out.knowledge_last_hidden_state[b, k], e_new, atol=1e-5, rtol=1e-5)
    assert aligned_words == 4


@pytest.mark.parametrize("fusion_output", ["residual_layernorm", "gelu"])
def test_padded_knowledge_slots_are_zero(fusion_output):
    torch.manual_seed(0)
    model = ErnieModel(ernie_config(ernie_num_fusion_layers=2, ernie_fusion_output=fusion_output)).eval()
    with torch.no_grad():
        for parameter in model.fusion_layers.parameters():
            parameter.normal_(std=0.2)
        out = model(**ernie_batch())
        # one more padded slot (aligned nowhere) changes nothing else
        wider = ernie_batch()
        wider["ernie_entity_ids"] = torch.cat([ENTITY_IDS, torch.full((2, 1), -1)], dim=1)
        wider["ernie_entity_positions"] = torch.cat([POSITIONS, torch.full((2, 1), -1)], dim=1)
        widened = model(**wider)
    knowledge = out.knowledge_last_hidden_state
    padded = ENTITY_IDS < 0
    assert (knowledge[padded] == 0).all() and (widened.knowledge_last_hidden_state[:, 3] == 0).all()
    assert (knowledge[~padded].abs().sum(-1) > 0).all()  # real slots carry their fused state
    torch.testing.assert_close(widened.knowledge_last_hidden_state[:, :3], knowledge, atol=1e-6, rtol=0)
    torch.testing.assert_close(widened.last_hidden_state, out.last_hidden_state, atol=1e-6, rtol=0)


# ---------------------------------------------------------------------------------------------
# 3. dEA: corruption scheme and head
# ---------------------------------------------------------------------------------------------


def test_dea_corruption_proportions_and_targets():
    batch, entities, length, kb = 200, 100, 120, 50
    ids = torch.randint(0, kb, (batch, entities), generator=torch.Generator().manual_seed(1))
    positions = torch.arange(entities).expand(batch, entities).clone()
    ids[:, -10:] = -1
    positions[:, -10:] = -1
    out = corrupt_entity_alignments(ids, positions, length, kb, generator=torch.Generator().manual_seed(0))
    real = ids >= 0
    masked = real & (out["ernie_entity_ids"] == -1)
    assert torch.equal(masked, real & (out["ernie_entity_positions"] == -1))
    changed = real & ~masked & (out["ernie_entity_ids"] != ids)
    kept = real & (out["ernie_entity_ids"] == ids)
    total = int(real.sum())  # 18000 alignments: a binomial proportion's standard deviation is at most 0.0037
    assert abs(int(masked.sum()) / total - 0.15) < 0.01
    assert abs(int(changed.sum()) / total - 0.05) < 0.006  # every replacement differs from the original
    assert abs(int(kept.sum()) / total - 0.80) < 0.012
    assert int(masked.sum() + changed.sum() + kept.sum()) == total
    replacements = out["ernie_entity_ids"][changed]
    assert ((replacements >= 4) & (replacements < kb)).all()  # never [PAD] [UNK] [MASK] [MASK2] (LUKE's 0-3)
    assert not (replacements == ids[changed]).any()
    assert (out["ernie_entity_positions"][changed] == positions[changed]).all()  # a replaced entity stays aligned
    assert (out["ernie_entity_ids"][~real] == -1).all() and torch.equal(out["dea_candidate_ids"], ids)
    labels = out["dea_labels"]
    assert torch.equal(labels[:, :90], torch.arange(90).expand(batch, 90))  # every aligned word -> its entity
    assert (labels[:, 90:] == -100).all()


def test_dea_replacements_are_uniform_over_the_other_entities():
    """With every alignment replaced: a uniform draw over the non-special rows other than the original."""
    kb, draws = 10, 30000
    ids = torch.tensor([[5, 2] * (draws // 2)])  # an entity (5) and a special row (2, [MASK]) as originals
    positions = torch.arange(draws)[None]
    out = corrupt_entity_alignments(
        ids, positions, draws, kb, replace_prob=1.0, mask_prob=0.0, generator=torch.Generator().manual_seed(0)
    )
    for original, expected_rows in ((5, [4, 6, 7, 8, 9]), (2, [4, 5, 6, 7, 8, 9])):
        drawn = out["ernie_entity_ids"][ids == original]
        counts = torch.bincount(drawn, minlength=kb).float() / drawn.numel()
        assert sorted(drawn.unique().tolist()) == expected_rows
        share = 1 / len(expected_rows)
        assert (counts[expected_rows] - share).abs().max() < 0.02, counts
    # a user KB without special rows: every other row may be drawn, row 0 included
    user = corrupt_entity_alignments(
        torch.tensor([[1] * 2000]), torch.arange(2000)[None], 2000, 3, replace_prob=1.0, mask_prob=0.0,
        generator=torch.Generator().manual_seed(0), special_ids=(),
    )  # fmt: skip
    assert sorted(user["ernie_entity_ids"].unique().tolist()) == [0, 2]


@pytest.mark.parametrize(
    "kb_size, special_ids, message",
    [
        (5, (0, 1, 2, 3), r"kb_size=5 with special_ids=\(0, 1, 2, 3\) leaves 1 non-special"),
        (4, (0, 1, 2, 3), "leaves 0 non-special KB row"),
        (1, (), r"kb_size=1 with special_ids=\(\) leaves 1 non-special"),
    ],
)
def test_dea_corruption_refuses_a_kb_without_another_entity(kb_size, special_ids, message):
    ids, positions = torch.tensor([[0, -1]]), torch.tensor([[0, -1]])
    with pytest.raises(ValueError, match=message):
        corrupt_entity_alignments(ids, positions, 4, kb_size, special_ids=special_ids)


def test_dea_head_scores_tokens_against_the_sequence_entities():
    torch.manual_seed(0)
    model = ErnieForDenoisingEntityAutoencoder(ernie_config()).eval()
    batch = ernie_batch()
    corrupted = corrupt_entity_alignments(
        ENTITY_IDS, POSITIONS, 14, 4, generator=torch.Generator().manual_seed(1), special_ids=()
    )  # TINY's 4-row entity table: no special rows in this test
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask")}
    inputs["entity_position_ids"] = batch["entity_position_ids"]
    with torch.no_grad():
        out = model(**inputs, **corrupted)
    table = model.gesa.get_entity_embeddings().weight
    projected = model.LayerNorm(F.gelu(model.transform(out.last_hidden_state)))
    for b in range(2):
        for n, entity in enumerate(ENTITY_IDS[b].tolist()):
            if entity >= 0:
                torch.testing.assert_close(out.logits[b, :, n], projected[b] @ table[entity], atol=1e-5, rtol=1e-5)
            else:
                assert (out.logits[b, :, n] == torch.finfo(torch.float).min).all()
    targets = corrupted["dea_labels"]
    expected = F.cross_entropy(out.logits.reshape(-1, 3), targets.reshape(-1), ignore_index=-100)
    assert math.isclose(float(out.loss), float(expected), rel_tol=1e-6)
    model.train()
    model(**inputs, **corrupted).loss.backward()
    assert model.transform.weight.grad.abs().sum() > 0


# ---------------------------------------------------------------------------------------------
# 4. Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"ernie_entity_positions": None}, "ernie_entity_positions is required with ernie_entity_ids"),
        ({"ernie_entity_positions": torch.tensor([[7, -1, 11], [7, -1, -1]])}, "missing alignment"),
        ({"ernie_entity_positions": torch.tensor([[7, 9, 14], [7, -1, -1]])}, r"word indices in \[0, 13\]"),
        ({"ernie_entity_positions": torch.tensor([[7, 7, 11], [7, -1, -1]])}, "two entities are aligned to the same"),
        ({"ernie_entity_positions": torch.tensor([[7, 9, 11], [12, -1, -1]])}, "aligned to a padding word"),
        ({"ernie_entity_positions": torch.tensor([[7, 9], [7, -1]])}, "ernie_entity_positions has shape"),
        (
            {"ernie_entity_ids": torch.tensor([[1, 3, 4], [2, -1, -1]])},
            r"ernie_entity_ids must be knowledge-base rows",
        ),
        ({"ernie_entity_ids": None}, "ernie_entity_positions was given without ernie_entity_ids"),
    ],
)
def test_bad_knowledge_inputs_raise_clear_errors(changes, message):
    model = ErnieForEntitySpanQA(ernie_config())
    batch = ernie_batch()
    for key, value in changes.items():
        if value is None:
            del batch[key]
        else:
            batch[key] = value
    with pytest.raises(ValueError, match=message):
        model(**batch)


# ---------------------------------------------------------------------------------------------
# The head's entity (ERNIE's released fine-tuning code: the [CLS] has an entity slot)
# ---------------------------------------------------------------------------------------------


def head_entity_states(model: ErnieModel, kb_row: int, head_slot: bool) -> torch.Tensor:
    """The final state of word 6 (a word the head reads: a marker) with the knowledge entity `kb_row` aligned to
    word 7 and, with `head_slot`, the head's entity slot on word 6."""
    batch = ernie_batch()
    batch["ernie_entity_ids"] = torch.tensor([[kb_row, ERNIE_HEAD_ENTITY if head_slot else -1]] * 2)
    batch["ernie_entity_positions"] = torch.tensor([[7, 6 if head_slot else -1]] * 2)
    with torch.no_grad():
        return model(**batch).last_hidden_state[:, 6]


def test_the_head_entity_carries_the_kb_into_the_word_the_head_reads():
    """In the one fusion layer of a two-layer model the aligned entity reaches only its own word; the head's entity
    slot on word 6 (`ernie_head_entity`) gathers it through the entity self-attention and fuses it into word 6."""
    torch.manual_seed(0)
    model = ErnieModel(ernie_config(ernie_num_fusion_layers=1)).eval()
    with torch.no_grad():
        model.get_entity_embeddings().weight.normal_()  # distinct KB rows
    without = [head_entity_states(model, row, head_slot=False) for row in (1, 3)]
    torch.testing.assert_close(without[0], without[1], atol=0, rtol=0)  # the KB does not reach word 6
    with_slot = [head_entity_states(model, row, head_slot=True) for row in (1, 3)]
    assert (with_slot[0] - with_slot[1]).abs().max() > 1e-3
    model.config.ernie_head_entity = False  # a model without it (saved before the field) ignores the slots
    torch.testing.assert_close(head_entity_states(model, 1, head_slot=True), without[0], atol=1e-6, rtol=0)


def test_an_ernie_config_saved_before_the_head_entity_loads_without_it():
    saved = ernie_config().to_dict()
    assert ernie_config().to_diff_dict()["ernie_head_entity"] is True  # written even at its default
    saved.pop("ernie_head_entity")
    assert ErnieConfig.from_dict(saved).ernie_head_entity is False


def test_the_knowledge_builder_gives_each_marker_the_head_entity(tiny_luke_dir):
    from transformers import AutoTokenizer

    from gesa.processing_kb import EntityCandidateGenerator, KnowledgeInputBuilder

    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    builder = KnowledgeInputBuilder(tokenizer, EntityCandidateGenerator({"Paris": 5}), "ernie")
    batch = dict(tokenizer("Yes Paris is big", entity_spans=[(4, 9)], entities=["[UNK]"], return_tensors="pt"))
    batch["marker_positions"] = torch.tensor([[1]])
    out = builder(batch)
    slots = dict(zip(out["ernie_entity_positions"][0].tolist(), out["ernie_entity_ids"][0].tolist(), strict=True))
    assert slots[1] == ERNIE_HEAD_ENTITY and 5 in slots.values()


# ---------------------------------------------------------------------------------------------
# 5. LUKE conversion, training on the project's ReCoRD sample, save / reload with trust_remote_code
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_converts_trains_and_reloads(tiny_luke_dir, tmp_path):
    from transformers import LukeTokenizer

    torch.manual_seed(0)
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    model = ErnieForEntitySpanQA.from_luke_pretrained(tiny_luke_dir, classifier_dropout=0.0)
    missing = model.luke_conversion_info["missing_keys"]
    assert "gesa.fusion_layers.0.entity_to_intermediate.weight" in missing and "classifier.weight" in missing
    assert model.config.model_type == "gesa_ernie" and model.config.ernie_num_fusion_layers == 1

    batches = knowledge_record_batches(model, tokenizer, "ernie")
    first = batches[0]
    ids, positions = first["ernie_entity_ids"], first["ernie_entity_positions"]
    assert (ids >= 0).sum() > 4
    # each knowledge entity sits on the first word of a LUKE entity's mention
    for b, n in (ids >= 0).nonzero().tolist():
        assert (first["entity_position_ids"][b, :, 0] == positions[b, n]).any()
    before, after = train_steps(model, batches, steps=24)
    print(f"ERNIE ReCoRD loss before {before:.4f} after {after:.4f}")
    assert after < 0.8 * before, (before, after)

    inputs = {k: v for k, v in first.items() if k != "labels"}
    assert_qa_model_reloads(model, inputs, tmp_path, "modeling_ernie", "ErnieForEntitySpanQA", "ErnieModel")

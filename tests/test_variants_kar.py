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
"""KnowBERT-KAR on the GESA backbone: identity, linker weights, W2 W1 = I, linking loss, KB, bad input, and
conversion + training + fresh-process reload on the project's ReCoRD sample."""

from __future__ import annotations

import math

import pytest
import torch
from model_helpers import TINY, record_like_batch
from variant_helpers import (
    assert_qa_model_reloads,
    knowledge_record_batches,
    same_backbone,
    train_steps,
    variant_on_its_backbone,
)
from variant_inputs import kar_batch, kar_config

from gesa import GesaModel
from gesa.configuration_variants import KarConfig
from gesa.modeling_kar import KarForEntitySpanQA, KarModel, threshold_link_weights
from gesa.processing_kb import EntityCandidateGenerator

KB_SIZE = 4  # TINY's entity table is the default knowledge base


# ---------------------------------------------------------------------------------------------
# 1. Identity: recontextualisation output zeroed -> the backbone
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kar_layer", [0, 1, 2])
def test_zeroed_recontextualisation_equals_backbone(kar_layer):
    model, backbone = variant_on_its_backbone(KarModel, kar_config, "kar.", kar_layer=kar_layer)
    batch = kar_batch()
    gesa_inputs = {k: v for k, v in batch.items() if not k.startswith("kar_")}
    with torch.no_grad():
        expected = backbone(**gesa_inputs, output_hidden_states=True)
        model.kar.kg_to_bert.weight.zero_()
        model.kar.kg_to_bert.bias.zero_()
        actual = model(**batch, output_hidden_states=True)
    # the KAR path really ran: mentions were linked and scored
    assert actual.linking_weights[0, 1].sum() > 0
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(actual.last_hidden_state[real], expected.last_hidden_state[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(actual.entity_last_hidden_state, expected.entity_last_hidden_state, atol=1e-5, rtol=0)
    torch.testing.assert_close(actual.pooler_output, expected.pooler_output, atol=1e-5, rtol=0)
    for mine, theirs in zip(actual.hidden_states, expected.hidden_states, strict=True):
        torch.testing.assert_close(mine[real], theirs[real], atol=1e-5, rtol=0)

    # and the same with kar_output_init="zero" straight from the config
    zero = KarModel(kar_config(kar_layer=kar_layer, kar_output_init="zero")).eval()
    same_backbone(zero, backbone)
    with torch.no_grad():
        torch.testing.assert_close(
            zero(**batch).entity_last_hidden_state, expected.entity_last_hidden_state, atol=1e-5, rtol=0
        )


def test_pinv_initialised_kar_changes_the_backbone():
    """The control for the identity test: the KAR block at its KnowBERT initialisation does act."""
    torch.manual_seed(0)
    backbone = GesaModel(kar_config()).eval()
    model = KarModel(kar_config()).eval()
    same_backbone(model, backbone)
    batch = kar_batch()
    with torch.no_grad():
        expected = backbone(**{k: v for k, v in batch.items() if not k.startswith("kar_")})
        actual = model(**batch)
    assert (actual.entity_last_hidden_state - expected.entity_last_hidden_state).abs().max() > 1e-2


# ---------------------------------------------------------------------------------------------
# 2. Linker weights, threshold and NULL; W2 W1 = I
# ---------------------------------------------------------------------------------------------


def test_threshold_weights_are_a_distribution_over_passing_candidates():
    scores = torch.tensor([[[2.0, 0.5, -1.0, 3.0], [-2.0, -0.5, -3.0, 1.0], [0.1, 0.2, 0.3, 0.4]]])
    mask = torch.tensor([[[True, True, True, False], [True, True, True, False], [False, False, False, False]]])
    weights, linked = threshold_link_weights(scores, mask, threshold=0.0)
    # row 0: candidates 0 and 1 pass (2 is below, 3 is padding): softmax over {2.0, 0.5}
    expected = torch.softmax(torch.tensor([2.0, 0.5]), dim=0)
    torch.testing.assert_close(weights[0, 0, :2], expected)
    assert weights[0, 0, 2] == 0 and weights[0, 0, 3] == 0
    # row 1: nothing passes (the 1.0 is padding) -> all zero, NULL; row 2: no candidate at all -> NULL
    assert (weights[0, 1:] == 0).all()
    assert linked.tolist() == [[True, False, False]]


def test_model_linker_weights_threshold_and_null():
    torch.manual_seed(0)
    model = KarModel(kar_config()).eval()
    with torch.no_grad():
        model.kar.null_embedding.normal_()  # a recognisable NULL vector
        model.kar.linker.score.weight.normal_(std=3.0)
        batch = kar_batch()
        scores = model(**batch).linking_scores
        valid = batch["kar_candidate_ids"] >= 0
        delta = float(scores[valid].min() + scores[valid].max()) / 2  # some candidates pass, some do not
        model.config.kar_entity_threshold = delta
        out = model(**batch)
    weights = out.linking_weights
    passing = valid & (out.linking_scores >= delta)
    assert passing.any() and (valid & ~passing).any()
    assert (weights[~passing] == 0).all()
    for b, c in passing.any(-1).nonzero().tolist():
        row = passing[b, c]
        torch.testing.assert_close(weights[b, c][row], torch.softmax(out.linking_scores[b, c][row], dim=0))
        assert math.isclose(float(weights[b, c].sum()), 1.0, rel_tol=1e-6)
    real_mention = batch["kar_mention_spans"][..., 0] >= 0
    assert torch.equal(out.null_mask[real_mention], ~passing.any(-1)[real_mention])
    assert out.null_mask[0, 4] and out.null_mask[1, 2]  # mentions without candidates take NULL


@pytest.mark.parametrize("layer_norms", [False, True])
def test_null_embedding_enters_the_span_states(layer_norms):
    """Step 4: `s'_m = s_m + e~_m` (the paper), or `LayerNorm(s_m + e~_m)` over LayerNormed pooled spans
    (`kar_layer_norms`, KnowBERT's released code); a mention without a passing candidate takes the NULL embedding."""
    torch.manual_seed(0)
    config = kar_config(kar_layer_norms=layer_norms)
    model = KarModel(config).eval()
    kar = model.kar
    with torch.no_grad():
        kar.null_embedding.copy_(torch.arange(config.entity_emb_size, dtype=torch.float))
    words = torch.randn(1, 6, config.hidden_size)
    spans = torch.tensor([[[1, 2], [4, 4]]])
    table = torch.randn(3, config.entity_emb_size)
    ids = torch.tensor([[[0, 1], [-1, -1]]])
    embeddings = table[ids.clamp(min=0)] * (ids >= 0)[..., None]
    with torch.no_grad():
        _, scores, weights, enhanced, null_mask, _ = kar(
            words, spans, embeddings, torch.full(ids.shape, 0.5), ids >= 0
        )
        pooled = kar.pool_spans(kar.bert_to_kg(words), spans)
        if layer_norms:
            pooled = kar.span_layer_norm(pooled)
        pooled, _ = kar.span_encoder(pooled, pooled, torch.tensor([[True, True]]))
    assert null_mask.tolist() == [[not bool((scores[0, 0] >= 0).any()), True]]
    entity = (weights[0, 0, :, None] * table[:2]).sum(0) if not null_mask[0, 0] else kar.null_embedding
    combine = kar.enhanced_layer_norm if layer_norms else (lambda x: x)
    torch.testing.assert_close(enhanced[0, 1], combine(pooled[0, 1] + kar.null_embedding))
    torch.testing.assert_close(enhanced[0, 0], combine(pooled[0, 0] + entity))


def test_kar_reads_a_kb_of_any_scale_on_the_scale_of_its_word_states():
    """With KnowBERT's released LayerNorms (`kar_layer_norms`, the default) the KB vectors' norm does not change
    the answer (PyKEEN's TransE writes unit vectors, LUKE's table has others); without them it does (the control)."""
    batch = kar_batch()
    table = torch.randn(KB_SIZE, TINY["entity_emb_size"], generator=torch.Generator().manual_seed(1))
    for layer_norms in (True, False):
        torch.manual_seed(0)
        model = KarModel(kar_config(kar_layer_norms=layer_norms)).eval()
        states = []
        for scale in (1.0, 5.0):
            model.set_knowledge_base(scale * table)
            with torch.no_grad():
                states.append(model(**batch).last_hidden_state)
        same = torch.allclose(states[0], states[1], atol=1e-4, rtol=0)
        assert same == layer_norms, layer_norms


def test_a_kar_config_saved_before_its_layer_norms_loads_without_them(tmp_path):
    saved = kar_config().to_dict()
    assert kar_config().to_diff_dict()["kar_layer_norms"] is True  # written even at its default
    saved.pop("kar_layer_norms")
    assert KarConfig.from_dict(saved).kar_layer_norms is False
    assert KarConfig.from_dict(saved, kar_layer_norms=True).kar_layer_norms is True
    assert not any("layer_norm" in name for name, _ in KarModel(KarConfig.from_dict(saved)).kar.named_children())


def test_w2_is_the_pseudo_inverse_of_w1_at_initialisation():
    torch.manual_seed(0)
    model = KarForEntitySpanQA(kar_config())
    kar = model.gesa.kar
    identity = torch.eye(kar.bert_to_kg.out_features)
    # W2 W1 = I_E in the spec's row-vector notation: bert_to_kg.weight @ kg_to_bert.weight in torch's
    torch.testing.assert_close(kar.bert_to_kg.weight @ kar.kg_to_bert.weight, identity, atol=1e-4, rtol=0)
    y = torch.randn(5, kar.bert_to_kg.out_features)
    with torch.no_grad():
        torch.testing.assert_close(kar.bert_to_kg(kar.kg_to_bert(y)), y, atol=1e-4, rtol=0)
    zero = KarModel(kar_config(kar_output_init="zero")).kar
    assert not zero.kg_to_bert.weight.any() and not zero.kg_to_bert.bias.any()


def test_linking_loss_is_the_gold_negative_log_likelihood():
    torch.manual_seed(0)
    model = KarModel(kar_config()).eval()
    batch = kar_batch()
    batch["kar_gold_candidates"] = torch.tensor([[-1, 1, 0, 0, -1], [-1, 0, -1, -1, -1]])
    with torch.no_grad():
        out = model(**batch)
    expected = 0.0
    for b, c, k in ((0, 1, 1), (0, 2, 0), (0, 3, 0), (1, 1, 0)):
        valid = batch["kar_candidate_ids"][b, c] >= 0
        expected -= float(torch.log_softmax(out.linking_scores[b, c][valid], dim=0)[k])
    assert math.isclose(float(out.linking_loss), expected / 2, rel_tol=1e-5)
    head = KarForEntitySpanQA(kar_config(classifier_dropout=0.0, kar_linking_loss_weight=0.5)).eval()
    labels = torch.zeros(2, 5)
    labels[:, 1] = 1
    with torch.no_grad():
        with_gold = head(**batch, labels=labels)
        without = head(**{k: v for k, v in batch.items() if k != "kar_gold_candidates"}, labels=labels)
    assert math.isclose(float(with_gold.loss), float(without.loss) + 0.5 * float(with_gold.linking_loss), rel_tol=1e-5)


def test_default_mentions_come_from_the_luke_entities():
    torch.manual_seed(0)
    model = KarModel(kar_config()).eval()
    batch = record_like_batch()
    with torch.no_grad():
        out = model(**batch)
    # no candidates: every real mention takes NULL; the placeholder and padding are no mention
    assert out.linking_scores.shape == (2, 5, 1)
    spans = KarModel._spans_from_entities(
        2,
        torch.device("cpu"),
        batch["entity_position_ids"],
        batch["entity_attention_mask"],
        batch["placeholder_entity_mask"],
    )
    assert spans[0].tolist() == [[-1, -1], [7, 8], [9, 9], [11, 12], [10, 10]]
    assert spans[1].tolist() == [[-1, -1], [7, 8], [9, 9], [-1, -1], [-1, -1]]


def test_user_knowledge_base_replaces_the_entity_table():
    torch.manual_seed(0)
    model = KarForEntitySpanQA(kar_config()).eval()
    table = torch.randn(10, TINY["entity_emb_size"])
    model.set_knowledge_base(table)
    assert model.config.kb_size == 10 and not any("knowledge_base" in n for n, _ in model.named_parameters())
    batch = kar_batch()
    batch["kar_candidate_ids"][0, 2, 0] = 9  # beyond the entity table, inside the KB
    with torch.no_grad():
        model(**batch)
    batch["kar_candidate_ids"][0, 2, 0] = 10
    with pytest.raises(ValueError, match=r"kar_candidate_ids must be knowledge-base rows in \[0, 9\]"):
        model(**batch)


# ---------------------------------------------------------------------------------------------
# 3. Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("kar_candidate_ids", torch.full((2, 5, 3), 4), r"kar_candidate_ids must be knowledge-base rows in \[0, 3\]"),
        ("kar_candidate_ids", torch.full((2, 5, 3), -3), "kar_candidate_ids must be knowledge-base rows"),
        ("kar_candidate_ids", torch.full((2, 4, 3), 1), "kar_candidate_ids has shape"),
        ("kar_candidate_priors", torch.ones(2, 5, 2), "kar_candidate_priors has shape"),
        ("kar_mention_spans", torch.tensor([[[0, 14]] * 5] * 2), r"kar_mention_spans\[0, 0\] = \[0, 14\]"),
        ("kar_mention_spans", torch.tensor([[[5, 3]] * 5] * 2), "is not an inclusive word span"),
        ("kar_mention_spans", torch.zeros(2, 5, 3, dtype=torch.long), "kar_mention_spans has shape"),
        ("kar_gold_candidates", torch.full((2, 5), 2), "kar_gold_candidates must index a real candidate"),
    ],
)
def test_bad_kar_inputs_raise_clear_errors(field, value, message):
    model = KarForEntitySpanQA(kar_config())
    batch = kar_batch()
    batch[field] = value
    with pytest.raises(ValueError, match=message):
        model(**batch)


def test_candidates_without_spans_are_refused():
    model = KarModel(kar_config())
    batch = kar_batch()
    del batch["kar_mention_spans"]
    with pytest.raises(ValueError, match="kar_candidate_ids was given without kar_mention_spans"):
        model(**batch)


def test_default_kar_layer_mirrors_knowbert():
    assert KarConfig().kar_layer == 20  # 24 layers: after layer 20
    assert KarConfig(num_hidden_layers=12).kar_layer == 10  # KnowBERT-Wiki: between layers 10 and 11 of 12
    assert KarConfig(**{**TINY, "kar_layer": None}).kar_layer == 1


# ---------------------------------------------------------------------------------------------
# 4. Candidate generation from the features
# ---------------------------------------------------------------------------------------------


def test_candidate_generator_prefers_aliases_then_titles():
    generator = EntityCandidateGenerator(
        {"[MASK]": 2, "Chelsea F.C.": 7, "Diego Costa": 8},
        {"the Blues": [("Chelsea F.C.", 0.9), (5, 0.1)], "Chelsea": [(7, 0.8), (9, 0.2)]},
        max_candidates=1,
    )
    assert generator("The Blues") == [(7, 0.9)]
    assert generator("diego  costa") == [(8, 1.0)]
    assert generator("Chelsea") == [(7, 0.8)]
    assert generator("[MASK]") == [] and generator("Nobody") == []
    with pytest.raises(ValueError, match="not in the entity_vocab"):
        EntityCandidateGenerator({"A": 1}, {"x": [("B", 1.0)]})


# ---------------------------------------------------------------------------------------------
# 5. LUKE conversion, training on the project's ReCoRD sample, save / reload with trust_remote_code
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_converts_trains_and_reloads(tiny_luke_dir, tmp_path):
    from transformers import LukeTokenizer

    torch.manual_seed(0)
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    model = KarForEntitySpanQA.from_luke_pretrained(tiny_luke_dir, kar_layer=1, classifier_dropout=0.0)
    info = model.luke_conversion_info
    assert "gesa.kar.kg_to_bert.weight" in info["missing_keys"] and "classifier.weight" in info["missing_keys"]
    assert not any(key.startswith("gesa.encoder.") for key in info["missing_keys"] if "label_embeddings" not in key)
    assert model.config.model_type == "gesa_kar"
    kar = model.gesa.kar
    identity = torch.eye(kar.bert_to_kg.out_features)
    torch.testing.assert_close(kar.bert_to_kg.weight @ kar.kg_to_bert.weight, identity, atol=1e-4, rtol=0)

    batches = knowledge_record_batches(model, tokenizer, "kar")
    first = batches[0]
    assert (first["kar_candidate_ids"] >= 0).any(-1).sum() > 4  # the mentions were read back and linked
    before, after = train_steps(model, batches, steps=12)
    print(f"KAR ReCoRD loss before {before:.4f} after {after:.4f}")
    assert after < 0.8 * before, (before, after)

    inputs = {k: v for k, v in first.items() if k != "labels"}
    saved = assert_qa_model_reloads(model, inputs, tmp_path, "modeling_kar", "KarForEntitySpanQA", "KarModel")
    assert saved["kb_size"] == 50 and saved["kar_layer"] == 1

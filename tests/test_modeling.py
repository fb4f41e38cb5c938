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
"""GESA core: LUKE equivalence, labels (spec section 4), Eq. 1, padding, save/load, bad input."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch
from model_helpers import TINY, assert_answers_as_luke, config_error, record_like_batch, tiny_config
from transformers import LukeModel, PreTrainedConfig
from variant_helpers import reload_in_fresh_process

from gesa import ABLATION_PRESETS, GesaConfig, GesaForEntitySpanQA, GesaModel
from gesa.modeling_gesa import GesaPreTrainedModel
from gesa.structure_gesa import (
    AttentionStructure,
    RelativeLabels,
    assemble_labels,
    build_entity_entity_labels,
    build_entity_word_labels,
    build_word_word_labels,
    entity_defaults,
    word_label_ranks,
)

# ---------------------------------------------------------------------------------------------
# 1-2. LUKE equivalence and conversion
# ---------------------------------------------------------------------------------------------


def test_luke_preset_reproduces_luke_model(tiny_luke_dir):
    luke = LukeModel.from_pretrained(tiny_luke_dir).eval()
    gesa = GesaModel.from_luke_pretrained(
        tiny_luke_dir, use_absolute_position_embeddings=True, use_relative_labels=False
    ).eval()
    batch = record_like_batch(vocab_size=1000)
    luke_inputs = {
        k: batch[k]
        for k in ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask", "entity_position_ids")
    }
    assert_answers_as_luke(gesa, luke, luke_inputs)
    # the named ablation preset is the same model
    assert GesaConfig(ablation="luke").use_absolute_position_embeddings
    assert not GesaConfig(ablation="luke").use_relative_labels


def test_conversion_copies_word_query_into_four_queries(tiny_luke_dir, monkeypatch):
    """Paper 4.1: LUKE's word query starts all four queries; the entity-aware copies are brought up to unit gain
    (`entity_query_gain`: this tiny LUKE's queries, drawn at 0.02, are smaller), exact copies with None."""
    luke = LukeModel.from_pretrained(tiny_luke_dir)
    model = GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir)
    monkeypatch.setattr(GesaPreTrainedModel, "entity_query_gain", None)
    exact = GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir)
    for luke_layer, layer, copied in zip(luke.encoder.layer, model.gesa.encoder.layer, exact.gesa.encoder.layer,
                                         strict=True):  # fmt: skip
        attn, query = layer.attention.self, luke_layer.attention.self.query
        assert torch.equal(attn.w2w_query.weight, query.weight) and torch.equal(attn.w2w_query.bias, query.bias)
        gain = query.weight.pow(2).sum(dim=1).mean().sqrt()
        for name in ("w2e_query", "e2w_query", "e2e_query"):
            torch.testing.assert_close(getattr(attn, name).weight, query.weight / gain, rtol=1e-5, atol=0)
            torch.testing.assert_close(getattr(attn, name).bias, query.bias / gain, rtol=1e-5, atol=0)
            assert torch.equal(getattr(copied.attention.self, name).weight, query.weight), name
            assert torch.equal(getattr(copied.attention.self, name).bias, query.bias), name
        assert torch.equal(attn.key.weight, luke_layer.attention.self.key.weight)
        assert torch.equal(layer.output.dense.weight, luke_layer.output.dense.weight)
    assert model.config.model_type == "gesa" and not model.config.use_absolute_position_embeddings
    info = model.luke_conversion_info
    # fresh: the label table of each layer and the head; unused: LUKE's position tables
    assert "classifier.weight" in info["missing_keys"]
    assert "gesa.encoder.layer.0.attention.self.label_embeddings.weight" in info["missing_keys"]
    assert "embeddings.position_embeddings.weight" in info["unexpected_keys"]


def test_conversion_names_the_unused_luke_weights_in_one_warning(tiny_luke_dir, caplog):
    import logging

    with caplog.at_level(logging.WARNING, logger="gesa.conversion_gesa"):
        model = GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir)
    unused = model.luke_conversion_info["unexpected_keys"]
    warnings = [r.getMessage() for r in caplog.records if r.name.endswith("conversion_gesa") and r.levelno >= 30]
    named = [message for message in warnings if message.startswith("LUKE weights not used by GesaForEntitySpanQA: ")]
    assert len(unused) > 1 and len(named) == 1 and unused[0] in named[0], warnings
    assert not [message for message in warnings if "is not used by" in message]  # not one line per weight


def test_conversion_keeps_entity_aware_queries_and_shrinks_entity_table(tmp_path):
    from tiny_luke import build_tiny_luke

    path = build_tiny_luke(tmp_path / "luke", tie_entity_queries=False)
    luke = LukeModel.from_pretrained(path)
    model = GesaModel.from_luke_pretrained(path, keep_entity_aware_queries=True, entity_rows=[0, 2])
    attn, luke_attn = model.encoder.layer[1].attention.self, luke.encoder.layer[1].attention.self
    assert torch.equal(attn.w2w_query.weight, luke_attn.query.weight)
    assert torch.equal(attn.e2e_query.weight, luke_attn.e2e_query.weight)
    assert not torch.equal(attn.e2e_query.weight, luke_attn.query.weight)
    table = luke.entity_embeddings.entity_embeddings.weight
    assert torch.equal(model.entity_embeddings.entity_embeddings.weight, table[[0, 2]])
    assert model.config.entity_vocab_size == 2


def test_conversion_passes_hub_arguments_to_the_download(tmp_path):
    """`subfolder`, `revision`, `local_files_only` ... reach both the config and the weights download."""
    from tiny_luke import build_tiny_luke

    build_tiny_luke(tmp_path / "repo" / "luke")
    model = GesaModel.from_luke_pretrained(
        tmp_path / "repo",
        subfolder="luke",
        local_files_only=True,
        cache_dir=tmp_path / "cache",
        max_relative_position=3,
    )
    luke = LukeModel.from_pretrained(tmp_path / "repo" / "luke")
    assert torch.equal(
        model.encoder.layer[0].attention.self.key.weight, luke.encoder.layer[0].attention.self.key.weight
    )
    assert model.config.max_relative_position == 3  # the other keywords still override config fields
    with pytest.raises(ValueError, match="model_type"):
        GesaModel.from_luke_pretrained(tmp_path / "repo", local_files_only=True)  # no config.json at the top


def test_conversion_refuses_other_checkpoints(tmp_path):
    from transformers import BertConfig, BertModel

    BertModel(
        BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    ).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="not LUKE"):
        GesaModel.from_luke_pretrained(tmp_path)


def test_added_word_tokens_start_from_their_source_tokens():
    model = GesaModel(tiny_config())
    model.init_added_word_embeddings({64: 10, 65: 11})
    table = model.get_input_embeddings().weight
    assert table.shape[0] == 66 and model.config.vocab_size == 66
    assert torch.equal(table[64], table[10]) and torch.equal(table[65], table[11])


# ---------------------------------------------------------------------------------------------
# 3. Labels, computed by hand from spec section 4
# ---------------------------------------------------------------------------------------------


def spec_labels(batch: dict, b: int, config: GesaConfig) -> list[list[int]]:
    """Spec section 4 written plainly, one pair at a time."""
    lab = RelativeLabels(config.max_relative_position)
    sw = config.label_switches
    k = config.max_relative_position
    g = batch["global_attention_mask"][b].tolist()
    pos = batch["entity_position_ids"][b].tolist()
    strings = batch["entity_string_ids"][b].tolist()
    sents = batch["entity_sentence_ids"][b].tolist()
    plc = batch["placeholder_entity_mask"][b].tolist()
    L, E = len(g), len(strings)
    mentions = [{p for p in pos[e] if p >= 0} for e in range(E)]

    def w2w(i, j):
        if sw["cls_global"] and (g[i] == 1 or g[j] == 1):
            return lab.cls_global
        if sw["question_global"] and (g[i] == 2 or g[j] == 2):
            return lab.question_global
        if not sw["w2w_distance"]:
            return 0
        return 1 + max(-k, min(k, j - i)) + k

    def w2e(word, e):
        if not sw["w2e_e2w"]:
            return 0
        if sw["plc_question"] and plc[e] and g[word] == 2:
            return lab.plc_question
        linked = any(word in mentions[o] for o in range(E) if o == e or (strings[o] >= 0 and strings[o] == strings[e]))
        if sw["mention"] and linked:
            return lab.mention
        return lab.non_mention

    def e2e(i, j):
        if not sw["e2e"]:
            return 0
        if not sw["e2e_graph"]:
            return lab.entity_distance_offset + max(-k, min(k, j - i)) + k
        edge = (lambda kind: lab.any_edge) if sw["single_edge_label"] else (lambda kind: kind)
        if i == j:
            return lab.self_edge
        if sw["plc_edges"] and (plc[i] or plc[j]):
            return edge(lab.plc_edge)
        if sw["sent_edges"] and sents[i] >= 0 and sents[i] == sents[j]:
            return edge(lab.sent_edge)
        if sw["match_edges"] and strings[i] >= 0 and strings[i] == strings[j] and sents[i] >= 0 and sents[j] >= 0:
            return edge(lab.match_edge)
        return lab.no_edge

    rows = []
    for i in range(L + E):
        row = []
        for j in range(L + E):
            if i < L and j < L:
                row.append(w2w(i, j))
            elif i < L:
                row.append(w2e(i, j - L))
            elif j < L:
                row.append(w2e(j, i - L))
            else:
                row.append(e2e(i - L, j - L))
        rows.append(row)
    return rows


def model_labels(batch: dict, config: GesaConfig) -> torch.Tensor:
    """The dense `(B, P, P)` label matrix of a batch, assembled from the model's per-block label builders."""
    batch_size, word_length = batch["input_ids"].shape
    w2w = build_word_word_labels(
        RelativeLabels(config.max_relative_position),
        config.label_switches["w2w_distance"],
        word_length,
        word_label_ranks(config, batch["global_attention_mask"]),
        batch_size,
    )
    placeholder, strings, sentences = entity_defaults(
        batch["placeholder_entity_mask"],
        batch["entity_string_ids"],
        batch["entity_sentence_ids"],
        batch_size,
        batch["entity_position_ids"].size(1),
        torch.device("cpu"),
    )
    e2w = build_entity_word_labels(
        config, word_length, batch["global_attention_mask"], batch["entity_position_ids"], placeholder, strings
    )
    return assemble_labels(w2w, e2w, build_entity_entity_labels(config, placeholder, strings, sentences))


def test_labels_pinned_by_hand():
    config = tiny_config()
    lab = RelativeLabels(3)
    batch = record_like_batch()
    labels = model_labels(batch, config)[0]
    L = 14
    assert labels[0, 9] == lab.cls_global and labels[9, 0] == lab.cls_global  # CLS beats question and distance
    assert labels[0, 2] == lab.cls_global  # CLS precedes question
    assert labels[2, 12] == lab.question_global and labels[12, 2] == lab.question_global
    assert labels[6, 7] == 1 + 1 + 3 and labels[7, 6] == 1 - 1 + 3  # distance +1 / -1, k = 3
    assert labels[6, 13] == 1 + 3 + 3 and labels[13, 6] == 1  # clipped at +k / -k
    assert labels[L + 0, 3] == lab.plc_question  # placeholder <-> [PLC] is a question token: precedence
    assert labels[L + 0, 2] == lab.plc_question and labels[2, L + 0] == lab.plc_question
    assert labels[L + 1, 7] == lab.mention and labels[8, L + 1] == lab.mention
    assert labels[L + 1, 11] == lab.mention  # entity 3 has entity 1's string: its mention is linked too
    assert labels[L + 2, 7] == lab.non_mention and labels[L + 4, 11] == lab.non_mention
    assert labels[L + 1, L + 1] == lab.self_edge
    assert labels[L + 0, L + 3] == lab.plc_edge and labels[L + 3, L + 0] == lab.plc_edge
    assert labels[L + 1, L + 2] == lab.sent_edge and labels[L + 3, L + 4] == lab.sent_edge
    assert labels[L + 1, L + 3] == lab.match_edge  # same string, different sentences
    assert labels[L + 2, L + 4] == lab.no_edge


@pytest.mark.parametrize("ablation", sorted(ABLATION_PRESETS))
def test_labels_match_spec_in_every_block(ablation):
    config = tiny_config(ablation=ablation)
    batch = record_like_batch()
    labels = model_labels(batch, config)
    for b in range(2):
        assert labels[b].tolist() == spec_labels(batch, b, config)


# ---------------------------------------------------------------------------------------------
# 4. Attention equals a plain eager reference of Eq. 1
# ---------------------------------------------------------------------------------------------


def reference_attention(attn, words, entities, attention_mask, labels):
    """Eq. 1 pair by pair: a_ij = softmax_j((q_i.k_j + q_i.r_ij)/sqrt(d)), y_i = sum_j a_ij (v_j [+ r^V_ij])."""
    H, d = attn.num_heads, attn.head_size
    x = torch.cat([words, entities], dim=1)
    B, P, _ = x.shape
    L = words.size(1)
    out = torch.zeros(B, P, H * d)
    for b in range(B):
        keys = attn.key(x[b]).view(P, H, d)
        values = attn.value(x[b]).view(P, H, d)
        for i in range(P):
            for h in range(H):
                scores = []
                for j in range(P):
                    matrix = {
                        (True, True): attn.w2w_query,
                        (True, False): attn.w2e_query,
                        (False, True): attn.e2w_query,
                        (False, False): attn.e2e_query,
                    }[(i < L, j < L)]
                    q = matrix(x[b, i]).view(H, d)[h]
                    score = q @ keys[j, h]
                    if attn.label_embeddings is not None:
                        score = score + q @ attn.label_embeddings.weight[labels[b, i, j]]
                    score = score / math.sqrt(d)
                    scores.append(score if attention_mask[b, j] else torch.tensor(torch.finfo(torch.float).min))
                a = torch.softmax(torch.stack(scores), dim=0)
                y = sum(a[j] * values[j, h] for j in range(P))
                if attn.value_label_embeddings is not None:
                    y = y + sum(a[j] * attn.value_label_embeddings.weight[labels[b, i, j]] for j in range(P))
                out[b, i, h * d : (h + 1) * d] = y
    return out


@pytest.mark.parametrize("value_labels", [False, True])
@pytest.mark.parametrize("ablation", sorted(ABLATION_PRESETS))
def test_attention_equals_plain_eq1(ablation, value_labels):
    torch.manual_seed(0)
    config = tiny_config(
        ablation=ablation, use_value_labels=value_labels, num_attention_heads=2, hidden_size=8, entity_emb_size=8
    )
    model = GesaModel(config).eval()
    attn = model.encoder.layer[0].attention.self
    if attn.label_embeddings is not None:
        # trained tables are far from zero; make the label term matter
        torch.nn.init.normal_(attn.label_embeddings.weight, std=1.0)
        attn.label_embeddings.weight.data[0] = 0
    if attn.value_label_embeddings is not None:
        torch.nn.init.normal_(attn.value_label_embeddings.weight, std=1.0)
        attn.value_label_embeddings.weight.data[0] = 0
    batch = record_like_batch()
    words = torch.randn(2, 14, 8)
    entities = torch.randn(2, 5, 8)
    mask = torch.cat([batch["attention_mask"], batch["entity_attention_mask"]], dim=1)
    labels = model_labels(batch, config) if config.use_relative_labels else None
    allowed = mask.bool()[:, None, None, :]
    with torch.no_grad():
        expected = reference_attention(attn, words, entities, mask, labels)
        for implementation in ("sdpa", "eager"):
            config._attn_implementation = implementation
            actual, _ = attn(words, entities, AttentionStructure(allowed, labels, 14))
            torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# 5. Padding invariance
# ---------------------------------------------------------------------------------------------


def test_example_alone_equals_example_in_padded_batch():
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(tiny_config()).eval()
    batch = record_like_batch()
    with torch.no_grad():
        together = model(**batch, output_hidden_states=True)
        alone_inputs = {
            k: v[1:2, :11]
            if v.dim() >= 2 and k in ("input_ids", "attention_mask", "global_attention_mask")
            else v[1:2]
            for k, v in batch.items()
        }
        alone_inputs = {
            k: (v[:, :3] if k.startswith("entity") or k == "placeholder_entity_mask" else v)
            for k, v in alone_inputs.items()
        }
        alone = model(**alone_inputs, output_hidden_states=True)
    torch.testing.assert_close(alone.logits[0], together.logits[1, :3], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(alone.hidden_states[-1][0], together.hidden_states[-1][1, :11], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        alone.entity_hidden_states[-1][0], together.entity_hidden_states[-1][1, :3], atol=1e-5, rtol=1e-5
    )
    assert (together.logits[1, 3:] == torch.finfo(torch.float).min).all()  # padded candidates never win
    assert (together.logits[:, 0] == torch.finfo(torch.float).min).all()  # nor the placeholder


# ---------------------------------------------------------------------------------------------
# 6. Save / load with trust_remote_code, gradients, checkpointing, precision
# ---------------------------------------------------------------------------------------------


def test_save_and_load_with_remote_code_in_fresh_process(tmp_path):
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(tiny_config(ablation="no_match_edges")).eval()
    batch = record_like_batch()
    with torch.no_grad():
        expected = model(**batch).logits
    out_dir = tmp_path / "ckpt"
    model.save_pretrained(out_dir)
    saved = json.loads((out_dir / "config.json").read_text())
    assert saved["auto_map"]["AutoModelForQuestionAnswering"] == "modeling_gesa.GesaForEntitySpanQA"
    assert saved["auto_map"]["AutoModel"] == "modeling_gesa.GesaModel"
    assert (out_dir / "modeling_gesa.py").exists() and (out_dir / "configuration_gesa.py").exists()
    also = (
        "config = AutoConfig.from_pretrained(out, trust_remote_code=True)\n"
        "assert type(config).__name__ == 'GesaConfig' and config.label_switches['match_edges'] is False\n"
    )
    logits = reload_in_fresh_process(
        out_dir, batch, tmp_path, "AutoModelForQuestionAnswering", "GesaForEntitySpanQA", "GesaModel", also
    )
    torch.testing.assert_close(logits, expected, atol=1e-6, rtol=0)


def test_gradients_reach_every_parameter():
    torch.manual_seed(0)
    model = GesaModel(tiny_config(use_value_labels=True))
    batch = record_like_batch()
    out = model(**batch)
    (
        out.last_hidden_state.pow(2).mean() + out.entity_last_hidden_state.pow(2).mean() + out.pooler_output.sum()
    ).backward()
    no_grad = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert no_grad == [], no_grad

    head = GesaForEntitySpanQA(tiny_config(classifier_dropout=0.0))
    labels = torch.zeros(2, 5)
    labels[:, 1] = 1
    head(**batch, labels=labels).loss.backward()
    no_grad = {n for n, p in head.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0}
    # the head reads entities only: the last layer's word-row queries cannot matter
    last = f"gesa.encoder.layer.{head.config.num_hidden_layers - 1}.attention.self"
    assert no_grad == {f"{last}.{q}.{w}" for q in ("w2w_query", "w2e_query") for w in ("weight", "bias")}


def test_gradient_checkpointing_matches_plain_backward():
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(tiny_config())
    batch = record_like_batch()
    labels = torch.zeros(2, 5)
    labels[:, 2] = 1
    model.train()
    model(**batch, labels=labels).loss.backward()
    plain = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model(**batch, labels=labels).loss.backward()
    for name, param in model.named_parameters():
        torch.testing.assert_close(param.grad, plain[name], atol=1e-6, rtol=1e-5, msg=name)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_has_no_nan_with_fully_padded_rows(dtype):
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(tiny_config(attention_window=1)).to(dtype).eval()
    batch = record_like_batch()
    # an example whose tail words see only padding inside their window
    batch["attention_mask"][1, 6:] = 0
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    assert not torch.isnan(out.hidden_states[-1]).any()
    assert not torch.isnan(out.logits).any()


def test_attention_window_masks_far_local_pairs_only():
    torch.manual_seed(0)
    model = GesaModel(tiny_config(attention_window=2)).eval()
    batch = {k: v for k, v in record_like_batch().items()}
    with torch.no_grad():
        probs = model(**batch, output_attentions=True).attentions[0][0, 0]
    assert probs[8, 12] == 0 and probs[12, 8] == 0  # local words 4 apart
    assert probs[8, 10] > 0 and probs[8, 0] > 0 and probs[0, 12] > 0 and probs[12, 2] > 0  # near / global
    assert probs[8, 14 + 4] > 0  # entities are not windowed


def test_torch_compile_runs():
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(tiny_config()).eval()
    batch = record_like_batch()
    with torch.no_grad():
        expected = model(**batch).logits
        compiled = torch.compile(model, backend="aot_eager", fullgraph=False)
        torch.testing.assert_close(compiled(**batch).logits, expected, atol=1e-5, rtol=1e-5)


def test_structure_inputs_are_optional():
    torch.manual_seed(0)
    model = GesaModel(tiny_config()).eval()
    batch = record_like_batch()
    with torch.no_grad():
        words_only = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        no_structure = model(
            **{
                k: batch[k]
                for k in ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask", "entity_position_ids")
            }
        )
    assert words_only.entity_last_hidden_state is None
    assert no_structure.entity_last_hidden_state.shape == (2, 5, 32)


# ---------------------------------------------------------------------------------------------
# 7. Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("attention_mask", torch.ones(2, 13, dtype=torch.long), "attention_mask has shape"),
        ("global_attention_mask", torch.full((2, 14), 3), "global_attention_mask must hold"),
        ("entity_attention_mask", torch.ones(2, 4, dtype=torch.long), "entity_attention_mask has shape"),
        ("entity_position_ids", torch.full((2, 5, 3), 14), "entity_position_ids must be word positions"),
        ("entity_position_ids", torch.full((2, 5), 1), "entity_position_ids has shape"),
        ("entity_string_ids", torch.zeros(1, 5, dtype=torch.long), "entity_string_ids has shape"),
        ("entity_ids", torch.full((2, 5), 9), "entity_ids must be in"),
        ("input_ids", torch.full((2, 14), 64), "input_ids must be in"),
    ],
)
def test_bad_inputs_raise_clear_errors(field, value, message):
    model = GesaForEntitySpanQA(tiny_config())
    batch = record_like_batch()
    batch[field] = value
    with pytest.raises(ValueError, match=message):
        model(**batch)


def test_structure_input_without_entities_is_refused():
    model = GesaModel(tiny_config())
    batch = record_like_batch()
    with pytest.raises(ValueError, match="entity_string_ids was given without entity_ids"):
        model(input_ids=batch["input_ids"], entity_string_ids=batch["entity_string_ids"])


BASE_CONFIG_FIELDS = {f.name for f in dataclasses.fields(PreTrainedConfig)}

# every field GesaConfig adds to PreTrainedConfig, with a value it must refuse and what the error says
BAD_GESA_FIELDS = [
    ("vocab_size", 0, "positive integer"),
    ("entity_vocab_size", -1, "positive integer"),
    ("hidden_size", 32.0, "expected int"),
    ("entity_emb_size", "16", "expected int"),
    ("num_hidden_layers", 0, "positive integer"),
    ("num_attention_heads", True, "expected int"),
    ("intermediate_size", 0, "positive integer"),
    ("hidden_act", "nope", "'nope' is not an activation"),
    ("hidden_dropout_prob", "0.1", "doesn't match any type"),
    ("attention_probs_dropout_prob", 1.0, r"dropout probability in \[0, 1\)"),
    ("max_position_embeddings", 0, "positive integer"),
    ("type_vocab_size", 0, "positive integer"),
    ("initializer_range", float("nan"), "finite number >= 0"),
    ("layer_norm_eps", 0.0, "finite number > 0"),
    ("use_entity_aware_attention", "yes", "expected bool"),
    ("classifier_dropout", 2.0, r"dropout probability in \[0, 1\)"),
    ("use_absolute_position_embeddings", 1, "doesn't match any type"),
    ("use_relative_labels", "no", "doesn't match any type"),
    ("max_relative_position", 0, "positive integer"),
    ("label_switches", {"sent_edge": False}, r"label_switches\['sent_edge'\] is not a label switch"),
    ("use_value_labels", None, "expected bool"),
    ("attention_window", True, "doesn't match any type"),
    ("use_entity_position_embeddings", "yes", "doesn't match any type"),
    ("entity_graph", "thesis", r"must be one of \('merged', 'context'\)"),
    ("choice_head", "linear", r"must be one of \('hde', 'query_candidate'\)"),
    ("ablation", "no_graph", "ablation='no_graph' is unknown"),
    ("pad_token_id", "1", "doesn't match any type"),
    ("bos_token_id", 0.5, "doesn't match any type"),
    ("eos_token_id", "2", "doesn't match any type"),
    (
        "pretraining_objectives",
        {"objectives": ["bert"]},
        r"pretraining_objectives\['objectives'\] must be a non-empty",
    ),
]


# what each variant's config needs on top of TINY (two layers)
TINY_VARIANT_FIELDS = {"XhConfig": {"xh_num_hop_layers": 1}, "LukeGraphConfig": {"ablation": "luke"}}


def every_config_class():
    from gesa import ErnieConfig, KarConfig, LukeGraphConfig, XhConfig

    return [GesaConfig, KarConfig, ErnieConfig, XhConfig, LukeGraphConfig]


@pytest.mark.parametrize("config_class", every_config_class(), ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    "field, value, message",
    [
        ("hidden_size", 33, "multiple of num_attention_heads"),  # a combination check, as after __init__
        ("num_hidden_layers", -3, "positive integer"),
        ("ablation", "no_mention_label", "ablation"),
    ],
)
def test_config_assignment_is_validated_like_construction(tmp_path, config_class, field, value, message):
    """Every config class: an assignment construction would refuse is refused, the old value kept, and the config
    still saves and reloads."""
    config = config_class(**TINY, **TINY_VARIANT_FIELDS.get(config_class.__name__, {}))
    before = getattr(config, field)
    with config_error(field if field != "ablation" else "", message):
        setattr(config, field, value)
    assert getattr(config, field) == before
    config.save_pretrained(tmp_path)
    assert getattr(config_class.from_pretrained(tmp_path), field) == before


@pytest.mark.parametrize("config_class", every_config_class()[:4], ids=lambda c: c.__name__)
def test_assigning_no_ablation_keeps_a_config_that_reloads(tmp_path, config_class):
    """`ablation = None` on a preset config keeps the preset's fields as a custom combination that saves and loads."""
    config = config_class(**TINY, **{**TINY_VARIANT_FIELDS.get(config_class.__name__, {}), "ablation": "luke"})
    config.ablation = None
    config.save_pretrained(tmp_path)
    reloaded = config_class.from_pretrained(tmp_path)
    assert reloaded.ablation is None
    assert reloaded.use_absolute_position_embeddings and not reloaded.use_relative_labels


def test_every_gesa_config_field_is_checked():
    own = {f.name for f in dataclasses.fields(GesaConfig)} - BASE_CONFIG_FIELDS
    assert own == {name for name, _, _ in BAD_GESA_FIELDS}


@pytest.mark.parametrize("field, value, message", BAD_GESA_FIELDS, ids=[f[0] for f in BAD_GESA_FIELDS])
def test_bad_config_field_raises_an_error_naming_it(field, value, message):
    with config_error(field, message):
        tiny_config(**{field: value})
    config = tiny_config()
    with config_error(field, message):  # assignment is checked too
        setattr(config, field, value)


@pytest.mark.parametrize(
    "kwargs, field, message",
    [
        ({"label_switches": {"sent_edges": "no"}}, "label_switches", "Invalid key or value"),
        ({"label_switches": ["e2e"]}, "label_switches", "expected a dict"),
        ({"hidden_size": 30}, "hidden_size=30", "must be a multiple of num_attention_heads"),
        ({"attention_window": -1}, "attention_window", "non-negative integer"),
        ({"layer_norm_eps": -1e-5}, "layer_norm_eps", "finite number > 0"),
        ({"hidden_dropout_prob": -0.1}, "hidden_dropout_prob", "dropout probability"),
        ({"ablation": "luke", "max_position_embeddings": 2}, "max_position_embeddings", "must exceed pad_token_id"),
        # an ablation preset contradicted by an explicit field
        ({"ablation": "luke", "use_relative_labels": True}, "ablation='luke' sets use_relative_labels=False", ""),
        ({"ablation": "luke", "use_absolute_position_embeddings": False}, "use_absolute_position_embeddings", ""),
        ({"ablation": "e2e_local", "label_switches": {"e2e_graph": True}}, r"label_switches\['e2e_graph'\]", ""),
    ],
)
def test_bad_config_combinations_raise_clear_errors(kwargs, field, message):
    with config_error(field, message):
        tiny_config(**kwargs)


def test_ablation_preset_and_agreeing_fields_round_trip(tmp_path):
    # what the preset itself sets may be repeated (a saved config holds every resolved field)
    config = tiny_config(ablation="luke", use_relative_labels=False, label_switches={"e2e": True})
    assert config.use_absolute_position_embeddings and not config.use_relative_labels
    config.save_pretrained(tmp_path)
    reloaded = GesaConfig.from_pretrained(tmp_path)
    assert reloaded.ablation == "luke" and reloaded.label_switches == config.label_switches
    assert tiny_config(ablation="e2e_local").label_switches["e2e_graph"] is False
    assert tiny_config().use_relative_labels is True and tiny_config().use_absolute_position_embeddings is False
    # a preset field changed after construction would no longer match the named row: the assignment is refused
    with config_error("ablation='luke' no longer holds"):
        config.use_relative_labels = True
    assert config.use_relative_labels is False


def test_unexpected_forward_inputs_are_refused():
    model = GesaModel(tiny_config())
    with pytest.raises(ValueError, match="unexpected inputs"):
        model(input_ids=torch.ones(1, 3, dtype=torch.long), entity_graph=torch.ones(1))


# ---------------------------------------------------------------------------------------------
# 8. Heads: GesaModel's inputs, 5.x outputs, generic QA consumers
# ---------------------------------------------------------------------------------------------


def qa_labels() -> torch.Tensor:
    labels = torch.zeros(2, 5)
    labels[:, 1] = 1
    return labels


def test_head_takes_inputs_embeds_and_returns_tuples_on_request():
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(tiny_config()).eval()
    batch = record_like_batch()
    with torch.no_grad():
        expected = model(**batch, labels=qa_labels())
        embeds = model.get_input_embeddings()(batch["input_ids"])
        from_embeds = model(**{**batch, "input_ids": None}, inputs_embeds=embeds, labels=qa_labels())
        as_tuple = model(**batch, labels=qa_labels(), return_dict=False)
        states = model(**batch, output_hidden_states=True)  # TransformersKwargs reach the base model
    torch.testing.assert_close(from_embeds.logits, expected.logits)
    torch.testing.assert_close(from_embeds.loss, expected.loss)
    assert isinstance(as_tuple, tuple) and torch.equal(as_tuple[1], expected.logits)
    assert len(states.entity_hidden_states) == 3 and states.hidden_states[0].shape == (2, 14, 32)


def test_head_refuses_span_positions_with_what_it_takes():
    model = GesaForEntitySpanQA(tiny_config())
    batch = record_like_batch()
    message = r"scores entity candidates.*labels \(batch, entities\).*pipeline\(model=<checkpoint>, trust_remote_code"
    with pytest.raises(ValueError, match=message):
        model(**batch, start_positions=torch.zeros(2, dtype=torch.long), end_positions=torch.ones(2, dtype=torch.long))


def test_position_ids_without_absolute_positions_are_refused_and_used_with_them():
    batch = record_like_batch()
    positions = torch.arange(2, 16).expand(2, 14)
    with pytest.raises(ValueError, match="position_ids are read only with use_absolute_position_embeddings=True"):
        GesaModel(tiny_config())(input_ids=batch["input_ids"], position_ids=positions)
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(tiny_config(ablation="luke")).eval()
    with torch.no_grad():
        default = model(**batch).logits
        same = model(**batch, position_ids=torch.arange(2, 16).expand(2, 14)).logits  # what the default computes
        shifted = model(**batch, position_ids=torch.arange(3, 17).expand(2, 14)).logits
    real = batch["attention_mask"][:, :1].bool()
    torch.testing.assert_close(same[0], default[0])  # row 0 has no padding: the same positions
    assert not torch.allclose(shifted[real[:, 0]], default[real[:, 0]])


# ---------------------------------------------------------------------------------------------
# 9. Bad model input: refused early, naming the field, or handled correctly
# ---------------------------------------------------------------------------------------------


def test_zero_entities_head_refuses_and_model_encodes_the_words_only():
    batch = record_like_batch()
    no_entities = {"entity_ids": torch.zeros(2, 0, dtype=torch.long)}
    with pytest.raises(ValueError, match=r"entity_ids has shape \(2, 0\): no entity, so nothing to score"):
        GesaForEntitySpanQA(tiny_config())(input_ids=batch["input_ids"], **no_entities)
    torch.manual_seed(0)
    model = GesaModel(tiny_config()).eval()
    words = {k: batch[k] for k in ("input_ids", "attention_mask", "global_attention_mask")}
    with torch.no_grad():
        expected = model(**words)
        actual = model(**words, **no_entities, entity_position_ids=torch.zeros(2, 0, 3, dtype=torch.long))
    assert actual.entity_last_hidden_state.shape == (2, 0, 32)
    torch.testing.assert_close(actual.last_hidden_state, expected.last_hidden_state)


def test_absolute_positions_beyond_the_table_are_refused_naming_the_field():
    config = tiny_config(ablation="luke", max_position_embeddings=12)  # 12 - pad_token_id(1) - 1 = 10 words
    batch = record_like_batch()
    message = r"input_ids has 14 words.*max_position_embeddings - pad_token_id - 1 = 10 words.*use_absolute_position"
    with pytest.raises(ValueError, match=message):
        GesaForEntitySpanQA(config)(**batch)
    short = GesaModel(config)(input_ids=batch["input_ids"][:, :10])
    assert short.last_hidden_state.shape == (2, 10, 32)


@pytest.mark.parametrize(
    "labels, message",
    [
        (torch.tensor([[0, 2.0, 0, 0, 0], [0, 1, 0, 0, 0]]), r"labels\[0, 1\] = 2.0"),
        (torch.tensor([[0, 1, 0, 0, 0], [0, 1, -1, 0, 0]]), r"labels\[1, 2\] = -1"),
        (torch.tensor([[0, 1, float("nan"), 0, 0], [0, 1, 0, 0, 0]]), r"labels\[0, 2\] = nan"),
        (torch.tensor([[0, 1, 0, 0, float("inf")], [0, 1, 0, 0, 0]]), r"labels\[0, 4\] = inf"),
        (torch.tensor([[0.5, 1, 0, 0, 0], [0, 1, 0, 0, 0]]), r"labels\[0, 0\] = 0.5"),
        (torch.zeros(2, 4), r"labels has shape \(2, 4\); expected \(batch, entities\) = \(2, 5\)"),
    ],
)
def test_labels_are_validated(labels, message):
    with pytest.raises(ValueError, match=message):
        GesaForEntitySpanQA(tiny_config())(**record_like_batch(), labels=labels)


@pytest.mark.parametrize(
    "placeholders, row, count",
    [
        ([[0, 0, 0, 0, 0], [1, 0, 0, 0, 0]], 0, 0),  # none: entity 0 would become a candidate
        ([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]], 1, 2),  # two: one would be ignored
        ([[1, 0, 0, 0, 0], [0, 0, 0, 1, 0]], 1, 0),  # only on a padded entity
    ],
)
def test_one_placeholder_per_example(placeholders, row, count):
    batch = record_like_batch()
    batch["placeholder_entity_mask"] = torch.tensor(placeholders)
    message = f"placeholder_entity_mask must mark exactly one real entity per example.*row {row} marks {count}"
    with pytest.raises(ValueError, match=message):
        GesaForEntitySpanQA(tiny_config())(**batch)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("input_ids", torch.ones(2, 14), "input_ids must hold integer ids or positions .* got dtype torch.float32"),
        ("entity_ids", torch.full((2, 5), 2.0), "entity_ids must hold integer ids"),
        ("entity_position_ids", torch.zeros(2, 5, 3, dtype=torch.float64), "entity_position_ids must hold integer"),
        ("input_ids", torch.ones(14, dtype=torch.long), r"input_ids has shape \(14,\).*add the batch dimension"),
        ("entity_ids", torch.ones(5, dtype=torch.long), r"entity_ids has shape \(5,\).*add the batch dimension"),
        ("attention_mask", torch.full((2, 14), 2), r"attention_mask must hold 0 or 1; got values in \[2, 2\]"),
    ],
)
def test_dtypes_and_ranks_are_checked_before_use(field, value, message):
    batch = record_like_batch()
    batch[field] = value
    for model in (GesaModel(tiny_config()), GesaForEntitySpanQA(tiny_config())):
        with pytest.raises(ValueError, match=message):
            model(**batch)


def test_input_value_checks_read_the_device_once(monkeypatch):
    """Every value range (the base model's and the head's) comes back in one host sync."""
    model = GesaForEntitySpanQA(tiny_config())
    reads = []
    for name in ("tolist", "item", "__bool__", "__int__", "__float__"):
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(
            torch.Tensor, name, lambda self, *a, _f=original, _n=name: reads.append(_n) or _f(self, *a)
        )
    model.gesa._check_inputs(**record_like_batch(), labels=qa_labels(), scored=True)
    assert reads == ["tolist"]


def test_input_checks_are_skipped_while_compiling(monkeypatch):
    model = GesaModel(tiny_config())
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    model._check_inputs(input_ids=torch.ones(14), entity_ids=torch.ones(3))  # would raise twice when eager


def test_from_luke_pretrained_refuses_a_gesa_checkpoint_without_asking_to_run_its_code(tmp_path, monkeypatch):
    GesaForEntitySpanQA(tiny_config()).save_pretrained(tmp_path)  # its config.json names its code (auto_map)
    monkeypatch.setattr("builtins.input", lambda *a: pytest.fail("asked whether to run the checkpoint's code"))
    with pytest.raises(
        ValueError, match=r"is a 'gesa' checkpoint, not LUKE.*Load gesa checkpoints with from_pretrained"
    ):
        GesaForEntitySpanQA.from_luke_pretrained(tmp_path)


def test_from_pretrained_refuses_a_luke_checkpoint(tiny_luke_dir):
    for model_class in (GesaForEntitySpanQA, GesaModel):
        with pytest.raises(
            ValueError, match=r"is a LUKE checkpoint.*GesaForEntitySpanQA.from_luke_pretrained\(path\)"
        ):
            model_class.from_pretrained(tiny_luke_dir)


def test_luke_ablation_conversion_keeps_luke_entity_aware_queries_and_equals_luke(tmp_path):
    from tiny_luke import build_tiny_luke

    path = build_tiny_luke(tmp_path / "luke", tie_entity_queries=False)
    luke = LukeModel.from_pretrained(path).eval()
    model = GesaModel.from_luke_pretrained(path, ablation="luke").eval()
    attn, luke_attn = model.encoder.layer[0].attention.self, luke.encoder.layer[0].attention.self
    for name in ("w2e_query", "e2w_query", "e2e_query"):
        assert torch.equal(getattr(attn, name).weight, getattr(luke_attn, name).weight), name
    batch = record_like_batch(vocab_size=1000)
    inputs = {
        k: batch[k]
        for k in ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask", "entity_position_ids")
    }
    with torch.no_grad():
        expected, actual = luke(**inputs), model(**inputs)
    torch.testing.assert_close(actual.entity_last_hidden_state, expected.entity_last_hidden_state, atol=1e-5, rtol=0)
    # the paper's conversion (any other preset) still starts the four queries from the word query (the entity-aware
    # copies brought up to unit gain: GesaPreTrainedModel.entity_query_gain)
    paper = GesaModel.from_luke_pretrained(path)
    copied = paper.encoder.layer[0].attention.self.e2e_query.weight
    factor = (copied.norm() / luke_attn.query.weight.norm()).item()
    assert factor >= 1 and torch.allclose(copied, luke_attn.query.weight * factor, rtol=1e-5, atol=0)

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
"""WikiHop: the reader's three shapes and its errors, the one-sequence features (mentions, graph units, cuts), the
multiple-choice head against a plain softmax written from its equation, every ablation preset, and the reload."""

from __future__ import annotations

import json
import logging

import datasets
import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForMultipleChoice, LukeTokenizer

from gesa.candidates_gesa import EDGE_MATCH, EDGE_PLC, EDGE_SENT, build_entity_graph
from gesa.configuration_gesa import ABLATION_PRESETS, GesaConfig
from gesa.configuration_luke_graph import LukeGraphConfig
from gesa.inputs_gesa import InputError
from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice, extend_position_embeddings
from gesa.modeling_luke_graph_multiple_choice import LukeGraphForEntityMultipleChoice
from gesa.processing_wikihop import WikihopProcessor, find_mentions
from gesa.records_wikihop import load_wikihop_file, to_wikihop_examples
from gesa.training.wikihop import make_wikihop_sample, write_wikihop_file

RECORD = {
    "id": "WH_test_0",
    "query": "country velmor",
    "supports": [
        "Velmor is a small town in Abo Province, near Kastrel Province.",
        "Abo Province is a region of France. Abo Province is old.",
        "Kastrel Province is a region of Spain.",
    ],
    "candidates": ["france", "spain", "norway"],
    "answer": "france",
}


@pytest.fixture(scope="module")
def tokenizer(tiny_luke_dir):
    return LukeTokenizer.from_pretrained(tiny_luke_dir)


def decode(tokenizer, ids):
    return tokenizer.decode([i for i in ids], skip_special_tokens=True).strip().lower()


# ----------------------------------------------------------------------------------------------- reader


def test_reader_reads_the_json_list_json_lines_and_hub_rows_alike(tmp_path):
    records = make_wikihop_sample(3, seed=5)
    from_list = load_wikihop_file(write_wikihop_file(tmp_path / "dev.json", records))
    from_lines = load_wikihop_file(write_wikihop_file(tmp_path / "dev.jsonl", records, json_lines=True))
    hub = datasets.Dataset.from_list([{key: r[key] for key in ("id", "query", "supports", "candidates", "answer")}
                                      for r in records])  # fmt: skip
    from_hub = to_wikihop_examples(hub, where="qangaroo")
    for examples in (from_lines, from_hub):
        assert [(e.example_id, e.query, e.supports, e.candidates, e.answer) for e in examples] == [
            (e.example_id, e.query, e.supports, e.candidates, e.answer) for e in from_list
        ]
    assert from_list[1].source.endswith("dev.json, item 2") and from_lines[1].source.endswith("dev.jsonl, line 2")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"answer": "germany"}, "'answer' 'germany' is not among its 3 candidates: add it to 'candidates'"),
        ({"answer": "France"}, "differs from candidate 'france' in case only"),
        ({"supports": []}, "empty 'supports'"),
        ({"supports": ["  ", ""]}, "empty 'supports'"),
        ({"candidates": ["france", 7, "spain"]}, "'candidates' item 1 is int 7, not a string"),
        ({"id": None}, "'id' must be a non-empty string"),
        ({"query": 3}, "'query' must be a non-empty string"),
    ],
)
def test_reader_names_file_item_id_and_fix_of_a_bad_record(tmp_path, change, expected):
    bad = {**RECORD, "id": "WH_bad", **change}
    path = write_wikihop_file(tmp_path / "train.json", [RECORD, bad])
    with pytest.raises(InputError) as error:
        load_wikihop_file(path, where=f"--train_file {path}")
    message = str(error.value)
    assert f"--train_file {path}, item 2" in message and expected in message
    if change.get("id", "x") is not None:
        assert "'WH_bad'" in message


def test_reader_refuses_duplicate_ids_naming_both_places(tmp_path):
    path = write_wikihop_file(tmp_path / "dev.jsonl", [RECORD, RECORD], json_lines=True)
    with pytest.raises(InputError, match=r"dev.jsonl, line 2: WikiHop record 'WH_test_0': duplicate id: .*line 1"):
        load_wikihop_file(path)


def test_reader_refuses_a_file_that_is_not_wikihop(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"data": 3}))
    with pytest.raises(InputError, match=r"x.json, line 1: not a WikiHop record: it has keys \[.data.\].*QAngaroo"):
        load_wikihop_file(path)


# ----------------------------------------------------------------------------------------------- features


def test_features_hold_query_candidates_and_every_mention_with_graph_units(tokenizer):
    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32)
    features = processor(RECORD)
    ids = features["input_ids"][0]
    globals_ = features["global_attention_mask"][0]
    positions = features["entity_position_ids"][0]
    strings, units = features["entity_string_ids"][0], features["entity_sentence_ids"][0]
    candidates = features["candidate_entity_mask"][0]
    texts = features["candidate_texts"][0]
    # <s> and the query words are global, the rest local; the query entity sits on the subject
    assert (
        globals_[0] == 1 and set(globals_[1 : globals_.index(0)]) == {2} and set(globals_[globals_.index(0) :]) == {0}
    )
    assert decode(tokenizer, [ids[p] for p in positions[0] if p >= 0]) == "velmor"
    # one candidate entity per candidate, in order, on its words in the candidate list (unit 0)
    assert candidates == [0, 1, 1, 1] + [0] * (len(candidates) - 4)
    assert texts[1:4] == RECORD["candidates"] and units[1:4] == [0, 0, 0]
    assert features["labels"] == [1]
    for entity in range(1, 4):
        assert decode(tokenizer, [ids[p] for p in positions[entity] if p >= 0]) == texts[entity]
    # every mention: its words decode to its string; its unit is its support (1-based)
    mentions = {(decode(tokenizer, [ids[p] for p in positions[e] if p >= 0]), units[e]) for e in range(4, len(ids))
                if e < len(positions)}  # fmt: skip
    assert mentions == {("velmor", 1), ("france", 2), ("spain", 3)}
    graph = build_entity_graph(units, strings, features["placeholder_entity_mask"][0])
    france_candidate, france_mention = 1, [e for e in range(4, len(units)) if strings[e] == strings[1]][0]
    spain_candidate, spain_mention = 2, [e for e in range(4, len(units)) if strings[e] == strings[2]][0]
    subject_mention = [e for e in range(4, len(units)) if strings[e] == strings[0]][0]
    assert graph[france_candidate, france_mention] == EDGE_MATCH  # candidate node <-> its mention
    assert graph[france_candidate, spain_candidate] == EDGE_SENT  # candidates are connected to each other
    assert graph[france_mention, spain_mention] not in (EDGE_SENT, EDGE_MATCH)  # other documents, other strings
    assert all(graph[0, e] == EDGE_PLC for e in range(1, len(units)))  # query subject <-> every node
    assert strings[subject_mention] == strings[0]


def test_mentions_match_whole_words_case_insensitively_longest_first():
    text = "New York City lies in New York; Yorkshire is elsewhere. NEW YORK again."
    found = [(text[a:b], i) for a, b, i in find_mentions(text, ["new york", "new york city", "york"])]
    assert found == [("New York City", 1), ("New York", 0), ("NEW YORK", 0)]


def test_a_candidate_without_mention_keeps_its_entity(tokenizer):
    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32)
    features = processor(RECORD)
    norway = features["candidate_texts"][0].index("norway")
    strings = features["entity_string_ids"][0]
    assert features["candidate_entity_mask"][0][norway] == 1
    assert strings.count(strings[norway]) == 1  # no mention entity shares its string


def test_a_long_record_keeps_mentions_beyond_word_512(tokenizer):
    record = make_wikihop_sample(1, seed=7, filler_sentences=60)[0]
    processor = WikihopProcessor(tokenizer, max_seq_length=8192)
    features = processor(record)
    ids, positions = features["input_ids"][0], features["entity_position_ids"][0]
    texts, strings = features["candidate_texts"][0], features["entity_string_ids"][0]
    assert len(record["query"].split()) + sum(len(s.split()) for s in record["supports"]) > 2000
    assert processor.stats["records_cut"] == 0
    answer = texts.index(record["answer"])
    far = [row for e, row in enumerate(positions) if strings[e] == strings[answer] and e != answer and min(
        p for p in row if p >= 0) > 512]  # fmt: skip
    assert far, "the answer's last mention lies beyond word 512 and must be an entity"
    for row in far:
        assert decode(tokenizer, [ids[p] for p in row if p >= 0]) == record["answer"]


def test_cut_supports_are_logged_with_records_and_words(tokenizer, caplog):
    records = make_wikihop_sample(2, seed=3, filler_sentences=20)
    processor = WikihopProcessor(tokenizer, max_seq_length=300, max_query_length=32)
    with caplog.at_level(logging.WARNING):
        features = processor(records)
    assert all(len(ids) <= 300 for ids in features["input_ids"])
    assert processor.stats["records_cut"] == 2 and processor.stats["words_cut"] > 0
    assert "supports of 2 of 2 records cut" in caplog.text
    assert f"{processor.stats['words_cut']} support words dropped" in caplog.text


def test_records_without_answer_get_no_label(tokenizer):
    processor = WikihopProcessor(tokenizer, max_seq_length=512, max_query_length=32)
    features = processor([RECORD, {**RECORD, "id": "unlabelled", "answer": None}])
    assert features["labels"] == [1, -100]
    assert processor(dict(RECORD, answer=None)).get("labels") is None


# ----------------------------------------------------------------------------------------------- head


def tiny_config(config_class=GesaConfig, **overrides):
    kwargs = dict(vocab_size=2100, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=37, max_position_embeddings=1100, max_relative_position=8,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attention_window=16)  # fmt: skip
    kwargs.update(overrides)
    return config_class(**kwargs)


def batch_of(tokenizer, records, max_seq_length=512):
    processor = WikihopProcessor(tokenizer, max_seq_length=max_seq_length, max_query_length=32)
    return processor(records, return_tensors="pt")


def test_query_candidate_head_is_softmax_cross_entropy_over_candidates_with_padding_masked(tokenizer):
    torch.manual_seed(0)
    model = GesaForEntityMultipleChoice(tiny_config(choice_head="query_candidate")).eval()
    records = [RECORD, {**make_wikihop_sample(1, seed=9, num_candidates=6)[0]}]
    batch = batch_of(tokenizer, records)
    output = model(**batch, output_hidden_states=True)
    states = output.entity_hidden_states[-1]
    loss = 0.0
    for row in range(2):
        candidates = batch["candidate_entity_mask"][row].nonzero().flatten()
        pair = torch.cat([states[row, 0].expand(len(candidates), -1), states[row, candidates]], dim=-1)
        reference = model.classifier(pair).squeeze(-1)
        torch.testing.assert_close(output.logits[row, candidates], reference)
        others = torch.ones_like(batch["candidate_entity_mask"][row], dtype=torch.bool)
        others[candidates] = False
        assert (output.logits[row, others] == torch.finfo(output.logits.dtype).min).all()
        target = (candidates == batch["labels"][row]).nonzero().item()
        loss = loss + F.cross_entropy(reference[None], torch.tensor([target]))
    torch.testing.assert_close(output.loss, loss / 2)


def test_head_refuses_a_label_that_is_not_a_candidate(tokenizer):
    model = GesaForEntityMultipleChoice(tiny_config()).eval()
    batch = batch_of(tokenizer, [RECORD])
    batch["labels"] = torch.tensor([0])  # the query entity
    with pytest.raises(ValueError, match=r"labels\[0\] = 0 is not the index of a candidate entity"):
        model(**batch)


@pytest.mark.parametrize("ablation", sorted(ABLATION_PRESETS))
def test_every_ablation_preset_runs_on_wikihop_features(tokenizer, ablation):
    torch.manual_seed(0)
    model = GesaForEntityMultipleChoice(tiny_config(ablation=ablation))
    batch = batch_of(tokenizer, [RECORD])
    output = model(**batch)
    output.loss.backward()
    assert torch.isfinite(output.loss)
    assert output.logits[0, batch["candidate_entity_mask"][0].bool()].isfinite().all()


def test_absolute_positions_reach_long_inputs_by_copying_the_learned_rows():
    model = GesaForEntityMultipleChoice(
        tiny_config(ablation="luke", max_position_embeddings=40, attention_window=None)
    )
    old = model.gesa.embeddings.position_embeddings.weight.detach().clone()
    assert extend_position_embeddings(model, 100)
    new = model.gesa.embeddings.position_embeddings.weight
    assert new.shape[0] == 100 and model.config.max_position_embeddings == 100
    torch.testing.assert_close(new[:40], old)
    torch.testing.assert_close(new[40:78], old[2:40])  # rows past the padding ones repeat


@pytest.mark.parametrize(
    ("head", "config"),
    [(GesaForEntityMultipleChoice, {}), (LukeGraphForEntityMultipleChoice, {"config_class": LukeGraphConfig,
                                                                             "ablation": "luke"})],
)  # fmt: skip
def test_auto_class_reload_with_trust_remote_code(tokenizer, tmp_path, head, config):
    torch.manual_seed(0)
    model = head(tiny_config(**config)).eval()
    model.save_pretrained(tmp_path)
    assert (tmp_path / "pipeline_wikihop.py").is_file() and (tmp_path / "modeling_gesa_multiple_choice.py").is_file()
    reloaded = AutoModelForMultipleChoice.from_pretrained(tmp_path, trust_remote_code=True).eval()
    assert type(reloaded).__name__ == head.__name__
    batch = batch_of(tokenizer, [RECORD])
    torch.testing.assert_close(reloaded(**batch).logits, model(**batch).logits)


@pytest.mark.parametrize(("lengths", "budget"), [([10, 50, 200], 120), ([5, 5], 3), ([100, 100, 100], 299), ([7], 7)])
def test_fair_cut_keeps_every_document_up_to_the_largest_length_that_fits(lengths, budget):
    from gesa.processing_wikihop import fair_cut

    cut = fair_cut(lengths, budget)
    if sum(lengths) <= budget:
        assert cut is None
        return
    assert sum(min(length, cut) for length in lengths) <= budget < sum(min(length, cut + 1) for length in lengths)

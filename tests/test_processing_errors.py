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
"""Issue 14's processor-side defects, one test each: every bad input is one ``ValueError`` naming the example (or
handled correctly), and every query in gets exactly one result out."""

from __future__ import annotations

import copy
import json
import os

import numpy as np
import pytest
import torch
from test_processing import NER_MODEL, features_of, hub_rows, load_records
from transformers import AutoProcessor, AutoTokenizer

from gesa.processing_gesa import GesaDataCollator, GesaProcessor
from gesa.records_gesa import check_record_file, to_record_examples

pytestmark = pytest.mark.needs_shared


@pytest.fixture(scope="module")
def processor(tiny_luke_dir) -> GesaProcessor:
    return GesaProcessor(AutoTokenizer.from_pretrained(tiny_luke_dir), spacy_model=NER_MODEL, max_seq_length=256)


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return load_records()


def _row(records, index: int, example_id: str, **changes) -> dict:
    return {**hub_rows(records[index])[0], "id": example_id, **changes}


# ---------------------------------------------------------------- D3: a bare-string answer


def test_d3_bare_string_answer_is_an_error_not_characters(processor, records):
    text = records[64]["passage"]["text"]
    with pytest.raises(ValueError, match=r"'merkel'.*'answers' is the string 'Stephan Siegrist', not a list: wrap"):
        processor(text, "@placeholder climbed", entity_spans=[(306, 322)], answers="Stephan Siegrist",
                  example_ids=["merkel"])  # fmt: skip
    record = copy.deepcopy(records[64])
    record["qas"][0]["answers"] = "Stephan Siegrist"
    with pytest.raises(ValueError, match=r"'answers' is the string 'Stephan Siegrist'"):
        processor.encode_records([record])
    # a list of one string is one answer
    batch = processor(text, "@placeholder climbed", entity_spans=[(306, 322)], answers=["Stephan Siegrist"])
    assert batch["answers"] == [["Stephan Siegrist"]] and batch["labels"] == [[0.0, 1.0]]


# ---------------------------------------------------------------- D4: a training query without answers


@pytest.mark.parametrize("answers", [None, []], ids=["missing", "empty"])
def test_d4_query_without_answers_among_labelled_ones_is_refused(processor, records, answers):
    good = _row(records, 65, "good-1")
    bad = _row(records, 66, "no-answers", answers=answers)
    with pytest.raises(ValueError, match=r"'no-answers'.*has no gold answer, but other queries of this input"):
        processor.encode_records([good, bad])
    columns = processor.encode_records([good, bad], skip_invalid=True)
    assert set(columns["example_id"]) == {"good-1"} and "labels" in columns
    # unlabelled data as a whole (a test split): no labels at all, nothing refused
    unlabelled = processor.encode_records([_row(records, 65, "t1", answers=[]), _row(records, 66, "t2", answers=[])])
    assert "labels" not in unlabelled and set(unlabelled["example_id"]) == {"t1", "t2"}


# ---------------------------------------------------------------- D5 / D13: post-processing


def test_d5_post_processing_keeps_every_query_or_names_it():
    post = GesaProcessor.post_process_predictions
    texts = [["", "A", "C"], ["", "B", "D"]]
    # -inf scores still give an answer (the first text seen); every query gets exactly one
    assert post(["q1", "q2"], texts, np.array([[0, 1, 0], [0, -np.inf, -np.inf]])) == {"q1": "A", "q2": "B"}
    with pytest.raises(ValueError, match=r"query 'q2' has NaN scores"):
        post(["q1", "q2"], [["", "A"], ["", "B"]], np.array([[0, 1], [0, np.nan]]))
    with pytest.raises(ValueError, match=r"query 'q1' has NaN scores"):
        post(["q1"], [["", "A"]], torch.tensor([[0.0, float("nan")]]))
    # padding past a feature's entities (batch padding) is ignored, NaN there too
    assert post(["q1"], [["", "A"]], np.array([[0, 1, np.nan]])) == {"q1": "A"}


def test_d13_two_queries_sharing_an_id_are_refused(processor, records):
    post = GesaProcessor.post_process_predictions
    with pytest.raises(ValueError, match=r"example id 'q1' comes back at feature 2.*two different queries share"):
        post(["q1", "q2", "q1"], [["", "A"]] * 3, np.zeros((3, 2)))
    # windows of one query are consecutive: merged, max per text
    assert post(["q1", "q1"], [["", "A", "B"], ["", "B"]], np.array([[0, 1, 0], [0, 2, 0]])) == {"q1": "B"}
    first, second = _row(records, 65, "same-id"), _row(records, 66, "same-id")
    with pytest.raises(ValueError, match=r"'same-id'.*another query of this input has the same id"):
        processor.encode_records([first, second])
    # the same query twice (same passage and query) is the same example: accepted
    assert set(processor.encode_records([first, dict(first)])["example_id"]) == {"same-id"}


# ---------------------------------------------------------------- D9: malformed structure in the processor API

MALFORMED = {
    "entity-without-end": lambda r: _row(r, 64, "bad-9", entity_spans=[{"start": 306, "text": "Stephan Siegrist"}]),
    "start-is-text": lambda r: _row(r, 64, "bad-9", entity_spans=[{"start": "abc", "end": 322}]),
    "start-is-string-number": lambda r: _row(r, 64, "bad-9", entity_spans=[{"start": "306", "end": 322}]),
    "start-is-fractional": lambda r: _row(r, 64, "bad-9", entity_spans=[{"start": 306.7, "end": 322}]),
    "entities-as-one-dict": lambda r: _row(r, 64, "bad-9", entity_spans={"start": 306, "end": 322}),
    "answer-dict-without-text": lambda r: _row(r, 64, "bad-9", answers=[{"start": 306, "end": 321}]),
    "query-not-a-string": lambda r: _row(r, 64, "bad-9", query=["@placeholder"]),
    "passage-not-a-string": lambda r: _row(r, 64, "bad-9", passage=42),
    "record-entities-as-string": lambda r: {
        **copy.deepcopy(r[64]), "idx": "bad-9", "passage": {"text": r[64]["passage"]["text"], "entities": "Siegrist"}
    },
}  # fmt: skip


@pytest.mark.parametrize("case", list(MALFORMED))
def test_d9_malformed_structure_is_one_value_error_naming_the_example(processor, records, case):
    bad = MALFORMED[case](records)
    good = [_row(records, 65, "good-1"), _row(records, 66, "good-2")]
    with pytest.raises(ValueError, match="'bad-9'"):
        processor.encode_records([good[0], bad, good[1]])
    columns = processor.encode_records([good[0], bad, good[1]], skip_invalid=True)
    assert sorted(set(columns["example_id"])) == ["good-1", "good-2"]
    assert columns == processor.encode_records(good)


def test_d9_none_record_and_raw_api_spans(processor, records):
    good = _row(records, 65, "good-1")
    with pytest.raises(ValueError, match=r"input #1 is NoneType: neither a ReCoRD record"):
        processor.encode_records([good, None])
    assert set(processor.encode_records([good, None], skip_invalid=True)["example_id"]) == {"good-1"}
    text = records[64]["passage"]["text"]
    for spans in ([(306.7, 322)], [("306", 322)], [(306,)], {"start": 306, "end": 322}):
        with pytest.raises(ValueError, match="'raw-9'"):
            processor(text, "@placeholder climbed", entity_spans=spans, example_ids=["raw-9"])
    batch = processor([text, text], ["@placeholder climbed", "@placeholder fell"], entity_spans=[[(306.7, 322)],
                      [(306, 322)]], example_ids=["raw-9", "raw-10"], skip_invalid=True)  # fmt: skip
    assert batch["example_id"] == ["raw-10"] and batch["overflow_to_sample_mapping"] == [1]


# ---------------------------------------------------------------- D2 / D20: end conventions in one reader


def test_d2_d20_original_records_are_checked_in_their_own_convention(records, tmp_path):
    """An original-shape file with exclusive ends (off by one) gets the inclusive fix ("subtract 1") with its file
    and line; answer offsets off by one are caught too (run_record no longer drops them unchecked)."""
    shifted = copy.deepcopy(records[64])
    for entity in shifted["passage"]["entities"]:
        entity["end"] += 1
    answers_shifted = copy.deepcopy(records[64])
    for answer in answers_shifted["qas"][0]["answers"]:
        answer["end"] += 1
    for name, bad, expected in (
        ("entities.jsonl", shifted, "ends with whitespace"),
        ("answers.jsonl", answers_shifted, "does not match the passage"),
    ):
        path = tmp_path / name
        path.write_text("".join(json.dumps(item) + "\n" for item in (records[65], bad)), encoding="utf-8")
        with pytest.raises(ValueError) as error:
            check_record_file(path, where=f"--train_file {path}")
        message = str(error.value)
        assert message.startswith(f"--train_file {path}, line 2: ReCoRD example "), message
        assert expected in message and "INCLUSIVE end" in message and "subtract 1" in message, message
        assert "add 1" not in message
    # and the rows run_record makes of a record keep that convention for the processor's own checks
    (example,) = to_record_examples(
        [{**hub_rows(records[64])[0], "record_inclusive_end": True, "record_location": "f.jsonl, line 9"}]
    )
    assert example.inclusive_end and example.source == "f.jsonl, line 9"


# ---------------------------------------------------------------- D17: collator


def test_d17_collator_refuses_inconsistent_features(processor, records):
    features = features_of(processor.encode_records(records[64:67]))
    collator = GesaDataCollator(pad_token_id=processor.tokenizer.pad_token_id)
    no_labels = [{k: v for k, v in feature.items() if k != "labels"} for feature in features]
    for batch in ([no_labels[0], *features[1:]], [features[0], no_labels[1], *features[2:]]):
        with pytest.raises(ValueError, match=r"other columns than feature 0.*'labels' for all or none"):
            collator(batch)
    assert "labels" not in collator(no_labels)
    longer = dict(features[0], input_ids=features[0]["input_ids"] + [5])
    with pytest.raises(ValueError, match=r"feature 0 \(example '.*'\) has .* 'attention_mask' for .* 'input_ids'"):
        collator([longer])
    fewer_positions = dict(features[0], entity_position_ids=features[0]["entity_position_ids"][:-1])
    with pytest.raises(ValueError, match=r"rows of 'entity_position_ids'"):
        collator([fewer_positions])
    for bad in (-8, 0, 2.5):
        with pytest.raises(ValueError, match="pad_to_multiple_of must be a positive integer"):
            GesaDataCollator(pad_to_multiple_of=bad)


# ---------------------------------------------------------------- D18: a checkpoint without its tokenizer file


def test_d18_saved_processor_without_tokenizer_files_is_refused(processor, tmp_path):
    processor.save_pretrained(tmp_path)
    assert AutoProcessor.from_pretrained(tmp_path, trust_remote_code=True).tokenizer.__len__() > 1000
    os.remove(tmp_path / "tokenizer.json")
    with pytest.raises(ValueError, match=r"no word token for \['@', '#', '\*'\].*tokenizer.json"):
        AutoProcessor.from_pretrained(tmp_path, trust_remote_code=True)

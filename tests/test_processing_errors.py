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
"""Processor errors: every bad input (bare-string answers, queries without answers, shared ids, malformed structure,
end conventions, inconsistent features, a checkpoint without its tokenizer file) is one ``ValueError`` naming the
example (or is handled correctly), and every query in gets exactly one result out.

Runs on the project's own records (``record_fixtures``)."""

from __future__ import annotations

import copy
import json
import os

import numpy as np
import pytest
import torch
from record_fixtures import PROBE_ANSWER, features_of, hub_rows, probe_record, project_records
from transformers import AutoProcessor

from gesa.processing_gesa import GesaDataCollator, GesaProcessor
from gesa.records_gesa import check_record_file, to_record_examples


@pytest.fixture(scope="module")
def records() -> list[dict]:
    """The probe record (whose spans the tests bend), then two records of the project's sample."""
    project = project_records()
    return [probe_record(), project[1], project[2]]


NAME = PROBE_ANSWER  # "Tobias Wrenfeld"
N = probe_record()["passage"]["text"].index(NAME)
END = N + len(NAME)


def _row(records, index: int, example_id: str, **changes) -> dict:
    return {**hub_rows(records[index])[0], "id": example_id, **changes}


# ---------------------------------------------------------------- a bare-string answer


def test_bare_string_answer_is_an_error_not_characters(gesa_processor, records):
    text = records[0]["passage"]["text"]
    with pytest.raises(ValueError, match=r"'wren'.*'answers' is the string 'Tobias Wrenfeld', not a list: wrap"):
        gesa_processor(text, "@placeholder climbed", entity_spans=[(N, END)], answers="Tobias Wrenfeld",
                  example_ids=["wren"])  # fmt: skip
    record = copy.deepcopy(records[0])
    record["qas"][0]["answers"] = "Tobias Wrenfeld"
    with pytest.raises(ValueError, match=r"'answers' is the string 'Tobias Wrenfeld'"):
        gesa_processor.encode_records([record])
    # a list of one string is one answer
    batch = gesa_processor(text, "@placeholder climbed", entity_spans=[(N, END)], answers=["Tobias Wrenfeld"])
    assert batch["answers"] == [["Tobias Wrenfeld"]] and batch["labels"] == [[0.0, 1.0]]


# ---------------------------------------------------------------- a training query without answers


@pytest.mark.parametrize("answers", [None, []], ids=["missing", "empty"])
def test_query_without_answers_among_labelled_ones_is_refused(gesa_processor, records, answers):
    good = _row(records, 1, "good-1")
    bad = _row(records, 2, "no-answers", answers=answers)
    with pytest.raises(ValueError, match=r"'no-answers'.*has no gold answer, but other queries of this input"):
        gesa_processor.encode_records([good, bad])
    columns = gesa_processor.encode_records([good, bad], skip_invalid=True)
    assert set(columns["example_id"]) == {"good-1"} and "labels" in columns
    # unlabelled data as a whole (a test split): no labels at all, nothing refused
    unlabelled = gesa_processor.encode_records(
        [_row(records, 1, "t1", answers=[]), _row(records, 2, "t2", answers=[])]
    )
    assert "labels" not in unlabelled and set(unlabelled["example_id"]) == {"t1", "t2"}


# ---------------------------------------------------------------- post-processing


def test_post_processing_keeps_every_query_or_names_it():
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


def test_two_queries_sharing_an_id_are_refused(gesa_processor, records):
    post = GesaProcessor.post_process_predictions
    with pytest.raises(ValueError, match=r"example id 'q1' comes back at feature 2.*two different queries share"):
        post(["q1", "q2", "q1"], [["", "A"]] * 3, np.zeros((3, 2)))
    # windows of one query are consecutive: merged, max per text
    assert post(["q1", "q1"], [["", "A", "B"], ["", "B"]], np.array([[0, 1, 0], [0, 2, 0]])) == {"q1": "B"}
    first, second = _row(records, 1, "same-id"), _row(records, 2, "same-id")
    with pytest.raises(ValueError, match=r"'same-id'.*another query of this input has the same id"):
        gesa_processor.encode_records([first, second])
    # the same query twice (same passage and query) is the same example: accepted
    assert set(gesa_processor.encode_records([first, dict(first)])["example_id"]) == {"same-id"}


# ---------------------------------------------------------------- malformed structure in the processor API

MALFORMED = {
    "entity-without-end": lambda r: _row(r, 0, "bad-9", entity_spans=[{"start": N, "text": NAME}]),
    "start-is-text": lambda r: _row(r, 0, "bad-9", entity_spans=[{"start": "abc", "end": END}]),
    "start-is-string-number": lambda r: _row(r, 0, "bad-9", entity_spans=[{"start": str(N), "end": END}]),
    "start-is-fractional": lambda r: _row(r, 0, "bad-9", entity_spans=[{"start": N + 0.7, "end": END}]),
    "entities-as-one-dict": lambda r: _row(r, 0, "bad-9", entity_spans={"start": N, "end": END}),
    "answer-dict-without-text": lambda r: _row(r, 0, "bad-9", answers=[{"start": N, "end": END - 1}]),
    "query-not-a-string": lambda r: _row(r, 0, "bad-9", query=["@placeholder"]),
    "passage-not-a-string": lambda r: _row(r, 0, "bad-9", passage=42),
    "record-entities-as-string": lambda r: {
        **copy.deepcopy(r[0]), "idx": "bad-9", "passage": {"text": r[0]["passage"]["text"], "entities": "Wrenfeld"}
    },
}  # fmt: skip


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_structure_is_one_value_error_naming_the_example(gesa_processor, records, case):
    bad = MALFORMED[case](records)
    good = [_row(records, 1, "good-1"), _row(records, 2, "good-2")]
    with pytest.raises(ValueError, match="'bad-9'"):
        gesa_processor.encode_records([good[0], bad, good[1]])
    columns = gesa_processor.encode_records([good[0], bad, good[1]], skip_invalid=True)
    assert sorted(set(columns["example_id"])) == ["good-1", "good-2"]
    assert columns == gesa_processor.encode_records(good)


def test_none_record_and_malformed_raw_api_spans_are_refused(gesa_processor, records):
    good = _row(records, 1, "good-1")
    with pytest.raises(ValueError, match=r"input #1: a NoneType is neither a ReCoRD record"):
        gesa_processor.encode_records([good, None])
    assert set(gesa_processor.encode_records([good, None], skip_invalid=True)["example_id"]) == {"good-1"}
    text = records[0]["passage"]["text"]
    for spans in ([(N + 0.7, END)], [(str(N), END)], [(N,)], {"start": N, "end": END}):
        with pytest.raises(ValueError, match="'raw-9'"):
            gesa_processor(text, "@placeholder climbed", entity_spans=spans, example_ids=["raw-9"])
    batch = gesa_processor([text, text], ["@placeholder climbed", "@placeholder fell"], entity_spans=[[(N + 0.7, END)],
                      [(N, END)]], example_ids=["raw-9", "raw-10"], skip_invalid=True)  # fmt: skip
    assert batch["example_id"] == ["raw-10"] and batch["overflow_to_sample_mapping"] == [1]


# ---------------------------------------------------------------- end conventions in one reader


def test_original_records_are_checked_in_their_own_end_convention(records, tmp_path):
    """An original-shape file with exclusive ends (off by one) gets the inclusive fix ("subtract 1") with its file
    and line; answer offsets off by one are caught too (run_record no longer drops them unchecked)."""
    shifted = copy.deepcopy(records[0])
    for entity in shifted["passage"]["entities"]:
        entity["end"] += 1
    answers_shifted = copy.deepcopy(records[0])
    for answer in answers_shifted["qas"][0]["answers"]:
        answer["end"] += 1
    for name, bad, expected in (
        ("entities.jsonl", shifted, "ends with whitespace"),
        ("answers.jsonl", answers_shifted, "does not match the passage"),
    ):
        path = tmp_path / name
        path.write_text("".join(json.dumps(item) + "\n" for item in (records[1], bad)), encoding="utf-8")
        with pytest.raises(ValueError) as error:
            check_record_file(path, where=f"--train_file {path}")
        message = str(error.value)
        assert message.startswith(f"--train_file {path}, line 2: ReCoRD example "), message
        assert expected in message and "INCLUSIVE end" in message and "subtract 1" in message, message
        assert "add 1" not in message
    # and the rows run_record makes of a record keep that convention for the processor's own checks
    (example,) = to_record_examples(
        [{**hub_rows(records[0])[0], "record_inclusive_end": True, "record_location": "f.jsonl, line 9"}]
    )
    assert example.inclusive_end and example.source == "f.jsonl, line 9"


# ---------------------------------------------------------------- collator


def test_collator_refuses_inconsistent_features(gesa_processor, records):
    features = features_of(gesa_processor.encode_records(records[0:3]))
    collator = GesaDataCollator(pad_token_id=gesa_processor.tokenizer.pad_token_id)
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


# ---------------------------------------------------------------- a checkpoint without its tokenizer file


def test_saved_processor_without_tokenizer_files_is_refused(gesa_processor, tmp_path):
    gesa_processor.save_pretrained(tmp_path)
    assert AutoProcessor.from_pretrained(tmp_path, trust_remote_code=True).tokenizer.__len__() > 1000
    os.remove(tmp_path / "tokenizer.json")
    with pytest.raises(ValueError, match=r"no word token for \['@', '#', '\*'\].*tokenizer.json"):
        AutoProcessor.from_pretrained(tmp_path, trust_remote_code=True)

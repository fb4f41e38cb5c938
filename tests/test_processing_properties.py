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
"""Property-based tests (hypothesis) of the ReCoRD reader, GesaProcessor and GesaDataCollator.

Generated records (original shape, inclusive ends; or Hub rows, exclusive ends) over a small word vocabulary:

- a valid record always encodes, and every candidate mention lands in some window (small windows, small entity cap:
  passages are cut into several windows);
- a record mutated into one invalid class always raises ``ValueError`` naming its id (never another exception), and
  with ``skip_invalid=True`` the valid records around it are all kept, unchanged;
- the collator pads any valid batch consistently and refuses any inconsistent one with ``ValueError``.

Example budgets are bounded (``max_examples``) so that the suite costs seconds in CI.
"""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from record_fixtures import features_of
from transformers import AutoTokenizer

from gesa.processing_gesa import MODEL_INPUT_NAMES, GesaDataCollator, GesaProcessor

BUDGET = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
WORDS = ["Anna", "Berlin", "river", "the", "Zoë", "met", "2019", "O'Neil", "Café", "and", "in", "x", "Mr.", "Paris"]


@pytest.fixture(scope="module")
def small_window_processor(tiny_luke_dir) -> GesaProcessor:
    """Small windows and a small entity cap: most generated passages need several windows."""
    return GesaProcessor(
        AutoTokenizer.from_pretrained(tiny_luke_dir), max_seq_length=48, doc_stride=16, max_query_length=12,
        max_entities=4,
    )  # fmt: skip


@st.composite
def records(draw, example_id: str) -> dict:
    """A valid ReCoRD query: a passage of words (some ``@highlight`` lines), whole-word entity mentions (no overlap),
    a query with one ``@placeholder``, an answer that is one of the entities; as an original record or a Hub row."""
    words = draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=60))
    highlights = draw(st.sets(st.integers(1, len(words) - 1), max_size=2))
    pieces, starts, position = [], [], 0
    for index, word in enumerate(words):
        separator = "" if index == 0 else ("\n@highlight\n" if index in highlights else " ")
        position += len(separator)
        pieces.append(separator + word)
        starts.append(position)
        position += len(word)
    passage = "".join(pieces)
    chosen = sorted(draw(st.sets(st.integers(0, len(words) - 1), min_size=1, max_size=12)))
    spans = []
    for index in chosen:  # a mention of one or two words (two only when no separator or mention lies between)
        end_word = (
            index + 1 if index + 1 < len(words) and index + 1 not in chosen and index + 1 not in highlights else index
        )
        if spans and starts[index] < spans[-1][1]:
            continue
        spans.append((starts[index], starts[end_word] + len(words[end_word])))
    spans = spans[: draw(st.integers(1, len(spans)))]
    answer = passage[slice(*draw(st.sampled_from(spans)))]
    query = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=6)) + ["@placeholder"] +
                     draw(st.lists(st.sampled_from(WORDS), max_size=6)))  # fmt: skip
    if draw(st.booleans()):  # original record: inclusive ends
        return {
            "idx": f"record-{example_id}",
            "passage": {"text": passage, "entities": [{"start": s, "end": e - 1} for s, e in spans]},
            "qas": [{"id": example_id, "query": query, "answers": [{"start": spans[0][0], "end": spans[0][1] - 1,
                     "text": passage[slice(*spans[0])]}, {"text": answer}]}],
        }  # fmt: skip
    return {
        "id": example_id,
        "passage": passage,
        "query": query,
        "entity_spans": [{"start": s, "end": e, "text": passage[s:e]} for s, e in spans],
        "answers": [answer],
    }


def gold_spans(record: dict) -> set[tuple[int, int]]:
    if "qas" in record:
        return {(e["start"], e["end"] + 1) for e in record["passage"]["entities"]}
    return {(e["start"], e["end"]) for e in record["entity_spans"]}


def _spans_field(record: dict) -> list[dict]:
    return record["passage"]["entities"] if "qas" in record else record["entity_spans"]


def _set_query(record: dict, query) -> None:
    if "qas" in record:
        record["qas"][0]["query"] = query
    else:
        record["query"] = query


def _set_answers(record: dict, answers) -> None:
    if "qas" in record:
        record["qas"][0]["answers"] = answers
    else:
        record["answers"] = answers


def _passage_length(record: dict) -> int:
    return len(record["passage"]["text"] if "qas" in record else record["passage"])


# Each mutation turns a valid record into an invalid one of one class.
MUTATIONS = {
    "span-past-the-end": lambda r, rng: _spans_field(r)[0].update(end=_passage_length(r) + 3),
    "negative-start": lambda r, rng: _spans_field(r)[0].update(start=-1),
    "end-before-start": lambda r, rng: _spans_field(r)[0].update(end=_spans_field(r)[0]["start"] - 1),
    "start-is-a-string": lambda r, rng: _spans_field(r)[0].update(start=str(_spans_field(r)[0]["start"])),
    "start-is-a-float": lambda r, rng: _spans_field(r)[0].update(start=_spans_field(r)[0]["start"] + 0.5),
    "start-is-none": lambda r, rng: _spans_field(r)[0].update(start=None),
    "end-missing": lambda r, rng: _spans_field(r)[0].pop("end"),
    "span-not-an-object": lambda r, rng: _spans_field(r).__setitem__(0, [1, 2]),
    "no-placeholder": lambda r, rng: _set_query(r, "Anna met Paris"),
    "two-placeholders": lambda r, rng: _set_query(r, "@placeholder met @placeholder"),
    "query-not-a-string": lambda r, rng: _set_query(r, 7),
    "answers-a-bare-string": lambda r, rng: _set_answers(r, "Anna"),
    "answer-without-text": lambda r, rng: _set_answers(r, [{"start": 0, "end": 2}]),
    "answers-a-number": lambda r, rng: _set_answers(r, 3),
    "reserved-token": lambda r, rng: _set_query(r, "[ENT] @placeholder"),
}


def mutate(record: dict, mutation: str, seed: int) -> dict:
    record = copy.deepcopy(record)
    MUTATIONS[mutation](record, random.Random(seed))
    return record


def example_id_of(record: dict) -> str:
    return record["qas"][0]["id"] if "qas" in record else record["id"]


def encoded_spans(processor: GesaProcessor, items: list[dict], **kwargs) -> dict[str, set[tuple[int, int]]]:
    columns = processor.encode_records(items, return_candidate_spans=True, **kwargs)
    found: dict[str, set[tuple[int, int]]] = {}
    for example_id, spans in zip(columns["example_id"], columns["candidate_spans"], strict=True):
        found.setdefault(example_id, set()).update(tuple(span) for span in spans[1:])
    return found


@BUDGET
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=3, unique=True).flatmap(
    lambda ids: st.tuples(*(records(f"q{i}") for i in ids))))  # fmt: skip
def test_valid_records_encode_and_every_mention_lands_in_a_window(small_window_processor, items):
    items = list(items)
    found = encoded_spans(small_window_processor, items)
    assert set(found) == {example_id_of(item) for item in items}
    for item in items:
        assert found[example_id_of(item)] == gold_spans(item)


@BUDGET
@given(
    st.tuples(records("good-a"), records("bad-x"), records("good-b")),
    st.sampled_from(sorted(MUTATIONS)),
    st.integers(0, 2**16),
)
def test_an_invalid_record_raises_value_error_naming_it_and_skipping_keeps_the_rest(
    small_window_processor, items, mutation, seed
):
    good_a, bad, good_b = items
    bad = mutate(bad, mutation, seed)
    with pytest.raises(ValueError) as error:  # a ValueError, never a KeyError / TypeError / IndexError
        small_window_processor.encode_records([good_a, bad, good_b])
    assert "'bad-x'" in str(error.value) or "'record-bad-x'" in str(error.value), (mutation, str(error.value))
    small_window_processor.invalid_examples.clear()
    kept = encoded_spans(small_window_processor, [good_a, bad, good_b], skip_invalid=True)
    assert kept == encoded_spans(small_window_processor, [good_a, good_b])
    assert set(kept) == {"good-a", "good-b"}
    assert [item.example_id for item in small_window_processor.invalid_examples] in (["bad-x"], ["record-bad-x"])


COLLATOR_MUTATIONS = {
    "drop-labels-in-one": lambda features, i: features[i].pop("labels"),
    "drop-a-mask-in-one": lambda features, i: features[i].pop("attention_mask"),
    "longer-input-ids": lambda features, i: features[i]["input_ids"].append(5),
    "shorter-entity-mask": lambda features, i: features[i]["entity_attention_mask"].pop(),
    "fewer-position-rows": lambda features, i: features[i]["entity_position_ids"].pop(),
    "extra-labels": lambda features, i: features[i]["labels"].append(0.0),
    "not-a-dict": lambda features, i: features.__setitem__(i, list(features[i].items())),
}


@BUDGET
@given(
    st.lists(st.integers(0, 10**6), min_size=1, max_size=3, unique=True).flatmap(
        lambda ids: st.tuples(*(records(f"c{i}") for i in ids))
    ),
    st.sampled_from(sorted(COLLATOR_MUTATIONS) + [None]),
    st.integers(0, 2**16),
    st.sampled_from([None, 1, 8]),
)
def test_collator_pads_valid_batches_and_refuses_inconsistent_ones(
    small_window_processor, items, mutation, seed, multiple
):
    features = features_of(small_window_processor.encode_records(list(items)))
    collator = GesaDataCollator(
        pad_token_id=small_window_processor.tokenizer.pad_token_id, pad_to_multiple_of=multiple
    )
    if mutation is None:
        batch = collator(features)
        assert set(batch) == set(MODEL_INPUT_NAMES) | {"labels"}
        size, length = batch["input_ids"].shape
        assert size == len(features) and length % (multiple or 1) == 0
        entities = max(len(feature["entity_ids"]) for feature in features)
        assert batch["labels"].shape == batch["entity_ids"].shape == (size, entities)
        for row, feature in enumerate(features):
            assert batch["input_ids"][row, : len(feature["input_ids"])].tolist() == feature["input_ids"]
            assert batch["attention_mask"][row].sum().item() == len(feature["input_ids"])
            assert batch["labels"][row, : len(feature["labels"])].tolist() == feature["labels"]
        return
    # two features at least: a column missing from one of them is an inconsistency
    features = [copy.deepcopy(feature) for feature in features * 2]
    COLLATOR_MUTATIONS[mutation](features, random.Random(seed).randrange(len(features)))
    with pytest.raises(ValueError, match="GesaDataCollator"):
        collator(features)


@settings(max_examples=30, deadline=None, database=None)
@given(st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), st.text(max_size=3), st.booleans()))
def test_collator_refuses_a_bad_pad_to_multiple_of(value):
    with pytest.raises(ValueError, match="pad_to_multiple_of must be a positive integer"):
        GesaDataCollator(pad_to_multiple_of=value)

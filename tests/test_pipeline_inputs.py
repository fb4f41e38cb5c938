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
"""What the entity cloze pipeline and the processor do with bad or unusual inputs and damaged checkpoints.

Every bad input is one error naming the input's position in the call (and its query id where it has one) and the
fix; nothing is dropped or merged; a diverged model's NaN scores are never ranked; a damaged checkpoint file is named.
The checkpoint is a tiny GESA converted from the tiny LUKE (random weights), saved like any checkpoint.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer, pipeline

from gesa import GesaForEntitySpanQA, GesaProcessor

PASSAGE = "Anna met Boris in Paris.\n@highlight\nBoris flew to Rome"
SPANS = [(PASSAGE.index(name), PASSAGE.index(name) + len(name)) for name in ("Anna", "Boris", "Paris", "Rome")]


def _good(query_id: str | None = None) -> dict:
    item = {"passage": PASSAGE, "query": "Anna later flew to @placeholder", "entity_spans": list(SPANS)}
    if query_id is not None:
        item["id"] = query_id
    return item


def _record(qas) -> dict:
    entities = [{"start": start, "end": end - 1} for start, end in SPANS]  # original ReCoRD: inclusive ends
    return {"idx": "r1", "passage": {"text": PASSAGE, "entities": entities}, "qas": qas}


@pytest.fixture(scope="module")
def checkpoint(tiny_luke_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cloze-checkpoint")
    processor = GesaProcessor(
        AutoTokenizer.from_pretrained(tiny_luke_dir), max_seq_length=64, doc_stride=16, max_query_length=16
    )
    model = GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir)
    model.init_added_word_embeddings(processor.added_token_sources())
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def reader(checkpoint):
    return pipeline(model=str(checkpoint), trust_remote_code=True)


def _copy(checkpoint, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(checkpoint, target)
    return target


def test_errors_name_the_input_position_in_the_call(reader):
    with pytest.raises((TypeError, ValueError), match=r"input #2\b"):
        reader([_good(), _good(), {}])
    bad = _good("q7")
    bad["query"] = "no placeholder here"
    with pytest.raises(ValueError, match=r"input #1 \(q7\)"):
        reader([_good("q1"), bad])
    anonymous = _good()
    anonymous["query"] = "no placeholder here"
    with pytest.raises(ValueError, match=r"input #0") as caught:
        reader([anonymous])
    assert "(input #0)" not in str(caught.value)


def test_a_records_queries_are_named_by_input_and_query(reader):
    good_qa = {"id": "a", "query": "Anna later flew to @placeholder"}
    bad_qa = {"id": "b", "query": "no placeholder"}
    with pytest.raises(ValueError, match=r"input #1, query 1 \(b\)"):
        reader([_good(), _record([good_qa, bad_qa])])
    results = reader([_good(), _record([good_qa, dict(good_qa, id="c")])])
    assert len(results) == 3  # one list per query, in input order


@pytest.mark.parametrize("qas", [None, []])
def test_a_record_without_queries_is_refused_and_nothing_is_merged(reader, qas):
    with pytest.raises(ValueError, match=r"input #0.*'qas'"):
        reader([_record(qas), _good()])


@pytest.mark.parametrize("value", [0, False, -1, 2.0, "2", None.__class__])
def test_batch_size_must_be_a_positive_integer(reader, value):
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        reader(_good(), batch_size=value)


@pytest.mark.parametrize("value", [0, False, True, 1.5, "3"])
def test_top_k_must_be_a_positive_integer(reader, value):
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        reader(_good(), top_k=value)


def test_numpy_integers_are_accepted_as_sizes(reader):
    expected = reader(_good(), top_k=2, batch_size=1)
    assert reader(_good(), top_k=np.int64(2), batch_size=np.int32(1)) == expected
    assert len(expected) == 2


def test_nan_scores_are_never_ranked(checkpoint, tmp_path):
    folder = _copy(checkpoint, tmp_path)
    model = GesaForEntitySpanQA.from_pretrained(folder)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(float("nan"))
    nan_reader = pipeline("entity-cloze-qa", model=model, tokenizer=AutoTokenizer.from_pretrained(folder))
    with pytest.raises(ValueError, match="NaN scores"):
        nan_reader(_good())


@pytest.mark.parametrize(
    "argument, value",
    [
        ("max_seq_length", "96"),
        ("max_seq_length", None),
        ("max_seq_length", 96.0),
        ("doc_stride", 12.7),
        ("max_entities", True),
        ("skip_invalid", "false"),
        ("ner_labels", "PERSON"),
        ("ner_labels", ["PERSON", 3]),
        ("spacy_model", 3),
        ("entity_mask_id", "2"),
    ],
)
def test_processor_refuses_arguments_of_the_wrong_type(tiny_luke_dir, argument, value):
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    with pytest.raises(TypeError, match=rf"GesaProcessor: {argument} must be"):
        GesaProcessor(tokenizer, **{argument: value})


@settings(max_examples=40, deadline=None, database=None)
@given(
    st.one_of(
        st.integers(-5, 700),
        st.floats(allow_nan=True),
        st.text(max_size=3),
        st.none(),
        st.booleans(),
        st.lists(st.integers(0, 3), max_size=2),
    )
)
def test_processor_size_arguments_give_one_clear_error_or_work(tiny_luke_dir, value):
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    try:
        processor = GesaProcessor(tokenizer, max_seq_length=value)
    except (TypeError, ValueError) as error:
        assert "max_seq_length" in str(error)
        return
    assert processor.max_seq_length == value and isinstance(value, int) and not isinstance(value, bool)


@settings(max_examples=40, deadline=None, database=None)
@given(
    st.one_of(
        st.dictionaries(st.sampled_from(["passage", "query", "entity_spans", "id", "qas"]), st.none(), max_size=3),
        st.lists(st.integers(), max_size=2),
        st.text(max_size=5),
        st.integers(),
    )
)
def test_any_pipeline_input_gives_answers_or_one_error_naming_it(reader, item):
    try:
        results = reader([_good(), item])
    except (TypeError, ValueError) as error:
        assert "input #1" in str(error)
        return
    assert len(results) >= 2


def test_damaged_processor_config_is_named(checkpoint, tmp_path):
    folder = _copy(checkpoint, tmp_path)
    config = folder / "processor_config.json"
    settings_ = json.loads(config.read_text())
    config.write_text("{not json")
    with pytest.raises(ValueError, match=r"processor_config\.json: not valid JSON"):
        pipeline(model=str(folder), trust_remote_code=True)
    config.write_text(json.dumps({**settings_, "max_seq_length": "96"}))
    with pytest.raises(ValueError, match=r"processor_config\.json: 'max_seq_length' must be an integer"):
        pipeline(model=str(folder), trust_remote_code=True)


def test_truncated_weights_are_named(checkpoint, tmp_path):
    folder = _copy(checkpoint, tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(OSError, match=r"model\.safetensors is truncated.*Re-save"):
        GesaForEntitySpanQA.from_pretrained(folder)
    with pytest.raises((OSError, ValueError), match=r"model\.safetensors is truncated"):  # the pipeline wraps it
        pipeline(model=str(folder), trust_remote_code=True)


def test_missing_tokenizer_config_is_named(checkpoint, tmp_path):
    folder = _copy(checkpoint, tmp_path)
    (folder / "tokenizer_config.json").unlink()
    try:
        reader = pipeline(model=str(folder), trust_remote_code=True)
    except (ValueError, OSError) as error:
        assert "tokenizer_config.json" in str(error)
        return
    assert reader(_good())  # a tokenizer rebuilt from the other files is a working one

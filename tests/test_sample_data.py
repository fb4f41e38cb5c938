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
"""The embedded ReCoRD-format sample (examples/data/record_sample_*.jsonl): every span and answer is checked."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from tiny_luke import RECORD_DIR, record_texts

DATA = Path(__file__).resolve().parents[1] / "examples" / "data"
SPLITS = {"train": DATA / "record_sample_train.jsonl", "dev": DATA / "record_sample_dev.jsonl"}


def _rows(split: str) -> list[dict]:
    return [json.loads(line) for line in SPLITS[split].read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_spans_and_answers(split):
    rows = _rows(split)
    assert rows, split
    for row in rows:
        assert set(row) == {"idx", "source", "passage", "qas"}
        text = row["passage"]["text"]
        entities = row["passage"]["entities"]
        assert "@highlight\n" in text and "[[" not in text and "]]" not in text
        spans = [(e["start"], e["end"]) for e in entities]
        assert spans == sorted(spans) and len(set(spans)) == len(spans)
        for (s0, e0), (s1, _) in zip(spans, spans[1:], strict=False):
            assert e0 < s1, f"overlapping entity spans {(s0, e0)} and {s1} in passage {row['idx']}"
        entity_strings = set()
        for start, end in spans:
            assert 0 <= start <= end < len(text)
            mention = text[start : end + 1]  # inclusive end (SuperGLUE)
            assert mention == mention.strip() and mention, (row["idx"], start, end)
            # mentions are whole words: no letter or digit glued on either side
            assert start == 0 or not text[start - 1].isalnum(), mention
            assert end + 1 == len(text) or not text[end + 1].isalnum(), mention
            entity_strings.add(mention)
        assert len(entity_strings) >= 4, row["idx"]
        for qa in row["qas"]:
            assert set(qa) == {"idx", "id", "query", "answers"}
            assert qa["query"].count("@placeholder") == 1
            assert qa["answers"]
            answer_texts = {a["text"] for a in qa["answers"]}
            assert len(answer_texts) == 1, qa["id"]
            for answer in qa["answers"]:
                assert text[answer["start"] : answer["end"] + 1] == answer["text"], qa["id"]
                assert (answer["start"], answer["end"]) in spans, qa["id"]
                assert answer["text"] in entity_strings, qa["id"]
            # every mention of the answer string is listed, as in ReCoRD
            listed = {(a["start"], a["end"]) for a in qa["answers"]}
            assert listed == {(s, e) for s, e in spans if text[s : e + 1] == answer["text"]}, qa["id"]
            # the answer is not given away by the query itself
            assert answer["text"].lower() not in qa["query"].lower(), qa["id"]


def test_sizes_and_unique_ids():
    train, dev = _rows("train"), _rows("dev")
    n_train = sum(len(r["qas"]) for r in train)
    n_dev = sum(len(r["qas"]) for r in dev)
    assert 40 <= n_train <= 60 and 12 <= n_dev <= 24, (n_train, n_dev)
    ids = [qa["id"] for r in train + dev for qa in r["qas"]]
    assert len(ids) == len(set(ids))
    train_texts = {r["passage"]["text"] for r in train}
    assert not train_texts & {r["passage"]["text"] for r in dev}, "a dev passage is also a train passage"


def test_files_match_builder():
    """The jsonl files are exactly what build_record_sample.py produces from its marked-up source."""
    spec = importlib.util.spec_from_file_location("gesa_build_record_sample", DATA / "build_record_sample.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    for split, items in (("train", builder.TRAIN), ("dev", builder.DEV)):
        expected = builder.render_jsonl(builder.build_rows(split, items))
        assert SPLITS[split].read_text(encoding="utf-8") == expected, "rerun examples/data/build_record_sample.py"
    text, entities, mentions = builder.parse_marked("By [[Ann Lee]] in [[Café Nord]].")
    assert text == "By Ann Lee in Café Nord."
    assert entities == [{"start": 3, "end": 9}, {"start": 14, "end": 22}]
    assert mentions == ["Ann Lee", "Café Nord"]
    with pytest.raises(ValueError, match="not an entity"):
        builder.build_rows("x", [("[[Ann]] met [[Bob]].\n@highlight\nx", [("@placeholder met Bob", "Carl")])])


@pytest.mark.needs_shared
def test_sample_shares_no_sentence_with_shared_record_data():
    """Written for the project: no sentence of the sample occurs in the shared (real) ReCoRD files."""
    real_texts = record_texts(sorted(RECORD_DIR.glob("*.jsonl")))
    assert real_texts
    real = "\n".join(real_texts)
    for split in SPLITS:
        for row in _rows(split):
            sentences = re.split(r"(?<=[.!?])\s+|\n", row["passage"]["text"])
            sentences += [qa["query"] for qa in row["qas"]]
            for sentence in sentences:
                if len(sentence) >= 30:
                    assert sentence not in real, sentence

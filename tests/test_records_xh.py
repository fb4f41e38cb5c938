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
"""HotpotQA (official and Hub layouts) and FEVER (claims + wiki pages) readers: canonical rows and one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_luke import HOTPOT_DIR

from gesa.inputs_gesa import InputError
from gesa.records_xh import (
    hotpot_supporting_facts,
    page_title,
    read_fever_claims,
    read_hotpot_file,
    read_wiki_pages,
)

OFFICIAL_ROW = {
    "_id": "q1",
    "question": "Which city is the tower in?",
    "answer": "Paris",
    "type": "bridge",
    "level": "easy",
    "supporting_facts": [["Tower", 0], ["Paris", 1]],
    "context": [["Tower", ["The tower is in Paris.", " It is tall."]], ["Paris", ["Paris is a city.", " Nice."]]],
}


def _write(path: Path, rows, lines: bool = False) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) if lines else json.dumps(rows))
    return path


def test_official_and_hub_layouts_read_to_the_same_row(tmp_path):
    official = read_hotpot_file(_write(tmp_path / "official.json", [OFFICIAL_ROW]))[0]
    hub = {
        **{k: OFFICIAL_ROW[k] for k in ("question", "answer", "type", "level")},
        "id": "q1",
        "supporting_facts": {"title": ["Tower", "Paris"], "sent_id": [0, 1]},
        "context": {"title": ["Tower", "Paris"], "sentences": [c[1] for c in OFFICIAL_ROW["context"]]},
    }
    from_hub = read_hotpot_file(_write(tmp_path / "hub.jsonl", [hub], lines=True))[0]
    drop = {"location"}
    assert {k: v for k, v in official.items() if k not in drop} == {k: v for k, v in from_hub.items() if k not in drop}
    assert hotpot_supporting_facts(official) == [["Tower", 0], ["Paris", 1]]
    assert official["location"].endswith("official.json, item 1")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"question": ""}, r"item 2: HotpotQA question 'q2': 'question' must be a non-empty string; add"),
        ({"supporting_facts": [["Nowhere", 0]]}, r"item 2: HotpotQA question 'q2': .*'Nowhere' is none of the"),
        ({"supporting_facts": [["Tower", "0"]]}, r"item 2: HotpotQA question 'q2': .*sent_id <int >= 0>"),
        ({"context": [["Tower"]]}, r"item 2: HotpotQA question 'q2': .*\[title, \[sentences\]\] pairs"),
        ({"answer": 3}, r"item 2: HotpotQA question 'q2': 'answer' must be a string"),
    ],
)
def test_a_bad_hotpot_question_is_one_error_naming_file_item_and_id(tmp_path, change, message):
    path = _write(tmp_path / "bad.json", [OFFICIAL_ROW, {**OFFICIAL_ROW, "_id": "q2", **change}])
    with pytest.raises(InputError, match=r"bad\.json, " + message):
        read_hotpot_file(path)


def test_repeated_hotpot_ids_are_an_error(tmp_path):
    with pytest.raises(InputError, match=r"item 2: question id 'q1' repeats .*item 1; give every question its own id"):
        read_hotpot_file(_write(tmp_path / "dup.json", [OFFICIAL_ROW, OFFICIAL_ROW]))


@pytest.mark.needs_shared
def test_the_shared_hub_rows_read_with_file_based_ids():
    rows = read_hotpot_file(HOTPOT_DIR / "hotpot_dev_distractor_first100.json")
    assert len(rows) == 100 and rows[3]["id"] == "hotpot_dev_distractor_first100-3"
    assert all(len(r["context"]["title"]) == len(r["context"]["sentences"]) for r in rows)


CLAIMS = [
    {"id": 1, "claim": "Paris is in France.", "label": "SUPPORTS", "evidence": [[[7, 8, "Paris", 0]]]},
    {"id": 2, "claim": "Paris is tiny.", "label": "NOT ENOUGH INFO", "evidence": [[[9, None, None, None]]]},
]


def test_fever_claims_and_wiki_pages(tmp_path):
    claims = read_fever_claims(_write(tmp_path / "train.jsonl", CLAIMS, lines=True))
    assert [c["label"] for c in claims] == ["SUPPORTS", "NOT ENOUGH INFO"]
    assert claims[0]["evidence"] == [[[7, 8, "Paris", 0]]]
    page = {"id": "Paris", "text": "x", "lines": "0\tParis is the capital of France.\tFrance\n1\t\n2\tIt is big."}
    pages = read_wiki_pages(
        _write(tmp_path / "wiki-001.jsonl", [page, {**page, "id": "Other"}], lines=True), {"Paris"}
    )
    assert pages == {"Paris": {0: "Paris is the capital of France.", 1: "", 2: "It is big."}}
    assert page_title("Paris_-LRB-film-RRB-") == "Paris (film)"


@pytest.mark.parametrize(
    "claim, message",
    [
        ({"id": 3, "claim": "x", "label": "MAYBE"}, r"line 3: FEVER claim 3: 'label' 'MAYBE' is none of"),
        (
            {"id": 3, "claim": "x", "label": "REFUTES", "evidence": [[[1, 2, None, None]]]},
            r"line 3: FEVER claim 3: .*needs at least",
        ),
        (
            {"id": 3, "claim": "x", "label": "REFUTES", "evidence": [[[1, 2, "P"]]]},
            r"line 3: FEVER claim 3: evidence group 0",
        ),
        ({"claim": "x"}, r"line 3: 'id' is missing"),
    ],
)
def test_a_bad_fever_claim_is_one_error_naming_file_line_and_id(tmp_path, claim, message):
    path = _write(tmp_path / "bad.jsonl", [*CLAIMS, claim], lines=True)
    with pytest.raises(InputError, match=r"bad\.jsonl, " + message):
        read_fever_claims(path)


def test_a_bad_wiki_line_is_an_error(tmp_path):
    path = _write(tmp_path / "wiki.jsonl", [{"id": "P", "text": "", "lines": "zero\tnope"}], lines=True)
    with pytest.raises(
        InputError, match=r"wiki\.jsonl, line 1: wiki page 'P': the 'lines' row .* does not start with"
    ):
        read_wiki_pages(path)

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
"""The readers below the scripts accept nothing they would read wrongly: FEVER's evidence line ``true``, a
``predicted_pages`` string (iterated letter by letter), claim ids ``100`` and ``"100"`` (one id in every prediction
file), a wiki page or line number given twice (the later copy silently won); a HotpotQA answer left blank marks the
question unlabelled (never scored against ""), and supporting facts past their paragraph's last sentence are said;
entity files with a BOM or bad bytes read or fail by line, Open Entity's first item is line 1, and a blank token is
refused where it would leave a mention without a position."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from gesa.inputs_gesa import InputError
from gesa.records_entity import read_conll_file, read_open_entity_file, read_tacred_file
from gesa.records_xh import read_fever_claims, read_hotpot_file, read_wiki_pages

HOTPOT = {
    "_id": "q1",
    "question": "Which city is the tower in?",
    "answer": "Paris",
    "supporting_facts": [["Tower", 0]],
    "context": [["Tower", ["The tower is in Paris.", " It is tall."]], ["Paris", ["Paris is a city."]]],
}
CLAIM = {"id": 1, "claim": "Lyon is in France.", "label": "SUPPORTS", "evidence": [[[7, 8, "Lyon", 0]]]}
PAGE = {"id": "Lyon", "text": "x", "lines": "0\tLyon is a city in France.\n1\tIt is big."}


def _lines(path: Path, rows) -> Path:
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    return path


def test_fever_evidence_line_true_is_refused(tmp_path):
    claim = {**CLAIM, "evidence": [[[7, 8, "Lyon", True]]]}
    with pytest.raises(InputError, match=r"claims\.jsonl, line 1: FEVER claim 1: evidence .*line <int >= 0>"):
        read_fever_claims(_lines(tmp_path / "claims.jsonl", [claim]))


def test_fever_predicted_pages_string_is_refused_not_read_letter_by_letter(tmp_path):
    with pytest.raises(InputError, match=r"line 1: FEVER claim 1: 'predicted_pages' must be a list.*\['Lyon'\]"):
        read_fever_claims(_lines(tmp_path / "claims.jsonl", [{**CLAIM, "predicted_pages": "Lyon"}]))


@pytest.mark.parametrize("sentences", [["Lyon", 0], [["Lyon", "0"]], [["Lyon"]]])
def test_fever_malformed_predicted_sentences_are_refused(tmp_path, sentences):
    with pytest.raises(InputError, match=r"line 1: FEVER claim 1: 'predicted_sentences' must be a list"):
        read_fever_claims(_lines(tmp_path / "claims.jsonl", [{**CLAIM, "predicted_sentences": sentences}]))


def test_fever_ids_100_and_text_100_are_one_id(tmp_path):
    claims = [{**CLAIM, "id": 100}, {**CLAIM, "id": "100"}]
    with pytest.raises(InputError, match=r"line 2: claim id '100' repeats .*line 1"):
        read_fever_claims(_lines(tmp_path / "claims.jsonl", claims))


def test_a_wiki_page_given_twice_is_refused_not_last_kept(tmp_path):
    first = _lines(tmp_path / "wiki-001.jsonl", [PAGE])
    second = _lines(tmp_path / "wiki-002.jsonl", [{**PAGE, "lines": "0\tLyon is a town."}])
    with pytest.raises(InputError, match=r"wiki-002\.jsonl, line 1: page 'Lyon' was already read at .*wiki-001"):
        read_wiki_pages([first, second])


def test_a_wiki_line_number_given_twice_is_refused_not_last_kept(tmp_path):
    path = _lines(tmp_path / "wiki.jsonl", [{**PAGE, "lines": "0\tLyon is a city.\n0\tLyon is a town."}])
    with pytest.raises(InputError, match=r"wiki\.jsonl, line 1: wiki page 'Lyon': line number 0 appears twice"):
        read_wiki_pages(path)


def test_a_blank_hotpot_answer_marks_the_question_unlabelled(tmp_path):
    path = tmp_path / "test.json"
    path.write_text(json.dumps([{**HOTPOT, "answer": ""}, {**HOTPOT, "_id": "q2", "answer": " "}]))
    assert [row["answer"] for row in read_hotpot_file(path)] == [None, None]


def test_hotpot_supporting_facts_past_the_last_sentence_are_said(tmp_path, caplog):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([{**HOTPOT, "supporting_facts": [["Tower", 0], ["Paris", 3]]}]))
    with caplog.at_level(logging.WARNING, logger="gesa.records_xh"):
        rows = read_hotpot_file(path)
    assert rows[0]["supporting_facts"] == {"title": ["Tower", "Paris"], "sent_id": [0, 3]}  # the official gold
    assert "dev.json, item 1: HotpotQA question 'q1': supporting facts [['Paris', 3]] point past" in caplog.text
    assert "'Paris' has 1" in caplog.text


OPEN_ENTITY = {"left_context_token": ["In"], "mention_span": "Lyon", "right_context_token": ["."], "y_str": ["city"]}
TACRED = {"id": "t1", "token": ["Ann", "met", "Bob"], "subj_start": 0, "subj_end": 0, "obj_start": 2, "obj_end": 2,
          "subj_type": "PERSON", "obj_type": "PERSON", "relation": "per:friend"}  # fmt: skip


def test_entity_files_with_a_utf8_bom_read_as_without(tmp_path):
    bom = "\ufeff"
    (tmp_path / "oe.json").write_text(bom + json.dumps(OPEN_ENTITY) + "\n" + json.dumps(OPEN_ENTITY), "utf-8")
    (tmp_path / "tacred.json").write_text(bom + json.dumps([TACRED]), "utf-8")
    (tmp_path / "conll.txt").write_text(bom + "-DOCSTART- -X- O O\n\nLyon NNP B-NP B-LOC\n", "utf-8")
    assert [e.tokens for e in read_open_entity_file(tmp_path / "oe.json")] == [["In", "Lyon", "."]] * 2
    assert read_tacred_file(tmp_path / "tacred.json")[0].head == (0, 1)
    conll = read_conll_file(tmp_path / "conll.txt")
    assert [e.tokens for e in conll] == [["Lyon"]] and conll[0].spans == [(0, 1, "LOC")]


@pytest.mark.parametrize(
    "name, reader", [("oe.json", read_open_entity_file), ("tacred.json", read_tacred_file), ("c.txt", read_conll_file)]
)
def test_entity_files_not_utf8_name_the_line_and_the_fix(tmp_path, name, reader):
    cafe_typing, cafe_tacred = {**OPEN_ENTITY, "mention_span": "Café"}, {**TACRED, "token": ["Café", "met", "Bob"]}
    text = {"oe.json": json.dumps(OPEN_ENTITY) + "\n" + json.dumps(cafe_typing, ensure_ascii=False),
            "tacred.json": json.dumps([TACRED, cafe_tacred], indent=1, ensure_ascii=False),
            "c.txt": "Lyon NNP B-NP B-LOC\n\nCafé NNP B-NP B-LOC\n"}[name]  # fmt: skip
    (tmp_path / name).write_bytes(text.encode("latin-1"))
    with pytest.raises(InputError, match=rf"{name}, line \d+: not UTF-8 .*re-save the file as UTF-8"):
        reader(tmp_path / name)


def test_open_entity_first_item_is_line_1(tmp_path):
    path = tmp_path / "oe.json"
    path.write_text(json.dumps({**OPEN_ENTITY, "y_str": []}))
    with pytest.raises(InputError, match=r"oe\.json, line 1: Open Entity record: field 'y_str'"):
        read_open_entity_file(path)


@pytest.mark.parametrize("blank", ["", " "])
def test_a_blank_token_is_refused_naming_its_index(tmp_path, blank):
    path = tmp_path / "tacred.json"
    path.write_text(json.dumps([{**TACRED, "token": [blank, "met", "Bob"]}]))
    with pytest.raises(InputError, match=r"item 1: TACRED record 't1': field 'token' item 0 is blank"):
        read_tacred_file(path)
    path = tmp_path / "oe.json"
    path.write_text(json.dumps({**OPEN_ENTITY, "left_context_token": ["In", blank]}))
    with pytest.raises(InputError, match=r"line 1: Open Entity record: field 'left_context_token' item 1 is blank"):
        read_open_entity_file(path)

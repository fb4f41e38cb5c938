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
"""The input layer: every JSON layout with its locations counted from 1, a BOM dropped, non-UTF-8 bytes, blank lines,
JSON errors with their line and column, the one error's parts; and every task's reader behaving alike through it."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from gesa.inputs_gesa import InputError, Location, read_json_file, read_text_lines
from gesa.records_entity import read_conll_file, read_open_entity_file, read_tacred_file
from gesa.records_gesa import check_record_file
from gesa.records_wikihop import load_wikihop_file
from gesa.records_xh import read_fever_claims, read_hotpot_file

BOM = "\ufeff".encode()
A, B, C = {"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "c", "n": 3}


def write(path: Path, text: str, bom: bool = False) -> Path:
    path.write_bytes((BOM if bom else b"") + text.encode("utf-8"))
    return path


def located(path: Path, **kwargs) -> list[tuple[str, object]]:
    return [(str(location), item) for location, item in read_json_file(path, **kwargs)]


# ----------------------------------------------------------------------------------------------- layouts


def test_a_json_list_gives_its_items_numbered_from_one(tmp_path):
    path = write(tmp_path / "f.json", json.dumps([A, B, C], indent=2))
    found = read_json_file(path, where="--train_file f.json")
    assert (found.layout, found.field) == ("list", None)
    assert [(str(location), item) for location, item in found] == [
        ("--train_file f.json, item 1", A),
        ("--train_file f.json, item 2", B),
        ("--train_file f.json, item 3", C),
    ]


def test_an_object_holding_the_list_under_its_field_names_the_field(tmp_path):
    path = write(tmp_path / "f.json", json.dumps({"version": "1", "data": [A, B]}, indent=1))
    found = read_json_file(path)
    assert (found.layout, found.field) == ("object", "data")
    assert [(location.place, item) for location, item in found] == [("item 1 of 'data'", A), ("item 2 of 'data'", B)]
    on_one_line = write(tmp_path / "g.json", json.dumps({"data": [A]}))
    assert located(on_one_line) == [(f"{on_one_line}, item 1 of 'data'", A)]


def test_json_lines_count_blank_lines_and_skip_them(tmp_path):
    path = write(tmp_path / "f.jsonl", f"\n{json.dumps(A)}\n   \n\n{json.dumps(B)}\n\n")
    found = read_json_file(path)
    assert found.layout == "lines"
    assert [(location.place, item) for location, item in found] == [("line 2", A), ("line 5", B)]
    assert [(location.place, item) for location, item in found] == [("line 2", A), ("line 5", B)]  # a second pass


def test_a_file_of_one_object_on_one_line_is_json_lines_and_crlf_line_ends_are_read(tmp_path):
    assert located(write(tmp_path / "one.json", json.dumps({"rows": [A]}))) == [
        (f"{tmp_path / 'one.json'}, line 1", {"rows": [A]})
    ]
    path = write(tmp_path / "crlf.jsonl", f"{json.dumps(A)}\r\n\r\n{json.dumps(B)}\r\n")
    assert [(location.place, item) for location, item in read_json_file(path)] == [("line 1", A), ("line 3", B)]


def test_a_line_separator_inside_a_json_string_does_not_split_the_line(tmp_path):
    record = {"text": "one\u2028two\x85three"}
    path = write(tmp_path / "f.jsonl", json.dumps(record, ensure_ascii=False) + "\n" + json.dumps(A) + "\n")
    assert [(location.place, item) for location, item in read_json_file(path)] == [("line 1", record), ("line 2", A)]


def test_without_a_list_field_an_object_document_is_no_known_layout(tmp_path):
    path = write(tmp_path / "f.json", json.dumps({"data": [A]}, indent=1))
    with pytest.raises(InputError, match=r"f\.json: is in no known layout: the document is an object with keys"):
        read_json_file(path, list_field=None)
    with pytest.raises(InputError, match=r"f\.json: is in no known layout: the document is a JSON int; give ReCoRD"):
        read_json_file(write(tmp_path / "f.json", "3\n"), fix="give ReCoRD records")


# ----------------------------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("layout", ["list", "object", "lines"])
def test_a_utf8_bom_is_dropped(tmp_path, layout):
    text = {
        "list": json.dumps([A, B], indent=1),
        "object": json.dumps({"data": [A, B]}),
        "lines": f"{json.dumps(A)}\n{json.dumps(B)}\n",
    }[layout]
    plain = [item for _, item in read_json_file(write(tmp_path / "plain.json", text))]
    with_bom = read_json_file(write(tmp_path / "bom.json", text, bom=True))
    assert with_bom.layout == layout and [item for _, item in with_bom] == plain == [A, B]


def test_the_text_line_reader_drops_the_bom_and_the_line_ends(tmp_path):
    path = write(tmp_path / "f.txt", "-DOCSTART- -X- O\r\n\r\nEU NNP B-ORG\n", bom=True)
    assert [(location.place, text) for location, text in read_text_lines(path)] == [
        ("line 1", "-DOCSTART- -X- O"),
        ("line 2", ""),
        ("line 3", "EU NNP B-ORG"),
    ]


@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("layout", ["lines", "list"])
def test_a_byte_that_is_not_utf8_is_named_by_line_column_and_file_offset(tmp_path, layout, bom):
    text = (
        f"{json.dumps(A)}\n{json.dumps({'name': 'Café'}, ensure_ascii=False)}\n"
        if layout == "lines"
        else json.dumps([A, {"name": "Café"}], indent=1, ensure_ascii=False)
    )
    data = (BOM if bom else b"") + text.encode("latin-1")
    path = tmp_path / "latin1.json"
    path.write_bytes(data)
    offset = data.index(b"\xe9")
    line = data[:offset].count(b"\n") + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    with pytest.raises(InputError) as error:
        list(read_json_file(path, where="--train_file latin1.json"))
    assert str(error.value) == (
        f"--train_file latin1.json, line {line}: not UTF-8 (byte 0xe9 at column {column}, byte offset {offset} of the "
        "file); re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8)"
    )
    assert error.value.where == Location("--train_file latin1.json", "line", line)
    with pytest.raises(InputError, match=rf"line {line}: not UTF-8 \(byte 0xe9"):
        list(read_text_lines(path))


@pytest.mark.parametrize("text", ["", "\n  \n\t\n"])
def test_an_empty_file_is_one_error(tmp_path, text):
    for path in (write(tmp_path / "f.jsonl", text), write(tmp_path / "bom.jsonl", text, bom=True)):
        with pytest.raises(
            InputError, match=rf"^{path}: the file is empty; give one JSON list, a JSON object holding"
        ):
            read_json_file(path)


def test_a_missing_file_and_a_folder_are_one_error(tmp_path):
    with pytest.raises(InputError, match=r"^--x nope\.json: does not exist; give the path of an existing file$"):
        read_json_file(tmp_path / "nope.json", where="--x nope.json")
    with pytest.raises(InputError, match=r": is a folder, not a file; give ReCoRD records$"):
        read_json_file(tmp_path, fix="give ReCoRD records")
    with pytest.raises(InputError, match=r"does not exist"):
        read_text_lines(tmp_path / "nope.txt")


# ----------------------------------------------------------------------------------------------- JSON errors


def test_a_bad_json_line_names_its_line_and_column(tmp_path):
    path = write(tmp_path / "f.jsonl", f'{json.dumps(A)}\n\n{{"id": "b" "n": 2}}\n{json.dumps(C)}\n')
    items = iter(read_json_file(path, where="--validation_file f.jsonl"))
    assert next(items)[1] == A
    with pytest.raises(InputError) as error:
        next(items)
    assert str(error.value) == (
        "--validation_file f.jsonl, line 3: not valid JSON (Expecting ',' delimiter at column 12); fix or remove it "
        "(JSON lines hold one JSON object per line)"
    )


def test_a_bad_first_line_is_named_as_line_one(tmp_path):
    path = write(tmp_path / "f.jsonl", f'{{"id": "a",}}\n{json.dumps(B)}\n')
    with pytest.raises(InputError, match=r"f\.jsonl, line 1: not valid JSON \(Expecting property name"):
        list(read_json_file(path))


def test_a_bad_json_document_names_the_line_and_column_of_the_error(tmp_path):
    text = json.dumps([A, B, C], indent=2).replace('"n": 2', '"n": 2,', 1)
    line = text[: text.index('"n": 2,')].count("\n") + 1
    path = write(tmp_path / "f.json", text)
    with pytest.raises(InputError) as error:
        read_json_file(path, fix="give records")
    assert error.value.where == Location(str(path), "line", line + 1)
    assert str(error.value).startswith(f"{path}, line {line + 1}: not valid JSON (Expecting property name enclosed")
    assert str(error.value).endswith("; give records")


# ----------------------------------------------------------------------------------------------- the error


def test_the_error_prints_where_the_record_the_problem_and_the_fix():
    where = Location("--train_file f.jsonl", "line", 3)
    error = InputError("'y_str' must be a list", where, record="Open Entity record", record_id="oe-1", fix="add it")
    assert str(error) == "--train_file f.jsonl, line 3: Open Entity record 'oe-1': 'y_str' must be a list; add it"
    assert isinstance(error, ValueError)
    assert (error.where.number, error.record_id, error.problem, error.fix) == (
        3,
        "oe-1",
        "'y_str' must be a list",
        "add it",
    )
    assert str(InputError("no id", "f.json, item 2", record="TACRED record")) == "f.json, item 2: TACRED record: no id"
    assert str(InputError("'id' is 3", record="FEVER claim", record_id=3)) == "FEVER claim 3: 'id' is 3"
    assert str(Location("f.json", "item", 2, "data")) == "f.json, item 2 of 'data'"


def test_the_error_survives_pickling_with_its_parts():
    error = InputError("bad", Location("f.jsonl", "line", 2), record="WikiHop record", record_id="WH_1", fix="fix it")
    copy = pickle.loads(pickle.dumps(error))
    assert (
        type(copy) is InputError and str(copy) == str(error) == "f.jsonl, line 2: WikiHop record 'WH_1': bad; fix it"
    )
    assert (copy.where, copy.record, copy.record_id, copy.fix) == (error.where, "WikiHop record", "WH_1", "fix it")


# ----------------------------------------------------------------------------------------------- every reader


def _hotpot(question_id: str) -> dict:
    return {
        "_id": question_id,
        "question": "Where is the tower?",
        "answer": "Paris",
        "supporting_facts": [["Tower", 0]],
        "context": [["Tower", ["The tower is in Paris, café."]]],
    }


def _lines(*records: dict) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def _tacred(record_id: str, token: str) -> dict:
    return {"id": record_id, "token": ["Alice", token], "subj_start": 0, "subj_end": 0, "obj_start": 1,
            "obj_end": 1, "subj_type": "PERSON", "obj_type": "CITY", "relation": "per:city"}  # fmt: skip


# (file name, a valid file whose second record holds "é", its reader giving something comparable)
READERS = {
    "record": (
        "r.jsonl",
        _lines(
            {"id": "q1", "passage": "Alice met Bob.", "query": "@placeholder met Bob."},
            {"id": "q2", "passage": "Bob met café Alice.", "query": "@placeholder met Alice."},
        ),  # fmt: skip
        lambda path: check_record_file(path).locations,
    ),
    "wikihop": (
        "w.json",
        json.dumps(
            [
                {
                    "id": f"WH{i}",
                    "query": "country x",
                    "supports": [f"x is in France {text}."],
                    "candidates": ["france", "spain"],
                    "answer": "france",
                }
                for i, text in enumerate(["", "café"])
            ],
            ensure_ascii=False,
            indent=1,
        ),  # fmt: skip
        lambda path: [(e.example_id, e.source.rsplit(", ", 1)[1]) for e in load_wikihop_file(path)],
    ),
    "hotpotqa": (
        "h.json",
        json.dumps([_hotpot("q1"), _hotpot("q2")], ensure_ascii=False, indent=1),
        lambda path: [(row["id"], row["location"].rsplit(", ", 1)[1]) for row in read_hotpot_file(path)],
    ),
    "fever": (
        "f.jsonl",
        _lines(
            {"id": 1, "claim": "Paris is big.", "label": "NOT ENOUGH INFO", "evidence": []},
            {"id": 2, "claim": "Paris has a café.", "label": "NOT ENOUGH INFO", "evidence": []},
        ),  # fmt: skip
        lambda path: [(claim["id"], claim["location"].rsplit(", ", 1)[1]) for claim in read_fever_claims(path)],
    ),
    "open_entity": (
        "oe.json",
        _lines(
            *[
                {
                    "annot_id": f"oe-{i}",
                    "left_context_token": ["a"],
                    "mention_span": f"the {text}",
                    "right_context_token": [],
                    "y_str": ["place"],
                }
                for i, text in enumerate(["bar", "café"])
            ]
        ),  # fmt: skip
        lambda path: [(e.id, e.tokens) for e in read_open_entity_file(path)],
    ),
    "tacred": (
        "t.json",
        json.dumps([_tacred("t1", "Paris"), _tacred("t2", "café")], ensure_ascii=False, indent=1),
        lambda path: [(e.id, e.tokens, e.head, e.tail) for e in read_tacred_file(path)],
    ),
    "conll": (
        "c.txt",
        "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\ncafé NN I-NP O\n",
        lambda path: [(e.id, e.tokens, e.spans) for e in read_conll_file(path)],
    ),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_reader_reads_a_file_with_a_bom_as_without(tmp_path, name):
    filename, text, read = READERS[name]
    (tmp_path / "bom").mkdir()
    plain = read(write(tmp_path / filename, text))
    assert plain and read(write(tmp_path / "bom" / filename, text, bom=True)) == plain


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_reader_names_the_line_of_a_byte_that_is_not_utf8(tmp_path, name):
    filename, text, read = READERS[name]
    path = tmp_path / filename
    path.write_bytes(text.encode("latin-1"))
    line = text[: text.index("é")].count("\n") + 1
    with pytest.raises(
        InputError, match=rf"^{path}, line {line}: not UTF-8 \(byte 0xe9 .*; re-save the file as UTF-8"
    ):
        read(path)


@pytest.mark.parametrize("name", sorted(set(READERS) - {"conll"}))
def test_every_json_reader_refuses_an_empty_file(tmp_path, name):
    filename, _, read = READERS[name]
    with pytest.raises(InputError, match=rf"{tmp_path / filename}: the file is empty; give"):
        read(write(tmp_path / filename, "\n", bom=True))


def test_a_conll_file_with_a_bom_gets_no_docstart_sentence(tmp_path):
    path = write(tmp_path / "c.txt", "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\n", bom=True)
    assert [e.tokens for e in read_conll_file(path)] == [["EU"]]


def test_entity_records_of_a_json_list_are_named_by_item_from_one(tmp_path):
    good = {
        "annot_id": "oe-1",
        "left_context_token": [],
        "mention_span": "x",
        "right_context_token": [],
        "y_str": ["t"],
    }
    path = write(tmp_path / "oe.json", json.dumps([{**good, "y_str": []}, good]))
    with pytest.raises(InputError, match=rf"^{path}, item 1: Open Entity record 'oe-1': field 'y_str' must be"):
        read_open_entity_file(path)
    unnamed = write(tmp_path / "ok.json", json.dumps([good, {**good, "annot_id": None}]))
    assert [e.id for e in read_open_entity_file(unnamed)] == ["oe-1", "2"]  # an id-less record: its item number

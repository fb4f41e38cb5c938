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
"""The synthetic multi-hop cloze generator: answers reachable only through the intended hop, valid ReCoRD spans."""

from __future__ import annotations

import re

import pytest

from gesa.records_gesa import check_example, check_record_file, to_record_examples
from gesa.synthetic_gesa import PEOPLE, generate_records, hop_count, write_jsonl


def sentences_of(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=\.) ", text) if s]


def names_in(sentence: str) -> set[str]:
    return {name for name in PEOPLE if re.search(rf"\b{name}\b", sentence)}


def query_name(query: str) -> str:
    (name,) = names_in(query)
    return name


def hop_distance(text: str, start: str, answer: str) -> int:
    """Fewest sentences linked by shared person names from a sentence naming `start` to one naming `answer`."""
    sentences = sentences_of(text)
    frontier = {i for i, s in enumerate(sentences) if start in names_in(s)}
    seen = set(frontier)
    for hops in range(1, len(sentences) + 1):
        if any(answer in sentences[i] for i in frontier):
            return hops
        names = set().union(*(names_in(sentences[i]) for i in frontier))
        frontier = {i for i, s in enumerate(sentences) if names_in(s) & names} - seen
        seen |= frontier
    return 0


@pytest.mark.parametrize("hops", [1, 2, 3])
@pytest.mark.parametrize("distractors", [0, 3])
def test_answer_is_reached_only_through_the_intended_number_of_hops(hops, distractors):
    for record in generate_records(30, hops=(hops,), seed=hops, distractors=distractors):
        (qa,) = record["qas"]
        text, answer = record["passage"]["text"], qa["answers"][0]["text"]
        name = query_name(qa["query"])
        assert hop_count(qa["id"]) == hops
        assert hop_distance(text, name, answer) == hops
        named = [s for s in sentences_of(text) if name in names_in(s)]
        if hops == 1:
            assert any(answer in s for s in named)  # the control: answer next to the query's name
        else:
            assert not any(answer in s for s in named)  # never in a sentence with the query's name


def test_answers_are_every_mention_of_the_answer_and_every_mention_is_a_candidate():
    for record in generate_records(20, hops=(1, 2, 3), seed=1, distractors=2):
        text = record["passage"]["text"]
        spans = {(e["start"], e["end"]) for e in record["passage"]["entities"]}
        (qa,) = record["qas"]
        answer = qa["answers"][0]["text"]
        assert {(a["start"], a["end"]) for a in qa["answers"]} == {
            (m.start(), m.end() - 1) for m in re.finditer(re.escape(answer), text)
        }
        assert all(text[a["start"] : a["end"] + 1] == a["text"] for a in qa["answers"])
        people = sum(len(re.findall(rf"\b{n}\b", text)) for n in PEOPLE)
        assert len(spans) == people + text.count(" in ") + text.count(" visited ")


def test_records_pass_the_record_reader(tmp_path):
    records = generate_records(12, hops=(1, 2, 3), seed=3, distractors=1)
    path = write_jsonl(records, tmp_path / "synthetic.jsonl")
    checked = check_record_file(path)
    assert checked is not None
    examples = to_record_examples(records)
    assert len(examples) == 12
    for example in examples:
        check_example(example)
        assert example.answers and len(example.entity_spans) >= 8


def test_same_seed_same_records_other_seed_other_records():
    assert generate_records(10, seed=5) == generate_records(10, seed=5)
    assert generate_records(10, seed=5) != generate_records(10, seed=6)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="hops=4"):
        generate_records(1, hops=(4,))
    with pytest.raises(ValueError, match="no '-h<hops>' suffix"):
        hop_count("record-17")

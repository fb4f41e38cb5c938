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
from gesa.training.synthetic_cloze import (
    CITIES,
    HOP_TEMPLATES,
    PEOPLE,
    WORLDS,
    generate_records,
    hop_count,
    write_jsonl,
)


def sentences_of(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=\.) ", text) if s]


def names_in(sentence: str, people: tuple[str, ...] = tuple(PEOPLE)) -> set[str]:
    return {name for name in people if re.search(rf"\b{name}\b", sentence)}


def query_name(query: str, people: tuple[str, ...] = tuple(PEOPLE)) -> str:
    (name,) = names_in(query, people)
    return name


def hop_distance(text: str, start: str, answer: str, people: tuple[str, ...] = tuple(PEOPLE)) -> int:
    """Fewest sentences linked by shared person names from a sentence naming `start` to one naming `answer`."""
    sentences = sentences_of(text)
    frontier = {i for i, s in enumerate(sentences) if start in names_in(s, people)}
    seen = set(frontier)
    for hops in range(1, len(sentences) + 1):
        if any(answer in sentences[i] for i in frontier):
            return hops
        names = set().union(*(names_in(sentences[i], people) for i in frontier))
        frontier = {i for i, s in enumerate(sentences) if names_in(s, people) & names} - seen
        seen |= frontier
    return 0


@pytest.mark.parametrize("world", sorted(WORLDS))
@pytest.mark.parametrize("hops", [1, 2, 3])
@pytest.mark.parametrize("distractors", [0, 3])
def test_answer_is_reached_only_through_the_intended_number_of_hops(world, hops, distractors):
    people = WORLDS[world].people
    for record in generate_records(30, hops=(hops,), seed=hops, distractors=distractors, world=world):
        (qa,) = record["qas"]
        text, answer = record["passage"]["text"], qa["answers"][0]["text"]
        name = query_name(qa["query"], people)
        assert hop_count(qa["id"]) == hops
        assert hop_distance(text, name, answer, people) == hops
        named = [s for s in sentences_of(text) if name in names_in(s, people)]
        if hops == 1:
            assert any(answer in s for s in named)  # the control: answer next to the query's name
        else:
            assert not any(answer in s for s in named)  # never in a sentence with the query's name


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_answers_are_every_mention_of_the_answer_and_every_mention_is_a_candidate(world):
    people, places = WORLDS[world].people, WORLDS[world].places
    for record in generate_records(20, hops=(1, 2, 3), seed=1, distractors=2, world=world):
        text = record["passage"]["text"]
        spans = {(e["start"], e["end"]) for e in record["passage"]["entities"]}
        (qa,) = record["qas"]
        answer = qa["answers"][0]["text"]
        assert {(a["start"], a["end"]) for a in qa["answers"]} == {
            (m.start(), m.end() - 1) for m in re.finditer(re.escape(answer), text)
        }
        assert all(text[a["start"] : a["end"] + 1] == a["text"] for a in qa["answers"])
        mentions = {(m.start(), m.end() - 1) for name in (*people, *places) for m in re.finditer(rf"\b{name}\b", text)}
        assert spans == mentions


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_no_name_or_place_holds_another(world):
    """Answers are every mention of a string: a name inside another would make a mention ambiguous."""
    strings = [*WORLDS[world].people, *WORLDS[world].places]
    assert len(set(strings)) == len(strings)
    assert not [(a, b) for a in strings for b in strings if a != b and re.search(rf"\b{a}\b", b)]


def test_the_two_worlds_share_no_name_place_or_sentence():
    cities, harbours = WORLDS["cities"], WORLDS["harbours"]
    assert not set(cities.people) & set(harbours.people) and not set(cities.places) & set(harbours.places)
    words = {world: {w for r in generate_records(50, (1, 2, 3), 0, world=world) for w in r["passage"]["text"].split()}
             for world in WORLDS}  # fmt: skip
    # no template word of the cities world appears in the harbours world's passages
    assert not {"lives", "works", "friend", "visited"} & words["harbours"]


def test_the_cities_world_writes_the_templates_it_always_wrote():
    assert WORLDS["cities"].people == tuple(PEOPLE) and WORLDS["cities"].places == tuple(CITIES)
    record = generate_records(1, hops=(2,), seed=0)[0]
    (qa,) = record["qas"]
    assert qa["query"] == HOP_TEMPLATES[2].format(y=query_name(qa["query"]))
    name, city = "|".join(PEOPLE), "|".join(CITIES)
    written = rf"({name}) lives in ({city})\.|({name}) works with ({name})\."
    assert all(re.fullmatch(written, s) for s in sentences_of(record["passage"]["text"]))


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_records_pass_the_record_reader(tmp_path, world):
    records = generate_records(12, hops=(1, 2, 3), seed=3, distractors=1, world=world)
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
    with pytest.raises(ValueError, match="world='atlantis'.*cities"):
        generate_records(1, world="atlantis")

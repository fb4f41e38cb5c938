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
"""Seeded synthetic entity-cloze tasks in ReCoRD's SuperGLUE format: does a model chain facts through names?

Each passage holds ``pairs`` chains, shuffled sentence by sentence. A *world* (``ClozeWorld``) says which names,
which places and which sentence templates write them; two ship (``WORLDS``):

- ``cities`` (the project's own): ``X lives in CITY.`` (hop 1), ``Y works with X.`` (hop 2), ``Z is a friend of Y.``
  (hop 3), optionally ``W visited CITY.`` distractors (fresh names, cities of the passage); the query asks for the
  city at the end of one chain: ``X lives in @placeholder.`` (one hop, the control), ``The colleague of Y lives in
  @placeholder.`` (two hops: the answer never shares a sentence with ``Y``), ``The colleague of the friend of Z lives
  in @placeholder.`` (three hops);
- ``harbours`` (a second world, for results that must not hold on one generator only): other names, other places
  (several words, some), two phrasings per fact and link (the place first in one of them), queries that do not repeat
  a passage sentence (``@placeholder is where X boarded the ferry.``, ``The cabin mate of Y boarded at
  @placeholder.``).

Every person and place mention is a candidate entity (``passage.entities``, inclusive ``end`` as in SuperGLUE), and
every mention of the answer place is an answer. The hop count is the query id's suffix (``...-h2``, ``hop_count``).

Flat module: imports the standard library only.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PEOPLE = [
    "Adler", "Bexley", "Corran", "Dunmore", "Elwin", "Farrow", "Gaskell", "Hollis", "Ingram", "Jessop", "Kendry",
    "Lomax", "Marlow", "Nesbit", "Orton", "Pryor", "Quill", "Rowan", "Sefton", "Tarrant", "Upton", "Varga",
    "Wexler", "Yardley", "Zeller", "Ashby", "Brandt", "Colby", "Darrow", "Emery", "Fenwick", "Garrick",
]  # fmt: skip
CITIES = [
    "Aldmoor", "Brenvik", "Caldera", "Dunhaven", "Eskerby", "Falkreach", "Glenmarra", "Harrowgate", "Istvale",
    "Jorvik", "Kestrel Bay", "Lindholm", "Marrowdale", "Northwick", "Oakridge", "Port Selden",
]  # fmt: skip
HOP_TEMPLATES = {1: "{x} lives in @placeholder.", 2: "The colleague of {y} lives in @placeholder.",
                 3: "The colleague of the friend of {z} lives in @placeholder."}  # fmt: skip
MAX_HOPS = 3
# the second world's names and places (none shared with the first; some places of several words)
SAILORS = [
    "Amara", "Bastien", "Celestine", "Dorian", "Esme", "Florian", "Greta", "Hugo", "Imogen", "Jasper", "Katja",
    "Leopold", "Mireille", "Nikolai", "Ottilie", "Pascal", "Quentin", "Rosalind", "Sebastian", "Theodora", "Ulrich",
    "Valentina", "Wolfgang", "Ximena", "Yusuf", "Zofia", "Anselm", "Beatrix", "Cyprian", "Delphine", "Evander", "Fenella",
]  # fmt: skip
HARBOURS = [
    "Vell Harbour", "Marisco", "Tollan Reach", "Skerrow", "Isle of Brae", "Cape Ostry", "Lunmouth", "Averil Quay",
    "Saltcombe", "Drummock", "Whitesand", "Korvanger", "Elsby Sound", "Nantmoor", "Greyhaven", "Mull of Tarn",
]  # fmt: skip
# the fields a template fills: a chain's people ({x} hop 1 ... {z} hop 3), a distractor ({w}), the place
PERSON_FIELDS = ("x", "y", "z", "w")
FIELD = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class ClozeWorld:
    """Names, places and sentence templates of one generator. Templates name their fields ``{x}`` (the person of the
    fact), ``{y}`` (who is linked to ``x``), ``{z}`` (linked to ``y``), ``{w}`` (a distractor) and ``{place}``; a
    query template holds ``@placeholder`` and the name it starts from (``{x}``, ``{y}`` or ``{z}``). Where a tuple holds
    several templates, each sentence picks one at random."""

    name: str
    people: tuple[str, ...]
    places: tuple[str, ...]
    facts: tuple[str, ...]  # hop 1: {x} and {place}
    links: tuple[tuple[str, ...], tuple[str, ...]]  # hop 2: {y} and {x}; hop 3: {z} and {y}
    distractors: tuple[str, ...]  # {w} and {place}
    queries: Mapping[int, tuple[str, ...]]  # hop count -> templates with @placeholder

    def pick(self, rng: random.Random, templates: Sequence[str]) -> str:
        """One of ``templates`` (no draw when there is one, so a one-phrasing world's records never change)."""
        return templates[0] if len(templates) == 1 else templates[rng.randrange(len(templates))]


WORLDS: dict[str, ClozeWorld] = {
    "cities": ClozeWorld(
        name="cities",
        people=tuple(PEOPLE),
        places=tuple(CITIES),
        facts=("{x} lives in {place}.",),
        links=(("{y} works with {x}.",), ("{z} is a friend of {y}.",)),
        distractors=("{w} visited {place}.",),
        queries={
            hop: (template.replace("{y}", "{x}").replace("{z}", "{x}"),) for hop, template in HOP_TEMPLATES.items()
        },
    ),
    "harbours": ClozeWorld(
        name="harbours",
        people=tuple(SAILORS),
        places=tuple(HARBOURS),
        facts=("{x} boarded the ferry at {place}.", "At {place}, {x} signed on as a deckhand."),
        links=(
            ("{y} shared a cabin with {x}.", "{x} and {y} were cabin mates."),
            ("{z} is the cousin of {y}.", "{y} wrote letters to {z}."),
        ),
        distractors=("{w} once painted {place}.",),
        queries={
            1: ("@placeholder is where {x} boarded the ferry.", "The ferry of {x} left from @placeholder."),
            2: ("The cabin mate of {x} boarded at @placeholder.",),
            3: ("The cabin mate of the cousin of {x} boarded at @placeholder.",),
        },
    ),
}


def hop_count(query_id: str) -> int:
    """The hop count a generated query id ends with (``synth-...-h2`` -> 2)."""
    match = re.search(r"-h(\d+)$", query_id)
    if match is None:
        raise ValueError(f"query id {query_id!r} was not written by training.synthetic_cloze (no '-h<hops>' suffix)")
    return int(match.group(1))


def world_named(world: str | ClozeWorld) -> ClozeWorld:
    """A ``ClozeWorld`` itself, or the one ``WORLDS`` holds under that name."""
    if isinstance(world, ClozeWorld):
        return world
    if world not in WORLDS:
        raise ValueError(f"world={world!r}: choose one of {sorted(WORLDS)}")
    return WORLDS[world]


def fill(template: str, values: Mapping[str, str]) -> list[str | tuple[str, str]]:
    """A template's text as parts: plain strings and ``(surface, kind)`` entity mentions (``person`` or ``place``)."""
    parts: list[str | tuple[str, str]] = []
    for index, piece in enumerate(FIELD.split(template)):
        if index % 2 == 0:
            if piece:
                parts.append(piece)
        else:
            parts.append((values[piece], "person" if piece in PERSON_FIELDS else "place"))
    return parts


def make_record(
    rng: random.Random,
    index: int,
    hops: int,
    pairs: int = 4,
    distractors: int = 0,
    prefix: str = "synth",
    world: str | ClozeWorld = "cities",
) -> dict[str, Any]:
    """One SuperGLUE ReCoRD record (passage + one query) whose answer is ``hops`` sentences away from the query."""
    world = world_named(world)
    if hops not in world.queries:
        raise ValueError(f"hops={hops}: the generator writes 1, 2 or 3 hops")
    if not 1 <= pairs <= len(world.places):
        raise ValueError(f"pairs={pairs}: give 1..{len(world.places)} chains per passage")
    people_needed = pairs * hops + distractors
    if people_needed > len(world.people):
        raise ValueError(f"pairs={pairs}, hops={hops}, distractors={distractors} need {people_needed} names")
    names = rng.sample(world.people, people_needed)
    places = rng.sample(world.places, pairs)
    chains = [names[i * hops : (i + 1) * hops] for i in range(pairs)]  # [x, y, z] per chain
    sentences = []
    for chain, place in zip(chains, places, strict=True):
        sentences.append(fill(world.pick(rng, world.facts), {"x": chain[0], "place": place}))
        if hops >= 2:
            sentences.append(fill(world.pick(rng, world.links[0]), {"x": chain[0], "y": chain[1]}))
        if hops >= 3:
            sentences.append(fill(world.pick(rng, world.links[1]), {"y": chain[1], "z": chain[2]}))
    for name in names[pairs * hops :]:
        sentences.append(fill(world.pick(rng, world.distractors), {"w": name, "place": rng.choice(places)}))
    rng.shuffle(sentences)
    target = rng.randrange(pairs)
    answer = places[target]
    text, entities, answers = "", [], []
    for sentence in sentences:
        if text:
            text += " "
        for part in sentence:
            if isinstance(part, str):
                text += part
                continue
            surface, _ = part
            start, end = len(text), len(text) + len(surface) - 1  # inclusive end (SuperGLUE)
            entities.append({"start": start, "end": end})
            if surface == answer:
                answers.append({"start": start, "end": end, "text": surface})
            text += surface
    query = world.pick(rng, world.queries[hops]).format(x=chains[target][hops - 1])
    query_id = f"{prefix}-{index}-h{hops}"
    return {
        "idx": index,
        "passage": {"text": text, "entities": entities},
        "qas": [{"idx": 0, "id": query_id, "query": query, "answers": answers}],
    }


def generate_records(
    count: int,
    hops: Sequence[int] = (1, 2),
    seed: int = 0,
    pairs: int = 4,
    distractors: int = 0,
    prefix: str = "synth",
    world: str | ClozeWorld = "cities",
) -> list[dict[str, Any]]:
    """``count`` records of ``world``, the hop counts cycling through ``hops``; the same seed gives the same records."""
    if count < 0:
        raise ValueError(f"count={count} must be >= 0")
    if not hops:
        raise ValueError("hops is empty: give at least one of 1, 2, 3")
    world = world_named(world)
    rng = random.Random(seed)
    return [
        make_record(rng, index, hops[index % len(hops)], pairs, distractors, prefix, world) for index in range(count)
    ]


def write_jsonl(records: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write records one per line (the SuperGLUE ReCoRD ``.jsonl`` layout ``records_gesa`` reads)."""
    path = Path(path)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


__all__ = [
    "CITIES",
    "HOP_TEMPLATES",
    "PEOPLE",
    "WORLDS",
    "ClozeWorld",
    "generate_records",
    "hop_count",
    "make_record",
    "world_named",
    "write_jsonl",
]

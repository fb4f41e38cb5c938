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

Each passage holds ``pairs`` chains, shuffled sentence by sentence:

- ``X lives in CITY.`` (hop 1), ``Y works with X.`` (hop 2), ``Z is a friend of Y.`` (hop 3), optionally
  ``W visited CITY.`` distractors (fresh names, cities of the passage);
- the query asks for the city at the end of one chain: ``X lives in @placeholder.`` (one hop, the control),
  ``The colleague of Y lives in @placeholder.`` (two hops: the answer never shares a sentence with ``Y``),
  ``The colleague of the friend of Z lives in @placeholder.`` (three hops).

Every person and city mention is a candidate entity (``passage.entities``, inclusive ``end`` as in SuperGLUE), and
every mention of the answer city is an answer. The hop count is the query id's suffix (``...-h2``, ``hop_count``).

Flat module: imports the standard library only.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
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


def hop_count(query_id: str) -> int:
    """The hop count a generated query id ends with (``synth-...-h2`` -> 2)."""
    match = re.search(r"-h(\d+)$", query_id)
    if match is None:
        raise ValueError(f"query id {query_id!r} was not written by synthetic_gesa (no '-h<hops>' suffix)")
    return int(match.group(1))


def make_record(
    rng: random.Random, index: int, hops: int, pairs: int = 4, distractors: int = 0, prefix: str = "synth"
) -> dict[str, Any]:
    """One SuperGLUE ReCoRD record (passage + one query) whose answer is ``hops`` sentences away from the query."""
    if hops not in HOP_TEMPLATES:
        raise ValueError(f"hops={hops}: the generator writes 1, 2 or 3 hops")
    if not 1 <= pairs <= len(CITIES):
        raise ValueError(f"pairs={pairs}: give 1..{len(CITIES)} chains per passage")
    people_needed = pairs * hops + distractors
    if people_needed > len(PEOPLE):
        raise ValueError(f"pairs={pairs}, hops={hops}, distractors={distractors} need {people_needed} names")
    names = rng.sample(PEOPLE, people_needed)
    cities = rng.sample(CITIES, pairs)
    chains = [names[i * hops : (i + 1) * hops] for i in range(pairs)]  # [x, y, z] per chain
    sentences = []
    for chain, city in zip(chains, cities, strict=True):
        sentences.append([(chain[0], "person"), " lives in ", (city, "city"), "."])
        if hops >= 2:
            sentences.append([(chain[1], "person"), " works with ", (chain[0], "person"), "."])
        if hops >= 3:
            sentences.append([(chain[2], "person"), " is a friend of ", (chain[1], "person"), "."])
    for name in names[pairs * hops :]:
        sentences.append([(name, "person"), " visited ", (rng.choice(cities), "city"), "."])
    rng.shuffle(sentences)
    target = rng.randrange(pairs)
    answer = cities[target]
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
    head = chains[target][hops - 1]
    query = HOP_TEMPLATES[hops].format(x=head, y=head, z=head)
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
) -> list[dict[str, Any]]:
    """``count`` records, the hop counts cycling through ``hops``; the same ``seed`` gives the same records."""
    if count < 0:
        raise ValueError(f"count={count} must be >= 0")
    if not hops:
        raise ValueError("hops is empty: give at least one of 1, 2, 3")
    rng = random.Random(seed)
    return [
        make_record(rng, index, hops[index % len(hops)], pairs=pairs, distractors=distractors, prefix=prefix)
        for index in range(count)
    ]


def write_jsonl(records: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write records one per line (the SuperGLUE ReCoRD ``.jsonl`` layout ``records_gesa`` reads)."""
    path = Path(path)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


__all__ = ["CITIES", "HOP_TEMPLATES", "PEOPLE", "generate_records", "hop_count", "make_record", "write_jsonl"]

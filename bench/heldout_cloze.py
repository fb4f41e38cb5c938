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
"""A held-out third cloze generator ("studios") in ReCoRD SuperGLUE format, written independently of
gesa.training.synthetic_cloze (no names, places or templates shared with "cities" or "harbours").

World: musicians, the band leader relation, recording studios / towns.
  hop 1 fact : "{x} recorded the new album at {place}." | "The sessions at {place} were produced by {x}." |
               "{x} spent the winter tracking vocals in {place}."
  hop 2 link : "{y} played bass in the band of {x}." | "{x} invited {y} to join the band."
  queries    : 1: "The latest album of {x} was made at @placeholder." | "@placeholder is the studio {x} chose."
               2: "The bandleader of {y} cut the record at @placeholder." |
                  "@placeholder hosted the sessions of the bandleader of {y}."
Each passage has 4 chains (4 distinct places = candidates among which the answer is; chance 25 EM), sentences shuffled.
Every musician and place mention is an entity (inclusive end); every mention of the answer place is an answer.
Query ids end in -h<N> and each query carries a "hops" field.

Usage: python bench/heldout_cloze.py OUT_DIR [--train 2000] [--dev 200] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

MUSICIANS = [
    "Abernathy",
    "Blackwood",
    "Castellano",
    "Delacroix",
    "Esposito",
    "Fairbanks",
    "Gallagher",
    "Halvorsen",
    "Iglesias",
    "Jankowski",
    "Kowalczyk",
    "Lindqvist",
    "Montague",
    "Nakamura",
    "Oyelaran",
    "Petrakis",
    "Quintero",
    "Rasmussen",
    "Santoro",
    "Thibodeaux",
    "Vasquez",
    "Whitfield",
    "Yamamoto",
    "Zamora",
    "Achebe",
    "Bergstrom",
    "Cavanagh",
    "Donnelly",
    "Okafor",
    "Fontaine",
    "Grimaldi",
    "Mbeki",
]
PLACES = [
    "Copperfield Studios",
    "Larkspur Hall",
    "Mossley Mill",
    "Riverbend",
    "Blue Cedar Room",
    "Quarry Lane",
    "Tinwhistle Barn",
    "Redhollow",
    "Glasswater",
    "Pennington Yard",
    "Starling House",
    "Ambergate",
    "Velvet Attic",
    "Cobalt Works",
    "Foxley Chapel",
    "Marsh End",
]
FACTS = [
    "{x} recorded the new album at {place}.",
    "The sessions at {place} were produced by {x}.",
    "{x} spent the winter tracking vocals in {place}.",
]
LINKS = [
    "{y} played bass in the band of {x}.",
    "{x} invited {y} to join the band.",
]
QUERIES = {
    1: ["The latest album of {x} was made at @placeholder.", "@placeholder is the studio {x} chose."],
    2: [
        "The bandleader of {y} cut the record at @placeholder.",
        "@placeholder hosted the sessions of the bandleader of {y}.",
    ],
}
FIELD = re.compile(r"\{(\w+)\}")


def parts(template: str, values: dict[str, str]) -> list:
    out = []
    for i, piece in enumerate(FIELD.split(template)):
        if i % 2 == 0:
            if piece:
                out.append(piece)
        else:
            out.append((values[piece],))
    return out


def record(rng: random.Random, index: int, hops: int, prefix: str, pairs: int = 4) -> dict:
    names = rng.sample(MUSICIANS, pairs * hops)
    places = rng.sample(PLACES, pairs)
    chains = [names[i * hops : (i + 1) * hops] for i in range(pairs)]
    sentences = []
    for chain, place in zip(chains, places, strict=True):
        sentences.append(parts(rng.choice(FACTS), {"x": chain[0], "place": place}))
        if hops == 2:
            sentences.append(parts(rng.choice(LINKS), {"x": chain[0], "y": chain[1]}))
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
            surface = part[0]
            start, end = len(text), len(text) + len(surface) - 1
            entities.append({"start": start, "end": end})
            if surface == answer:
                answers.append({"start": start, "end": end, "text": surface})
            text += surface
    query = rng.choice(QUERIES[hops]).format(x=chains[target][0], y=chains[target][-1])
    return {
        "idx": index,
        "passage": {"text": text, "entities": entities},
        "qas": [{"idx": 0, "id": f"{prefix}-{index}-h{hops}", "query": query, "answers": answers, "hops": hops}],
    }


def generate(count: int, seed: int, prefix: str) -> list[dict]:
    rng = random.Random(seed)
    return [record(rng, i, 1 + i % 2, prefix) for i in range(count)]


def check(records: list[dict]) -> None:
    everything = MUSICIANS + PLACES
    for a in everything:
        for b in everything:
            assert a == b or a not in b, (a, b)
    for r in records:
        text = r["passage"]["text"]
        for e in r["passage"]["entities"]:
            assert text[e["start"] : e["end"] + 1] in everything
        for qa in r["qas"]:
            assert qa["answers"] and all(text[a["start"] : a["end"] + 1] == a["text"] for a in qa["answers"])
            names = [n for n in MUSICIANS if n in qa["query"]]
            assert len(names) == 1
            if qa["hops"] == 2:  # the answer never shares a sentence with the query's name
                for s in re.split(r"(?<=\.) ", text):
                    assert not (names[0] in s and qa["answers"][0]["text"] in s), s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--dev", type=int, default=200)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    train = generate(a.train, a.seed, "studio-train")
    dev = generate(a.dev, a.seed + 1000, "studio-dev")
    check(train)
    check(dev)

    def write(rs: list[dict], name: str) -> None:
        (out / name).write_text("".join(json.dumps(r) + "\n" for r in rs), encoding="utf-8")

    write(train, "train.jsonl")
    write(dev, "dev.jsonl")
    write([r for r in dev if r["qas"][0]["hops"] == 1], "dev_1hop.jsonl")
    write([r for r in dev if r["qas"][0]["hops"] == 2], "dev_2hop.jsonl")
    print(f"wrote {len(train)} train, {len(dev)} dev records to {out}")


if __name__ == "__main__":
    main()

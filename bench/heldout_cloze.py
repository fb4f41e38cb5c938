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
"""Held-out cloze generators in ReCoRD SuperGLUE format, written independently of gesa.training.synthetic_cloze (no
names, places or templates shared with "cities" or "harbours", nor with each other): "studios" (the third
generator, docs/diagnostic.md) and "orchards" (the fourth, written for the check on a LUKE checkpoint built the way a
user builds one: bench/user_luke.py).

World: musicians, the band leader relation, recording studios / towns.
  hop 1 fact : "{x} recorded the new album at {place}." | "The sessions at {place} were produced by {x}." |
               "{x} spent the winter tracking vocals in {place}."
  hop 2 link : "{y} played bass in the band of {x}." | "{x} invited {y} to join the band."
  queries    : 1: "The latest album of {x} was made at @placeholder." | "@placeholder is the studio {x} chose."
               2: "The bandleader of {y} cut the record at @placeholder." |
                  "@placeholder hosted the sessions of the bandleader of {y}."
World "orchards": growers, their apprentices, orchards.
  hop 1 fact : "{x} planted pear trees at {place}." | "Every spring {x} prunes the old trees of {place}." |
               "The cider of {place} is pressed by {x}." | "{x} keeps bees among the rows at {place}."
  hop 2 link : "{y} learned grafting from {x}." | "{x} took on {y} as an apprentice." | "{y} was taught by {x} for years."
  filler     : one sentence without entities per passage ("A late frost worried everyone that year.", ...)
  queries    : 1: "The fruit of {x} comes from @placeholder." | "@placeholder is the orchard tended by {x}." |
                  "Ask at @placeholder if you want to meet {x}."
               2: "The teacher of {y} grows fruit at @placeholder." | "@placeholder is where the mentor of {y} works." |
                  "The master of {y} harvests at @placeholder."
Each passage has 4 chains (4 distinct places = candidates among which the answer is; chance 25 EM), sentences shuffled.
Every person and place mention is an entity (inclusive end); every mention of the answer place is an answer.
Query ids end in -h<N> and each query carries a "hops" field. Training queries alternate one and two hops; the dev
queries too (studios), or --dev one-hop then --dev two-hop queries (orchards).

Usage: python bench/heldout_cloze.py OUT_DIR [--world studios|orchards] [--train N] [--dev N] [--seed S]
(defaults per world: studios 2000 / 200 / 7, orchards 3000 / 200 / 11)
"""

from __future__ import annotations

import argparse
import json
import random
import re
from dataclasses import dataclass
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
GROWERS = [
    "Ambrose",
    "Benedikt",
    "Clementine",
    "Desmond",
    "Eugenia",
    "Fitzgerald",
    "Gwendolyn",
    "Horatio",
    "Isadora",
    "Jeremiah",
    "Kasimir",
    "Lavinia",
    "Maximilian",
    "Nathaniel",
    "Octavia",
    "Percival",
    "Ramona",
    "Solomon",
    "Tabitha",
    "Ursula",
    "Vivienne",
    "Wilhelmina",
    "Xavier",
    "Yolanda",
    "Zebulon",
    "Augustin",
    "Bernadette",
    "Cornelius",
    "Dorothea",
    "Ezekiel",
    "Florentina",
    "Gideon",
]
ORCHARDS = [
    "Hazelwick",
    "Pomona Vale",
    "Crabtree Hollow",
    "Damson Ridge",
    "Quincefield",
    "Appleby Downs",
    "Medlar Cross",
    "Greengage Farm",
    "Pippin Combe",
    "Russet Knoll",
    "Bramley Heath",
    "Wardenfold",
    "Codlin Moor",
    "Sloe Bank",
    "Perrywood",
    "Mirabelle End",
]
FIELD = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class World:
    """One generator: its people, places, templates, filler sentences and defaults."""

    people: list[str]
    places: list[str]
    facts: list[str]
    links: list[str]
    queries: dict[int, list[str]]
    fillers: tuple[str, ...]  # one per passage when any (drawn before the shuffle)
    prefix: str
    train: int
    seed: int
    dev_seed_offset: int
    dev_per_hop: bool  # dev: --dev one-hop then --dev two-hop queries; else --dev queries alternating


WORLDS = {
    "studios": World(MUSICIANS, PLACES, FACTS, LINKS, QUERIES, (), "studio", 2000, 7, 1000, False),
    "orchards": World(
        GROWERS,
        ORCHARDS,
        [
            "{x} planted pear trees at {place}.",
            "Every spring {x} prunes the old trees of {place}.",
            "The cider of {place} is pressed by {x}.",
            "{x} keeps bees among the rows at {place}.",
        ],
        ["{y} learned grafting from {x}.", "{x} took on {y} as an apprentice.", "{y} was taught by {x} for years."],
        {
            1: [
                "The fruit of {x} comes from @placeholder.",
                "@placeholder is the orchard tended by {x}.",
                "Ask at @placeholder if you want to meet {x}.",
            ],
            2: [
                "The teacher of {y} grows fruit at @placeholder.",
                "@placeholder is where the mentor of {y} works.",
                "The master of {y} harvests at @placeholder.",
            ],
        },
        (
            "A late frost worried everyone that year.",
            "The harvest fair opened on a rainy Saturday.",
            "Prices for fresh fruit rose again.",
            "Nobody expected such a dry summer.",
        ),
        "orch",
        3000,
        11,
        500,
        True,
    ),
}


def parts(template: str, values: dict[str, str]) -> list:
    out = []
    for i, piece in enumerate(FIELD.split(template)):
        if i % 2 == 0:
            if piece:
                out.append(piece)
        else:
            out.append((values[piece],))
    return out


def record(rng: random.Random, index: int, hops: int, prefix: str, world: World, pairs: int = 4) -> dict:
    names = rng.sample(world.people, pairs * hops)
    places = rng.sample(world.places, pairs)
    chains = [names[i * hops : (i + 1) * hops] for i in range(pairs)]
    sentences = []
    for chain, place in zip(chains, places, strict=True):
        sentences.append(parts(rng.choice(world.facts), {"x": chain[0], "place": place}))
        if hops == 2:
            sentences.append(parts(rng.choice(world.links), {"x": chain[0], "y": chain[1]}))
    if world.fillers:
        sentences.append([rng.choice(world.fillers)])
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
    query = rng.choice(world.queries[hops]).format(x=chains[target][0], y=chains[target][-1])
    return {
        "idx": index,
        "passage": {"text": text, "entities": entities},
        "qas": [{"idx": 0, "id": f"{prefix}-{index}-h{hops}", "query": query, "answers": answers, "hops": hops}],
    }


def generate(count: int, seed: int, prefix: str, world: World) -> list[dict]:
    rng = random.Random(seed)
    return [record(rng, i, 1 + i % 2, prefix, world) for i in range(count)]


def generate_dev(count: int, world: World, seed: int) -> list[dict]:
    """The dev records: `count` queries alternating one and two hops, or (`dev_per_hop`) `count` of each."""
    if not world.dev_per_hop:
        return generate(count, seed + world.dev_seed_offset, f"{world.prefix}-dev", world)
    rng = random.Random(seed + world.dev_seed_offset)
    one = [record(rng, i, 1, f"{world.prefix}-dev", world) for i in range(count)]
    return one + [record(rng, count + i, 2, f"{world.prefix}-dev", world) for i in range(count)]


def check(records: list[dict], world: World) -> None:
    everything = world.people + world.places
    for a in everything:
        for b in everything:
            assert a == b or a not in b, (a, b)
    for r in records:
        text = r["passage"]["text"]
        for e in r["passage"]["entities"]:
            assert text[e["start"] : e["end"] + 1] in everything
        for qa in r["qas"]:
            assert qa["answers"] and all(text[a["start"] : a["end"] + 1] == a["text"] for a in qa["answers"])
            names = [n for n in world.people if n in qa["query"]]
            assert len(names) == 1
            if qa["hops"] == 2:  # the answer never shares a sentence with the query's name
                for s in re.split(r"(?<=\.) ", text):
                    assert not (names[0] in s and qa["answers"][0]["text"] in s), s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--world", choices=sorted(WORLDS), default="studios")
    p.add_argument("--train", type=int, default=None, help="training records (default: the world's)")
    p.add_argument("--dev", type=int, default=200)
    p.add_argument("--seed", type=int, default=None, help="data seed (default: the world's)")
    a = p.parse_args()
    world = WORLDS[a.world]
    seed = world.seed if a.seed is None else a.seed
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    train = generate(world.train if a.train is None else a.train, seed, f"{world.prefix}-train", world)
    dev = generate_dev(a.dev, world, seed)
    check(train, world)
    check(dev, world)

    def write(rs: list[dict], name: str) -> None:
        (out / name).write_text("".join(json.dumps(r) + "\n" for r in rs), encoding="utf-8")

    write(train, "train.jsonl")
    write(dev, "dev.jsonl")
    write([r for r in dev if r["qas"][0]["hops"] == 1], "dev_1hop.jsonl")
    write([r for r in dev if r["qas"][0]["hops"] == 2], "dev_2hop.jsonl")
    print(f"wrote {len(train)} train, {len(dev)} dev records to {out}")


if __name__ == "__main__":
    main()

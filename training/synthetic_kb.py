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
"""Seeded synthetic entity-linking corpora: does KnowBERT-KAR's linker read the context, beyond the alias prior?

A corpus is TACRED JSON (``run_entity_tasks.py --task relation_classification``) plus the KB files the knowledge
flags read, all invented for the project:

- every sentence has a person (the subject, one alias, prior 1) and a place-or-firm name (the object). Each such name
  is an **ambiguous alias** of two KB entities, ``Name (city)`` and ``Name (company)``, one of them the alias table's
  favourite (``prior_high``, default 0.75) and the other the underdog; a third sense, the river ``Name``, is in no KB
  (its gold link is NULL);
- the **context names the right entity**: the sentence says which sense it is (``the city of``, ``the firm``, ``the
  river``, ...), and the relation follows the sense (``per:cities_of_residence``, ``per:employee_of``,
  ``no_relation``);
- the gold sense is drawn per sentence: the underdog for ``prior_wrong_share`` of them (the prior is wrong), NULL for
  ``null_share`` (the prior, which never picks NULL, is wrong too), the favourite otherwise;
- the entity vectors are TransE-like: each entity is its kind's direction plus its own noise (``dim`` wide; a
  person, a city and a company differ by kind), so the linker can tell the senses apart from the context's kind;
- the links file (``--entity_links``) holds the gold of both mentions of every sentence.

``write_linking_corpus`` writes ``train.json``, ``dev.json``, ``aliases.tsv``, ``entities.txt``, ``triples.tsv`` (the
same KB as ``head<TAB>relation<TAB>tail`` facts, for ``examples/train_transe.py``) and ``links.jsonl`` into a folder.

**KB-only typing** (``write_typing_corpus``): does a fact that is only in the KB reach the answer? Open Entity JSON
lines whose mention is an invented name and whose sentence is neutral (the same templates for every type, the names
drawn from one syllable pool): the type is recoverable from the entity's KB neighbours only. Dev entities are never
seen in training, so a model can only type them through their KB vectors. Two generators, written apart:

- ``hubs``: four types, each with three hub entities; every entity is ``related to`` two hubs of its type
  (``TYPING_GENERATORS["hubs"]``);
- ``circles``: five types, each with four anchors; every entity ``lives near`` one anchor of its type and ``knows``
  two other entities of its type, with other relation names, name syllables and templates
  (``TYPING_GENERATORS["circles"]``).

``typing_swap`` gives, per dev entity, an entity of another type (the swap control: the mention's KB entity
replaced).

Flat module: imports the standard library only.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAMES = [
    "Ostrel", "Velkas", "Brenmor", "Tholam", "Quildun", "Nesabo", "Rinsar", "Kasvel", "Dunlake", "Marlow",
    "Acmora", "Ostware", "Pellin", "Saravo", "Tamsin", "Ulvar", "Wendra", "Yorvik", "Zanther", "Corvale",
]  # fmt: skip
PEOPLE = [
    "Ana Velmor", "Bram Kastrel", "Cleo Dunabo", "Dario Rinost", "Edda Lambre", "Femi Sartho", "Goran Quilnes",
    "Hana Morvel", "Ivo Pelter", "Jana Holm", "Kofi Brandt", "Lena Orsk",
]  # fmt: skip
# sense -> (KB suffix or None for the NULL sense, relation, context templates: {p} person, {n} name)
SENSES: dict[str, tuple[str | None, str, list[str]]] = {
    "city": (" (city)", "per:cities_of_residence", [
        "{p} moved to the city of {n} last spring .",
        "{p} lives in {n} , a city on the coast .",
        "{p} was born in {n} , the old harbour town .",
    ]),
    "company": (" (company)", "per:employee_of", [
        "{p} works for the firm {n} in sales .",
        "{p} joined {n} , the software company .",
        "{p} was hired by {n} , a company that makes tools .",
    ]),
    "river": (None, "no_relation", [
        "{p} swam in the river {n} at dawn .",
        "{p} fished in {n} , the cold mountain river .",
    ]),
    "band": (" (band)", "per:member_of", [
        "{p} sings in the band {n} on weekends .",
        "{p} plays drums for {n} , a rock band .",
        "{p} toured with {n} , the band from the north .",
    ]),
}  # fmt: skip
KINDS = ("person", "city", "company")
KB_SENSES = ("city", "company", "band")  # the KB senses a name may have, in the order ``priors`` draws them


def sense_priors(names: list[str], seed: int, priors: tuple[float, ...]) -> dict[str, dict[str, float]]:
    """Per name, each of its ``len(priors)`` KB senses with its prior: the first senses of ``KB_SENSES`` in a seeded
    order per name, the first of them at ``priors[0]`` (the favourite), and so on."""
    if not 2 <= len(priors) <= len(KB_SENSES):
        raise ValueError(f"priors={priors}: give 2 to {len(KB_SENSES)} priors, one per KB sense")
    rng = random.Random(f"priors-{seed}")
    out = {}
    for name in names:
        senses = list(KB_SENSES[: len(priors)])
        rng.shuffle(senses)
        out[name] = dict(zip(senses, priors, strict=True))
    return out


def kb_entity(name: str, sense: str) -> str | None:
    """The KB entity a sense of ``name`` links to (``None``: the river, in no KB: NULL)."""
    suffix = SENSES[sense][0]
    return None if suffix is None else name + suffix


def favourite_senses(names: list[str], seed: int) -> dict[str, str]:
    """Which KB sense (``city`` / ``company``) the alias table favours, per name (half each, seeded)."""
    rng = random.Random(f"favourite-{seed}")
    return {name: ("city", "company")[rng.random() < 0.5] for name in names}


def make_sentence(rng: random.Random, index: int, sense: str, name: str, prefix: str) -> dict[str, Any]:
    """One TACRED row: the person (subject) and ``name`` in the context of ``sense`` (object)."""
    person = rng.choice(PEOPLE)
    template = rng.choice(SENSES[sense][2])
    tokens: list[str] = []
    spans = {}
    for word in template.split():
        if word in ("{p}", "{n}"):
            text = person if word == "{p}" else name
            spans[word] = (len(tokens), len(tokens) + len(text.split()) - 1)  # inclusive, as TACRED
            tokens += text.split()
        else:
            tokens.append(word)
    return {
        "id": f"{prefix}-{index}",
        "relation": SENSES[sense][1],
        "token": tokens,
        "subj_start": spans["{p}"][0],
        "subj_end": spans["{p}"][1],
        "obj_start": spans["{n}"][0],
        "obj_end": spans["{n}"][1],
        "subj_type": "PERSON",
        "obj_type": {"city": "CITY", "company": "ORGANIZATION", "river": "LOCATION", "band": "ORGANIZATION"}[sense],
    }


def generate_sentences(
    count: int,
    seed: int = 0,
    names: int = 12,
    prior_wrong_share: float = 0.3,
    null_share: float = 0.15,
    prefix: str = "link",
    priors: tuple[float, ...] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``count`` TACRED rows and their gold links (``{"id", "links": [[start, end, entity or None], ...]}``, end
    exclusive). Each row's object is the underdog sense with probability ``prior_wrong_share``, the river (NULL) with
    ``null_share``, the favourite otherwise; the same ``seed`` gives the same rows. With ``priors`` (e.g. ``(0.6,
    0.3, 0.1)``: ``sense_priors``) each name has that many KB senses; a prior-wrong row takes one of the non-favourite
    senses in proportion to their priors."""
    if not 0 < names <= len(NAMES):
        raise ValueError(f"names={names}: give 1..{len(NAMES)} ambiguous names")
    if not (0 <= prior_wrong_share and 0 <= null_share and prior_wrong_share + null_share <= 1):
        raise ValueError(f"prior_wrong_share={prior_wrong_share}, null_share={null_share}: shares in [0, 1], sum <= 1")
    chosen = NAMES[:names]
    favourite = favourite_senses(chosen, seed)
    by_name = sense_priors(chosen, seed, priors) if priors is not None else None
    rng = random.Random(f"sentences-{seed}-{prefix}")
    rows, links = [], []
    for index in range(count):
        name = rng.choice(chosen)
        draw = rng.random()
        if by_name is not None:
            senses = list(by_name[name])  # favourite first
            favourite[name] = senses[0]
        if draw < null_share:
            sense = "river"
        elif draw < null_share + prior_wrong_share:
            if by_name is None:
                sense = "company" if favourite[name] == "city" else "city"
            else:  # the other KB senses, in proportion to their priors
                others = senses[1:]
                sense = rng.choices(others, weights=[by_name[name][other] for other in others])[0]
        else:
            sense = favourite[name]
        row = make_sentence(rng, index, sense, name, prefix)
        rows.append(row)
        person = " ".join(row["token"][row["subj_start"] : row["subj_end"] + 1])
        links.append({"id": row["id"], "links": [
            [row["subj_start"], row["subj_end"] + 1, person],
            [row["obj_start"], row["obj_end"] + 1, kb_entity(name, sense)],
        ]})  # fmt: skip
    return rows, links


def alias_table(
    names: list[str], seed: int = 0, prior_high: float = 0.75, priors: tuple[float, ...] | None = None
) -> list[tuple[str, str, float]]:
    """``(alias, entity, prior)`` lines: each name -> its two KB senses (the favourite at ``prior_high``), the
    underdog first, then the same two lines for the name in lower case (as an alias table gathered from anchor texts
    lists case variants; ``processing_kb.MERGE_RULE`` makes them one alias again); each person -> itself at prior 1.
    With ``priors``: each name -> its ``sense_priors`` senses, the least probable first."""
    favourite = favourite_senses(names, seed)
    by_name = sense_priors(names, seed, priors) if priors is not None else None
    lines = []
    for name in names:
        for alias in (name, name.lower()):
            if by_name is not None:
                for sense, prior in reversed(list(by_name[name].items())):
                    lines.append((alias, kb_entity(name, sense), prior))
                continue
            for sense in sorted(("city", "company"), key=lambda sense: sense == favourite[name]):
                prior = prior_high if sense == favourite[name] else round(1 - prior_high, 6)
                lines.append((alias, kb_entity(name, sense), prior))
    return lines + [(person, person, 1.0) for person in PEOPLE]


def entity_vectors(
    names: list[str], dim: int = 16, seed: int = 0, noise: float = 0.5, senses: tuple[str, ...] = ("city", "company")
) -> dict[str, list[float]]:
    """TransE-like vectors: each entity its kind's direction (unit length times ``sqrt(dim)``) plus Gaussian noise
    of std ``noise`` per value (``senses``: the KB senses of every name)."""
    rng = random.Random(f"vectors-{seed}")
    directions = {}
    for kind in (*KINDS, *(sense for sense in senses if sense not in KINDS)):
        raw = [rng.gauss(0, 1) for _ in range(dim)]
        norm = math.sqrt(sum(v * v for v in raw))
        directions[kind] = [v / norm * math.sqrt(dim) for v in raw]
    entities = [(person, "person") for person in PEOPLE]
    entities += [(kb_entity(name, sense), sense) for name in names for sense in senses]
    return {entity: [d + rng.gauss(0, noise) for d in directions[kind]] for entity, kind in entities}


def kb_triples(names: list[str], senses: tuple[str, ...] = ("city", "company")) -> list[tuple[str, str, str]]:
    """The KB as facts (``examples/train_transe.py`` trains TransE vectors from them): every entity's kind, the cities
    and companies of each name, the people's home city and employer (and, with the ``band`` sense, each band's home
    city and a band of each person)."""
    triples = [(person, "instance of", "human") for person in PEOPLE]
    for name in names:
        triples.append((kb_entity(name, "city"), "instance of", "city"))
        triples.append((kb_entity(name, "company"), "instance of", "business"))
        triples.append((kb_entity(name, "company"), "headquarters location", kb_entity(name, "city")))
        if "band" in senses:
            triples.append((kb_entity(name, "band"), "instance of", "musical group"))
            triples.append((kb_entity(name, "band"), "location of formation", kb_entity(name, "city")))
    for index, person in enumerate(PEOPLE):
        triples.append((person, "residence", kb_entity(names[index % len(names)], "city")))
        triples.append((person, "employer", kb_entity(names[(index + 1) % len(names)], "company")))
        if "band" in senses:
            triples.append((person, "member of", kb_entity(names[(index + 2) % len(names)], "band")))
    return triples


def write_linking_corpus(
    directory: str | Path,
    seed: int = 0,
    train_size: int = 400,
    eval_size: int = 200,
    names: int = 12,
    dim: int = 16,
    prior_wrong_share: float = 0.3,
    null_share: float = 0.15,
    prior_high: float = 0.75,
    priors: tuple[float, ...] | None = None,
) -> dict[str, Path]:
    """The corpus and its KB files under ``directory`` (module docstring); returns their paths by role (``train``,
    ``dev``, ``aliases``, ``vectors``, ``triples``, ``links``). ``priors`` (e.g. ``(0.6, 0.3, 0.1)``): that many KB
    senses per name with those priors (``sense_priors``) instead of two at ``prior_high`` / ``1 - prior_high``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    chosen = NAMES[:names]
    paths = {role: directory / name for role, name in (
        ("train", "train.json"), ("dev", "dev.json"), ("aliases", "aliases.tsv"), ("vectors", "entities.txt"),
        ("triples", "triples.tsv"), ("links", "links.jsonl"))}  # fmt: skip
    all_links = []
    for split, count in (("train", train_size), ("dev", eval_size)):
        rows, links = generate_sentences(
            count, seed, names, prior_wrong_share, null_share, prefix=f"{split}{seed}", priors=priors
        )
        paths[split].write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        all_links += links
    paths["links"].write_text("".join(json.dumps(row) + "\n" for row in all_links), encoding="utf-8")
    lines = alias_table(chosen, seed, prior_high, priors)
    senses = KB_SENSES[: len(priors)] if priors is not None else ("city", "company")
    paths["aliases"].write_text(
        "alias\tentity\tprior\n" + "".join(f"{a}\t{e}\t{p}\n" for a, e, p in lines), encoding="utf-8"
    )
    vectors = entity_vectors(chosen, dim, seed, senses=senses)
    text = f"{len(vectors)} {dim}\n" + "".join(
        f"{name}\t" + " ".join(f"{v:.5f}" for v in values) + "\n" for name, values in vectors.items()
    )
    paths["vectors"].write_text(text, encoding="utf-8")
    triples = kb_triples(chosen, senses)
    paths["triples"].write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples), encoding="utf-8")
    return paths


@dataclass(frozen=True)
class TypingGenerator:
    """One KB-only typing generator: its types, name syllables, sentence templates and KB shape."""

    types: tuple[str, ...]
    syllables: tuple[tuple[str, ...], ...]  # one pool per syllable position of a name
    templates: tuple[str, ...]  # neutral: the same for every type; {n} is the mention
    anchors_per_type: int
    anchor_relation: str
    anchors_per_entity: int
    peer_relation: str | None  # links to other entities of the same type (None: none)
    peers_per_entity: int = 0


TYPING_GENERATORS: dict[str, TypingGenerator] = {
    "hubs": TypingGenerator(
        types=("person", "place", "group", "object"),
        syllables=(("Ka", "Lo", "Mi", "Ta", "Ve", "Ru", "So", "De", "Ni", "Fa"),
                   ("ren", "dal", "mik", "sor", "vel", "tan", "lis", "gor", "ban", "pet"),
                   ("a", "o", "is", "en", "ul", "ar")),
        templates=(
            "{n} was mentioned in the report .",
            "the list included {n} again .",
            "we talked about {n} for hours .",
            "nobody expected {n} to appear here .",
            "{n} came up in the meeting .",
            "the article named {n} twice .",
        ),
        anchors_per_type=3, anchor_relation="related to", anchors_per_entity=2, peer_relation=None,
    ),
    "circles": TypingGenerator(
        types=("plant", "vehicle", "song", "island", "tool"),
        syllables=(("Bro", "Ish", "Qua", "Zel", "Hom", "Pry", "Uth", "Wex"),
                   ("mi", "ta", "ko", "re", "su", "ny", "la"),
                   ("th", "nd", "x", "rk", "ll", "sh")),
        templates=(
            "yesterday someone wrote about {n} .",
            "i saw {n} on the old photo .",
            "{n} is on page four .",
            "they kept asking about {n} .",
        ),
        anchors_per_type=4, anchor_relation="lives near", anchors_per_entity=1, peer_relation="knows",
        peers_per_entity=2,
    ),
}  # fmt: skip


def typing_names(generator: TypingGenerator, count: int, seed: int) -> list[str]:
    """``count`` distinct invented names from the generator's syllables (seeded; no syllable tells a type)."""
    rng = random.Random(f"typing-names-{seed}")
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        name = "".join(rng.choice(pool) for pool in generator.syllables)
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def typing_kb(
    generator_name: str = "hubs", per_type: int = 40, seed: int = 0
) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """The KB of a typing corpus: entity -> type (the mentionable entities, ``per_type`` of each type) and its
    triples (``head, relation, tail``), the type recoverable from each entity's neighbours only."""
    generator = TYPING_GENERATORS[generator_name]
    rng = random.Random(f"typing-kb-{generator_name}-{seed}")
    names = typing_names(generator, per_type * len(generator.types), seed)
    rng.shuffle(names)
    types = {name: generator.types[index % len(generator.types)] for index, name in enumerate(names)}
    triples: list[tuple[str, str, str]] = []
    anchors = {kind: [f"Anchor {t}-{i}" for i in range(generator.anchors_per_type)]
               for t, kind in enumerate(generator.types)}  # fmt: skip
    members: dict[str, list[str]] = {kind: [] for kind in generator.types}
    for name, kind in types.items():
        members[kind].append(name)
    for name, kind in types.items():
        for anchor in rng.sample(anchors[kind], generator.anchors_per_entity):
            triples.append((name, generator.anchor_relation, anchor))
        if generator.peer_relation is not None:
            peers = [other for other in members[kind] if other != name]
            for peer in rng.sample(peers, generator.peers_per_entity):
                triples.append((name, generator.peer_relation, peer))
    return types, triples


def typing_rows(
    generator_name: str, entities: list[str], types: dict[str, str], per_entity: int, seed: int, prefix: str
) -> list[dict[str, Any]]:
    """Open Entity rows: ``per_entity`` neutral sentences per entity (``y_str``: its one type)."""
    generator = TYPING_GENERATORS[generator_name]
    rng = random.Random(f"typing-rows-{generator_name}-{seed}-{prefix}")
    rows = []
    for entity in entities:
        for template in rng.sample(generator.templates, per_entity):
            left, _, right = template.partition("{n}")
            rows.append({"annot_id": f"{prefix}-{len(rows)}", "left_context_token": left.split(),
                         "mention_span": entity, "right_context_token": right.split(), "y_str": [types[entity]]})  # fmt: skip
    rng.shuffle(rows)
    return rows


def typing_swap(types: dict[str, str], entities: list[str], seed: int = 0) -> dict[str, str]:
    """The swap control: each of ``entities`` -> an entity of another type (seeded), for the KB row its mention
    reads."""
    rng = random.Random(f"typing-swap-{seed}")
    return {entity: rng.choice([other for other, kind in types.items() if kind != types[entity]])
            for entity in entities}  # fmt: skip


def write_typing_corpus(
    directory: str | Path,
    generator: str = "hubs",
    seed: int = 0,
    per_type: int = 40,
    dev_per_type: int = 10,
    train_sentences: int = 2,
    dev_sentences: int = 3,
) -> dict[str, Path]:
    """A KB-only typing corpus under ``directory`` (module docstring): ``train.json`` / ``dev.json`` (Open Entity JSON
    lines; the dev entities, ``dev_per_type`` of each type, are in no training sentence), ``aliases.tsv`` (every
    entity its own alias, prior 1), ``triples.tsv`` (the KB for ``examples/train_transe.py``) and ``types.json``
    (entity -> type, the dev entities listed). Returns the paths by role."""
    if generator not in TYPING_GENERATORS:
        raise ValueError(f"generator={generator!r}: choose one of {sorted(TYPING_GENERATORS)}")
    if not 0 < dev_per_type < per_type:
        raise ValueError(f"dev_per_type={dev_per_type} must be in [1, per_type={per_type})")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    types, triples = typing_kb(generator, per_type, seed)
    dev, train = [], []
    counts: dict[str, int] = {}
    for entity, kind in types.items():
        counts[kind] = counts.get(kind, 0) + 1
        (dev if counts[kind] <= dev_per_type else train).append(entity)
    paths = {role: directory / name for role, name in (
        ("train", "train.json"), ("dev", "dev.json"), ("aliases", "aliases.tsv"), ("triples", "triples.tsv"),
        ("types", "types.json"), ("vectors", "entities.txt"))}  # fmt: skip
    for split, entities, count in (("train", train, train_sentences), ("dev", dev, dev_sentences)):
        rows = typing_rows(generator, entities, types, count, seed, f"{split}{seed}")
        paths[split].write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    paths["aliases"].write_text(
        "alias\tentity\tprior\n" + "".join(f"{name}\t{name}\t1.0\n" for name in types), encoding="utf-8"
    )
    paths["triples"].write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples), encoding="utf-8")
    paths["types"].write_text(json.dumps({"types": types, "dev": dev}, indent=1) + "\n", encoding="utf-8")
    return paths


__all__ = [
    "KB_SENSES",
    "NAMES",
    "PEOPLE",
    "SENSES",
    "TYPING_GENERATORS",
    "TypingGenerator",
    "alias_table",
    "entity_vectors",
    "generate_sentences",
    "kb_entity",
    "kb_triples",
    "sense_priors",
    "typing_kb",
    "typing_names",
    "typing_rows",
    "typing_swap",
    "write_linking_corpus",
    "write_typing_corpus",
]

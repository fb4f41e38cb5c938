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
"""Seeded synthetic documents for seed 002's pre-training objectives (ERICA, KBIR) and the downstream tasks that
need them: do the objectives teach a model the relations between entities stated in a document?

A generator (``GENERATORS``: ``firms``, the one the project tunes on; ``bands``, written after the recipe was fixed:
no name, kind, relation or template shared) invents a world of typed entities with fixed facts (a knowledge graph)
and writes documents that state some of the facts, one sentence each, among neutral sentences that pair two of the
document's entities without saying how they relate:

- ``pretrain.json``: DocRED documents (entities with every mention, no labels: ERICA's relations come from the
  knowledge graph, distant supervision) and ``kg.tsv`` (``head<TAB>relation<TAB>tail``, with ``instance of`` types: the
  typed entity list KRC draws replacements from);
- ``relation_{train,dev}.json``: TACRED records over NEW entities; head and tail are the two mentions of a neutral
  sentence and the label is the relation the document states ELSEWHERE between them (``no_relation`` when it states
  none): read the other sentences or guess;
- ``typing_{train,dev}.json``: FIGER records (ERNIE's JSON: ``sent``, ``start``, ``end``, ``labels``) typing a person
  mentioned in a neutral sentence by the role another sentence gives it (``/person/founder``, ...);
- with ``local=True`` (the control) the labelled sentence is the statement itself: the easy case, learnable without
  reading the rest of the document.

``write_objective_corpus(folder, generator, seed)`` writes them all. Flat module: imports the standard library only.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Relation:
    """A relation between a ``head`` and a ``tail`` kind, its statements (``{h}``, ``{t}``) and the role it gives
    the person among its arguments (FIGER type), if any."""

    name: str
    head: str
    tail: str
    templates: tuple[str, ...]
    role: str | None = None


@dataclass(frozen=True)
class Generator:
    """An invented world: name parts per kind (``person``: first and last names), the relations, the neutral
    sentences (``{a}``, ``{b}``: two entities, no relation said) and each kind's FIGER type."""

    name: str
    first_names: tuple[str, ...]
    last_names: tuple[str, ...]
    names: dict[str, tuple[str, ...]]
    relations: tuple[Relation, ...]
    neutral: tuple[str, ...]
    types: dict[str, str]


FIRMS = Generator(
    name="firms",
    first_names=("Ana", "Bram", "Cleo", "Dario", "Edda", "Femi", "Goran", "Hana", "Ivo", "Jana", "Kofi", "Lena",
                 "Mira", "Nils", "Oona", "Pavel"),
    last_names=("Velmor", "Kastrel", "Dunabo", "Rinost", "Lambre", "Sartho", "Quilnes", "Morvel", "Pelter", "Holm",
                "Brandt", "Orsk"),
    names={"firm": ("Acmora", "Dunlake", "Velcom", "Ostware", "Brisktel", "Marlow", "Pellin", "Saravo", "Tamsin",
                    "Ulvar", "Wendra", "Corvale"),
           "town": ("Ostrel", "Velkas", "Brenmor", "Tholam", "Quildun", "Nesabo", "Rinsar", "Kasvel", "Yorvik",
                    "Zanther")},
    relations=(
        Relation("org:founded_by", "firm", "person", ("{h} was founded by {t} .", "{t} set up {h} years ago .",
                 "{t} started the company {h} ."), "founder"),
        Relation("per:employee_of", "person", "firm", ("{h} works for {t} .", "{h} is employed at {t} .",
                 "{t} hired {h} as an engineer ."), "employee"),
        Relation("per:mayor_of", "person", "town", ("{h} is the mayor of {t} .", "{t} elected {h} as its mayor .",
                 "{h} governs the town of {t} ."), "mayor"),
        Relation("org:based_in", "firm", "town", ("{h} is based in {t} .", "{h} has its headquarters in {t} .",
                 "the offices of {h} are in {t} .")),
    ),
    neutral=("{a} and {b} were mentioned in the same report .", "a photo shows {a} next to {b} .",
             "{a} appeared at an event with {b} .", "the article names {a} and {b} ."),
    types={"person": "/person", "firm": "/organization", "town": "/location"},
)  # fmt: skip

BANDS = Generator(
    name="bands",
    first_names=("Ravi", "Sunniva", "Tobias", "Ursula", "Viggo", "Wanda", "Xenia", "Yusuf", "Zelda", "Aurel",
                 "Belisa", "Casimir", "Dagny", "Elio"),
    last_names=("Fairbrook", "Glimmen", "Harwick", "Istvan", "Jorgal", "Kellerup", "Lindqvar", "Mossgard", "Norrell",
                "Oakhurst", "Pryce"),
    names={"band": ("The Lanterns", "Copper Moth", "Night Orchard", "Velvet Comet", "Paper Tigers", "Glass Harbor",
                    "Silver Fern", "Iron Meadow"),
           "label": ("Northwind Records", "Bluegate Music", "Sable Sound", "Kestrel Tapes", "Lumen Audio",
                     "Granite Discs")},
    relations=(
        Relation("band:singer", "band", "person", ("{t} sings lead vocals in {h} .", "the voice of {h} is {t} .",
                 "{h} chose {t} as their singer ."), "singer"),
        Relation("per:producer_for", "person", "label", ("{h} produces albums for {t} .", "{t} employs {h} as a "
                 "producer .", "{h} runs the studio of {t} ."), "producer"),
        Relation("per:critic_of", "person", "band", ("{h} wrote a harsh review of {t} .", "{t} was panned by the "
                 "critic {h} .", "{h} dislikes the music of {t} ."), "critic"),
        Relation("band:signed_to", "band", "label", ("{h} signed a contract with {t} .", "{t} released the debut of "
                 "{h} .", "{h} records on the label {t} .")),
    ),
    neutral=("{a} was spotted backstage with {b} .", "a poster lists {a} beside {b} .",
             "fans saw {a} and {b} on the same night .", "the radio host talked about {a} and {b} ."),
    types={"person": "/person", "band": "/organization", "label": "/organization"},
)  # fmt: skip

GENERATORS = {generator.name: generator for generator in (FIRMS, BANDS)}


@dataclass
class World:
    """Entities by kind and their facts ``(head, relation, tail)``: every person has exactly one role relation."""

    entities: dict[str, list[str]]
    facts: list[tuple[str, str, str]]
    kinds: dict[str, str]


def make_world(generator: Generator, people: int, rng: random.Random, exclude: set[str] | None = None) -> World:
    """``people`` new persons (full names not in ``exclude``), the generator's other entities, and facts: each person
    one role relation to an entity of the right kind, each non-person entity one relation of the others."""
    exclude = exclude or set()
    names = [f"{a} {b}" for a in generator.first_names for b in generator.last_names if f"{a} {b}" not in exclude]
    rng.shuffle(names)
    entities = {"person": sorted(names[:people]), **{kind: list(pool) for kind, pool in generator.names.items()}}
    kinds = {name: kind for kind, members in entities.items() for name in members}
    facts = []
    roles = [r for r in generator.relations if r.role is not None]
    for person in entities["person"]:
        relation = rng.choice(roles)
        other = relation.tail if relation.head == "person" else relation.head
        partner = rng.choice(entities[other])
        facts.append(
            (person, relation.name, partner) if relation.head == "person" else (partner, relation.name, person)
        )
    for relation in generator.relations:
        if relation.role is None:
            for head in entities[relation.head]:
                facts.append((head, relation.name, rng.choice(entities[relation.tail])))
    return World(entities, facts, kinds)


def render(template: str, **names: str) -> list[tuple[str, str | None]]:
    """The words of a filled template, each with the entity (name) it belongs to."""
    words: list[tuple[str, str | None]] = []
    for part in template.split():
        if part.startswith("{") and part.endswith("}"):
            words.extend((word, names[part[1:-1]]) for word in names[part[1:-1]].split())
        else:
            words.append((part, None))
    return words


def document(generator: Generator, world: World, rng: random.Random, facts: list[tuple[str, str, str]],
             neutral: list[tuple[str, str]], doc_id: str) -> tuple[dict[str, Any], list[list[tuple[str, str | None]]], list[int]]:  # fmt: skip
    """A DocRED record stating ``facts`` and the ``neutral`` pairs' sentences, in a random order; its sentences'
    words with their entities; where each neutral sentence went."""
    relations = {r.name: r for r in generator.relations}
    sentences = [render(rng.choice(relations[r].templates), h=h, t=t) for h, r, t in facts]
    sentences += [render(rng.choice(generator.neutral), a=a, b=b) for a, b in neutral]
    order = list(range(len(sentences)))
    rng.shuffle(order)
    placed = [order.index(len(facts) + i) for i in range(len(neutral))]
    sentences = [sentences[i] for i in order]
    return docred(sentences, world, doc_id), sentences, placed


def docred(sentences: list[list[tuple[str, str | None]]], world: World, doc_id: str) -> dict[str, Any]:
    """DocRED's record of ``sentences``: one entity per name with all its mentions (consecutive words of it)."""
    vertices: dict[str, list[dict[str, Any]]] = {}
    for sent_id, sentence in enumerate(sentences):
        position = 0
        while position < len(sentence):
            name = sentence[position][1]
            if name is None:
                position += 1
                continue
            end = position + len(name.split())
            vertices.setdefault(name, []).append({"name": name, "sent_id": sent_id, "pos": [position, end],
                                                  "type": world.kinds[name]})  # fmt: skip
            position = end
    return {"title": doc_id, "sents": [[w for w, _ in s] for s in sentences], "vertexSet": list(vertices.values()),
            "labels": []}  # fmt: skip


def pretraining_documents(generator: Generator, world: World, count: int, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` documents, each stating 2-4 facts of the world, and neutral sentences pairing its entities so that
    every entity is mentioned at least twice (a coreference cluster of two or more mentions)."""
    documents = []
    for index in range(count):
        facts = rng.sample(world.facts, rng.randint(2, 4))
        names = sorted({x for h, _, t in facts for x in (h, t)})
        counts = {name: sum(name in (h, t) for h, _, t in facts) for name in names}
        once = [name for name in names if counts[name] < 2]
        rng.shuffle(once)
        neutral = [(a, rng.choice([n for n in names if n != a]) if b is None else b)
                   for a, b in zip(once[0::2], [*once[1::2], None], strict=False)]  # fmt: skip
        documents.append(document(generator, world, rng, facts, neutral, f"{generator.name}-pre-{index}")[0])
    return documents


def mention_in(sentences: list[list[tuple[str, str | None]]], index: int, name: str) -> tuple[int, int]:
    """The word span (end exclusive) of ``name``'s first mention in sentence ``index`` of the document."""
    offset = sum(len(s) for s in sentences[:index])
    position = next(i for i, (_, n) in enumerate(sentences[index]) if n == name)
    return offset + position, offset + position + len(name.split())


def labelled_document(generator: Generator, world: World, rng: random.Random, target: tuple[str, str, str],
                      pair: tuple[str, str], local: bool, doc_id: str, distractors: int = 1) -> tuple[list, int]:  # fmt: skip
    """A document stating ``target`` and ``distractors`` other facts; its labelled sentence (returned with the
    sentences) pairs ``pair`` neutrally, or (``local``) is ``target``'s statement, first."""
    others = rng.sample([f for f in world.facts if f != target and not {f[0], f[2]} & set(pair)], distractors)
    if local:
        _, sentences, _ = document(generator, world, rng, others, [], doc_id)
        relation = {r.name: r for r in generator.relations}[target[1]]
        return [render(rng.choice(relation.templates), h=target[0], t=target[2]), *sentences], 0
    _, sentences, placed = document(generator, world, rng, [target, *others], [pair], doc_id)
    return sentences, placed[0]


def task_examples(generator: Generator, world: World, count: int, rng: random.Random, split: str,
                  local: bool = False, distractors: int = 1) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    """``count`` TACRED records and ``count`` FIGER records (module docstring): each document states a role fact
    and ``distractors`` others; the TACRED pair is the fact's own pair half of the time (its relation), else the fact's person
    with another entity of the partner's kind, in the same order, that it has no fact with (``no_relation``: the
    kinds of the pair never tell the label); the FIGER mention is the fact's person."""
    relations_of = {(h, t): r for h, r, t in world.facts}
    roles = {r.name: r.role for r in generator.relations}
    people = [f for f in world.facts if roles.get(f[1])]
    everyone = [name for members in world.entities.values() for name in members]
    tacred, figer = [], []
    for index in range(count):
        target = rng.choice(people)
        person = target[0] if world.kinds[target[0]] == "person" else target[2]
        partner = target[2] if person == target[0] else target[0]
        if local or rng.random() < 0.5:
            pair = (target[0], target[2])
        else:
            # an entity of the partner's kind the document does not relate to the person, in the fact's direction:
            # the pair's kinds do not tell the label, only the document does
            kind = world.kinds[partner]
            stranger = rng.choice([n for n in world.entities[kind] if n != partner and (person, n) not in relations_of
                                   and (n, person) not in relations_of])  # fmt: skip
            pair = (person, stranger) if person == target[0] else (stranger, person)
        doc_id = f"{generator.name}-{split}-{index}"
        sentences, labelled = labelled_document(generator, world, rng, target, pair, local, doc_id, distractors)
        words = [w for s in sentences for w, _ in s]
        (hs, he), (ts, te) = mention_in(sentences, labelled, pair[0]), mention_in(sentences, labelled, pair[1])
        tacred.append({"id": doc_id, "token": words, "subj_start": hs, "subj_end": he - 1, "obj_start": ts,
                       "obj_end": te - 1, "subj_type": world.kinds[pair[0]].upper(),
                       "obj_type": world.kinds[pair[1]].upper(),
                       "relation": relations_of.get(pair, "no_relation")})  # fmt: skip
        # typing: its own document, the person paired neutrally with an entity (its partner or not)
        other = partner if rng.random() < 0.5 else rng.choice([n for n in everyone if n not in (person, partner)])
        pair = (person, other) if rng.random() < 0.5 else (other, person)
        sentences, labelled = labelled_document(generator, world, rng, target, pair, local, doc_id, distractors)
        words = [w for s in sentences for w, _ in s]
        start, end = mention_in(sentences, labelled, person)
        text, offsets = "", []
        for word in words:
            offsets.append(len(text) + (1 if text else 0))
            text = f"{text} {word}" if text else word
        figer.append({"id": doc_id, "sent": text, "start": offsets[start],
                      "end": offsets[end - 1] + len(words[end - 1]),
                      "labels": [generator.types["person"], f"{generator.types['person']}/{roles[target[1]]}"],
                      "ents": []})  # fmt: skip
    return tacred, figer


def kg_lines(world: World, generator: Generator) -> list[str]:
    """The world's facts and ``instance of`` types as ``head<TAB>relation<TAB>tail`` lines."""
    lines = [f"{h}\t{r}\t{t}" for h, r, t in world.facts]
    lines += [f"{name}\tinstance of\t{kind}" for name, kind in sorted(world.kinds.items())]
    return lines


def write_objective_corpus(folder: str | Path, generator: str = "firms", seed: int = 0, documents: int = 400,
                           task_examples_per_split: tuple[int, int] = (600, 200), people: int = 40,
                           distractors: int = 1) -> Path:  # fmt: skip
    """Write the pre-training corpus, its knowledge graph and the downstream tasks (module docstring) of
    ``generator`` into ``folder``: ``pretrain.json``, ``pretrain_dev.json``, ``kg.tsv``, ``relation_{train,dev}.json``,
    ``typing_{train,dev}.json`` and the controls ``relation_local_{train,dev}.json``, ``typing_local_{train,dev}.json``.
    The downstream documents' persons are new (not in the knowledge graph)."""
    spec, rng = GENERATORS[generator], random.Random(seed)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    world = make_world(spec, people, rng)
    corpus = pretraining_documents(spec, world, documents + documents // 4, rng)
    (folder / "pretrain.json").write_text(json.dumps(corpus[:documents]) + "\n", encoding="utf-8")
    (folder / "pretrain_dev.json").write_text(json.dumps(corpus[documents:]) + "\n", encoding="utf-8")
    (folder / "kg.tsv").write_text("\n".join(kg_lines(world, spec)) + "\n", encoding="utf-8")
    fresh = make_world(spec, people, rng, exclude=set(world.entities["person"]))
    for local in (False, True):
        for split, count in zip(("train", "dev"), task_examples_per_split, strict=True):
            tacred, figer = task_examples(spec, fresh, count, rng, split, local=local, distractors=distractors)
            infix = "_local" if local else ""
            (folder / f"relation{infix}_{split}.json").write_text(json.dumps(tacred) + "\n", encoding="utf-8")
            (folder / f"typing{infix}_{split}.json").write_text(json.dumps(figer) + "\n", encoding="utf-8")
    return folder


def corpus_texts(folder: str | Path) -> list[str]:
    """Every text of a written corpus (the tiny LUKE's offline tokenizer is trained on them)."""
    folder = Path(folder)
    texts = [
        " ".join(w for s in doc["sents"] for w in s) for doc in json.loads((folder / "pretrain.json").read_text())
    ]
    for path in sorted(folder.glob("relation*_*.json")):
        texts += [" ".join(record["token"]) for record in json.loads(path.read_text())]
    return texts


__all__ = ["BANDS", "FIRMS", "GENERATORS", "Generator", "Relation", "World", "corpus_texts", "make_world",
           "write_objective_corpus"]  # fmt: skip

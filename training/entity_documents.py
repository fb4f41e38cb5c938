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
"""The documents ERICA's and KBIR's objectives read (``--task pretrain --objectives ...``) and the knowledge graph
aligned to them.

- ``Document``: words, entities (each its name, type and mention word spans: a coreference cluster) and relations
  between entities (``(head, relation, tail)`` entity indices). Read from DocRED's public JSON format
  (``read_docred_file``: ``title``, ``sents``, ``vertexSet``, ``labels``; ERICA's own pre-training data is in it), or
  made from any entity task's examples (``documents_of``: a sentence whose mentions are one-mention entities; a TACRED
  relation kept), or from SciREX's release (``read_scirex_documents``: the SciREX task's reader, ``records_scirex``,
  its clusters and mentions as entities, its N-ary relations as binary ones).
- ``KnowledgeGraph``: ``head<TAB>relation<TAB>tail`` triples (``read_triples``: the project's ``kb_triples.tsv``
  format, ``examples/train_transe.py --triples``); ERICA's distant supervision (``align``: a pair of a document's
  entities whose names a triple joins gets its relation), and its ``instance of`` triples are the typed entity list
  KRC replaces entities from (``types``).

Names are matched as the alias tables match them (``processing_kb.normalize_title``: case, spaces, underscores and
surrounding punctuation ignored). Every bad record is one ``InputError`` naming the flag, the file, the line or item,
the record and the fix.

Flat module: imports the root's input layer and readers, and the standard library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from transformers.utils import logging

from ..inputs_gesa import InputError, Location, read_json_file, read_text_lines
from ..processing_kb import normalize_title
from ..records_scirex import ENTITY_TYPES, ScirexDocument, read_scirex_file

logger = logging.get_logger(__name__)

NO_RELATION = "no_relation"
INSTANCE_OF = "instance of"
DOCRED_FIX = (
    "give DocRED documents: title (str), sents (list of lists of words), vertexSet (a list of entities, each a "
    "non-empty list of mentions {name, sent_id, pos: [start, end), type}) and optional labels ({h, t, r}: entity "
    "indices of vertexSet and a relation name)"
)
TRIPLES_FIX = "give one 'head<TAB>relation<TAB>tail' line per triple"


@dataclass(frozen=True)
class DocumentEntity:
    """One entity of a document: its ``name`` (the KB name, or its first mention's text), its ``type`` (``None``:
    untyped) and its ``mentions``, word spans of the document (end exclusive)."""

    name: str
    type: str | None
    mentions: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Document:
    """A document's ``tokens`` (words), ``entities`` and ``relations`` ``(head index, relation, tail index)``. Its
    ``spans`` (every mention as ``(start, end, type)``) let the pre-training vocabulary read it as it reads NER
    sentences (``training.entity.mention_spans``)."""

    id: str
    tokens: list[str]
    entities: tuple[DocumentEntity, ...]
    relations: tuple[tuple[int, str, int], ...] = ()
    notes: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def spans(self) -> list[tuple[int, int, str | None]]:
        return sorted((s, e, entity.type) for entity in self.entities for s, e in entity.mentions)


# ----------------------------------------------------------------------------------------------- DocRED


def docred_document(row: Any, location: Location) -> Document:
    """One DocRED document (``location``: where it was read, named in errors)."""
    record_id = row.get("title") if isinstance(row, Mapping) else None

    def fail(message: str) -> InputError:
        return InputError(message, location, record="DocRED document", record_id=record_id, fix=DOCRED_FIX)

    if not isinstance(row, Mapping):
        raise fail(f"is a {type(row).__name__}, not a JSON object")
    sents = row.get("sents")
    if (
        not isinstance(sents, list)
        or not sents
        or not all(isinstance(s, list) and s and all(isinstance(w, str) and w.strip() for w in s) for s in sents)
    ):
        raise fail("field 'sents' must be a non-empty list of sentences, each a non-empty list of words")
    starts = [0]
    for sentence in sents:
        starts.append(starts[-1] + len(sentence))
    tokens = [word for sentence in sents for word in sentence]
    vertices = row.get("vertexSet")
    if not isinstance(vertices, list):
        raise fail(f"field 'vertexSet' must be a list of entities (got {type(vertices).__name__})")
    entities = []
    for index, vertex in enumerate(vertices):
        if not isinstance(vertex, list) or not vertex:
            raise fail(f"vertexSet[{index}] has no mention (each entity is a non-empty list of mentions)")
        spans = []
        for number, mention in enumerate(vertex):
            where = f"vertexSet[{index}][{number}]"
            if not isinstance(mention, Mapping):
                raise fail(f"{where} must be an object {{name, sent_id, pos, type}}")
            sent, pos = mention.get("sent_id"), mention.get("pos")
            if isinstance(sent, bool) or not isinstance(sent, int) or not 0 <= sent < len(sents):
                raise fail(f"{where}: sent_id {sent!r} is not a sentence index in [0, {len(sents) - 1}]")
            if (not isinstance(pos, list) or len(pos) != 2 or not all(isinstance(p, int) for p in pos)
                    or not 0 <= pos[0] < pos[1] <= len(sents[sent])):  # fmt: skip
                raise fail(
                    f"{where}: pos {pos!r} is not [start, end) of words of sentence {sent} ({len(sents[sent])} words)"
                )
            spans.append((starts[sent] + pos[0], starts[sent] + pos[1]))
        name = vertex[0].get("name") or " ".join(tokens[spans[0][0] : spans[0][1]])
        kind = vertex[0].get("type")
        entities.append(DocumentEntity(str(name), None if kind is None else str(kind), tuple(spans)))
    relations = []
    labels = row.get("labels", [])
    if not isinstance(labels, list):
        raise fail(f"field 'labels' must be a list of relations {{h, t, r}} (got {type(labels).__name__})")
    for number, label in enumerate(labels):
        if not isinstance(label, Mapping) or not isinstance(label.get("r"), str) or not label.get("r"):
            raise fail(f"labels[{number}] must be an object {{h, t, r}} with a relation name r")
        pair = (label.get("h"), label.get("t"))
        for role, value in zip("ht", pair, strict=True):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(entities):
                raise fail(
                    f"labels[{number}] ({label['r']!r}) names entity {role}={value!r}, which has no mention: vertexSet "
                    f"holds entities 0 .. {len(entities) - 1}"
                )
        relations.append((pair[0], label["r"], pair[1]))
    return Document(
        str(record_id if record_id is not None else location.number), tokens, tuple(entities), tuple(relations)
    )


def read_docred_file(path: str | Path, where: str | None = None) -> list[Document]:
    """Every document of a DocRED file (a JSON list as released, or JSON lines); ``where`` names it in errors."""
    items = read_json_file(path, where, fix=DOCRED_FIX, list_field=None)
    return [docred_document(row, location) for location, row in items]


def docred_record(document: Document) -> dict[str, Any]:
    """``document`` in DocRED's format (one sentence holding every word): what ``read_docred_file`` reads back."""
    return {
        "title": document.id,
        "sents": [list(document.tokens)],
        "vertexSet": [
            [{"name": entity.name, "sent_id": 0, "pos": [s, e], "type": entity.type} for s, e in entity.mentions]
            for entity in document.entities
        ],
        "labels": [{"h": h, "t": t, "r": r} for h, r, t in document.relations],
    }


# ----------------------------------------------------------------------------------------------- other formats


def documents_of(examples: Iterable[Any]) -> list[Document]:
    """Documents of any entity task's examples: a ``Document`` as it is; a sentence (Open Entity, TACRED, CoNLL)
    whose every mention is an entity of its own, named by its text, typed by the data (NER's span type, TACRED's
    ``subj_type`` / ``obj_type``, Open Entity's first type), with TACRED's relation (unless ``no_relation``)."""
    documents = []
    for example in examples:
        if isinstance(example, Document):
            documents.append(example)
            continue
        if hasattr(example, "spans"):
            spans = [(s, e, kind) for s, e, kind in example.spans]
        elif hasattr(example, "head"):
            spans = [(*example.head, example.head_type), (*example.tail, example.tail_type)]
        else:
            spans = [(example.start, example.end, example.labels[0] if example.labels else None)]
        entities = tuple(DocumentEntity(" ".join(example.tokens[s:e]), kind, ((s, e),)) for s, e, kind in spans)
        relation = getattr(example, "relation", NO_RELATION)
        relations = ((0, relation, 1),) if relation != NO_RELATION else ()
        documents.append(Document(str(example.id), list(example.tokens), entities, relations))
    return documents


def scirex_document(document: ScirexDocument) -> Document:
    """A SciREX document (``records_scirex``, the SciREX task's reader) as ERICA and KBIR read it: every coreference
    cluster with a mention in the text is an entity (a salient one named by its ``coref`` key, a non-salient one by its
    first mention's words), every other ``ner`` mention an entity of its own; each typed by its mentions' type (the
    four of SciREX). Each N-ary relation gives the binary relations between its roles (``Material-Method``, ...,
    SciREX's own binary pairs) whose two entities are mentioned; a role naming an entity with no mention in the text
    (the release has such relations: 59 of the 396 roles of the shared sample's 30 training papers) gives no pair,
    counted in ``notes['roles_without_mention']``."""
    kinds = {mention.span: mention.type for mention in document.mentions}
    entities, index, covered = [], {}, set()
    for cluster in document.clusters:
        if not cluster.spans:
            continue
        spans = tuple(sorted(set(cluster.spans)))
        types = [kinds[span] for span in spans if span in kinds]
        name = cluster.name.replace("_", " ") if cluster.salient else document.text(spans[0])
        index[cluster.name] = len(entities)
        entities.append(DocumentEntity(name, max(set(types), key=types.count) if types else None, spans))
        covered.update(spans)
    for mention in document.mentions:
        if mention.span not in covered:
            entities.append(DocumentEntity(document.text(mention.span), mention.type, (mention.span,)))
    pairs, unmentioned = set(), 0
    for relation in document.relations:
        roles = relation.as_dict()
        for first, second in ((a, b) for i, a in enumerate(ENTITY_TYPES) for b in ENTITY_TYPES[i + 1 :]):
            head, tail = roles[first], roles[second]
            if head not in index or tail not in index:
                unmentioned += 1
                continue
            pairs.add((index[head], f"{first}-{second}", index[tail]))
    return Document(document.doc_id, list(document.words), tuple(entities), tuple(sorted(pairs)),
                    {"roles_without_mention": unmentioned})  # fmt: skip


def read_scirex_documents(path: str | Path, where: str | None = None) -> list[Document]:
    """The documents of a SciREX release file (``records_scirex.read_scirex_file``: one error per bad document) as
    ``scirex_document`` makes them; how many relation roles name an entity without a mention is logged."""
    documents = [scirex_document(document) for document in read_scirex_file(path, where)]
    unmentioned = sum(document.notes["roles_without_mention"] for document in documents)
    if unmentioned:
        logger.info(
            f"{where or path}: {unmentioned} relation role pairs name an entity with no mention in its document "
            "(SciREX's release has such relations): no ERICA pair for them"
        )
    return documents


# ----------------------------------------------------------------------------------------------- the knowledge graph


def read_triples(path: str | Path, where: str | None = None) -> list[tuple[str, str, str]]:
    """The ``head<TAB>relation<TAB>tail`` triples of a TSV file (``#`` comments, blank lines skipped); one
    ``InputError`` naming the file and line of a bad one, or the file when it holds none."""
    where = where or f"--triples {path}"
    triples = []
    for location, text in read_text_lines(path, where, fix=TRIPLES_FIX):
        if not text.strip() or text.startswith("#"):
            continue
        fields = [part.strip() for part in text.split("\t")]
        if len(fields) != 3 or not all(fields):
            raise InputError(
                f"has {len(fields)} non-empty tab-separated field(s), expected 3", location, fix=TRIPLES_FIX
            )
        triples.append((fields[0], fields[1], fields[2]))
    if not triples:
        raise InputError("holds no triple (an empty knowledge graph)", where, fix=TRIPLES_FIX)
    return triples


@dataclass
class KnowledgeGraph:
    """A knowledge graph of named entities: ``relations`` ``{(head key, tail key): [relation, ...]}`` and ``types``
    ``{entity name: type}`` (its ``instance of`` triples), names keyed by ``normalize_title``."""

    relations: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_triples(cls, triples: Iterable[tuple[str, str, str]]) -> KnowledgeGraph:
        graph = cls()
        for head, relation, tail in triples:
            if relation == INSTANCE_OF:
                graph.types.setdefault(head, tail)
                continue
            names = graph.relations.setdefault((normalize_title(head), normalize_title(tail)), [])
            if relation not in names:
                names.append(relation)
        return graph

    def align(self, document: Document) -> Document:
        """ERICA's distant supervision: every ordered pair of the document's entities that a triple joins gets the
        triple's relation (besides the document's own relations); an entity the graph types and the document does
        not gets the graph's type."""
        keys = [normalize_title(entity.name) for entity in document.entities]
        found = set(document.relations)
        for h, head in enumerate(keys):
            for t, tail in enumerate(keys):
                if h != t:
                    found.update((h, relation, t) for relation in self.relations.get((head, tail), ()))
        typed = {normalize_title(name): kind for name, kind in self.types.items()}
        entities = tuple(
            entity if entity.type is not None or key not in typed else replace(entity, type=typed[key])
            for entity, key in zip(document.entities, keys, strict=True)
        )
        return replace(document, entities=entities, relations=tuple(sorted(found)))


def read_knowledge_graph(path: str | Path, where: str | None = None) -> KnowledgeGraph:
    """``KnowledgeGraph`` of a triples file (``read_triples``)."""
    return KnowledgeGraph.from_triples(read_triples(path, where))


__all__ = [
    "DOCRED_FIX",
    "INSTANCE_OF",
    "NO_RELATION",
    "TRIPLES_FIX",
    "Document",
    "DocumentEntity",
    "KnowledgeGraph",
    "docred_document",
    "docred_record",
    "documents_of",
    "read_docred_file",
    "read_scirex_documents",
    "read_knowledge_graph",
    "read_triples",
    "scirex_document",
]

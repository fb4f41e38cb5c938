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
"""SciREX's release format (Jain et al. 2020) read and checked into ``ScirexDocument``: words, sentences, sections,
typed mentions, coreference clusters with their saliency, N-ary relations.

One document per JSON line: ``doc_id``, ``words``, ``sentences`` and ``sections`` (``[start, end]`` word spans,
END-EXCLUSIVE, tiling the document in order), ``ner`` (``[start, end, type]``, type one of ``ENTITY_TYPES``),
``coref`` (salient entity name -> its mention spans, possibly none), ``coref_non_salient`` (optional, the same for
the other entities), ``n_ary_relations`` (``{"Material": name, "Metric": name, "Task": name, "Method": name,
"score": ...}``, every name a ``coref`` entity) and ``method_subrelations`` (method name -> ``[[span, sub-method
name], ...]``, the span in characters of the method's name). A document with none of ``ner`` / ``coref`` / ``n_ary_relations`` is unlabelled (a test document);
one with some but not all of them is an error.

The public API (the document IE task reads it, and so can pre-training):

- ``read_scirex_file(path, where=None, max_words=None)`` -> ``list[ScirexDocument]``; ``scirex_document(row,
  where, max_words)`` checks one row (a Hub row, a dict written by code);
- ``ScirexDocument``: ``words``, ``sentences``, ``sections``, ``mentions`` (``Mention(start, end, type)``, sorted),
  ``clusters`` (``Cluster(name, spans, salient)``: the salient ones in file order, then the non-salient ones),
  ``relations`` (``Relation``: one cluster name per type, in ``ENTITY_TYPES`` order, and the score as given),
  ``method_subrelations``; ``gold_salient_clusters()`` is the official evaluation's gold (each method with its
  sub-methods' mentions, restricted to the entities some relation names: SciREX's ``merge_method_subrelations``).

Every bad document is ONE ``InputError`` naming the file and line, the document's ``doc_id``, the field and the fix,
and nothing is dropped silently: a span past the words, a mention type outside the four, a coreference span that is
not a mention, a relation naming a cluster ``coref`` does not hold, an empty document, a document longer than
``max_words``.

Flat module: copied next to a saved document-IE checkpoint, so it imports only the standard library and the input
layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .inputs_gesa import InputError, Location, read_json_file

# SciREX's entity types in its evaluation's order (``used_entities``): a relation tuple lists its clusters so
ENTITY_TYPES = ("Material", "Metric", "Task", "Method")
SCIREX_FIX = (
    "give SciREX release records: doc_id, words, sentences, sections ([start, end) word spans tiling the document), "
    "ner ([start, end, type]), coref (name -> spans), n_ary_relations ({Material, Metric, Task, Method: name})"
)
LABEL_FIELDS = ("ner", "coref", "n_ary_relations")

Span = tuple[int, int]


@dataclass(frozen=True)
class Mention:
    """A typed mention: the words ``[start, end)`` of the document, of type ``ENTITY_TYPES``."""

    start: int
    end: int
    type: str

    @property
    def span(self) -> Span:
        return (self.start, self.end)


@dataclass(frozen=True)
class Cluster:
    """An entity: its name (SciREX's ``coref`` key), its mention spans (sorted; a salient entity may have none in the
    text) and whether it is salient (``coref``) or not (``coref_non_salient``)."""

    name: str
    spans: tuple[Span, ...]
    salient: bool = True


@dataclass(frozen=True)
class Relation:
    """An N-ary relation: one cluster name per entity type (``ENTITY_TYPES`` order) and its score as given."""

    names: tuple[str, str, str, str]
    score: str | float | None = None

    def as_dict(self) -> dict[str, str]:
        return dict(zip(ENTITY_TYPES, self.names, strict=True))


@dataclass(frozen=True)
class ScirexDocument:
    """One SciREX document (module docstring); ``labelled`` is False for a document without annotations."""

    doc_id: str
    words: tuple[str, ...]
    sentences: tuple[Span, ...]
    sections: tuple[Span, ...]
    mentions: tuple[Mention, ...] = ()
    clusters: tuple[Cluster, ...] = ()
    relations: tuple[Relation, ...] = ()
    method_subrelations: Mapping[str, tuple[tuple[Span, str], ...]] = field(default_factory=dict)
    labelled: bool = True

    def text(self, span: Span) -> str:
        """The words of ``span`` joined by spaces."""
        return " ".join(self.words[span[0] : span[1]])

    def salient_clusters(self) -> dict[str, list[Span]]:
        """The ``coref`` entities as given: name -> spans (file order)."""
        return {cluster.name: list(cluster.spans) for cluster in self.clusters if cluster.salient}

    def gold_salient_clusters(self) -> dict[str, list[Span]]:
        """The official evaluation's salient clusters (SciREX ``merge_method_subrelations``): each method takes its
        sub-methods' mentions, then only the entities some relation names are kept, each with its distinct spans
        (sorted here; the official script keeps Python's set order, which no metric reads)."""
        clusters = self.salient_clusters()
        for method, subs in self.method_subrelations.items():
            for _, name in subs:
                if name != method:
                    clusters[method] = clusters[method] + clusters[name]
        named = {name for relation in self.relations for name in relation.names}
        return {name: sorted(set(clusters[name])) for name in clusters if name in named}

    def cluster_type(self, name: str) -> str | None:
        """The type a relation gives the entity ``name`` (the first relation naming it), ``None`` if none does."""
        for relation in self.relations:
            for kind, other in zip(ENTITY_TYPES, relation.names, strict=True):
                if other == name:
                    return kind
        return None


# ----------------------------------------------------------------------------------------------- checks


class _Checker:
    """The checks of one row, each failure one ``InputError`` naming where, the document and the field."""

    def __init__(self, where: str | Location | None, record_id: Any) -> None:
        self.where, self.record_id = where, record_id

    def fail(self, problem: str, fix: str | None = None) -> InputError:
        return InputError(problem, self.where, record="SciREX document", record_id=self.record_id,
                          fix=fix or SCIREX_FIX)  # fmt: skip

    def span(self, value: Any, field_name: str, length: int) -> Span:
        if (
            not isinstance(value, Sequence)
            or isinstance(value, str)
            or len(value) < 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value[:2])
        ):
            raise self.fail(f"{field_name} must be a [start, end] pair of word indices (got {value!r:.60})")
        start, end = int(value[0]), int(value[1])
        if not 0 <= start < end <= length:
            raise self.fail(
                f"{field_name} = [{start}, {end}] is not a span of the document's {length} words (ends are "
                "exclusive: 0 <= start < end <= len(words))"
            )
        return start, end

    def tiling(self, value: Any, field_name: str, length: int) -> tuple[Span, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(f"field {field_name!r} must be a non-empty list of [start, end] word spans")
        spans = tuple(self.span(item, f"{field_name}[{i}]", length) for i, item in enumerate(value))
        previous = 0
        for index, (start, end) in enumerate(spans):
            if start != previous:
                raise self.fail(
                    f"{field_name}[{index}] = [{start}, {end}] starts at word {start}, where the {field_name} before "
                    f"it end at word {previous}: {field_name} must tile the document in order, without gap or overlap"
                )
            previous = end
        if previous != length:
            raise self.fail(f"field {field_name!r} ends at word {previous}, but the document has {length} words")
        return spans

    def name(self, value: Any, field_name: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(f"{field_name} must be a non-empty entity name (got {value!r:.60})")
        return value


def _clusters(check: _Checker, row: Mapping[str, Any], key: str, length: int, mentions: set[Span]) -> list[Cluster]:
    value = row.get(key, {})
    if not isinstance(value, Mapping):
        raise check.fail(f"field {key!r} must be an object of entity name -> list of [start, end] spans")
    clusters = []
    for name, spans in value.items():
        if not isinstance(spans, list):
            raise check.fail(f"{key}[{name!r}] must be a list of [start, end] spans (got {type(spans).__name__})")
        checked = []
        for index, item in enumerate(spans):
            span = check.span(item, f"{key}[{name!r}][{index}]", length)
            if span not in mentions:
                raise check.fail(
                    f"{key}[{name!r}][{index}] = {list(span)} is not a mention of 'ner' (every coreference span is "
                    "one of the document's typed mentions)",
                    fix="add the span to 'ner' with its type, or remove it from the cluster",
                )
            checked.append(span)
        clusters.append(Cluster(str(name), tuple(sorted(set(checked))), key == "coref"))
    return clusters


def scirex_document(row: Any, where: str | Location | None = None, max_words: int | None = None) -> ScirexDocument:
    """One SciREX record, checked (module docstring); ``where`` names it in errors (``"f.jsonl, line 3"``);
    ``max_words``: the longest document accepted (``None``: any length)."""
    record_id = row.get("doc_id") if isinstance(row, Mapping) else None
    check = _Checker(where, record_id)
    if not isinstance(row, Mapping):
        raise check.fail(f"is a {type(row).__name__}, not a JSON object")
    if not isinstance(record_id, str) or not record_id:
        raise check.fail(f"field 'doc_id' must be a non-empty string (got {record_id!r:.60})")
    words = row.get("words")
    if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
        raise check.fail(f"field 'words' must be a list of strings (got {type(words).__name__})")
    if not words:
        raise check.fail("is empty: field 'words' holds no word", fix="remove the document or give its words")
    for index, word in enumerate(words):
        if not word.strip():
            # a blank word has no characters to tokenize: a mention on it would have no position
            raise check.fail(
                f"words[{index}] is blank ({word!r})", fix="remove it (and shift the spans) or give the word"
            )
    if max_words is not None and len(words) > max_words:
        raise check.fail(
            f"has {len(words)} words, more than the configured limit of {max_words}",
            fix="raise the limit (--max_document_words) or split the document",
        )
    length = len(words)
    sentences = check.tiling(row.get("sentences"), "sentences", length)
    sections = check.tiling(row.get("sections"), "sections", length)
    starts = {start for start, _ in sentences}
    for index, (start, end) in enumerate(sections):
        if start not in starts:
            raise check.fail(f"sections[{index}] = [{start}, {end}] starts inside a sentence (no sentence starts at "
                             f"word {start}): a section is a run of whole sentences")  # fmt: skip
    given = [name for name in LABEL_FIELDS if row.get(name) is not None]
    if not given:
        return ScirexDocument(record_id, tuple(words), sentences, sections, labelled=False)
    if len(given) < len(LABEL_FIELDS):
        missing = [name for name in LABEL_FIELDS if name not in given]
        raise check.fail(
            f"has {', '.join(given)} but no {', '.join(missing)}: a labelled document needs all of "
            f"{', '.join(LABEL_FIELDS)}",
            fix="give the missing fields (an unlabelled test document gives none of them)",
        )
    ner = row["ner"]
    if not isinstance(ner, list):
        raise check.fail(f"field 'ner' must be a list of [start, end, type] (got {type(ner).__name__})")
    mentions: dict[Span, Mention] = {}
    for index, item in enumerate(ner):
        span = check.span(item, f"ner[{index}]", length)
        kind = item[2] if len(item) == 3 else None
        if kind not in ENTITY_TYPES:
            raise check.fail(f"ner[{index}] = {item!r:.60} must be [start, end, type] with type one of "
                             f"{list(ENTITY_TYPES)}")  # fmt: skip
        if span in mentions:
            raise check.fail(f"ner[{index}] = {list(span)} is listed twice (as {mentions[span].type} and {kind})",
                             fix="keep one of the two")  # fmt: skip
        mentions[span] = Mention(span[0], span[1], kind)
    ordered = sorted(mentions.values(), key=lambda mention: mention.span)
    for first, second in zip(ordered, ordered[1:], strict=False):
        if second.start < first.end:
            raise check.fail(
                f"ner has overlapping mentions {list(first.span)} and {list(second.span)}: a word belongs to one "
                "mention at most (BIO tags could not hold both)",
                fix="keep one of the two",
            )
    salient = _clusters(check, row, "coref", length, set(mentions))
    other = _clusters(check, row, "coref_non_salient", length, set(mentions))
    names = {cluster.name for cluster in salient}
    relations_value = row["n_ary_relations"]
    if not isinstance(relations_value, list):
        raise check.fail(f"field 'n_ary_relations' must be a list of objects (got {type(relations_value).__name__})")
    relations = []
    for index, relation in enumerate(relations_value):
        if not isinstance(relation, Mapping):
            raise check.fail(f"n_ary_relations[{index}] must be an object naming one entity per type")
        chosen = []
        for kind in ENTITY_TYPES:
            name = check.name(relation.get(kind), f"n_ary_relations[{index}][{kind!r}]")
            if name not in names:
                raise check.fail(
                    f"n_ary_relations[{index}] names the {kind} {name!r}, a cluster 'coref' does not hold",
                    fix="add the entity to 'coref' (its spans may be []) or correct the name",
                )
            chosen.append(name)
        relations.append(Relation(tuple(chosen), relation.get("score")))
    subrelations = row.get("method_subrelations") or {}
    if not isinstance(subrelations, Mapping):
        raise check.fail("field 'method_subrelations' must be an object of method name -> [[span, name], ...]")
    methods = {}
    for method, subs in subrelations.items():
        if method not in names:
            raise check.fail(f"method_subrelations names the method {method!r}, a cluster 'coref' does not hold",
                             fix="add it to 'coref' or remove the entry")  # fmt: skip
        if not isinstance(subs, list):
            raise check.fail(f"method_subrelations[{method!r}] must be a list of [[start, end], name]")
        parts = []
        for index, item in enumerate(subs):
            if not isinstance(item, list) or len(item) != 2:
                raise check.fail(f"method_subrelations[{method!r}][{index}] must be [[start, end], name]")
            name = check.name(item[1], f"method_subrelations[{method!r}][{index}] name")
            if name not in names:
                raise check.fail(
                    f"method_subrelations[{method!r}][{index}] names {name!r}, a cluster 'coref' does not hold",
                    fix="add the sub-method to 'coref' or remove the entry",
                )
            # the span is the sub-method's characters in the method's name (SciREX's chunk_string)
            span = check.span(item[0], f"method_subrelations[{method!r}][{index}] character span", len(method))
            parts.append((span, name))
        methods[str(method)] = tuple(parts)
    return ScirexDocument(
        record_id, tuple(words), sentences, sections, tuple(ordered), tuple(salient + other), tuple(relations),
        methods,
    )  # fmt: skip


def read_scirex_file(path: str | Path, where: str | None = None, max_words: int | None = None) -> list[ScirexDocument]:
    """Every document of a SciREX release file (JSON lines; a JSON list also read), each checked; ``where`` names the
    file in errors (default its path); ``max_words``: the longest document accepted. Document ids must be unique."""
    items = read_json_file(path, where, fix=SCIREX_FIX, list_field=None)
    documents, seen = [], {}
    for location, row in items:
        document = scirex_document(row, location, max_words)
        if document.doc_id in seen:
            raise InputError(
                f"doc_id is used twice (first at {seen[document.doc_id]})", location, record="SciREX document",
                record_id=document.doc_id, fix="give every document its own doc_id (predictions are keyed by it)",
            )  # fmt: skip
        seen[document.doc_id] = location.place
        documents.append(document)
    return documents


__all__ = [
    "ENTITY_TYPES",
    "SCIREX_FIX",
    "Cluster",
    "InputError",
    "Mention",
    "Relation",
    "ScirexDocument",
    "read_scirex_file",
    "scirex_document",
]

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
"""The context graph of one WikiHop / MedHop query (Acton 2023, "From GNNs to Sparse Transformers", section 3.1).

Nodes (3.1): one per support document, one per entity mention in a document (HDE's "special entities": every
whole-word, case-insensitive match of a candidate or of the query subject, ``records_wikihop.find_mentions``),
one per candidate, and optionally one per sentence of a document (``sentences="all"``) or per sentence holding an
entity mention (``"restricted"``). Spans are character spans of the node's own text (a document, a candidate).

Edges, one kind per unordered pair (the thesis's rule numbers; the lowest rule that joins a pair names its kind):

====  =========================  ===========================================================================  ========
rule  kind                       pairs                                                                         default
====  =========================  ===========================================================================  ========
1     ``document_entity``        document d - entity e whose text is found in d                                on
2     ``document_candidate``     document d - candidate c whose text is found in d                             on
3     ``co_mention``             entity - entity of the same text (``co_mention=False``: off, table 5.19)      on
4     ``entity_candidate``       entity - the candidate its text mentions                                      on
5     ``candidate_candidate``    every candidate pair                                                          on
6     ``co_document``            entity - entity mentioned in the same document                                off
7     ``complement``             every entity pair still unconnected                                           off
8     ``unconnected``            every node pair still unconnected (the graph becomes complete)                off
9     ``sentence_document``      sentence - its document                                                       with
10    ``sentence_entity``        sentence - entity whose text is found in the sentence (any document's)       sentence
11    ``sentence_sequence``      sentence - the previous / next sentence of its document                       nodes
12    ``sentence_cross_document`` sentence - document of which an entity's text is found in the sentence
====  =========================  ===========================================================================  ========

Rules 7 and 8 run last (after the sentence rules), so they fill exactly the pairs no other rule joined. MedHop uses
the same QAngaroo layout and builds the same graph; so do GESA's WikiHop features with ``entity_graph="context"``
(``processing_wikihop``: every node an entity token, every edge kind its own e2e label). Flat module: imports only
the WikiHop mention matcher and the edge kinds' names (``structure_gesa.CONTEXT_EDGE_KINDS``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .records_wikihop import find_mentions, normalize_mention
from .structure_gesa import CONTEXT_EDGE_KINDS

NODE_TYPES = ("document", "entity", "candidate", "sentence")
DOCUMENT, ENTITY, CANDIDATE, SENTENCE = range(len(NODE_TYPES))
EDGE_KINDS = CONTEXT_EDGE_KINDS  # one list, at the bottom floor: GESA's e2e labels are these kinds too
EDGE_KIND_ID = {name: index for index, name in enumerate(EDGE_KINDS)}
SENTENCE_MODES = ("none", "all", "restricted")
# a sentence ends at . ! ? followed by white space (a plain splitter: the thesis uses a sentence detection module)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class GraphRules:
    """Which optional rules of section 3.1 build the graph (rules 1, 2, 4, 5 always do).

    Args:
        co_mention: rule 3 (on by default; table 5.19 removes it).
        co_document: rule 6.
        complement: rule 7.
        unconnected: rule 8 (a complete graph).
        sentences: ``"none"`` (no sentence nodes), ``"all"``, ``"restricted"`` (sentences holding an entity
            mention); with sentence nodes, rules 9-12 apply.
    """

    co_document: bool = False
    complement: bool = False
    unconnected: bool = False
    sentences: str = "none"
    co_mention: bool = True

    def __post_init__(self) -> None:
        if self.sentences not in SENTENCE_MODES:
            raise ValueError(f"sentences must be one of {SENTENCE_MODES}, got {self.sentences!r}")
        for name in ("co_document", "complement", "unconnected", "co_mention"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class GraphNode:
    """One node: its ``kind`` (``NODE_TYPES`` index), the text it lies in (``source``: document index for documents,
    entities and sentences, candidate index for candidates), its character span there, and ``string``: the
    normalised text an entity or candidate stands for (``""`` for documents and sentences)."""

    kind: int
    source: int
    start: int
    end: int
    string: str = ""


@dataclass
class ContextGraph:
    """Nodes (documents, then entities in reading order, then candidates, then sentences) and undirected edges
    ``(i, j, kind)`` with ``i < j``, one per pair."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[tuple[int, int, int]] = field(default_factory=list)

    def indices(self, kind: int) -> list[int]:
        return [index for index, node in enumerate(self.nodes) if node.kind == kind]

    def kind_of(self, i: int, j: int) -> str | None:
        """The edge kind joining ``i`` and ``j`` (either order), ``None`` when none does."""
        i, j = min(i, j), max(i, j)
        for a, b, kind in self.edges:
            if (a, b) == (i, j):
                return EDGE_KINDS[kind]
        return None

    def directed_edges(self) -> tuple[list[int], list[int], list[int]]:
        """``(senders, receivers, kinds)``: every edge in both directions (messages flow both ways)."""
        senders, receivers, kinds = [], [], []
        for i, j, kind in self.edges:
            senders += [i, j]
            receivers += [j, i]
            kinds += [kind, kind]
        return senders, receivers, kinds


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (white space between them left out)."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if text[start : match.start()].strip():
            spans.append((start, match.start()))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def build_context_graph(
    supports: Sequence[str],
    candidates: Sequence[str],
    subject: str,
    rules: GraphRules | None = None,
    max_entities: int | None = None,
) -> ContextGraph:
    """The context graph of one query (module docstring).

    Args:
        supports: the documents.
        candidates: the answer candidates (distinct).
        subject: the query's subject (its mentions are entity nodes too, as HDE's query entities).
        rules: the optional rules (default: rules 1-5 only).
        max_entities: entity nodes kept, in reading order (``None``: all).
    """
    rules = rules or GraphRules()
    graph = ContextGraph()
    strings = [normalize_mention(text) for text in candidates]
    entity_strings = list(dict.fromkeys([*strings, normalize_mention(subject)]))
    graph.nodes += [GraphNode(DOCUMENT, d, 0, len(text)) for d, text in enumerate(supports)]
    found = [{entity_strings[i] for _, _, i in find_mentions(text, entity_strings)} for text in supports]
    entities = [
        GraphNode(ENTITY, d, start, end, entity_strings[index])
        for d, text in enumerate(supports)
        for start, end, index in find_mentions(text, entity_strings)
    ]
    graph.nodes += entities[:max_entities] if max_entities is not None else entities
    graph.nodes += [GraphNode(CANDIDATE, c, 0, len(text), strings[c]) for c, text in enumerate(candidates)]
    documents, entity_nodes = graph.indices(DOCUMENT), graph.indices(ENTITY)
    candidate_nodes = graph.indices(CANDIDATE)
    if rules.sentences != "none":
        for d, text in enumerate(supports):
            for start, end in split_sentences(text):
                if rules.sentences == "restricted" and not any(
                    graph.nodes[e].source == d and start <= graph.nodes[e].start < end for e in entity_nodes
                ):
                    continue
                graph.nodes.append(GraphNode(SENTENCE, d, start, end))
    sentences = graph.indices(SENTENCE)

    joined: dict[tuple[int, int], int] = {}

    def join(i: int, j: int, kind: str) -> None:
        if i != j:
            joined.setdefault((min(i, j), max(i, j)), EDGE_KIND_ID[kind])

    nodes = graph.nodes

    def sentence_of(s: int) -> str:
        return supports[nodes[s].source][nodes[s].start : nodes[s].end]

    for d in documents:  # rules 1, 2
        for e in entity_nodes:
            if nodes[e].string in found[d]:
                join(d, e, "document_entity")
        for c in candidate_nodes:
            if nodes[c].string in found[d]:
                join(d, c, "document_candidate")
    for a, e in enumerate(entity_nodes):  # rules 3, 4
        for f in entity_nodes[a + 1 :]:
            if rules.co_mention and nodes[e].string == nodes[f].string:
                join(e, f, "co_mention")
        for c in candidate_nodes:
            if nodes[e].string == nodes[c].string:
                join(e, c, "entity_candidate")
    for a, c in enumerate(candidate_nodes):  # rule 5
        for b in candidate_nodes[a + 1 :]:
            join(c, b, "candidate_candidate")
    if rules.co_document:  # rule 6
        for a, e in enumerate(entity_nodes):
            for f in entity_nodes[a + 1 :]:
                if nodes[e].source == nodes[f].source:
                    join(e, f, "co_document")
    if sentences:
        sentence_strings = {s: {entity_strings[i] for _, _, i in find_mentions(sentence_of(s), entity_strings)}
                            for s in sentences}  # fmt: skip
        previous: dict[int, int] = {}
        for s in sentences:
            join(s, documents[nodes[s].source], "sentence_document")  # rule 9
            for e in entity_nodes:  # rule 10
                if nodes[e].string in sentence_strings[s]:
                    join(s, e, "sentence_entity")
            if nodes[s].source in previous:  # rule 11
                join(previous[nodes[s].source], s, "sentence_sequence")
            previous[nodes[s].source] = s
            for d in documents:  # rule 12: a document one of whose entities the sentence mentions
                document_strings = {nodes[e].string for e in entity_nodes if nodes[e].source == d}
                if d != nodes[s].source and document_strings & sentence_strings[s]:
                    join(s, documents[d], "sentence_cross_document")
    if rules.complement:  # rule 7
        for a, e in enumerate(entity_nodes):
            for f in entity_nodes[a + 1 :]:
                join(e, f, "complement")
    if rules.unconnected:  # rule 8
        for i in range(len(nodes)):
            for j in range(i + 1, len(nodes)):
                join(i, j, "unconnected")
    graph.edges = sorted((i, j, kind) for (i, j), kind in joined.items())
    return graph


__all__ = [
    "CANDIDATE",
    "DOCUMENT",
    "EDGE_KINDS",
    "EDGE_KIND_ID",
    "ENTITY",
    "NODE_TYPES",
    "SENTENCE",
    "SENTENCE_MODES",
    "ContextGraph",
    "GraphNode",
    "GraphRules",
    "build_context_graph",
    "split_sentences",
]

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
"""HotpotQA FullWiki: the evidence graph of a question retrieved from the Wikipedia abstracts (paper sec. 3, A.1).

``FullWikiRetriever(corpus, score)`` over a ``training.abstracts.AbstractsCorpus``, with ``score(questions, titles)``
the re-ranker's relevance of each question's articles to it, one call per stage for all questions (the paper's BERT
IR: a linear layer on ``[CLS]`` of ``question </s> </s> title: paragraph``; ``training.xh_fullwiki`` trains it). Per
question:

1. first stage: BM25 (``bm25s``, in place of DrQA's TF-IDF) over ``title + abstract``, the top ``candidates`` (D_ir,
   the paper's 100), and the articles whose title the question names as a run of whole words (D_el, in place of the
   TagMe / CMNS entity linkers; the surface form is the title without a trailing parenthetical); all re-ranked, the
   top ``keep`` of D_ir (the paper's 2) and the top one per surface form of D_el kept;
2. expansion (bridge questions; ``expand=False`` for comparison questions, A.1): the articles linked to or from a
   first-stage article, re-ranked, the top ``expand`` (the paper's 15) kept;
3. the graph: those articles as paragraphs (first stage, then expansion, each by score), ``hyperlinks`` the corpus's
   links between them ([from title, to title]: the edges), ``anchors`` per paragraph the anchor texts of the graph's
   links into it (node text = question + anchor text + paragraph, ``processing_xh_tasks``).

With ``include_gold`` (training graphs) a question's supporting paragraphs missing from its graph are put first, so
every training graph holds its answer (they must be in the corpus). The row keeps its question, answer, type and
supporting facts: the official metric scores it as any HotpotQA question.

Flat module: imports only third-party packages and its siblings.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..inputs_gesa import InputError
from .abstracts import AbstractsCorpus
from .fever_bm25 import Bm25Index

logger = logging.getLogger(__name__)

Scorer = Callable[[Sequence[str], Sequence[Sequence[str]]], Sequence[Sequence[float]]]
_WORD = re.compile(r"\w+")
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")


def _surface(title: str) -> str:
    return " ".join(_WORD.findall(_PARENTHETICAL.sub("", title).lower()))


class FullWikiRetriever:
    """The FullWiki evidence graphs of HotpotQA questions (module docstring).

    Args:
        corpus: the abstracts (``training.abstracts.read_abstracts_corpus``).
        score: ``score(questions, titles)`` (``titles``: one list per question) -> per question one relevance score
            per title (higher: more relevant).
        candidates: BM25 articles per question re-ranked (D_ir).
        keep: first-stage articles kept from D_ir.
        expand: articles kept from the hyperlink expansion.
        link_entities: add the articles the question names by title (D_el).
    """

    def __init__(
        self,
        corpus: AbstractsCorpus,
        score: Scorer,
        candidates: int = 100,
        keep: int = 2,
        expand: int = 15,
        link_entities: bool = True,
    ) -> None:
        for name, value in (("candidates", candidates), ("keep", keep)):
            if value < 1:
                raise ValueError(f"FullWikiRetriever: {name} must be at least 1, got {value}")
        if expand < 0:
            raise ValueError(f"FullWikiRetriever: expand must be at least 0, got {expand}")
        self.corpus, self.score = corpus, score
        self.candidates, self.keep, self.expand, self.link_entities = candidates, keep, expand, link_entities
        self.titles = list(corpus.articles)
        self.index = Bm25Index([f"{title} {corpus.articles[title].text}" for title in self.titles])
        self._surfaces: dict[str, list[str]] = {}
        self._longest = 1
        stop = _stopwords()
        for title in self.titles:
            surface = _surface(title)
            if surface and not set(surface.split()) <= stop:  # a title of stop words names nothing
                self._surfaces.setdefault(surface, []).append(title)
                self._longest = max(self._longest, len(surface.split()))

    def linked_entities(self, question: str) -> dict[str, list[str]]:
        """``{surface form: titles}`` of the articles whose title the question names as a run of whole words."""
        words = _WORD.findall(question.lower())
        found: dict[str, list[str]] = {}
        for size in range(min(self._longest, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                surface = " ".join(words[start : start + size])
                if surface in self._surfaces:
                    found[surface] = self._surfaces[surface]
        return found

    def _ranked(self, questions: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[str]]:
        """Each question's candidates (each once) by the re-ranker's score, best first: one ``score`` call."""
        candidates = [list(dict.fromkeys(titles)) for titles in candidates]
        scores = [[float(x) for x in row] for row in self.score(list(questions), candidates)] if questions else []
        if [len(row) for row in scores] != [len(titles) for titles in candidates]:
            raise RuntimeError("the re-ranker gave a different number of scores than articles")
        return [[t for _, t in sorted(zip(row, titles, strict=True), key=lambda pair: -pair[0])]
                for row, titles in zip(scores, candidates, strict=True)]  # fmt: skip

    def retrieve(
        self, rows: Sequence[Mapping[str, Any]], expand: bool | Sequence[bool] = True, include_gold: bool = False
    ) -> list[dict[str, Any]]:
        """Each row (``records_xh`` canonical rows) with its retrieved graph as ``context``, ``hyperlinks`` and
        ``anchors``; ``expand`` per row (or for all) says whether to expand along hyperlinks (bridge questions)."""
        flags = [expand] * len(rows) if isinstance(expand, bool) else list(expand)
        if len(flags) != len(rows):
            raise ValueError(f"expand has {len(flags)} flags for {len(rows)} questions")
        questions = [str(row["question"]) for row in rows]
        hits = self.index.search(questions, self.candidates)
        bm25 = [[self.titles[i] for i, _ in found] for found in hits]
        entities = [self.linked_entities(q) if self.link_entities else {} for q in questions]
        named = [[t for titles in found.values() for t in titles] for found in entities]
        ranked = self._ranked(questions, [b + n for b, n in zip(bm25, named, strict=True)])
        firsts = []
        for found, linked, order in zip(bm25, entities, ranked, strict=True):
            rank = {title: position for position, title in enumerate(order)}
            first = sorted(found, key=rank.__getitem__)[: self.keep]
            first += [min(titles, key=rank.__getitem__) for titles in linked.values()]
            firsts.append(sorted(dict.fromkeys(first), key=rank.__getitem__))
        wide = [i for i, first in enumerate(firsts) if flags[i] and self.expand and first]
        around = [
            [t for title in firsts[i] for t in self.corpus.neighbours(title) if t not in firsts[i]] for i in wide
        ]
        expanded = dict(zip(wide, self._ranked([questions[i] for i in wide], around), strict=True))
        graphs, empty = [], 0
        for index, row in enumerate(rows):
            nodes = firsts[index] + expanded.get(index, [])[: self.expand]
            if include_gold:
                gold = [t for t in dict.fromkeys(row.get("supporting_facts", {}).get("title", [])) if t not in nodes]
                for title in gold:
                    if title not in self.corpus:
                        raise InputError(
                            f"supporting paragraph {title!r} is not in the corpus, so no training graph can hold it",
                            row.get("location"),
                            record="HotpotQA question",
                            record_id=row.get("id"),
                            fix="give --corpus_dir the abstracts that hold every training question's paragraphs",
                        )
                nodes = gold + nodes
            if not nodes:  # nothing retrieved: the graph needs a node; no answer can be expected
                empty += 1
                nodes = self.titles[: self.keep]
            graphs.append(self.graph_row(row, nodes))
        if empty:
            logger.warning(
                f"{empty} questions share no word with the corpus and name no title: their graphs hold the corpus's "
                f"first {self.keep} articles"
            )
        return graphs

    def graph_row(self, row: Mapping[str, Any], nodes: Sequence[str]) -> dict[str, Any]:
        """``row`` with ``nodes`` (titles of the corpus) as its paragraphs, their hyperlinks and anchor texts."""
        inside = set(nodes)
        links = [[source, target] for source in nodes for target in dict.fromkeys(
            t for t, _, _ in self.corpus.articles[source].links) if target in inside]  # fmt: skip
        anchors = [list(dict.fromkeys(a for source in nodes if source != node for a in
                                      self.corpus.anchors(source, node))) for node in nodes]  # fmt: skip
        context = {"title": list(nodes), "sentences": [list(self.corpus.articles[t].sentences) for t in nodes]}
        return {**row, "context": context, "hyperlinks": links, "anchors": anchors}


def _stopwords() -> set[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return set(STOPWORDS_EN)


__all__ = ["FullWikiRetriever", "Scorer"]

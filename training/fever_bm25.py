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
"""Sparse retrieval of FEVER evidence for claims that come without candidates (``predicted_pages`` /
``predicted_sentences``): document retrieval, then sentence selection, both BM25 from the ``bm25s`` library
(``pip install gesa[retrieval]``), in place of the paper's retrieval pipeline (5.2), which the project does not ship.

- documents: every wiki page as ``title + its sentences``, the claim as the query; the top ``max_pages`` pages become
  the claim's ``predicted_pages``;
- sentences: the sentences of those pages (``title: sentence``), the claim as the query; the top ``max_sentences``
  become its ``predicted_sentences`` ``[[page, line]]``, best first, which ``XhTaskProcessor.fever_candidates``
  turns into the graph's nodes. With a ``score`` (``training.fever_retrieval.SentenceReranker``: the backbone's
  relevance of ``claim </s> </s> title: sentence``) the sentences are ranked by it instead of BM25.

Claims that already carry candidates are returned unchanged. Flat module: imports only third-party packages and its
siblings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..extras_gesa import require
from ..records_xh import page_title


def _bm25() -> Any:
    bm25s = require("bm25s", "BM25 retrieval")
    quiet = logging.getLogger("bm25s")
    if quiet.level == logging.DEBUG:  # bm25s sets DEBUG on import: a line per index built, in every run's output
        quiet.setLevel(logging.WARNING)
    return bm25s


class Bm25Index:
    """BM25 (``bm25s``, Lucene's variant, English stop words) over ``texts``; ``search`` gives ``(index, score)``
    pairs best first, documents without a shared term left out. Texts without one word to index are a
    ``ValueError``."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.bm25s = _bm25()
        self.size = len(texts)
        self.index = self.bm25s.BM25()
        tokens = self._tokens(texts)
        if self.size and not tokens.vocab:  # bm25s itself fails on an empty vocabulary (max() of nothing)
            raise ValueError(
                f"none of its {self.size} texts has a word to index (each is empty or only stop words such as "
                "'the', 'a')"
            )
        self.index.index(tokens, show_progress=False)

    def _tokens(self, texts: Sequence[str]) -> Any:
        return self.bm25s.tokenize(list(texts), stopwords="en", show_progress=False)

    def search(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        if not queries or not self.size:
            return [[] for _ in queries]
        found, scores = self.index.retrieve(self._tokens(queries), k=min(k, self.size), show_progress=False)
        return [[(int(d), float(s)) for d, s in zip(row, score, strict=True) if s > 0] for row, score in zip(found, scores, strict=True)]  # fmt: skip


def retrieve_fever_evidence(
    claims: Sequence[Mapping[str, Any]],
    pages: Mapping[str, Mapping[int, str]],
    max_pages: int = 5,
    max_sentences: int = 5,
    score: Callable[[str, Sequence[tuple[str, int]]], Sequence[float]] | None = None,
) -> list[dict[str, Any]]:
    """``claims`` with ``predicted_pages`` and ``predicted_sentences`` retrieved for those that carry neither (see
    the module docstring); the others are returned as they are. ``score(claim, [(page, line)])`` (a re-ranker: one
    relevance per sentence, higher first) selects the sentences in place of BM25."""
    missing = [
        i for i, c in enumerate(claims) if c.get("predicted_pages") is None and not c.get("predicted_sentences")
    ]
    result = [dict(claim) for claim in claims]
    if not missing:
        return result
    names = list(pages)
    documents = Bm25Index([f"{page_title(p)} {' '.join(pages[p].values())}" for p in names])
    hits = documents.search([claims[i]["claim"] for i in missing], max_pages)
    for position, found in zip(missing, hits, strict=True):
        chosen = [names[d] for d, _ in found]
        sentences = [(p, line) for p in chosen for line, text in sorted(pages[p].items()) if text.strip()]
        if not sentences:
            ranked = []
        elif score is not None:  # the re-ranker's order, best first
            scores = [float(x) for x in score(claims[position]["claim"], sentences)]
            ranked = sorted(enumerate(scores), key=lambda pair: -pair[1])[:max_sentences]
        else:
            ranked = Bm25Index([f"{page_title(p)}: {pages[p][line]}" for p, line in sentences]).search(
                [claims[position]["claim"]], max_sentences
            )[0]
        result[position]["predicted_pages"] = chosen
        result[position]["predicted_sentences"] = [[sentences[s][0], sentences[s][1]] for s, _ in ranked]
    return result


__all__ = ["Bm25Index", "retrieve_fever_evidence"]

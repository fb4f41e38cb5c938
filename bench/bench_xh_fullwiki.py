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
"""What each FullWiki retrieval stage finds (paper A.1, `training.fullwiki_graphs`), on a corpus written from HotpotQA
questions' own paragraphs: the share of the questions' supporting paragraphs in the graph, the share of questions with
both, the share whose graph holds the answer text, and the mean graph size, stage by stage, side by side.

    python bench/bench_xh_fullwiki.py        # ../shared's 100 distractor dev questions: their 991 paragraphs

Run with this checkout importable as `gesa`. The re-ranker here is BM25's own score (no model), so the figures show
what the sparse stages and the hyperlink expansion reach; a trained backbone re-ranker (`training.xh_fullwiki`) reorders
the same candidates. A small corpus: every article is some question's gold or distractor paragraph, so the figures
say nothing about the full Wikipedia.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from gesa.records_xh import read_hotpot_file
from gesa.training.abstracts import read_abstracts_corpus
from gesa.training.fullwiki_graphs import FullWikiRetriever
from gesa.training.xh_fullwiki import abstracts_from_paragraphs, hotpot_paragraphs, write_abstracts_corpus

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def figures(rows: list[dict], graphs: list[dict]) -> dict[str, float]:
    """Supporting-paragraph recall, both-found rate, answer-in-graph rate, mean nodes."""
    found = both = answered = nodes = total = 0
    for row, graph in zip(rows, graphs, strict=True):
        titles = set(graph["context"]["title"])
        gold = set(row["supporting_facts"]["title"])
        found += len(gold & titles)
        total += len(gold)
        both += gold <= titles
        text = " ".join(" ".join(s) for s in graph["context"]["sentences"]).lower()
        answered += row["answer"].lower() in ("yes", "no") or row["answer"].lower() in text
        nodes += len(titles)
    count = len(rows)
    return {"sp_paragraph_recall": found / total, "both_found": both / count, "answer_in_graph": answered / count,
            "mean_nodes": nodes / count}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", default=str(SHARED / "data" / "hotpotqa" / "hotpot_dev_distractor_first100.json"))
    parser.add_argument("--candidates", type=int, default=100)
    args = parser.parse_args()
    rows = read_hotpot_file(args.file)
    with tempfile.TemporaryDirectory() as scratch:
        folder = write_abstracts_corpus(scratch, abstracts_from_paragraphs(hotpot_paragraphs(rows)))
        corpus = read_abstracts_corpus(folder)
    bm25: dict[str, dict[str, float]] = {}

    def score(questions: list[str], candidates: list[list[str]]) -> list[list[float]]:  # BM25's score re-ranks
        for question in questions:
            if question not in bm25:
                hits = retriever.index.search([question], len(retriever.titles))[0]
                bm25[question] = {retriever.titles[i]: s for i, s in hits}
        return [[bm25[q].get(t, 0.0) for t in titles] for q, titles in zip(questions, candidates, strict=True)]

    retriever = FullWikiRetriever(corpus, score, candidates=args.candidates, keep=2, expand=15)
    links = sum(len(a.links) for a in corpus.articles.values())
    print(f"{len(rows)} questions, {len(corpus)} articles, {links} hyperlinks (title mentions)")
    stages = {}
    for k in (2, 10):
        top = retriever.index.search([r["question"] for r in rows], k)
        stages[f"BM25 top {k}"] = [retriever.graph_row(r, [retriever.titles[i] for i, _ in hit])
                                   for r, hit in zip(rows, top, strict=True)]  # fmt: skip
    plain = FullWikiRetriever(corpus, score, candidates=args.candidates, keep=2, expand=15, link_entities=False)
    stages["first stage, no title match"] = plain.retrieve(rows, expand=False)
    stages["first stage (BM25 top 2 + title match)"] = retriever.retrieve(rows, expand=False)
    stages["+ hyperlink expansion (top 15)"] = retriever.retrieve(rows, expand=True)
    bridge = [r.get("type") == "bridge" for r in rows]
    stages["paper: expansion for bridge only (gold type)"] = retriever.retrieve(rows, expand=bridge)
    print(f"{'stage':48s} " + " ".join(f"{k:>19s}" for k in figures(rows, stages["BM25 top 2"])))
    for name, graphs in stages.items():
        print(f"{name:48s} " + " ".join(f"{v:19.3f}" for v in figures(rows, graphs).values()))
    print(json.dumps({name: figures(rows, graphs) for name, graphs in stages.items()}))


if __name__ == "__main__":
    main()

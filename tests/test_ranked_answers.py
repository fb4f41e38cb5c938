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
"""Ranked answers with their scores (``answers_gesa.ranked_answers``), the one function behind the entity cloze
pipelines, ``run_record.py --do_predict`` and ``WikihopProcessor.rank_candidates``: against plain loops over the
definitions (sigmoid of the merged logit; softmax over a query's candidates)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from gesa.answers_gesa import answer_score, first_mentions, ranked_answers
from gesa.candidates_gesa import normalize_entity_string
from gesa.processing_wikihop import WikihopProcessor

ROOT = Path(__file__).resolve().parents[1]


def reference_sigmoid_ranking(ids, texts, logits, spans, top_k):
    """Max logit per normalised text over all windows of a query, the surface text of that best mention, its first
    mention, sigmoid score; best first (ties: first seen)."""
    groups: dict[str, dict[str, list]] = {}
    for example_id, row_texts, row in zip(ids, texts, logits, strict=True):
        query = groups.setdefault(example_id, {})
        for index in range(1, len(row_texts)):
            text = row_texts[index]
            if not text:
                continue
            key = normalize_entity_string(text)
            if key not in query or row[index] > query[key][1]:
                query[key] = [text, float(row[index])]
    out = {}
    for example_id, query in groups.items():
        first: dict[str, tuple[int, int]] = {}
        for ex, row_texts, row_spans in zip(ids, texts, spans, strict=True):
            if ex == example_id:
                for text, span in zip(row_texts[1:], row_spans[1:], strict=True):
                    if text and (text not in first or tuple(span) < first[text]):
                        first[text] = tuple(span)
        ranked = sorted(query.values(), key=lambda item: -item[1])[:top_k]
        out[example_id] = [
            {"answer": text, "score": 1 / (1 + math.exp(-logit)), "start": first[text][0], "end": first[text][1]}
            for text, logit in ranked
        ]
    return out


def test_window_scores_merge_into_sigmoid_scored_answers_like_a_plain_loop():
    rng = np.random.default_rng(0)
    ids = ["q1", "q1", "q2"]
    texts = [["", "Paris", "the Paris", "Lyon"], ["", "Lyon", "Nice", ""], ["", "Rome", "Milan", "rome"]]
    spans = [[(-1, -1), (0, 5), (10, 19), (30, 34)], [(-1, -1), (50, 54), (60, 64), (-1, -1)],
             [(-1, -1), (0, 4), (9, 14), (20, 24)]]  # fmt: skip
    logits = rng.normal(size=(3, 4)) * 3
    for top_k in (None, 1, 2):
        got = ranked_answers(ids, texts, logits, candidate_spans=spans, top_k=top_k)
        want = reference_sigmoid_ranking(ids, texts, logits, spans, top_k)
        assert list(got) == list(want)
        for example_id in want:
            assert [a["answer"] for a in got[example_id]] == [a["answer"] for a in want[example_id]]
            assert [(a["start"], a["end"]) for a in got[example_id]] == [(a["start"], a["end"]) for a in
                                                                         want[example_id]]  # fmt: skip
            assert [a["score"] for a in got[example_id]] == pytest.approx([a["score"] for a in want[example_id]])


def test_softmax_scores_sum_to_one_and_rank_as_the_logits():
    texts = [["", "france", "spain", "norway", ""]]
    logits = np.array([[9.0, 0.5, 2.0, -1.0, 7.0]])
    (answers,) = ranked_answers(["q"], texts, logits, score="softmax", same_answer=None).values()
    assert [a["answer"] for a in answers] == ["spain", "france", "norway"]
    values = np.array([2.0, 0.5, -1.0])
    expected = np.exp(values) / np.exp(values).sum()
    assert [a["score"] for a in answers] == pytest.approx(expected.tolist())
    assert set(answers[0]) == {"answer", "score"}  # no spans given: no start / end


def test_wikihop_rank_candidates_is_the_softmax_ranking_of_every_candidate():
    texts = [["", "the beatles", "beatles", "wings", ""], ["", "a", "b", "", ""]]
    logits = np.array([[0.0, 1.0, 1.0, 3.0, 5.0], [0.0, -2.0, 2.0, 9.0, 9.0]])
    ranked = WikihopProcessor.rank_candidates(["w1", "w2"], texts, logits)
    # candidates whose ReCoRD normalisation agrees stay apart (each WikiHop candidate is its own answer)
    assert [a["answer"] for a in ranked["w1"]] == ["wings", "the beatles", "beatles"]
    assert sum(a["score"] for a in ranked["w1"]) == pytest.approx(1.0)
    assert ranked == ranked_answers(["w1", "w2"], texts, logits, score="softmax", same_answer=None)
    with pytest.raises(ValueError, match="rank_candidates: query 'w1' has NaN scores"):
        WikihopProcessor.rank_candidates(["w1"], texts[:1], np.full((1, 5), np.nan))


def test_scores_are_stable_for_large_logits_and_minus_infinity():
    assert answer_score(800.0) == 1.0 and answer_score(-800.0) == 0.0 and answer_score(-math.inf) == 0.0
    assert answer_score(0.0) == 0.5
    with pytest.raises(ValueError, match="score must be one of"):
        ranked_answers(["q"], [["", "A"]], [[0.0, 1.0]], score="probability")


def test_first_mentions_give_each_candidate_its_earliest_span():
    passage = "Lyon and Nice; later Lyon again."
    spans = [(21, 25), (9, 13), (0, 4)]
    assert first_mentions(passage, spans, ["Lyon", "Nice", "Paris"]) == [(0, 4), (9, 13), (-1, -1)]


def calls(module: str, function: str) -> set[str]:
    """The names ``function`` of ``module`` calls."""
    tree = ast.parse((ROOT / f"{module.replace('.', '/')}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name | ast.Attribute):
                    found.add(call.func.id if isinstance(call.func, ast.Name) else call.func.attr)
    return found


@pytest.mark.parametrize(
    ("module", "function"),
    [("pipeline_cloze", "postprocess"), ("training.record", "decode"), ("processing_wikihop", "rank_candidates")],
)
def test_the_pipelines_do_predict_and_wikihop_rank_through_the_one_function(module, function):
    assert "ranked_answers" in calls(module, function)
    assert "answer_score" not in calls(module, function)  # no second scoring

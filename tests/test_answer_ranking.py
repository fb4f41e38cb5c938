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
"""Merging window scores into ranked answers (``answers_gesa.rank_window_answers`` behind
``GesaProcessor.rank_answers`` / ``post_process_predictions``): hand cases, errors, and a plain reference loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gesa import GesaProcessor


def test_window_scores_merge_by_normalised_text_hand_case():
    # q1 spans two windows; "Obama" is weak in window 0 and strongest in window 1 ("the Obama" normalises the same).
    example_ids = ["q1", "q1", "q2"]
    candidate_texts = [
        ["", "Obama", "Bush", "Clinton"],
        ["", "the Obama", "Bush"],  # shorter row: the trailing score is batch padding and is ignored
        ["", "Paris", "Lyon"],
    ]
    scores = np.array([[99.0, 0.1, 0.8, 0.5], [99.0, 0.9, 0.2, 50.0], [99.0, -1.0, -2.0, -100.0]])
    merged = GesaProcessor.post_process_predictions(example_ids, candidate_texts, scores)
    assert merged == {"q1": "the Obama", "q2": "Paris"}
    assert GesaProcessor.post_process_predictions(example_ids, candidate_texts, torch.tensor(scores)) == merged
    assert GesaProcessor.post_process_predictions(example_ids, candidate_texts, scores.tolist()) == merged
    ranked = GesaProcessor.rank_answers(example_ids, candidate_texts, scores)
    assert [entry["answer"] for entry in ranked["q1"]] == ["the Obama", "Bush", "Clinton"]
    assert [entry["logit"] for entry in ranked["q1"]] == [0.9, 0.8, 0.5]
    # equal scores: the text seen first wins; without window 1 the best text of q1 is Bush
    assert GesaProcessor.post_process_predictions(["q"], [["", "Lyon", "Paris"]], [[0.0, 0.5, 0.5]]) == {"q": "Lyon"}
    assert GesaProcessor.post_process_predictions(["q1"], candidate_texts[:1], scores[:1]) == {"q1": "Bush"}
    # XH graphs have no placeholder slot (first_candidate=0); "" slots are never candidates
    xh = GesaProcessor.rank_answers(["q"], [["Paris", "", "Lyon"]], [[0.3, 9.0, 0.4]], first_candidate=0)
    assert [entry["answer"] for entry in xh["q"]] == ["Lyon", "Paris"]


def test_a_query_without_any_candidate_is_an_error():
    with pytest.raises(ValueError, match="no candidate in any window"):
        GesaProcessor.rank_answers(["q1", "q2"], [["", "A"], [""]], np.zeros((2, 2)))


def test_rank_answers_checks_shapes():
    rank = GesaProcessor.rank_answers
    with pytest.raises(ValueError, match="same features"):
        rank(["q"], [["", "A"], ["", "B"]], np.zeros((1, 2)))
    with pytest.raises(ValueError, match="2-D"):
        rank(["q"], [["", "A"]], np.zeros(2))
    with pytest.raises(ValueError, match="2 candidate slots but only 1 logits"):
        rank(["q"], [["", "A"]], [[0.0]])
    with pytest.raises(ValueError, match="spans"):
        rank(["q"], [["", "A"]], [[0.0, 1.0]], candidate_spans=[[(0, 1)]])
    with pytest.raises(ValueError, match="first_candidate"):
        rank(["q"], [["", "A"]], [[0.0, 1.0]], first_candidate=2)


def _reference_ranking(example_ids, candidate_texts, scores):
    """A plain loop: per query, per normalised text, the best score and the surface text of the best mention."""
    from gesa.candidates_gesa import normalize_entity_string

    best: dict[str, dict[str, tuple[float, str]]] = {}
    for example_id, texts, row in zip(example_ids, candidate_texts, scores, strict=True):
        for text, score in zip(texts[1:], row[1:], strict=False):
            if not text:
                continue
            key = normalize_entity_string(text)
            current = best.setdefault(example_id, {}).get(key)
            if current is None or score > current[0]:
                best[example_id][key] = (score, text)
    return {
        example_id: [text for _, text in sorted(groups.values(), key=lambda pair: -pair[0])]
        for example_id, groups in best.items()
    }


@settings(max_examples=60, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q3"]),
            st.lists(st.sampled_from(["Paris", "paris", "The Paris", "Rome", "Anna", ""]), min_size=1, max_size=5),
            st.integers(0, 2**31),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_window_scores_merge_like_a_reference_loop(windows):
    windows = sorted(windows, key=lambda window: window[0])  # a query's windows are consecutive
    example_ids = [window[0] for window in windows]
    texts = [["", *window[1]] for window in windows]
    generator = np.random.default_rng(windows[0][2])
    scores = [generator.normal(size=len(row)).round(1).tolist() for row in texts]  # rounding: ties happen
    if not all(any(text for text in row[1:]) for row in texts):
        grouped = {}
        for example_id, row in zip(example_ids, texts, strict=True):
            grouped[example_id] = grouped.get(example_id, False) or any(row[1:])
        if not all(grouped.values()):
            with pytest.raises(ValueError, match="no candidate"):
                GesaProcessor.rank_answers(example_ids, texts, scores)
            return
    ranked = GesaProcessor.rank_answers(example_ids, texts, scores)
    expected = _reference_ranking(example_ids, texts, scores)
    assert {key: [entry["answer"] for entry in value] for key, value in ranked.items()} == expected
    top = GesaProcessor.post_process_predictions(example_ids, texts, scores)
    assert top == {key: value[0] for key, value in expected.items()}


def test_a_query_id_shared_by_two_queries_is_refused():
    with pytest.raises(ValueError, match="two different queries share"):
        GesaProcessor.rank_answers(["q1", "q2", "q1"], [["", "A"]] * 3, np.zeros((3, 2)))

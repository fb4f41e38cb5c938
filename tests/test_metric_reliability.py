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
"""The metric modules (HotpotQA, WikiHop, FEVER) refuse what the official scorers could not mean: a second
prediction for one id (the official prediction files are maps: one per id), a gold question without an answer, a
supporting fact whose title is not a string (``None`` must never match a paragraph titled "None", as in
``hotpot_evaluate_v1.py``, which compares the JSON values), and malformed facts or evidence, each error naming the
question or claim."""

from __future__ import annotations

from pathlib import Path

import evaluate
import pytest
from script_helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


hotpot_functions = load_script(
    ROOT / "training" / "metrics" / "hotpotqa" / "hotpotqa.py", "gesa_hotpot_metric_reliability"
)
wikihop_functions = load_script(
    ROOT / "training" / "metrics" / "wikihop" / "wikihop.py", "gesa_wikihop_metric_reliability"
)


@pytest.fixture(scope="module")
def hotpot():
    return evaluate.load(str(ROOT / "training" / "metrics" / "hotpotqa"))


@pytest.fixture(scope="module")
def wikihop():
    return evaluate.load(str(ROOT / "training" / "metrics" / "wikihop"))


@pytest.fixture(scope="module")
def fever():
    return evaluate.load(str(ROOT / "training" / "metrics" / "fever"))


GOLD = [{"id": "q1", "answer": "Paris", "supporting_facts": [["None", 0]]},
        {"id": "q2", "answer": "Lyon", "supporting_facts": [["None", 1]]}]  # fmt: skip
OTHER = {"id": "q2", "answer": "Lyon", "sp": [["None", 1]]}


def test_hotpot_duplicate_prediction_ids_are_refused_not_last_kept(hotpot):
    predictions = [{"id": "q1", "answer": "Paris", "sp": [["None", 0]]}, {"id": "q1", "answer": "Lyon", "sp": []}]
    with pytest.raises(ValueError, match="'q1' appears twice in the predictions"):
        hotpot.compute(predictions=predictions, references=GOLD)


def test_hotpot_predicted_title_none_never_matches_a_paragraph_titled_none(hotpot):
    with pytest.raises(ValueError, match=r"question 'q1'.*\[title <str>, sent_id <int>\]"):
        hotpot.compute(predictions=[{"id": "q1", "answer": "Paris", "sp": [[None, 0]]}, OTHER], references=GOLD)


@pytest.mark.parametrize("answer", [None, "", "  "])
def test_hotpot_reference_without_answer_is_refused_not_scored_against_empty(answer):
    with pytest.raises(ValueError, match="'q1' has no gold answer"):
        hotpot_functions.compute_hotpot_scores({"q1": ""}, {"q1": [["None", 0]]}, {"q1": (answer, [["None", 0]])})


@pytest.mark.parametrize("facts", [[["None"]], "None", [["None", "zero"]], [["None", True]]])
def test_hotpot_malformed_supporting_facts_name_the_question(hotpot, facts):
    with pytest.raises(ValueError, match="question 'q1'"):
        hotpot.compute(predictions=[{"id": "q1", "answer": "Paris", "sp": facts}, OTHER], references=GOLD)


def test_wikihop_duplicate_prediction_ids_are_refused_not_last_kept(wikihop):
    predictions = [{"id": "w1", "prediction_text": "france"}, {"id": "w1", "prediction_text": "spain"}]
    with pytest.raises(ValueError, match="'w1' appears twice"):
        wikihop.compute(
            predictions=predictions, references=[{"id": "w1", "answer": "france"}, {"id": "w2", "answer": "x"}]
        )


@pytest.mark.parametrize("answer", [None, ""])
def test_wikihop_reference_without_answer_is_refused_not_matched_by_a_missing_prediction(answer):
    with pytest.raises(ValueError, match="'w1' has no gold answer"):
        wikihop_functions.accuracy({"w2": "x"}, {"w1": answer})


def test_fever_duplicate_prediction_ids_are_refused_not_last_kept(fever):
    predictions = [{"id": "c1", "predicted_label": "SUPPORTS", "predicted_evidence": [["Lyon", 0]]},
                   {"id": "c1", "predicted_label": "REFUTES", "predicted_evidence": []}]  # fmt: skip
    references = [{"id": "c1", "label": "SUPPORTS", "evidence": [[[1, 2, "Lyon", 0]]]},
                  {"id": "c2", "label": "SUPPORTS", "evidence": [[[1, 2, "Lyon", 1]]]}]  # fmt: skip
    with pytest.raises(ValueError, match="'c1' appears twice in the predictions"):
        fever.compute(predictions=predictions, references=references)


def test_fever_malformed_evidence_names_the_claim(fever):
    references = [{"id": "c7", "label": "SUPPORTS", "evidence": [[1, 2, "Lyon", 0]]}]  # one level too shallow
    with pytest.raises(ValueError, match="claim 'c7'"):
        fever.compute(predictions=[{"id": "c7", "predicted_label": "SUPPORTS", "predicted_evidence": []}],
                      references=references)  # fmt: skip


@pytest.mark.parametrize(
    "predicted, gold",
    [
        ([["Lyon", "zero"]], [[[1, 2, "Lyon", 0]]]),  # a line that is no number
        ([["Lyon"]], [[[1, 2, "Lyon", 0]]]),  # a pair cut short
        ([["Lyon", 0, 1]], [[[1, 2, "Lyon", 0]]]),  # a pair too long
        ([], [[[None, 0]]]),  # a gold item of two fields, not four
        ([], [[[1, 2, "Lyon", "x"]]]),  # a gold line that is no number
        ([], [[1, 2, "Lyon", 0]]),  # gold evidence one level too shallow
        (["Lyon"], [[[1, 2, "Lyon", 0]]]),  # a predicted item that is a string
    ],
)
def test_fever_every_malformed_evidence_shape_names_its_claim(fever, predicted, gold):
    """Whatever the shape, the error names the claim (among others that are well formed) and is a ValueError."""
    predictions = [{"id": "c1", "predicted_label": "SUPPORTS", "predicted_evidence": [["Lyon", 0]]},
                   {"id": "c7", "predicted_label": "SUPPORTS", "predicted_evidence": predicted}]  # fmt: skip
    references = [{"id": "c1", "label": "SUPPORTS", "evidence": [[[1, 2, "Lyon", 0]]]},
                  {"id": "c7", "label": "SUPPORTS", "evidence": gold}]  # fmt: skip
    with pytest.raises(ValueError, match="claim 'c7'"):
        fever.compute(predictions=predictions, references=references)

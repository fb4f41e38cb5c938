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
"""The HotpotQA and FEVER metric modules: hand-counted fixtures, and equality with the official scorers.

The official scripts (``hotpot_evaluate_v1.py``, the FEVER shared task's ``fever/scorer.py``) are third-party and not
in the repository: point ``GESA_OFFICIAL_SCORERS`` at a folder holding ``hotpot_evaluate_v1.py`` and
``fever/src/fever/scorer.py`` to run the equality tests (they skip, saying why, otherwise).
"""

from __future__ import annotations

import ast
import copy
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import evaluate
import pytest
from script_helpers import load_script
from tiny_luke import HOTPOT_DIR

ROOT = Path(__file__).resolve().parents[1]
HOTPOT_DEV = HOTPOT_DIR / "hotpot_dev_distractor_first100.json"
OFFICIAL = os.environ.get("GESA_OFFICIAL_SCORERS")


hotpot = load_script(ROOT / "training" / "metrics" / "hotpotqa" / "hotpotqa.py", "gesa_hotpot_metric_under_test")
fever = load_script(ROOT / "training" / "metrics" / "fever" / "fever.py", "gesa_fever_metric_under_test")


def _official(relative: str) -> Path:
    if not OFFICIAL:
        pytest.skip(
            "GESA_OFFICIAL_SCORERS is unset: point it at the folder with the official scorers (docs/multihop.md)"
        )
    path = Path(OFFICIAL) / relative
    if not path.is_file():
        pytest.skip(f"GESA_OFFICIAL_SCORERS={OFFICIAL} has no {relative}")
    return path


# ---- HotpotQA, hand-counted ------------------------------------------------------------------------------------
GOLD = {
    "a": ("Eiffel Tower", [["Paris", 0], ["Paris", 1]]),
    "b": ("yes", [["X", 0], ["Y", 2]]),
    "c": ("the red fox", [["Fox", 3]]),
    "d": ("no", [["Z", 0]]),
}


def test_hotpot_scores_match_a_hand_count():
    answers = {"a": "the Eiffel Tower!", "b": "no", "c": "red dog fox", "d": "no"}
    sp = {"a": [["Paris", 0]], "b": [["X", 0], ["Y", 2]], "c": [["Fox", 3], ["Fox", 4]]}  # "d" has no sp
    scores = hotpot.compute_hotpot_scores(answers, sp, GOLD)
    # answers: a exact; b yes-vs-no 0; c 2 common tokens of 3 predicted / 2 gold; d exact
    c_prec, c_recall = 2 / 3, 1.0
    c_f1 = 2 * c_prec * c_recall / (c_prec + c_recall)
    assert scores["em"] == pytest.approx(2 / 4)
    assert scores["f1"] == pytest.approx((1 + 0 + c_f1 + 1) / 4)
    assert scores["prec"] == pytest.approx((1 + 0 + c_prec + 1) / 4)
    assert scores["recall"] == pytest.approx((1 + 0 + c_recall + 1) / 4)
    # sp: a 1/1 prec, 1/2 recall; b exact; c 1/2 prec, 1/1 recall; d missing -> 0
    assert scores["sp_em"] == pytest.approx(1 / 4)
    assert scores["sp_prec"] == pytest.approx((1 + 1 + 0.5 + 0) / 4)
    assert scores["sp_recall"] == pytest.approx((0.5 + 1 + 1 + 0) / 4)
    assert scores["sp_f1"] == pytest.approx((2 / 3 + 1 + 2 / 3 + 0) / 4)
    # joint: products of precisions / recalls; d (no sp) scores 0
    a = (1 * 1, 1 * 0.5)
    c = (c_prec * 0.5, c_recall * 1.0)
    assert scores["joint_prec"] == pytest.approx((a[0] + 0 + c[0]) / 4)
    assert scores["joint_recall"] == pytest.approx((a[1] + 0 + c[1]) / 4)
    f1 = [2 * p * r / (p + r) for p, r in (a, c)]
    assert scores["joint_f1"] == pytest.approx(sum(f1) / 4)
    assert scores["joint_em"] == 0.0


def test_hotpot_yes_no_only_match_themselves():
    assert hotpot.answer_scores("yes", "yes") == (1.0, 1.0, 1.0, 1.0)
    assert hotpot.answer_scores("yes it is", "yes") == (0.0, 0.0, 0.0, 0.0)
    assert hotpot.answer_scores("noanswer", "no answer")[1] == 0.0
    assert hotpot.answer_scores("The No", "no") == (1.0, 1.0, 1.0, 1.0)


def test_hotpot_evaluate_module_and_prediction_file_round_trip(tmp_path):
    metric = evaluate.load(str(ROOT / "training" / "metrics" / "hotpotqa"))
    predictions = [{"id": "a", "answer": "Eiffel Tower", "sp": [["Paris", 0]]}, {"id": "b", "answer": "yes", "sp": []}]
    references = [{"id": k, "answer": v[0], "supporting_facts": v[1]} for k, v in GOLD.items() if k in "ab"]
    scores = metric.compute(predictions=predictions, references=references)
    assert set(scores) == set(hotpot.METRIC_KEYS)
    assert scores["em"] == 1.0 and scores["sp_prec"] == pytest.approx(0.5) and scores["sp_recall"] == 0.25
    path = hotpot.write_prediction_file(tmp_path / "pred.json", {"a": "x"}, {"a": [("Paris", 0)]})
    assert json.loads(path.read_text()) == {"answer": {"a": "x"}, "sp": {"a": [["Paris", 0]]}}
    assert hotpot.read_prediction_file(path) == ({"a": "x"}, {"a": [["Paris", 0]]})
    (tmp_path / "bad.json").write_text('{"answers": {}}')
    with pytest.raises(ValueError, match="bad.json.*official HotpotQA prediction file"):
        hotpot.read_prediction_file(tmp_path / "bad.json")


def test_hotpot_rejects_malformed_facts():
    with pytest.raises(ValueError, match=r"sp\['a'\].*\[title, sent_id\] pair"):
        hotpot.compute_hotpot_scores({}, {"a": ["Paris"]}, GOLD)


# ---- HotpotQA against hotpot_evaluate_v1.py on the shared dev questions ---------------------------------------
def _official_gold() -> list[dict]:
    rows = json.loads(HOTPOT_DEV.read_text())
    gold = []
    for index, row in enumerate(rows):
        facts = row["supporting_facts"]
        gold.append(
            {
                "_id": f"dev-{index}",
                "answer": row["answer"],
                "supporting_facts": [list(f) for f in zip(facts["title"], facts["sent_id"], strict=True)],
            }
        )
    return gold


def _prediction_files(gold: list[dict]) -> dict[str, dict]:
    rng = random.Random(0)
    files = {
        "gold": {
            "answer": {g["_id"]: g["answer"] for g in gold},
            "sp": {g["_id"]: g["supporting_facts"] for g in gold},
        },
        "empty": {"answer": {}, "sp": {}},
        "blank": {"answer": {g["_id"]: "" for g in gold}, "sp": {g["_id"]: [] for g in gold}},
    }
    perturbed = {"answer": {}, "sp": {}}
    for position, g in enumerate(gold):
        answer, facts = g["answer"], [list(f) for f in g["supporting_facts"]]
        kind = position % 6
        if kind == 0:
            answer = "the " + answer.upper() + "."
        elif kind == 1:
            answer = answer.split()[0] + " extra words" if answer.split() else "x"
        elif kind == 2:
            answer = {"yes": "no", "no": "yes"}.get(answer, "yes")
        elif kind == 3:
            facts = facts[:1] + [[facts[0][0], 99]]
        elif kind == 4:
            facts = facts + [["Not A Title", 0]]
        if position % 5 != 4:
            perturbed["answer"][g["_id"]] = answer
        if position % 7 != 6:
            perturbed["sp"][g["_id"]] = facts if rng.random() < 0.8 else []
    files["perturbed"] = perturbed
    files["yes_no"] = {
        "answer": {g["_id"]: rng.choice(["yes", "no", "noanswer", "Yes.", g["answer"]]) for g in gold},
        "sp": {g["_id"]: g["supporting_facts"][:1] for g in gold},
    }
    return files


@pytest.mark.needs_shared
def test_hotpot_metric_equals_the_official_script_on_shared_dev(tmp_path):
    script = _official("hotpot_evaluate_v1.py")
    gold = _official_gold()
    gold_path = tmp_path / "hotpot_gold.json"
    gold_path.write_text(json.dumps(gold))
    references = {g["_id"]: (g["answer"], g["supporting_facts"]) for g in gold}
    metric = evaluate.load(str(ROOT / "training" / "metrics" / "hotpotqa"))
    for name, prediction in _prediction_files(gold).items():
        path = hotpot.write_prediction_file(tmp_path / f"pred_{name}.json", prediction["answer"], prediction["sp"])
        run = subprocess.run([sys.executable, str(script), str(path), str(gold_path)], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        official = ast.literal_eval(run.stdout.strip().splitlines()[-1])
        answers, sp = hotpot.read_prediction_file(path)
        ours = hotpot.compute_hotpot_scores(answers, sp, references)
        assert set(ours) == set(official), name
        for key, value in official.items():
            assert ours[key] == pytest.approx(value, abs=1e-9, rel=0), (name, key)
        if name == "gold":
            assert all(value == 1.0 for value in ours.values())
        if set(answers) == set(sp) == set(references):  # the evaluate module takes one prediction per reference
            module = metric.compute(
                predictions=[{"id": k, "answer": answers[k], "sp": sp[k]} for k in references],
                references=[{"id": k, "answer": a, "supporting_facts": f} for k, (a, f) in references.items()],
            )
            for key, value in official.items():
                assert module[key] == pytest.approx(value, abs=1e-9, rel=0), ("evaluate module", name, key)


# ---- FEVER, hand-counted ---------------------------------------------------------------------------------------
NEI_EVIDENCE = [[[101, None, None, None]]]
FEVER_GOLD = {
    # two alternative gold groups: (A,0) alone, or (B,1)+(B,2)
    "s1": ("SUPPORTS", [[[1, 1, "A", 0]], [[1, 2, "B", 1], [1, 3, "B", 2]]]),
    "r1": ("REFUTES", [[[2, 1, "C", 5]]]),
    "n1": ("NOT ENOUGH INFO", NEI_EVIDENCE),
    "s2": ("SUPPORTS", [[[3, 1, "D", 0], [3, 2, "E", 1]]]),
    "r2": ("REFUTES", [[[4, 1, "F", 0]]]),
}
FEVER_PREDICTIONS = {
    "s1": ("supports", [["B", 1], ["X", 0], ["B", 2]]),  # complete 2nd group; 2 of 3 are gold
    "r1": ("REFUTES", []),  # missing evidence: label right, not strict, precision 1 (nothing predicted), recall 0
    "n1": ("NOT ENOUGH INFO", [["Q", 1]]),  # NEI: strict on the label alone, no evidence scoring
    # more than 5 predicted: the gold (E,1) is 6th, so it does not count
    "s2": ("SUPPORTS", [["D", 0], ["X", 1], ["X", 2], ["X", 3], ["X", 4], ["E", 1]]),
    "r2": ("SUPPORTS", [["F", 0]]),  # wrong label, evidence still scored
}


def test_fever_scores_match_a_hand_count():
    scores = fever.compute_fever_scores(FEVER_PREDICTIONS, FEVER_GOLD)
    assert scores["label_accuracy"] == pytest.approx(4 / 5)
    assert scores["fever_score"] == pytest.approx(2 / 5)  # s1 and n1
    precision = (2 / 3 + 1.0 + 1 / 5 + 1.0) / 4  # s1, r1, s2, r2 (n1 does not count)
    recall = (1 + 0 + 0 + 1) / 4
    assert scores["evidence_precision"] == pytest.approx(precision)
    assert scores["evidence_recall"] == pytest.approx(recall)
    assert scores["evidence_f1"] == pytest.approx(2 * precision * recall / (precision + recall))


def test_fever_edge_cases():
    only_nei = {"n": ("NOT ENOUGH INFO", NEI_EVIDENCE)}
    scores = fever.compute_fever_scores({"n": ("NOT ENOUGH INFO", [])}, only_nei)
    assert scores == {
        "label_accuracy": 1.0,
        "fever_score": 1.0,
        "evidence_precision": 1.0,
        "evidence_recall": 0.0,
        "evidence_f1": 0.0,
    }
    with pytest.raises(ValueError, match="claim 'n' has no prediction"):
        fever.compute_fever_scores({}, only_nei)
    with pytest.raises(ValueError, match=r"claim 's'.*\[page <str>, line <int>\]"):
        fever.compute_fever_scores({"s": ("SUPPORTS", [["A", "0"]])}, {"s": FEVER_GOLD["s1"]})


def test_fever_evaluate_module():
    metric = evaluate.load(str(ROOT / "training" / "metrics" / "fever"))
    predictions = [
        {"id": k, "predicted_label": v[0], "predicted_evidence": v[1]} for k, v in FEVER_PREDICTIONS.items()
    ]
    references = [{"id": k, "label": v[0], "evidence": v[1]} for k, v in FEVER_GOLD.items()]
    scores = metric.compute(predictions=predictions, references=references)
    assert scores == pytest.approx(fever.compute_fever_scores(FEVER_PREDICTIONS, FEVER_GOLD))


# ---- FEVER against the shared task's scorer -------------------------------------------------------------------
def _fever_cases() -> list[tuple[dict, dict]]:
    """Shared-task-format claims covering every label and evidence case, with varied predictions."""
    rng = random.Random(1)
    pages = [f"Page_{i}" for i in range(6)]
    cases = []
    for index in range(60):
        label = fever.FEVER_LABELS[index % 3]
        if label == fever.NOT_ENOUGH_INFO:
            evidence = [[[index, None, None, None]]]
        else:
            evidence = [
                [[index, g * 10 + s, rng.choice(pages), rng.randrange(4)] for s in range(rng.randint(1, 3))]
                for g in range(rng.randint(1, 3))
            ]
        gold_sentences = [[e[2], e[3]] for group in evidence for e in group if e[3] is not None]
        kind = index % 5
        if kind == 0:
            predicted = []  # missing evidence
        elif kind == 1:
            predicted = [[rng.choice(pages), rng.randrange(4)] for _ in range(rng.randint(6, 9))]  # more than 5
            predicted[6:6] = gold_sentences
        elif kind == 2:
            predicted = list(gold_sentences)
        else:
            predicted = [[rng.choice(pages), rng.randrange(4)] for _ in range(rng.randint(1, 5))]
        predicted_label = label if rng.random() < 0.7 else rng.choice(fever.FEVER_LABELS).lower()
        cases.append(
            (
                {"id": index, "claim": f"claim {index}", "label": label, "evidence": evidence},
                {"id": index, "predicted_label": predicted_label, "predicted_evidence": predicted},
            )
        )
    return cases


def test_fever_metric_equals_the_official_scorer():
    scorer = load_script(_official("fever/src/fever/scorer.py"), "official_fever_scorer")
    cases = _fever_cases()
    subsets = {"all": cases, "supports_only": [c for c in cases if c[0]["label"] == "SUPPORTS"]}
    subsets["nei_and_refutes"] = [c for c in cases if c[0]["label"] != "SUPPORTS"]
    for name, subset in subsets.items():
        actual = [copy.deepcopy(gold) for gold, _ in subset]
        predictions = [copy.deepcopy(prediction) for _, prediction in subset]
        strict, accuracy, precision, recall, f1 = scorer.fever_score(predictions, actual)
        ours = fever.compute_fever_scores(
            {p["id"]: (p["predicted_label"], p["predicted_evidence"]) for _, p in subset},
            {g["id"]: (g["label"], g["evidence"]) for g, _ in subset},
        )
        expected = {
            "label_accuracy": accuracy,
            "fever_score": strict,
            "evidence_precision": precision,
            "evidence_recall": recall,
            "evidence_f1": f1,
        }
        for key, value in expected.items():
            assert ours[key] == pytest.approx(value, abs=1e-9, rel=0), (name, key)

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
"""The ReCoRD metric module (training/metrics/record/record.py) against a plain re-implementation of the official script.

The reference functions (``record_metric_reference``) are written out from the official ReCoRD v1.0 evaluation
script's definitions; they deliberately import nothing from the module under test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from record_metric_reference import ref_em, ref_evaluate, ref_f1, ref_normalize

ROOT = Path(__file__).resolve().parents[1]
METRIC_DIR = ROOT / "training" / "metrics" / "record"
SAMPLE_DEV = ROOT / "examples" / "data" / "record_sample_dev.jsonl"


def _load_module():
    spec = importlib.util.spec_from_file_location("gesa_record_metric_under_test", METRIC_DIR / "record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


record = _load_module()


# ---- random strings that exercise every normalisation rule ----------------------------------------------------
WORDS = [
    "a",
    "an",
    "the",
    "The",
    "A",
    "AN",
    "Obama",
    "banana",
    "theatre",
    "another",
    "U.S.",
    "St.",
    "O'Neil",
    "New",
    "York",
    "José",
    "naïve",
    "co-operate",
    "—",
    "–",
    "3-2",
    "2:19",
    "it's",
    "x",
    "y",
    "",
    "THE",
    "a.",
    "(the)",
]
SEPARATORS = [" ", "  ", "\t", "\n", ",", ".", "-", "'", " - ", "\u00a0"]


def random_text(rng: random.Random) -> str:
    n = rng.randint(0, 5)
    out = ""
    for _ in range(n):
        out += rng.choice(WORDS) + rng.choice(SEPARATORS)
    return out


def test_normalize_known_cases():
    assert record.normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert record.normalize_answer("An apple a day") == "apple day"
    assert record.normalize_answer("banana theatre another") == "banana theatre another"  # articles only whole words
    assert record.normalize_answer("U.S. (the) A.") == "us"  # punctuation goes first, then the articles
    assert record.normalize_answer("Tomás\u00a0Ferreira") == "tomás ferreira"
    assert record.normalize_answer("3–2") == "3–2"  # the en dash is not in string.punctuation: kept, as officially
    assert record.normalize_answer("") == ""
    assert record.normalize_answer("\u2014the\u2014") == "\u2014 \u2014"  # an article becomes a space, not nothing


def test_scores_known_cases():
    assert record.exact_match_score("the Obama", "Obama") == 1.0
    assert record.exact_match_score("Barack Obama", "Obama") == 0.0
    assert record.f1_score("Barack Obama", "Obama") == pytest.approx(2 / 3)
    assert record.f1_score("the", "a") == 0.0  # both normalise to nothing: no shared token, F1 0 (official)
    assert record.exact_match_score("the", "a") == 1.0
    assert record.f1_score("new new york", "new york york") == pytest.approx(2 / 3)
    assert record.metric_max_over_ground_truths(record.f1_score, "Obama", ["Bush", "Barack Obama"]) == pytest.approx(
        2 / 3
    )
    with pytest.raises(ValueError, match="at least one gold answer"):
        record.metric_max_over_ground_truths(record.f1_score, "Obama", [])


def test_functions_match_reference_on_random_strings():
    rng = random.Random(0)
    for _ in range(3000):
        a, b = random_text(rng), random_text(rng)
        assert record.normalize_answer(a) == ref_normalize(a), (a,)
        assert record.exact_match_score(a, b) == float(ref_em(a, b)), (a, b)
        assert record.f1_score(a, b) == pytest.approx(ref_f1(a, b), abs=1e-12), (a, b)


def test_compute_record_scores_known_values():
    predictions = {"q1": "the Eiffel Tower", "q2": "Barack Obama", "q3": "Paris", "unknown": "ignored"}
    references = {"q1": ["Eiffel Tower"], "q2": ["Obama", "Bush"], "q3": ["London"], "q4": ["Rome"]}
    scores = record.compute_record_scores(predictions, references)
    # q1 EM 1 F1 1; q2 EM 0 F1 2/3; q3 0 0; q4 unanswered 0 0 but counted
    assert scores["exact_match"] == pytest.approx(100 * 1 / 4)
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3) / 4)
    assert set(scores) == {"exact_match", "f1"}
    with pytest.raises(ValueError, match="at least one reference"):
        record.compute_record_scores({}, {})
    with pytest.raises(ValueError, match="no gold answer"):
        record.compute_record_scores({"q": "x"}, {"q": []})
    with pytest.raises(ValueError, match="list of answer strings"):
        record.compute_record_scores({"q": "x"}, {"q": "x"})


def test_compute_record_scores_matches_official_loop_on_sample():
    dataset = [json.loads(line) for line in SAMPLE_DEV.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(1)
    for trial in range(20):
        predictions = {}
        for passage in dataset:
            text = passage["passage"]["text"]
            entity_texts = [text[e["start"] : e["end"] + 1] for e in passage["passage"]["entities"]]
            for qa in passage["qas"]:
                if rng.random() < 0.1:
                    continue  # unanswered
                if rng.random() < 0.2:
                    predictions[qa["id"]] = random_text(rng)
                else:
                    predictions[qa["id"]] = rng.choice(entity_texts)
        if trial == 0:  # one all-correct round
            predictions = {qa["id"]: qa["answers"][0]["text"] for p in dataset for qa in p["qas"]}
        references = {qa["id"]: [a["text"] for a in qa["answers"]] for p in dataset for qa in p["qas"]}
        got = record.compute_record_scores(predictions, references)
        want = ref_evaluate(dataset, predictions)
        assert got["exact_match"] == pytest.approx(want["exact_match"], abs=1e-9)
        assert got["f1"] == pytest.approx(want["f1"], abs=1e-9)
        if trial == 0:
            assert got == {"exact_match": 100.0, "f1": 100.0}


def test_metric_class_in_process():
    metric = record.Record()
    out = metric.compute(
        predictions=[{"id": "q1", "prediction_text": "Barack Obama"}, {"id": "q2", "prediction_text": "x"}],
        references=[{"id": "q1", "answers": ["Obama"]}, {"id": "q2", "answers": ["x", "y"]}],
    )
    assert out["exact_match"] == pytest.approx(50.0)
    assert out["f1"] == pytest.approx(100 * (2 / 3 + 1) / 2)
    with pytest.raises(ValueError, match="appears twice"):
        record.Record().compute(
            predictions=[{"id": "q1", "prediction_text": "x"}, {"id": "q2", "prediction_text": "x"}],
            references=[{"id": "q1", "answers": ["x"]}, {"id": "q1", "answers": ["y"]}],
        )


def test_evaluate_load_from_local_path_offline(tmp_path):
    """``evaluate.load("<repo>/metrics/record")`` works with the Hub switched off, in a fresh process."""
    code = (
        "import json, sys, evaluate\n"
        "m = evaluate.load(sys.argv[1])\n"
        "print(json.dumps(m.compute(predictions=[{'id': 'a', 'prediction_text': 'the Eiffel Tower'},"
        " {'id': 'b', 'prediction_text': 'Barack Obama'}],"
        " references=[{'id': 'a', 'answers': ['Eiffel Tower']}, {'id': 'b', 'answers': ['Obama']}])))\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_EVALUATE_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    env["HF_HOME"] = str(tmp_path / "hf_home")
    env["HF_MODULES_CACHE"] = str(tmp_path / "modules")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(METRIC_DIR)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["exact_match"] == pytest.approx(50.0)
    assert out["f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)

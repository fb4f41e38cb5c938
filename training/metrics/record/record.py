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
"""The ReCoRD metric (exact match and token F1), as the official ReCoRD v1.0 evaluation script defines it.

Two ways to use it:

* as an ``evaluate`` module, offline, from its folder::

      import evaluate
      record = evaluate.load("path/to/gesa/metrics/record")
      record.compute(
          predictions=[{"id": "q1", "prediction_text": "Barack Obama"}],
          references=[{"id": "q1", "answers": ["Obama", "Barack Obama"]}],
      )  # {'exact_match': 100.0, 'f1': 100.0}

* as plain functions, after importing this file by path (it imports nothing from the rest of gesa):
  ``normalize_answer``, ``exact_match_score``, ``f1_score``, ``metric_max_over_ground_truths``,
  ``compute_record_scores``. (Turning per-window candidate scores into one answer per query is the processor's job:
  ``GesaProcessor.rank_answers``, which ``examples/run_record.py`` uses to write ``eval_predictions.json``.)

Official definitions reproduced here:

* ``normalize_answer``: lower-case, drop every ``string.punctuation`` character, replace the whole words
  ``a``/``an``/``the`` by a space, collapse whitespace.
* exact match: normalised strings equal; token F1: bag-of-tokens overlap of the normalised strings (0 when
  nothing overlaps, including when either side normalises to nothing).
* per query: the maximum over its gold answers; overall: the mean over all reference queries, in percent.
  A reference query with no prediction scores 0 (and still counts); predictions for unknown ids are ignored.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import datasets
import evaluate

_CITATION = """\
@article{zhang2018record,
  title={{ReCoRD}: Bridging the Gap between Human and Machine Commonsense Reading Comprehension},
  author={Zhang, Sheng and Liu, Xiaodong and Liu, Jingjing and Gao, Jianfeng and Duh, Kevin and Van Durme, Benjamin},
  journal={arXiv preprint arXiv:1810.12885},
  year={2018}
}
"""

_DESCRIPTION = """\
ReCoRD (Reading Comprehension with Commonsense Reasoning Dataset) is scored with exact match (EM) and token-level
F1 after answer normalisation (lower case, no punctuation, no articles a/an/the, single spaces), taking for each
query the best score over its gold answers and averaging over queries, in percent. This module reproduces the
official ReCoRD v1.0 evaluation script.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of dicts, one per query, with
        - 'id': the query id (str),
        - 'prediction_text': the predicted answer (str).
    references: list of dicts, one per query, with
        - 'id': the query id (str), unique,
        - 'answers': the gold answer strings (list of str, at least one).
Returns:
    'exact_match': mean exact match over the reference queries, in percent (0-100),
    'f1': mean token F1 over the reference queries, in percent (0-100).
    A reference query without a prediction scores 0 on both. (``evaluate`` itself insists on as many prediction
    rows as reference rows; to score a partial prediction file call ``compute_record_scores`` directly.)
Examples:
    >>> record = evaluate.load("metrics/record")
    >>> record.compute(
    ...     predictions=[{"id": "q1", "prediction_text": "the Eiffel Tower"}],
    ...     references=[{"id": "q1", "answers": ["Eiffel Tower"]}],
    ... )
    {'exact_match': 100.0, 'f1': 100.0}
"""

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (official ReCoRD normalisation)."""
    text = s.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction: str, ground_truth: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token-level F1 between the normalised strings (0.0 when no token is shared)."""
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(ground_truth_tokens)
    return 2 * precision * recall / (precision + recall)


def metric_max_over_ground_truths(
    metric_fn: Callable[[str, str], float], prediction: str, ground_truths: Iterable[str]
) -> float:
    """The best score of ``prediction`` against any of the gold answers."""
    scores = [metric_fn(prediction, ground_truth) for ground_truth in ground_truths]
    if not scores:
        raise ValueError("metric_max_over_ground_truths needs at least one gold answer.")
    return max(scores)


def compute_record_scores(predictions: Mapping[str, str], references: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Official ReCoRD EM and F1 (percent) of ``{query_id: answer_text}`` against ``{query_id: [gold texts]}``.

    Every reference query counts; a missing prediction scores 0. Predictions for ids absent from
    ``references`` are ignored, as in the official script.

    Raises:
        ValueError: when ``references`` is empty or a query has no gold answer (the official script would
            fail on it too), or when an answer is not a string.
    """
    if not references:
        raise ValueError("compute_record_scores needs at least one reference query.")
    exact_match = f1 = 0.0
    for query_id, ground_truths in references.items():
        if isinstance(ground_truths, str):
            raise ValueError(f"references[{query_id!r}] must be a list of answer strings, not a single string.")
        ground_truths = list(ground_truths)
        if not ground_truths:
            raise ValueError(f"references[{query_id!r}] has no gold answer.")
        if query_id not in predictions:
            continue
        prediction = predictions[query_id]
        if not isinstance(prediction, str):
            raise ValueError(f"predictions[{query_id!r}] must be a string, got {type(prediction).__name__}.")
        exact_match += metric_max_over_ground_truths(exact_match_score, prediction, ground_truths)
        f1 += metric_max_over_ground_truths(f1_score, prediction, ground_truths)
    total = len(references)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Record(evaluate.Metric):
    """``evaluate`` wrapper around :func:`compute_record_scores`."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": {"id": datasets.Value("string"), "prediction_text": datasets.Value("string")},
                    "references": {
                        "id": datasets.Value("string"),
                        "answers": datasets.Sequence(datasets.Value("string")),
                    },
                }
            ),
            codebase_urls=["https://sheng-z.github.io/ReCoRD-explorer/"],
            reference_urls=["https://arxiv.org/abs/1810.12885"],
        )

    def _compute(self, predictions: list[dict], references: list[dict]) -> dict[str, float]:
        predicted = {p["id"]: p["prediction_text"] for p in predictions}
        gold: dict[str, list[str]] = {}
        for reference in references:
            if reference["id"] in gold:
                raise ValueError(f"Query id {reference['id']!r} appears twice in the references.")
            gold[reference["id"]] = list(reference["answers"])
        return compute_record_scores(predicted, gold)


__all__ = [
    "Record",
    "compute_record_scores",
    "exact_match_score",
    "f1_score",
    "metric_max_over_ground_truths",
    "normalize_answer",
]

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
"""The HotpotQA metric (answer, supporting facts and joint EM/F1/precision/recall), as the official
``hotpot_evaluate_v1.py`` defines it.

Two ways to use it:

* as an ``evaluate`` module, offline, from its folder::

      import evaluate
      hotpot = evaluate.load("path/to/gesa/metrics/hotpotqa")
      hotpot.compute(
          predictions=[{"id": "q1", "answer": "yes", "sp": [["Ed Wood", 0]]}],
          references=[{"id": "q1", "answer": "yes", "supporting_facts": [["Ed Wood", 0]]}],
      )  # {'em': 1.0, 'f1': 1.0, ..., 'joint_recall': 1.0}

* as plain functions, after importing this file by path (it imports nothing from the rest of gesa):
  ``compute_hotpot_scores`` on ``{id: answer}``/``{id: [[title, sent_id], ...]}`` dicts, and
  ``read_prediction_file`` / ``write_prediction_file`` for the official prediction file
  ``{"answer": {id: text}, "sp": {id: [[title, sent_id], ...]}}``.

Official rules reproduced here:

* answer normalisation: lower-case, drop ``string.punctuation``, replace the whole words ``a``/``an``/``the`` by a
  space, collapse whitespace; EM: normalised strings equal; F1/precision/recall: bag-of-tokens overlap, and 0 on all
  three whenever either side normalises to ``yes``/``no``/``noanswer`` and the two differ.
* supporting facts: sets of ``(title, sent_id)``; precision ``tp/(tp+fp)`` (0 when nothing predicted), recall
  ``tp/(tp+fn)``, EM 1 when the sets are equal.
* joint: precision = answer precision x sp precision, recall likewise, F1 from those two, EM = answer EM x sp EM.
* every score is a mean over ALL reference questions, as a fraction of 1; a question without an answer
  prediction scores 0 on the answer keys, without an sp prediction 0 on the sp keys, and without either 0 on the
  joint keys. Predictions for unknown ids are ignored.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
import evaluate

_CITATION = """\
@inproceedings{yang2018hotpotqa,
  title={{HotpotQA}: A Dataset for Diverse, Explainable Multi-hop Question Answering},
  author={Yang, Zhilin and Qi, Peng and Zhang, Saizheng and Bengio, Yoshua and Cohen, William W. and
          Salakhutdinov, Ruslan and Manning, Christopher D.},
  booktitle={EMNLP},
  year={2018}
}
"""

_DESCRIPTION = """\
HotpotQA is scored on the answer (exact match, token F1/precision/recall after normalisation, yes/no/noanswer only
matching themselves), on the supporting facts (set EM/F1/precision/recall of (title, sentence id) pairs) and jointly
(products of the two precisions and recalls). Scores are fractions of 1 averaged over all gold questions, as in the
official hotpot_evaluate_v1.py.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of dicts, one per question, with
        - 'id': the question id (str, the official '_id'),
        - 'answer': the predicted answer text (str),
        - 'sp': the predicted supporting facts, a list of [title, sent_id] pairs.
    references: list of dicts, one per question, with
        - 'id': the question id (str), unique,
        - 'answer': the gold answer (str),
        - 'supporting_facts': the gold supporting facts, a list of [title, sent_id] pairs.
Returns:
    'em', 'f1', 'prec', 'recall', 'sp_em', 'sp_f1', 'sp_prec', 'sp_recall', 'joint_em', 'joint_f1', 'joint_prec',
    'joint_recall': means over the reference questions, fractions of 1 (the official script's keys and scale).
Examples:
    >>> hotpot = evaluate.load("metrics/hotpotqa")
    >>> hotpot.compute(
    ...     predictions=[{"id": "q1", "answer": "the Eiffel Tower", "sp": [["Paris", 0]]}],
    ...     references=[{"id": "q1", "answer": "Eiffel Tower", "supporting_facts": [["Paris", 0], ["Paris", 1]]}],
    ... )["joint_f1"]
    0.6666666666666666
"""

METRIC_KEYS = (
    "em", "f1", "prec", "recall",
    "sp_em", "sp_f1", "sp_prec", "sp_recall",
    "joint_em", "joint_f1", "joint_prec", "joint_recall",
)  # fmt: skip
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_SPECIAL_ANSWERS = ("yes", "no", "noanswer")


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (official HotpotQA normalisation)."""
    text = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_scores(prediction: str, gold: str) -> tuple[float, float, float, float]:
    """``(em, f1, precision, recall)`` of one answer against its gold answer."""
    predicted, expected = normalize_answer(prediction), normalize_answer(gold)
    em = float(predicted == expected)
    if predicted != expected and (predicted in _SPECIAL_ANSWERS or expected in _SPECIAL_ANSWERS):
        return em, 0.0, 0.0, 0.0
    predicted_tokens, expected_tokens = predicted.split(), expected.split()
    same = sum((Counter(predicted_tokens) & Counter(expected_tokens)).values())
    if same == 0:
        return em, 0.0, 0.0, 0.0
    precision, recall = same / len(predicted_tokens), same / len(expected_tokens)
    return em, 2 * precision * recall / (precision + recall), precision, recall


def _fact_set(facts: Iterable[Sequence[Any]], name: str) -> set[tuple[str, int]]:
    out = set()
    for fact in facts:
        if isinstance(fact, (str, bytes)) or not isinstance(fact, Sequence) or len(fact) != 2:
            raise ValueError(f"{name}: every supporting fact must be a [title, sent_id] pair, got {fact!r}.")
        out.add((fact[0], fact[1]))
    return out


def _check_fact(fact: Any, name: str) -> tuple[str, int]:
    """``(title, sent_id)`` of one ``[title <str>, sent_id <int>]`` fact; a ``ValueError`` naming ``name`` otherwise
    (a ``None`` title is no title: it must never match a paragraph titled "None")."""
    if isinstance(fact, (str, bytes)) or not isinstance(fact, Sequence) or len(fact) != 2:
        raise ValueError(f"{name}: every supporting fact must be a [title, sent_id] pair, got {fact!r}.")
    title, sent_id = fact
    if not isinstance(title, str) or isinstance(sent_id, bool) or not isinstance(sent_id, int):
        raise ValueError(f"{name}: a supporting fact is [title <str>, sent_id <int>], got {list(fact)!r}.")
    return title, sent_id


def supporting_fact_scores(
    prediction: Iterable[Sequence[Any]], gold: Iterable[Sequence[Any]], name: str = "sp"
) -> tuple[float, float, float, float]:
    """``(em, f1, precision, recall)`` of a set of ``[title, sent_id]`` facts against the gold set."""
    predicted, expected = _fact_set(prediction, name), _fact_set(gold, name)
    tp = len(predicted & expected)
    fp, fn = len(predicted) - tp, len(expected) - tp
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return float(fp + fn == 0), f1, precision, recall


def compute_hotpot_scores(
    answers: Mapping[str, str],
    supporting_facts: Mapping[str, Sequence[Sequence[Any]]],
    references: Mapping[str, tuple[str, Sequence[Sequence[Any]]]],
) -> dict[str, float]:
    """The official HotpotQA scores of ``{id: answer}`` and ``{id: facts}`` against ``{id: (answer, facts)}``.

    Raises:
        ValueError: when ``references`` is empty, a reference has no gold answer (``None`` or blank: a test file is
            never scored against ""), or an answer is not a string / a fact not a pair (naming the id).
    """
    if not references:
        raise ValueError("compute_hotpot_scores needs at least one reference question.")
    totals = dict.fromkeys(METRIC_KEYS, 0.0)
    for question_id, (gold_answer, gold_facts) in references.items():
        if not isinstance(gold_answer, str) or not gold_answer.strip():
            raise ValueError(
                f"reference question {question_id!r} has no gold answer ({gold_answer!r}): a file without answers "
                "(a test split) cannot be scored; score only labelled questions, or predict without evaluating."
            )
        answer = sp = None
        if question_id in answers:
            prediction = answers[question_id]
            if not isinstance(prediction, str):
                raise ValueError(
                    f"answer[{question_id!r}] must be a string, got {type(prediction).__name__}; give the answer text."
                )
            answer = answer_scores(prediction, gold_answer)
            for key, value in zip(("em", "f1", "prec", "recall"), answer, strict=True):
                totals[key] += value
        if question_id in supporting_facts:
            sp = supporting_fact_scores(supporting_facts[question_id], gold_facts, name=f"sp[{question_id!r}]")
            for key, value in zip(("sp_em", "sp_f1", "sp_prec", "sp_recall"), sp, strict=True):
                totals[key] += value
        if answer is not None and sp is not None:
            precision, recall = answer[2] * sp[2], answer[3] * sp[3]
            totals["joint_prec"] += precision
            totals["joint_recall"] += recall
            totals["joint_f1"] += 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
            totals["joint_em"] += answer[0] * sp[0]
    return {key: value / len(references) for key, value in totals.items()}


def write_prediction_file(
    path: str | Path, answers: Mapping[str, str], supporting_facts: Mapping[str, Sequence[Sequence[Any]]]
) -> Path:
    """Write the official prediction file ``{"answer": {id: text}, "sp": {id: [[title, sent_id], ...]}}``."""
    path = Path(path)
    payload = {
        "answer": {str(k): str(v) for k, v in answers.items()},
        "sp": {str(k): [[str(t), int(s)] for t, s in facts] for k, facts in supporting_facts.items()},
    }
    path.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
    return path


def read_prediction_file(path: str | Path) -> tuple[dict[str, str], dict[str, list[list[Any]]]]:
    """Read the official prediction file; returns ``(answers, supporting_facts)``.

    Raises:
        ValueError: naming the file and the key when it is not ``{"answer": {...}, "sp": {...}}``.
    """
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error}); write it with write_prediction_file.") from error
    if not isinstance(payload, dict) or not isinstance(payload.get("answer"), dict):
        raise ValueError(f'{path}: an official HotpotQA prediction file is {{"answer": {{id: text}}, "sp": {{...}}}}.')
    sp = payload.get("sp", {})
    if not isinstance(sp, dict):
        raise ValueError(f'{path}: "sp" must map question ids to [[title, sent_id], ...] lists.')
    for question_id, facts in sp.items():
        if not isinstance(facts, list) or any(not isinstance(f, list) or len(f) != 2 for f in facts):
            raise ValueError(f'{path}: "sp"[{question_id!r}] must be a list of [title, sent_id] pairs.')
    return payload["answer"], sp


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Hotpotqa(evaluate.Metric):
    """``evaluate`` wrapper around :func:`compute_hotpot_scores`."""

    def _info(self) -> evaluate.MetricInfo:
        fact = datasets.Sequence(datasets.Value("string"))
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": {
                        "id": datasets.Value("string"),
                        "answer": datasets.Value("string"),
                        "sp": datasets.Sequence(fact),
                    },
                    "references": {
                        "id": datasets.Value("string"),
                        "answer": datasets.Value("string"),
                        "supporting_facts": datasets.Sequence(fact),
                    },
                }
            ),
            codebase_urls=["https://github.com/hotpotqa/hotpot"],
            reference_urls=["https://arxiv.org/abs/1809.09600"],
        )

    @staticmethod
    def _as_strings(rows: Any, key: str) -> Any:
        """Arrow wants one type per column: each [title, sent_id] travels as two strings, once checked to be
        ``[title <str>, sent_id <int>]`` (a ``ValueError`` naming the question otherwise)."""
        if rows is None:
            return rows
        out = []
        for position, row in enumerate(rows):
            if isinstance(row, Mapping) and key in row:
                name = f"{key} of question {row.get('id', f'#{position}')!r}"
                if isinstance(row[key], (str, bytes)) or not isinstance(row[key], Sequence):
                    raise ValueError(f"{name}: must be a list of [title, sent_id] pairs, got {row[key]!r}.")
                facts = [[title, str(sent_id)] for title, sent_id in (_check_fact(f, name) for f in row[key])]
                row = {**row, key: facts}
            out.append(row)
        return out

    def add_batch(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> None:
        """Add a batch of predictions and references (nested evidence cast to strings for Arrow)."""
        predictions = self._as_strings(predictions, "sp")
        references = self._as_strings(references, "supporting_facts")
        super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction: Any = None, reference: Any = None, **kwargs: Any) -> None:
        """Add one prediction and reference (nested evidence cast to strings for Arrow)."""
        prediction = None if prediction is None else self._as_strings([prediction], "sp")[0]
        reference = None if reference is None else self._as_strings([reference], "supporting_facts")[0]
        super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions: list[dict], references: list[dict]) -> dict[str, float]:
        # the features store [title, sent_id] as strings; sentence ids come back as ints here
        def facts(rows: Sequence[Sequence[str]]) -> list[tuple[str, int]]:
            return [(title, int(sent_id)) for title, sent_id in rows]

        gold: dict[str, tuple[str, list]] = {}
        for reference in references:
            if reference["id"] in gold:
                raise ValueError(f"Question id {reference['id']!r} appears twice in the references.")
            gold[reference["id"]] = (reference["answer"], facts(reference["supporting_facts"]))
        answers, sp = {}, {}
        for prediction in predictions:
            if prediction["id"] in answers:
                raise ValueError(
                    f"Question id {prediction['id']!r} appears twice in the predictions; give one prediction per "
                    "question (the official prediction file maps each id to one answer)."
                )
            answers[prediction["id"]] = prediction["answer"]
            sp[prediction["id"]] = facts(prediction["sp"])
        return compute_hotpot_scores(answers, sp, gold)


__all__ = [
    "METRIC_KEYS",
    "Hotpotqa",
    "answer_scores",
    "compute_hotpot_scores",
    "normalize_answer",
    "read_prediction_file",
    "supporting_fact_scores",
    "write_prediction_file",
]

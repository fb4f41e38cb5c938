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
"""The FEVER metric (label accuracy, FEVER score, evidence precision/recall/F1), as the FEVER shared task's official
scorer (``fever.scorer.fever_score``) computes them.

Two ways to use it:

* as an ``evaluate`` module, offline, from its folder::

      import evaluate
      fever = evaluate.load("path/to/gesa/metrics/fever")
      fever.compute(
          predictions=[{"id": "1", "predicted_label": "SUPPORTS", "predicted_evidence": [["Paris", 0]]}],
          references=[{"id": "1", "label": "SUPPORTS", "evidence": [[[None, None, "Paris", 0]]]}],
      )

* as plain functions, after importing this file by path (it imports nothing from the rest of gesa):
  ``compute_fever_scores``, ``strictly_correct``, ``evidence_precision``, ``evidence_recall``.

Official rules reproduced here (fractions of 1, means over claims):

* label accuracy: the predicted label equals the gold one, case-insensitively.
* FEVER score (strict): the label is right AND, unless the gold label is NOT ENOUGH INFO, one complete gold evidence
  group (its ``[page, line]`` sentences) is among the first ``max_evidence`` (5) predicted sentences.
* evidence precision: per claim whose gold label is not NOT ENOUGH INFO, the share of the first 5 predicted sentences
  that are gold sentences (1 when nothing is predicted); averaged over those claims (1 when there are none).
* evidence recall: per such claim, 1 when one complete gold group is among the first 5 predicted (or the claim has
  no gold group), else 0; averaged over those claims (0 when there are none).
* evidence F1: ``2 P R / (P + R)``; where the official scorer divides by zero (P + R = 0) this returns 0.
* NOT ENOUGH INFO claims count for accuracy and the FEVER score only; a claim needs a prediction (the official
  scorer pairs every gold claim with one), so a missing id is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import datasets
import evaluate

_CITATION = """\
@inproceedings{thorne2018fever,
  title={{FEVER}: a Large-scale Dataset for Fact Extraction and {VER}ification},
  author={Thorne, James and Vlachos, Andreas and Christodoulopoulos, Christos and Mittal, Arpit},
  booktitle={NAACL-HLT},
  year={2018}
}
"""

_DESCRIPTION = """\
FEVER claims are scored on the label (accuracy) and on the label together with a complete set of gold evidence among
the first five predicted sentences (the FEVER score), plus macro evidence precision, recall and F1 over the claims
that have evidence (not NOT ENOUGH INFO), as the FEVER shared task's official scorer computes them.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of dicts, one per claim, with
        - 'id': the claim id (str),
        - 'predicted_label': SUPPORTS / REFUTES / NOT ENOUGH INFO (str, any case),
        - 'predicted_evidence': ranked [page, line] pairs (only the first 5 count).
    references: list of dicts, one per claim, with
        - 'id': the claim id (str), unique,
        - 'label': the gold label (str),
        - 'evidence': the gold evidence groups, each a list of [annotation_id, evidence_id, page, line]
          (page/line null for NOT ENOUGH INFO).
    max_evidence: how many predicted sentences count (default 5, the shared task's limit).
Returns:
    'label_accuracy', 'fever_score', 'evidence_precision', 'evidence_recall', 'evidence_f1': fractions of 1.
"""

NOT_ENOUGH_INFO = "NOT ENOUGH INFO"
FEVER_LABELS = ("SUPPORTS", "REFUTES", NOT_ENOUGH_INFO)
MAX_EVIDENCE = 5


def _pairs(evidence: Sequence[Sequence[Any]], name: str) -> list[list[Any]]:
    out = []
    for item in evidence:
        if isinstance(item, (str, bytes)) or len(item) != 2:
            raise ValueError(f"{name}: every predicted evidence item must be a [page, line] pair, got {item!r}.")
        page, line = item
        if not isinstance(page, str) or isinstance(line, bool) or not isinstance(line, int):
            raise ValueError(f"{name}: predicted evidence must be [page <str>, line <int>], got {item!r}.")
        out.append([page, line])
    return out


def _groups(evidence: Sequence[Sequence[Sequence[Any]]], name: str) -> list[list[list[Any]]]:
    groups = []
    for group in evidence:
        sentences = []
        for item in group:
            if isinstance(item, (str, bytes)) or len(item) != 4:
                raise ValueError(
                    f"{name}: gold evidence is a list of groups of [annotation_id, evidence_id, page, line], got "
                    f"{item!r}."
                )
            sentences.append([item[2], item[3]])
        groups.append(sentences)
    return groups


def is_not_enough_info(label: str) -> bool:
    return label.upper() == NOT_ENOUGH_INFO


def strictly_correct(
    label: str, predicted_label: str, groups: Sequence[Sequence[Sequence[Any]]], predicted: Sequence[Sequence[Any]]
) -> bool:
    """Right label and (unless NOT ENOUGH INFO) a complete gold group among ``predicted`` (already cut to 5)."""
    if label.upper() != predicted_label.upper():
        return False
    if is_not_enough_info(label):
        return True
    return any(all(list(sentence) in predicted for sentence in group) for group in groups)


def evidence_precision(
    label: str, groups: Sequence[Sequence[Sequence[Any]]], predicted: Sequence[Sequence[Any]]
) -> tuple[float, float]:
    """``(precision, counts)``: the claim's precision and whether it counts (0 for NOT ENOUGH INFO)."""
    if is_not_enough_info(label):
        return 0.0, 0.0
    gold = [sentence for group in groups for sentence in group if sentence[1] is not None]
    if not predicted:
        return 1.0, 1.0
    return sum(1.0 for item in predicted if item in gold) / len(predicted), 1.0


def evidence_recall(
    label: str, groups: Sequence[Sequence[Sequence[Any]]], predicted: Sequence[Sequence[Any]]
) -> tuple[float, float]:
    """``(recall, counts)``: 1 when a complete gold group is predicted (or there is none); NOT ENOUGH INFO: 0, 0."""
    if is_not_enough_info(label):
        return 0.0, 0.0
    if not groups:
        return 1.0, 1.0
    hit = any(all(sentence in predicted for sentence in group) for group in groups)
    return float(hit), 1.0


def compute_fever_scores(
    predictions: Mapping[str, tuple[str, Sequence[Sequence[Any]]]],
    references: Mapping[str, tuple[str, Sequence[Sequence[Sequence[Any]]]]],
    max_evidence: int = MAX_EVIDENCE,
) -> dict[str, float]:
    """Official FEVER scores of ``{id: (predicted_label, [[page, line], ...])}`` against
    ``{id: (label, evidence groups)}``.

    Raises:
        ValueError: when ``references`` is empty, a claim has no prediction, or an evidence item is malformed
            (naming the claim id).
    """
    if not references:
        raise ValueError("compute_fever_scores needs at least one reference claim.")
    correct = strict = precision = precision_hits = recall = recall_hits = 0.0
    for claim_id, (label, evidence) in references.items():
        if claim_id not in predictions:
            raise ValueError(
                f"claim {claim_id!r} has no prediction; the FEVER scorer needs one per gold claim (predict "
                "NOT ENOUGH INFO with no evidence to abstain)."
            )
        predicted_label, predicted_evidence = predictions[claim_id]
        if not isinstance(predicted_label, str) or not isinstance(label, str):
            raise ValueError(f"claim {claim_id!r}: labels must be strings, one of {FEVER_LABELS}.")
        predicted = _pairs(predicted_evidence, f"predicted_evidence of claim {claim_id!r}")[:max_evidence]
        groups = _groups(evidence, f"evidence of claim {claim_id!r}")
        if label.upper() == predicted_label.upper():
            correct += 1.0
            strict += float(strictly_correct(label, predicted_label, groups, predicted))
        value, hits = evidence_precision(label, groups, predicted)
        precision, precision_hits = precision + value, precision_hits + hits
        value, hits = evidence_recall(label, groups, predicted)
        recall, recall_hits = recall + value, recall_hits + hits
    total = len(references)
    macro_precision = precision / precision_hits if precision_hits > 0 else 1.0
    macro_recall = recall / recall_hits if recall_hits > 0 else 0.0
    denominator = macro_precision + macro_recall
    return {
        "label_accuracy": correct / total,
        "fever_score": strict / total,
        "evidence_precision": macro_precision,
        "evidence_recall": macro_recall,
        "evidence_f1": 2.0 * macro_precision * macro_recall / denominator if denominator > 0 else 0.0,
    }


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Fever(evaluate.Metric):
    """``evaluate`` wrapper around :func:`compute_fever_scores`."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": {
                        "id": datasets.Value("string"),
                        "predicted_label": datasets.Value("string"),
                        "predicted_evidence": datasets.Sequence(datasets.Sequence(datasets.Value("string"))),
                    },
                    "references": {
                        "id": datasets.Value("string"),
                        "label": datasets.Value("string"),
                        "evidence": datasets.Sequence(datasets.Sequence(datasets.Sequence(datasets.Value("string")))),
                    },
                }
            ),
            codebase_urls=["https://github.com/sheffieldnlp/fever-scorer"],
            reference_urls=["https://arxiv.org/abs/1803.05355"],
        )

    @staticmethod
    def _as_strings(rows: Any, key: str, depth: int) -> Any:
        """Arrow wants one type per column: page/line (and annotation ids) travel as strings, None stays None."""
        if rows is None:
            return rows

        def cast(value: Any, level: int) -> Any:
            if level == 0:
                return None if value is None else str(value)
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise ValueError(f"{key}: expected nested lists {depth} deep, got {value!r}.")
            return [cast(item, level - 1) for item in value]

        out = []
        for position, row in enumerate(rows):
            if isinstance(row, Mapping) and key in row:
                try:
                    row = {**row, key: cast(row[key], depth)}
                except ValueError as error:
                    raise ValueError(f"claim {row.get('id', f'#{position}')!r}: {error}") from None
            out.append(row)
        return out

    def add_batch(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> None:
        """Add a batch of predictions and references (nested evidence cast to strings for Arrow)."""
        predictions = self._as_strings(predictions, "predicted_evidence", 2)
        references = self._as_strings(references, "evidence", 3)
        super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction: Any = None, reference: Any = None, **kwargs: Any) -> None:
        """Add one prediction and reference (nested evidence cast to strings for Arrow)."""
        prediction = None if prediction is None else self._as_strings([prediction], "predicted_evidence", 2)[0]
        reference = None if reference is None else self._as_strings([reference], "evidence", 3)[0]
        super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(
        self, predictions: list[dict], references: list[dict], max_evidence: int = MAX_EVIDENCE
    ) -> dict[str, float]:
        # the features store every evidence field as a string (or None); lines come back as ints here, and a
        # malformed item is an error naming its claim (compute_fever_scores checks the shapes the same way)
        def line(value: str | None, where: str, item: Any) -> int | None:
            if value is None:
                return None
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"{where}: the line of {item!r} must be an integer, got {value!r}.") from None

        gold: dict[str, tuple[str, list]] = {}
        for reference in references:
            if reference["id"] in gold:
                raise ValueError(f"Claim id {reference['id']!r} appears twice in the references.")
            where = f"evidence of claim {reference['id']!r}"
            groups = []
            for group in reference["evidence"]:
                _groups([group], where)  # [annotation_id, evidence_id, page, line] each
                groups.append([[a, e, page, line(number, where, item)] for item in group for a, e, page, number in
                               [item]])  # fmt: skip
            gold[reference["id"]] = (reference["label"], groups)
        predicted: dict[str, tuple[str, list]] = {}
        for p in predictions:
            if p["id"] in predicted:
                raise ValueError(f"Claim id {p['id']!r} appears twice in the predictions; give one per claim.")
            where = f"predicted_evidence of claim {p['id']!r}"
            pairs = []
            for item in p["predicted_evidence"]:
                if len(item) != 2:
                    raise ValueError(
                        f"{where}: every predicted evidence item must be a [page, line] pair, got {item!r}."
                    )
                pairs.append([item[0], line(item[1], where, item)])
            predicted[p["id"]] = (p["predicted_label"], pairs)
        return compute_fever_scores(predicted, gold, max_evidence=max_evidence)


__all__ = [
    "FEVER_LABELS",
    "MAX_EVIDENCE",
    "NOT_ENOUGH_INFO",
    "Fever",
    "compute_fever_scores",
    "evidence_precision",
    "evidence_recall",
    "is_not_enough_info",
    "strictly_correct",
]

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
"""The metrics the entity-aware papers report: micro P/R/F1 over predicted type sets (Open Entity, LUKE's
`evaluate` of its typing task), FIGER's strict accuracy, loose macro and loose micro P/R/F1 (Ling and Weld 2012, as
ERNIE's and ERICA's FIGER evaluation computes them), micro P/R/F1 over relations excluding `no_relation` (TACRED's
official scorer), and exact-match span F1 (CoNLL-2003, as seqeval's entity-level score); and the row of a run in
seed 002's Table 2 layout (`table2_lines`).

Flat module: imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

NO_RELATION = "no_relation"


def _prf(correct: float, predicted: float, gold: float) -> dict[str, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def typing_micro_prf(predictions: Sequence[Iterable[str]], references: Sequence[Iterable[str]]) -> dict[str, float]:
    """Micro P/R/F1 over (example, type) pairs: every predicted type of every example counts once."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references.")
    correct = predicted = gold = 0
    for prediction, reference in zip(predictions, references, strict=True):
        prediction, reference = set(prediction), set(reference)
        correct += len(prediction & reference)
        predicted += len(prediction)
        gold += len(reference)
    return _prf(correct, predicted, gold)


def figer_metrics(predictions: Sequence[Iterable[str]], references: Sequence[Iterable[str]]) -> dict[str, float]:
    """FIGER's three metrics: strict accuracy (the predicted type set equals the gold set), loose macro P/R/F1
    (precision and recall averaged over the mentions, a mention without predictions adding 0 precision; F1 of the
    two averages) and loose micro P/R/F1 (over all (mention, type) pairs)."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references.")
    if not references:
        raise ValueError("FIGER's metrics need at least one mention.")
    strict = macro_p = macro_r = 0.0
    for prediction, reference in zip(predictions, references, strict=True):
        prediction, reference = set(prediction), set(reference)
        strict += prediction == reference
        overlap = len(prediction & reference)
        macro_p += overlap / len(prediction) if prediction else 0.0
        macro_r += overlap / len(reference) if reference else 0.0
    macro_p, macro_r = macro_p / len(references), macro_r / len(references)
    micro = typing_micro_prf(predictions, references)
    return {
        "accuracy": strict / len(references),
        "macro_precision": macro_p,
        "macro_recall": macro_r,
        "macro_f1": 2 * macro_p * macro_r / (macro_p + macro_r) if macro_p + macro_r else 0.0,
        "micro_precision": micro["precision"],
        "micro_recall": micro["recall"],
        "micro_f1": micro["f1"],
    }


# seed 002's Table 2: its datasets and columns, and the metric (in percent, the scripts' `eval_*`) of each column
TABLE2_COLUMNS = {
    "entity_typing": ("OpenEntity", (("P", "precision"), ("R", "recall"), ("micro-F1", "f1"))),
    "figer": ("FIGER", (("Acc", "accuracy"), ("macro-F1", "macro_f1"), ("micro-F1", "micro_f1"))),
    "relation_classification": ("TACRED", (("P", "precision"), ("R", "recall"), ("micro-F1", "f1"))),
}


def table2_lines(task: str, method: str, metrics: dict[str, float], prefix: str = "eval_") -> list[str]:
    """A run's row in seed 002's Table 2 layout (Method | OpenEntity P R micro-F1 | FIGER Acc macro-F1 micro-F1 |
    TACRED P R micro-F1), its own dataset's columns filled from ``metrics`` (percent) and the others ``-``, as the
    table leaves a method's missing datasets; with the header line. Empty for a task the table has no column for."""
    if task not in TABLE2_COLUMNS:
        return []
    header, row = ["Method"], [method]
    for name, (dataset, columns) in TABLE2_COLUMNS.items():
        for column, metric in columns:
            header.append(f"{dataset} {column}")
            value = metrics.get(prefix + metric) if name == task else None
            row.append("-" if value is None else f"{value:.1f}")
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(row) + " |"]


def relation_micro_prf(
    predictions: Sequence[str], references: Sequence[str], negative: str = NO_RELATION
) -> dict[str, float]:
    """TACRED's scorer: a prediction counts when it is not `negative`; it is correct when it equals the gold."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references.")
    correct = sum(p == r and p != negative for p, r in zip(predictions, references, strict=True))
    predicted = sum(p != negative for p in predictions)
    gold = sum(r != negative for r in references)
    return _prf(correct, predicted, gold)


def span_f1(
    predictions: Sequence[Iterable[tuple[int, int, str]]], references: Sequence[Iterable[tuple[int, int, str]]]
) -> dict[str, float]:
    """Entity-level micro P/R/F1: a predicted `(start, end, type)` span is correct when a gold span is identical."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references.")
    correct = predicted = gold = 0
    for prediction, reference in zip(predictions, references, strict=True):
        prediction, reference = set(map(tuple, prediction)), set(map(tuple, reference))
        correct += len(prediction & reference)
        predicted += len(prediction)
        gold += len(reference)
    return _prf(correct, predicted, gold)


# ----------------------------------------------------------------------------------------------- chance levels
# The micro F1 (a fraction) a model that guesses would score, in expectation, on the references alone: what the
# scripts' summary lines print as "chance" beside the scores before and after training.


def _expected_f1(correct: float, predicted: float, gold: float) -> float:
    return _prf(correct, predicted, gold)["f1"] if predicted and gold else 0.0


def typing_chance(references: Sequence[Iterable[str]]) -> float:
    """A coin per type: every type of the references' inventory predicted for each example with probability 1/2 (an
    untrained sigmoid head's logits sit around 0). Precision is the share of (example, type) pairs that are gold,
    recall 1/2."""
    references = [set(reference) for reference in references]
    types = set().union(*references) if references else set()
    gold = sum(map(len, references))
    return _expected_f1(gold / 2, len(references) * len(types) / 2, gold)


def relation_chance(references: Sequence[str], negative: str = NO_RELATION) -> float:
    """A uniform guess among the relations the references use (``negative`` included), scored as TACRED's scorer
    scores (a guess of ``negative`` is no prediction)."""
    relations = set(references) | {negative}
    count, gold = len(references), sum(reference != negative for reference in references)
    return _expected_f1(gold / len(relations), count * (len(relations) - 1) / len(relations), gold)


def span_chance(
    references: Sequence[Iterable[tuple[int, int, str]]], lengths: Sequence[int], max_span_length: int = 16
) -> float:
    """A uniform label per candidate span: every span of at most ``max_span_length`` words of each sentence
    (``lengths``: its word count) labelled one of the references' entity types or "no entity" with equal
    probability (overlapping guesses kept)."""
    references = [set(map(tuple, reference)) for reference in references]
    types = {span[2] for reference in references for span in reference}
    spans = sum(sum(length - width + 1 for width in range(1, min(max_span_length, length) + 1)) for length in lengths)
    gold, options = sum(map(len, references)), len(types) + 1
    return _expected_f1(gold / options, spans * len(types) / options, gold)


__all__ = [
    "NO_RELATION",
    "TABLE2_COLUMNS",
    "figer_metrics",
    "relation_chance",
    "relation_micro_prf",
    "span_chance",
    "span_f1",
    "table2_lines",
    "typing_chance",
    "typing_micro_prf",
]

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
`evaluate` of its typing task), micro P/R/F1 over relations excluding `no_relation` (TACRED's official scorer), and
exact-match span F1 (CoNLL-2003, as seqeval's entity-level score).

Flat module: imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

NO_RELATION = "no_relation"


def _prf(correct: int, predicted: int, gold: int) -> dict[str, float]:
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


__all__ = ["NO_RELATION", "relation_micro_prf", "span_f1", "typing_micro_prf"]

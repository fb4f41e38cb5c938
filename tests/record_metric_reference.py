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
"""A plain re-implementation of the official ReCoRD v1.0 evaluation script's formulas (normalisation, EM, F1 and the
``evaluate(dataset, predictions)`` loop), written out from its definitions; it imports nothing from the metric module
it checks (training/metrics/record/record.py) nor from the package."""

from __future__ import annotations

import re
import string
from collections import Counter


def ref_normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def ref_f1(prediction, ground_truth):
    p = ref_normalize(prediction).split()
    g = ref_normalize(ground_truth).split()
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def ref_em(prediction, ground_truth):
    return ref_normalize(prediction) == ref_normalize(ground_truth)


def ref_evaluate(dataset, predictions):
    """The official ``evaluate(dataset, predictions)`` loop over SuperGLUE-shaped passages."""
    f1 = em = total = 0
    for passage in dataset:
        for qa in passage["qas"]:
            total += 1
            if qa["id"] not in predictions:
                continue
            golds = [a["text"] for a in qa["answers"]]
            em += max(ref_em(predictions[qa["id"]], g) for g in golds)
            f1 += max(ref_f1(predictions[qa["id"]], g) for g in golds)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}

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
"""WikiHop (QAngaroo) accuracy: the share of queries whose predicted candidate is the gold answer, in percent.

As an ``evaluate`` module, offline, from its folder::

    import evaluate
    wikihop = evaluate.load("path/to/gesa/metrics/wikihop")
    wikihop.compute(predictions=[{"id": "q1", "prediction_text": "germany"}],
                    references=[{"id": "q1", "answer": "germany"}])  # {'accuracy': 100.0}

The official QAngaroo evaluation compares the predicted candidate string with the answer exactly; a reference query
without a prediction counts as wrong; predictions for unknown ids are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import datasets
import evaluate

_DESCRIPTION = "WikiHop multiple-choice accuracy (exact candidate match), in percent."
_CITATION = """\
@article{welbl2018constructing,
  title={Constructing Datasets for Multi-hop Reading Comprehension Across Documents},
  author={Welbl, Johannes and Stenetorp, Pontus and Riedel, Sebastian},
  journal={TACL}, volume={6}, pages={287--302}, year={2018}
}
"""
_KWARGS_DESCRIPTION = """
Args:
    predictions: list of {'id': str, 'prediction_text': str}, one per query.
    references: list of {'id': str, 'answer': str}, one per query (unique ids).
Returns:
    'accuracy': correct / reference queries, in percent (0-100).
"""


def accuracy(predictions: Mapping[str, str], references: Mapping[str, str]) -> float:
    """Percent of reference ids whose prediction equals the answer exactly."""
    if not references:
        raise ValueError("wikihop accuracy: no reference query")
    for example_id, answer in references.items():
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError(
                f"wikihop accuracy: reference query {example_id!r} has no gold answer ({answer!r}); a file without "
                "answers (a test split) cannot be scored"
            )
    correct = sum(predictions.get(example_id) == answer for example_id, answer in references.items())
    return 100.0 * correct / len(references)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Wikihop(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": {"id": datasets.Value("string"), "prediction_text": datasets.Value("string")},
                    "references": {"id": datasets.Value("string"), "answer": datasets.Value("string")},
                }
            ),
        )

    def _compute(self, predictions: Sequence[Mapping], references: Sequence[Mapping]) -> dict[str, float]:
        gold: dict[str, str] = {}
        for reference in references:
            if reference["id"] in gold:
                raise ValueError(f"wikihop accuracy: reference id {reference['id']!r} appears twice")
            gold[reference["id"]] = reference["answer"]
        predicted: dict[str, str] = {}
        for prediction in predictions:
            if prediction["id"] in predicted:
                raise ValueError(
                    f"wikihop accuracy: prediction id {prediction['id']!r} appears twice; give one prediction per query"
                )
            predicted[prediction["id"]] = prediction["prediction_text"]
        return {"accuracy": accuracy(predicted, gold)}

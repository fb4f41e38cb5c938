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
"""FIGER for entity typing: ERNIE's JSON format (character offsets, hierarchical multi-label types), its three
metrics on hand-computed cases (strict accuracy, loose macro-F1, loose micro-F1, as ERNIE's / ERICA's evaluation
computes them), its decoding (every positive logit and the best one) and seed 002's Table 2 layout."""

from __future__ import annotations

import json

import numpy as np
import pytest
from script_helpers import load_entity_script

from gesa.records_entity import InputError, read_figer_file
from gesa.training.entity import ENTITY_TASKS, decode_figer_types, make_entity_sample
from gesa.training.entity_metrics import figer_metrics, table2_lines


def test_figer_metrics_equal_hand_computed_values():
    predictions = [["/person", "/person/artist"], ["/location"], [], ["/organization", "/person"]]
    references = [["/person", "/person/artist"], ["/location", "/location/city"], ["/person"], ["/organization"]]
    metrics = figer_metrics(predictions, references)
    # strict: only the first mention's set is exact -> 1/4
    assert metrics["accuracy"] == pytest.approx(0.25)
    # loose macro: precision per mention 1, 1, 0 (no prediction), 1/2 -> 2.5/4; recall 1, 1/2, 0, 1 -> 2.5/4
    assert metrics["macro_precision"] == pytest.approx(2.5 / 4)
    assert metrics["macro_recall"] == pytest.approx(2.5 / 4)
    assert metrics["macro_f1"] == pytest.approx(2.5 / 4)
    # loose micro: 4 correct (mention, type) pairs of 5 predicted and 6 gold
    assert metrics["micro_precision"] == pytest.approx(4 / 5)
    assert metrics["micro_recall"] == pytest.approx(4 / 6)
    assert metrics["micro_f1"] == pytest.approx(2 * (4 / 5) * (4 / 6) / (4 / 5 + 4 / 6))


def test_figer_decoding_keeps_the_best_type_when_no_logit_is_positive():
    logits = np.array([[-1.0, -0.2, -3.0], [2.0, -1.0, 0.5]])
    assert decode_figer_types([], [], logits, ["/a", "/b", "/c"]) == [["/b"], ["/a", "/c"]]


def test_figer_reader_splits_the_sentence_into_words_around_the_mention(tmp_path):
    path = tmp_path / "figer.json"
    path.write_text(json.dumps([{"sent": "Yesterday , Ana Velmor sang .", "start": 12, "end": 22,
                                 "labels": ["/person", "/person/artist"], "ents": []}]))  # fmt: skip
    (example,) = read_figer_file(path)
    assert example.tokens[example.start : example.end] == ["Ana", "Velmor"]
    assert example.labels == ["/person", "/person/artist"]
    path.write_text(json.dumps([{"sent": "Yesterday , Ana Velmor sang .", "start": 13, "end": 22, "labels": ["/x"]}]))
    with pytest.raises(InputError, match=r"item 1: FIGER record: the mention 'na Velmor' .* cuts a word"):
        read_figer_file(path)


def test_table2_row_fills_the_runs_dataset_and_leaves_the_others_empty():
    header, row = table2_lines(
        "figer", "luke (run)", {"eval_accuracy": 59.5, "eval_macro_f1": 84.52, "eval_micro_f1": 80.42}
    )
    assert header.startswith("| Method | OpenEntity P | OpenEntity R | OpenEntity micro-F1 | FIGER Acc |")
    assert row == "| luke (run) | - | - | - | 59.5 | 84.5 | 80.4 | - | - | - |"
    assert table2_lines("ner", "x", {}) == []


@pytest.mark.slow
def test_figer_and_tacred_runs_print_their_table2_rows(tiny_luke_dir, tmp_path, capsys):
    script = load_entity_script()
    for task, name in (("figer", "figer.json"), ("relation_classification", "tacred.json")):
        data = tmp_path / name
        data.write_text(make_entity_sample(task, 12, 1))
        script.main(["--task", task, "--model_name_or_path", str(tiny_luke_dir), "--train_file", str(data),
                     "--validation_file", str(data), "--do_train", "--do_eval", "--num_train_epochs", "1",
                     "--output_dir", str(tmp_path / task), "--report_to", "none", "--save_strategy", "no",
                     "--use_cpu", "true", "--disable_tqdm", "true"])  # fmt: skip
    printed = capsys.readouterr().out.splitlines()
    rows = [line for line in printed if line.startswith("| gesa (")]
    assert [row.split(" | ")[0] for row in rows] == ["| gesa (figer)", "| gesa (relation_classification)"]
    figer_row, tacred_row = (row.split(" | ") for row in rows)
    assert figer_row[1:4] == ["-"] * 3 and figer_row[4] != "-" and tacred_row[7] != "-"
    assert ENTITY_TASKS["figer"].features == "entity_typing"


def test_figer_chance_is_the_loose_micro_f1_of_a_coin_per_type():
    """A coin per type of the inventory (an untrained sigmoid head): its expected (mention, type) counts, summed by a
    plain loop, give the loose micro F1 the FIGER summary prints as its chance."""
    references = [["/person"], ["/location", "/location/city"], ["/organization"], ["/location"]]
    inventory = sorted({label for labels in references for label in labels})
    correct = predicted = gold = 0.0
    for labels in references:
        for label in inventory:
            predicted += 0.5
            correct += 0.5 * (label in labels)
        gold += len(labels)
    precision, recall = correct / predicted, correct / gold
    expected = 100 * 2 * precision * recall / (precision + recall)

    class Example:
        def __init__(self, labels):
            self.labels = labels

    task = ENTITY_TASKS["figer"]
    assert task.chance([Example(labels) for labels in references]) == pytest.approx(expected)
    assert task.chance_metric == "micro_f1" and task.metric_names["micro_f1"] == "loose micro-F1"

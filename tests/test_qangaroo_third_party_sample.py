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
"""``run_multihop.py`` on QAngaroo records the project did not write (the released JSON layout: ``id``, ``query``,
``answer``, ``candidates``, ``supports``): every table 5.1 preset of ``--variant context_graph`` and GESA on the
thesis's graph train, evaluate and predict one of each query's own candidates, from a tiny LUKE.

``GESA_QANGAROO_SAMPLE`` names a folder of the release (``qangaroo_v1.1/wikihop`` or ``qangaroo_v1.1/medhop``) holding
``train.json`` and ``dev.json``; unset, these tests are skipped. Such a sample stays outside the repository (e.g. the
MedHop records of huggingface/datasets' ``datasets/qangaroo/dummy`` data, see docs/wikihop.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from script_helpers import load_multihop_script

from gesa.records_wikihop import load_wikihop_file

SAMPLE = os.environ.get("GESA_QANGAROO_SAMPLE")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SAMPLE, reason="GESA_QANGAROO_SAMPLE (a qangaroo_v1.1/wikihop or /medhop folder) is unset"),
]


def sample_files() -> tuple[Path, Path, str]:
    folder = Path(SAMPLE)
    train, dev = folder / "train.json", folder / "dev.json"
    for path in (train, dev):
        if not path.is_file():
            pytest.fail(f"GESA_QANGAROO_SAMPLE={SAMPLE}: no {path.name} there (a folder of the QAngaroo release)")
    ids = [example.example_id for example in load_wikihop_file(dev)]
    return train, dev, "medhop" if all(key.startswith("MH_") for key in ids) else "wikihop"


def run(luke_dir, tmp_path, variant, extra, task=None):
    """``task``: the sample's own (``None``) or another QAngaroo task read from the same layout (``wikihop``)."""
    train, dev, native = sample_files()
    task = task or native
    output_dir = tmp_path / variant
    argv = ["--task", task, "--model_name_or_path", str(luke_dir), "--variant", variant,
            "--train_file", str(train), "--validation_file", str(dev), "--test_file", str(dev),
            "--output_dir", str(output_dir), "--do_train", "--do_eval", "--do_predict", "--num_train_epochs", "1",
            "--per_device_train_batch_size", "1", "--learning_rate", "1e-3", "--save_strategy", "no",
            "--report_to", "none", "--seed", "0", "--use_cpu", "true", "--dataloader_pin_memory", "false", *extra]  # fmt: skip
    results = load_multihop_script().main(argv)
    records = {example.example_id: example for example in load_wikihop_file(dev)}
    predictions = json.loads((output_dir / "eval_predictions.json").read_text())
    assert set(predictions) == set(records)
    assert all(answer in records[key].candidates for key, answer in predictions.items())
    correct = sum(answer == records[key].answer for key, answer in predictions.items())
    assert results["eval_accuracy"] == pytest.approx(100.0 * correct / len(records))
    ranked = json.loads((output_dir / "predict_predictions.json").read_text())
    assert set(ranked) == set(records)
    for key, entries in ranked.items():
        assert sorted(entry["answer"] for entry in entries) == sorted(records[key].candidates)
    return output_dir, results


@pytest.mark.parametrize("task", [None, "wikihop"])  # the sample's own task, and --task wikihop on the same files
@pytest.mark.parametrize("preset", ["hde_base", "att_base", "bert_base"])
def test_each_table_5_1_preset_runs_on_the_third_party_sample(tiny_luke_dir, tmp_path, preset, task):
    output_dir, _ = run(tiny_luke_dir, tmp_path, "context_graph",
                        ["--graph_preset", preset, "--graph_config", '{"gnn_num_layers": 2}', "--max_seq_length", "96"],
                        task)  # fmt: skip
    assert json.loads((output_dir / "config.json").read_text())["graph_preset"] == preset


def test_gesa_on_the_context_graph_runs_on_the_third_party_sample(tiny_luke_dir, tmp_path):
    output_dir, _ = run(tiny_luke_dir, tmp_path, "gesa", ["--max_seq_length", "1024", "--attention_window", "32"])
    config = json.loads((output_dir / "config.json").read_text())
    assert (config["entity_graph"], config["choice_head"]) == ("context", "hde")

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
"""``python examples/run_record.py`` with no argument at all: the embedded demo."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from script_helpers import RECORD_SCRIPT, ROOT

from gesa.training.tokenizer import train_sample_tokenizer

CODE_FILES = ("configuration_gesa.py", "modeling_gesa.py", "processing_gesa.py")
SAMPLE = ROOT / "examples" / "data" / "record_cloze_train.jsonl"
SUMMARY = re.compile(r"^ReCoRD 64 queries: exact match ([\d.]+), F1 [\d.]+; before training: exact match ([\d.]+), "
                     r"F1 [\d.]+; chance ([\d.]+); training loss")  # fmt: skip


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _texts(path: Path) -> list[str]:
    """The texts the demo's tokenizer learns from, in the script's order: each passage once, then every query."""
    rows = _rows(path)
    return [row["passage"]["text"] for row in rows] + [qa["query"] for row in rows for qa in row["qas"]]


def _bpe_merges(tokenizer_json: str) -> list:
    return json.loads(tokenizer_json)["model"]["merges"]


def _label_prior_loss(path: Path) -> float:
    """The loss of a model that learned nothing but the share of answer mentions among the candidate mentions: the
    binary entropy of that share over the training queries (every mention of the passage is a candidate)."""
    mentions = answers = 0
    for row in _rows(path):
        text = row["passage"]["text"]
        texts = [text[entity["start"] : entity["end"] + 1] for entity in row["passage"]["entities"]]
        for qa in row["qas"]:
            gold = {answer["text"] for answer in qa["answers"]}
            mentions += len(texts)
            answers += sum(mention in gold for mention in texts)
    share = answers / mentions
    return -(share * math.log(share) + (1 - share) * math.log(1 - share))


@pytest.mark.slow
def test_embedded_default_runs_offline_with_no_arguments(tmp_path):
    """``python examples/run_record.py`` alone: a tiny GESA converted from a tiny LUKE built offline (its BPE trained
    on the sample's training text), trained on the embedded one-hop cloze, EM/F1 printed with the scores before
    training and chance; the model learns: exact match after training above before training and above chance, the
    training loss well below the label prior's."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(RECORD_SCRIPT)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=900)  # fmt: skip
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"\n[run_record] embedded default: {elapsed:.1f} s wall")
    first = proc.stdout.strip().splitlines()[0]
    assert (
        first.startswith("run_record.py: no data or model given: embedded demo (about ")
        and "on one idle core" in first
    )
    assert (
        "i.e. python examples/run_record.py --model_name_or_path outputs/gesa-tiny-record/demo-data/tiny-luke" in first
    )
    summary = proc.stdout.strip().splitlines()[-1]
    found = SUMMARY.search(summary)
    assert found, summary
    after, before, chance = float(found[1]), float(found[2]), float(found[3])
    assert chance == 12.5 and after > before and after > chance, summary
    output_dir = tmp_path / "outputs" / "gesa-tiny-record"
    # what the user asked for and no more: Trainer's ignored-columns notice (printed at each of its three
    # dataloaders) is dropped; the sample the demo read is kept beside the model, and the summary says where
    printed = proc.stdout + proc.stderr
    assert "have been ignored" not in printed and "pin_memory" not in printed
    assert summary.endswith("; demo data: outputs/gesa-tiny-record/demo-data)")
    assert sorted(path.name for path in (output_dir / "demo-data").iterdir()) == [
        "record_cloze_dev.jsonl",
        "record_cloze_train.jsonl",
        "tiny-luke",
    ]
    results = json.loads((output_dir / "all_results.json").read_text())
    assert {"eval_exact_match", "eval_f1", "train_loss"} <= set(results)
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    losses = [entry["loss"] for entry in history if "loss" in entry]
    prior = _label_prior_loss(SAMPLE)
    print(f"[run_record] embedded default: {summary}; label prior loss {prior:.3f}")
    assert losses[-1] < 0.5 * prior, losses
    # The BPE tokenizer was trained on the training text only: the same merges as one trained here on it, not those
    # of one trained on the training and evaluation text.
    train_texts, dev_texts = _texts(SAMPLE), _texts(SAMPLE.with_name("record_cloze_dev.jsonl"))
    saved = _bpe_merges((output_dir / "tokenizer.json").read_text(encoding="utf-8"))
    assert saved == _bpe_merges(train_sample_tokenizer(train_texts, 600, 1).backend_tokenizer.to_str())
    assert saved != _bpe_merges(train_sample_tokenizer(train_texts + dev_texts, 600, 1).backend_tokenizer.to_str())
    predictions = json.loads((output_dir / "eval_predictions.json").read_text(encoding="utf-8"))
    sample = _rows(SAMPLE.with_name("record_cloze_dev.jsonl"))
    assert set(predictions) == {qa["id"] for row in sample for qa in row["qas"]}
    for name in (*CODE_FILES, "config.json", "model.safetensors", "processor_config.json", "README.md"):
        assert (output_dir / name).is_file(), name
    card = (output_dir / "README.md").read_text(encoding="utf-8")
    assert "library_name: transformers" in card and "record_cloze_train.jsonl" in card

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
"""A tiny random Transformer-XH and its no-hop baseline on HotpotQA: train on the first N questions of a file,
score the rest with the official metric, side by side (a pipeline check of the task, not a benchmark of quality).

    python bench/bench_xh_tasks.py          # ../shared's 100 distractor dev questions: train 80, score 20
    python bench/bench_xh_tasks.py --file hotpot_dev_distractor_v1.json --train 1000 --epochs 2

Run with this checkout importable as `gesa` (installed, or `PYTHONPATH` pointing at a folder with a `gesa` link).
Prints, per model, the mean training loss (all terms: relevance, span, answer type, supporting facts) before and
after training on the training questions, and every official key on the held-out ones.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
from transformers import LukeTokenizer, Trainer, TrainingArguments

from gesa.processing_xh_tasks import XhTaskProcessor
from gesa.training.driver import predict_task
from gesa.training.xh import HOTPOTQA, xh_task_config

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def mean_loss(model, collator, features, batch: int = 8) -> float:
    model.eval()
    with torch.no_grad():
        losses = [float(model(**collator(features[i : i + batch])).loss) for i in range(0, len(features), batch)]
    return sum(losses) / len(losses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", default=str(SHARED / "data" / "hotpotqa" / "hotpot_dev_distractor_first100.json"))
    parser.add_argument("--tokenizer", default=str(SHARED / "tokenizers" / "roberta-base"))
    parser.add_argument("--train", type=int, default=80)
    parser.add_argument("--epochs", type=float, default=4)
    parser.add_argument("--node-length", type=int, default=96)
    args = parser.parse_args()
    tokenizer = LukeTokenizer(vocab=f"{args.tokenizer}/vocab.json", merges=f"{args.tokenizer}/merges.txt",
                              entity_vocab={"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}, task=None)  # fmt: skip
    processor = XhTaskProcessor(tokenizer, max_node_length=args.node_length, max_query_length=32)
    task = HOTPOTQA
    rows = task.read(args.file)
    train_rows, eval_rows = rows[: args.train], rows[args.train :]
    features = task.featurise(processor, train_rows, "train", None)
    collator = processor.get_data_collator()
    report = {}
    for name, hop in (("xh", True), ("xh_no_hop", False)):
        torch.manual_seed(0)
        config = xh_task_config(task, hop_attention=hop, vocab_size=len(tokenizer), entity_vocab_size=4, hidden_size=32,
                                entity_emb_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                                xh_num_hop_layers=1, max_relative_position=8, classifier_dropout=0.0)  # fmt: skip
        model = task.head_for("xh")(config)
        before = mean_loss(model, collator, features)
        with tempfile.TemporaryDirectory() as scratch:
            training = TrainingArguments(output_dir=scratch, num_train_epochs=args.epochs, per_device_train_batch_size=4,
                                         learning_rate=3e-3, remove_unused_columns=False, report_to=[], use_cpu=True,
                                         save_strategy="no", logging_strategy="no", seed=0, disable_tqdm=True)  # fmt: skip
            Trainer(model=model, args=training, train_dataset=features, data_collator=collator).train()
        after = mean_loss(model, collator, features)
        metrics = task.reported(task.score(predict_task(task, model, processor, eval_rows), eval_rows))
        report[name] = {"train_loss_before": before, "train_loss_after": after, **metrics}
    keys = list(report["xh"])
    print(f"{len(train_rows)} training / {len(eval_rows)} held-out questions of {Path(args.file).name}")
    print(f"{'':22}" + "".join(f"{name:>12}" for name in report))
    for key in keys:
        print(f"{key:22}" + "".join(f"{report[name][key]:12.4f}" for name in report))
    print(json.dumps(report))


if __name__ == "__main__":
    main()

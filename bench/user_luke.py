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
"""Tiny LUKE checkpoints built the way a user of transformers builds one, and the run_record.py commands that train
GESA from each: the check of docs/diagnostic.md "A LUKE checkpoint the project did not build".

Each checkpoint is a `transformers.LukeModel` from a `LukeConfig` (width 64, 4 layers, 4 heads, FFN 256, entity
embeddings 32 wide, no dropout, LukeConfig's other defaults), drawn by LukeModel's own init at `--draws` (LukeConfig's
0.02, and 1/sqrt(width) = 0.125), with RoBERTa's 50k byte-level BPE (`../shared/tokenizers/roberta-base`) and the four
special entities, its entity-aware queries set to the word query (as LUKE's own conversion leaves them), saved with
`save_pretrained`: one per draw and seed (`luke-<draw>-seed<seed>`, drawn with that seed). `run_record.sh` trains
`examples/run_record.py --ablation full` from each at the diagnostic's settings (600 steps, lr 1e-3, batch 16,
`--max_seq_length 160`) on `--data` (train.jsonl, dev_1hop.jsonl: bench/heldout_cloze.py --world orchards).

    python bench/heldout_cloze.py orchards_data --world orchards
    python bench/user_luke.py --data orchards_data --output_dir user_luke
    sh user_luke/run_record.sh   # one-hop EM: user_luke/runs/full-<draw>-seedN/all_results.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import save_random_luke
from transformers import LukeConfig, LukeTokenizer

ROOT = Path(__file__).resolve().parents[1]
ROBERTA_DIR = ROOT.parent / "shared" / "tokenizers" / "roberta-base"
ENTITY_VOCAB = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
# the diagnostic's training settings (bench/diagnose_graph.py's defaults and windows)
SETTINGS = ["--max_steps", "600", "--learning_rate", "1e-3", "--per_device_train_batch_size", "16",
            "--per_device_eval_batch_size", "64", "--logging_steps", "50", "--max_seq_length", "160",
            "--doc_stride", "64", "--max_query_length", "32", "--candidate_source", "annotations",
            "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true"]  # fmt: skip


def build(path: Path, seed: int, initializer_range: float, tokenizer_dir: Path) -> Path:
    """One user-built tiny LUKE (see the module docstring) saved under `path`."""
    tokenizer = LukeTokenizer(
        vocab=str(tokenizer_dir / "vocab.json"),
        merges=str(tokenizer_dir / "merges.txt"),
        entity_vocab=dict(ENTITY_VOCAB),
        task=None,
    )
    config = LukeConfig(
        vocab_size=len(tokenizer),
        entity_vocab_size=len(ENTITY_VOCAB),
        hidden_size=64,
        entity_emb_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=256,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=initializer_range,
    )
    return save_random_luke(config, tokenizer, seed, path)


def command(checkpoint: Path, data: Path, output_dir: Path, seed: int) -> str:
    """The run_record.py command training GESA (`--ablation full`) from `checkpoint` with `seed`."""
    words = ["python", "examples/run_record.py", "--model_name_or_path", str(checkpoint), "--ablation", "full",
             "--train_file", str(data / "train.jsonl"), "--validation_file", str(data / "dev_1hop.jsonl"),
             "--do_train", "--do_eval", *SETTINGS, "--seed", str(seed), "--output_dir", str(output_dir)]  # fmt: skip
    return " ".join(words)


def main(argv: list[str] | None = None) -> list[str]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, type=Path, help="folder with train.jsonl and dev_1hop.jsonl")
    parser.add_argument("--output_dir", required=True, type=Path, help="where the checkpoints and run_record.sh go")
    parser.add_argument("--draws", default="0.02,0.125", help="initializer_range of each checkpoint family")
    parser.add_argument("--seeds", default="0,1,2,3,4", help="one checkpoint and run per seed and draw")
    parser.add_argument("--tokenizer_dir", type=Path, default=ROBERTA_DIR, help="RoBERTa's vocab.json + merges.txt")
    args = parser.parse_args(argv)
    missing = [name for name in ("train.jsonl", "dev_1hop.jsonl") if not (args.data / name).is_file()]
    if missing:
        parser.error(f"--data {args.data} lacks {', '.join(missing)}: write it with bench/heldout_cloze.py")
    if not (args.tokenizer_dir / "vocab.json").is_file():
        parser.error(f"--tokenizer_dir {args.tokenizer_dir} has no vocab.json: give RoBERTa's tokenizer files")
    try:
        draws = [float(value) for value in args.draws.split(",")]
        seeds = [int(value) for value in args.seeds.split(",")]
    except ValueError as error:
        parser.error(f"--draws / --seeds: {error} (e.g. --draws 0.02,0.125 --seeds 0,1,2,3,4)")
    commands = []
    for draw in draws:
        for seed in seeds:
            name = f"{draw:g}-seed{seed}"
            checkpoint = build(args.output_dir / f"luke-{name}", seed, draw, args.tokenizer_dir)
            commands.append(command(checkpoint, args.data, args.output_dir / "runs" / f"full-{name}", seed))
    script = "#!/bin/sh\n# written by bench/user_luke.py; run from the repository root\n"
    (args.output_dir / "run_record.sh").write_text(script + "".join(f"OMP_NUM_THREADS=1 {c}\n" for c in commands))
    print(f"wrote {len(commands)} checkpoints and {args.output_dir / 'run_record.sh'}")
    return commands


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

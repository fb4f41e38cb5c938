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
"""SciREX's official ``scirex_relation_evaluate.py`` beside gesa's SciREX metric, on the same three files.

The official script is run from a SciREX checkout the user gives (``--scirex_repo``: a clone of
github.com/allenai/SciREX; nothing of it is copied into gesa), once per ``PYTHONHASHSEED`` in ``--hash_seeds``: it
breaks ties between gold clusters in Python's set order, which changes with the hash seed, so its own figures vary
between runs. The metric's figures (``training/metrics/scirex``: ties go to the first gold cluster in the file) are
compared with each run's nine printed numbers (salient-cluster P/R/F1, relation P/R/F1 for n = 2 and n = 4; the
script prints six decimals, so "equal" means within 1e-5). The files: a ``run_document_ie.py`` folder's
``eval_predictions/`` (``--predictions``) scored against ``--gold_file`` (the release records it evaluated). ::

    git clone https://github.com/allenai/SciREX scirex_repo   # its scripts need pandas only
    python examples/run_document_ie.py --output_dir demo_out    # or any run with --do_eval
    python bench/scirex_official_check.py --scirex_repo scirex_repo --predictions demo_out/eval_predictions \\
        --gold_file demo_out/demo-data/dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from gesa.training.resources import metric_module

OFFICIAL = Path("scirex") / "evaluation_scripts" / "scirex_relation_evaluate.py"
NAMES = {"p": "precision", "r": "recall", "f1": "f1"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scirex_repo", required=True, help="a clone of github.com/allenai/SciREX")
    parser.add_argument(
        "--predictions", required=True, help="a folder with ner.jsonl, clusters.jsonl, relations.jsonl"
    )
    parser.add_argument("--gold_file", required=True, help="the SciREX release records the predictions are for")
    parser.add_argument("--hash_seeds", type=int, default=8, help="official runs, PYTHONHASHSEED 0 .. N-1")
    args = parser.parse_args(argv)
    if not (Path(args.scirex_repo) / OFFICIAL).is_file():
        parser.error(f"--scirex_repo {args.scirex_repo}: no {OFFICIAL} there; give a clone of allenai/SciREX")
    for name in ("ner.jsonl", "clusters.jsonl", "relations.jsonl"):
        if not (Path(args.predictions) / name).is_file():
            parser.error(
                f"--predictions {args.predictions}: no {name}; give a run_document_ie.py eval_predictions folder"
            )
    if not Path(args.gold_file).is_file():
        parser.error(f"--gold_file {args.gold_file}: does not exist")
    return args


def official_scores(repo: Path, files: list[str], hash_seed: int) -> dict[str, float]:
    """The nine numbers the official script prints (its ``describe().loc['mean']`` blocks), by gesa's names."""
    env = dict(os.environ, PYTHONPATH=str(repo), PYTHONHASHSEED=str(hash_seed))
    flags = [
        "--gold-file",
        files[0],
        "--ner-file",
        files[1],
        "--clusters-file",
        files[2],
        "--relations-file",
        files[3],
    ]
    done = subprocess.run([sys.executable, str(repo / OFFICIAL), *flags], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"scirex_official_check.py: the official script failed:\n{done.stderr[-3000:]}")
    scores, block = {}, None
    for line in done.stdout.splitlines():
        if line.startswith("Salient Clustering"):
            block = "cluster"
        elif match := re.match(r"Relation Metrics n=(\d)", line):
            block = f"relation_n{match.group(1)}"
        elif (match := re.match(r"^(p|r|f1)\s+([-0-9.e]+)", line)) and block:
            scores[f"{block}_{NAMES[match.group(1)]}"] = float(match.group(2))
    return scores


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    predictions = Path(args.predictions)
    files = [args.gold_file, *(str(predictions / f"{name}.jsonl") for name in ("ner", "clusters", "relations"))]
    gold, ner, clusters, relations = (read_jsonl(Path(path)) for path in files)
    ours = metric_module("scirex").scirex_scores(gold, ner, clusters, relations)
    print("gesa's metric: " + ", ".join(f"{key} {value:.6f}" for key, value in sorted(ours.items())))
    equal = 0
    for seed in range(args.hash_seeds):
        official = official_scores(Path(args.scirex_repo), files, seed)
        gap = max(abs(official[key] - ours[key]) for key in official)
        equal += gap < 1e-5
        shown = ", ".join(f"{key} {official[key]:.6f}" for key in sorted(official) if key.endswith("f1"))
        print(f"official, PYTHONHASHSEED={seed}: {shown}; max |official - gesa| over its {len(official)} numbers "
              f"{gap:.2e}")  # fmt: skip
    print(f"equal to gesa's metric (1e-5) in {equal} of {args.hash_seeds} official runs (the others break a tie "
          "between gold clusters another way)")  # fmt: skip


if __name__ == "__main__":
    main()

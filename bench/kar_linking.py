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
"""Does KnowBERT-KAR's linker read the context? Train it on a synthetic corpus whose alias prior is wrong for a known
share of the mentions, and compare its links with the prior's.

Everything is built here, offline, per seed: the corpus (``gesa.synthetic_kb``: TACRED sentences whose place-or-firm
name is an ambiguous alias of a city and a company, the context naming the sense; a river sense in no KB, gold NULL),
its KB files (alias table with priors, TransE-like entity vectors, gold links), a tiny random LUKE with a byte-level
BPE trained on the corpus, and one KAR run of ``examples/run_entity_tasks.py --task relation_classification --variant
kar --kb_alias_table ... --kb_entity_vectors ... --entity_links ...`` (the user's command, task loss + ``L_EL``).
Then, on the dev sentences (gold from the links file), it prints per seed and as mean and spread over the seeds:

- linking accuracy of the prior alone (the highest-prior candidate) and of the trained linker (the highest ``psi``),
  over every linked mention and over the mentions where the prior is wrong;
- NULL precision and recall (the prior never predicts NULL);
- ``linking_loss`` of the first and the last logging step of training.

    OMP_NUM_THREADS=1 python bench/kar_linking.py --output_dir linking_out

(three seeds, about 2 minutes each on one core). ``--output_dir`` keeps each seed's data, tiny LUKE and KAR
checkpoint (``seed-N/``) and ``linking.json`` (the table's numbers).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from torch.utils.data import DataLoader
from transformers import HfArgumentParser

from gesa.synthetic_kb import write_linking_corpus
from gesa.tasks_entity import ENTITY_TASKS
from gesa.tasks_kb import linking_decisions, linking_report
from gesa.tasks_multihop import build_demo_luke

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "run_entity_tasks.py"
TASK = "relation_classification"
ROWS = [
    ("prior_accuracy", "linker_accuracy", "linking accuracy, all linked mentions"),
    ("prior_accuracy_prior_wrong", "linker_accuracy_prior_wrong", "linking accuracy, mentions the prior gets wrong"),
    ("prior_null_precision", "linker_null_precision", "NULL precision"),
    ("prior_null_recall", "linker_null_recall", "NULL recall"),
]


@dataclass
class LinkingArguments:
    output_dir: str = field(metadata={"help": "Where each seed's data, tiny LUKE and KAR checkpoint are kept."})
    seeds: str = field(default="0,1,2", metadata={"help": "Comma-separated seeds (corpus, LUKE, training)."})
    train_size: int = field(default=400, metadata={"help": "Training sentences per seed."})
    eval_size: int = field(default=200, metadata={"help": "Dev sentences per seed (the linking table's)."})
    names: int = field(default=12, metadata={"help": "Ambiguous names (two KB senses and a NULL one each)."})
    prior_wrong_share: float = field(default=0.3, metadata={"help": "Share of sentences naming the underdog sense."})
    null_share: float = field(default=0.15, metadata={"help": "Share of sentences naming the river (gold NULL)."})
    prior_high: float = field(default=0.75, metadata={"help": "The alias table's prior of each name's favourite."})
    epochs: float = field(default=8.0, metadata={"help": "Training epochs of the KAR run."})
    learning_rate: float = field(default=1e-3, metadata={"help": "Learning rate of the KAR run."})
    batch_size: int = field(default=16, metadata={"help": "Training batch size of the KAR run."})
    logging_steps: int = field(default=10, metadata={"help": "Logging interval (linking_loss per interval)."})
    hidden_size: int = field(default=32, metadata={"help": "Width of the tiny LUKE (entity width: 16)."})
    num_hidden_layers: int = field(default=2, metadata={"help": "Layers of the tiny LUKE."})

    def __post_init__(self) -> None:
        try:
            self.seed_list = [int(seed) for seed in self.seeds.split(",")]
        except ValueError:
            raise SystemExit(
                f"kar_linking.py: --seeds {self.seeds!r} is not a comma-separated list of integers"
            ) from None
        for name in ("train_size", "eval_size", "names", "batch_size", "logging_steps"):
            if getattr(self, name) < 1:
                raise SystemExit(f"kar_linking.py: --{name} must be at least 1, got {getattr(self, name)}")


def train_kar(args: LinkingArguments, seed: int, folder: Path) -> tuple[Path, dict[str, Path]]:
    """Corpus, tiny LUKE and the KAR run of one seed (the script's own command line, in a fresh process)."""
    paths = write_linking_corpus(
        folder / "data", seed, args.train_size, args.eval_size, args.names, 16, args.prior_wrong_share,
        args.null_share, args.prior_high,
    )  # fmt: skip
    texts = [paths[split].read_text(encoding="utf-8") for split in ("train", "dev")]
    luke = build_demo_luke(folder / "luke", texts, hidden_size=args.hidden_size,
                           num_hidden_layers=args.num_hidden_layers, intermediate_size=4 * args.hidden_size)  # fmt: skip
    output = folder / "kar"
    command = [
        sys.executable, str(SCRIPT), "--task", TASK, "--variant", "kar", "--model_name_or_path", str(luke),
        "--kb_alias_table", str(paths["aliases"]), "--kb_entity_vectors", str(paths["vectors"]),
        "--entity_links", str(paths["links"]), "--train_file", str(paths["train"]), "--do_train",
        "--num_train_epochs", str(args.epochs), "--learning_rate", str(args.learning_rate),
        "--per_device_train_batch_size", str(args.batch_size), "--logging_steps", str(args.logging_steps),
        "--max_seq_length", "64", "--save_strategy", "no", "--report_to", "none", "--seed", str(seed),
        "--output_dir", str(output), "--overwrite_output_dir", "true", "--disable_tqdm", "true",
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(
            f"kar_linking.py: the KAR run of seed {seed} failed:\n{run.stdout[-2000:]}{run.stderr[-3000:]}"
        )
    return output, paths


def evaluate_linking(checkpoint: Path, paths: dict[str, Path], batch_size: int = 32) -> dict[str, Any]:
    """``tasks_kb.linking_report`` of a KAR checkpoint on the dev sentences (the checkpoint's KB files, gold links)."""
    task = ENTITY_TASKS[TASK]
    model_args = SimpleNamespace(
        model_name_or_path=str(checkpoint), tokenizer_name=None, variant="kar", ablation=None, kb_alias_table=None,
        kb_entity_vectors=None, ner_model=None, cache_dir=None, model_revision="main", token=None,
    )  # fmt: skip
    data_args = SimpleNamespace(max_seq_length=64, max_span_length=16, max_entities=128, input_format=None,
                                entity_links=str(paths["links"]))  # fmt: skip
    examples = task.read_file(paths["dev"], "--validation_file", "validation", data_args, model_args)
    loaded = task.load(model_args, data_args, {"validation": examples}, None)
    features = task.featurise(loaded.processor, examples, "validation", data_args)
    loader = DataLoader(list(features), batch_size=batch_size, collate_fn=task.collator(loaded.processor, "kar"))
    return linking_report(linking_decisions(loaded.model, loader))


def logged_linking_loss(checkpoint: Path) -> list[float]:
    history = json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
    return [entry["linking_loss"] for entry in history if "linking_loss" in entry]


def cell(values: list[float | None]) -> str:
    """Mean ± spread (half the range) over the seeds, in percent; '-' where undefined."""
    kept = [v for v in values if v is not None]
    if not kept:
        return "-"
    if len(kept) == 1:
        return f"{100 * kept[0]:.1f}"
    return f"{100 * statistics.fmean(kept):.1f} ± {50 * (max(kept) - min(kept)):.1f}"


def print_table(runs: list[dict[str, Any]]) -> None:
    seeds = [run["seed"] for run in runs]
    print(f"\nKAR linking on the synthetic corpus (dev, gold from the links file), seeds {seeds}:")
    print("| | prior alone | KAR's linker | per seed (prior -> linker) |\n|---|---|---|---|")
    for prior_key, linker_key, title in ROWS:
        per_seed = ", ".join(
            f"{'-' if r[prior_key] is None else f'{100 * r[prior_key]:.0f}'} -> "
            f"{'-' if r[linker_key] is None else f'{100 * r[linker_key]:.0f}'}"
            for r in runs
        )
        print(f"| {title} | {cell([r[prior_key] for r in runs])} | {cell([r[linker_key] for r in runs])} | "
              f"{per_seed} |")  # fmt: skip
    counts = ", ".join(f"{r['mentions']} ({r['prior_wrong_mentions']} prior-wrong)" for r in runs)
    print(f"linked dev mentions per seed: {counts}")
    losses = ", ".join(f"{r['linking_loss'][0]:.3f} -> {r['linking_loss'][-1]:.3f}" for r in runs)
    print(f"linking_loss, first -> last logging step: {losses}")
    beats = sum(r["linker_accuracy_prior_wrong"] > (r["prior_accuracy_prior_wrong"] or 0.0) for r in runs)
    falls = sum(r["linking_loss"][-1] < r["linking_loss"][0] for r in runs)
    print(f"the linker beats the prior on the prior-wrong mentions in {beats} of {len(runs)} seeds; linking_loss "
          f"falls in {falls} of {len(runs)}")  # fmt: skip


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    (args,) = HfArgumentParser(LinkingArguments).parse_args_into_dataclasses(args=argv)
    output = Path(args.output_dir)
    runs = []
    for seed in args.seed_list:
        checkpoint, paths = train_kar(args, seed, output / f"seed-{seed}")
        report = evaluate_linking(checkpoint, paths)
        report.update(seed=seed, linking_loss=logged_linking_loss(checkpoint))
        runs.append(report)
        print(f"seed {seed}: {json.dumps({k: v for k, v in report.items() if k != 'linking_loss'})}", flush=True)
    print_table(runs)
    settings = {k: v for k, v in asdict(args).items() if k != "output_dir"}
    (output / "linking.json").write_text(json.dumps({"settings": settings, "runs": runs}, indent=1) + "\n")
    return runs


if __name__ == "__main__":
    main(sys.argv[1:])

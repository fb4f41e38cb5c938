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
"""Do the knowledge parts learn what they are for? KnowBERT-KAR's linker against the alias prior, ERNIE's dEA against
chance, on a synthetic corpus whose alias prior is wrong for a known share of the mentions.

Everything is built here, offline, per seed: the corpus (``gesa.training.synthetic_kb``: TACRED sentences whose place-or-firm
name is an ambiguous alias of a city and a company, the context naming the sense; a river sense in no KB, gold NULL),
its KB files (alias table with priors and case variants, entity vectors, gold links) and a tiny random LUKE with a
byte-level BPE trained on the corpus. The vectors come from one of two generators (``--vectors``): ``synthetic`` (each
entity its kind's direction plus noise) or ``transe`` (``examples/train_transe.py`` on the corpus's facts). Then, with the scripts' own command lines:

- ``linking``: one KAR run of ``examples/run_entity_tasks.py --task relation_classification --variant kar
  --kb_alias_table ... --kb_entity_vectors ... --entity_links ...`` (task loss + ``L_EL``). On the dev sentences (gold
  from the links file): linking accuracy of the prior alone (the highest-prior candidate) and of the trained linker
  (the highest ``psi``), over every linked mention and over the mentions where the prior is wrong; NULL precision
  and recall (the prior never predicts NULL); ``linking_loss`` at the first and the last logging step.
- ``dea``: one ERNIE pre-training run (``--task pretrain --variant ernie --pretrain_format relation_classification``:
  MLM + dEA) evaluated before and after training: dEA accuracy and chance on the same dev words (a uniform guess
  among the sentence's aligned entities).

It prints each seed and the mean and spread over the seeds::

    OMP_NUM_THREADS=1 python bench/knowledge_checks.py --output_dir knowledge_out

(three seeds, both checks: about 3 minutes on one idle core). ``--output_dir`` keeps each seed's data, tiny LUKE and
checkpoints (``seed-N/``) and ``knowledge_checks.json`` (the tables' numbers).
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

from gesa.training.entity import ENTITY_TASKS
from gesa.training.knowledge_base import linking_decisions, linking_report
from gesa.training.synthetic_kb import write_linking_corpus
from gesa.training.wikihop import build_demo_luke

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "knowledge_checks.py"
SCRIPT_PATH = ROOT / "examples" / "run_entity_tasks.py"
TASK = "relation_classification"
ROWS = [
    ("prior_accuracy", "linker_accuracy", "linking accuracy, all linked mentions"),
    ("prior_accuracy_prior_wrong", "linker_accuracy_prior_wrong", "linking accuracy, mentions the prior gets wrong"),
    ("prior_null_precision", "linker_null_precision", "NULL precision"),
    ("prior_null_recall", "linker_null_recall", "NULL recall"),
]


@dataclass
class CheckArguments:
    output_dir: str = field(metadata={"help": "Where each seed's data, tiny LUKE and checkpoints are kept."})
    checks: str = field(default="linking,dea", metadata={"help": "Comma-separated: linking (KAR), dea (ERNIE)."})
    seeds: str = field(default="0,1,2", metadata={"help": "Comma-separated seeds (corpus, LUKE, training)."})
    train_size: int = field(default=400, metadata={"help": "Training sentences per seed."})
    eval_size: int = field(default=200, metadata={"help": "Dev sentences per seed (the tables')."})
    names: int = field(default=12, metadata={"help": "Ambiguous names (two KB senses and a NULL one each)."})
    prior_wrong_share: float = field(default=0.3, metadata={"help": "Share of sentences naming the underdog sense."})
    null_share: float = field(default=0.15, metadata={"help": "Share of sentences naming the river (gold NULL)."})
    prior_high: float = field(default=0.75, metadata={"help": "The alias table's prior of each name's favourite."})
    epochs: float = field(default=8.0, metadata={"help": "Training epochs of each run."})
    learning_rate: float = field(default=1e-3, metadata={"help": "Learning rate of the KAR run."})
    dea_learning_rate: float = field(default=1e-2, metadata={"help": "Learning rate of the ERNIE pre-training run."})
    batch_size: int = field(default=16, metadata={"help": "Training batch size of each run."})
    logging_steps: int = field(default=10, metadata={"help": "Logging interval (linking_loss per interval)."})
    vectors: str = field(
        default="synthetic",
        metadata={"help": "The KB's entity vectors: synthetic (each kind's direction plus noise, gesa.training.synthetic_kb) or "
                  "transe (examples/train_transe.py on the corpus's triples: needs PyKEEN, 'gesa[kge]')."},
    )  # fmt: skip
    hidden_size: int = field(default=32, metadata={"help": "Width of the tiny LUKE (entity width: 16)."})
    num_hidden_layers: int = field(default=2, metadata={"help": "Layers of the tiny LUKE."})

    def __post_init__(self) -> None:
        try:
            self.seed_list = [int(seed) for seed in self.seeds.split(",")]
        except ValueError:
            raise SystemExit(f"{SCRIPT}: --seeds {self.seeds!r} is not a comma-separated list of integers") from None
        self.check_list = [check.strip() for check in self.checks.split(",") if check.strip()]
        unknown = sorted(set(self.check_list) - {"linking", "dea"})
        if unknown or not self.check_list:
            raise SystemExit(f"{SCRIPT}: --checks {self.checks!r}: choose among linking, dea")
        if self.vectors not in ("synthetic", "transe"):
            raise SystemExit(f"{SCRIPT}: --vectors {self.vectors!r}: choose synthetic or transe")
        for name in ("train_size", "eval_size", "names", "batch_size", "logging_steps"):
            if getattr(self, name) < 1:
                raise SystemExit(f"{SCRIPT}: --{name} must be at least 1, got {getattr(self, name)}")


def corpus_and_luke(args: CheckArguments, seed: int, folder: Path) -> tuple[dict[str, Path], Path]:
    """The synthetic corpus and its KB files of one seed, and a tiny LUKE whose BPE learned the corpus."""
    paths = write_linking_corpus(
        folder / "data", seed, args.train_size, args.eval_size, args.names, 16, args.prior_wrong_share,
        args.null_share, args.prior_high,
    )  # fmt: skip
    if args.vectors == "transe":  # the second generator of KB vectors: TransE on the corpus's facts
        transe = ROOT / "examples" / "train_transe.py"
        run = subprocess.run([sys.executable, str(transe), "--triples", str(paths["triples"]), "--output",
                              str(paths["vectors"]), "--dim", "16", "--epochs", "200", "--seed", str(seed)],
                             capture_output=True, text=True)  # fmt: skip
        if run.returncode != 0:
            raise SystemExit(f"{SCRIPT}: train_transe.py failed for seed {seed}:\n{run.stderr[-3000:]}")
    texts = [paths[split].read_text(encoding="utf-8") for split in ("train", "dev")]
    luke = build_demo_luke(folder / "luke", texts, hidden_size=args.hidden_size,
                           num_hidden_layers=args.num_hidden_layers, intermediate_size=4 * args.hidden_size)  # fmt: skip
    return paths, luke


def run_script(flags: list[str], what: str) -> None:
    """``examples/run_entity_tasks.py`` with ``flags`` in a fresh process (its output kept for a failure)."""
    run = subprocess.run([sys.executable, str(SCRIPT_PATH), *flags], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{SCRIPT}: the {what} failed:\n{run.stdout[-2000:]}{run.stderr[-3000:]}")


def common_flags(args: CheckArguments, seed: int, output: Path) -> list[str]:
    return ["--num_train_epochs", str(args.epochs), "--per_device_train_batch_size", str(args.batch_size),
            "--logging_steps", str(args.logging_steps), "--max_seq_length", "64", "--save_strategy", "no",
            "--report_to", "none", "--seed", str(seed), "--output_dir", str(output),
            "--disable_tqdm", "true"]  # fmt: skip


def train_kar(args: CheckArguments, seed: int, paths: dict[str, Path], luke: Path, folder: Path) -> Path:
    output = folder / "kar"
    run_script(["--task", TASK, "--variant", "kar", "--model_name_or_path", str(luke),
                "--kb_alias_table", str(paths["aliases"]), "--kb_entity_vectors", str(paths["vectors"]),
                "--entity_links", str(paths["links"]), "--train_file", str(paths["train"]), "--do_train",
                "--learning_rate", str(args.learning_rate), *common_flags(args, seed, output)],
               f"KAR run of seed {seed}")  # fmt: skip
    return output


def pretrain_ernie(args: CheckArguments, seed: int, paths: dict[str, Path], luke: Path, folder: Path) -> dict:
    """ERNIE's pre-training (MLM + dEA) on the corpus; dEA accuracy and chance before and after, in percent."""
    output = folder / "ernie"
    run_script(["--task", "pretrain", "--variant", "ernie", "--pretrain_format", TASK, "--model_name_or_path",
                str(luke), "--train_file", str(paths["train"]), "--validation_file", str(paths["dev"]), "--do_train",
                "--do_eval", "--eval_on_start", "true", "--learning_rate", str(args.dea_learning_rate),
                *common_flags(args, seed, output)], f"ERNIE pre-training of seed {seed}")  # fmt: skip
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    first = next(entry for entry in history if "eval_dea_accuracy" in entry)  # --eval_on_start
    last = json.loads((output / "eval_results.json").read_text())
    return {"dea_accuracy_before": first["eval_dea_accuracy"], "dea_chance_before": first["eval_dea_chance"],
            "dea_accuracy": last["eval_dea_accuracy"], "dea_chance": last["eval_dea_chance"]}  # fmt: skip


def evaluate_linking(checkpoint: Path, paths: dict[str, Path], batch_size: int = 32) -> dict[str, Any]:
    """``training.knowledge_base.linking_report`` of a KAR checkpoint on the dev sentences (the checkpoint's KB files, gold links)."""
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


def cell(values: list[float | None], scale: float = 100.0) -> str:
    """Mean ± spread (half the range) over the seeds, in percent; '-' where undefined."""
    kept = [scale * v for v in values if v is not None]
    if not kept:
        return "-"
    if len(kept) == 1:
        return f"{kept[0]:.1f}"
    return f"{statistics.fmean(kept):.1f} ± {(max(kept) - min(kept)) / 2:.1f}"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}"


def print_linking(runs: list[dict[str, Any]]) -> None:
    print(f"\nKAR linking on the synthetic corpus (dev, gold from the links file), seeds {[r['seed'] for r in runs]}:")
    print("| | prior alone | KAR's linker | per seed (prior -> linker) |\n|---|---|---|---|")
    for prior_key, linker_key, title in ROWS:
        per_seed = ", ".join(f"{percent(r[prior_key])} -> {percent(r[linker_key])}" for r in runs)
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


def print_dea(runs: list[dict[str, Any]]) -> None:
    print(
        f"\nERNIE dEA on the synthetic corpus (dev words with an aligned entity), seeds {[r['seed'] for r in runs]}:"
    )
    print("| | dEA accuracy | chance (same words) | per seed (accuracy / chance) |\n|---|---|---|---|")
    for when, suffix in (("before pre-training", "_before"), ("after pre-training", "")):
        accuracy = [r[f"dea_accuracy{suffix}"] for r in runs]
        chance = [r[f"dea_chance{suffix}"] for r in runs]
        per_seed = ", ".join(f"{a:.0f} / {c:.0f}" for a, c in zip(accuracy, chance, strict=True))
        print(f"| {when} | {cell(accuracy, 1)} | {cell(chance, 1)} | {per_seed} |")
    above = sum(r["dea_accuracy"] > r["dea_chance"] for r in runs)
    print(f"dEA accuracy above chance after pre-training in {above} of {len(runs)} seeds")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    (args,) = HfArgumentParser(CheckArguments).parse_args_into_dataclasses(args=argv)
    output = Path(args.output_dir)
    taken = [f"seed-{seed}" for seed in args.seed_list if (output / f"seed-{seed}").exists()]
    if taken:  # the scripts would resume the runs found there instead of training new ones
        raise SystemExit(f"{SCRIPT}: {output} already holds {', '.join(taken)}: give a new --output_dir")
    runs = []
    for seed in args.seed_list:
        folder = output / f"seed-{seed}"
        paths, luke = corpus_and_luke(args, seed, folder)
        run: dict[str, Any] = {"seed": seed}
        if "linking" in args.check_list:
            checkpoint = train_kar(args, seed, paths, luke, folder)
            run.update(evaluate_linking(checkpoint, paths), linking_loss=logged_linking_loss(checkpoint))
        if "dea" in args.check_list:
            run.update(pretrain_ernie(args, seed, paths, luke, folder))
        runs.append(run)
        print(f"seed {seed}: {json.dumps({k: v for k, v in run.items() if k != 'linking_loss'})}", flush=True)
    if "linking" in args.check_list:
        print_linking(runs)
    if "dea" in args.check_list:
        print_dea(runs)
    settings = {k: v for k, v in asdict(args).items() if k != "output_dir"}
    (output / "knowledge_checks.json").write_text(json.dumps({"settings": settings, "runs": runs}, indent=1) + "\n")
    return runs


if __name__ == "__main__":
    main(sys.argv[1:])

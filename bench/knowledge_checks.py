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
"""Do the knowledge parts learn what they are for? KnowBERT-KAR's linker against the alias prior (NULL included),
ERNIE's dEA against chance (split by what the corruption did), and does a fact that is only in the KB reach the
answer of KAR and ERNIE?

Everything is built here, offline, per seed, and run with the scripts' own command lines.

The linking corpus (``gesa.training.synthetic_kb``: TACRED sentences whose place-or-firm name is an ambiguous alias
of a city and a company, the context naming the sense; a river sense in no KB, gold NULL; with ``--priors 0.6,0.3,0.1``
three KB senses per name, a city, a company and a band, at those priors, and the river), its KB files (alias table
with priors and case variants, entity vectors, gold links) and a tiny random LUKE with a byte-level BPE trained on the
corpus. The vectors come from one of two generators (``--vectors``): ``synthetic`` (each entity its kind's direction
plus noise) or ``transe`` (``examples/train_transe.py`` on the corpus's facts). Then:

- ``linking``: one KAR run of ``examples/run_entity_tasks.py --task relation_classification --variant kar
  --kb_alias_table ... --kb_entity_vectors ... --entity_links ...`` (task loss + ``L_EL``). On the dev sentences (gold
  from the links file): linking accuracy of the prior alone (the highest-prior candidate) and of the trained linker
  (the highest ``psi``), over every linked mention and over the mentions where the prior is wrong; NULL precision
  and recall (the prior never predicts NULL); ``linking_loss`` at the first and the last logging step.
- ``dea``: one ERNIE pre-training run (``--task pretrain --variant ernie --pretrain_format relation_classification``:
  MLM + dEA) evaluated before and after training: dEA accuracy and chance on the same dev words (a uniform guess
  among the sentence's aligned entities), over all of them and apart for the alignments the corruption kept (80%: the
  entity is in the input), masked (15%) and replaced (5%).
- ``typing``: the KB-only typing check (``synthetic_kb.write_typing_corpus``, ``--generator hubs`` or ``circles``):
  Open Entity sentences whose mention is an invented name in a neutral template, its type recoverable from its KB
  neighbours only, the dev entities never seen in training; the KB vectors are ``train_transe.py``'s on the KB's
  triples (the control: a nearest-centroid probe on them types the dev entities). ``run_entity_tasks.py --task
  entity_typing`` trains ``--variant kar`` and ``--variant ernie`` with the KB files, and ``--variant luke`` without a
  KB (the baseline); exact accuracy on the dev sentences (chance: one over the types), and the swap control: each dev
  mention's KB entity replaced by one of another type (``synthetic_kb.typing_swap``, in the trained model's KB), its
  exact accuracy and how often the model then answers the swapped entity's type.

It prints each seed and the mean and spread over the seeds::

    OMP_NUM_THREADS=1 python bench/knowledge_checks.py --output_dir knowledge_out --checks linking,dea
    OMP_NUM_THREADS=1 python bench/knowledge_checks.py --output_dir null_out --checks linking --vectors transe \
        --priors 0.6,0.3,0.1
    OMP_NUM_THREADS=1 python bench/knowledge_checks.py --output_dir typing_out --checks typing --generator hubs

(three seeds; linking and dEA about 3 minutes on one idle core; typing trains TransE and three models per seed, several
times that, and ran about an hour a seed on the shared, loaded 2-core machine). ``--output_dir`` keeps each seed's
data, tiny LUKE and checkpoints (``seed-N/``) and ``knowledge_checks.json`` (the tables' numbers).
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

from gesa.modeling_ernie import DEA_ALIGNMENT_KINDS
from gesa.records_kb import read_entity_vectors
from gesa.training.entity import ENTITY_TASKS
from gesa.training.knowledge_base import linking_decisions, linking_report
from gesa.training.synthetic_kb import TYPING_GENERATORS, typing_swap, write_linking_corpus, write_typing_corpus
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
    checks: str = field(
        default="linking,dea,typing",
        metadata={"help": "Comma-separated: linking (KAR), dea (ERNIE), typing (KB-only typing: KAR, ERNIE, LUKE)."},
    )
    seeds: str = field(default="0,1,2", metadata={"help": "Comma-separated seeds (corpus, LUKE, training)."})
    train_size: int = field(default=400, metadata={"help": "Training sentences per seed."})
    eval_size: int = field(default=200, metadata={"help": "Dev sentences per seed (the tables')."})
    names: int = field(default=12, metadata={"help": "Ambiguous names (two KB senses and a NULL one each)."})
    prior_wrong_share: float = field(default=0.3, metadata={"help": "Share of sentences naming the underdog sense."})
    null_share: float = field(default=0.15, metadata={"help": "Share of sentences naming the river (gold NULL)."})
    prior_high: float = field(default=0.75, metadata={"help": "The alias table's prior of each name's favourite."})
    priors: str | None = field(
        default=None,
        metadata={"help": "Comma-separated priors of each name's KB senses (e.g. 0.6,0.3,0.1: three KB senses and the "
                  "river in no KB), instead of two senses at --prior_high and 1 - --prior_high."},
    )  # fmt: skip
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
    generator: str = field(default="hubs", metadata={"help": "typing: the corpus generator, hubs or circles."})
    typing_per_type: int = field(default=40, metadata={"help": "typing: entities per type (dev ones included)."})
    typing_dev_per_type: int = field(default=10, metadata={"help": "typing: dev entities per type (unseen)."})
    typing_epochs: float = field(default=20.0, metadata={"help": "typing: training epochs of each run."})
    typing_learning_rate: float = field(default=1e-3, metadata={"help": "typing: learning rate of each run."})
    typing_hidden_size: int = field(default=64, metadata={"help": "typing: width of the tiny LUKE."})
    typing_num_hidden_layers: int = field(default=4, metadata={"help": "typing: layers of the tiny LUKE."})
    typing_entity_size: int = field(default=32, metadata={"help": "typing: entity width = the TransE vectors' size."})
    transe_epochs: int = field(default=400, metadata={"help": "typing: train_transe.py epochs."})

    def __post_init__(self) -> None:
        try:
            self.seed_list = [int(seed) for seed in self.seeds.split(",")]
        except ValueError:
            raise SystemExit(f"{SCRIPT}: --seeds {self.seeds!r} is not a comma-separated list of integers") from None
        self.check_list = [check.strip() for check in self.checks.split(",") if check.strip()]
        unknown = sorted(set(self.check_list) - {"linking", "dea", "typing"})
        if unknown or not self.check_list:
            raise SystemExit(f"{SCRIPT}: --checks {self.checks!r}: choose among linking, dea, typing")
        if self.generator not in TYPING_GENERATORS:
            raise SystemExit(f"{SCRIPT}: --generator {self.generator!r}: choose among {', '.join(TYPING_GENERATORS)}")
        if self.vectors not in ("synthetic", "transe"):
            raise SystemExit(f"{SCRIPT}: --vectors {self.vectors!r}: choose synthetic or transe")
        try:
            self.prior_list = None if self.priors is None else tuple(float(p) for p in self.priors.split(","))
        except ValueError:
            raise SystemExit(f"{SCRIPT}: --priors {self.priors!r} is not a comma-separated list of numbers") from None
        for name in ("train_size", "eval_size", "names", "batch_size", "logging_steps"):
            if getattr(self, name) < 1:
                raise SystemExit(f"{SCRIPT}: --{name} must be at least 1, got {getattr(self, name)}")


def corpus_and_luke(args: CheckArguments, seed: int, folder: Path) -> tuple[dict[str, Path], Path]:
    """The synthetic corpus and its KB files of one seed, and a tiny LUKE whose BPE learned the corpus."""
    paths = write_linking_corpus(
        folder / "data", seed, args.train_size, args.eval_size, args.names, 16, args.prior_wrong_share,
        args.null_share, args.prior_high, args.prior_list,
    )  # fmt: skip
    if args.vectors == "transe":  # the second generator of KB vectors: TransE on the corpus's facts
        train_transe(paths, 16, 200, seed)
    texts = [paths[split].read_text(encoding="utf-8") for split in ("train", "dev")]
    luke = build_demo_luke(folder / "luke", texts, hidden_size=args.hidden_size,
                           num_hidden_layers=args.num_hidden_layers, intermediate_size=4 * args.hidden_size)  # fmt: skip
    return paths, luke


def train_transe(paths: dict[str, Path], dim: int, epochs: int, seed: int) -> None:
    """``examples/train_transe.py`` on the corpus's triples, writing its vectors file (``--kb_entity_vectors``)."""
    transe = ROOT / "examples" / "train_transe.py"
    run = subprocess.run([sys.executable, str(transe), "--triples", str(paths["triples"]), "--output",
                          str(paths["vectors"]), "--dim", str(dim), "--epochs", str(epochs), "--seed", str(seed)],
                         capture_output=True, text=True)  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"{SCRIPT}: train_transe.py failed for seed {seed}:\n{run.stderr[-3000:]}")


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
    split = {f"dea_{metric}_{kind}{when}": entry.get(f"eval_dea_{metric}_{kind}")
             for when, entry in (("_before", first), ("", last)) for kind in DEA_ALIGNMENT_KINDS
             for metric in ("accuracy", "chance")}  # fmt: skip
    return {"dea_accuracy_before": first["eval_dea_accuracy"], "dea_chance_before": first["eval_dea_chance"],
            "dea_accuracy": last["eval_dea_accuracy"], "dea_chance": last["eval_dea_chance"], **split}  # fmt: skip


def load_checkpoint_on(
    task_name: str, checkpoint: Path, variant: str, dev: Path, links: Path | None = None, batch_size: int = 32
) -> tuple[Any, list[Any], DataLoader]:
    """A checkpoint of ``run_entity_tasks.py`` loaded as the script loads it (its KB files), the dev examples and
    their batches (with the gold links of ``links``)."""
    task = ENTITY_TASKS[task_name]
    model_args = SimpleNamespace(
        model_name_or_path=str(checkpoint), tokenizer_name=None, variant=variant, ablation=None, kb_alias_table=None,
        kb_entity_vectors=None, ner_model=None, cache_dir=None, model_revision="main", token=None,
    )  # fmt: skip
    data_args = SimpleNamespace(max_seq_length=64, max_span_length=16, max_entities=128, input_format=None,
                                entity_links=None if links is None else str(links))  # fmt: skip
    examples = task.read_file(dev, "--validation_file", "validation", data_args, model_args)
    loaded = task.load(model_args, data_args, {"validation": examples}, None)
    features = task.featurise(loaded.processor, examples, "validation", data_args)
    loader = DataLoader(list(features), batch_size=batch_size, collate_fn=task.collator(loaded.processor, variant))
    return loaded, examples, loader


def evaluate_linking(checkpoint: Path, paths: dict[str, Path], batch_size: int = 32) -> dict[str, Any]:
    """``training.knowledge_base.linking_report`` of a KAR checkpoint on the dev sentences (the checkpoint's KB files,
    gold links)."""
    loaded, _, loader = load_checkpoint_on(TASK, checkpoint, "kar", paths["dev"], paths["links"], batch_size)
    return linking_report(linking_decisions(loaded.model, loader))


# ----------------------------------------------------------------------------------------------- KB-only typing

TYPING_VARIANTS = ("kar", "ernie", "luke")  # luke: no KB at all, the baseline


def typing_corpus_and_luke(args: CheckArguments, seed: int, folder: Path) -> tuple[dict[str, Path], Path, float]:
    """The typing corpus of one seed, its TransE vectors, the nearest-centroid probe on them (the share of dev
    entities whose vector is nearest the centroid of their type's training entities) and a tiny LUKE."""
    paths = write_typing_corpus(folder / "data", args.generator, seed, args.typing_per_type, args.typing_dev_per_type)
    train_transe(paths, args.typing_entity_size, args.transe_epochs, seed)
    info = json.loads(paths["types"].read_text())
    names, vectors = read_entity_vectors(paths["vectors"])
    row = {name: index for index, name in enumerate(names)}
    dev = set(info["dev"])
    kinds = sorted(set(info["types"].values()))
    centroids = {kind: vectors[[row[n] for n, k in info["types"].items() if k == kind and n not in dev]].mean(0)
                 for kind in kinds}  # fmt: skip
    probe = sum(
        min(kinds, key=lambda kind: float((vectors[row[name]] - centroids[kind]).norm())) == info["types"][name]
        for name in info["dev"]
    ) / len(info["dev"])
    texts = [paths[split].read_text(encoding="utf-8") for split in ("train", "dev")]
    luke = build_demo_luke(folder / "luke", texts, hidden_size=args.typing_hidden_size,
                           num_hidden_layers=args.typing_num_hidden_layers, intermediate_size=2 * args.typing_hidden_size,
                           entity_emb_size=args.typing_entity_size)  # fmt: skip
    return paths, luke, probe


def train_typing(
    args: CheckArguments, seed: int, variant: str, paths: dict[str, Path], luke: Path, folder: Path
) -> Path:
    """One ``run_entity_tasks.py --task entity_typing`` run (the KB files for KAR and ERNIE, none for LUKE)."""
    output = folder / f"typing-{variant}"
    kb = ["--kb_alias_table", str(paths["aliases"]), "--kb_entity_vectors", str(paths["vectors"])]
    flags = ["--task", "entity_typing", "--variant", variant, "--model_name_or_path", str(luke), "--train_file",
             str(paths["train"]), "--validation_file", str(paths["dev"]), "--do_train", "--do_eval",
             "--learning_rate", str(args.typing_learning_rate), *(kb if variant != "luke" else []),
             *common_flags(args, seed, output)]  # fmt: skip
    flags[flags.index("--num_train_epochs") + 1] = str(args.typing_epochs)
    run_script(flags, f"{variant} typing run of seed {seed}")
    return output


def exact_accuracy(checkpoint: Path) -> float:
    """The share of dev sentences whose predicted types are exactly the gold ones (the script's predictions file)."""
    rows = json.loads((checkpoint / "eval_predictions.json").read_text())
    return sum(sorted(row["prediction"]) == sorted(row["reference"]) for row in rows) / len(rows)


def swap_control(checkpoint: Path, variant: str, paths: dict[str, Path], seed: int) -> dict[str, float]:
    """Exact accuracy with each dev mention's KB entity replaced, in the trained model's KB, by an entity of another
    type (``typing_swap``), and the share of sentences answered with exactly the swapped entity's type."""
    import torch

    loaded, examples, loader = load_checkpoint_on("entity_typing", checkpoint, variant, paths["dev"])
    model = loaded.model.eval()
    info = json.loads(paths["types"].read_text())
    row = {name: index for index, name in enumerate(loaded.processor.knowledge_files.entities)}
    swap = typing_swap(info["types"], info["dev"], seed)
    table = model.base_model.knowledge_base.embeddings
    with torch.no_grad():
        original = table.clone()
        for name in info["dev"]:
            table[row[name]] = original[row[swap[name]]]
        logits = torch.cat([model(**{k: v for k, v in batch.items() if k != "labels"}).logits for batch in loader])
        table.copy_(original)
    labels = model.config.id2label
    right = follows = 0
    for example, scores in zip(examples, logits, strict=True):
        predicted = sorted(labels[int(i)] for i in (scores > 0).nonzero().flatten())
        right += predicted == sorted(example.labels)
        follows += predicted == [info["types"][swap[" ".join(example.tokens[example.start : example.end])]]]
    return {"swap_exact": right / len(examples), "swap_follows": follows / len(examples)}


def typing_runs(args: CheckArguments, seed: int, folder: Path) -> dict[str, Any]:
    paths, luke, probe = typing_corpus_and_luke(args, seed, folder / "typing")
    run: dict[str, Any] = {"typing_probe": probe, "typing_types": len(TYPING_GENERATORS[args.generator].types)}
    for variant in TYPING_VARIANTS:
        checkpoint = train_typing(args, seed, variant, paths, luke, folder / "typing")
        run[f"typing_exact_{variant}"] = exact_accuracy(checkpoint)
        if variant != "luke":
            run.update(
                {f"{key}_{variant}": value for key, value in swap_control(checkpoint, variant, paths, seed).items()}
            )
    return run


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
    found = sum((r["linker_null_recall"] or 0) >= 0.9 and (r["linker_null_precision"] or 0) >= 0.9 for r in runs)
    print(f"NULL recall >= 90 at NULL precision >= 90 in {found} of {len(runs)} seeds")


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


def print_dea_split(runs: list[dict[str, Any]]) -> None:
    print("\ndEA after pre-training by what the corruption did to the alignment (dev words):")
    print("| alignment | dEA accuracy | chance (same words) | per seed (accuracy / chance) |\n|---|---|---|---|")
    for kind in DEA_ALIGNMENT_KINDS:
        accuracy = [r[f"dea_accuracy_{kind}"] for r in runs]
        chance = [r[f"dea_chance_{kind}"] for r in runs]
        per_seed = ", ".join("-" if a is None else f"{a:.0f} / {c:.0f}" for a, c in zip(accuracy, chance, strict=True))
        print(f"| {kind} | {cell(accuracy, 1)} | {cell(chance, 1)} | {per_seed} |")


def print_typing(args: CheckArguments, runs: list[dict[str, Any]]) -> None:
    chance = 1 / runs[0]["typing_types"]
    print(f"\nKB-only typing ({args.generator}: {runs[0]['typing_types']} types, chance {100 * chance:.1f}; dev "
          f"entities unseen in training), seeds {[r['seed'] for r in runs]}; nearest-centroid probe on the KB vectors: "
          f"{', '.join(percent(r['typing_probe']) for r in runs)}")  # fmt: skip
    print("| exact accuracy | mean ± half range | per seed | seeds >= 70 |\n|---|---|---|---|")
    rows = [(f"--variant {v}" + (" (no KB)" if v == "luke" else ""), f"typing_exact_{v}") for v in TYPING_VARIANTS]
    rows += [(f"--variant {v}, swap control", f"swap_exact_{v}") for v in TYPING_VARIANTS if v != "luke"]
    rows += [(f"--variant {v}, swap control: answers the swapped type", f"swap_follows_{v}")
             for v in TYPING_VARIANTS if v != "luke"]  # fmt: skip
    for title, key in rows:
        values = [r[key] for r in runs]
        high = sum(value >= 0.7 for value in values)
        print(f"| {title} | {cell(values)} | {', '.join(f'{100 * v:.1f}' for v in values)} | {high} of {len(runs)} |")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    (args,) = HfArgumentParser(CheckArguments).parse_args_into_dataclasses(args=argv)
    output = Path(args.output_dir)
    taken = [f"seed-{seed}" for seed in args.seed_list if (output / f"seed-{seed}").exists()]
    if taken:  # the scripts would resume the runs found there instead of training new ones
        raise SystemExit(f"{SCRIPT}: {output} already holds {', '.join(taken)}: give a new --output_dir")
    runs = []
    for seed in args.seed_list:
        folder = output / f"seed-{seed}"
        run: dict[str, Any] = {"seed": seed}
        if {"linking", "dea"} & set(args.check_list):
            paths, luke = corpus_and_luke(args, seed, folder)
        if "linking" in args.check_list:
            checkpoint = train_kar(args, seed, paths, luke, folder)
            run.update(evaluate_linking(checkpoint, paths), linking_loss=logged_linking_loss(checkpoint))
        if "dea" in args.check_list:
            run.update(pretrain_ernie(args, seed, paths, luke, folder))
        if "typing" in args.check_list:
            run.update(typing_runs(args, seed, folder))
        runs.append(run)
        print(f"seed {seed}: {json.dumps({k: v for k, v in run.items() if k != 'linking_loss'})}", flush=True)
    if "linking" in args.check_list:
        print_linking(runs)
    if "dea" in args.check_list:
        print_dea(runs)
        print_dea_split(runs)
    if "typing" in args.check_list:
        print_typing(args, runs)
    settings = {k: v for k, v in asdict(args).items() if k != "output_dir"}
    (output / "knowledge_checks.json").write_text(json.dumps({"settings": settings, "runs": runs}, indent=1) + "\n")
    return runs


if __name__ == "__main__":
    main(sys.argv[1:])

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
"""Do seed 002's pre-training objectives (ERICA, KBIR) learn what they are for, and do they help a model read the
relations a document states?

Everything is built here, offline, per generator and seed: the corpus (``gesa.training.synthetic_documents``:
documents stating facts of an invented world among neutral sentences, its knowledge graph, and downstream tasks over
new persons whose labels a sentence ELSEWHERE in the document gives) and a tiny random LUKE (hidden 64, 4 layers,
byte-level BPE trained on the corpus; drawn at ``--initializer_range``, LukeConfig's 0.02 unless told). Then, with
the scripts' own command lines (``examples/run_entity_tasks.py``, ``--variant luke``):

- ``mechanism``: ``--task pretrain --pretrain_format docred --kg_triples kg.tsv --objectives erica`` and ``kbir``
  (and ``mlm``, the control), evaluated before and after on the held-out documents: ED and RD accuracy beside chance
  (a uniform guess among the candidates), KBI's infilling accuracy beside the unigram baseline (each slot's most
  frequent token of the same evaluation), KRC's balanced accuracy beside 50.
- ``downstream``: each of those checkpoints fine-tuned on the relation task (TACRED
  format: the pair of a neutral sentence, labelled by the relation stated elsewhere; accuracy over all pairs, chance
  50: half the pairs are related, the pair's kinds never tell which) and the typing task (FIGER format: a person's
  role, given by another sentence; strict accuracy, chance 1 in 3), with the same flags; the control: the same
  tasks with the label stated in the labelled sentence itself (``_local``), fine-tuned from the MLM checkpoint: the
  easy case, which the recipe must learn.

- ``scirex``: seed 002's must-show: ``--task pretrain --pretrain_format scirex`` on the shared SciREX sample
  (``../shared/data/scirex``: 30 papers to train on, 10 to evaluate) with each objective alone (ERICA; KBIR and its
  two parts, KBI and KRC) and all together (with LUKE's own), at the script's defaults (``--max_seq_length`` 256, 3 epochs, learning rate 5e-5, batch 8; a tiny LUKE whose BPE is
  trained on the papers), logging every 10 steps: the return code and each loss's first and last logged value.

It prints each seed and, per generator, the mean and half the range over the seeds, and how many seeds each objective
beats MLM alone::

    OMP_NUM_THREADS=1 python bench/objective_checks.py --output_dir objectives_out

(``--generators firms,bands``: ``firms`` is the generator the recipe was tuned on, ``bands`` one written after it was
fixed; three seeds each). KRC's suspects are conditions of ``--objectives`` beside the objectives' names
(``CONDITIONS``: class-balanced loss or data, KBIR's any-type rule, no infilling, the easy control of another type,
the span's own words); every KRC condition's table adds its ROC AUC and how much the boundary words' states move when
the span is masked (``boundary_sensitivity``). ``--output_dir`` keeps each run and ``objective_checks.json`` (the tables' numbers).
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import HfArgumentParser

from gesa.modeling_gesa_objectives import objective_losses
from gesa.training.synthetic_documents import corpus_texts, write_objective_corpus
from gesa.training.wikihop import build_demo_luke

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "objective_checks.py"
SCRIPT_PATH = ROOT / "examples" / "run_entity_tasks.py"
# (the loss a condition must train, metric, its chance / baseline, title)
MECHANISM = [
    ("ed", "ed_accuracy", "ed_chance", "ED accuracy (chance: a uniform guess)"),
    ("rd", "rd_accuracy", "rd_chance", "RD accuracy (chance)"),
    ("infill", "infill_accuracy", "infill_unigram_accuracy", "KBI infilling accuracy (unigram baseline)"),
    ("krc", "krc_accuracy", None, "KRC balanced accuracy (chance 50)"),
    ("krc", "krc_auc", None, "KRC ROC AUC (chance 50)"),
    ("krc", "krc_boundary_sensitivity", "", "KRC: change of the boundary words when the span is masked (%; 0: blind)"),
]
# pre-training conditions beyond the objectives' names: (objectives, extra flags); the KRC suspects' experiments
CONDITIONS = {
    "kbir_weighted": ("kbir", ["--krc_replaced_weight", "9"]),  # class balance by the loss: (1 - 0.1) / 0.1
    "kbir_half": ("kbir", ["--krc_probability", "0.5"]),  # class balance by the data: half the items replaced
    "kbir_any": ("kbir", ["--krc_replacement", "any"]),  # the easy case: any other entity (KBIR's released code)
    "mlm_krc": ("mlm,krc", []),  # KRC without infilling, which removes the kept names' other mentions
    "kbir_other": ("kbir", ["--krc_replacement", "other_type"]),  # the easy control: the sentence shows it
    "kbir_other_span": ("kbir", ["--krc_replacement", "other_type", "--krc_readout", "span"]),  # and the span's words
}


@dataclass
class CheckArguments:
    output_dir: str = field(metadata={"help": "Where each generator's and seed's corpus, LUKE and runs are kept."})
    generators: str = field(default="firms,bands", metadata={"help": "Comma-separated corpus generators."})
    seeds: str = field(default="0,1,2", metadata={"help": "Comma-separated seeds (corpus, training)."})
    objectives: str = field(
        default="mlm,erica,kbir",
        metadata={
            "help": f"Pre-training conditions (mlm: the control; also {', '.join(CONDITIONS)}: KRC's suspects)."
        },
    )
    checks: str = field(default="mechanism,downstream", metadata={"help": "mechanism, downstream (comma-separated)."})
    documents: int = field(default=400, metadata={"help": "Pre-training documents (and a quarter more held out)."})
    task_size: str = field(default="600,200", metadata={"help": "Downstream train,dev examples."})
    pretrain_epochs: float = field(default=8, metadata={"help": "Pre-training epochs (the same for each objective)."})
    pretrain_learning_rate: float = field(default=1e-3, metadata={"help": "Pre-training learning rate."})
    finetune_epochs: float = field(default=12, metadata={"help": "Fine-tuning epochs."})
    finetune_learning_rate: float = field(default=1e-3, metadata={"help": "Fine-tuning learning rate."})
    scirex: str = field(default=str(ROOT.parent / "shared" / "data" / "scirex"), metadata={"help": "SciREX sample."})
    scirex_objectives: str = field(
        default="erica;kbi;krc;kbir;luke,erica,kbir", metadata={"help": "--checks scirex: runs, ';'-separated."}
    )
    scirex_variant: str | None = field(
        default=None, metadata={"help": "--checks scirex: --variant (default: the script's, gesa); e.g. long_luke."}
    )
    hidden_size: int = field(default=64, metadata={"help": "The tiny LUKE's width."})
    layers: int = field(default=4, metadata={"help": "The tiny LUKE's layers."})
    initializer_range: float = field(
        default=0.02,
        metadata={"help": "The tiny LUKE's init std (LukeConfig's 0.02; 1/sqrt(width), 0.125, sharpens attention)."},
    )


def run_script(flags: list[str], what: str) -> None:
    """``run_entity_tasks.py`` with ``flags`` in a child process; its error line ends the bench."""
    done = subprocess.run([sys.executable, str(SCRIPT_PATH), *flags], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{SCRIPT}: {what} failed (rc {done.returncode}):\n{done.stderr[-2000:]}")


def common(output: Path, seed: int) -> list[str]:
    return ["--variant", "luke", "--output_dir", str(output), "--overwrite_output_dir", "true", "--report_to", "none",
            "--save_strategy", "no", "--disable_tqdm", "true", "--seed", str(seed), "--max_seq_length", "128",
            "--logging_steps", "50"]  # fmt: skip


def pretrain(args: CheckArguments, corpus: Path, luke: Path, objectives: str, seed: int, output: Path) -> dict:
    """One pre-training run of ``objectives`` (or a ``CONDITIONS`` name); its evaluation before and after
    (``log_history``) and its logged losses."""
    objectives, extra = CONDITIONS.get(objectives, (objectives, []))
    if not (output / "all_results.json").is_file():
        run_script([*extra, "--task", "pretrain", "--pretrain_format", "docred", "--objectives", objectives, "--kg_triples",
                    str(corpus / "kg.tsv"), "--model_name_or_path", str(luke), "--train_file",
                    str(corpus / "pretrain.json"), "--validation_file", str(corpus / "pretrain_dev.json"),
                    "--do_train", "--do_eval", "--eval_on_start", "true", "--num_train_epochs",
                    str(args.pretrain_epochs), "--learning_rate", str(args.pretrain_learning_rate),
                    "--per_device_train_batch_size", "8", *common(output, seed)], f"pre-training {objectives}")  # fmt: skip
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    before = next(entry for entry in history if "eval_loss" in entry)  # --eval_on_start
    after = json.loads((output / "all_results.json").read_text())  # the evaluation after training
    return {"before": before, "after": after, "losses": [e for e in history if "loss" in e]}


def finetune(args: CheckArguments, corpus: Path, model: Path, task: str, seed: int, output: Path) -> dict:
    """One fine-tuning run of ``task`` (``relation``, ``typing``, or their ``_local`` controls): its results and
    the relation task's accuracy over every pair (``no_relation`` included)."""
    kind = task.split("_")[0]
    if not (output / "all_results.json").is_file():
        run_script(["--task", "relation_classification" if kind == "relation" else "figer", "--model_name_or_path",
                    str(model), "--train_file", str(corpus / f"{task}_train.json"), "--validation_file",
                    str(corpus / f"{task}_dev.json"), "--do_train", "--do_eval", "--num_train_epochs",
                    str(args.finetune_epochs), "--learning_rate", str(args.finetune_learning_rate),
                    "--per_device_train_batch_size", "16", *common(output, seed)], f"fine-tuning {task}")  # fmt: skip
    results = json.loads((output / "all_results.json").read_text())
    rows = json.loads((output / "eval_predictions.json").read_text())
    accuracy = 100.0 * sum(row["prediction"] == row["reference"] for row in rows) / len(rows)
    main = accuracy if kind == "relation" else results["eval_accuracy"]
    return {"main": main, "f1": results.get("eval_f1", results.get("eval_micro_f1"))}


def condition_losses(condition: str) -> list[str]:
    """The losses a pre-training condition (an objective name, a comma-separated list or a ``CONDITIONS`` name) trains."""
    return objective_losses(CONDITIONS.get(condition, (condition,))[0].split(","))


def boundary_sensitivity(model_dir: Path, corpus: Path, windows: int = 32) -> float:
    """How much KRC's input sees its span: the median, over the held-out windows' KRC items, of the relative change
    of the boundary words' final states ``[x_{s-1} ; x_{e+1}]`` when the span's tokens become ``<mask>`` (percent;
    0 when the classifier's input does not depend on what stands between the boundaries)."""
    import torch
    from transformers import AutoModelForPreTraining

    from gesa.loading_gesa import load_tokenizer
    from gesa.modeling_gesa_objectives import boundary_states
    from gesa.training.entity_documents import KnowledgeGraph, read_docred_file, read_triples
    from gesa.training.entity_objectives import EntityObjectivesProcessor

    model = AutoModelForPreTraining.from_pretrained(model_dir, trust_remote_code=True).eval()
    tokenizer = load_tokenizer(str(model_dir))
    graph = KnowledgeGraph.from_triples(read_triples(corpus / "kg.tsv", "kg.tsv"))
    processor = EntityObjectivesProcessor(tokenizer, {"objectives": ["krc"], "krc_probability": 0.0}, 128, graph=graph)
    features = processor.encode_all(read_docred_file(corpus / "pretrain_dev.json"))[:windows]
    changes, collator = [], processor.get_data_collator()
    for feature in features:
        batch = collator([feature])
        boundaries, labels = batch.pop("krc_boundaries"), batch.pop("krc_labels")
        with torch.no_grad():
            before = boundary_states(model(**batch, output_hidden_states=True).hidden_states[-1], boundaries)
            for item in (labels[0] != -100).nonzero().flatten().tolist():
                left, right = boundaries[0, item].tolist()
                masked = dict(batch, input_ids=batch["input_ids"].clone())
                masked["input_ids"][0, left + 1 : right] = tokenizer.mask_token_id
                after = boundary_states(model(**masked, output_hidden_states=True).hidden_states[-1], boundaries)
                changes.append(float((after[0, item] - before[0, item]).norm() / before[0, item].norm()))
    return 100.0 * statistics.median(changes)


def cell(values: list[float]) -> str:
    """``mean ± half the range (v1, v2, ...)``."""
    if not values:
        return "-"
    spread = (max(values) - min(values)) / 2
    listed = ", ".join(f"{v:.1f}" for v in values)
    return f"{statistics.mean(values):.1f} ± {spread:.1f} ({listed})"


def print_mechanism(generator: str, runs: dict[int, dict]) -> None:
    print(f"\nMechanism ({generator}; seeds {', '.join(map(str, runs))}; mean ± half the range)")
    print("| objective: metric | before pre-training | after | baseline after |")
    print("|---|---|---|---|")
    conditions = list(next(iter(runs.values()))["pretrain"]) if runs else []
    for (loss, metric, baseline, title), objective in ((row, c) for row in MECHANISM for c in conditions):
        if loss not in condition_losses(objective):
            continue
        seeds = [run["pretrain"][objective] for run in runs.values() if objective in run["pretrain"]]
        before = [s["before"].get(f"eval_{metric}") for s in seeds]
        after = [s["after"].get(f"eval_{metric}") for s in seeds]
        chance = [s["after"].get(f"eval_{baseline}") for s in seeds] if baseline else [50.0] * len(seeds)
        above = sum(a is not None and c is not None and a > c for a, c in zip(after, chance, strict=True))
        if baseline == "":  # a measurement without a baseline
            print(f"| {objective}: {title} | - | {cell([v for v in after if v is not None])} | - |")
            continue
        print(f"| {objective}: {title} | {cell([v for v in before if v is not None])} | "
              f"{cell([v for v in after if v is not None])} | {cell([v for v in chance if v is not None])} "
              f"({above}/{len(seeds)} seeds above) |")  # fmt: skip


def print_downstream(generator: str, runs: dict[int, dict], conditions: list[str]) -> None:
    print(f"\nDownstream ({generator}; fine-tuned from each pre-training, same flags; mean ± half the range)")
    print("| pre-training | relation accuracy (chance 50) | relation micro-F1 | typing strict accuracy (chance 33.3) "
          "| local control: relation acc / typing acc |")  # fmt: skip
    print("|---|---|---|---|---|")
    for condition in conditions:
        rows = [run["downstream"].get(condition, {}) for run in runs.values()]
        rel = [r["relation"]["main"] for r in rows if "relation" in r]
        f1 = [r["relation"]["f1"] for r in rows if "relation" in r]
        typ = [r["typing"]["main"] for r in rows if "typing" in r]
        local = [f"{r['relation_local']['main']:.0f}/{r['typing_local']['main']:.0f}" for r in rows
                 if "relation_local" in r]  # fmt: skip
        print(f"| {condition} | {cell(rel)} | {cell(f1)} | {cell(typ)} | {', '.join(local) or '-'} |")
    for condition in conditions:
        if condition in ("mlm", "none"):
            continue
        for task in ("relation", "typing"):
            pairs = [(run["downstream"].get(condition, {}).get(task), run["downstream"].get("mlm", {}).get(task))
                     for run in runs.values()]  # fmt: skip
            wins = sum(a is not None and b is not None and a["main"] > b["main"] for a, b in pairs)
            print(f"{generator}: {condition} beats mlm on {task} in {wins} of {len(pairs)} seeds")


def scirex_runs(args: CheckArguments, output: Path) -> dict[str, Any]:
    """The must-show on the real SciREX sample (module docstring): one run per objective set, at defaults."""
    sample = Path(args.scirex)
    luke = output / "scirex" / "tiny-luke"
    if not (luke / "config.json").is_file():
        texts = [" ".join(json.loads(line)["words"]) for line in (sample / "train30.jsonl").read_text().splitlines()]
        build_demo_luke(luke, texts, vocab_size=4000)
    report = {}
    for objectives in args.scirex_objectives.split(";"):
        folder = (
            output
            / "scirex"
            / (objectives.replace(",", "+") + (f"-{args.scirex_variant}" if args.scirex_variant else ""))
        )
        flags = ["--task", "pretrain", "--pretrain_format", "scirex", "--objectives", objectives,
                 "--model_name_or_path", str(luke), "--train_file", str(sample / "train30.jsonl"),
                 "--validation_file", str(sample / "dev10.jsonl"), "--do_train", "--do_eval", "--output_dir",
                 str(folder), "--overwrite_output_dir", "true", "--logging_steps", "10", "--report_to", "none",
                 "--save_strategy", "no", "--disable_tqdm", "true"]  # fmt: skip
        flags += ["--variant", args.scirex_variant] if args.scirex_variant else []
        done = subprocess.run([sys.executable, str(SCRIPT_PATH), *flags], capture_output=True, text=True)
        losses: dict[str, list[float]] = {}
        if done.returncode == 0:
            for entry in json.loads((folder / "trainer_state.json").read_text())["log_history"]:
                for name, value in entry.items():
                    if name.endswith("loss") and not name.startswith(("eval", "train")):
                        losses.setdefault(name, []).append(value)
        report[objectives] = {"rc": done.returncode, "losses": losses, "summary": done.stdout.strip()[-600:]}
        quarter = {n: (statistics.mean(v[: max(1, len(v) // 4)]), statistics.mean(v[-max(1, len(v) // 4) :]))
                   for n, v in losses.items()}  # fmt: skip
        shown = ", ".join(f"{n} {a:.3f} -> {b:.3f}" for n, (a, b) in quarter.items())
        print(f"SciREX --objectives {objectives}: rc {done.returncode}; {len(losses.get('loss', []))} log lines; "
              f"{shown or done.stderr.strip()[-300:]}", flush=True)  # fmt: skip
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    (args,) = HfArgumentParser(CheckArguments).parse_args_into_dataclasses(args=argv)
    output = Path(args.output_dir)
    seeds = [int(s) for s in args.seeds.split(",")]
    objectives = args.objectives.split(",")
    checks = set(args.checks.split(","))
    train_size, dev_size = (int(n) for n in args.task_size.split(","))
    if not (math.isfinite(args.initializer_range) and args.initializer_range > 0):
        raise SystemExit(
            f"{SCRIPT}: --initializer_range must be a number > 0 (e.g. 0.02), got {args.initializer_range}"
        )
    report: dict[str, Any] = {}
    if "scirex" in checks:
        report["scirex"] = scirex_runs(args, output)
    for generator in args.generators.split(",") if checks - {"scirex"} else []:
        runs: dict[int, dict] = {}
        for seed in seeds:
            folder = output / generator / f"seed-{seed}"
            corpus = write_objective_corpus(folder / "data", generator, seed, args.documents, (train_size, dev_size))
            luke = folder / "tiny-luke"
            drawn = json.loads((luke / "config.json").read_text()) if (luke / "config.json").is_file() else None
            if drawn is not None and drawn["initializer_range"] != args.initializer_range:  # its runs would be mixed
                raise SystemExit(f"{SCRIPT}: {luke} was drawn at initializer_range {drawn['initializer_range']}, not "
                                 f"--initializer_range {args.initializer_range}; give another --output_dir")  # fmt: skip
            if drawn is None:
                build_demo_luke(luke, corpus_texts(corpus), vocab_size=600, hidden_size=args.hidden_size,
                                num_attention_heads=4, intermediate_size=2 * args.hidden_size,
                                num_hidden_layers=args.layers, entity_emb_size=args.hidden_size // 2,
                                initializer_range=args.initializer_range)  # fmt: skip
            run = runs[seed] = {"pretrain": {}, "downstream": {}}
            for objective in objectives:
                run["pretrain"][objective] = pretrain(args, corpus, luke, objective, seed, folder / f"pre-{objective}")
                if "krc" in condition_losses(objective):
                    sensitivity = boundary_sensitivity(folder / f"pre-{objective}", corpus)
                    run["pretrain"][objective]["after"]["eval_krc_boundary_sensitivity"] = sensitivity
            if "downstream" in checks:
                for condition in objectives:
                    model = folder / f"pre-{condition}"
                    tasks = ["relation", "typing"] + (["relation_local", "typing_local"] if condition == "mlm" else [])
                    run["downstream"][condition] = {
                        task: finetune(args, corpus, model, task, seed, folder / f"ft-{condition}-{task}")
                        for task in tasks
                    }
            print(f"{generator} seed {seed}: " + json.dumps({
                "mechanism": {o: {k: round(v, 1) for k, v in r["after"].items() if k.endswith(("accuracy", "chance", "auc", "sensitivity"))}
                              for o, r in run["pretrain"].items()},
                "downstream": {c: {t: round(v["main"], 1) for t, v in d.items()} for c, d in run["downstream"].items()},
            }), flush=True)  # fmt: skip
        if "mechanism" in checks:
            print_mechanism(generator, runs)
        if "downstream" in checks:
            print_downstream(generator, runs, objectives)
        report[generator] = runs
    (output / "objective_checks.json").write_text(json.dumps(report, indent=1, default=str))
    return report


if __name__ == "__main__":
    main()

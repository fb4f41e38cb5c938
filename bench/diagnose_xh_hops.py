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
"""Do Transformer-XH's hops carry the answer? A synthetic bridge task in HotpotQA's format, trained three ways.

Every question asks "Which city is the employer of X based in?". Its graph holds, per person, the person's paragraph
("X was born in 1971. He works for Acme Works.", which names the company: a title mention, XH's link) and the
company's paragraph ("Acme Works is a company. It is based in Lyon."), for ``--people`` persons, shuffled. Only the
company's paragraph holds the city, and nothing in it says whose employer it is: the answer paragraph can be told
apart from the other companies' only through the paragraph the question names, that is through the hop from X's
paragraph to its company's. (The company's node also carries its anchor sentence, "He works for Acme Works.", which
names no one.) Beside it, the one-paragraph control: "Which city is the employer of X based in?" over paragraphs
"X works for Acme Works, based in Lyon." only, answerable by reading the named paragraph alone: a run that has not
learned it cannot say anything about hops.

Three systems on the same tiny random LUKE (``XhForHotpotQA``, ``XhTaskProcessor`` features, ``Trainer``):

- ``hops``: XH's default, hop attention in the last ``--hop_layers`` layers along the released code's direction (the
  linked paragraph reads the linking one: the company reads its employee's paragraph);
- ``no_hops``: the same backbone and heads with ``xh_num_hop_layers=0`` (each paragraph read alone);
- ``reversed``: the hops along Eq. 7 read literally (``hotpot_edges="title_mention_eq7"``: the person reads the
  company, the company reads no one);
- ``released_gat`` (not in the default ``--systems``): ``hops`` with the released code's graph attention in place of
  Eq. 7 (``xh_hop_attention="released_gat"``).

Each run trains on bridge and control questions mixed and is scored with the official HotpotQA metric (answer EM)
on held-out questions of each kind. The table gives the mean and spread (sample std) over ``--seeds``; the verdicts
compare two systems as ``bench/diagnose_graph.py`` does: "yes" when one's mean minus its spread lies above the
other's mean plus its spread, "inconclusive" when a run of either has not learned the control (EM below
``--control_em``) or a system has fewer than three seeds, "no" otherwise.

    OMP_NUM_THREADS=1 python bench/diagnose_xh_hops.py --output_dir diagnostic_out/xh_hops

(9 runs of 800 steps: 2-4 minutes each on one busy core, about 25 minutes in all). Before the first run it times
``--probe_steps`` training steps, featurising and predicting on a few questions on this machine and prints the
estimate for the whole command. ``--output_dir`` is required: ``results.json`` is written there after every run
(``"complete": false`` until the last), so a stopped command keeps what it measured.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import statistics
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import HfArgumentParser, LukeConfig, LukeModel, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback
from transformers.utils import logging as hf_logging

from gesa.modeling_xh_tasks import XhForHotpotQA
from gesa.processing_xh_tasks import XhTaskProcessor
from gesa.records_xh import to_hotpot_row
from gesa.structure_gesa import LUKE_MASK_ENTITY_ID
from gesa.training.driver import predict_task
from gesa.training.tokenizer import train_sample_tokenizer
from gesa.training.wikihop import entity_rows
from gesa.training.xh import HOTPOTQA

SYSTEMS = {  # name -> (hop layers on, hotpot_edges, xh_hop_attention)
    "hops": (True, "title_mention", "paper"),
    "no_hops": (False, "title_mention", "paper"),
    "reversed": (True, "title_mention_eq7", "paper"),
    "released_gat": (True, "title_mention", "released_gat"),
}
MIN_SEEDS = 3
_SYLLABLES = ["vel", "mor", "kas", "trel", "dun", "abo", "rin", "ost", "lam", "bre", "sar", "tho", "quil", "nes",
              "pa", "zor", "fin", "gul", "hem", "yat"]  # fmt: skip
_FIRST = ["Anna", "Bruno", "Cleo", "Dario", "Edda", "Femi", "Gala", "Hugo", "Ines", "Jonas", "Kira", "Lars"]
_KINDS = ["Works", "Group", "Labs", "Mills", "Foods", "Motors"]


@dataclass
class XhHopsArguments:
    seeds: str = field(default="0,1,2", metadata={"help": "Comma-separated seeds (tiny LUKE, heads, data order)."})
    systems: str = field(default="hops,no_hops,reversed", metadata={"help": f"Comma-separated: {list(SYSTEMS)}."})
    people: int = field(default=3, metadata={"help": "Persons (and their companies) per bridge question."})
    train_size: int = field(default=1200, metadata={"help": "Training questions (half bridge, half control)."})
    eval_size: int = field(default=200, metadata={"help": "Held-out questions (half bridge, half control)."})
    data_seed: int = field(default=0, metadata={"help": "Seed of the generated questions (the same for every run)."})
    max_steps: int = field(default=800, metadata={"help": "Training steps per run."})
    batch_size: int = field(default=16)
    learning_rate: float = field(default=1e-3, metadata={"help": "Peak learning rate (linear decay to 0)."})
    hidden_size: int = field(default=64)
    num_hidden_layers: int = field(default=4)
    num_attention_heads: int = field(default=4)
    hop_layers: int = field(default=2, metadata={"help": "XH's hop layers (the last K layers) when hops are on."})
    control_em: float = field(default=50.0, metadata={"help": "Control EM a run must reach to count as trained."})
    probe_steps: int = field(
        default=5, metadata={"help": "Training steps timed before the runs for the time estimate (0: no estimate)."}
    )
    output_dir: str = field(default="", metadata={"help": "Required: the folder results.json is written to."})

    def __post_init__(self) -> None:
        self.seed_list = [int(seed) for seed in self.seeds.split(",")]
        self.system_list = self.systems.split(",")
        unknown = [name for name in self.system_list if name not in SYSTEMS]
        if unknown:
            raise SystemExit(f"diagnose_xh_hops.py: error: --systems: unknown {unknown}; choose from {list(SYSTEMS)}")
        if self.probe_steps < 0:
            raise SystemExit("diagnose_xh_hops.py: error: --probe_steps must be 0 (no estimate) or more")
        if self.people < 2 or min(self.train_size, self.eval_size, self.max_steps, self.batch_size) < 1:
            raise SystemExit("diagnose_xh_hops.py: error: --people must be at least 2, and --train_size, --eval_size, "
                             "--max_steps, --batch_size at least 1")  # fmt: skip
        if not self.output_dir.strip():
            raise SystemExit("diagnose_xh_hops.py: error: --output_dir: required, e.g. --output_dir "
                             "diagnostic_out/xh_hops")  # fmt: skip


# ----------------------------------------------------------------------------------------------- the task


def _name(rng: random.Random, used: set[str], parts: int) -> str:
    while True:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()
        if name not in used:
            used.add(name)
            return name


def make_bridge_questions(count: int, seed: int, people: int = 3, prefix: str = "q") -> list[dict[str, Any]]:
    """``count`` questions in HotpotQA's official layout, alternately a bridge question and its one-paragraph control
    (module docstring); ``type`` is ``bridge`` or ``control``."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        used: set[str] = set()
        persons = [f"{rng.choice(_FIRST)} {_name(rng, used, 2)}" for _ in range(people)]
        companies = [f"{_name(rng, used, 2)} {rng.choice(_KINDS)}" for _ in range(people)]
        cities = [_name(rng, used, 3) for _ in range(people)]
        asked = rng.randrange(people)
        question = f"Which city is the employer of {persons[asked]} based in?"
        pronouns = [rng.choice(["He", "She"]) for _ in range(people)]
        if index % 2 == 0:  # bridge: person -> company -> city
            context = [
                [
                    persons[i],
                    [
                        f"{persons[i]} was born in {rng.randint(1940, 2000)}.",
                        f" {pronouns[i]} works for {companies[i]}.",
                    ],
                ]
                for i in range(people)
            ]
            context += [[companies[i], [f"{companies[i]} is a company.", f" It is based in {cities[i]}."]]
                        for i in range(people)]  # fmt: skip
            facts = [[persons[asked], 1], [companies[asked], 1]]
            kind = "bridge"
        else:  # control: the named paragraph holds the answer
            context = [[persons[i], [f"{persons[i]} works for {companies[i]}, based in {cities[i]}."]]
                       for i in range(people)]  # fmt: skip
            facts = [[persons[asked], 0]]
            kind = "control"
        rng.shuffle(context)
        rows.append({"_id": f"{prefix}-{index}", "type": kind, "question": question, "answer": cities[asked],
                     "supporting_facts": facts, "context": context})  # fmt: skip
    return rows


# ----------------------------------------------------------------------------------------------- runs


def build_luke(args: XhHopsArguments, tokenizer: Any, seed: int, path: Path) -> Path:
    """A random tiny LUKE (absolute positions, LUKE's layout) saved like a Hub checkpoint."""
    config = LukeConfig(vocab_size=len(tokenizer), entity_vocab_size=4, hidden_size=args.hidden_size,
                        entity_emb_size=args.hidden_size // 2, num_hidden_layers=args.num_hidden_layers,
                        num_attention_heads=args.num_attention_heads, intermediate_size=4 * args.hidden_size,
                        max_position_embeddings=130, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # fmt: skip
    torch.manual_seed(seed)
    LukeModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def run_one(args: XhHopsArguments, luke: Path, tokenizer: Any, system: str, seed: int, train: list, dev: list,
            workdir: Path, max_steps: int | None = None) -> dict[str, Any]:  # fmt: skip
    """One system trained on one seed (``max_steps``: ``args.max_steps`` unless given): answer EM on the held-out
    bridge and control questions, the training losses, and the seconds featurising, training and predicting took."""
    max_steps = args.max_steps if max_steps is None else max_steps
    began = time.perf_counter()
    hops, edges, hop_attention = SYSTEMS[system]
    processor = XhTaskProcessor(tokenizer, max_node_length=64, max_query_length=40, hotpot_edges=edges,
                                entity_mask_id=LUKE_MASK_ENTITY_ID)  # fmt: skip
    torch.manual_seed(seed)
    model = XhForHotpotQA.from_luke_pretrained(luke, entity_rows=entity_rows(tokenizer),
                                               xh_num_hop_layers=args.hop_layers if hops else 0,
                                               xh_hop_attention=hop_attention)  # fmt: skip
    features = HOTPOTQA.featurise(processor, train, "train", None)
    featurised = time.perf_counter() - began
    training = TrainingArguments(output_dir=str(workdir / "trainer"), max_steps=max_steps,
                                 per_device_train_batch_size=args.batch_size, learning_rate=args.learning_rate,
                                 logging_steps=max(1, max_steps // 8), save_strategy="no", report_to="none",
                                 seed=seed, use_cpu=True, disable_tqdm=True, remove_unused_columns=False,
                                 dataloader_pin_memory=False)  # fmt: skip
    trainer = Trainer(model=model, args=training, train_dataset=features, data_collator=processor.get_data_collator())
    trainer.remove_callback(PrinterCallback)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    predictions = predict_task(HOTPOTQA, model.eval(), processor, dev, batch_size=32)
    predicted = time.perf_counter() - start
    em = {kind: 100 * HOTPOTQA.score(predictions, [r for r in dev if r["type"] == kind])["em"]
          for kind in ("bridge", "control")}  # fmt: skip
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {"system": system, "seed": seed, "em": em, "loss": losses, "seconds": seconds,
            "featurise_seconds": featurised, "predict_seconds": predicted}  # fmt: skip


def estimate_seconds(args: XhHopsArguments, tokenizer: Any, train: list, dev: list, workdir: Path) -> dict[str, float]:
    """Time one probe run on this machine (the first system, ``--probe_steps`` steps on a few questions) and scale it
    to the whole command: per run, featurising ``--train_size`` questions, ``--max_steps`` steps and predicting
    ``--eval_size`` questions; returns the per-step and total seconds."""
    questions = max(2 * args.batch_size, 8)
    luke = build_luke(args, tokenizer, args.seed_list[0], workdir / "luke-probe")
    probe = run_one(args, luke, tokenizer, args.system_list[0], args.seed_list[0], train[:questions],
                    dev[:questions], workdir / "probe", max_steps=args.probe_steps)  # fmt: skip
    step = probe["seconds"] / args.probe_steps
    per_run = (probe["featurise_seconds"] * len(train) + probe["predict_seconds"] * len(dev)) / questions
    per_run += step * args.max_steps
    runs = len(args.seed_list) * len(args.system_list)
    return {"seconds_per_step": step, "seconds_per_run": per_run, "total_seconds": runs * per_run}


# ----------------------------------------------------------------------------------------------- the table


def spread(values: list[float]) -> float:
    """Sample standard deviation over seeds (0 for one seed)."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def summarise(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per system: its seeds, and per question kind the EM per seed (the table's mean and spread)."""
    rows: dict[str, dict[str, Any]] = {}
    for run in runs:
        row = rows.setdefault(run["system"], {"seeds": [], "em": {"bridge": [], "control": []}, "seconds": []})
        row["seeds"].append(run["seed"])
        row["seconds"].append(run["seconds"])
        for kind, value in run["em"].items():
            row["em"][kind].append(value)
    return rows


def unlearned(name: str, row: dict[str, Any], control_em: float) -> list[str]:
    return [f"{name} s{seed}" for seed, em in zip(row["seeds"], row["em"]["control"], strict=True) if em < control_em]


def verdict(rows: dict[str, dict[str, Any]], better: str, worse: str, control_em: float) -> str:
    """Does ``better`` answer the bridge questions better than ``worse``? "yes", "no" or "inconclusive (why)"."""
    if better not in rows or worse not in rows:
        return f"inconclusive ({better if better not in rows else worse} did not run)"
    for name in (better, worse):
        if len(rows[name]["seeds"]) < MIN_SEEDS:
            return f"inconclusive ({name}: {len(rows[name]['seeds'])} seed(s), a verdict needs {MIN_SEEDS})"
    missed = unlearned(better, rows[better], control_em) + unlearned(worse, rows[worse], control_em)
    if missed:
        return f"inconclusive (control below {control_em:g} EM: {', '.join(missed)})"
    mine, theirs = rows[better]["em"]["bridge"], rows[worse]["em"]["bridge"]
    return "yes" if statistics.mean(mine) - spread(mine) > statistics.mean(theirs) + spread(theirs) else "no"


def print_table(args: XhHopsArguments, rows: dict[str, dict[str, Any]]) -> None:
    chance = 100 / args.people
    print(f"answer EM on held-out questions, mean ± spread (sample std) over the seeds; {args.people} persons per "
          f"question (choosing a company at random: {chance:.0f} EM)")  # fmt: skip
    print("| system | bridge EM | control EM | per seed (bridge / control) | s/run |")
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        cells = [f"{statistics.mean(row['em'][k]):.1f} ± {spread(row['em'][k]):.1f}" for k in ("bridge", "control")]
        seeds = ", ".join(f"s{s}: {b:.0f} / {c:.0f}" for s, b, c in zip(row["seeds"], row["em"]["bridge"],
                                                                          row["em"]["control"], strict=True))  # fmt: skip
        print(f"| {name} | {cells[0]} | {cells[1]} | {seeds} | {statistics.mean(row['seconds']):.0f} |")
    print(f"do the hops carry the answer? (hops vs no_hops): {verdict(rows, 'hops', 'no_hops', args.control_em)}")
    print(f"does their direction matter? (hops vs reversed): {verdict(rows, 'hops', 'reversed', args.control_em)}")
    if "released_gat" in rows:
        answer = verdict(rows, "released_gat", "no_hops", args.control_em)
        print(f"do the released code's hops carry it too? (released_gat vs no_hops): {answer}")


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    (args,) = HfArgumentParser(XhHopsArguments).parse_args_into_dataclasses(args=argv)
    output = Path(args.output_dir)
    if output.exists() and not output.is_dir():
        raise SystemExit(f"diagnose_xh_hops.py: error: --output_dir {output} is a file, not a folder")
    output.mkdir(parents=True, exist_ok=True)
    with quiet_libraries():
        runs = train_all(args, output / "results.json")
    rows = summarise(runs)
    print_table(args, rows)
    return rows


@contextlib.contextmanager
def quiet_libraries() -> Any:
    """transformers at error level without progress bars, gesa's conversion notes and torch's CPU pin-memory note
    off, inside the block only (the caller's logging as it was after it)."""
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    package = logging.getLogger("gesa")
    level = package.level
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    package.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*pin_memory.*")
            yield
    finally:
        package.setLevel(level)
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def write_results(path: Path, args: XhHopsArguments, runs: list[dict[str, Any]], complete: bool) -> None:
    """``results.json``: the settings, every run so far, and whether all of them ran (atomically replaced)."""
    settings = {k: v for k, v in vars(args).items() if not k.endswith("_list")}
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps({"args": settings, "complete": complete, "runs": runs}, indent=2), encoding="utf-8")
    scratch.replace(path)


def train_all(args: XhHopsArguments, results: Path) -> list[dict[str, Any]]:
    """Every system on every seed, on the same generated questions; the time estimate first, then each run printed
    and written to ``results`` as it ends."""
    train = [to_hotpot_row(r, "generated", r["_id"]) for r in make_bridge_questions(args.train_size, args.data_seed,
                                                                                     args.people, "train")]  # fmt: skip
    dev = [to_hotpot_row(r, "generated", r["_id"]) for r in make_bridge_questions(
        args.eval_size, args.data_seed + 10_000, args.people, "dev")]  # fmt: skip
    texts = [r["question"] for r in train] + [" ".join(s) for r in train for s in r["context"]["sentences"]]
    total = len(args.seed_list) * len(args.system_list)
    print(f"{total} runs of {args.max_steps} steps ({len(args.seed_list)} seeds x {len(args.system_list)} systems)",
          flush=True)  # fmt: skip
    runs: list[dict[str, Any]] = []
    write_results(results, args, runs, complete=False)
    with tempfile.TemporaryDirectory(prefix="gesa-xh-hops-") as scratch:
        workdir = Path(scratch)
        tokenizer = train_sample_tokenizer(texts, vocab_size=800, min_frequency=1)
        if args.probe_steps:
            estimate = estimate_seconds(args, tokenizer, train, dev, workdir)
            print(f"time estimate on this machine ({os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads): "
                  f"about {estimate['total_seconds'] / 60:.0f} min ({total} runs x {estimate['seconds_per_run']:.0f} s; "
                  f"{estimate['seconds_per_step']:.2f} s per training step over {args.probe_steps} probe steps); "
                  f"{results} is rewritten after every run", flush=True)  # fmt: skip
        for seed in args.seed_list:
            luke = build_luke(args, tokenizer, seed, workdir / f"luke-{seed}")
            for system in args.system_list:
                run = run_one(args, luke, tokenizer, system, seed, train, dev, workdir)
                runs.append(run)
                write_results(results, args, runs, complete=len(runs) == total)
                print(f"[seed {seed}] {system}: EM bridge {run['em']['bridge']:.1f}, control {run['em']['control']:.1f}"
                      f"; loss {' '.join(f'{x:.2f}' for x in run['loss'])} ({run['seconds']:.0f} s)", flush=True)  # fmt: skip
    return runs


if __name__ == "__main__":
    main()

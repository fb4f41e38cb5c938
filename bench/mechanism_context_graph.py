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
"""Does the thesis's context graph read what a multi-document question needs? A mechanism check at toy size.

Three tasks, all in WikiHop's format, each written here; ``--task`` picks one.

**order** (the first, the project's): query ``south_of_neighbour <town>``; the answer is the place that the town's
neighbour is north of. Five one-sentence supports in a random order::

    <town> lies next to <hub>.            <town2> lies next to <hub2>.
    <hub> is north of <answer>.           <hub2> is north of <distractor>.
    <other> is north of <hub>.

Candidates: answer, hub, other, distractor (chance 25%). The neighbour is a candidate, so its mentions are nodes of
the thesis's graph (co-mention edges join its three documents, as WikiHop's candidates join theirs). Reading one
document with its word order leaves answer, distractor and hub (right of "is north of"); linking two documents
without word order leaves answer and other (beside the neighbour); reading the town's document alone gives hub. Only
two documents and their word order give the answer (``order_task_solvers`` checks these readings on the generated
data). The **one-document control** (``control=True``) asks for the candidate that shares a document with the town
(``<town> is north of <answer>.``, each other candidate beside another place): a run that does not learn it says
nothing about the two-document task, and its row's answer is "inconclusive", never "no".

Two held-out tasks, written after the order task's figures and never tuned on (other names, other sentences), each
of another reasoning shape; a seed *learns* one when its dev accuracy reaches ``--learned_accuracy`` (70):

**intersection**: query ``travelled_twice_with <person>``; four documents ``A, B, C and D travelled together.``, four
candidates, every candidate in two documents; the person is in two of them and only the answer is in both (each of
two distractors shares one of them, the third none; other names fill every document to four). Each node alone sees
at most "a candidate that travelled with the person once": three candidates, 33.3% without message passing (chance
25); a candidate's node must read both of its documents (``intersection_readings``).

**chain** (a chain through a bridge): query ``last_runner_after <person>``; six documents ``X passed the torch to
Y.``, three relays of two passes, the first started by the person, the others by people who are no candidate; the
six runners are the candidates (chance 16.7), the answer the person's second runner, whose document never names the
person. A node alone sees "a runner not handed the torch by the person": five candidates, 20%; the three relays'
ends: 33.3%; only following the person's relay from its document through the first runner to the second document
gives the answer (``chain_readings``). That path is document -> runner -> document -> runner in the thesis's graph,
three GNN layers, so the chain runs with ``--gnn_layers`` 3 by default (the thesis: 9).

Rows, each trained by ``examples/run_multihop.py`` (the driver users run) from one tiny random LUKE built here:

- ``hde_base``, ``att_base``, ``bert_base``: ``--variant context_graph --graph_preset <row>`` (table 5.1's models)
  with ``--gnn_layers`` GNN layers;
- ``no_gnn``: the same embedder, co-attention and summariser with no GNN layer (``gnn_num_layers=0``, BERT-Base's
  other fields): the graph's contribution is the difference to it;
- ``luke``: ``--variant luke``, LUKE reading the supports as one sequence (WikiHop's ``GesaForEntityMultipleChoice``
  with ``ablation="luke"``);
- ``hde_base_normal_init``: ``hde_base`` with ``graph_init="normal"`` (N(0, initializer_range) graph modules, this
  project's init before; docs/wikihop.md).

Every row trains with the same optimizer (``--optim``, ``--learning_rate``, linear decay: given on the command line,
they replace the thesis's schedule) for ``--epochs`` on ``--train_size`` records and is scored on ``--eval_size``
records of another seed; each of ``--seeds`` draws its own data, model init and order. Order task: accuracy mean ±
spread (sample std) and per seed, on the task and on the control; then, per row, whether it is above chance and
whether each context-graph row beats ``no_gnn`` and ``luke`` (mean - spread above the other's mean + spread).
Held-out tasks: mean ± spread, per seed, the share of seeds learned, and whether each graph row beats ``no_gnn``.

    OMP_NUM_THREADS=1 python bench/mechanism_context_graph.py --output_dir mechanism_out
    OMP_NUM_THREADS=1 python bench/mechanism_context_graph.py --task intersection --output_dir mechanism_intersection
    OMP_NUM_THREADS=1 python bench/mechanism_context_graph.py --task chain --output_dir mechanism_chain

print the number of runs first (results.json is rewritten after every run); ``--from_results DIR/results.json``
prints a table again without training.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import random
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from transformers import HfArgumentParser

from gesa.training.wikihop import build_demo_luke, sample_texts, write_wikihop_file

ROOT = Path(__file__).resolve().parents[1]
ROWS = ("hde_base", "att_base", "bert_base", "no_gnn", "luke", "hde_base_normal_init")
GRAPH_ROWS = ("hde_base", "att_base", "bert_base", "hde_base_normal_init")
TASKS = ("order", "intersection", "chain")
HELD_OUT = ("intersection", "chain")
# per task: the rows, seeds and GNN layers run when --rows / --seeds / --gnn_layers are not given
DEFAULT_ROWS = {"order": ROWS[:5], "intersection": ("hde_base", "no_gnn"), "chain": ("hde_base", "no_gnn")}
DEFAULT_SEEDS = {"order": "0,1,2", "intersection": "0,1,2,3,4", "chain": "0,1,2,3,4"}
DEFAULT_GNN_LAYERS = {"order": 2, "intersection": 2, "chain": 3}
MIN_SEEDS = 3
_SYLLABLES = ["vel", "mor", "kas", "trel", "dun", "abo", "rin", "ost", "lam", "bre", "sar", "tho", "quil", "nad"]
# the held-out tasks' names: no syllable shared with the order task's
_HELD_OUT_SYLLABLES = ["zor", "pim", "gal", "wen", "fu", "tak", "lio", "sem", "bax", "ru", "dov", "kel", "yan", "oph"]


@dataclass
class MechanismArguments:
    output_dir: str = field(
        default="", metadata={"help": "Required: where results.json is written (made if missing)."}
    )
    task: str = field(
        default="order",
        metadata={"help": f"One of {TASKS}: the order task with its control, or a held-out task (module docstring)."},
    )
    rows: str = field(
        default="", metadata={"help": f"Comma-separated rows of {ROWS}; unset: the task's ({DEFAULT_ROWS})."}
    )
    seeds: str = field(
        default="",
        metadata={"help": "Comma-separated seeds (data, init, order); a verdict needs 3. Unset: 0-2 for the order "
                  "task, 0-4 for a held-out one."},
    )  # fmt: skip
    train_size: int = field(default=240, metadata={"help": "Training records per run."})
    eval_size: int = field(default=64, metadata={"help": "Evaluation records per run (another data seed)."})
    epochs: float = field(default=12.0, metadata={"help": "Training epochs per run."})
    batch_size: int = field(default=8)
    optim: str = field(
        default="adamw_torch", metadata={"help": "The optimizer of every row (TrainingArguments.optim)."}
    )
    learning_rate: float = field(default=3e-3, metadata={"help": "Peak learning rate of every row (linear decay)."})
    gnn_layers: int | None = field(
        default=None,
        metadata={"help": f"GNN layers of the context-graph rows (the thesis: 9); unset: {DEFAULT_GNN_LAYERS}."},
    )
    hidden_size: int = field(default=32, metadata={"help": "The tiny LUKE's width (every model's dimension)."})
    num_hidden_layers: int = field(default=2, metadata={"help": "The tiny LUKE's layers."})
    control_accuracy: float = field(
        default=0.0,
        metadata={"help": "Accuracy on the one-document control a run must reach to count as having learned it; "
                  "0: halfway between chance and 100."},
    )  # fmt: skip
    learned_accuracy: float = field(
        default=70.0, metadata={"help": "Held-out tasks: dev accuracy at which a seed counts as having learned it."}
    )
    from_results: str = field(default="", metadata={"help": "A results.json written before: print it, no training."})

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise SystemExit(f"mechanism_context_graph.py: --task {self.task!r} is unknown; choose from {list(TASKS)}")
        self.row_list = [row for row in self.rows.split(",") if row] or list(DEFAULT_ROWS[self.task])
        unknown = sorted(set(self.row_list) - set(ROWS))
        if unknown:
            raise SystemExit(f"mechanism_context_graph.py: --rows: unknown {unknown}; choose from {list(ROWS)}")
        self.seeds = self.seeds or DEFAULT_SEEDS[self.task]
        self.seed_list = [int(seed) for seed in self.seeds.split(",") if seed]
        if self.gnn_layers is None:
            self.gnn_layers = DEFAULT_GNN_LAYERS[self.task]
        if not self.from_results and not self.output_dir:
            raise SystemExit("mechanism_context_graph.py: --output_dir is required (where results.json goes)")
        if min(self.train_size, self.eval_size, self.batch_size) < 1 or self.epochs < 0 or self.gnn_layers < 0:
            raise SystemExit("mechanism_context_graph.py: sizes must be at least 1, --epochs and --gnn_layers >= 0")


# ----------------------------------------------------------------------------------------------- the task


def _place(rng: random.Random, used: set[str], syllables: list[str] = _SYLLABLES) -> str:
    while True:
        name = "".join(rng.choice(syllables) for _ in range(2)).capitalize()
        if name not in used:
            used.add(name)
            return name


def make_order_task(count: int, seed: int, control: bool = False) -> list[dict[str, Any]]:
    """``count`` WikiHop-format records of the two-document, word-order task (module docstring) or of its
    one-document control; ids ``<task>_<seed>_<n>``."""
    rng = random.Random(seed)
    records = []
    for index in range(count):
        used: set[str] = set()
        town, hub, town2, hub2 = (_place(rng, used) for _ in range(4))
        answer, other, distractor = (_place(rng, used) for _ in range(3))
        if control:
            supports = [f"{town} is north of {answer}.", f"{hub} is north of {other}.",
                        f"{town2} is north of {distractor}.", f"{hub2} is north of {hub}."]  # fmt: skip
        else:
            supports = [f"{town} lies next to {hub}.", f"{hub} is north of {answer}.", f"{other} is north of {hub}.",
                        f"{town2} lies next to {hub2}.", f"{hub2} is north of {distractor}."]  # fmt: skip
        rng.shuffle(supports)
        candidates = sorted(name.lower() for name in (answer, hub, other, distractor))
        records.append({"id": f"{'control' if control else 'order'}_{seed}_{index}",
                        "query": f"south_of_neighbour {town.lower()}", "supports": supports,
                        "candidates": candidates, "answer": answer.lower()})  # fmt: skip
    return records


def _sentences(record: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each support as (left place, relation, right place), lower case."""
    out = []
    for text in record["supports"]:
        words = text.rstrip(".").lower().split()
        out.append((words[0], " ".join(words[1:-1]), words[-1]))
    return out


def order_task_solvers(record: dict[str, Any]) -> dict[str, set[str]]:
    """The candidates each reading of a main-task record leaves: ``both`` (two documents and word order),
    ``one_document`` (word order within one document: a candidate right of "is north of"), ``no_order`` (two
    documents, order ignored: a candidate in a document with the town's neighbour), ``town_document`` (a candidate in
    the town's own document)."""
    town = record["query"].split()[1]
    facts = _sentences(record)
    candidates = set(record["candidates"])
    neighbours = {b if a == town else a for a, relation, b in facts if relation == "lies next to" and town in (a, b)}
    return {
        "both": {b for a, relation, b in facts if relation == "is north of" and a in neighbours} & candidates,
        "one_document": {b for a, relation, b in facts if relation == "is north of"} & candidates,
        "no_order": {
            x for a, relation, b in facts if relation == "is north of" and neighbours & {a, b} for x in (a, b)
        }
        & candidates - neighbours,  # fmt: skip
        "town_document": {x for a, _, b in facts if town in (a, b) for x in (a, b)} & candidates,
    }


# the held-out tasks (module docstring)


def make_intersection_task(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` WikiHop-format records of the intersection task: four documents of four travellers, four candidates
    each in two documents, the answer the only one in both of the query person's; ids ``intersection_<seed>_<n>``."""
    rng = random.Random(seed)
    records = []
    for index in range(count):
        used: set[str] = set()
        person, answer, first, second, third = (_place(rng, used, _HELD_OUT_SYLLABLES) for _ in range(5))
        documents = [[person, answer], [person, answer], [third], [third]]
        documents[rng.randrange(2)].append(first)  # each of two distractors shares one of the person's documents
        documents[2].append(first)
        documents[rng.randrange(2)].append(second)
        documents[3].append(second)
        for document in documents:
            while len(document) < 4:  # names that are no candidate fill every document to four
                document.append(_place(rng, used, _HELD_OUT_SYLLABLES))
            rng.shuffle(document)
        rng.shuffle(documents)
        candidates = sorted(name.lower() for name in (answer, first, second, third))
        records.append({"id": f"intersection_{seed}_{index}", "query": f"travelled_twice_with {person.lower()}",
                        "supports": [f"{a}, {b}, {c} and {d} travelled together." for a, b, c, d in documents],
                        "candidates": candidates, "answer": answer.lower()})  # fmt: skip
    return records


def intersection_readings(record: dict[str, Any]) -> dict[str, set[str]]:
    """The candidates each reading of an intersection record leaves: ``both`` (in every document of the query's
    person), ``one_document`` (in some document of the person: what a node sees alone)."""
    person = record["query"].split()[1]
    documents = [{name.lower() for name in re.findall(r"[A-Z][a-z]+", text)} for text in record["supports"]]
    with_person = [document for document in documents if person in document]
    candidates = set(record["candidates"])
    return {"both": set.intersection(*with_person) & candidates, "one_document": set.union(*with_person) & candidates}


def make_chain_task(count: int, seed: int, runners: int = 2, relays: int = 3) -> list[dict[str, Any]]:
    """``count`` WikiHop-format records of the chain task: ``relays`` torch relays of ``runners`` each, one document
    per pass, the first started by the query person, the others by people who are no candidate; the runners are the
    candidates, the answer the person's last runner; ids ``chain_<seed>_<n>``."""
    rng = random.Random(seed)
    records = []
    for index in range(count):
        used: set[str] = set()
        starters = [_place(rng, used, _HELD_OUT_SYLLABLES) for _ in range(relays)]
        teams = [[_place(rng, used, _HELD_OUT_SYLLABLES) for _ in range(runners)] for _ in range(relays)]
        supports = []
        for start, team in zip(starters, teams, strict=True):
            supports += [f"{giver} passed the torch to {taker}." for giver, taker in zip([start, *team], team,
                                                                                          strict=False)]  # fmt: skip
        rng.shuffle(supports)
        candidates = sorted(name.lower() for team in teams for name in team)
        records.append({"id": f"chain_{seed}_{index}", "query": f"last_runner_after {starters[0].lower()}",
                        "supports": supports, "candidates": candidates, "answer": teams[0][-1].lower()})  # fmt: skip
    return records


def chain_readings(record: dict[str, Any]) -> dict[str, set[str]]:
    """The candidates each reading of a chain record leaves: ``relay`` (the end of the query person's relay, followed
    pass by pass), ``chain_ends`` (a runner who passes to no one), ``one_document`` (a runner handed the torch by
    someone other than the person: what a node sees alone)."""
    person = record["query"].split()[1]
    passes = [tuple(name.lower() for name in re.findall(r"[A-Z][a-z]+", text)) for text in record["supports"]]
    following = dict(passes)
    runner = person
    while runner in following:
        runner = following[runner]
    candidates = set(record["candidates"])
    return {"relay": {runner} & candidates, "chain_ends": ({b for _, b in passes} - set(following)) & candidates,
            "one_document": {b for a, b in passes if a != person} & candidates}  # fmt: skip


GENERATORS = {"intersection": make_intersection_task, "chain": make_chain_task}


def task_records(task: str, count: int, seed: int, control: bool = False) -> list[dict[str, Any]]:
    """``count`` records of ``task`` (the order task's control with ``control``)."""
    if task == "order":
        return make_order_task(count, seed, control)
    return GENERATORS[task](count, seed)


# ----------------------------------------------------------------------------------------------- the runs


def load_script() -> Any:
    """``examples/run_multihop.py`` as a module (the path users run)."""
    spec = importlib.util.spec_from_file_location("run_multihop_mechanism", ROOT / "examples" / "run_multihop.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def row_flags(row: str, gnn_layers: int) -> list[str]:
    if row == "luke":
        return ["--variant", "luke"]
    if row == "no_gnn":
        return ["--variant", "context_graph", "--graph_preset", "bert_base", "--graph_config",
                json.dumps({"gnn_num_layers": 0})]  # fmt: skip
    if row == "hde_base_normal_init":
        return ["--variant", "context_graph", "--graph_preset", "hde_base", "--graph_config",
                json.dumps({"gnn_num_layers": gnn_layers, "graph_init": "normal"})]  # fmt: skip
    return ["--variant", "context_graph", "--graph_preset", row, "--graph_config",
            json.dumps({"gnn_num_layers": gnn_layers})]  # fmt: skip


def run_one(script: Any, luke: Path, files: dict[str, Path], row: str, seed: int, args: MechanismArguments,
            output_dir: Path) -> float:  # fmt: skip
    """Train and evaluate one row on one task's files: its dev accuracy (percent)."""
    argv = ["--model_name_or_path", str(luke), "--train_file", str(files["train"]), "--validation_file",
            str(files["dev"]), "--do_train", "--do_eval", "--output_dir", str(output_dir), "--overwrite_output_dir",
            "true", "--num_train_epochs", str(args.epochs), "--per_device_train_batch_size", str(args.batch_size),
            "--optim", args.optim, "--learning_rate", str(args.learning_rate), "--lr_scheduler_type", "linear",
            "--seed", str(seed), "--save_strategy", "no", "--report_to", "none", "--disable_tqdm", "true",
            "--logging_strategy", "no", "--log_level", "error", "--max_seq_length", "256", "--attention_window",
            "64", *row_flags(row, args.gnn_layers)]  # fmt: skip
    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held), contextlib.redirect_stderr(held):
            results = script.main(argv)
    except BaseException:
        print(held.getvalue()[-3000:], file=sys.stderr)  # what the run said before it stopped
        raise
    return float(results["eval_accuracy"])


def run_all(args: MechanismArguments) -> dict[str, Any]:
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    script = load_script()
    parts = ("task", "control") if args.task == "order" else ("task",)
    count = len(args.row_list) * len(args.seed_list) * len(parts)
    print(f"{count} runs ({len(args.row_list)} rows x {len(args.seed_list)} seeds"
          f"{' x task and control' if args.task == 'order' else ''}; task {args.task})", flush=True)  # fmt: skip
    results: dict[str, Any] = {"arguments": asdict(args), "rows": {}}
    with tempfile.TemporaryDirectory(prefix="gesa-mechanism-") as scratch:
        scratch = Path(scratch)
        data: dict[tuple[str, int], dict[str, Path]] = {}
        texts = []
        for part in parts:
            for seed in args.seed_list:
                train = task_records(args.task, args.train_size, 1000 + seed, control=part == "control")
                dev = task_records(args.task, args.eval_size, 2000 + seed, control=part == "control")
                texts += sample_texts(train + dev)
                data[part, seed] = {"train": write_wikihop_file(scratch / f"{part}-{seed}-train.json", train),
                                    "dev": write_wikihop_file(scratch / f"{part}-{seed}-dev.json", dev)}  # fmt: skip
        luke = build_demo_luke(scratch / "tiny-luke", texts, hidden_size=args.hidden_size,
                               num_hidden_layers=args.num_hidden_layers)  # fmt: skip
        for row in args.row_list:
            entry: dict[str, Any] = {"seeds": [], **{part: [] for part in parts}, "seconds": 0.0}
            results["rows"][row] = entry
            for seed in args.seed_list:
                for part in parts:
                    start = time.perf_counter()
                    accuracy = run_one(script, luke, data[part, seed], row, seed, args, scratch / "run")
                    entry["seconds"] += time.perf_counter() - start
                    entry[part].append(accuracy)
                    print(f"{row} seed {seed} {part}: accuracy {accuracy:.1f}", flush=True)
                entry["seeds"].append(seed)
                # after every seed: a stopped run keeps what it measured
                (output / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return results


# ----------------------------------------------------------------------------------------------- the table


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def spread(values: list[float]) -> float:
    """Sample standard deviation over seeds (0 for one seed)."""
    if len(values) < 2:
        return 0.0
    center = mean(values)
    return math.sqrt(sum((value - center) ** 2 for value in values) / (len(values) - 1))


CHANCE = 25.0  # four candidates


def control_threshold(args: dict[str, Any]) -> float:
    return args.get("control_accuracy") or (CHANCE + 100.0) / 2


def unlearned(name: str, entry: dict[str, Any], threshold: float) -> list[str]:
    """The runs (``row s<seed>``) of a row whose control accuracy is below ``threshold``."""
    seeds = entry.get("seeds") or range(len(entry["control"]))
    return [f"{name} s{seed}" for seed, accuracy in zip(seeds, entry["control"], strict=True) if accuracy < threshold]


def compare(name: str, other: str, rows: dict[str, Any], threshold: float) -> str:
    """Does row ``name`` answer the two-document task better than ``other``? "yes", "no" or "inconclusive (why)".

    A run of ``name`` that has not learned the one-document control makes the answer "inconclusive"; so does one of
    ``other``, except for ``no_gnn``, which cannot learn the control (its nodes never see each other: its control is
    part of the finding, not a check that its training worked)."""
    if other not in rows:
        return f"inconclusive (no {other} row)"
    for group in (name, other):
        if len(rows[group]["task"]) < MIN_SEEDS:
            return f"inconclusive ({group}: {len(rows[group]['task'])} seed(s), a verdict needs {MIN_SEEDS})"
    missed = unlearned(name, rows[name], threshold)
    if other != "no_gnn":
        missed += unlearned(other, rows[other], threshold)
    if missed:
        return f"inconclusive (one-document control below {threshold:g}: {', '.join(missed)})"
    mine, theirs = rows[name]["task"], rows[other]["task"]
    return "yes" if mean(mine) - spread(mine) > mean(theirs) + spread(theirs) else "no"


def above_chance(name: str, rows: dict[str, Any], threshold: float) -> str:
    """Is the row's two-document accuracy above chance (mean - spread)? A "no" needs its control learned."""
    entry = rows[name]
    if len(entry["task"]) < MIN_SEEDS:
        return f"inconclusive ({len(entry['task'])} seed(s))"
    if mean(entry["task"]) - spread(entry["task"]) > CHANCE:
        return "yes"
    missed = unlearned(name, entry, threshold)
    return f"inconclusive (control not learned: {', '.join(missed)})" if missed else "no"


def table(results: dict[str, Any]) -> list[str]:
    """The markdown table and the verdict lines of ``results`` (``run_all``'s)."""
    rows, args = results["rows"], results["arguments"]
    threshold = control_threshold(args)
    lines = [
        f"accuracy (%) on {args['eval_size']} dev records after {args['epochs']:g} epochs on {args['train_size']}; mean "
        f"± spread (sample std) over seeds {args['seeds']}; chance {CHANCE:g}; control learned: every seed >= "
        f"{threshold:g}",
        "",
        "| row | two documents + word order | per seed | one-document control | per seed | control learned |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in rows.items():
        task, control = entry["task"], entry["control"]
        lines.append(
            f"| {name} | {mean(task):.1f} ± {spread(task):.1f} | {', '.join(f'{a:.1f}' for a in task)} | "
            f"{mean(control):.1f} ± {spread(control):.1f} | {', '.join(f'{a:.1f}' for a in control)} | "
            f"{'no' if unlearned(name, entry, threshold) else 'yes'} |"
        )
    lines.append("")
    for name in rows:
        answers = [f"above chance: {above_chance(name, rows, threshold)}"]
        if name in GRAPH_ROWS:
            answers += [f"beats {other}: {compare(name, other, rows, threshold)}" for other in ("no_gnn", "luke")]
        lines.append(f"{name}: {'; '.join(answers)}")
    graph = [name for name in rows if name in GRAPH_ROWS]
    versus = [compare(name, "no_gnn", rows, threshold) for name in graph]
    if not graph or "no_gnn" not in rows:
        verdict = "inconclusive (it needs a context-graph row and the no_gnn row)"
    elif any(answer == "yes" for answer in versus):
        verdict = "yes: " + ", ".join(name for name, answer in zip(graph, versus, strict=True) if answer == "yes")
        verdict += " read(s) the two documents and their word order better than the same model without GNN"
    elif all(answer == "no" for answer in versus):
        verdict = "no: no context-graph row beats the same model without GNN (each learned the control)"
    else:
        verdict = "inconclusive: " + "; ".join(f"{name}: {answer}" for name, answer in zip(graph, versus, strict=True)
                                               if answer != "no")  # fmt: skip
    lines.append(f"verdict (does the GNN add what the question needs?): {verdict}")
    return lines


# held-out tasks: chance, and the best a node can do alone (no message passing): one in three intersection
# candidates travelled with the person once; five of the six runners were handed the torch by someone else
HELD_OUT_LEVELS = {"intersection": (100.0 / 4, 100.0 / 3), "chain": (100.0 / 6, 100.0 / 5)}


def learned_seeds(entry: dict[str, Any], threshold: float) -> tuple[int, list[int]]:
    """How many seeds of a row reach ``threshold``, and the seeds that do not."""
    missed = [seed for seed, accuracy in zip(entry["seeds"], entry["task"], strict=True) if accuracy < threshold]
    return len(entry["seeds"]) - len(missed), missed


def held_out_compare(name: str, other: str, rows: dict[str, Any]) -> str:
    """Does ``name`` answer the held-out task better than ``other`` (mean - spread above mean + spread)?"""
    if other not in rows:
        return f"inconclusive (no {other} row)"
    for group in (name, other):
        if len(rows[group]["task"]) < MIN_SEEDS:
            return f"inconclusive ({group}: {len(rows[group]['task'])} seed(s), a verdict needs {MIN_SEEDS})"
    mine, theirs = rows[name]["task"], rows[other]["task"]
    return "yes" if mean(mine) - spread(mine) > mean(theirs) + spread(theirs) else "no"


def held_out_table(results: dict[str, Any]) -> list[str]:
    """A held-out task's table: accuracy per row and seed, the share of seeds learned, and the verdict lines."""
    rows, args = results["rows"], results["arguments"]
    chance, alone = HELD_OUT_LEVELS[args["task"]]
    threshold = args["learned_accuracy"]
    lines = [
        f"task {args['task']}: accuracy (%) on {args['eval_size']} dev records after {args['epochs']:g} epochs on "
        f"{args['train_size']}; {args['gnn_layers']} GNN layers; mean ± spread (sample std) over seeds "
        f"{args['seeds']}; chance {chance:.1f}; a node alone (no message passing) reaches at most {alone:.1f}; "
        f"learned: dev accuracy >= {threshold:g}",
        "",
        "| row | accuracy | per seed | seeds learned |",
        "|---|---|---|---|",
    ]
    for name, entry in rows.items():
        task = entry["task"]
        count, missed = learned_seeds(entry, threshold)
        share = f"{count}/{len(task)}" + (f" (not s{', s'.join(map(str, missed))})" if missed and count else "")
        lines.append(f"| {name} | {mean(task):.1f} ± {spread(task):.1f} | {', '.join(f'{a:.1f}' for a in task)} | "
                     f"{share} |")  # fmt: skip
    lines.append("")
    graph = [name for name in rows if name in GRAPH_ROWS]
    for name in graph:
        count, _ = learned_seeds(rows[name], threshold)
        lines.append(f"{name}: learned on {count} of {len(rows[name]['task'])} seeds; beats no_gnn: "
                     f"{held_out_compare(name, 'no_gnn', rows)}")  # fmt: skip
    if "no_gnn" in rows and rows["no_gnn"]["task"]:
        best = max(rows["no_gnn"]["task"])
        lines.append(f"no_gnn: at most {best:.1f} on any seed (a node alone: {alone:.1f}, chance {chance:.1f})")
    versus = [held_out_compare(name, "no_gnn", rows) for name in graph]
    if not graph or "no_gnn" not in rows:
        verdict = "inconclusive (it needs a context-graph row and the no_gnn row)"
    elif any(answer == "yes" for answer in versus):
        verdict = "yes: " + ", ".join(name for name, answer in zip(graph, versus, strict=True) if answer == "yes")
        verdict += " answer(s) better than the same model without GNN"
    elif all(answer == "no" for answer in versus):
        verdict = "no: no context-graph row beats the same model without GNN"
    else:
        verdict = "inconclusive: " + "; ".join(f"{name}: {answer}" for name, answer in zip(graph, versus, strict=True)
                                               if answer != "no")  # fmt: skip
    lines.append(f"verdict (does the GNN read what a node alone cannot?): {verdict}")
    return lines


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = HfArgumentParser(MechanismArguments, description=__doc__.split("\n\n")[0])
    (args,) = parser.parse_args_into_dataclasses(args=argv, look_for_args_file=False)
    if args.from_results:
        results = json.loads(Path(args.from_results).read_text(encoding="utf-8"))
    else:
        results = run_all(args)
    held_out = results["arguments"].get("task", "order") in HELD_OUT
    print("\n".join(held_out_table(results) if held_out else table(results)))
    return results


if __name__ == "__main__":
    main()

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
"""Does GESA's context graph help a WikiHop question whose answer needs two documents? A mechanism check at toy size.

The task (written here, WikiHop's format; names invented per record): ``--chains`` chains of two one-sentence
supports, shuffled::

    <town_i> lies in <region_i>.          <region_i> is a region of <country_i>.

Candidates: every region and every country (six with three chains: chance 1/6). Two queries on the same records:

- ``country <town_0>`` (**the two-document task**): the answer ``country_0`` shares no document with the town; the
  town's document names ``region_0``, whose other document names the answer. Every region is in two documents and
  every country in one, so nothing but the chain from the query's town singles the answer out: a model that knows
  the answer is a country and no more scores 1/3 (the *type level*), the town's document alone gives a region.
- ``located_in_the_administrative_territorial_entity <town_0>`` (**the one-document control**, WikiHop's own relation
  name): ``region_0``, the candidate sharing a document with the town. A run that does not learn it says nothing
  about the two-document task: its row's answer is "inconclusive", never "no".

Each run trains on both queries, mixed (``--train_size`` records, half of each), and is scored on ``--eval_size``
records of another data seed, per query. ``bridge_task_solvers`` reads the generated text plainly and checks these
claims (tests/test_mechanism_gesa_wikihop.py).

Rows, each trained by ``examples/run_multihop.py`` (the driver users run) from the tiny random LUKE of its seed
(built here with a byte-level BPE trained on that seed's data; 64 wide, 4 layers, drawn at ``1/sqrt(width)``):

- ``gesa``: ``--variant gesa``, GESA on the thesis's context graph (every edge kind its own e2e label; WikiHop's
  default);
- ``gesa_e2e_local``: GESA without the context graph: ``--ablation e2e_local``, the paper's "local attention pattern
  in e2e (w/o graph attention)" (Table 3): entity pairs get entity-index distance labels instead of the graph's
  edges; every other label kept;
- ``luke``: ``--variant luke``, LUKE reading the supports as one sequence (same head);
- optional: ``gesa_merged`` (``--ablation merged_graph``: the three ReCoRD labels), ``luke_graph``
  (``--variant luke_graph``), and any row ``--extra_rows '{"name": ["--flag", "value", ...]}'`` adds.

Every row trains with the same optimizer, schedule and steps. ``results.json`` in ``--output_dir`` is rewritten after
every run (a stopped run keeps what it measured; run the same command again and the runs already there are kept, not
re-trained); ``--from_results DIR/results.json`` prints the table without training.

    OMP_NUM_THREADS=1 python bench/mechanism_gesa_wikihop.py --output_dir mechanism_gesa_out
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from transformers import HfArgumentParser

from gesa.training.wikihop import build_demo_luke, sample_texts, write_wikihop_file

ROOT = Path(__file__).resolve().parents[1]
ROW_FLAGS: dict[str, list[str]] = {
    "gesa": ["--variant", "gesa"],
    "gesa_e2e_local": ["--variant", "gesa", "--ablation", "e2e_local"],
    "luke": ["--variant", "luke"],
    "gesa_merged": ["--variant", "gesa", "--ablation", "merged_graph"],
    "luke_graph": ["--variant", "luke_graph"],
}
DEFAULT_ROWS = ("gesa", "gesa_e2e_local", "luke")
TASK, CONTROL = "country", "located_in_the_administrative_territorial_entity"
QUERIES = {"task": TASK, "control": CONTROL}
MIN_SEEDS = 3
# the arguments every run of one table shares (rows, seeds and where results go may differ)
SETTINGS = ("chains", "train_size", "eval_size", "epochs", "batch_size", "learning_rate", "hidden_size",
            "num_hidden_layers", "initializer_range", "control_accuracy")  # fmt: skip
_SYLLABLES = ["vel", "mor", "kas", "trel", "dun", "abo", "rin", "ost", "lam", "bre", "sar", "tho", "quil", "nad",
              "pel", "gor", "wen", "fai"]  # fmt: skip


@dataclass
class MechanismArguments:
    output_dir: str = field(
        default="", metadata={"help": "Required: where results.json is written (made if missing)."}
    )
    rows: str = field(default=",".join(DEFAULT_ROWS), metadata={"help": f"Comma-separated rows of {list(ROW_FLAGS)}"
                                                                         " and of --extra_rows."})  # fmt: skip
    extra_rows: str = field(
        default="", metadata={"help": 'JSON {"row name": ["--flag", "value", ...]}: rows of run_multihop.py flags.'}
    )
    seeds: str = field(
        default="0,1,2", metadata={"help": "Comma-separated seeds (data, init, order); a verdict needs 3."}
    )
    chains: int = field(default=3, metadata={"help": "Chains (town -> region -> country) per record: 2 x chains "
                                                     "candidates."})  # fmt: skip
    train_size: int = field(default=800, metadata={"help": "Training records per run (half of each query)."})
    eval_size: int = field(default=128, metadata={"help": "Evaluation records per run (half of each query)."})
    epochs: float = field(default=12.0, metadata={"help": "Training epochs per run (600 steps at the defaults)."})
    batch_size: int = field(default=16)
    learning_rate: float = field(default=1e-3, metadata={"help": "Peak learning rate of every row (linear decay)."})
    hidden_size: int = field(default=64, metadata={"help": "The tiny LUKE's width (every row's)."})
    num_hidden_layers: int = field(default=4, metadata={"help": "The tiny LUKE's layers."})
    initializer_range: float = field(
        default=0.0,
        metadata={"help": "The tiny LUKE's weight std; 0: 1/sqrt(hidden_size), as bench/diagnose_graph.py."},
    )
    control_accuracy: float = field(
        default=0.0, metadata={"help": "Accuracy a run must reach to count as having learned a query; 0: halfway "
                                       "between chance and 100."},
    )  # fmt: skip
    from_results: str = field(
        default="",
        metadata={"help": "results.json files written before, comma-separated (runs of the same settings, e.g. rows "
                  "run in parallel into two folders): print their runs as one table, no training."},
    )  # fmt: skip

    def __post_init__(self) -> None:
        self.row_flags = dict(ROW_FLAGS)
        if self.extra_rows:
            try:
                extra = json.loads(self.extra_rows)
            except ValueError as error:
                raise SystemExit(f"mechanism_gesa_wikihop.py: --extra_rows is not JSON ({error})") from None
            if not isinstance(extra, dict) or not all(
                isinstance(flags, list) and all(isinstance(flag, str) for flag in flags) for flags in extra.values()
            ):
                raise SystemExit('mechanism_gesa_wikihop.py: --extra_rows: a JSON object {"name": ["--flag", ...]}')
            self.row_flags.update(extra)
        self.row_list = [row for row in self.rows.split(",") if row]
        unknown = sorted(set(self.row_list) - set(self.row_flags))
        if unknown:
            raise SystemExit(f"mechanism_gesa_wikihop.py: --rows: unknown {unknown}; choose from {list(self.row_flags)}"
                             " or add them with --extra_rows")  # fmt: skip
        try:
            self.seed_list = [int(seed) for seed in self.seeds.split(",") if seed]
        except ValueError:
            raise SystemExit(
                f"mechanism_gesa_wikihop.py: --seeds: comma-separated integers, got {self.seeds!r}"
            ) from None
        if not self.from_results and not self.output_dir:
            raise SystemExit("mechanism_gesa_wikihop.py: --output_dir is required (where results.json goes)")
        if min(self.train_size, self.eval_size, self.batch_size, self.hidden_size, self.num_hidden_layers) < 1:
            raise SystemExit("mechanism_gesa_wikihop.py: sizes must be at least 1")
        if self.chains < 2 or self.epochs <= 0 or self.learning_rate <= 0 or self.initializer_range < 0:
            raise SystemExit("mechanism_gesa_wikihop.py: --chains >= 2, --epochs and --learning_rate > 0, "
                             "--initializer_range >= 0")  # fmt: skip


# ----------------------------------------------------------------------------------------------- the task


def _name(rng: random.Random, used: set[str], parts: int) -> str:
    while True:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()
        if name not in used and not any(name.lower() in other.lower() or other.lower() in name.lower()
                                        for other in used):  # fmt: skip
            used.add(name)
            return name


def make_bridge_task(count: int, seed: int, chains: int = 3, query: str = "both") -> list[dict[str, Any]]:
    """``count`` WikiHop-format records (module docstring); ``query``: ``"task"`` (``country``), ``"control"``
    (the region) or ``"both"`` (alternating). Ids ``<task|control>_<seed>_<n>``."""
    rng = random.Random(seed)
    records = []
    for index in range(count):
        kind = query if query != "both" else ("task", "control")[index % 2]
        used: set[str] = set()
        towns = [_name(rng, used, 3) for _ in range(chains)]
        regions = [_name(rng, used, 2) for _ in range(chains)]
        countries = [_name(rng, used, 2) + "ia" for _ in range(chains)]
        supports = [f"{town} lies in {region}." for town, region in zip(towns, regions, strict=True)]
        supports += [f"{region} is a region of {country}." for region, country in zip(regions, countries, strict=True)]
        rng.shuffle(supports)
        answer = (countries if kind == "task" else regions)[0].lower()
        records.append({"id": f"{kind}_{seed}_{index}", "query": f"{QUERIES[kind]} {towns[0].lower()}",
                        "supports": supports, "candidates": sorted(name.lower() for name in regions + countries),
                        "answer": answer})  # fmt: skip
    return records


def bridge_task_solvers(record: dict[str, Any]) -> dict[str, set[str]]:
    """The candidates each reading of a record leaves (plain string reading of the supports): ``town_document``
    (candidates sharing a document with the query's town), ``two_documents`` (candidates in a document with a
    candidate of the town's document, that document excluded), ``countries`` (right of "is a region of": the type)."""
    town = record["query"].split()[-1]
    candidates = set(record["candidates"])
    documents = [{word.strip(".") for word in text.lower().split()} for text in record["supports"]]
    town_documents = [words for words in documents if town in words]
    near = set().union(*town_documents) & candidates
    second = set().union(*(words for words in documents if words & near and town not in words)) & candidates
    countries = {text.lower().rstrip(".").split()[-1] for text in record["supports"] if "is a region of" in text}
    return {"town_document": near, "two_documents": second - near, "countries": countries & candidates}


# ----------------------------------------------------------------------------------------------- the runs


def load_script() -> Any:
    """``examples/run_multihop.py`` as a module (the path users run)."""
    spec = importlib.util.spec_from_file_location("run_multihop_mechanism_gesa", ROOT / "examples" / "run_multihop.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def per_query_accuracy(predictions: dict[str, str], records: list[dict[str, Any]]) -> dict[str, float]:
    """Accuracy (percent) of ``eval_predictions.json``'s ``{id: candidate}`` per query kind (task, control)."""
    out = {}
    for kind in QUERIES:
        mine = [record for record in records if record["id"].startswith(f"{kind}_")]
        if mine:
            out[kind] = 100.0 * sum(predictions.get(record["id"]) == record["answer"] for record in mine) / len(mine)
    return out


def run_one(script: Any, luke: Path, files: dict[str, Path], dev: list[dict[str, Any]], row_flags: list[str],
            seed: int, args: MechanismArguments, output_dir: Path) -> dict[str, float]:  # fmt: skip
    """Train and evaluate one row on one seed's files: its dev accuracy (percent) per query."""
    argv = ["--task", "wikihop", "--model_name_or_path", str(luke), "--train_file", str(files["train"]),
            "--validation_file", str(files["dev"]), "--do_train", "--do_eval", "--output_dir", str(output_dir),
            "--overwrite_output_dir", "true", "--num_train_epochs", str(args.epochs), "--per_device_train_batch_size",
            str(args.batch_size), "--learning_rate", str(args.learning_rate), "--lr_scheduler_type", "linear",
            "--seed", str(seed), "--save_strategy", "no", "--report_to", "none", "--disable_tqdm", "true",
            "--logging_strategy", "no", "--log_level", "error", "--max_seq_length", "256", *row_flags]  # fmt: skip
    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held), contextlib.redirect_stderr(held):
            script.main(argv)
    except BaseException:
        print(held.getvalue()[-3000:], file=sys.stderr)  # what the run said before it stopped
        raise
    predictions = json.loads((output_dir / "eval_predictions.json").read_text(encoding="utf-8"))
    return per_query_accuracy(predictions, dev)


def load_previous(path: Path, args: MechanismArguments) -> dict[str, Any]:
    """The runs of an earlier ``results.json`` made with the same settings (rows and seeds may differ), else none."""
    fresh = {"arguments": asdict(args), "runs": {}}
    if not path.is_file():
        return fresh
    previous = json.loads(path.read_text(encoding="utf-8"))
    settings = {key: value for key, value in asdict(args).items() if key in SETTINGS}
    if any(previous.get("arguments", {}).get(key) != value for key, value in settings.items()):
        print(f"{path} holds runs of other settings: starting afresh (it is rewritten)", flush=True)
        return fresh
    return {"arguments": {**previous["arguments"], "rows": args.rows, "seeds": args.seeds}, "runs": previous["runs"]}


def run_all(args: MechanismArguments) -> dict[str, Any]:
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    path = output / "results.json"
    results = load_previous(path, args)
    todo = [(row, seed) for row in args.row_list for seed in args.seed_list if f"{row} s{seed}" not in results["runs"]]
    done = len(args.row_list) * len(args.seed_list) - len(todo)
    print(f"{len(todo)} runs to train ({len(args.row_list)} rows x {len(args.seed_list)} seeds"
          f"{f', {done} already in {path}' if done else ''}); each trains on both queries", flush=True)  # fmt: skip
    if not todo:
        return results
    script = load_script()
    with tempfile.TemporaryDirectory(prefix="gesa-mechanism-") as scratch:
        scratch = Path(scratch)
        data: dict[int, dict[str, Any]] = {}
        width = args.hidden_size
        for seed in sorted({seed for _, seed in todo}):
            train = make_bridge_task(args.train_size, 1000 + seed, args.chains)
            dev = make_bridge_task(args.eval_size, 2000 + seed, args.chains)
            # each seed its own tokenizer and tiny LUKE, from its own data: a run does not depend on the other seeds
            luke = build_demo_luke(
                scratch / f"tiny-luke-{seed}",
                sample_texts(train + dev),
                hidden_size=width,
                num_hidden_layers=args.num_hidden_layers,
                num_attention_heads=4,
                intermediate_size=2 * width,
                initializer_range=args.initializer_range or width**-0.5,
            )
            data[seed] = {"train": write_wikihop_file(scratch / f"{seed}-train.json", train),
                          "dev": write_wikihop_file(scratch / f"{seed}-dev.json", dev), "records": dev,
                          "luke": luke}  # fmt: skip
        for row, seed in todo:
            start = time.perf_counter()
            accuracy = run_one(script, data[seed]["luke"], data[seed], data[seed]["records"], args.row_flags[row],
                               seed, args, scratch / "run")  # fmt: skip
            seconds = time.perf_counter() - start
            results["runs"][f"{row} s{seed}"] = {"row": row, "seed": seed, **accuracy, "seconds": round(seconds, 1)}
            path.write_text(json.dumps(results, indent=2), encoding="utf-8")  # kept if a later run stops
            print(f"{row} seed {seed}: two documents {accuracy['task']:.1f}, one-document control "
                  f"{accuracy['control']:.1f} ({seconds:.0f} s)", flush=True)  # fmt: skip
    return results


# ----------------------------------------------------------------------------------------------- the table


def chance(chains: int) -> float:
    return 100.0 / (2 * chains)


def threshold(args: dict[str, Any]) -> float:
    return args.get("control_accuracy") or (chance(args["chains"]) + 100.0) / 2


def row_runs(results: dict[str, Any], row: str) -> list[dict[str, Any]]:
    return sorted((run for run in results["runs"].values() if run["row"] == row), key=lambda run: run["seed"])


def mean_spread(values: list[float]) -> str:
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values) if len(values) > 1 else 0.0:.1f}"


def unlearned(runs: list[dict[str, Any]], level: float) -> list[str]:
    """The runs (``row s<seed>``) whose one-document control is below ``level``."""
    return [f"{run['row']} s{run['seed']}" for run in runs if run["control"] < level]


def compare(mine: list[dict[str, Any]], theirs: list[dict[str, Any]], level: float) -> str:
    """Does the first row answer the two-document query better than the second? "yes", "no" or "inconclusive (why)":
    inconclusive with fewer than three seeds on a side or any run of either whose control is not learned; "yes" when
    the first's mean minus its spread lies above the second's mean plus its spread."""
    for runs in (mine, theirs):
        if len(runs) < MIN_SEEDS:
            name = runs[0]["row"] if runs else "a row"
            return f"inconclusive ({name}: {len(runs)} seed(s), a verdict needs {MIN_SEEDS})"
    missed = unlearned(mine, level) + unlearned(theirs, level)
    if missed:
        return f"inconclusive (one-document control below {level:g}: {', '.join(missed)})"
    a, b = [run["task"] for run in mine], [run["task"] for run in theirs]
    return "yes" if statistics.mean(a) - statistics.stdev(a) > statistics.mean(b) + statistics.stdev(b) else "no"


def table(results: dict[str, Any]) -> list[str]:
    """The markdown table and verdict lines of ``results`` (``run_all``'s)."""
    args = results["arguments"]
    level, low = threshold(args), chance(args["chains"])
    rows = list(dict.fromkeys(run["row"] for run in results["runs"].values()))
    lines = [
        f"accuracy (%) on {args['eval_size'] // 2} + {args['eval_size'] // 2} dev records after {args['epochs']:g} "
        f"epochs on {args['train_size']} (both queries mixed); mean ± spread (sample std) over seeds; chance "
        f"{low:.1f}, the type level (the answer is a country) {2 * low:.1f}; learned: >= {level:g}",
        "",
        "| row | seeds | two documents (`country`) | per seed | learned | one-document control | per seed | learned | s/run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        runs = row_runs(results, row)
        task, control = [run["task"] for run in runs], [run["control"] for run in runs]
        lines.append(
            f"| {row} | {','.join(str(run['seed']) for run in runs)} | {mean_spread(task)} | "
            f"{', '.join(f'{a:.1f}' for a in task)} | {sum(a >= level for a in task)}/{len(task)} | "
            f"{mean_spread(control)} | {', '.join(f'{a:.1f}' for a in control)} | "
            f"{sum(a >= level for a in control)}/{len(control)} | "
            f"{statistics.mean(run['seconds'] for run in runs):.0f} |"
        )
    lines.append("")
    if "gesa" in rows:
        for other in rows:
            if other != "gesa":
                verdict = compare(row_runs(results, "gesa"), row_runs(results, other), level)
                lines.append(f"does gesa answer the two-document query better than {other}? {verdict}")
    return lines


def merge_results(paths: list[Path]) -> dict[str, Any]:
    """The runs of several ``results.json`` of the same settings as one (a run in two files: the later file's)."""
    merged: dict[str, Any] = {}
    for path in paths:
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
            arguments, runs = results["arguments"], results["runs"]
        except (OSError, ValueError, KeyError) as error:
            raise SystemExit(f"mechanism_gesa_wikihop.py: --from_results {path}: not a results.json of this script "
                             f"({error})") from None  # fmt: skip
        if merged:
            differ = sorted(key for key in SETTINGS if arguments.get(key) != merged["arguments"].get(key))
            if differ:
                raise SystemExit(f"mechanism_gesa_wikihop.py: --from_results {path}: other settings than "
                                 f"{paths[0]} ({', '.join(differ)}): their runs do not share a table")  # fmt: skip
            merged["runs"].update(runs)
        else:
            merged = {"arguments": arguments, "runs": dict(runs)}
    return merged


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = HfArgumentParser(MechanismArguments, description=__doc__.split("\n\n")[0])
    (args,) = parser.parse_args_into_dataclasses(args=argv, look_for_args_file=False)
    if args.from_results:
        results = merge_results([Path(path) for path in args.from_results.split(",") if path])
    else:
        results = run_all(args)
    print("\n".join(table(results)))
    return results


if __name__ == "__main__":
    main()

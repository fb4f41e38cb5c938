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
"""Does the graph help? Train ablation presets on multi-hop cloze tasks and compare them, seed by seed.

Everything is built here, offline: the tasks (``training.synthetic_cloze``'s generators, or ReCoRD files you give), a
byte-level BPE trained on the training text, a random tiny LUKE (width 64, 4 layers, 4 heads by default) saved like
a Hub checkpoint, and from it one GESA per preset (``from_luke_pretrained``), trained with ``Trainer`` on
``GesaProcessor`` features. Per preset it prints the share of seeds that learned the one-hop control (dev EM at or
above ``--control_em``), the dev EM per hop count (mean, spread and every seed), the step each run left the
*city level* ("never" otherwise) and the constant-score level, a verdict against LUKE per hop count ("inconclusive"
while a run has not learned the control), optionally the leakage checks, and saves the curves as a PNG.

    OMP_NUM_THREADS=1 python bench/diagnose_graph.py --output_dir diagnostic_out/cities

runs `full` on ten seeds (0-9) and `luke` and `no_question_mentions` on three (0, 1, 2), 600 steps each on the
project's generator (one- and two-hop queries mixed; the one-hop control always runs beside more hops), and prints
the number of runs and a time estimate first. ``--generator harbours`` uses the second generator (other names,
places and sentence templates); ``--train_file F --validation_file G`` your own ReCoRD files instead.

Levels (from the training features, printed with the table):
  constant-score level  the loss of a model giving every candidate one score: the binary entropy H(p) of the
                        positive rate p (0.234 for one answer among 16 candidates).
  city level            the loss of a model that knows which candidates can be answers (their string is a gold
                        answer somewhere in the training data: the cities) and is at chance among them in each
                        window; the runs that do not learn the control stay there.
A run *leaves* a level at the first logged training loss below (1 - --leave_margin) x the level.

--leakage_checks runs three checks on every trained model: an unknown query name (each passage string the query
names replaced by one from another record: the one-hop EM should drop to chance), the cities rotated among the
passage's sentences (the predictions should move with the passage) and the answers removed or changed (the model
inputs and the predictions must not change).

--inits: `old` = every label row at initializer_range (the init before the entity rows were scaled); `new` = the
default: the entity-aware queries copied from LUKE's query brought up to unit gain (GesaPreTrainedModel.
entity_query_gain), entity label rows at ENTITY_LABEL_LOGIT_STD for those queries, mention and graph-edge rows turned
towards the [MASK] entity's queries (GesaPreTrainedModel.align_entity_label_rows); `mention` = the same with the
mention rows turned only; `copies` = the same with the queries exact copies (the default before); a number = that
label-logit std, rows turned. `luke` has no label tables: it runs once per seed. The plot needs matplotlib (the `dev`
extra: pip install -e ".[dev]"), or --no_plot.

--model_name_or_path DIR runs the diagnostic on your own LUKE checkpoint (with its tokenizer) instead of drawing a
tiny LUKE per seed: the seeds then vary the new parameters and the data order, and the table reports the share of
seeds that learned the one-hop control on that checkpoint.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import math
import random
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from common import save_random_luke
from datasets import Dataset
from transformers import (
    HfArgumentParser,
    LukeConfig,
    LukeTokenizer,
    PreTrainedTokenizerBase,
    Trainer,
    TrainingArguments,
)
from transformers.trainer_callback import PrinterCallback
from transformers.utils import logging as hf_logging

from gesa.configuration_gesa import ABLATION_PRESETS
from gesa.conversion_gesa import convert_luke_checkpoint
from gesa.extras_gesa import missing, missing_message, require
from gesa.inputs_gesa import InputError
from gesa.loading_gesa import load_tokenizer
from gesa.modeling_gesa import ENTITY_LABEL_LOGIT_STD, GesaForEntitySpanQA, GesaPreTrainedModel
from gesa.processing_gesa import GesaProcessor
from gesa.records_gesa import check_record_file, item_shape, item_to_examples, read_record_file
from gesa.training.machinery import ScriptArgumentError, one_error_line
from gesa.training.models import check_model_source, check_vocab_size
from gesa.training.registry import VARIANTS
from gesa.training.synthetic_cloze import WORLDS, generate_records, hop_count
from gesa.training.tokenizer import shrink_entity_vocab

SCRIPT = "diagnose_graph.py"
ENTITY_VOCAB = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
EVAL_COLUMNS = ("example_id", "candidate_texts", "answers")
# the processor's window settings: every generated passage fits one window
WINDOW = {"max_seq_length": 160, "doc_stride": 64, "max_query_length": 32}


@dataclass
class DiagnosticArguments:
    presets: str = field(
        default="luke,full,no_question_mentions",
        metadata={"help": "Comma-separated ablation presets (gesa.ABLATION_PRESETS), or 'all' (every preset)."},
    )
    inits: str = field(
        default="new",
        metadata={"help": "Entity label row init per GESA run: 'old' (initializer_range), 'new', 'mention' (new, the "
                  "edge rows not turned), 'copies' (new, the entity-aware queries exact copies of LUKE's), or a logit "
                  "std."},
    )  # fmt: skip
    seeds: str = field(
        default="0,1,2",
        metadata={"help": "Seeds of every preset but --headline (tiny LUKE, model init, data order): '0,1,2' or a "
                  "range '0-2'; a verdict needs 3 or more."},
    )  # fmt: skip
    headline: str = field(
        default="full",
        metadata={"help": "The preset that runs on --headline_seeds instead of --seeds ('' for none)."},
    )
    headline_seeds: str = field(
        default="0-9", metadata={"help": "Seeds of the --headline preset, as --seeds ('0-9': ten seeds)."}
    )
    hops: str = field(
        default="1,2",
        metadata={"help": "Hop counts of the tasks (2, 3); the one-hop control (1) always runs beside them."},
    )
    control_em: float = field(
        default=50.0,
        metadata={"help": "Dev EM on the one-hop control at or above which a run counts as having learned it."},
    )
    curriculum_steps: int = field(
        default=0,
        metadata={"help": "Train this many steps on one-hop queries only, then the rest of --max_steps on all hops."},
    )
    generator: str = field(
        default="cities",
        metadata={"help": "The generated tasks (training.synthetic_cloze.WORLDS): 'cities' (the project's) or 'harbours' "
                  "(other names, places and sentence templates). Not used with --train_file.",
                  "choices": sorted(WORLDS)},
    )  # fmt: skip
    train_file: str = field(
        default="",
        metadata={"help": "Your own training data instead of a generator: a ReCoRD .json/.jsonl file of annotated "
                  "records (passage{text, entities} + qas). Needs --validation_file."},
    )  # fmt: skip
    validation_file: str = field(
        default="",
        metadata={"help": "Dev data with --train_file: one file whose queries say their hop count (a 'hops' field in "
                  "the query or its record, or an id ending in -h<N>), or one file per hop count: "
                  "'1:one_hop.jsonl,2:two_hop.jsonl'."},
    )  # fmt: skip
    pairs: int = field(default=4, metadata={"help": "Generator: chains (cities) per passage."})
    distractors: int = field(default=0, metadata={"help": "Generator: 'W visited CITY.' sentences per passage."})
    train_size: int = field(default=2000, metadata={"help": "Generator: training records (hop counts cycle)."})
    eval_size: int = field(default=200, metadata={"help": "Generator: dev records (hop counts cycle)."})
    data_seed: int = field(default=0, metadata={"help": "Generator: seed of the data (the same for every run)."})
    max_steps: int = field(default=600, metadata={"help": "Training steps per run."})
    batch_size: int = field(default=16, metadata={"help": "Training batch size (queries per step)."})
    learning_rate: float = field(default=1e-3, metadata={"help": "Peak learning rate (linear decay to 0)."})
    logging_steps: int = field(default=50, metadata={"help": "Log the training loss every this many steps."})
    leave_margin: float = field(
        default=0.05, metadata={"help": "A run leaves a level when its loss is below (1 - this) x the level."}
    )
    model_name_or_path: str = field(
        default="",
        metadata={"help": "Your own LUKE checkpoint (a folder saved with save_pretrained, with its LukeTokenizer, or a "
                  "Hub id): every run converts it (from_luke_pretrained, as examples/run_record.py does) instead of "
                  "drawing a tiny LUKE per seed, so the seeds vary the new parameters' draw and the data order. "
                  "--hidden_size, --num_hidden_layers, --num_attention_heads and --initializer_range then do not "
                  "apply."},
    )  # fmt: skip
    hidden_size: int = field(default=64, metadata={"help": "Width of the tiny LUKE."})
    num_hidden_layers: int = field(default=4, metadata={"help": "Layers of the tiny LUKE."})
    num_attention_heads: int = field(default=4, metadata={"help": "Attention heads of the tiny LUKE."})
    initializer_range: float = field(
        default=0.0,
        metadata={"help": "Std of the tiny LUKE's random weights; 0 (default): 1/sqrt(--hidden_size), 0.125 at width "
                  "64 (docs/diagnostic.md). 0.02 is LukeConfig's default, made for luke-large's width."},
    )  # fmt: skip
    leakage_checks: bool = field(
        default=False,
        metadata={"help": "After each run: unknown query name, cities rotated, answers removed or changed (above)."},
    )
    no_plot: bool = field(default=False, metadata={"help": "Write no curves.png (no matplotlib needed)."})
    export_run_record: str = field(
        default="",
        metadata={"help": "Train nothing: write into this folder what examples/run_record.py needs to repeat these runs "
                  "(train.jsonl, dev_<N>hop.jsonl, the tiny LUKE of every seed, run_record.sh with one command per "
                  "preset and seed) and print the commands."},
    )  # fmt: skip
    output_dir: str = field(
        default="",
        metadata={"help": "Required: the folder results.json and curves.png are written to (made if missing)."},
    )
    plot_title: str = field(default="", metadata={"help": "Title of curves.png (default: hops and seeds)."})
    from_results: str = field(
        default="",
        metadata={
            "help": "A results.json written before (also by a stopped run): print its table and plot, no training."
        },
    )

    def __post_init__(self) -> None:
        """Every value checked before anything is built (a ``ScriptArgumentError`` naming the flag and the fix)."""
        names = list(ABLATION_PRESETS) if self.presets == "all" else [n.strip() for n in self.presets.split(",")]
        unknown = [name for name in names if name not in ABLATION_PRESETS]
        if unknown or not names:
            raise ScriptArgumentError(
                f"--presets: unknown preset(s) {unknown}; choose from {', '.join(sorted(ABLATION_PRESETS))} "
                "(comma-separated) or 'all'"
            )
        self.preset_list = list(dict.fromkeys(names))
        self.init_list = list(dict.fromkeys(parse_init(value.strip()) for value in self.inits.split(",")))
        self.seed_list = parse_seeds(self.seeds, "--seeds")
        if self.headline and self.headline not in ABLATION_PRESETS:
            raise ScriptArgumentError(
                f"--headline: {self.headline!r} is no preset; give one of --presets (e.g. full) or '' for none"
            )
        self.headline_seed_list = parse_seeds(self.headline_seeds, "--headline_seeds")
        # the control beside every multi-hop task: without it a multi-hop failure cannot be read
        self.hop_list = sorted({1, *parse_ints(self.hops, "--hops", "e.g. --hops 1,2")})
        if not set(self.hop_list) <= {1, 2, 3}:
            raise ScriptArgumentError(f"--hops: {self.hops!r}: the generators write 1, 2 or 3 hops (e.g. --hops 1,2)")
        check_values(self)

    def seeds_of(self, preset: str) -> list[int]:
        """The seeds `preset` runs on: --headline_seeds for the headline preset, else --seeds."""
        return self.headline_seed_list if preset == self.headline else self.seed_list


def check_values(args: DiagnosticArguments) -> None:
    """The numeric flags' ranges, each refused with the flag and a value that works."""
    positive = {
        "train_size": "e.g. --train_size 2000",
        "eval_size": "e.g. --eval_size 200",
        "max_steps": "e.g. --max_steps 600",
        "batch_size": "e.g. --batch_size 16",
        "logging_steps": "e.g. --logging_steps 50",
        "pairs": "e.g. --pairs 4",
        "hidden_size": "e.g. --hidden_size 64",
        "num_hidden_layers": "e.g. --num_hidden_layers 4",
        "num_attention_heads": "e.g. --num_attention_heads 4",
    }
    for name, example in positive.items():
        if getattr(args, name) < 1:
            raise ScriptArgumentError(f"--{name} must be >= 1, got {getattr(args, name)} ({example})")
    if args.distractors < 0 or args.data_seed < 0:
        name = "distractors" if args.distractors < 0 else "data_seed"
        raise ScriptArgumentError(f"--{name} must be >= 0, got {getattr(args, name)}")
    if not (math.isfinite(args.learning_rate) and args.learning_rate > 0):
        raise ScriptArgumentError(f"--learning_rate must be a finite number > 0, got {args.learning_rate} (e.g. 1e-3)")
    if not (math.isfinite(args.leave_margin) and 0 <= args.leave_margin < 1):
        raise ScriptArgumentError(f"--leave_margin must be in [0, 1), got {args.leave_margin} (e.g. 0.05)")
    if not (math.isfinite(args.initializer_range) and args.initializer_range >= 0):
        raise ScriptArgumentError(
            f"--initializer_range must be >= 0 (0: 1/sqrt(--hidden_size)), got {args.initializer_range}"
        )
    if not (math.isfinite(args.control_em) and 0 < args.control_em <= 100):
        raise ScriptArgumentError(f"--control_em must be in (0, 100], got {args.control_em} (e.g. 50)")
    if args.max_steps < args.logging_steps:
        raise ScriptArgumentError(
            f"--max_steps ({args.max_steps}) must be >= --logging_steps ({args.logging_steps}): no loss would be logged"
        )
    if not 0 <= args.curriculum_steps < args.max_steps:
        raise ScriptArgumentError(
            f"--curriculum_steps must be in [0, --max_steps) = [0, {args.max_steps}), got {args.curriculum_steps}"
        )
    if args.hidden_size % args.num_attention_heads:
        raise ScriptArgumentError(
            f"--hidden_size ({args.hidden_size}) must be a multiple of --num_attention_heads "
            f"({args.num_attention_heads}), e.g. --hidden_size 64 --num_attention_heads 4"
        )
    if args.model_name_or_path:
        drawn = {"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "initializer_range": 0.0}
        given = [
            f"--{name} {getattr(args, name):g}" for name, default in drawn.items() if getattr(args, name) != default
        ]
        if given:
            raise ScriptArgumentError(
                f"{', '.join(given)}: these set the tiny LUKE the diagnostic draws; --model_name_or_path "
                f"{args.model_name_or_path} brings its own weights: drop them, or drop --model_name_or_path"
            )
    if args.train_file or args.validation_file:
        if not (args.train_file and args.validation_file):
            missing = "--validation_file" if args.train_file else "--train_file"
            raise ScriptArgumentError(f"{missing} is needed too: give both --train_file and --validation_file")
        return
    world = WORLDS[args.generator]
    if args.pairs > len(world.places):
        raise ScriptArgumentError(
            f"--pairs {args.pairs}: the {args.generator} generator has {len(world.places)} places; give 1-"
            f"{len(world.places)}"
        )
    needed = args.pairs * max(args.hop_list) + args.distractors
    if needed > len(world.people):
        raise ScriptArgumentError(
            f"--pairs {args.pairs}, --hops {max(args.hop_list)} and --distractors {args.distractors} need {needed} "
            f"names a passage; the {args.generator} generator has {len(world.people)}: give fewer"
        )


def parse_ints(value: str, flag: str, example: str) -> list[int]:
    """'0,1,2' or ranges '0-9' (both ends included) -> the integers, in order, each once."""
    numbers: list[int] = []
    for item in value.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", item)
        if match is None or (match.group(2) is not None and int(match.group(2)) < int(match.group(1))):
            raise ScriptArgumentError(
                f"{flag}: {value!r} is not a comma-separated list of non-negative integers or ranges ({example})"
            )
        low = int(match.group(1))
        high = low if match.group(2) is None else int(match.group(2))
        numbers.extend(range(low, high + 1))
    return list(dict.fromkeys(numbers))


def parse_seeds(value: str, flag: str) -> list[int]:
    return parse_ints(value, flag, f"e.g. {flag} 0,1,2 or {flag} 0-9")


def parse_init(value: str) -> tuple[str, float | None]:
    """'old' -> ('old', None); 'new', 'mention' and 'copies' -> (value, ENTITY_LABEL_LOGIT_STD); '0.5' -> ('0.5',
    0.5)."""
    if value == "old":
        return value, None
    if value in ("new", "mention", "copies"):
        return value, ENTITY_LABEL_LOGIT_STD
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise ScriptArgumentError(
            f"--inits: {value!r} is not 'old', 'new', 'mention', 'copies' or a positive number (e.g. --inits new)"
        )
    return value, number


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The docstring's layout kept, every flag's default shown."""


def build_parser() -> HfArgumentParser:
    """The flags, with this file's docstring as the description (its layout kept) and no prefix abbreviations."""
    parser = HfArgumentParser(
        DiagnosticArguments,
        prog=SCRIPT,
        description=__doc__,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
    )

    def refuse(message: str) -> None:  # argparse's own errors (a bad int, an unknown flag): one line, no usage
        raise ScriptArgumentError(f"{message} (see python bench/{SCRIPT} --help)")

    parser.error = refuse
    return parser


def parse_arguments(argv: Sequence[str] | None) -> DiagnosticArguments:
    """The arguments, every value checked (``ScriptArgumentError``: one ``error:`` line from ``main``)."""
    parser = build_parser()
    args, unknown = parser.parse_args_into_dataclasses(args=argv, return_remaining_strings=True)
    if unknown:
        raise ScriptArgumentError(
            f"unknown arguments {' '.join(unknown)} (flags are spelled out in full, never abbreviated: see python "
            f"bench/{SCRIPT} --help)"
        )
    return args


def check_plot_available(args: DiagnosticArguments) -> None:
    """The plot's matplotlib (the `dev` extra, ``extras_gesa.EXTRAS``), checked before any training: one line naming
    the extra, or --no_plot."""
    if args.no_plot or not missing("matplotlib"):
        return
    raise ScriptArgumentError(missing_message("matplotlib", "curves.png", then=", or pass --no_plot"))


# ----------------------------------------------------------------------------------------------- the tasks


@dataclass
class Tasks:
    """The records a diagnostic trains and evaluates on, and the hop count of every dev (and training) query."""

    train: list[dict[str, Any]]
    dev: list[dict[str, Any]]
    dev_hops: dict[str, int]
    train_hops: dict[str, int] | None  # None: unknown (a file without hop counts)
    source: str


def query_hops(record: dict[str, Any], qa: dict[str, Any]) -> int | None:
    """A query's hop count: its `hops` field, its record's, or an id ending in -h<N> (the generators' ids)."""
    for value in (qa.get("hops"), record.get("hops")):
        if value is not None:
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else -1
    try:
        return hop_count(str(qa.get("id")))
    except ValueError:
        return None


def read_records(path: str, flag: str) -> list[dict[str, Any]]:
    """A ReCoRD file's records, each checked by the project's reader; the diagnostic needs annotated records (the
    leakage checks and the city level read the entity spans)."""
    where = f"{flag} {path}"
    try:
        check_record_file(path, where, unique_ids=flag != "--train_file")
        _, items = read_record_file(path, where)
        records = []
        for place, item in items:
            entities = item.get("passage", {}).get("entities") if isinstance(item.get("passage"), dict) else None
            if item_shape(item) != "record" or not entities:
                raise ScriptArgumentError(
                    f"{where}, {place}: the diagnostic needs ReCoRD records with annotated entities "
                    "(passage{text, entities} + qas), as the generators write them (training.synthetic_cloze.write_jsonl)"
                )
            records.append(item)
    except InputError as error:
        raise ScriptArgumentError(str(error)) from None
    return records


def file_hops(records: list[dict[str, Any]], where: str, given: int | None = None) -> dict[str, int]:
    """Query id -> hop count (``given`` for a file named per hop count); a query without one is refused."""
    hops = {}
    for record in records:
        # the ids the processor gives the queries (an `id`, else the record's idx and the query's, ...)
        for example, qa in zip(item_to_examples(record), record["qas"], strict=True):
            hop = given if given is not None else query_hops(record, qa)
            if hop is None or hop < 1:
                raise ScriptArgumentError(
                    f"{where}: query {example.example_id!r} has no hop count: give each query (or record) a 'hops' "
                    "field (a positive integer), ids ending in -h<N>, or one file per hop count "
                    "('1:a.jsonl,2:b.jsonl')"
                )
            hops[example.example_id] = hop
    return hops


def load_tasks(args: DiagnosticArguments) -> Tasks:
    """The generator's records (``--generator``) or the files' (``--train_file``, ``--validation_file``)."""
    if not args.train_file:
        world = args.generator
        train = generate_records(
            args.train_size, args.hop_list, args.data_seed, args.pairs, args.distractors, world=world
        )
        dev = generate_records(
            args.eval_size, args.hop_list, args.data_seed + 10_000, args.pairs, args.distractors, "dev", world
        )
        dev_hops = {qa["id"]: hop_count(qa["id"]) for record in dev for qa in record["qas"]}
        train_hops = {qa["id"]: hop_count(qa["id"]) for record in train for qa in record["qas"]}
        return Tasks(train, dev, dev_hops, train_hops, f"generator {world}")
    train = read_records(args.train_file, "--train_file")
    dev, dev_hops = [], {}
    parts = [item.strip() for item in args.validation_file.split(",")]
    per_hop = [re.fullmatch(r"(\d+):(.+)", part) for part in parts]
    if all(per_hop) and parts:
        for match in per_hop:
            records = read_records(match.group(2), "--validation_file")
            dev_hops.update(file_hops(records, f"--validation_file {match.group(2)}", int(match.group(1))))
            dev += records
    elif len(parts) == 1:
        dev = read_records(parts[0], "--validation_file")
        dev_hops = file_hops(dev, f"--validation_file {parts[0]}")
    else:
        raise ScriptArgumentError(
            f"--validation_file {args.validation_file}: give one file, or one file per hop count as "
            "'1:one_hop.jsonl,2:two_hop.jsonl'"
        )
    if sum(len(record["qas"]) for record in dev) != len(dev_hops):
        raise ScriptArgumentError(f"--validation_file {args.validation_file}: two queries share an id")
    if 1 not in dev_hops.values():
        raise ScriptArgumentError(
            f"--validation_file {args.validation_file}: no one-hop query: the one-hop control must run beside the "
            "task (give one-hop dev queries, e.g. '1:one_hop.jsonl,2:two_hop.jsonl')"
        )
    try:
        train_hops = file_hops(train, f"--train_file {args.train_file}")
    except ScriptArgumentError:
        if args.curriculum_steps:
            raise
        train_hops = None
    return Tasks(train, dev, dev_hops, train_hops, f"--train_file {args.train_file}")


# ----------------------------------------------------------------------------------------------- the models


def train_tokenizer(texts: list[str], directory: Path) -> LukeTokenizer:
    """A byte-level BPE (RoBERTa's layout) trained on the generated texts, as LUKE's tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer=trainer)
    model = json.loads(backend.to_str())["model"]
    merges = [" ".join(merge) if isinstance(merge, list) else merge for merge in model["merges"]]
    (directory / "vocab.json").write_text(json.dumps(model["vocab"]), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    return LukeTokenizer(
        vocab=str(directory / "vocab.json"),
        merges=str(directory / "merges.txt"),
        entity_vocab=dict(ENTITY_VOCAB),
        task=None,
    )


def user_checkpoint(path: str) -> tuple[PreTrainedTokenizerBase, list[int], dict[str, Any]]:
    """`--model_name_or_path`: its tokenizer with LUKE's special entities kept (as run_record.py keeps them), the rows
    of its entity table they come from, and its config; each problem one error naming the flag and the fix."""
    config = check_model_source(path, VARIANTS["gesa"], f"{SCRIPT} --model_name_or_path")
    if config.get("model_type") != "luke":
        raise ScriptArgumentError(
            f"--model_name_or_path {path} holds a {config.get('model_type')!r} model: the diagnostic trains GESA "
            "converted from a LUKE checkpoint (LukeModel or a LukeFor* head saved with save_pretrained); give one"
        )
    try:
        tokenizer = load_tokenizer(path, config)
    except Exception as error:  # OSError, ValueError, the tokenizers library's bare Exception on a cut file
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ScriptArgumentError(
            f"--model_name_or_path {path}: cannot load its tokenizer ({reason}); save the checkpoint's LukeTokenizer "
            "beside its weights (tokenizer.save_pretrained)"
        ) from None
    check_vocab_size(tokenizer, config, path, path, added="")
    return tokenizer, shrink_entity_vocab(tokenizer, f"--model_name_or_path {path}"), config


def tiny_luke_initializer_range(args: DiagnosticArguments) -> float:
    """`--initializer_range`, or 1/sqrt(width): weights that keep a vector's scale through each projection.

    LukeConfig's 0.02 suits luke-large (1/sqrt(1024) = 0.031); at width 64 each value and output projection then
    shrinks what an attention layer passes on to 0.16 x 0.16 of it, and after the three attention steps from the query's
    name to a candidate (query word -> its entity -> the entities of its sentence) the candidates' states hardly
    depend on the query at step 0 (docs/diagnostic.md measures it): whether a run leaves the city level is then luck."""
    return args.initializer_range or args.hidden_size**-0.5


def build_tiny_luke(args: DiagnosticArguments, tokenizer: LukeTokenizer, seed: int, path: Path) -> Path:
    """A random LUKE saved like a Hub checkpoint (weights drawn at `tiny_luke_initializer_range`); entity-aware
    queries tied to the word query as in released LUKE."""
    config = LukeConfig(
        initializer_range=tiny_luke_initializer_range(args),
        vocab_size=len(tokenizer),
        entity_vocab_size=len(ENTITY_VOCAB),
        hidden_size=args.hidden_size,
        entity_emb_size=args.hidden_size // 2,
        num_hidden_layers=args.num_hidden_layers,
        num_attention_heads=args.num_attention_heads,
        intermediate_size=4 * args.hidden_size,
        max_position_embeddings=WINDOW["max_seq_length"] + 100,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return save_random_luke(config, tokenizer, seed, path)


def constant_score_loss(features: Dataset) -> float:
    """Binary entropy of the positive rate over real candidates (the placeholder is no candidate)."""
    positives = sum(sum(labels[1:]) for labels in features["labels"])
    candidates = sum(sum(mask[1:]) for mask in features["entity_attention_mask"])
    p = positives / candidates
    return binary_entropy(p)


def binary_entropy(p: float) -> float:
    return 0.0 if p <= 0 or p >= 1 else -(p * math.log(p) + (1 - p) * math.log(1 - p))


def answer_strings(records: list[dict[str, Any]]) -> set[str]:
    """Every gold answer text of the records: the strings that can be answers (the cities of the generators)."""
    return {answer["text"] for record in records for qa in record["qas"] for answer in qa.get("answers") or []}


def city_level_loss(features: dict[str, list], answerable: set[str]) -> float:
    """The mean loss over real candidates of a model that scores a candidate 0 unless its string is in `answerable`
    (a city), and gives the cities of each window the same probability, the share of them that are answers: the
    level of "the answer is a city, chance among the window's cities"."""
    total, candidates = 0.0, 0
    for texts, labels, mask, placeholder in zip(
        features["candidate_texts"],
        features["labels"],
        features["entity_attention_mask"],
        features["placeholder_entity_mask"],
        strict=True,
    ):
        real = [i for i in range(len(texts)) if mask[i] and not placeholder[i]]
        cities = [i for i in real if texts[i] in answerable]
        candidates += len(real)
        if cities:
            total += len(cities) * binary_entropy(sum(labels[i] for i in cities) / len(cities))
    return total / max(candidates, 1)


def convert(
    luke_dir: Path | str, preset: str, std: float | None, processor: GesaProcessor, seed: int, turn_edges: bool = True,
    entity_rows: list[int] | None = None, copy_queries: bool = False,
) -> Any:  # fmt: skip
    """GESA `preset` from the tiny LUKE (or `--model_name_or_path`, `entity_rows` the rows of its entity table kept),
    its entity label rows at `std` (None: `initializer_range`, no turn), the graph-edge rows turned with the mention
    rows unless `turn_edges` is False (``--inits mention``), the entity-aware queries exact copies of LUKE's query
    with `copy_queries` (``--inits copies``; else brought up to unit gain, `GesaPreTrainedModel.entity_query_gain`)."""
    settings = ("entity_label_logit_std", "turn_edge_label_rows", "entity_query_gain")
    previous = {name: getattr(GesaPreTrainedModel, name) for name in settings}
    chosen = {"entity_label_logit_std": std, "turn_edge_label_rows": turn_edges}
    if copy_queries:
        chosen["entity_query_gain"] = None
    try:
        for name, value in chosen.items():
            setattr(GesaPreTrainedModel, name, value)
        torch.manual_seed(seed)
        model = GesaForEntitySpanQA.from_luke_pretrained(luke_dir, entity_rows=entity_rows, ablation=preset)
    finally:
        for name, value in previous.items():
            setattr(GesaPreTrainedModel, name, value)
    model.init_added_word_embeddings(processor.added_token_sources())
    return model


@dataclass
class Encoded:
    """A set of records as model inputs (`inputs`) and the columns the evaluation reads (`columns`)."""

    inputs: Dataset
    columns: dict[str, list]

    @classmethod
    def of(cls, processor: GesaProcessor, records: list[dict[str, Any]]) -> Encoded:
        encoded = processor.encode_records(records)
        columns = {name: encoded[name] for name in EVAL_COLUMNS}
        inputs = {name: value for name, value in encoded.items() if name not in EVAL_COLUMNS}
        return cls(Dataset.from_dict(inputs), columns)


def predict(trainer: Trainer, encoded: Encoded) -> tuple[dict[str, str], np.ndarray]:
    """The top answer text per query id, and the candidate logits."""
    logits = trainer.predict(encoded.inputs).predictions
    columns = encoded.columns
    return GesaProcessor.post_process_predictions(columns["example_id"], columns["candidate_texts"], logits), logits


def exact_match_per_hop(
    predicted: dict[str, str], gold: dict[str, list[str]], hops: dict[str, int]
) -> dict[int, float]:
    """Dev EM per hop count (100 x the share of queries whose top answer is one of their gold texts)."""
    per_hop: dict[int, list[float]] = {}
    for example_id, text in predicted.items():
        per_hop.setdefault(hops[example_id], []).append(float(text in gold[example_id]))
    return {hop: 100.0 * sum(hits) / len(hits) for hop, hits in sorted(per_hop.items())}


def gold_answers(encoded: Encoded) -> dict[str, list[str]]:
    return dict(zip(encoded.columns["example_id"], encoded.columns["answers"], strict=True))


@dataclass
class Prepared:
    """What every run of one diagnostic shares: processor, features, levels, the dev set."""

    tasks: Tasks
    processor: GesaProcessor
    tokenizer: PreTrainedTokenizerBase
    train: Dataset
    one_hop_train: Dataset | None
    dev: Encoded
    constant_level: float
    city_level: float
    answerable: set[str]
    # --model_name_or_path: the rows of its entity table every conversion keeps (None: the tiny LUKE's whole table)
    entity_rows: list[int] | None = None


def prepare(args: DiagnosticArguments, tasks: Tasks, workdir: Path) -> Prepared:
    """Tokenizer (trained on the training text, or `--model_name_or_path`'s own), processor, training features and the
    two levels, dev features."""
    entity_rows = None
    if args.model_name_or_path:
        tokenizer, entity_rows, config = user_checkpoint(args.model_name_or_path)
        # the checkpoint's sizes, for the time estimate and results.json
        args.hidden_size, args.num_hidden_layers = config["hidden_size"], config["num_hidden_layers"]
        args.num_attention_heads = config["num_attention_heads"]
    else:
        texts = [r["passage"]["text"] for r in tasks.train] + [qa["query"] for r in tasks.train for qa in r["qas"]]
        tokenizer = train_tokenizer(texts, workdir)
    processor = GesaProcessor(tokenizer, **WINDOW, candidate_source="annotations")
    encoded = processor.encode_records(tasks.train)
    answerable = answer_strings(tasks.train)
    city_level = city_level_loss(encoded, answerable)
    train = Dataset.from_dict({k: v for k, v in encoded.items() if k not in EVAL_COLUMNS})
    one_hop_train = None
    if args.curriculum_steps:
        if args.train_file:
            assert tasks.train_hops is not None  # load_tasks refuses a curriculum without hop counts
            one_hop = [r for r in tasks.train if all(tasks.train_hops.get(ex.example_id) == 1
                                                     for ex in item_to_examples(r))]  # fmt: skip
            if not one_hop:
                raise ScriptArgumentError(f"--curriculum_steps: {tasks.source} holds no one-hop query to start with")
        else:
            one_hop = generate_records(
                args.train_size, [1], args.data_seed + 20_000, args.pairs, args.distractors, world=args.generator
            )
        one_hop_train = Encoded.of(processor, one_hop).inputs
    dev = Encoded.of(processor, tasks.dev)
    return Prepared(
        tasks, processor, tokenizer, train, one_hop_train, dev, constant_score_loss(train), city_level, answerable,
        entity_rows,
    )  # fmt: skip


def run_one(
    args: DiagnosticArguments, luke_dir: Path | str, prepared: Prepared, preset: str, std: float | None, seed: int,
    workdir: Path, turn_edges: bool = True, copy_queries: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Train one model; with `--curriculum_steps`, first that many steps on one-hop queries, then the rest on all
    (a second `Trainer` on the same model: the learning rate schedule starts again). Returns the logged curve, the
    dev EM per hop count, the seconds, the conversion summary and (`--leakage_checks`) the checks."""
    model = convert(luke_dir, preset, std, prepared.processor, seed, turn_edges, prepared.entity_rows, copy_queries)
    phases = [(prepared.train, args.max_steps)]
    if args.curriculum_steps:
        phases = [
            (prepared.one_hop_train, args.curriculum_steps),
            (prepared.train, args.max_steps - args.curriculum_steps),
        ]
    curve: list[tuple[int, float]] = []
    start, done = time.perf_counter(), 0
    for data, steps in phases:
        trainer = make_trainer(args, model, prepared.processor, data, steps, seed, workdir)
        trainer.train()
        curve += [(done + entry["step"], entry["loss"]) for entry in trainer.state.log_history if "loss" in entry]
        done += steps
    seconds = time.perf_counter() - start
    predicted, _ = predict(trainer, prepared.dev)
    em = exact_match_per_hop(predicted, gold_answers(prepared.dev), prepared.tasks.dev_hops)
    result = {"curve": curve, "em": em, "seconds": seconds}
    if args.leakage_checks:
        result["leakage"] = leakage_checks(trainer, prepared, predicted, seed)
    result["conversion"] = getattr(model, "luke_conversion_info", {"missing_keys": [], "unexpected_keys": []})
    return result


def make_trainer(
    args: DiagnosticArguments, model: Any, processor: GesaProcessor, train: Dataset, max_steps: int, seed: int,
    workdir: Path,
) -> Trainer:  # fmt: skip
    training_args = TrainingArguments(
        output_dir=str(workdir / "trainer"),
        max_steps=max_steps,
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=64,
        learning_rate=args.learning_rate,
        logging_steps=args.logging_steps,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        seed=seed,
        use_cpu=True,
        disable_tqdm=True,
        remove_unused_columns=False,
        dataloader_num_workers=0,
    )
    trainer = Trainer(
        model=model, args=training_args, train_dataset=train, data_collator=processor.get_data_collator()
    )
    trainer.remove_callback(PrinterCallback)  # the table below reports the losses
    return trainer


# ----------------------------------------------------------------------------------------------- leakage checks


def entity_strings(record: dict[str, Any]) -> list[str]:
    """The record's entity mentions as text (inclusive ends, SuperGLUE), in passage order."""
    text = record["passage"]["text"]
    spans = sorted((e["start"], e["end"]) for e in record["passage"]["entities"])
    return [text[start : end + 1] for start, end in spans]


def rewrite_passage(record: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any] | None:
    """The record with every entity mention whose text is a key of `mapping` replaced by its value (spans and
    answers moved along: each query's answers become the mentions of its mapped answer); None when its entity spans
    overlap (no single rewrite)."""
    text = record["passage"]["text"]
    spans = sorted({(e["start"], e["end"]) for e in record["passage"]["entities"]})
    if any(b[0] <= a[1] for a, b in zip(spans, spans[1:], strict=False)):
        return None
    out, entities, position = "", [], 0
    for start, end in spans:
        surface = mapping.get(text[start : end + 1], text[start : end + 1])
        out += text[position:start]
        entities.append({"start": len(out), "end": len(out) + len(surface) - 1, "text": surface})
        out += surface
        position = end + 1
    out += text[position:]
    qas = []
    for qa in record["qas"]:
        golds = {mapping.get(answer["text"], answer["text"]) for answer in qa.get("answers") or []}
        answers = [{"start": e["start"], "end": e["end"], "text": e["text"]} for e in entities if e["text"] in golds]
        qas.append({**qa, "answers": answers})
    passage = {"text": out, "entities": [{"start": e["start"], "end": e["end"]} for e in entities]}
    return {**record, "passage": passage, "qas": qas}


def rotated_records(records: list[dict[str, Any]], answerable: set[str]) -> list[tuple[dict[str, Any], dict]]:
    """Each record with its possible answers (cities) rotated among the passage's mentions: the i-th distinct one (in
    passage order) becomes the (i+1)-th, the last the first. Returns (record, mapping) for the records with two or
    more of them."""
    rotated = []
    for record in records:
        cities = list(dict.fromkeys(s for s in entity_strings(record) if s in answerable))
        if len(cities) < 2:
            continue
        mapping = dict(zip(cities, cities[1:] + cities[:1], strict=True))
        changed = rewrite_passage(record, mapping)
        if changed is not None:
            rotated.append((changed, mapping))
    return rotated


def unknown_name_records(records: list[dict[str, Any]], pool: list[str], seed: int) -> list[dict[str, Any]]:
    """Each record whose query names a string of its passage (a person), that string replaced in the query by one of
    `pool` that the passage does not hold: the query's name becomes one the passage never mentions."""
    rng = random.Random(seed)
    changed = []
    for record in records:
        present = set(entity_strings(record))
        named = [
            s for s in present if any(re.search(rf"(?<!\w){re.escape(s)}(?!\w)", qa["query"]) for qa in record["qas"])
        ]
        others = [s for s in pool if s not in present and not any(s in qa["query"] for qa in record["qas"])]
        if not named or not others:
            continue
        qas = []
        for qa in record["qas"]:
            query = qa["query"]
            for name in named:
                query = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", rng.choice(others), query)
            qas.append({**qa, "query": query})
        changed.append({**record, "qas": qas})
    return changed


def answers_replaced(records: list[dict[str, Any]], change: bool) -> list[dict[str, Any]]:
    """The records with every query's answers removed (`change` False) or set to another candidate's mention."""
    replaced = copy.deepcopy(records)
    for record in replaced:
        text = record["passage"]["text"]
        for qa in record["qas"]:
            golds = {answer["text"] for answer in qa.get("answers") or []}
            other = [e for e in record["passage"]["entities"] if text[e["start"] : e["end"] + 1] not in golds]
            if change and other:
                e = other[0]
                qa["answers"] = [{"start": e["start"], "end": e["end"], "text": text[e["start"] : e["end"] + 1]}]
            else:
                qa["answers"] = []
    return replaced


def leakage_checks(trainer: Trainer, prepared: Prepared, predicted: dict[str, str], seed: int) -> dict[str, Any]:
    """The three checks on a trained model (module docstring): what each one measured, per hop count."""
    processor, hops, dev = prepared.processor, prepared.tasks.dev_hops, prepared.tasks.dev
    report: dict[str, Any] = {}
    pool = sorted({s for record in prepared.tasks.train + dev for s in entity_strings(record)} - prepared.answerable)
    unknown = unknown_name_records(dev, pool, seed)
    if unknown:
        encoded = Encoded.of(processor, unknown)
        guessed, _ = predict(trainer, encoded)
        report["unknown_name_em"] = exact_match_per_hop(guessed, gold_answers(encoded), hops)
    report["unknown_name_queries"] = len(unknown)
    rotated = rotated_records(dev, prepared.answerable)
    if rotated:
        encoded = Encoded.of(processor, [record for record, _ in rotated])
        moved_to, _ = predict(trainer, encoded)
        report["rotated_em"] = exact_match_per_hop(moved_to, gold_answers(encoded), hops)
        mappings = {example.example_id: mapping for record, mapping in rotated for example in item_to_examples(record)}
        followed = [
            moved_to[qid] == mappings[qid].get(predicted[qid], predicted[qid]) for qid in moved_to if qid in predicted
        ]
        report["rotated_moved"] = 100.0 * sum(followed) / max(len(followed), 1)
    report["rotated_queries"] = len(rotated)
    reference = processor.encode_records(dev)
    _, reference_logits = predict(trainer, prepared.dev)
    for name, change in (("answers_removed", False), ("answers_changed", True)):
        changed = answers_replaced(dev, change)
        columns = processor.encode_records(changed)
        inputs = [key for key in reference if key not in ("labels", "answers")]
        report[f"{name}_same_inputs"] = all(columns.get(key) == reference[key] for key in inputs)
        encoded = Encoded.of(processor, changed)
        texts, logits = predict(trainer, encoded)
        report[f"{name}_same_predictions"] = texts == predicted and bool(np.array_equal(logits, reference_logits))
    return report


# ----------------------------------------------------------------------------------------------- the table


def leave_step(curve: list[tuple[int, float]], level: float, margin: float) -> int | None:
    """The first logged step whose loss is below `(1 - margin) * level`, or None (never)."""
    return next((step for step, loss in curve if loss < (1.0 - margin) * level), None)


def summarise(
    args: DiagnosticArguments, runs: list[dict[str, Any]], level: float, city_level: float | None = None
) -> list[dict[str, Any]]:
    """One row per (preset, init): its seeds, mean curve, leave steps (both levels), EM per hop (mean, spread, per
    seed), the seeds that learned the control and the leakage checks' results."""
    control_em = args.control_em
    rows = []
    for key in dict.fromkeys((run["preset"], run["init"]) for run in runs):
        group = [run for run in runs if (run["preset"], run["init"]) == key]
        steps = [step for step, _ in group[0]["curve"]]
        mean_curve = [sum(run["curve"][i][1] for run in group) / len(group) for i in range(len(steps))]
        leaves = [leave_step(run["curve"], level, args.leave_margin) for run in group]
        hops = sorted(group[0]["em"])
        row = {
            "preset": key[0],
            "init": key[1],
            "seeds": [run["seed"] for run in group],
            "steps": steps,
            "loss": mean_curve,
            "leave_steps": leaves,
            # a mean step only when every seed left: a run that never left has no step to average
            "leave_mean": None if None in leaves else sum(leaves) / len(leaves),
            "em": {hop: sum(run["em"][hop] for run in group) / len(group) for hop in hops},
            "em_per_seed": {hop: [run["em"][hop] for run in group] for hop in hops},
            "em_spread": {hop: spread([run["em"][hop] for run in group]) for hop in hops},
            "learned": [run["em"].get(1, -math.inf) >= control_em for run in group],
            "seconds": sum(run["seconds"] for run in group) / len(group),
        }
        if city_level is not None:
            row["city_leave_steps"] = [leave_step(run["curve"], city_level, args.leave_margin) for run in group]
        if any("leakage" in run for run in group):
            row["leakage"] = [run.get("leakage") for run in group]
        rows.append(row)
    return rows


def spread(values: list[float]) -> float:
    """Sample standard deviation over seeds (0 for one seed)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))


MIN_SEEDS = 3


def per_seed(row: dict[str, Any], hop: int) -> list[float] | None:
    """A row's dev EM per seed on `hop`, or None when the row has no `hop`-hop queries."""
    values = (row.get("em_per_seed") or {}).get(hop)
    if values is None and hop in row["em"]:  # a results.json written before per-seed EM: the mean for every seed
        values = [row["em"][hop]] * len(row["seeds"])
    return values


def unlearned_control(row: dict[str, Any], control_em: float) -> list[str]:
    """The runs of a row (`preset s<seed>`) whose dev EM on the one-hop control is below `control_em` (all of them
    when the control did not run)."""
    control = per_seed(row, 1) or [-math.inf] * len(row["seeds"])
    return [f"{row['preset']} s{seed}" for seed, em in zip(row["seeds"], control, strict=True) if em < control_em]


def learned_cell(row: dict[str, Any], control_em: float) -> str:
    """'9/10' and the seeds that did not learn the control."""
    control = per_seed(row, 1) or [-math.inf] * len(row["seeds"])
    missed = [seed for seed, em in zip(row["seeds"], control, strict=True) if em < control_em]
    share = f"{len(row['seeds']) - len(missed)}/{len(row['seeds'])}"
    return share if not missed else f"{share} (not s{', s'.join(map(str, missed))})"


def hop_verdict(row: dict[str, Any], luke: dict[str, Any] | None, hop: int, control_em: float) -> str:
    """Does this preset answer `hop`-hop queries better than LUKE? "yes", "no", or "inconclusive (why)".

    A run that has not learned the one-hop control (dev EM below `control_em`) cannot say anything about more hops:
    any such run, of the preset or of LUKE, makes the answer "inconclusive", never "no"; so does a row with fewer
    than `MIN_SEEDS` seeds. Otherwise "yes" when the preset's mean minus its spread over seeds lies above LUKE's
    mean plus LUKE's spread, else "no".
    """
    if luke is None:
        return "inconclusive (no luke row to compare with)"
    compared = [row, luke]
    for group in compared:
        if len(group["seeds"]) < MIN_SEEDS:
            return f"inconclusive ({group['preset']}: {len(group['seeds'])} seed(s), a verdict needs {MIN_SEEDS})"
    unlearned = [name for group in compared for name in unlearned_control(group, control_em)]
    if unlearned:
        return f"inconclusive (one-hop control below {control_em:g} EM: {', '.join(unlearned)})"
    mine, theirs = per_seed(row, hop), per_seed(luke, hop)
    low = sum(mine) / len(mine) - spread(mine)
    high = sum(theirs) / len(theirs) + spread(theirs)
    return "yes" if low > high else "no"


def steps_cell(seeds: list[int], steps: list[int | None]) -> str:
    return ", ".join(f"s{seed}: {'never' if step is None else step}" for seed, step in zip(seeds, steps, strict=True))


def print_table(
    args: DiagnosticArguments, rows: list[dict[str, Any]], level: float, city_level: float | None = None
) -> None:
    hops = sorted({hop for row in rows for hop in row["em"]})
    control_em = args.control_em
    margin = 1 - args.leave_margin
    print(f"constant-score level H(p) = {level:.3f} (left below {margin * level:.3f})", end="")
    if city_level is not None:
        print(f"; city level = {city_level:.3f} (left below {margin * city_level:.3f})", end="")
    print(
        f"\nlearned: the seeds whose dev EM on the one-hop control is at or above {control_em:g} (--control_em); EM "
        "per hop count: mean ± spread (sample std) over the seeds [per seed]; training loss every "
        f"{args.logging_steps} steps, mean over the row's seeds"
    )
    header = ["preset", "init", "learned", *[f"EM {h}-hop" for h in hops]]
    header += ["left city level @"] if city_level is not None else []
    header += ["left constant level @", "s/run", "training loss"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        cells = [row["preset"], row["init"], learned_cell(row, control_em)]
        for h in hops:
            values = per_seed(row, h)
            cells.append(f"{row['em'][h]:.1f} ± {spread(values):.1f} [{', '.join(f'{v:.0f}' for v in values)}]")
        if city_level is not None:
            city = row.get("city_leave_steps") or [None] * len(row["seeds"])
            cells.append(f"{leave_cell(city)} ({steps_cell(row['seeds'], city)})")
        cells.append(f"{leave_cell(row['leave_steps'])} ({steps_cell(row['seeds'], row['leave_steps'])})")
        cells += [f"{row['seconds']:.0f}", " ".join(f"{loss:.3f}" for loss in row["loss"])]
        print("| " + " | ".join(cells) + " |")
    luke = [row for row in rows if row["preset"] == "luke"]
    multi = [hop for hop in hops if hop > 1]
    if multi:
        print(
            f"does the preset answer more hops than LUKE? (a run below {control_em:g} EM on the control: inconclusive)"
        )
        for row in rows:
            if row["preset"] == "luke":
                continue
            answers = ", ".join(
                f"{hop}-hop: {hop_verdict(row, luke[0] if luke else None, hop, control_em)}" for hop in multi
            )
            print(f"  {row['preset']} ({row['init']}): {answers}")
        if luke:
            missed = unlearned_control(luke[0], control_em)
            print(f"  luke: one-hop control {'not learned by ' + ', '.join(missed) if missed else 'learned'}")
    if luke:
        for line in leave_comparison(rows, luke[0]):
            print(line)
    if any(row.get("leakage") for row in rows):
        print_leakage(rows, control_em)


def leave_cell(steps: list[int | None]) -> str:
    """A leave column's step: the mean over seeds when every seed left, else how many never left (no step)."""
    never = sum(step is None for step in steps)
    if not never:
        return f"{sum(steps) / len(steps):.0f}"
    return "never" if never == len(steps) else f"never on {never} of {len(steps)} seeds"


def leakage_lines(row: dict[str, Any], control_em: float) -> list[str]:
    """A row's leakage checks over the runs that learned the control (a run at chance answers at chance anyway), or
    over every run, said so, when none did."""
    learned = [c for c, ok in zip(row["leakage"], row["learned"], strict=True) if c and ok]
    checks = learned or [c for c in row["leakage"] if c]
    if not checks:
        return []
    which = f"{len(checks)} run(s) that learned" if learned else f"no run learned the control, {len(checks)} run(s)"

    def mean(values: list[float]) -> str:
        return f"{sum(values) / len(values):.1f}" if values else "-"

    unknown = mean([c["unknown_name_em"][1] for c in checks if 1 in c.get("unknown_name_em", {})])
    rotated = mean([c["rotated_em"][1] for c in checks if 1 in c.get("rotated_em", {})])
    moved = mean([c["rotated_moved"] for c in checks if "rotated_moved" in c])
    same = {
        name: sum(c[f"{name}_same_inputs"] and c[f"{name}_same_predictions"] for c in checks)
        for name in ("answers_removed", "answers_changed")
    }
    return [
        f"  {row['preset']} ({row['init']}), {which}: unknown query name: one-hop EM {unknown} "
        f"({checks[0]['unknown_name_queries']} queries); cities rotated: one-hop EM {rotated} against the moved "
        f"answers, {moved}% of the predictions moved with the passage ({checks[0]['rotated_queries']} queries); "
        f"answers removed: same inputs and predictions in {same['answers_removed']}/{len(checks)} runs; answers "
        f"changed: in {same['answers_changed']}/{len(checks)}"
    ]


def print_leakage(rows: list[dict[str, Any]], control_em: float) -> None:
    print("leakage checks (--leakage_checks), mean over the runs that learned the one-hop control:")
    for row in rows:
        if row.get("leakage"):
            for line in leakage_lines(row, control_em):
                print(line)


def leave_comparison(rows: list[dict[str, Any]], luke: dict[str, Any]) -> list[str]:
    """Per label init, the presets that leave the constant-score level later than LUKE, seed by seed.

    A run that never leaves is later than a LUKE run that leaves; when neither leaves the seed says nothing. With no
    pair where someone left, the line says that no run left, never that every preset left "no later than LUKE".
    """
    bound = dict(zip(luke["seeds"], luke["leave_steps"], strict=True))
    luke_steps = ", ".join(f"s{seed}: {'never' if step is None else step}" for seed, step in bound.items())
    lines = []
    for init in dict.fromkeys(row["init"] for row in rows if row["preset"] != "luke"):
        late, compared = [], 0
        for row in rows:
            if row["init"] != init or row["preset"] == "luke":
                continue
            seeds = []
            for seed, step in zip(row["seeds"], row["leave_steps"], strict=True):
                if seed not in bound or (step is None and bound[seed] is None):
                    continue
                compared += 1
                if step is None or (bound[seed] is not None and step > bound[seed]):
                    seeds.append(seed)
            if seeds:
                late.append(f"{row['preset']} (seeds {seeds})")
        if late:
            verdict = f"later than LUKE: {late}"
        elif compared:
            verdict = "every GESA preset leaves no later than LUKE"
        else:
            verdict = "no run of LUKE or of any preset left the constant-score level"
        lines.append(f"init {init}: {verdict} (LUKE leaves the constant-score level at {luke_steps}; seed by seed)")
    return lines


# ----------------------------------------------------------------------------------------------- run_record.py


def run_record_command(args: DiagnosticArguments, folder: Path, preset: str, seed: int) -> list[str]:
    """The examples/run_record.py command that trains what `run_one` trains (same tiny LUKE, data, windows,
    optimiser, schedule and seed) and evaluates it on the one-hop dev queries."""
    command = [
        "python", "examples/run_record.py",
        "--model_name_or_path", args.model_name_or_path or str(folder / f"luke-seed{seed}"),
        "--train_file", str(folder / "train.jsonl"),
        "--validation_file", str(folder / "dev_1hop.jsonl"),
        "--do_train", "--do_eval",
        "--max_steps", str(args.max_steps),
        "--learning_rate", str(args.learning_rate),
        "--per_device_train_batch_size", str(args.batch_size),
        "--per_device_eval_batch_size", "64",
        "--logging_steps", str(args.logging_steps),
        "--max_seq_length", str(WINDOW["max_seq_length"]),
        "--doc_stride", str(WINDOW["doc_stride"]),
        "--max_query_length", str(WINDOW["max_query_length"]),
        "--candidate_source", "annotations",
        "--save_strategy", "no",
        "--report_to", "none",
        "--use_cpu", "true",
        "--seed", str(seed),
        "--output_dir", str(folder / "runs" / f"{preset}-seed{seed}"),
    ]  # fmt: skip
    if preset == "luke":
        return [*command[:4], "--variant", "luke", *command[4:]]
    return [*command[:4], "--ablation", preset, *command[4:]]


def export_run_record(args: DiagnosticArguments, tasks: Tasks, prepared: Prepared, folder: Path) -> list[str]:
    """Write the data, the tiny LUKE of every seed (none with `--model_name_or_path`: the commands convert it) and
    run_record.sh into `folder`; returns the commands."""
    from gesa.training.synthetic_cloze import write_jsonl

    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(tasks.train, folder / "train.jsonl")
    for hop in sorted(set(tasks.dev_hops.values())):
        chosen = [r for r in tasks.dev if all(tasks.dev_hops[ex.example_id] == hop for ex in item_to_examples(r))]
        write_jsonl(chosen, folder / f"dev_{hop}hop.jsonl")
    commands = []
    for seed, preset, init, _ in planned_runs(args):
        if init not in ("-", "new"):
            continue  # run_record.py builds the default init only
        if not args.model_name_or_path and not (folder / f"luke-seed{seed}").exists():
            build_tiny_luke(args, prepared.tokenizer, seed, folder / f"luke-seed{seed}")
        commands.append(" ".join(run_record_command(args, folder, preset, seed)))
    script = "#!/bin/sh\n# written by bench/diagnose_graph.py --export_run_record; run from the repository root\n"
    (folder / "run_record.sh").write_text(script + "".join(f"OMP_NUM_THREADS=1 {c}\n" for c in commands))
    return commands


# ----------------------------------------------------------------------------------------------- plot, files, main


def plot(
    args: DiagnosticArguments, rows: list[dict[str, Any]], level: float, path: Path, city_level: float | None = None
) -> Any:
    """Save the mean training curves (one colour per preset, LUKE black) as `path`; returns the figure."""
    matplotlib = require("matplotlib", "curves.png", then=", or pass --no_plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inits = list(dict.fromkeys(row["init"] for row in rows if row["preset"] != "luke")) or ["luke"]
    colours = preset_colours([row["preset"] for row in rows])
    figure, axes = plt.subplots(1, len(inits), figsize=(6 * len(inits), 4.2), sharey=True, squeeze=False)
    for axis, init in zip(axes[0], inits, strict=True):
        for row in rows:
            if row["init"] == init or row["preset"] == "luke":
                width = 2.5 if row["preset"] == "luke" else 1.4
                label = f"{row['preset']} ({len(row['seeds'])} seeds)"
                axis.plot(row["steps"], row["loss"], label=label, color=colours[row["preset"]], linewidth=width)
        axis.axhline(level, color="grey", linestyle="--", linewidth=1, label=f"constant-score loss H(p) = {level:.3f}")
        axis.axhline(
            (1 - args.leave_margin) * level,
            color="grey",
            linestyle=":",
            linewidth=1,
            label=f"leave threshold (1 - {args.leave_margin:g}) H(p)",
        )
        if city_level is not None:
            axis.axhline(
                city_level, color="tab:brown", linestyle="-.", linewidth=1, label=f"city level {city_level:.3f}"
            )
        axis.set_title(f"entity label init: {init}")
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel("training loss (mean over seeds)")
    axes[0][-1].legend(fontsize=7, ncol=2)
    figure.suptitle(args.plot_title or f"hops {args.hop_list}: training loss, mean over each row's seeds")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    return figure


def preset_colours(presets: list[str]) -> dict[str, Any]:
    """One distinct colour per preset (LUKE black; the others from tab10, then tab20 past ten presets)."""
    matplotlib = require("matplotlib", "curves.png", then=", or pass --no_plot")
    others = [name for name in dict.fromkeys(presets) if name != "luke"]
    palette = matplotlib.colormaps["tab10" if len(others) <= 10 else "tab20"]
    colours: dict[str, Any] = {name: palette(index % palette.N) for index, name in enumerate(others)}
    colours["luke"] = "black"
    return colours


def reprint(path: Path, output: Path, no_plot: bool = False) -> list[dict[str, Any]]:
    """The table and plot of a saved results.json, under the arguments it was run with."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        names = {f.name for f in fields(DiagnosticArguments)}
        kept = {k: v for k, v in saved["args"].items() if k in names and k not in ("from_results", "train_file")}
        kept.pop("validation_file", None)
        args = DiagnosticArguments(**kept)
        rows, level = saved["rows"], saved["constant_score_loss"]
        city_level = saved.get("city_level")
        for row in rows:  # JSON made the hop counts strings
            for key in ("em", "em_per_seed", "em_spread"):
                if key in row:
                    row[key] = {int(hop): value for hop, value in row[key].items()}
            for checks in row.get("leakage") or []:
                for key in ("unknown_name_em", "rotated_em"):
                    if checks and key in checks:
                        checks[key] = {int(hop): value for hop, value in checks[key].items()}
            row.setdefault(
                "learned", [em >= args.control_em for em in per_seed(row, 1) or [-math.inf] * len(row["seeds"])]
            )
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ScriptArgumentError(
            f"--from_results {path}: not a results.json of this script ({error}); give the results.json a run wrote"
        ) from None
    print_table(args, rows, level, city_level)
    if not no_plot:
        plot(args, rows, level, output / "curves.png", city_level)
        print(f"plot: {output / 'curves.png'}")
    return rows


def check_output_dir(output_dir: str) -> Path:
    """The folder the results go to: given (never a silent default in the current folder), and a folder."""
    if not output_dir.strip():
        raise ScriptArgumentError(
            "--output_dir: required, the folder results.json and curves.png are written to (made if missing), e.g. "
            "--output_dir diagnostic_out/run1"
        )
    output = Path(output_dir)
    if output.exists() and not output.is_dir():
        raise ScriptArgumentError(
            f"--output_dir: {output_dir} is a file, not a folder; give a folder, e.g. --output_dir diagnostic_out/run1"
        )
    return output


# seconds per training step of the default tiny LUKE (64 x 4, batch 16) on one CPU core (OMP_NUM_THREADS=1), the
# mean of GESA's and LUKE's runs of this script (a 600-step `full` run took 82 s, evaluation included); other sizes
# scale it by layers x width^2 x batch, and every finished run prints the time left from the runs so far
SECONDS_PER_STEP = 0.12


def planned_runs(args: DiagnosticArguments) -> list[tuple[int, str, str, float | None]]:
    """(seed, preset, init name, label std) of every run, seed by seed (a stopped run has whole seeds)."""
    plan = []
    seeds = sorted({seed for preset in args.preset_list for seed in args.seeds_of(preset)})
    for seed in seeds:
        for preset in args.preset_list:
            if seed not in args.seeds_of(preset):
                continue
            for init, std in [("-", None)] if preset == "luke" else args.init_list:
                plan.append((seed, preset, init, std))
    return plan


def time_estimate(args: DiagnosticArguments) -> tuple[int, float]:
    """(number of training runs, estimated seconds for all of them on one unloaded core)."""
    runs = len(planned_runs(args))
    scale = (args.num_hidden_layers / 4) * (args.hidden_size / 64) ** 2 * (args.batch_size / 16)
    return runs, runs * args.max_steps * SECONDS_PER_STEP * max(scale, 0.25)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Command-line entry point: every value checked first (one ``diagnose_graph.py: error: ...`` line, exit status
    2), then the runs, the table and the plot."""
    with one_error_line(SCRIPT):
        args = parse_arguments(argv)
        if args.export_run_record:
            args.output_dir = args.output_dir or args.export_run_record
        output = check_output_dir(args.output_dir)
        check_plot_available(args)
        if args.from_results:
            output.mkdir(parents=True, exist_ok=True)
            return reprint(Path(args.from_results), output, args.no_plot)
        tasks = load_tasks(args)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # no bar per saved or loaded tiny checkpoint
    # one summary line per conversion below instead of a warning per unused LUKE weight (the pooler, positions)
    logging.getLogger(convert_luke_checkpoint.__module__).setLevel(logging.ERROR)
    output.mkdir(parents=True, exist_ok=True)
    plan = planned_runs(args)
    runs: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gesa-diagnostic-") as tmp:
        workdir = Path(tmp)
        with one_error_line(SCRIPT):
            prepared = prepare(args, tasks, workdir)
        level, city_level = prepared.constant_level, prepared.city_level
        if args.export_run_record:
            commands = export_run_record(args, tasks, prepared, Path(args.export_run_record))
            print(f"wrote {args.export_run_record}: the data, the tiny LUKE of every seed and run_record.sh:")
            for command in commands:
                print(f"  {command}")
            return []
        total, estimate = time_estimate(args)
        print(
            f"{total} training runs of {args.max_steps} steps on {tasks.source} ("
            + ", ".join(f"{preset}: {len(args.seeds_of(preset))} seed(s)" for preset in args.preset_list)
            + f"; inits {', '.join(name for name, _ in args.init_list)}): about {estimate / 60:.0f} min on one "
            "unloaded CPU core (OMP_NUM_THREADS=1); longer on a busy one",
            flush=True,
        )
        luke_dirs: dict[int, Path | str] = {}
        for seed, preset, init, std in plan:
            if args.model_name_or_path:
                luke_dirs[seed] = args.model_name_or_path
            elif seed not in luke_dirs:
                luke_dirs[seed] = build_tiny_luke(args, prepared.tokenizer, seed, workdir / f"luke-{seed}")
            result = run_one(
                args, luke_dirs[seed], prepared, preset, std, seed, workdir, init != "mention", init == "copies"
            )
            conversion = result.pop("conversion")
            first = not any(run["preset"] == preset for run in runs)  # one conversion line per preset
            runs.append({"preset": preset, "init": init, "seed": seed, **result})
            losses = " ".join(f"{loss:.3f}" for _, loss in result["curve"])
            em = ", ".join(f"{hop}-hop {value:.1f}" for hop, value in result["em"].items())
            print(f"[seed {seed}] {preset} init={init}: EM {em}; loss {losses}", flush=True)
            if first:
                print(
                    f"  converted from {args.model_name_or_path or 'the tiny LUKE'}: "
                    f"{len(conversion['missing_keys'])} parameters newly "
                    f"initialised, {len(conversion['unexpected_keys'])} LUKE weights unused",
                    flush=True,
                )
            elapsed = sum(run["seconds"] for run in runs)
            print(
                f"  run {len(runs)}/{total}: {result['seconds']:.0f} s; about "
                f"{(total - len(runs)) * elapsed / len(runs) / 60:.0f} min left",
                flush=True,
            )
            rows = summarise(args, runs, level, city_level)
            saved = {"args": asdict(args), "constant_score_loss": level, "city_level": city_level, "rows": rows}
            (output / "results.json").write_text(json.dumps(saved, indent=1))
    print_table(args, rows, level, city_level)
    if not args.no_plot:
        plot(args, rows, level, output / "curves.png", city_level)
        print(f"plot: {output / 'curves.png'}")
    print(f"results: {output / 'results.json'}")
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

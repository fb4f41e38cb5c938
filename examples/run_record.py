#!/usr/bin/env python
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

``--variant`` picks the model family from ``examples/variants.py``: ``gesa`` (default), ``luke`` (LUKE exactly),
``luke_graph`` (LUKE-Graph: LUKE + a gated relational graph network over the entities, the paper's Table 2 rival),
``kar`` (KnowBERT-KAR) and ``ernie`` (ERNIE) on GESA's windows with their knowledge inputs added by the collator (they
keep the LUKE checkpoint's entity table, their knowledge base), and ``xh`` (Transformer-XH: one sentence graph per
query, nodes of at most ``--max_seq_length`` tokens, annotated candidates only). Each works from a LUKE checkpoint,
from its own checkpoint and for the embedded demo; the output folder reloads with ``trust_remote_code``.

Outputs in ``--output_dir``: ``config.json`` (with ``auto_map``), the flat code files, ``model.safetensors``, the
processor and tokenizer files, ``eval_predictions.json`` (``{query_id: answer_text}``), ``all_results.json``
(``eval_exact_match``, ``eval_f1``, ...) and a model card ``README.md`` rendered from ``model_cards/template.md``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Iterator
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
from transformers.trainer_utils import get_last_checkpoint

try:
    from gesa import ABLATION_PRESETS
    from gesa.processing_gesa import GesaProcessor, to_record_examples
except ImportError as error:  # pragma: no cover - depends on the installation
    raise SystemExit(f"run_record.py needs the gesa package installed (pip install -e <gesa repo>): {error}") from None

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_TRAIN_FILE = ROOT / "examples" / "data" / "record_sample_train.jsonl"
SAMPLE_VALIDATION_FILE = ROOT / "examples" / "data" / "record_sample_dev.jsonl"
METRIC_FILE = ROOT / "metrics" / "record" / "record.py"
CARD_RENDERER_FILE = ROOT / "model_cards" / "render.py"
VARIANTS_FILE = ROOT / "examples" / "variants.py"
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
VARIANTS = load_module_by_path("gesa_record_variants", VARIANTS_FILE).VARIANTS
# Configs of this package's checkpoints resolve to its own classes here, so that reading a GESA/variant checkpoint's
# tokenizer (AutoTokenizer reads config.json, whose auto_map names remote code) neither prompts nor warns.
for _spec in VARIANTS.values():
    AutoConfig.register(_spec.config_class.model_type, _spec.config_class, exist_ok=True)


class RunRecordError(ValueError):
    """A problem with the arguments or the inputs, reported as one line before any training starts."""


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
        metadata={"help": "The model family (examples/variants.py). "
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
        metadata={"help": "When converting LUKE, keep its own w2e/e2w/e2e queries instead of copying the word query."},
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
    spacy_model: str = field(default="en_core_web_sm", metadata={"help": "spaCy NER pipeline for unannotated data."})


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
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    if not argv:
        argv = list(EMBEDDED_DEFAULT_ARGS)
        print("run_record.py: no arguments: embedded demo, i.e. python examples/run_record.py " + " ".join(argv))
    if len(argv) == 1 and argv[0].endswith(".json"):
        return parser.parse_json_file(json_file=os.path.abspath(argv[0]))
    return parser.parse_args_into_dataclasses(args=apply_paper_defaults(argv))


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
    if not (args.do_train or args.do_eval):
        raise RunRecordError("nothing to do: pass --do_train and/or --do_eval")
    if data_args.doc_stride < 1 or data_args.max_seq_length < 16 or data_args.max_query_length < 1:
        raise RunRecordError("--max_seq_length (>= 16), --doc_stride and --max_query_length (>= 1) must be positive")
    for name in ("max_train_samples", "max_eval_samples"):
        value = getattr(data_args, name)
        if value is not None and value < 1:
            raise RunRecordError(f"--{name} must be at least 1, got {value}")


# ----------------------------------------------------------------------------------------------- data


DATA_FILE_FLAGS = {"train": "--train_file", "validation": "--validation_file"}
DATA_FILE_FIX = "give a .json/.jsonl file of ReCoRD records (passage{text, entities} + qas) or rows (passage + query)"


def data_files(data_args: DataTrainingArguments, args: TrainingArguments) -> dict[str, Path]:
    """The local files per split; the embedded sample when neither a Hub dataset nor files are given."""
    if data_args.dataset_name:
        return {}
    if not (data_args.train_file or data_args.validation_file):
        return {"train": SAMPLE_TRAIN_FILE, "validation": SAMPLE_VALIDATION_FILE}
    files = {}
    for split, path, needed in (
        ("train", data_args.train_file, args.do_train),
        ("validation", data_args.validation_file, args.do_eval),
    ):
        if needed and path is None:
            raise RunRecordError(f"--do_{'train' if split == 'train' else 'eval'} needs --{split}_file")
        if path is not None:
            files[split] = Path(path)
    return files


def _json_items(path: Path, where: str) -> tuple[str | None, Iterator[tuple[str, Any]]]:
    """The JSON ``field`` to load and ``(location, item)`` pairs: ``line N`` of JSON lines, ``item N`` of a document."""
    with path.open(encoding="utf-8") as handle:
        first_line = next((line for line in handle if line.strip()), "")
    if not first_line:
        raise RunRecordError(f"{where} is empty; {DATA_FILE_FIX}")
    try:
        first = json.loads(first_line)
    except json.JSONDecodeError:
        first = None
    if first is not None and not isinstance(first, list) and not (isinstance(first, dict) and "data" in first):
        return None, _json_lines(path, where)  # JSON lines (a one-line document that is one record reads the same)
    try:  # a whole JSON document (possibly on one line)
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        if first is None and first_line.lstrip().startswith("{") and first_line.rstrip().endswith("}"):
            raise RunRecordError(f"{where}, line 1: not valid JSON ({error}); {DATA_FILE_FIX}") from None
        raise RunRecordError(f"{where} is neither JSON nor JSON lines ({error}); {DATA_FILE_FIX}") from None
    if isinstance(document, dict) and isinstance(document.get("data"), list):  # the original release: {"data": [...]}
        return "data", ((f"item {number} of 'data'", item) for number, item in enumerate(document["data"], 1))
    if isinstance(document, list):
        return None, ((f"item {number}", item) for number, item in enumerate(document, 1))
    kind = f"an object with keys {sorted(document)}" if isinstance(document, dict) else type(document).__name__
    raise RunRecordError(f"{where} is in no known shape: the document is {kind}; {DATA_FILE_FIX}")


def _json_lines(path: Path, where: str) -> Iterator[tuple[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as error:
                raise RunRecordError(f"{where}, line {number}: not valid JSON ({error}); fix or remove it") from None
            yield f"line {number}", item


def _item_shape(item: Any) -> str | None:
    """``"record"`` (passage + qas), ``"row"`` (passage + query) or ``None``."""
    if not isinstance(item, dict) or "passage" not in item:
        return None
    if "qas" in item:
        return "record"
    return "row" if "query" in item else None


def _without_batch_position(message: str) -> str:
    """``to_record_examples``'s message without its ``record #N:`` prefix (a position in the list it was given)."""
    return re.sub(r"^(record|input) #\d+: ", "", message)


def _item_problem(item: dict[str, Any], shape: str) -> str | None:
    """What makes ``item`` (of a known shape) unusable, or ``None``: the fields the processor reads, then a
    conversion with ``to_record_examples``."""
    passage = item["passage"]
    if shape == "record":
        if not (isinstance(passage, dict) and isinstance(passage.get("text"), str)):
            return "'passage' must be an object with 'text' (a string) and 'entities'"
        if not isinstance(item["qas"], list) or not all(isinstance(qa, dict) for qa in item["qas"]):
            return "'qas' must be a list of objects (query, answers)"
        queries = [qa.get("query") for qa in item["qas"]]
    else:
        if not (isinstance(passage, str) or (isinstance(passage, dict) and isinstance(passage.get("text"), str))):
            return "'passage' must be a string (or an object with 'text')"
        queries = [item["query"]]
    if not all(isinstance(query, str) for query in queries):
        return "every 'query' must be a string"
    try:
        to_record_examples([item])
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        if isinstance(error, KeyError):
            return f"a field {error} is missing"
        if isinstance(error, ValueError):
            return _without_batch_position(str(error))
        return f"a field has the wrong type ({error})"
    return None


def sniff_json_file(path: Path, flag: str = "--validation_file") -> str | None:
    """Check that ``path`` (given as ``flag``) holds ReCoRD data in one known shape, every item of it; return the
    JSON ``field`` to load (or ``None``). A problem is a ``RunRecordError`` naming the flag, the file and the line.

    Known shapes: JSON lines or a JSON list of original/SuperGLUE records (``passage`` + ``qas``) or of flattened
    rows (``passage`` + ``query``), or the original release's ``{"data": [records...]}`` object.
    """
    where = f"{flag} {path}"
    if not path.is_file():
        raise RunRecordError(f"{where} does not exist: give the path of an existing ReCoRD .json or .jsonl file")
    if path.suffix not in (".json", ".jsonl"):
        raise RunRecordError(f"{where} must be .json or .jsonl (ReCoRD records or rows), not {path.suffix!r}")
    field_name, items = _json_items(path, where)
    shape = None
    for location, item in items:
        item_shape = _item_shape(item)
        if item_shape is None:
            what = f"has keys {sorted(item)}" if isinstance(item, dict) else f"is a JSON {type(item).__name__}"
            raise RunRecordError(f"{where} is in no known shape: {location} {what}; {DATA_FILE_FIX}")
        if shape is None:
            shape = item_shape
        elif item_shape != shape:
            raise RunRecordError(f"{where}, {location}: a {item_shape} in a file of {shape}s; use one shape per file")
        problem = _item_problem(item, item_shape)
        if problem is not None:
            raise RunRecordError(f"{where}, {location}: {problem}; fix or remove that {shape}")
    if shape is None:
        raise RunRecordError(f"{where} holds no record; {DATA_FILE_FIX}")
    return field_name


def check_data_files(files: dict[str, Path]) -> dict[str, str | None]:
    """``sniff_json_file`` for every split's file (all of them before anything is loaded): split -> JSON field."""
    return {split: sniff_json_file(path, DATA_FILE_FLAGS[split]) for split, path in files.items()}


def flatten_records(batch: dict[str, list], indices: list[int] | None = None) -> dict[str, list]:
    """Any accepted shape -> one row per query: ``id``, ``passage``, ``query``, ``entity_spans``, ``answers``.

    ``entity_spans`` become ``{start, end, text}`` with an EXCLUSIVE ``end`` (``None`` when the input has no
    annotation: the processor then finds candidates with spaCy NER); ``answers`` are strings (``None`` when absent).
    A bad item is a ``ValueError`` naming its row of the dataset (``indices``, from ``map(with_indices=True)``).
    """
    keys = list(batch)
    items = [dict(zip(keys, values, strict=True)) for values in zip(*(batch[key] for key in keys), strict=True)]
    examples = []
    for offset, item in enumerate(items):
        try:
            examples.extend(to_record_examples([item]))
        except (ValueError, TypeError, KeyError) as error:
            row = indices[offset] if indices is not None else offset
            raise ValueError(f"row {row}: {_without_batch_position(str(error))}") from None
    out: dict[str, list] = {"id": [], "passage": [], "query": [], "entity_spans": [], "answers": []}
    for example in examples:
        out["id"].append(example.example_id)
        out["passage"].append(example.passage)
        out["query"].append(example.query)
        spans = None
        if example.entity_spans is not None:
            spans = [{"start": s, "end": e, "text": example.passage[s:e]} for s, e in example.entity_spans]
        out["entity_spans"].append(spans)
        out["answers"].append(example.answers)
    return out


def load_queries(
    data_args: DataTrainingArguments,
    model_args: ModelArguments,
    args: TrainingArguments,
    fields: dict[str, str | None] | None = None,
) -> dict[str, Dataset]:
    """The raw splits as one row per query (``flatten_records``), truncated to ``--max_*_samples``.

    ``fields``: ``check_data_files``'s answer for the local files, when the caller has checked them already.
    """
    splits: dict[str, Dataset] = {}
    sources: dict[str, str] = {}
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
    else:
        files = data_files(data_args, args)
        if fields is None:
            fields = check_data_files(files)  # every file checked first
        for split, path in files.items():
            if (split == "train" and args.do_train) or (split == "validation" and args.do_eval):
                sources[split] = f"{DATA_FILE_FLAGS[split]} {path}"
                splits[split] = load_dataset(
                    "json", data_files=str(path), field=fields[split], split="train", cache_dir=model_args.cache_dir
                )
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples}
    queries = {}
    for split, raw_split in splits.items():
        try:
            flat = raw_split.map(
                flatten_records,
                batched=True,
                with_indices=True,
                remove_columns=raw_split.column_names,
                num_proc=data_args.preprocessing_num_workers,
                load_from_cache_file=not data_args.overwrite_cache,
                desc=f"One row per query ({split})",
            )
        except ValueError as error:
            raise RunRecordError(f"{sources[split]}: {str(error).splitlines()[0]}") from None
        if limits[split] is not None:
            flat = flat.select(range(min(limits[split], len(flat))))
        if len(flat) == 0:
            raise RunRecordError(f"the {split} data holds no query")
        queries[split] = flat
    if "validation" in queries:
        check_references(queries["validation"])
    return queries


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


def check_checkpoint(model_args: ModelArguments, data_args: DataTrainingArguments) -> CheckedCheckpoint | None:
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
    vocabularies. The model is the variant's ``...ForEntitySpanQA`` (``examples/variants.py``).

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
    module = sys.modules[type(processor).__module__]
    source = Path(module.__file__).parent
    for name in (Path(module.__file__).name, "processing_gesa.py"):
        if (source / name).is_file():
            shutil.copyfile(source / name, Path(output_dir) / name)


# ----------------------------------------------------------------------------------------------- evaluation


class RecordEvaluator:
    """``compute_metrics`` for ``Trainer``: merge window scores per query, then the official ReCoRD metric.

    A feature is a window (GESA features: logits ``(B, E)`` over its ``candidate_texts``) or, for ``--variant xh``, a
    query's whole graph (logits ``(G, C)`` over the graph's ``candidate_texts``): ``merge_window_predictions`` takes
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
        merged = record_metric.merge_window_predictions(self.example_ids, self.candidate_texts, logits)
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
) -> dict[str, float]:
    """Train and/or evaluate; returns the metrics written to ``all_results.json``.

    ``callbacks`` are added to the ``Trainer``'s (``Trainer(callbacks=...)``), for runs started from Python.
    """
    check_arguments(model_args, data_args, args)
    files = data_files(data_args, args)
    fields = check_data_files(files)  # bad files and checkpoints fail here, before logging starts and any weights load
    checked = check_checkpoint(model_args, data_args)
    setup_logging(args)
    state = args.distributed_state
    logger.warning(
        f"Process rank {args.process_index} of {args.world_size}, device {args.device}, distributed "
        f"{state.distributed_type.value} (backend {state.backend}), bf16 {args.bf16}, fp16 {args.fp16}"
    )

    last_checkpoint = None
    if args.do_train and args.resume_from_checkpoint is None and os.path.isdir(args.output_dir):
        last_checkpoint = get_last_checkpoint(args.output_dir)
        if last_checkpoint is not None:
            logger.info(f"Resuming from {last_checkpoint} (found in --output_dir; pass a new --output_dir to restart)")
    set_seed(args.seed)

    with args.main_process_first(desc="loading the ReCoRD data"):
        queries = load_queries(data_args, model_args, args, fields)
    tokenizer_texts = []
    if model_args.model_name_or_path is None and not model_args.tokenizer_name:
        # The demo's tokenizer learns from the training text only: the evaluation text stays unseen.
        text_split = queries.get("train", queries.get("validation"))
        tokenizer_texts = [*dict.fromkeys(text_split["passage"]), *text_split["query"]]
    model, processor = build_model_and_processor(model_args, data_args, tokenizer_texts, checked)

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
        callbacks=callbacks,
        card_kwargs=card_kwargs,
    )
    # The ReCoRD loss is a mean over each batch's real candidates; it takes no `num_items_in_batch`.
    trainer.model_accepts_loss_kwargs = False

    if args.do_train:
        checkpoint = args.resume_from_checkpoint or last_checkpoint
        train_result = trainer.train(resume_from_checkpoint=checkpoint)
        trainer.save_model()  # config with auto_map, code files, safetensors, processor files
        if not VARIANTS[model_args.variant].uses_gesa_features and trainer.is_world_process_zero():
            copy_processor_code(processor, args.output_dir)
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
            os.makedirs(args.output_dir, exist_ok=True)
            with open(os.path.join(args.output_dir, "eval_predictions.json"), "w", encoding="utf-8") as handle:
                json.dump(evaluator.predictions, handle, ensure_ascii=False, indent=2)

    if args.push_to_hub:
        trainer.push_to_hub()  # renders the card (create_model_card) and uploads the output folder
    elif args.do_train:  # a checkpoint was saved: give it its card (an evaluation-only folder holds no model)
        trainer.create_model_card()
    results_path = Path(args.output_dir) / "all_results.json"
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.is_file() else {}
    if trainer.is_world_process_zero() and args.do_eval:
        print(result_line(len(queries["validation"]), results, trainer.state.log_history, args.output_dir))
    return results


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
        return run(model_args, data_args, training_args, callbacks)
    except RunRecordError as error:
        print(f"run_record.py: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()

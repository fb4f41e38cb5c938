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
"""Fine-tune GESA (or LUKE exactly, ``--variant luke``) on entity typing, relation classification or NER, or pre-train
it with masked words + masked entities (``--task pretrain``; ERNIE's dEA with ``--variant ernie``), in the shape of
transformers' run_qa.py::

    python examples/run_entity_tasks.py --task relation_classification --model_name_or_path studio-ousia/luke-base \
        --train_file tacred/train.json --validation_file tacred/dev.json --do_train --do_eval --output_dir out/tacred

Data: Open Entity crowd JSON lines (``entity_typing``), TACRED JSON (``relation_classification``), CoNLL-2003 column
files (``ner``), or a Hub dataset in those fields (``--dataset_name``). ``--task pretrain`` reads any of them
(``--pretrain_format``) for its mentions. Writes the model, ``all_results.json`` (micro P/R/F1 as fractions) and
``eval_predictions.json`` / ``predict_predictions.json`` (``[{"id", "prediction", "reference"}, ...]``). The task
interface is ``gesa.tasks_entity``; the heads per ``--variant`` come from the variant registry; argument checks, the
output-folder lock, resuming, the divergence guard and atomic result files from ``gesa.training_gesa``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
from transformers import HfArgumentParser, Trainer, TrainingArguments, set_seed

from gesa.processing_entity import EntityTaskProcessor
from gesa.tasks_entity import ENTITY_TASKS, PRETRAIN, encode_pretraining, load_model_and_tokenizer
from gesa.training_gesa import (
    FiniteTrainingGuard,
    OutputDirLock,
    ScriptArgumentError,
    check_training_arguments,
    disk_full,
    disk_full_error,
    one_error_line,
    parse_script_args,
    plan_resume,
    preflight_push_to_hub,
    setup_logging,
    write_json_atomically,
)

logger = logging.getLogger(__name__)
SCRIPT = "run_entity_tasks.py"
TASK_NAMES = [*ENTITY_TASKS, PRETRAIN.name]


@dataclass
class ModelArguments:
    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "A LUKE checkpoint (converted with from_luke_pretrained) or a checkpoint of this script."},
    )
    tokenizer_name: str | None = field(default=None, metadata={"help": "Tokenizer, if not the model's."})
    variant: str = field(
        default="gesa", metadata={"help": "gesa, luke (ablation='luke'), kar or ernie (pretrain: gesa, luke, ernie)."}
    )
    ablation: str | None = field(
        default=None, metadata={"help": "GESA ablation preset (GesaConfig.ABLATION_PRESETS)."}
    )
    cache_dir: str | None = field(default=None, metadata={"help": "Where to cache Hub downloads."})
    token: str | None = field(default=None, metadata={"help": "Hub token for private models and --push_to_hub."})


@dataclass
class DataArguments:
    task: str = field(default="entity_typing", metadata={"help": f"One of {TASK_NAMES}."})
    pretrain_format: str = field(
        default="ner", metadata={"help": f"--task pretrain: the format of its files, one of {sorted(ENTITY_TASKS)}."}
    )
    dataset_name: str | None = field(default=None, metadata={"help": "Hub dataset in the task's fields."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Hub configuration."})
    train_file: str | None = field(default=None, metadata={"help": "Training data in the task's public format."})
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data, same format."})
    test_file: str | None = field(default=None, metadata={"help": "Data to predict, same format."})
    max_seq_length: int = field(default=256, metadata={"help": "Word tokens per feature."})
    max_span_length: int = field(default=16, metadata={"help": "NER: longest candidate span, in words."})
    max_entities: int = field(default=128, metadata={"help": "NER: candidate spans per feature."})
    mlm_probability: float = field(default=0.15, metadata={"help": "--task pretrain: share of words masked."})
    entity_mask_probability: float = field(default=0.15, metadata={"help": "pretrain: share of entities masked."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep the first N training examples."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep the first N evaluation examples."})
    overwrite_output_dir: bool = field(default=False, metadata={"help": "Replace a model already in --output_dir."})


def check_arguments(model_args: ModelArguments, data_args: DataArguments, args: TrainingArguments) -> None:
    """Everything knowable from the flags, as one ``ScriptArgumentError`` naming the flag."""
    if data_args.task not in TASK_NAMES:
        raise ScriptArgumentError(f"--task {data_args.task!r} is unknown; choose one of {TASK_NAMES}")
    if data_args.task == PRETRAIN.name and data_args.pretrain_format not in ENTITY_TASKS:
        raise ScriptArgumentError(
            f"--pretrain_format {data_args.pretrain_format!r} is unknown; choose one of {sorted(ENTITY_TASKS)}"
        )
    try:
        (ENTITY_TASKS.get(data_args.task) or PRETRAIN).head_for(model_args.variant)
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None
    if model_args.model_name_or_path is None:
        raise ScriptArgumentError("--model_name_or_path is needed: a LUKE checkpoint, or a checkpoint of this script")
    if not (args.do_train or args.do_eval or args.do_predict):
        raise ScriptArgumentError("nothing to do: pass --do_train, --do_eval and/or --do_predict")
    if data_args.task == PRETRAIN.name and args.do_predict:
        raise ScriptArgumentError(
            "--task pretrain has nothing to predict: drop --do_predict (--do_eval gives the loss)"
        )
    for wanted, flag in (
        (args.do_train, "train_file"),
        (args.do_eval, "validation_file"),
        (args.do_predict, "test_file"),
    ):
        if wanted and getattr(data_args, flag) is None and data_args.dataset_name is None:
            doing = {"train_file": "--do_train", "validation_file": "--do_eval", "test_file": "--do_predict"}[flag]
            raise ScriptArgumentError(f"{doing} needs --{flag} (or --dataset_name)")
    for name in ("max_seq_length", "max_span_length", "max_entities"):
        if getattr(data_args, name) < 1:
            raise ScriptArgumentError(f"--{name} must be at least 1, got {getattr(data_args, name)}")
    for name in ("mlm_probability", "entity_mask_probability"):
        if not 0.0 < getattr(data_args, name) <= 1.0:
            raise ScriptArgumentError(f"--{name} must lie in (0, 1], got {getattr(data_args, name)}")
    check_training_arguments(args)


def load_split(task: Any, data_args: DataArguments, model_args: ModelArguments, split: str) -> list[Any]:
    """The examples of one split, from its file flag or the Hub dataset, checked by the task's reader."""
    flag = {"train": "train_file", "validation": "validation_file", "test": "test_file"}[split]
    limit = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples}.get(split)
    try:
        if getattr(data_args, flag) is not None:
            examples = task.load_file(getattr(data_args, flag), f"--{flag}")
        else:
            rows = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, split=split,
                                         cache_dir=model_args.cache_dir, token=model_args.token)  # fmt: skip
            tags = rows.features.get("ner_tags")
            names = getattr(getattr(tags, "feature", None), "names", None)
            examples = task.load_rows(rows, f"--dataset_name {data_args.dataset_name} ({split})", names)
    except ValueError as error:
        raise ScriptArgumentError(str(error).splitlines()[0]) from None
    if not examples:
        raise ScriptArgumentError(f"the {split} data holds no example")
    return examples[:limit] if limit is not None else examples


def featurise(processor: EntityTaskProcessor, examples: list[Any], split: str) -> list[dict[str, Any]]:
    try:
        return processor.encode_all(examples)
    except ValueError as error:
        raise ScriptArgumentError(f"{split} data: {str(error).splitlines()[0]}") from None


def evaluate_split(task: Any, trainer: Trainer, processor: Any, examples: list, features: list, split: str) -> dict:
    """Predict ``features``, decode one prediction per example, score it and write ``<split>_predictions.json``."""
    output = trainer.predict(datasets.Dataset.from_list(features), metric_key_prefix=split)
    predictions = task.decode(examples, features, output.predictions, processor.label_names)
    scores = task.score(predictions, [task.reference(example) for example in examples])
    metrics = {f"{split}_{name}": value for name, value in scores.items()}
    metrics[f"{split}_samples"] = len(examples)
    if f"{split}_loss" in output.metrics:
        metrics[f"{split}_loss"] = output.metrics[f"{split}_loss"]
    if trainer.is_world_process_zero():
        path = Path(trainer.args.output_dir) / f"{split}_predictions.json"
        write_json_atomically(path, task.prediction_rows(examples, predictions))
    return metrics


def run(model_args: ModelArguments, data_args: DataArguments, args: TrainingArguments) -> dict[str, float]:
    """Train, evaluate and/or predict; returns the metrics of ``all_results.json``."""
    check_arguments(model_args, data_args, args)
    preflight_push_to_hub(args, model_args.token)
    # one live run per output folder (process 0 holds it; a dead run's lock is released by the kernel)
    with OutputDirLock(args.output_dir) if args.process_index == 0 else contextlib.nullcontext():
        return _run(model_args, data_args, args)


def _run(model_args: ModelArguments, data_args: DataArguments, args: TrainingArguments) -> dict[str, float]:
    resume = plan_resume(args, data_args.overwrite_output_dir)
    setup_logging(args, logger)
    for problem in resume.skipped:
        logger.warning(f"Not resuming from an incomplete checkpoint: {problem}")
    set_seed(args.seed)
    pretraining = data_args.task == PRETRAIN.name
    task = ENTITY_TASKS[data_args.pretrain_format if pretraining else data_args.task]
    wanted = {"train": args.do_train, "validation": args.do_eval, "test": args.do_predict}
    with args.main_process_first(desc="reading the data"):
        examples = {split: load_split(task, data_args, model_args, split) for split, on in wanted.items() if on}
    overrides = {} if model_args.ablation is None else {"ablation": model_args.ablation}
    try:
        model, tokenizer, labels = load_model_and_tokenizer(
            data_args.task, model_args.variant, model_args.model_name_or_path, examples, model_args.tokenizer_name,
            {"cache_dir": model_args.cache_dir, "token": model_args.token}, args.seed, **overrides,
        )  # fmt: skip
    except (OSError, ValueError) as error:  # a checkpoint that does not fit (task, variant, labels, entity table)
        raise ScriptArgumentError(f"--model_name_or_path {model_args.model_name_or_path}: {error}") from None
    if pretraining:
        features = {split: encode_pretraining(tokenizer, items, data_args.max_seq_length)
                    for split, items in examples.items()}  # fmt: skip
        collator = PRETRAIN.make_collator(model_args.variant, tokenizer, model, seed=args.seed,
                                          mlm_probability=data_args.mlm_probability,
                                          entity_mask_probability=data_args.entity_mask_probability)  # fmt: skip
    else:
        processor = EntityTaskProcessor(tokenizer, task.name, labels, data_args.max_seq_length,
                                        data_args.max_span_length, data_args.max_entities)  # fmt: skip
        features = {split: featurise(processor, items, split) for split, items in examples.items()}
        collator = task.make_collator(model_args.variant, processor, tokenizer)
    args.remove_unused_columns = False  # the collators drop what the model does not read
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=datasets.Dataset.from_list(features["train"]) if "train" in features else None,
        eval_dataset=datasets.Dataset.from_list(features["validation"]) if pretraining and args.do_eval else None,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=[FiniteTrainingGuard()] if args.do_train else None,
    )
    results: dict[str, float] = {}
    if args.do_train:
        try:
            train_result = trainer.train(resume_from_checkpoint=resume.checkpoint)
            trainer.save_model()  # config with auto_map, the code files, weights, tokenizer
        except (OSError, RuntimeError) as error:
            if disk_full(error, args.output_dir):
                raise disk_full_error(error, args.output_dir, "saving a checkpoint or the model") from None
            raise
        metrics = {**train_result.metrics, "train_samples": len(examples["train"])}
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
        results.update(metrics)
    if args.do_eval:
        if pretraining:
            metrics = {**trainer.evaluate(), "eval_samples": len(examples["validation"])}
        else:
            metrics = evaluate_split(task, trainer, processor, examples["validation"], features["validation"], "eval")
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        results.update(metrics)
    if args.do_predict:
        metrics = evaluate_split(task, trainer, processor, examples["test"], features["test"], "predict")
        trainer.log_metrics("predict", metrics)
        trainer.save_metrics("predict", metrics)
    if args.push_to_hub and args.do_train:
        trainer.push_to_hub(finetuned_from=model_args.model_name_or_path)
    return results


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    with one_error_line(SCRIPT):
        results = run(*parse_script_args(parser, argv, SCRIPT))
    print(json.dumps({key: value for key, value in results.items() if key.startswith("eval_")}))
    return results


if __name__ == "__main__":
    main()

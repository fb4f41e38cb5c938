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
"""Fine-tune GESA, LUKE or LUKE-Graph on a multi-hop task (``--task wikihop``), in the shape of transformers' run_qa.py.

Run with no arguments, the script trains a tiny model converted from a tiny random LUKE (byte-level BPE trained
offline on the sample) on an embedded WikiHop-format sample (invented two-hop records) and evaluates it: a pipeline
check, not a benchmark. Typical use::

    python examples/run_multihop.py --task wikihop --model_name_or_path studio-ousia/luke-large \
        --train_file train.json --validation_file dev.json --do_train --do_eval \
        --max_seq_length 4096 --attention_window 256 --output_dir out/wikihop-gesa

Writes ``eval_predictions.json`` (``{id: candidate}``), ``all_results.json`` (``eval_accuracy`` in percent) and,
with ``--do_predict --test_file``, ``predict_predictions.json`` (``{id: [{"answer", "score"}, ...]}`` best first,
probabilities). The task interface (readers, processors, heads per variant, ranking, metric) is
``gesa.tasks_multihop``; the variants' config overrides come from the variant registry.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
from transformers import HfArgumentParser, Trainer, TrainingArguments, set_seed

import gesa.tasks_xh  # noqa: F401  (registers --task hotpotqa and fever)
from gesa.loading_gesa import load_tokenizer
from gesa.modeling_gesa_multiple_choice import extend_position_embeddings
from gesa.registry_gesa import VARIANTS
from gesa.structure_gesa import LUKE_MASK_ENTITY_ID
from gesa.tasks_multihop import (
    MULTIHOP_TASKS,
    build_demo_luke,
    entity_rows,
    make_wikihop_sample,
    sample_texts,
    write_wikihop_file,
)
from gesa.training_gesa import (
    FiniteTrainingGuard,
    OutputDirLock,
    ScriptArgumentError,
    check_resume_fits,
    check_run_arguments,
    checkpoint_config,
    featurise_rows,
    one_error_line,
    parse_script_args,
    plan_resume,
    preflight_push_to_hub,
    setup_logging,
    train_and_save,
    write_json_atomically,
)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "A LUKE checkpoint (converted with from_luke_pretrained) or a checkpoint of this script. "
                  "Default: a tiny random LUKE built offline (demo)."},
    )  # fmt: skip
    tokenizer_name: str | None = field(default=None, metadata={"help": "Tokenizer, if not the model's."})
    variant: str = field(default="gesa", metadata={"help": "gesa, luke (plain LUKE, same window) or luke_graph."})
    ablation: str | None = field(
        default=None, metadata={"help": "GESA ablation preset (GesaConfig.ABLATION_PRESETS)."}
    )
    attention_window: int | None = field(
        default=256, metadata={"help": "Local word window (each side); query words and entities are global."}
    )
    cache_dir: str | None = field(default=None, metadata={"help": "Where to cache Hub downloads."})


@dataclass
class DataArguments:
    task: str = field(default="wikihop", metadata={"help": f"One of {sorted(MULTIHOP_TASKS)}."})
    dataset_name: str | None = field(default=None, metadata={"help": "Hub dataset, e.g. qangaroo."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Hub configuration, e.g. wikihop."})
    train_file: str | None = field(default=None, metadata={"help": "QAngaroo JSON list or JSON lines."})
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data, same shapes."})
    test_file: str | None = field(default=None, metadata={"help": "Records to predict (answers not needed)."})
    max_seq_length: int = field(default=4096, metadata={"help": "Words of the one sequence per query."})
    max_query_length: int = field(default=64, metadata={"help": "Query tokens kept."})
    max_entities: int = field(default=1024, metadata={"help": "Entities per query: query, candidates, mentions."})
    max_mention_length: int = field(default=30, metadata={"help": "Word positions kept per mention."})
    wiki_pages: str | None = field(
        default=None, metadata={"help": "FEVER: wiki-pages JSON-lines files (comma-separated) holding the evidence."}
    )
    max_nodes: int | None = field(default=None, metadata={"help": "XH tasks: nodes kept per graph (FEVER: 5)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep the first N training records."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep the first N evaluation records."})
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Train into an --output_dir that holds a finished model (replacing it) instead of stopping "
                  "with an error. (Checkpoints there are resumed unless --resume_from_checkpoint says otherwise.)"},
    )  # fmt: skip


DEMO_ARGS = [
    "--output_dir", "outputs/gesa-tiny-wikihop", "--do_train", "--do_eval", "--do_predict",
    "--max_seq_length", "512", "--attention_window", "64", "--num_train_epochs", "30",
    "--per_device_train_batch_size", "8", "--learning_rate", "3e-3", "--logging_steps", "10",
    "--save_strategy", "no", "--overwrite_output_dir", "true", "--report_to", "none", "--seed", "0",
]  # fmt: skip


def parse_args(argv: list[str]) -> tuple[ModelArguments, DataArguments, TrainingArguments]:
    """HfArgumentParser over the three dataclasses (or a JSON file of flags); bad flags are one error line."""
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments), description=__doc__)
    return parse_script_args(parser, argv, "run_multihop.py")


def check_arguments(model_args: ModelArguments, data_args: DataArguments, args: TrainingArguments) -> None:
    """Argument combinations that cannot work, as ``ScriptArgumentError`` (before anything is loaded)."""
    if data_args.task not in MULTIHOP_TASKS:
        raise ScriptArgumentError(f"--task {data_args.task!r} is unknown; choose one of {sorted(MULTIHOP_TASKS)}")
    try:
        MULTIHOP_TASKS[data_args.task].head_for(model_args.variant)
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None
    check_run_arguments(args)
    for flag, wanted, given in (
        ("--do_train", args.do_train, data_args.train_file or data_args.dataset_name),
        ("--do_eval", args.do_eval, data_args.validation_file or data_args.dataset_name),
        ("--do_predict", args.do_predict, data_args.test_file or data_args.dataset_name),
    ):
        if wanted and not given:
            name = {"--do_train": "--train_file", "--do_eval": "--validation_file", "--do_predict": "--test_file"}
            raise ScriptArgumentError(f"{flag} needs {name[flag]} (or --dataset_name)")


def load_split(task: Any, data_args: DataArguments, model_args: ModelArguments, split: str) -> list[Any]:
    """Examples of one split, from the file flag or the Hub dataset, checked by the task's reader."""
    flag = {"train": "train_file", "validation": "validation_file", "test": "test_file"}[split]
    path = getattr(data_args, flag)
    try:
        if path is not None:
            return task.load_file(path, f"--{flag} {path}")
        rows = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, split=split,
                                     cache_dir=model_args.cache_dir)  # fmt: skip
        return task.load_rows(rows, f"--dataset_name {data_args.dataset_name} ({split})")
    except ValueError as error:  # the task's reader names the file, the record and the fix
        raise ScriptArgumentError(str(error).strip().splitlines()[0]) from None


def build_model(model_args: ModelArguments, data_args: DataArguments, task: Any, tokenizer: Any) -> Any:
    """The variant's head for the task: converted from LUKE, or loaded from a checkpoint of this script."""
    head = task.head_for(model_args.variant)
    spec = dataclasses.replace(VARIANTS[model_args.variant], model_class=head)
    expected = spec.config_class.model_type
    hub = {"cache_dir": model_args.cache_dir}
    saved = checkpoint_config(model_args.model_name_or_path, f"a LUKE or {expected!r}", **hub)
    overrides: dict[str, Any] = {"attention_window": model_args.attention_window}
    if model_args.ablation is not None:
        overrides["ablation"] = model_args.ablation
    if saved.get("model_type") == "luke":
        model = spec.from_luke(model_args.model_name_or_path, entity_rows=entity_rows(tokenizer), hub=hub, **overrides)
    else:
        if saved.get("model_type") != expected or saved.get("architectures", [head.__name__])[0] != head.__name__:
            raise ScriptArgumentError(
                f"--model_name_or_path {model_args.model_name_or_path} holds a {saved.get('model_type')!r} model "
                f"({saved.get('architectures')}), but --task {task.name} --variant {model_args.variant} needs a "
                f"{expected!r} {head.__name__}: pass the --variant it was trained with, or a LUKE checkpoint to convert"
            )
        model = spec.from_checkpoint(model_args.model_name_or_path, hub=hub)
        model.config.attention_window = model_args.attention_window
    # absolute positions (LUKE, LUKE-Graph, presets with entity positions) must reach the longest sequence
    extend_position_embeddings(model, data_args.max_seq_length + (model.config.pad_token_id or 0) + 1)
    return model


def ranked_predictions(task: Any, trainer: Trainer, features: datasets.Dataset) -> dict[str, list[dict[str, Any]]]:
    output = trainer.predict(features.remove_columns([c for c in task.eval_columns if c in features.column_names]))
    return task.rank(features["example_id"], features["candidate_texts"], output.predictions)


def run(model_args: ModelArguments, data_args: DataArguments, args: TrainingArguments) -> dict[str, float]:
    """Train, evaluate and/or predict; returns the metrics (also in ``all_results.json``)."""
    check_arguments(model_args, data_args, args)
    preflight_push_to_hub(args)
    # one live run per output folder (process 0 holds it; a dead run's lock is released by the kernel)
    with OutputDirLock(args.output_dir) if args.process_index == 0 else contextlib.nullcontext():
        return _run(model_args, data_args, args)


def _run(model_args: ModelArguments, data_args: DataArguments, args: TrainingArguments) -> dict[str, float]:
    """``run`` once the arguments are checked and the output folder is this run's."""
    task = MULTIHOP_TASKS[data_args.task]
    splits = {"train": args.do_train, "validation": args.do_eval, "test": args.do_predict}
    examples = {split: load_split(task, data_args, model_args, split) for split, wanted in splits.items() if wanted}
    if args.do_train:
        unlabelled = [example.example_id for example in examples["train"] if task.reference(example) is None]
        if unlabelled:
            raise ScriptArgumentError(f"--train_file has records without 'answer' (e.g. {unlabelled[0]!r}): they "
                                      "cannot be trained on; give their answers or pass them as --test_file")  # fmt: skip
    resume = plan_resume(args, data_args.overwrite_output_dir)
    setup_logging(args, logger)  # after the input errors, which stay the run's one line
    for problem in resume.skipped:
        logger.warning(f"Not resuming from an incomplete checkpoint: {problem}")
    set_seed(args.seed)
    tokenizer = load_tokenizer(
        model_args.tokenizer_name or model_args.model_name_or_path, cache_dir=model_args.cache_dir
    )
    settings = {name: getattr(data_args, name) for name in task.processor_settings}
    try:
        processor = task.make_processor(tokenizer, **settings, entity_mask_id=LUKE_MASK_ENTITY_ID)
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None
    model = build_model(model_args, data_args, task, tokenizer)
    if resume.checkpoint is not None:
        check_resume_fits(resume.checkpoint, model)
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples}
    features = {
        split: featurise_rows(datasets.Dataset.from_dict(task.to_columns(items[: limits.get(split)])),
                              processor.map_function, split)
        for split, items in examples.items()
    }  # fmt: skip
    args.remove_unused_columns = True
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=features.get("train"),
        data_collator=processor.get_data_collator(),
        processing_class=tokenizer,
        callbacks=[FiniteTrainingGuard()] if args.do_train else None,
    )
    output_dir = Path(args.output_dir)
    results: dict[str, float] = {}
    if args.do_train:
        train_result = train_and_save(trainer, resume.checkpoint)
        processor.save_pretrained(args.output_dir)
        metrics = {**train_result.metrics, "train_samples": len(features["train"])}
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
        results.update(metrics)
    if args.do_eval and task.predict is not None:  # answers that are not one ranked candidate (hotpotqa, fever)
        validation = examples["validation"][: data_args.max_eval_samples]
        predictions = task.predict(model, processor, validation)
        metrics = {f"eval_{name}": value for name, value in task.score_predictions(predictions, validation).items()}
        metrics["eval_samples"] = len(predictions)
        task.write_predictions(predictions, output_dir, "eval")
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        results.update(metrics)
    elif args.do_eval:
        ranked = ranked_predictions(task, trainer, features["validation"])
        predictions = {example_id: answers[0]["answer"] for example_id, answers in ranked.items()}
        references = {example.example_id: task.reference(example) for example in examples["validation"]
                      if example.example_id in ranked and task.reference(example) is not None}  # fmt: skip
        metrics = {f"eval_{name}": value for name, value in task.score(predictions, references).items()}
        metrics["eval_samples"] = len(predictions)
        write_json_atomically(output_dir / "eval_predictions.json", predictions)
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        results.update(metrics)
    if args.do_predict and task.predict is not None:
        path = task.write_predictions(task.predict(model, processor, examples["test"]), output_dir, "predict")
        logger.info(f"wrote the predictions to {path}")
    elif args.do_predict:
        ranked = ranked_predictions(task, trainer, features["test"])
        write_json_atomically(output_dir / "predict_predictions.json", ranked)
        logger.info(f"wrote {len(ranked)} ranked predictions to {output_dir / 'predict_predictions.json'}")
    if args.push_to_hub and args.do_train:
        trainer.push_to_hub(finetuned_from=model_args.model_name_or_path, tasks="multiple-choice")
    return results


def demo_argv(directory: Path) -> list[str]:
    """Arguments of the no-argument demo: files of the embedded sample and a tiny LUKE built offline there."""
    train, evaluation = make_wikihop_sample(48, seed=1), make_wikihop_sample(16, seed=2)
    test = make_wikihop_sample(4, seed=3, labelled=False)
    luke = build_demo_luke(directory / "tiny-luke", sample_texts(train + evaluation + test))
    return [
        "--model_name_or_path", str(luke),
        "--train_file", str(write_wikihop_file(directory / "train.json", train)),
        "--validation_file", str(write_wikihop_file(directory / "dev.json", evaluation)),
        "--test_file", str(write_wikihop_file(directory / "test.jsonl", test, json_lines=True)),
        *DEMO_ARGS,
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with tempfile.TemporaryDirectory(prefix="gesa-wikihop-demo-") as scratch, one_error_line("run_multihop.py"):
        if not argv:
            argv = demo_argv(Path(scratch))
        model_args, data_args, args = parse_args(argv)
        results = run(model_args, data_args, args)
    print(json.dumps({key: value for key, value in results.items() if key.startswith("eval_")}))
    return results


if __name__ == "__main__":
    main()

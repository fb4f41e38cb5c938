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
"""The one driver of every example script: ``run_task(task, model_args, data_args, training_args, script)``, and
the one argument handling of the scripts (``ExampleScript``: its demo, its parsing, its ``main``).

A run either works or ends with ONE ``<script>: error: ...`` line (exit status 2) before any weight is loaded, and it
never loses or silently corrupts a result. In order:

1. the flags every script shares (``BaseModelArguments``, ``BaseDataArguments``, ``TrainingArguments``) and the
   task's own (``Task.check_arguments``) are checked; ``--push_to_hub`` finds a token and the Hub;
2. the output folder is locked for this run (``OutputDirLock``, process 0);
3. every split's data is read and checked in full (``Task.read_file`` / ``read_hub``; ``--max_*_samples``), training
   data must be labelled, evaluation data labelled with unique ids;
4. the checkpoint to resume is chosen (``plan_resume``; ``--resume_from_checkpoint false``: none) and must be of this
   run's model;
5. the model, its processor and tokenizer are loaded (``Task.load``: the checkpoint's config and tokenizer are
   checked before any weight loads);
6. logging starts; the features are made (``Task.featurise``); a training run removes the folder's discarded
   checkpoints and an earlier run's results (``remove_earlier_results``); ``Trainer`` trains (``FiniteTrainingGuard``
   stops a diverged run before it saves), saves the model with its processor (a full disk is one error line), evaluates
   (``TaskEvaluator``: the task's decoding and official metric) and predicts;
7. every result file is written atomically; the run ends with one summary line (task, metric before and after
   training, chance level where the task has one, output folder).

A script given no data runs its demo (``ExampleScript``): into a new, empty or earlier demo's folder only
(``check_demo_folder``), named ``outputs/<variant>-tiny-<task>`` after the variant it trains, saying how long it takes
(``demo_seconds``, measured).

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import Trainer, TrainerCallback, TrainingArguments, set_seed

from ..configuration_gesa import ABLATION_PRESETS
from .components import ComponentTrainer, run_composite
from .machinery import (
    GIVEN,
    FiniteTrainingGuard,
    HeldLogs,
    OutputDirLock,
    PlainFileModes,
    ScriptArgumentError,
    check_demo_folder,
    check_output_dir_given,
    check_resume_fits,
    check_run_arguments,
    demo_data_folder,
    discard_checkpoints,
    disk_full,
    disk_full_error,
    explicit_flags,
    keeps_checkpoints,
    no_pin_memory_without_accelerator,
    one_error_line,
    parse_script_args,
    plan_resume,
    preflight_push_to_hub,
    read_by,
    remove_earlier_results,
    remove_resume_checkpoints,
    script_parser,
    setup_logging,
    starts_fresh,
    train_and_save,
    write_text_atomically,
)
from .models import check_resume_config
from .task import Task, TaskEvaluator

logger = logging.getLogger(__name__)

# the longest --max_seq_length any script takes: 16x the paper's 4096-word WikiHop sequences
MAX_SEQ_LENGTH = 65536
SPLIT_FLAGS = {"train": "train_file", "validation": "validation_file", "test": "test_file"}
# what --preprocessing_num_workers / --overwrite_cache are read for (said when a task that does not read them gets one)
MAP_WORKERS = "the workers and cache files of ReCoRD's datasets.map featurising; the other tasks featurise in the run"
DO_FLAGS = {"train": "--do_train", "validation": "--do_eval", "test": "--do_predict"}


@dataclass
class BaseModelArguments:
    """The model flags every script takes (a script subclasses this to add its own or reword the help)."""

    _argument_group_name = "model"  # the --help group of these flags (HfArgumentParser)

    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "A LUKE checkpoint (Hub id or folder; converted with from_luke_pretrained) or a checkpoint "
                  "this script trained (loaded as is)."},
    )  # fmt: skip
    tokenizer_name: str | None = field(
        default=None, metadata={"help": "Tokenizer to use instead of the checkpoint's own (Hub id or folder)."}
    )
    variant: str = field(default="gesa", metadata={"help": "The model family (gesa.training.registry)."})
    ablation: str | None = field(
        default=None, metadata={"help": "A row of the GESA paper's ablation tables (GesaConfig presets)."}
    )
    cache_dir: str | None = field(default=None, metadata={"help": "Where to cache Hub downloads."})
    model_revision: str = field(default="main", metadata={"help": "Branch, tag or commit of the checkpoint."})
    token: str | None = field(default=None, metadata={"help": "Hub token for private checkpoints or datasets."})


@dataclass
class BaseDataArguments:
    """The data flags every script takes."""

    _argument_group_name = "data"
    # the runs that read a flag (the others refuse it: training.machinery.read_by); the scripts' subclasses add theirs
    flags_read_by = {
        "dataset_config_name": read_by(dataset_name=GIVEN),
        "preprocessing_num_workers": read_by(task="record", why=MAP_WORKERS),
        "overwrite_cache": read_by(task="record", why=MAP_WORKERS),
    }

    dataset_name: str | None = field(default=None, metadata={"help": "Hub dataset in the task's fields."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Hub dataset configuration."})
    train_file: str | None = field(default=None, metadata={"help": "Training data in the task's public format."})
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data, same format."})
    test_file: str | None = field(
        default=None, metadata={"help": "Data to predict with --do_predict, same format (answers not needed)."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep the first N training examples."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep the first N evaluation examples."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Keep the first N test examples."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for featurising."})
    overwrite_cache: bool = field(default=False, metadata={"help": "Recompute cached features."})
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Train into an --output_dir that holds a finished model (replacing it) instead of stopping "
                  "with an error. (Checkpoints there are resumed unless --resume_from_checkpoint says otherwise.)"},
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------- arguments


def check_arguments(task: Task, model_args: Any, data_args: Any, args: TrainingArguments) -> None:
    """The flags every script shares, then the task's own (``Task.check_arguments``): ``ScriptArgumentError``."""
    try:
        task.head_for(model_args.variant)
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None
    ablation = getattr(model_args, "ablation", None)
    if ablation is not None and ablation not in ABLATION_PRESETS:
        raise ScriptArgumentError(f"--ablation {ablation!r} is unknown; choose one of {sorted(ABLATION_PRESETS)}")
    if data_args.dataset_name and (data_args.train_file or data_args.validation_file or data_args.test_file):
        raise ScriptArgumentError("give either --dataset_name or --train_file/--validation_file/--test_file, not both")
    check_run_arguments(args)
    for name in ("max_train_samples", "max_eval_samples", "max_predict_samples"):
        value = getattr(data_args, name, None)
        if value is not None and value < 1:
            raise ScriptArgumentError(f"--{name} must be at least 1 (or left out to keep every example), got {value}")
    for name in ("max_seq_length", "max_query_length"):  # every script's length flags (where it has them)
        value = getattr(data_args, name, None)
        if value is not None and value < 1:
            raise ScriptArgumentError(f"--{name} must be at least 1 token, got {value}")
        if value is not None and value > MAX_SEQ_LENGTH:
            raise ScriptArgumentError(
                f"--{name} must be at most {MAX_SEQ_LENGTH} tokens, got {value} (longer sequences' position tables "
                "and attention do not fit in memory)"
            )
    workers = data_args.preprocessing_num_workers
    if workers is not None and workers < 1:
        raise ScriptArgumentError(f"--preprocessing_num_workers must be at least 1 (or left out), got {workers}")
    if args.do_predict and not args.do_train and model_args.model_name_or_path is None:
        raise ScriptArgumentError("--do_predict without --do_train needs --model_name_or_path (a trained checkpoint)")
    task.check_arguments(model_args, data_args, args)


def data_files(data_args: Any, args: TrainingArguments, default_files: Mapping[str, Path] | None) -> dict[str, Path]:
    """The local file of every split the run needs (``{split: path}``); ``default_files`` (a script's embedded
    sample) when the command line names neither a Hub dataset nor training/evaluation files. A needed split with
    neither a file nor a Hub dataset is a ``ScriptArgumentError`` naming the flag."""
    wanted = {"train": args.do_train, "validation": args.do_eval, "test": args.do_predict}
    files: dict[str, Path] = {}
    use_defaults = default_files is not None and not (
        data_args.dataset_name or data_args.train_file or data_args.validation_file
    )
    for split, needed in wanted.items():
        path = getattr(data_args, SPLIT_FLAGS[split])
        if path is None and use_defaults:
            path = default_files.get(split)
        if path is not None and needed:
            files[split] = Path(path)
        elif needed and not data_args.dataset_name:
            raise ScriptArgumentError(f"{DO_FLAGS[split]} needs --{SPLIT_FLAGS[split]} (or --dataset_name)")
    return files


# ----------------------------------------------------------------------------------------------- data


def read_splits(task: Task, model_args: Any, data_args: Any, args: TrainingArguments, files: dict[str, Path]) -> dict:
    """Every split the run needs, read and checked in full (``--max_*_samples`` applied), before anything loads."""
    wanted = {"train": args.do_train, "validation": args.do_eval, "test": args.do_predict}
    limits = {"train": "max_train_samples", "validation": "max_eval_samples", "test": "max_predict_samples"}
    examples = {}
    for split, needed in wanted.items():
        if not needed:
            continue
        flag = f"--{SPLIT_FLAGS[split]}"
        try:
            if split in files:
                read = task.read_file(files[split], f"{flag} {files[split]}", split, data_args, model_args)
                where = f"{flag} {files[split]}"
            else:
                where = f"--dataset_name {data_args.dataset_name} ({split} split)"
                read = read_hub_split(task, data_args, model_args, split)
        except ValueError as error:  # the reader names the flag, the file, the line, the record and the fix
            if isinstance(error, ScriptArgumentError):
                raise
            raise ScriptArgumentError(first_line(error)) from None
        read = task.limit(read, getattr(data_args, limits[split], None))
        if len(read) == 0:
            raise ScriptArgumentError(f"{where} holds no {task.item}")
        check_split_labels(task, split, read, where)
        examples[split] = read
    return examples


def read_hub_split(task: Task, data_args: Any, model_args: Any, split: str) -> Any:
    """``task.read_hub``; a dataset that cannot be found or reached (offline, a misspelt name, a missing split) is one
    ``ScriptArgumentError`` naming ``--dataset_name`` and the fix."""
    try:
        with HeldLogs() as held:  # the Hub's retries: shown when the split comes, not before the error line
            rows = task.read_hub(data_args, model_args, split)
        held.replay()
        return rows
    except (ConnectionError, OSError) as error:
        name = data_args.dataset_name
        config = f" --dataset_config_name {data_args.dataset_config_name}" if data_args.dataset_config_name else ""
        raise ScriptArgumentError(
            f"--dataset_name {name}{config}: cannot load its {split} split ({first_line(error)}); check the name and "
            "the network (HF_DATASETS_OFFLINE), or give --train_file/--validation_file/--test_file"
        ) from None


def check_split_labels(task: Task, split: str, examples: Any, where: str) -> None:
    """Training examples need their gold answers (one without would train as all negative); evaluation examples too
    (there is nothing to score against otherwise), and ids that no two share; test ids must be unique as well."""
    seen: set[str] = set()
    for example in examples:
        example_id = task.example_id(example)
        if split != "train":
            if example_id in seen:
                raise ScriptArgumentError(
                    f"{where}: the id {example_id!r} is used twice; give every {task.item} its own id (their "
                    "predictions would be merged)"
                )
            seen.add(example_id)
        if split == "test" or task.reference(example) is not None:
            continue
        gold = task.reference_name
        if split == "train":
            raise ScriptArgumentError(
                f"{where}: {task.title} {task.item} {example_id!r} has no gold {gold}: it cannot be trained on; "
                f"give its {gold} or pass the file as --test_file"
            )
        raise ScriptArgumentError(
            f"{where}: {task.title} {task.item} {example_id!r} has no gold {gold} to evaluate against (a test "
            f"split?); give its {gold}, or pass the file as --test_file with --do_predict"
        )


def input_paths(*arguments: Any) -> list[str]:
    """Every path a run reads, from its arguments dataclasses' string values (``--train_file``, comma-separated
    ``--wiki_pages``, ``--model_name_or_path``, ``--resume_from_checkpoint``, ...): what an earlier run's files in
    ``--output_dir`` may hold and a training run must not remove (``remove_earlier_results``)."""
    paths = []
    for item in arguments:
        values = vars(item).values() if dataclasses.is_dataclass(item) else ()
        for value in values:
            if isinstance(value, str) and value:
                paths += [part for part in value.split(",") if part and Path(part).exists()]
    return paths


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# ----------------------------------------------------------------------------------------------- the run


class TaskTrainer(Trainer):
    """``Trainer`` whose model card comes from the task (``Task.write_model_card``), also when pushing to the Hub."""

    def __init__(
        self,
        *args: Any,
        task: Task,
        card_kwargs: dict[str, Any] | None = None,
        lr_scheduler_factory: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.task = task
        self.card_kwargs = dict(card_kwargs or {})
        self.lr_scheduler_factory = lr_scheduler_factory  # LoadedModel.lr_scheduler
        self.update_steps_per_epoch = 1

    def set_initial_training_values(self, args: TrainingArguments, dataloader: Any) -> Any:
        values = super().set_initial_training_values(args, dataloader)
        self.update_steps_per_epoch = values[1]  # what a per-epoch schedule counts in
        return values

    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        """The task's own schedule (``LoadedModel.lr_scheduler``) where it has one, else ``Trainer``'s."""
        if self.lr_scheduler is None and self.lr_scheduler_factory is not None:
            self.lr_scheduler = self.lr_scheduler_factory(optimizer or self.optimizer, self.update_steps_per_epoch)
            self._created_lr_scheduler = True
        return super().create_scheduler(num_training_steps, optimizer)

    def evaluate(
        self, eval_dataset: Any = None, ignore_keys: list[str] | None = None, **kwargs: Any
    ) -> dict[str, float]:
        """``Trainer.evaluate``, leaving out the outputs the task does not decode (also during training)."""
        return super().evaluate(eval_dataset, ignore_keys or list(self.task.ignore_output_keys) or None, **kwargs)

    def predict(self, test_dataset: Any, ignore_keys: list[str] | None = None, **kwargs: Any) -> Any:
        return super().predict(test_dataset, ignore_keys or list(self.task.ignore_output_keys) or None, **kwargs)

    def save_metrics(self, split: str, metrics: dict[str, float], combined: bool = True) -> None:
        """``Trainer.save_metrics`` with every file written whole or not at all (``write_text_atomically``: a full
        disk is one error line, never a 0-byte ``all_results.json``)."""
        if not self.is_world_process_zero():
            return
        output_dir = Path(self.args.output_dir)
        write_text_atomically(output_dir / f"{split}_results.json", json.dumps(metrics, indent=4, sort_keys=True))
        if combined:
            path = output_dir / "all_results.json"
            combined_metrics = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            combined_metrics.update(metrics)
            write_text_atomically(path, json.dumps(combined_metrics, indent=4, sort_keys=True))

    def save_state(self) -> None:
        """``Trainer.save_state`` (``trainer_state.json``), written atomically."""
        if self.is_world_process_zero():
            state = json.dumps(dataclasses.asdict(self.state), indent=2, sort_keys=True) + "\n"
            write_text_atomically(Path(self.args.output_dir) / "trainer_state.json", state)

    def create_model_card(self, model_name: str | None = None, **kwargs: Any) -> None:
        if not self.is_world_process_zero():
            return
        if not self.task.write_model_card(self.args.output_dir, dict(self.card_kwargs, model_name=model_name)):
            card = Path(self.args.output_dir) / "README.md"
            existed = card.exists()
            try:  # transformers' card (README.md), written with a plain open
                super().create_model_card(model_name=model_name, **kwargs)
            except OSError as error:
                if not existed:  # no cut-short card left behind
                    card.unlink(missing_ok=True)
                if disk_full(error, self.args.output_dir):
                    raise disk_full_error(error, self.args.output_dir, "writing the model card README.md") from None
                raise
        notes = self.task.card_notes(self.model)
        card = Path(self.args.output_dir) / "README.md"
        if notes and card.is_file():  # what the card cannot know from the run alone (how the model was pre-trained)
            write_text_atomically(
                card, card.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + "\n".join(notes) + "\n"
            )


@contextlib.contextmanager
def quiet_progress_bars() -> Any:
    """``datasets``' and ``transformers``' progress bars off inside the block, as they were after it."""
    import datasets
    from transformers.utils import logging as transformers_logging

    enabled = datasets.is_progress_bar_enabled()
    transformers_enabled = transformers_logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            datasets.enable_progress_bars()
        if transformers_enabled:
            transformers_logging.enable_progress_bar()


def run_task(
    task: Task,
    model_args: Any,
    data_args: Any,
    args: TrainingArguments,
    script: str,
    callbacks: Sequence[TrainerCallback] | None = None,
    explicit: set[str] | None = None,
    default_files: Mapping[str, Path] | None = None,
    demo_data: Path | None = None,
) -> dict[str, float]:
    """Train, evaluate and/or predict ``task`` (module docstring); returns the metrics of ``all_results.json``.

    ``callbacks``: extra ``TrainerCallback``s; ``explicit``: the flags given on the command line (a checkpoint's saved
    processor settings are the defaults of the others; ``None``: every flag counts as given); ``default_files``: the
    script's embedded sample (``{split: path}``), used when no data is named; ``demo_data``: the folder a demo wrote
    its data to (``training.machinery.demo_data_folder``), named by the summary line.
    """
    check_output_dir_given(explicit, f"out/{task.name}")
    check_arguments(task, model_args, data_args, args)
    preflight_push_to_hub(args, getattr(model_args, "token", None))
    # one live run per output folder (process 0 holds it; a dead run's lock is released by the kernel)
    with OutputDirLock(args.output_dir) if args.process_index == 0 else contextlib.nullcontext():
        return _run(task, model_args, data_args, args, script, list(callbacks or []), explicit, default_files,
                    demo_data)  # fmt: skip


def _run(
    task: Task,
    model_args: Any,
    data_args: Any,
    args: TrainingArguments,
    script: str,
    callbacks: list[TrainerCallback],
    explicit: set[str] | None,
    default_files: Mapping[str, Path] | None,
    demo_data: Path | None = None,
) -> dict[str, float]:
    files = data_files(data_args, args, default_files)
    # read quietly: a bad file or checkpoint found before training stays the run's one output line
    with args.main_process_first(desc=f"reading the {task.title} data"), quiet_progress_bars():
        examples = read_splits(task, model_args, data_args, args, files)
    task.check_examples(examples, data_args)
    resume = plan_resume(args, data_args.overwrite_output_dir)
    if resume.checkpoint is not None:
        spec = task.variant_spec(model_args.variant)
        check_resume_config(resume.checkpoint, spec, model_args.variant, model_args.ablation)
    set_seed(args.seed)
    # the model, its processor and the features, with their log held back: a bad checkpoint, tokenizer or record
    # found here stays the run's one output line
    components = task.has_components(data_args)
    with HeldLogs() as held, quiet_progress_bars():
        loaded = task.load(model_args, data_args, examples, explicit)
        if resume.checkpoint is not None:
            check_resume_fits(resume.checkpoint, loaded.model)
        features = {} if components else featurise_splits(task, loaded.processor, examples, data_args, args)
    warn_about_arguments(model_args, args, script)
    setup_logging(args, logger)
    held.replay()
    state = args.distributed_state
    logger.warning(
        f"Process rank {args.process_index} of {args.world_size}, device {args.device}, distributed "
        f"{state.distributed_type.value} (backend {state.backend}), bf16 {args.bf16}, fp16 {args.fp16}"
    )
    for problem in resume.skipped:
        logger.warning(f"Not resuming from an incomplete checkpoint: {problem}")
    if resume.checkpoint is not None and args.resume_from_checkpoint is None:
        logger.info(f"Resuming from {resume.checkpoint} (found in --output_dir; --resume_from_checkpoint false "
                    "--overwrite_output_dir restarts)")  # fmt: skip
    if args.do_train and args.process_index == 0:  # every check passed: the earlier run's files give way
        discard_checkpoints(resume)
        remove_earlier_results(args.output_dir, input_paths(model_args, data_args, args), demo=demo_data is not None)
    if components:  # a re-ranker the features are retrieved with, the paper system's models: trained first
        trainer = ComponentTrainer(args, data_args.overwrite_output_dir, callbacks,
                                   fresh=starts_fresh(args.resume_from_checkpoint))  # fmt: skip
        task.train_components(loaded, examples, data_args, args, trainer)
        if task.composite:  # the system answers itself: no Trainer of its own
            results = run_composite(task, loaded, examples, data_args, args, script)
            if args.process_index == 0 and (args.do_train or args.do_eval):
                split = "validation" if args.do_eval else "train"
                notes = trainer.loss_notes() + task.summary_notes(loaded.processor)
                chance = task.chance(examples["validation"]) if args.do_eval else None
                print(summary_line(task, len(examples[split]), results, [], args, chance, notes))
            return results
        with HeldLogs() as held, quiet_progress_bars():
            features = featurise_splits(task, loaded.processor, examples, data_args, args)
        held.replay()

    for name, value in loaded.training_arguments.items():  # the model's own schedule, where no flag set it
        setattr(args, name, value)
    evaluator = (
        TaskEvaluator(task, examples["validation"], features["validation"], loaded.processor) if args.do_eval else None
    )
    args.remove_unused_columns = task.remove_unused_columns
    args.eval_do_concat_batches = not task.ragged_outputs
    no_pin_memory_without_accelerator(args)  # pinned memory only helps copies to an accelerator (torch warns)
    trainer = TaskTrainer(
        model=loaded.model,
        args=args,
        train_dataset=features.get("train"),
        eval_dataset=features.get("validation"),
        processing_class=loaded.processor,
        data_collator=task.collator(loaded.processor, model_args.variant),
        compute_metrics=evaluator if task.scores_predictions else None,
        callbacks=[
            *callbacks,
            *loaded.callbacks,
            *([FiniteTrainingGuard(), PlainFileModes()] if args.do_train else []),
        ],
        task=task,
        card_kwargs=task.card_kwargs(model_args, data_args, args, files),
        lr_scheduler_factory=loaded.lr_scheduler,
    )
    # the heads' losses are means over their own items (candidates, nodes, spans): no `num_items_in_batch`
    trainer.model_accepts_loss_kwargs = False
    output_dir = Path(args.output_dir)
    results: dict[str, float] = {}

    if args.do_train:
        train_result = train_and_save(trainer, resume.checkpoint)
        if trainer.is_world_process_zero() and not keeps_checkpoints(explicit):
            remove_resume_checkpoints(output_dir)
        metrics = {**train_result.metrics, "train_samples": len(examples["train"]),
                   "train_features": len(features["train"])}  # fmt: skip
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
        results.update(metrics)

    if args.do_eval:
        metrics = trainer.evaluate()
        metrics.update(eval_samples=len(examples["validation"]), eval_features=len(features["validation"]))
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        results.update(metrics)
        if trainer.is_world_process_zero() and task.scores_predictions:
            task.write_predictions(evaluator.predictions, examples["validation"], output_dir, "eval", data_args)

    if args.do_predict:
        compute_metrics, trainer.compute_metrics = trainer.compute_metrics, None  # test answers are optional
        try:
            output = trainer.predict(features["test"], metric_key_prefix="predict")
        finally:
            trainer.compute_metrics = compute_metrics
        predictions = task.decode(examples["test"], features["test"], output.predictions, loaded.processor)
        if trainer.is_world_process_zero():
            path = task.write_predictions(predictions, examples["test"], output_dir, "predict", data_args)
            print(f"{script}: predictions for {len(predictions)} test {task.unit} -> {path}")

    if args.push_to_hub and args.do_train:
        trainer.push_to_hub(finetuned_from=model_args.model_name_or_path)  # renders the card and uploads the folder
    elif args.do_train:  # a checkpoint was saved: give it its card (an evaluation-only folder holds no model)
        trainer.create_model_card()
    results_path = output_dir / "all_results.json"
    if results_path.is_file():
        results = json.loads(results_path.read_text(encoding="utf-8"))
    if trainer.is_world_process_zero() and (args.do_train or args.do_eval):
        split = "validation" if args.do_eval else "train"
        chance = task.chance(examples["validation"]) if args.do_eval else None
        notes = task.summary_notes(loaded.processor)
        line = summary_line(task, len(examples[split]), results, trainer.state.log_history, args, chance, notes)
        if args.do_eval:  # the paper's table first: the summary line stays the run's last
            for table_line in task.results_table(results, f"{model_args.variant} ({Path(args.output_dir).name})"):
                print(table_line)
        print(line if demo_data is None else f"{line[:-1]}; demo data: {demo_data})")
    return results


def featurise_splits(task: Task, processor: Any, examples: Mapping[str, Any], data_args: Any,
                     args: TrainingArguments) -> dict[str, Any]:  # fmt: skip
    """``featurise_split`` of every split the run reads (process 0 first)."""
    with args.main_process_first(desc="featurising"):
        return {split: featurise_split(task, processor, items, split, data_args) for split, items in examples.items()}


def featurise_split(task: Task, processor: Any, examples: Any, split: str, data_args: Any) -> Any:
    """``task.featurise`` of one split; a record the processor cannot use (an evidence page missing from
    ``--wiki_pages``, a malformed field) or a split left with no feature is one ``ScriptArgumentError``."""
    try:
        features = task.featurise(processor, examples, split, data_args)
    except ScriptArgumentError:
        raise
    except FEATURISE_ERRORS as error:  # raised by the processor on one bad record
        culprit, error = _first_unusable(task, processor, examples, split, data_args, error)
        reason = first_line(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
        raise ScriptArgumentError(
            f"the {split} data cannot be featurised{culprit}: {reason}{task.featurise_hint(data_args)}"
        ) from None
    if len(features) == 0:
        raise ScriptArgumentError(f"the {split} data gives no feature ({task.no_feature_hint})")
    return features


FEATURISE_ERRORS = (ValueError, KeyError, TypeError, IndexError)


def _first_unusable(
    task: Task, processor: Any, examples: Any, split: str, data_args: Any, error: Exception
) -> tuple[str, Exception]:
    """The first example that fails to featurise on its own (`` (<item> <id>)``) and its error, so that an error
    raised without naming its record still names one; ``("", error)`` when none fails alone."""
    from datasets import Dataset

    for index in range(len(examples)):
        one = examples.select([index]) if isinstance(examples, Dataset) else examples[index : index + 1]
        try:
            task.featurise(processor, one, split, data_args)
        except FEATURISE_ERRORS as own:
            return f" ({task.item} {task.example_id(examples[index])!r})", own
    return "", error


def predict_task(
    task: Task, model: Any, processor: Any, examples: Any, batch_size: int = 8, split: str = "validation"
) -> dict[str, Any]:
    """``{example id: prediction}`` of ``model`` on ``examples`` through the driver's own path (the task's features,
    ``Trainer.predict`` in batches of ``batch_size``, the task's decoding), for runs started from Python; score them
    with ``task.score(predictions, examples)``."""
    import tempfile

    features = task.featurise(processor, examples, split, None)
    with tempfile.TemporaryDirectory(prefix="gesa-predict-") as scratch:
        args = TrainingArguments(output_dir=scratch, per_device_eval_batch_size=batch_size, report_to=[],
                                 remove_unused_columns=task.remove_unused_columns, disable_tqdm=True,
                                 eval_do_concat_batches=not task.ragged_outputs)  # fmt: skip
        trainer = Trainer(model=model, args=args, data_collator=task.collator(processor, model_variant(model)))
        output = trainer.predict(features, ignore_keys=list(task.ignore_output_keys) or None)
    return task.decode(examples, features, output.predictions, processor)


def model_variant(model: Any) -> str:
    """The ``--variant`` name of a model (from its config's ``model_type`` and ``ablation``)."""
    from .registry import VARIANTS

    model_type, ablation = model.config.model_type, getattr(model.config, "ablation", None)
    for name, spec in VARIANTS.items():
        if spec.config_class.model_type == model_type and spec.config_overrides.get("ablation") in (None, ablation):
            if name == "gesa" and ablation == "luke":
                continue
            return name
    raise ValueError(f"no --variant builds a {model_type!r} model")


def warn_about_arguments(model_args: Any, args: TrainingArguments, script: str) -> None:
    """One ``warning:`` line for runs that work but are probably not what was meant."""
    if (args.do_eval or args.do_predict) and not args.do_train and model_args.model_name_or_path is None:
        print(
            f"{script}: warning: --do_eval/--do_predict without --do_train or --model_name_or_path: this scores a "
            "randomly initialised tiny model (chance level); pass --model_name_or_path <trained checkpoint>",
            file=sys.stderr,
        )


def summary_line(
    task: Task,
    count: int,
    results: Mapping[str, float],
    log_history: Sequence[Mapping[str, Any]],
    args: TrainingArguments,
    chance: float | None = None,
    extra: Sequence[str] = (),
) -> str:
    """The run's closing line: ``<Task> N <unit>: <metrics>; before training: <metrics>; chance X; training loss a
    (step i) -> b (step j); <extra> (<output_dir>)``; an evaluation-only run says so and names the files it wrote.
    ``extra``: the task's own notes (``Task.summary_notes``, component losses)."""

    def metrics_of(entry: Mapping[str, Any]) -> str:
        names = [
            task.metric_for_best_model,
            *(name for name in task.metric_names if name != task.metric_for_best_model),
        ]
        shown = [(name, entry.get(f"eval_{name}")) for name in names]
        return ", ".join(
            f"{task.metric_names.get(name, name)} {value:.2f}" for name, value in shown if value is not None
        )

    if not args.do_eval:
        head = f"{task.title} trained on {count} {task.unit}, not evaluated (no --do_eval)"
    elif args.do_train:
        head = f"{task.title} {count} {task.unit}: "
    else:
        head = f"{task.title} (evaluation only, no training) {count} {task.unit}: "
    notes = []
    start = next((entry for entry in log_history if entry.get("step") == 0 and
                  f"eval_{task.metric_for_best_model}" in entry), None)  # fmt: skip
    if args.do_train and start is not None:
        notes.append(f"before training: {metrics_of(start)}")
    if chance is not None:
        named = f" ({task.metric_names.get(task.chance_metric, task.chance_metric)})" if task.chance_metric else ""
        notes.append(f"chance{named} {chance:.2f}")
    losses = [entry for entry in log_history if "loss" in entry]
    if len(losses) >= 2:
        notes.append(
            f"training loss {losses[0]['loss']:.3f} (step {losses[0]['step']}) -> {losses[-1]['loss']:.3f} "
            f"(step {losses[-1]['step']})"
        )
    notes += list(extra)
    if args.do_train:
        tail = f" ({args.output_dir})"
    else:  # what an evaluation-only run wrote, which is all it wrote
        written = sorted(path.name for path in Path(args.output_dir).iterdir() if not path.name.startswith("."))
        tail = f" ({args.output_dir}: {', '.join(written)}; no model, no card)"
    return head + (metrics_of(results) if args.do_eval else "") + "".join(f"; {note}" for note in notes) + tail


# ----------------------------------------------------------------------------------------------- the scripts


def wants_demo(argv: Sequence[str], demo_flags: Sequence[str]) -> bool:
    """No argument, or only ``demo_flags`` (each with its value): a script's embedded demo."""
    flags = {f"--{name}" for name in demo_flags}
    return not argv or (explicit_flags(argv) <= set(demo_flags) and all(
        arg.startswith("--") or argv[i - 1] in flags for i, arg in enumerate(argv)))  # fmt: skip


@dataclass
class ExampleScript:
    """What an example script's command line does, the same for every script: ``wants_demo`` (no argument, or only
    ``demo_flags``), ``parse_args`` (``HfArgumentParser`` over its dataclasses, or a JSON file of flags; every bad
    flag one ``ScriptArgumentError``) and ``main`` (the demo's data written and its command line made, then the task
    the flags name run by ``run_task``, argument and input errors one ``error:`` line). A script declares the rest.

    Args:
        name: the script's file name (``run_multihop.py``), in every error line.
        dataclass_types: its argument dataclasses, ``TrainingArguments`` last.
        description / usage: its ``--help`` text and usage line.
        tasks: its tasks by ``--task`` name; ``task``: a one-task script's own (``--task`` is not a flag).
        choose_task: ``(model_args, data_args) -> Task`` when the flags pick among more kinds than ``tasks`` holds.
        demo_flags: the flags a demo takes (``--variant``, ...); any other names a real run.
        demo: ``(folder, model_args, data_args, output_dir, argv) -> the demo's command line``, its data written in
            ``folder`` (``<output_dir>/demo-data``); ``argv``: the demo flags given; ``model_args.variant``: the
            variant the demo trains (``demo_variant``).
        demo_output: ``(model_args, data_args) -> the demo's --output_dir`` when the command line names none;
            default ``outputs/<variant>-tiny-<task>``, named after the variant the demo trains.
        demo_seconds: ``{task name: seconds}``, how long each task's demo takes on one idle core (measured; printed
            when the demo starts); ``"<task>:<variant>"`` for a variant whose demo takes another time.
        demo_defaults: ``argv -> the demo's flags``, applied by ``parse_args`` itself (so that ``parse_args([])`` gives
            the demo's arguments); ``demo`` adds its files, and the whole command line is printed (``python <script>
            ...``).
        argv_defaults: flags added to a command line before it is parsed (``run_record.py --paper_defaults``).
        default_files: ``demo folder or None -> {split: path}``, the data used when a run names none.
        callbacks: the ``TrainerCallback``s every run of the script adds.
    """

    name: str
    dataclass_types: tuple[type, ...]
    description: str | None
    usage: str | None
    tasks: Mapping[str, Task]
    demo: Callable[[Path, Any, Any, str, list[str]], list[str]]
    demo_output: Callable[[Any, Any], str] | None = None
    demo_seconds: Mapping[str, int] = field(default_factory=dict)
    demo_flags: tuple[str, ...] = ("task", "output_dir")
    task: Task | None = None
    choose_task: Callable[[Any, Any], Task] | None = None
    demo_defaults: Callable[[list[str]], list[str]] | None = None
    argv_defaults: Callable[[list[str]], list[str]] | None = None
    default_files: Callable[[Path | None], Mapping[str, Path]] | None = None
    callbacks: Callable[[], list[TrainerCallback]] | None = None

    def wants_demo(self, argv: Sequence[str]) -> bool:
        """No argument, or only ``demo_flags``: the embedded demo."""
        return wants_demo(argv, self.demo_flags)

    def demo_task(self, data_args: Any) -> Task:
        """The task a demo runs: the script's own, or ``--task``'s."""
        return self.task or self.tasks[data_args.task]

    def demo_variant(self, model_args: Any, task: Task, argv: Sequence[str]) -> str:
        """The variant a demo trains: ``--variant`` when given, else the script's default where the task has a head
        for it, else the task's first (HotpotQA and FEVER: ``xh``)."""
        if "variant" in explicit_flags(argv) or model_args.variant in task.heads:
            return model_args.variant
        return next(iter(task.heads))

    def demo_time(self, task: Task, variant: str | None = None) -> str:
        """``about N s (or min) on one idle core``, the measured time of ``task``'s demo (``demo_seconds``: its
        ``"<task>:<variant>"`` entry for a variant measured apart, else its task's; ``""`` when unmeasured)."""
        seconds = self.demo_seconds.get(f"{task.name}:{variant}", self.demo_seconds.get(task.name))
        if seconds is None:
            return ""
        shown = f"{seconds} s" if seconds < 90 else f"{round(seconds / 60)} min"
        return f"about {shown} on one idle core"

    def parse_args(self, argv: list[str]) -> tuple[Any, ...]:
        """The dataclasses of ``argv`` (a ``demo_defaults`` demo's command line when ``argv`` asks for the demo)."""
        parser = script_parser(self.dataclass_types, description=self.description, usage=self.usage)
        if self.demo_defaults is not None and self.wants_demo(argv):
            argv = self.demo_defaults(argv)
        if self.argv_defaults is None:
            return parse_script_args(parser, argv, self.name, task=self.task)
        given = explicit_flags(argv)  # the user's flags (the added defaults are not theirs)
        return parse_script_args(parser, self.with_defaults(argv), self.name, task=self.task, given=given)

    def with_defaults(self, argv: list[str]) -> list[str]:
        """``argv`` with ``argv_defaults`` added (not to a JSON file of flags)."""
        if self.argv_defaults is None or (len(argv) == 1 and argv[0].endswith(".json")):
            return argv
        return self.argv_defaults(argv)

    def main(self, argv: list[str] | None = None, callbacks: list[TrainerCallback] | None = None) -> dict[str, float]:
        """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2).
        ``callbacks``: extra ``TrainerCallback``s when called from Python."""
        argv = sys.argv[1:] if argv is None else list(argv)
        with one_error_line(self.name):
            demo_data = None
            if self.wants_demo(argv):
                model_args, data_args, args = self.parse_args(argv)  # the demo flags given, checked
                task = self.demo_task(data_args)
                model_args.variant = self.demo_variant(model_args, task, argv)
                if "output_dir" in explicit_flags(argv):
                    output_dir = args.output_dir
                elif self.demo_output is not None:
                    output_dir = self.demo_output(model_args, data_args)
                else:
                    output_dir = f"outputs/{model_args.variant}-tiny-{task.name}"
                check_demo_folder(output_dir)  # a demo replaces only its own folder's content
                demo_data = demo_data_folder(output_dir)
                argv = self.demo(demo_data, model_args, data_args, output_dir, argv)
                time = self.demo_time(task, model_args.variant)
                if self.demo_defaults is not None:  # its whole command line, to copy
                    print(f"{self.name}: no data or model given: embedded demo{f' ({time})' if time else ''}, i.e. "
                          f"python examples/{self.name} " + " ".join(argv))  # fmt: skip
                else:
                    print(f"{self.name}: no data or model given: the {task.title} demo (--variant {model_args.variant}"
                          f") on an embedded sample written to {demo_data} ({f'{time}; ' if time else ''}a pipeline "
                          "check, not a benchmark); see --help for real runs")  # fmt: skip
            model_args, data_args, args = self.parse_args(argv)
            if self.choose_task is not None:
                task = self.choose_task(model_args, data_args)
            else:
                task = self.task or self.tasks[data_args.task]
            return run_task(
                task, model_args, data_args, args, self.name,
                callbacks=[*(self.callbacks() if self.callbacks else []), *(callbacks or [])],
                explicit=explicit_flags(self.with_defaults(argv)),
                default_files=self.default_files(demo_data) if self.default_files else None, demo_data=demo_data,
            )  # fmt: skip


__all__ = [
    "BaseDataArguments",
    "BaseModelArguments",
    "ExampleScript",
    "TaskTrainer",
    "check_arguments",
    "check_split_labels",
    "data_files",
    "featurise_split",
    "model_variant",
    "predict_task",
    "read_splits",
    "run_task",
    "summary_line",
    "wants_demo",
    "warn_about_arguments",
]

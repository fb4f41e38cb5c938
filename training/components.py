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
"""A run's component models on the shared run path (``training.driver.run_task`` calls them).

Some runs train models of their own before (or instead of) the run's model: FullWiki's and FEVER's re-rankers, the
paper system's five models. ``ComponentTrainer`` trains each the way the driver trains the run's model (the flags
already checked and the output folder locked by the driver; the divergence guard, the atomic save, resuming), into
``<output_dir>/<name>``; ``run_composite`` finishes a run whose model is a system of such components (the paper
system): its top-level files, its own predictions, the result files.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import Trainer, TrainerCallback, TrainingArguments

from ..loading_gesa import weights_problem
from .machinery import (
    FiniteTrainingGuard,
    PlainFileModes,
    check_resume_fits,
    discard_checkpoints,
    disk_full,
    disk_full_error,
    no_pin_memory_without_accelerator,
    plan_resume,
    remove_resume_checkpoints,
    train_and_save,
    write_text_atomically,
)

logger = logging.getLogger(__name__)

TRAINER_FILES = ("training_args.bin",)


class ComponentTrainer:
    """Trains a run's component models (a re-ranker, the paper system's models) on the run's own path:
    ``trainer(name, model, features, collator) -> model`` trains ``model`` into ``<output_dir>/<name>`` with the run's
    ``TrainingArguments`` (its checks done, its folder locked), the divergence guard and the atomic save.

    A component is scored through the system it serves, so it trains without evaluation (``--eval_strategy``,
    ``--load_best_model_at_end`` and ``--push_to_hub`` are the run's own model's). Its folder's newest complete
    checkpoint is resumed; a component that a stopped run of this folder finished is loaded, not trained again
    (``--overwrite_output_dir`` trains it again). Once saved, its folder keeps the model only: the ``checkpoint-N``
    folders and ``training_args.bin`` are removed. ``history`` holds each component's logged losses."""

    def __init__(self, args: TrainingArguments, overwrite: bool, callbacks: Sequence[TrainerCallback] = (),
                 fresh: bool = False) -> None:  # fmt: skip
        self.args, self.overwrite, self.callbacks = args, overwrite, list(callbacks)
        self.fresh = fresh  # the run starts afresh (--resume_from_checkpoint false): no component resumes
        self.history: dict[str, list[dict[str, Any]]] = {}

    def component_args(self, name: str) -> TrainingArguments:
        save = "epoch" if self.args.save_strategy == "best" else self.args.save_strategy
        return dataclasses.replace(
            self.args, output_dir=str(Path(self.args.output_dir) / name), do_eval=False, do_predict=False,
            eval_strategy="no", eval_on_start=False, load_best_model_at_end=False, metric_for_best_model=None,
            save_strategy=save, push_to_hub=False, resume_from_checkpoint="false" if self.fresh else None,
            remove_unused_columns=False,
        )  # fmt: skip

    def finished(self, name: str, model: Any) -> Any | None:
        """The component this folder already holds whole (a stopped run's), loaded; ``None`` to train it."""
        folder = Path(self.args.output_dir) / name
        if self.overwrite or self.fresh or not (folder / "config.json").is_file() or any(folder.glob("checkpoint-*")):
            return None
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if (config.get("architectures") or [None])[0] != type(model).__name__ or weights_problem(folder) is not None:
            return None
        logger.warning(f"{name}: loading the model a stopped run left in {folder} (--overwrite_output_dir trains "
                       "it again)")  # fmt: skip
        return type(model).from_pretrained(folder).to(self.args.device)

    def __call__(self, name: str, model: Any, features: Any, collator: Any) -> Any:
        done = self.finished(name, model)
        if done is not None:
            return done
        args = self.component_args(name)
        resume = plan_resume(args, overwrite_output_dir=True)
        discard_checkpoints(resume)
        for problem in resume.skipped:
            logger.warning(f"{name}: not resuming from an incomplete checkpoint: {problem}")
        if resume.checkpoint is not None:
            check_resume_fits(resume.checkpoint, model)
            logger.info(f"{name}: resuming from {resume.checkpoint}")
        no_pin_memory_without_accelerator(args)
        trainer = Trainer(model=model, args=args, train_dataset=features, data_collator=collator,
                          callbacks=[*self.callbacks, FiniteTrainingGuard(), PlainFileModes()])  # fmt: skip
        trainer.model_accepts_loss_kwargs = False
        logger.info(f"training {name} ({len(features)} features) -> {args.output_dir}")
        train_and_save(trainer, resume.checkpoint)
        self.history[name] = list(trainer.state.log_history)
        if trainer.is_world_process_zero():  # a saved component is finished: its resume points are stale
            remove_resume_checkpoints(args.output_dir)
            for file in TRAINER_FILES:
                (Path(args.output_dir) / file).unlink(missing_ok=True)
        return trainer.model

    def loss_notes(self) -> list[str]:
        """``<name> trained: loss a -> b`` per component that logged two losses or more (the summary line's)."""
        notes = []
        for name, log in self.history.items():
            losses = [entry["loss"] for entry in log if "loss" in entry]
            if len(losses) >= 2:
                notes.append(f"{name} trained: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
        return notes


def run_composite(
    task: Any, loaded: Any, examples: Mapping[str, Any], data_args: Any, args: TrainingArguments, script: str
) -> dict[str, float]:
    """The rest of a ``composite`` task's run, its components trained (``Task.train_components``): the system's
    top-level files saved (its tokenizer and processor, then the config naming the components: a folder with that
    config is finished), each split predicted by the task (``predict_examples``) and its predictions written, the scores
    written whole (``eval_results.json``, ``all_results.json``); returns them (the driver prints the summary line)."""
    output_dir = Path(args.output_dir)
    primary = args.process_index == 0
    results: dict[str, float] = {}
    if args.do_train and primary:
        output_dir.mkdir(parents=True, exist_ok=True)
        try:
            loaded.processor.save_pretrained(output_dir)
            loaded.model.save_pretrained(output_dir, save_components=False)
        except OSError as error:
            if disk_full(error, output_dir):
                raise disk_full_error(error, output_dir, "saving the system's files") from None
            raise
        results["train_samples"] = len(examples["train"])
    for split, prefix in (("validation", "eval"), ("test", "predict")):
        if split not in examples:
            continue
        predictions = task.predict_examples(loaded, examples[split], prefix, args)
        if not primary:
            continue
        path = task.write_predictions(predictions, examples[split], output_dir, prefix, data_args)
        if split == "validation":
            metrics = {f"eval_{k}": v for k, v in task.reported(task.score(predictions, examples[split])).items()}
            metrics["eval_samples"] = len(examples[split])
            write_text_atomically(output_dir / "eval_results.json", json.dumps(metrics, indent=4, sort_keys=True))
            results.update(metrics)
        else:
            print(f"{script}: predictions for {len(predictions)} test {task.unit} -> {path}")
    if primary and results:
        write_text_atomically(output_dir / "all_results.json", json.dumps(results, indent=4, sort_keys=True))
    return results


__all__ = ["TRAINER_FILES", "ComponentTrainer", "run_composite"]

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
"""The one task interface: what ReCoRD, WikiHop, HotpotQA, FEVER and the entity tasks each tell the shared driver.

``training.driver.run_task(task, ...)`` runs every example script the same way (argument checks, the output-folder
lock, resuming, the divergence guard, atomic result files, the one ``error:`` line and the closing summary line);
a ``Task`` says only what differs between tasks, in the order a run needs it:

========================  ===========================================================================================
read                      ``read_file(path, where)`` / ``read_hub(data_args, model_args, split)`` -> examples (every
                          record checked; a bad one is an ``InputError`` naming the flag, file, line, id and the fix)
check                     ``check_arguments`` (the task's own flags), ``check_examples`` (what the data needs, e.g. a
                          spaCy model), ``reference(example)`` (gold answer; ``None``: unlabelled)
model                     ``heads`` per ``--variant``; ``load(model_args, data_args, examples, explicit)`` -> the model,
                          its processor (saved with it) and its tokenizer, checked before any weight loads
featurise                 ``featurise(processor, examples, split, data_args)`` -> a ``datasets.Dataset``;
                          ``collator(processor, variant)``
predict                   ``decode(examples, features, outputs)`` -> ``{example id: prediction}`` from the model's
                          outputs over all features (``Trainer.evaluate`` and ``Trainer.predict`` alike)
score                     ``score(predictions, examples)`` -> ``{metric: value}`` (the official metric, in its own
                          scale); ``reported(metrics)``: the same in percent, the one scale every script reports
write predictions         ``write_predictions(predictions, examples, output_dir, split)`` -> the file written
========================  ===========================================================================================

Every script imports its tasks explicitly (``gesa.training.record.RECORD``, ...); nothing registers itself at
import. ``TaskEvaluator`` is the one evaluation path: ``compute_metrics`` of ``Trainer.evaluate`` (so evaluation
during training and ``--eval_on_start`` score with the official metric too) decodes with the task and scores.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset
from transformers import EvalPrediction, PreTrainedModel

from .machinery import ScriptArgumentError
from .registry import VARIANTS


@dataclass
class LoadedModel:
    """What ``Task.load`` gives the driver: the model to train, the processor that makes its features (saved with
    the model, so the checkpoint answers through its pipeline), and the tokenizer; where the model has a training
    schedule of its own (the context graph's table 4.1): ``training_arguments`` (``TrainingArguments`` values the
    command line left to the task), ``lr_scheduler`` (``(optimizer, update steps per epoch) -> LRScheduler``, used
    by ``Trainer.create_scheduler``) and ``callbacks`` (``TrainerCallback``s)."""

    model: PreTrainedModel
    processor: Any
    tokenizer: Any
    label_names: list[str] | None = None
    training_arguments: dict[str, Any] = field(default_factory=dict)
    lr_scheduler: Any = None
    callbacks: list[Any] = field(default_factory=list)
    # the run's other models (a re-ranker): trained first by ``Task.train_components``, each in <output_dir>/<name>
    components: dict[str, Any] = field(default_factory=dict)


@dataclass
class Task(ABC):
    """One task of an example script (module docstring).

    Args:
        name: the ``--task`` value (``record``, ``wikihop``, ``hotpotqa``, ...).
        title: how people write it (``ReCoRD``): the summary line and messages.
        description: one line for ``--help``.
        file_format: what ``--train_file`` etc. hold, for ``--help`` and messages.
        heads: ``--variant`` -> head class.
        metric_for_best_model: the main metric (no ``eval_`` prefix); it leads the summary line.
        chance_metric: the metric ``chance`` gives when it is not the main one (FEVER: label accuracy), named beside
            the chance level in the summary line.
        metric_names: how the summary line names the metrics it prints (``{"exact_match": "exact match"}``).
        unit: what the examples are (``queries``, ``claims``, ``sentences``): the summary line; ``item``: one of them;
            ``reference_name``: what its gold answer is called in the data (FEVER: ``label``), for messages.
        remove_unused_columns: whether ``Trainer`` drops the feature columns the model's ``forward`` does not take
            (``False`` where the collator reads them).
        scores_predictions: whether evaluation decodes and scores predictions (pre-training: the loss only).
        no_feature_hint: why a split can give no feature, for the error.
        ignore_output_keys: the head's outputs ``decode`` does not read (``Trainer`` gathers all others).
        official_fraction: the official metric gives fractions (HotpotQA's and FEVER's scripts, the entity tasks'
            P/R/F1) where ReCoRD's and WikiHop's give percent; ``reported`` puts every task in percent.
        ragged_outputs: the head's outputs differ between batches past their first two dims (XH's per-node token
            and sentence widths), which ``Trainer`` cannot concatenate: it keeps them per batch
            (``eval_do_concat_batches=False``) and ``decode`` gets them padded by ``concat_padded``.
        composite: the model is a system of separately trained models (the paper's HotpotQA system): all of them
            train in ``train_components``, the system answers through ``predict_examples``, and the run saves the
            system's top-level files (``save_pretrained(..., save_components=False)``) after its components.
    """

    name: str
    title: str
    description: str
    file_format: str
    heads: Mapping[str, type[PreTrainedModel]] = field(default_factory=dict)
    metric_for_best_model: str = "accuracy"
    chance_metric: str | None = None
    metric_names: Mapping[str, str] = field(default_factory=dict)
    unit: str = "examples"
    item: str = "example"
    reference_name: str = "answer"
    remove_unused_columns: bool = True
    scores_predictions: bool = True
    no_feature_hint: str = "every example was cut or skipped"
    ignore_output_keys: tuple[str, ...] = ()
    ragged_outputs: bool = False
    official_fraction: bool = False
    composite: bool = False

    # ------------------------------------------------------------------------------------------- flags

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        """The task's own flag checks (``ScriptArgumentError`` naming the flag); none by default."""
        return None

    def check_examples(self, examples: Mapping[str, Any], data_args: Any) -> None:
        """What the read data needs before anything loads (e.g. the spaCy NER pipeline); nothing by default."""
        return None

    # ------------------------------------------------------------------------------------------- the model

    def head_for(self, variant: str) -> type[PreTrainedModel]:
        """The head class ``--variant`` trains for this task; a ``ValueError`` naming the variants that have one."""
        if variant not in self.heads:
            raise ValueError(
                f"--task {self.name} has no head for --variant {variant}; choose one of {sorted(self.heads)}"
            )
        return self.heads[variant]

    def variant_spec(self, variant: str) -> Any:
        """The variant registry's entry for ``variant`` with this task's head as its model class."""
        from dataclasses import replace

        return replace(VARIANTS[variant], model_class=self.head_for(variant))

    @abstractmethod
    def load(
        self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
    ) -> LoadedModel:
        """The model ``--variant`` trains for this task, with its processor and tokenizer: converted from a LUKE
        checkpoint, loaded from a checkpoint of this task, or (where the task has a demo) built small from scratch.
        Everything the checkpoint's config and tokenizer say is checked before any weight loads (``ValueError`` /
        ``ScriptArgumentError`` naming the flag and the fix)."""

    def collator(self, processor: Any, variant: str) -> Any:
        """The batches of the processor's features (``processor.get_data_collator()``)."""
        return processor.get_data_collator()

    def has_components(self, data_args: Any) -> bool:
        """Whether the run trains models of its own before the features are made (``train_components``: a
        re-ranker the features are retrieved with, the paper system's models); none by default."""
        return self.composite

    def train_components(self, loaded: LoadedModel, examples: Mapping[str, Any], data_args: Any, args: Any,
                         train: Any) -> None:  # fmt: skip
        """Train the run's component models with ``train(name, model, features, collator) -> model`` (the driver's
        ``ComponentTrainer``: the run's ``TrainingArguments``, its checks and resume, ``<output_dir>/<name>``), after
        ``load`` and before ``featurise``; nothing by default."""
        return None

    def predict_examples(self, loaded: LoadedModel, examples: Any, split: str, args: Any) -> dict[str, Any]:
        """A ``composite`` task's ``{example id: prediction}`` (its system run on the examples themselves)."""
        raise NotImplementedError(f"--task {self.name} predicts through Trainer (decode), not predict_examples")

    def results_table(self, results: Mapping[str, float], method: str) -> list[str]:
        """Lines the run prints just before its summary line (which stays the last): its results as a paper's table
        lays them out (``method``: the row's name); none by default."""
        return []

    def summary_notes(self, processor: Any) -> list[str]:
        """What the run's summary line adds about its inputs (e.g. how many texts the processor cut); none."""
        return []

    # ------------------------------------------------------------------------------------------- data

    @abstractmethod
    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> Any:
        """Every example of ``path`` (given as ``where``, e.g. ``--train_file F``), each checked: a bad one is a
        ``ValueError`` naming ``where``, the line or item, the example and the fix."""

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> Any:
        """Every example of a Hub dataset's split (``--dataset_name``), checked like a file's."""
        raise ScriptArgumentError(
            f"--task {self.name} reads files only: give --train_file/--validation_file/--test_file"
        )

    @abstractmethod
    def featurise(self, processor: Any, examples: Any, split: str, data_args: Any) -> Dataset:
        """The model features of a split (a query may give several, e.g. one per window), as a ``Dataset``."""

    def featurise_hint(self, data_args: Any) -> str:
        """What to check when a record cannot be featurised (appended to the error; ``""``: nothing to add)."""
        return ""

    def card_kwargs(self, model_args: Any, data_args: Any, args: Any, files: Mapping[str, Path]) -> dict[str, Any]:
        """What ``write_model_card`` needs besides the output folder."""
        return {}

    def card_notes(self, model: Any) -> list[str]:
        """Lines the model card adds after its text (e.g. what the checkpoint was pre-trained with); none."""
        return []

    def write_model_card(self, output_dir: str, card_kwargs: Mapping[str, Any]) -> bool:
        """Write the task's model card into ``output_dir``; ``False``: the task has none (``Trainer``'s own)."""
        return False

    def example_id(self, example: Any) -> str:
        """The id that names ``example`` in predictions and messages."""
        return str(example["id"] if isinstance(example, Mapping) else example.example_id)

    @abstractmethod
    def reference(self, example: Any) -> Any:
        """``example``'s gold answer in the shape ``score`` compares predictions with; ``None``: unlabelled."""

    def limit(self, examples: Any, count: int | None) -> Any:
        """The first ``count`` examples (``None``: all)."""
        if count is None:
            return examples
        if isinstance(examples, Dataset):
            return examples.select(range(min(count, len(examples))))
        return examples[:count]

    def chance(self, examples: Any) -> float | None:
        """The main metric (or ``chance_metric``) of a model that guesses, in percent as every script reports it
        (``None``: no meaningful chance level)."""
        return None

    # ------------------------------------------------------------------------------------------- predictions

    @abstractmethod
    def decode(self, examples: Any, features: Dataset, outputs: Any, processor: Any) -> dict[str, Any]:
        """``{example id: prediction}`` from the model's outputs over ``features`` (row ``i`` belongs to feature
        ``i``; a tuple, in the head's output order without ``ignore_output_keys``, when it returns several tensors);
        ``processor`` made the features."""

    @abstractmethod
    def score(self, predictions: Mapping[str, Any], examples: Any) -> dict[str, float]:
        """The official metric of ``predictions`` against the examples' references (names without ``eval_``)."""

    def reported(self, metrics: Mapping[str, float]) -> dict[str, float]:
        """``score``'s metrics in percent (0-100): the one scale of every script's results, summary line and
        ``--metric_for_best_model`` (and of the papers' tables); ``score`` itself stays in the official scale."""
        factor = 100.0 if self.official_fraction else 1.0
        return {name: factor * float(value) for name, value in metrics.items()}

    @abstractmethod
    def write_predictions(
        self, predictions: Mapping[str, Any], examples: Any, output_dir: str | Path, split: str, data_args: Any
    ) -> Path:
        """Write ``<split>_predictions.json`` (or the task's official format); returns the path."""


class TaskEvaluator:
    """``compute_metrics`` for ``Trainer``: the task's decoding of every evaluation feature's outputs, then its
    official metric. The evaluation features keep their order through ``Trainer.evaluate`` (sequential sampler; the
    distributed gather drops the padding duplicates), so row ``i`` belongs to feature ``i``. ``predictions`` holds the
    last evaluation's predictions (written by the driver as ``eval_predictions``)."""

    def __init__(self, task: Task, examples: Any, features: Dataset, processor: Any) -> None:
        self.task, self.examples, self.features, self.processor = task, examples, features, processor
        self.predictions: dict[str, Any] = {}

    def __call__(self, eval_prediction: EvalPrediction) -> dict[str, float]:
        outputs = eval_prediction.predictions
        if self.task.ragged_outputs:  # kept per batch by Trainer (``eval_do_concat_batches=False``)
            outputs = concat_padded(outputs)
        first = outputs[0] if isinstance(outputs, tuple | list) else outputs
        if len(first) != len(self.features):
            raise RuntimeError(f"got outputs for {len(first)} features, expected {len(self.features)}")
        self.predictions = self.task.decode(self.examples, self.features, outputs, self.processor)
        return self.task.reported(self.task.score(self.predictions, self.examples))


# ----------------------------------------------------------------------------------------------- shared helpers


def file_error(where: str, path: str | Path, error: Exception) -> str:
    """``where`` (``--train_file PATH``) and a reader's error as one line, the file named once: a reader's error that
    names the file already is prefixed by the flag only."""
    prefix = where.split(" ", 1)[0] if str(path) in str(error) else where
    return f"{prefix}: {error}"


def concat_padded(batches: Any) -> Any:
    """Per-batch outputs (``Trainer`` with ``eval_do_concat_batches=False``: a list of arrays, or of tuples of
    arrays) as one array per output, every dim past the first padded with 0 to the widest batch; already
    concatenated outputs come back unchanged. Each feature's own sizes then crop its row (the padding is never read)."""
    if not isinstance(batches, list):
        return batches
    if not batches:
        raise ValueError("no prediction batch to concatenate (an empty split?)")
    if not isinstance(batches[0], tuple | list):
        return _pad_concatenate([np.asarray(batch) for batch in batches])
    return tuple(_pad_concatenate([np.asarray(batch[i]) for batch in batches]) for i in range(len(batches[0])))


def _pad_concatenate(arrays: Sequence[np.ndarray]) -> np.ndarray:
    shape = [sum(a.shape[0] for a in arrays), *np.max([a.shape[1:] for a in arrays], axis=0).astype(int).tolist()]
    out = np.zeros(shape, dtype=arrays[0].dtype)
    row = 0
    for array in arrays:
        out[(slice(row, row + array.shape[0]), *(slice(0, size) for size in array.shape[1:]))] = array
        row += array.shape[0]
    return out


def first_output(outputs: Any) -> np.ndarray:
    """The first tensor of a head's outputs (its logits) as a float32 array."""
    if isinstance(outputs, tuple | list):
        outputs = outputs[0]
    return np.asarray(outputs, dtype=np.float32)


def softmax_scores(logits: Sequence[float]) -> list[float]:
    """Probabilities of finite logits (``-inf`` slots get 0); refuses rows with no finite logit or a NaN/``+inf``."""
    values = np.asarray(logits, dtype=np.float64)
    if np.isnan(values).any() or np.isposinf(values).any() or not np.isfinite(values).any():
        raise ValueError(f"the model gave no usable score (logits {values.tolist()[:6]}): a diverged checkpoint?")
    shifted = np.exp(values - values[np.isfinite(values)].max())
    return (shifted / shifted.sum()).tolist()


def sigmoid(logit: float) -> float:
    """``1 / (1 + exp(-logit))`` without overflow."""
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    value = math.exp(logit)
    return value / (1.0 + value)


def references_of(task: Task, examples: Iterable[Any]) -> dict[str, Any]:
    """``{example id: reference}`` of the labelled examples."""
    return {
        task.example_id(example): reference
        for example in examples
        if (reference := task.reference(example)) is not None
    }


__all__ = [
    "LoadedModel",
    "Task",
    "TaskEvaluator",
    "first_output",
    "references_of",
    "sigmoid",
    "softmax_scores",
]

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
"""The entity tasks of ``examples/run_entity_tasks.py`` as tasks of the shared driver: ``ENTITY_TASKS`` (entity
typing, relation classification, NER) and ``PRETRAIN``.

A task says how its public files and Hub rows are read (``records_entity``), which head each ``--variant`` trains,
how the head's logits become predictions (typing: every type whose logit is > 0; relations: the argmax; NER: LUKE's
greedy span decoding) and how they are scored (``training.entity_metrics``: micro P/R/F1 over types, TACRED's micro P/R/F1
without ``no_relation``, exact span F1 as seqeval's entity-level score). The predictions file has one row per example
``{"id", "prediction", "reference"}``.

``--task pretrain`` (``PretrainTask``): LUKE's masked language model + masked-entity prediction for GESA/LUKE
(``MaskedEntityCollator``, ``GesaForMaskedLM``), ERNIE's masked language model + denoising entity auto-encoder for
``--variant ernie`` (``ErniePretrainingCollator``: every mention aligned, alignments replaced or masked, words masked;
next-sentence pairs where the data has documents, ``sentence_pairs``; ``ErnieForPreTraining``; ``LoggedLossesCallback``
logs ``mlm_loss``, ``nsp_loss`` and ``dea_loss`` beside ``loss``), KnowBERT's MLM + NSP + ``L_EL`` for ``--variant kar``
(``KarPretrainingCollator``, ``KarForPreTraining``: the KB files and gold links of the fine-tuning runs). Its entity
table holds LUKE's special entities and the distinct mention texts of the data (rows taken from LUKE's table where
LUKE has that title, else from ``[UNK]``; KAR keeps LUKE's table and tokenizer, its KB); the tokenizer saved with the
model carries the same entity vocabulary. Its evaluation is the loss, with dEA accuracy and chance (ERNIE) or the
linker's and the prior's linking accuracy (KAR); it predicts nothing. A pre-training checkpoint of KAR or ERNIE starts
the entity tasks' heads with its encoder (``load_model_and_tokenizer``).

Every task here loads through the one loader (``training.models.load_for_task``): ``EntityLoading`` gives it the
entity checks of ``--model_name_or_path`` (``check_entity_checkpoint``) and the build the data decides
(``load_model_and_tokenizer``) as the recipe's hooks, the task its processor once the model is built.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from datasets import Dataset
from transformers import DataCollatorForLanguageModeling, PreTrainedModel, PreTrainedTokenizerBase, TrainerCallback
from transformers.utils import logging

from ..inputs_gesa import InputError
from ..loading_gesa import load_tokenizer
from ..modeling_ernie import ErnieForDenoisingEntityAutoencoder, corrupt_entity_alignments
from ..modeling_ernie_entity import (
    ErnieForEntityClassification,
    ErnieForEntityPairClassification,
    ErnieForEntitySpanClassification,
    ErnieForPreTraining,
)
from ..modeling_gesa_entity import (
    GesaForEntityClassification,
    GesaForEntityPairClassification,
    GesaForEntitySpanClassification,
    GesaForMaskedLM,
)
from ..modeling_gesa_objectives import GesaForEntityPreTraining, objective_settings
from ..modeling_kar_entity import (
    KarForEntityClassification,
    KarForEntityPairClassification,
    KarForEntitySpanClassification,
    KarForPreTraining,
)
from ..modeling_long_luke_objectives import LongLukeForEntityPreTraining
from ..processing_entity import NO_ENTITY, EntityTaskProcessor, decode_ner, encode_word_prefix
from ..processing_entity_markers import INPUT_FORMATS, MARKED_TASKS, MarkedEntityTaskProcessor, input_format_of
from ..processing_kb import EntityCandidateGenerator, KnowledgeInputBuilder
from ..records_entity import read_hub_rows, read_task_file
from .entity_documents import read_docred_file, read_scirex_documents
from .entity_metrics import (
    figer_metrics,
    relation_chance,
    relation_micro_prf,
    span_chance,
    span_f1,
    table2_lines,
    typing_chance,
    typing_micro_prf,
)
from .entity_objectives import (
    OBJECTIVE_METRIC_NAMES,
    EntityObjectivesProcessor,
    objective_config,
    pretraining_card_line,
    read_graph_flag,
)
from .knowledge_base import (
    GoldLinker,
    gold_links,
    knowledge_candidates,
    load_entity_links,
    load_ner,
)
from .machinery import ScriptArgumentError, checkpoint_config, write_json_atomically
from .models import (
    ModelRecipe,
    check_checkpoint_head,
    check_config_fields,
    check_config_values,
    check_max_seq_length,
    hub_kwargs,
    load_for_task,
    position_limit,
)
from .registry import VARIANTS
from .task import LoadedModel, Task, file_error, first_output
from .tokenizer import SPECIAL_ENTITIES, special_entity_rows

logger = logging.get_logger(__name__)


def decode_types(examples: Sequence[Any], features: Sequence[Any], logits: Any, names: Sequence[str]) -> list:
    """Open Entity: every type whose logit is > 0 (sigmoid > 0.5), as LUKE's typing evaluation."""
    return [[names[i] for i in np.flatnonzero(row > 0)] for row in first_output(logits)]


def decode_figer_types(examples: Sequence[Any], features: Sequence[Any], logits: Any, names: Sequence[str]) -> list:
    """FIGER: every type whose logit is > 0, and the best-scoring type always (ERNIE's and ERICA's evaluation: a
    mention gets at least one type)."""
    rows = first_output(logits)
    return [[names[i] for i in np.flatnonzero((row > 0) | (row == row.max()))] for row in rows]


def decode_relations(examples: Sequence[Any], features: Sequence[Any], logits: Any, names: Sequence[str]) -> list:
    """TACRED: the highest-scoring relation (``no_relation`` included)."""
    return [names[int(i)] for i in first_output(logits).argmax(-1)]


def decode_spans(examples: Sequence[Any], features: Sequence[Any], logits: Any, names: Sequence[str]) -> list:
    """CoNLL-2003: LUKE's greedy decoding of the candidate spans (``processing_entity.decode_ner``)."""
    return decode_ner(features, first_output(logits), names, len(examples))


@dataclass
class EntityTask(Task):
    """One fine-tuning task of ``run_entity_tasks.py`` (module docstring).

    Args (besides ``Task``'s):
        decode_logits: ``(examples, features, logits, label_names) -> predictions`` (one per example).
        reference_of: an example's gold answer, in the shape of a prediction.
        metric: ``(predictions, references) -> {"precision", "recall", "f1"}`` (fractions).
        chance_of: ``labelled examples -> micro F1`` (a fraction) of a model that guesses (``entity_metrics``'
            chance levels), printed beside the scores.
        auto_class: the ``transformers`` auto class a saved checkpoint reloads with (``trust_remote_code=True``).
    """

    decode_logits: Callable[..., list[Any]] | None = None
    reference_of: Callable[[Any], Any] | None = None
    metric: Callable[[Sequence[Any], Sequence[Any]], dict[str, float]] | None = None
    chance_of: Callable[[Sequence[Any]], float] | None = None
    auto_class: str = "AutoModelForSequenceClassification"
    metric_for_best_model: str = "f1"
    metric_names: dict = field(
        default_factory=lambda: {"f1": "micro F1", "precision": "precision", "recall": "recall"}
    )
    remove_unused_columns: bool = False  # the processor's collator drops what the model does not read
    official_fraction: bool = True
    # the task whose features and head it shares (FIGER: entity_typing's); ``None``: its own name
    features_task: str | None = None

    @property
    def features(self) -> str:
        """The task name the processor, the markers and the KB links know this task by (``features_task``)."""
        return self.features_task or self.name

    def card_notes(self, model: Any) -> list[str]:
        """What the checkpoint was pre-trained with, when it started from a ``--objectives`` pre-training."""
        return pretraining_card_line(model.config)

    def results_table(self, results: Mapping[str, float], method: str) -> list[str]:
        """The run's row in seed 002's Table 2 layout (``training.entity_metrics.table2_lines``)."""
        return table2_lines(self.name, method, dict(results))

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        for name in ("max_seq_length", "max_span_length", "max_entities"):
            if getattr(data_args, name) < 1:
                raise ScriptArgumentError(f"--{name} must be at least 1, got {getattr(data_args, name)}")
        input_format = getattr(data_args, "input_format", None) or "luke"
        if input_format not in INPUT_FORMATS:
            raise ScriptArgumentError(
                f"--input_format {input_format!r} is unknown; choose one of {list(INPUT_FORMATS)}"
            )
        if input_format != "luke" and self.features not in MARKED_TASKS:
            raise ScriptArgumentError(
                f"--input_format {input_format} marks the mentions of {', '.join(MARKED_TASKS)}; --task {self.name} "
                "takes --input_format luke"
            )
        check_links_and_label_names(model_args, data_args, args)

    def example_id(self, example: Any) -> str:
        return str(example.id)

    def config_overrides(self, data_args: Any) -> dict[str, Any]:
        """Config values the task's flags set (none: the fine-tuning heads read the checkpoint's)."""
        return {}

    def reference(self, example: Any) -> Any:
        return self.reference_of(example)

    def chance(self, examples: Sequence[Any]) -> float | None:
        """The micro F1 of a guessing model (``chance_of``) on the labelled examples, in percent."""
        labelled = [example for example in examples if self.reference(example) is not None]
        return None if self.chance_of is None or not labelled else 100.0 * self.chance_of(labelled)

    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> list[Any]:
        """The examples of ``path`` (one ``ValueError`` naming the flag, the file, the record and the field)."""
        try:
            return read_task_file(self.name, path)
        except (InputError, FileNotFoundError) as error:
            raise ScriptArgumentError(file_error(where, path, error)) from None

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> list[Any]:
        """The examples of a Hub split's rows (NER: the tag names from its ``ClassLabel``)."""
        import datasets

        rows = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, split=split,
                                     cache_dir=model_args.cache_dir, token=model_args.token)  # fmt: skip
        tags = rows.features.get("ner_tags")
        names = getattr(getattr(tags, "feature", None), "names", None)
        try:
            return read_hub_rows(self.name, rows, names)
        except InputError as error:
            raise ScriptArgumentError(f"--dataset_name {data_args.dataset_name} ({split}): {error}") from None

    def label_names(self, examples: Sequence[Any]) -> list[str]:
        """Every label the examples use, sorted (NER: ``O`` first)."""
        return EntityTaskProcessor.label_names_of(self.features, examples)

    def load(
        self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
    ) -> LoadedModel:
        loading = EntityLoading(self, model_args, data_args, examples)

        def processor_for_model(model: PreTrainedModel, tokenizer: Any, config: dict[str, Any]) -> Any:
            # a new head (converted from LUKE, or on a pre-training checkpoint): the variant's paper's input format
            converted = getattr(model, "luke_conversion_info", None) is not None or hasattr(
                model, "started_from_pretraining"
            )
            processor = entity_task_processor(
                tokenizer, self.features, loading.labels, data_args, model_args.variant, converted
            )
            if converted and hasattr(processor, "added_token_sources"):
                model.init_added_word_embeddings(processor.added_token_sources())  # the markers, from LUKE's @ and #
            return processor

        recipe = loading.recipe(
            "--model_name_or_path is needed: a LUKE checkpoint, or a checkpoint of this script",
            processor_for_model,
            knowledge_files=True,
        )
        model, processor, tokenizer = load_for_task(recipe, model_args, data_args, explicit)
        processor.entity_links, processor.ner_finder = loading.links, loading.ner
        return LoadedModel(model, processor, tokenizer, loading.labels)

    def collator(self, processor: EntityTaskProcessor, variant: str) -> Any:
        """The processor's batches, plus the knowledge inputs of KAR/ERNIE (``VariantSpec.wrap_collator``: mentions
        matched to the tokenizer's entity titles)."""
        return VARIANTS[variant].wrap_collator(
            processor,
            processor.tokenizer,
            candidates=knowledge_candidates(processor),
            ner=getattr(processor, "ner_finder", None),
        )

    def featurise(self, processor: EntityTaskProcessor, examples: Any, split: str, data_args: Any) -> Dataset:
        """The processor's features; with ``--entity_links`` each also carries its mentions' gold KB entities."""
        features = processor.encode_all(examples)
        links = getattr(processor, "entity_links", None)
        if links is not None:
            features = gold_links(self.features, examples, features, links, processor)
        return Dataset.from_list(features)

    def decode(self, examples: Any, features: Dataset, outputs: Any, processor: Any) -> dict[str, Any]:
        predictions = self.decode_logits(examples, list(features), outputs, processor.label_names)
        return {str(example.id): prediction for example, prediction in zip(examples, predictions, strict=True)}

    def score(self, predictions: Mapping[str, Any], examples: Sequence[Any]) -> dict[str, float]:
        labelled = [example for example in examples if self.reference(example) is not None]
        return self.metric([predictions[str(e.id)] for e in labelled], [self.reference(e) for e in labelled])

    def write_predictions(
        self, predictions: Mapping[str, Any], examples: Any, output_dir: str | Path, split: str, data_args: Any
    ) -> Path:
        """``<split>_predictions.json``: ``[{"id", "prediction", "reference"}, ...]`` (NER spans as ``[start, end,
        type]`` word spans, end exclusive)."""
        path = Path(output_dir) / f"{split}_predictions.json"
        write_json_atomically(path, self.prediction_rows(examples, [predictions[str(e.id)] for e in examples]))
        return path

    def prediction_rows(self, examples: Sequence[Any], predictions: Sequence[Any]) -> list[dict[str, Any]]:
        rows = []
        for example, prediction in zip(examples, predictions, strict=True):
            reference = self.reference(example)
            if self.name == "ner":
                prediction = [list(span) for span in prediction]
                reference = None if reference is None else [list(span) for span in reference]
            rows.append({"id": example.id, "prediction": prediction, "reference": reference})
        return rows


def check_links_match(path: str, links: Mapping[str, Any], examples: Mapping[str, Sequence[Any]]) -> None:
    """``--entity_links``' ids must name examples of the run: one ``ScriptArgumentError`` naming the file when they
    match no training example (the linker would train on nothing: ``L_EL`` 0), else the count matched is logged."""
    for split, rows in examples.items():
        matched = sum(str(example.id) in links for example in rows)
        logger.info(f"--entity_links {path}: {matched} of the {len(rows)} {split} examples have gold links")
        if split == "train" and matched == 0:
            shown = ", ".join(repr(key) for key in list(links)[:2])
            first = ", ".join(repr(str(example.id)) for example in rows[:2])
            raise ScriptArgumentError(
                f"--entity_links {path}: none of its {len(links)} ids ({shown}, ...) names a training example (their "
                f"ids: {first}, ...), so the linker would learn nothing (linking_loss 0): give each record the 'id' "
                "of its example (Open Entity's annot_id, TACRED's id, '<file name>:<first line>' of a CoNLL sentence)"
            )


# each paper's own fine-tuning inputs for typing and relations (``--input_format`` left out): ERNIE's markers for
# ERNIE, KnowBERT's for KAR; LUKE's [MASK] entities for GESA and LUKE
VARIANT_INPUT_FORMATS = {"ernie": "ernie", "kar": "knowbert"}


def default_input_format(variant: str, task: str) -> str:
    """The ``--input_format`` a run converted from LUKE takes when the flag is left out (``VARIANT_INPUT_FORMATS``;
    ``luke`` for the tasks without markers)."""
    return VARIANT_INPUT_FORMATS.get(variant, "luke") if task in MARKED_TASKS else "luke"


def entity_task_processor(
    tokenizer: PreTrainedTokenizerBase,
    task: str,
    labels: Sequence[str],
    data_args: Any,
    variant: str = "gesa",
    converted: bool = True,
) -> EntityTaskProcessor:
    """The task's processor for ``--input_format``: LUKE's (``EntityTaskProcessor``), or ERNIE's / KnowBERT's markers
    (``MarkedEntityTaskProcessor``). Left out, a model ``converted`` from LUKE takes its variant's paper's format
    (``default_input_format``) and a checkpoint of the script its own; a checkpoint trained with markers keeps them
    (its tokenizer holds them)."""
    input_format = getattr(data_args, "input_format", None)
    if input_format is not None and not converted and task in MARKED_TASKS:
        trained = input_format_of(tokenizer, task)
        if input_format != trained:  # the checkpoint's word table has rows for its own markers only
            raise ScriptArgumentError(
                f"--input_format {input_format}: the checkpoint was trained with --input_format {trained} (its "
                f"tokenizer holds {'no markers' if trained == 'luke' else trained + ' markers'}), and its word table "
                f"has no rows for {input_format}'s: drop --input_format (a checkpoint keeps its own), or train a new "
                f"model from a LUKE checkpoint with --input_format {input_format}"
            )
    if input_format is None:
        input_format = default_input_format(variant, task) if converted else "luke"
    if input_format == "luke" and task in MARKED_TASKS:
        input_format = input_format_of(tokenizer, task)
    settings = (data_args.max_seq_length, data_args.max_span_length, data_args.max_entities)
    if input_format == "luke":
        return EntityTaskProcessor(tokenizer, task, labels, *settings)
    return MarkedEntityTaskProcessor(tokenizer, task, labels, *settings, input_format=input_format)


# Open Entity's and FIGER's typing head per variant (FIGER trains the same head on its own types) and their chance
TYPING_HEADS = {
    "gesa": GesaForEntityClassification,
    "luke": GesaForEntityClassification,
    "kar": KarForEntityClassification,
    "ernie": ErnieForEntityClassification,
}


def typing_chance_of(examples: Sequence[Any]) -> float:
    """A coin per type (``typing_chance``) on the examples' type sets."""
    return typing_chance([example.labels for example in examples])


ENTITY_TASKS: dict[str, EntityTask] = {
    task.name: task
    for task in (
        EntityTask(
            name="entity_typing",
            title="Open Entity",
            description="Open Entity: multi-label typing of one mention (BCE), micro P/R/F1",
            file_format="Open Entity crowd JSON lines",
            heads=TYPING_HEADS,
            decode_logits=decode_types,
            reference_of=lambda example: sorted(example.labels),
            metric=typing_micro_prf,
            chance_of=typing_chance_of,
            unit="mentions",
            item="mention",
        ),
        EntityTask(
            name="figer",
            title="FIGER",
            description="FIGER: hierarchical multi-label typing of one mention (BCE), strict accuracy, loose macro / "
            "micro F1",
            file_format="FIGER JSON (ERNIE's: sent, start, end, labels)",
            heads=TYPING_HEADS,
            decode_logits=decode_figer_types,
            reference_of=lambda example: sorted(example.labels),
            metric=figer_metrics,
            chance_of=typing_chance_of,
            chance_metric="micro_f1",  # a coin per type: its loose micro F1 is Open Entity's micro F1
            metric_for_best_model="accuracy",
            metric_names={"accuracy": "strict accuracy", "macro_f1": "loose macro-F1", "micro_f1": "loose micro-F1"},
            unit="mentions",
            item="mention",
            features_task="entity_typing",
        ),
        EntityTask(
            name="relation_classification",
            title="TACRED",
            description="TACRED: the relation between a head and a tail mention, micro P/R/F1 without no_relation",
            file_format="TACRED JSON",
            heads={
                "gesa": GesaForEntityPairClassification,
                "luke": GesaForEntityPairClassification,
                "kar": KarForEntityPairClassification,
                "ernie": ErnieForEntityPairClassification,
            },
            decode_logits=decode_relations,
            reference_of=lambda example: example.relation,
            metric=relation_micro_prf,
            chance_of=lambda examples: relation_chance([example.relation for example in examples]),
            unit="sentences",
            item="sentence",
        ),
        EntityTask(
            name="ner",
            title="CoNLL-2003",
            description="CoNLL-2003: typed entity spans over candidate word spans, exact span F1",
            file_format="CoNLL-2003 column file",
            heads={
                "gesa": GesaForEntitySpanClassification,
                "luke": GesaForEntitySpanClassification,
                "kar": KarForEntitySpanClassification,
                "ernie": ErnieForEntitySpanClassification,
            },
            decode_logits=decode_spans,
            reference_of=lambda example: [tuple(span) for span in example.spans],
            metric=span_f1,
            # every span of at most 16 words (the script's default --max_span_length) guessed
            chance_of=lambda examples: span_chance([e.spans for e in examples], [len(e.tokens) for e in examples]),
            auto_class="AutoModelForTokenClassification",
            metric_names={"f1": "span F1", "precision": "precision", "recall": "recall"},
            unit="sentences",
            item="sentence",
        ),
    )
}


# ----------------------------------------------------------------------------------------------- models


def task_tokenizer(name_or_path: str, variant: str = "gesa", **hub: Any) -> PreTrainedTokenizerBase:
    """A LUKE tokenizer whose entity vocabulary is LUKE's special entities only (ids 0-3), the rows
    ``special_entity_rows`` keeps: a fine-tuned head reads no other entity. KAR and ERNIE keep LUKE's whole vocabulary
    (their knowledge base and its titles)."""
    tokenizer = load_tokenizer(name_or_path, **hub)
    check_luke_tokenizer(tokenizer, name_or_path)
    if not VARIANTS[variant].shrink_entity_table:
        return tokenizer
    return load_tokenizer(name_or_path, entity_vocab={name: i for i, name in enumerate(SPECIAL_ENTITIES)}, **hub)


def check_luke_tokenizer(tokenizer: PreTrainedTokenizerBase, source: str) -> None:
    """``ScriptArgumentError`` naming ``source`` unless the tokenizer has LUKE's entity vocabulary."""
    special_entity_rows(tokenizer, source)


def build_task_model(
    task: EntityTask,
    variant: str,
    name_or_path: str,
    label_names: Sequence[str] | None,
    luke_tokenizer: PreTrainedTokenizerBase | None,
    hub: dict[str, Any] | None = None,
    **overrides: Any,
) -> PreTrainedModel:
    """The variant's head for ``task``: converted from a LUKE checkpoint (``luke_tokenizer``: its own tokenizer, for
    the entity rows kept; ``label_names``: the head's classes), or loaded from a checkpoint of this script
    (``luke_tokenizer=None``; its ``id2label`` are the classes)."""
    head = task.head_for(variant)
    spec = dataclasses.replace(VARIANTS[variant], model_class=head)
    if luke_tokenizer is not None:
        id2label = dict(enumerate(label_names or ()))
        return spec.from_luke(
            name_or_path,
            entity_rows=special_entity_rows(luke_tokenizer, name_or_path) if spec.shrink_entity_table else None,
            hub=hub,
            id2label=id2label,
            label2id={name: i for i, name in id2label.items()},
            **overrides,
        )
    return spec.from_checkpoint(name_or_path, hub=hub)


def check_links_and_label_names(model_args: Any, data_args: Any, args: Any) -> None:
    """``--entity_links`` only with KAR (its linker learns from them); the Trainer's ``label_names`` set to the
    heads' ``labels`` (Trainer's default, each forward argument named *label*, would also wait for
    ``next_sentence_label``, which data without documents never gives: no evaluation loss at all)."""
    if getattr(data_args, "entity_links", None) is not None and model_args.variant != "kar":
        raise ScriptArgumentError(
            f"--entity_links trains KnowBERT-KAR's entity linker; --variant {model_args.variant} has none: drop "
            "it, or pass --variant kar"
        )
    if args.label_names is None:
        args.label_names = ["labels"]


class EntityLoading:
    """What one entity task's run gives the one loader (``training.models.load_for_task``): its checks of
    ``--model_name_or_path`` (``check_entity_checkpoint``) and its build of the head the data decides
    (``load_model_and_tokenizer``: the training split's labels, the pre-training entity vocabulary, a pre-training
    checkpoint's encoder under a new task head), with ``--entity_links`` (matched against the examples) and the NER
    pipeline checked before any weight loads. After the load it holds the head's ``labels`` (``None`` for
    pre-training), the ``links`` and the ``ner`` pipeline."""

    def __init__(self, task: Task, model_args: Any, data_args: Any, examples: Mapping[str, Any]) -> None:
        self.task, self.model_args, self.data_args, self.examples = task, model_args, data_args, examples
        self.labels: list[str] | None = None
        self.links: dict[str, Any] | None = None
        self.ner: Any = None

    def recipe(
        self,
        needs_path: str,
        processor_for_model: Callable[[PreTrainedModel, Any, dict[str, Any]], Any],
        knowledge_files: bool,
    ) -> ModelRecipe:
        """The task's ``ModelRecipe``: its own source check and build, its processor once the model is built
        (``processor_for_model``), the KB files where they apply (``knowledge_files``)."""
        variant = self.model_args.variant
        return ModelRecipe(
            self.task.variant_spec(variant),
            f"--task {self.task.name} --variant {variant}",
            None,
            needs_path=needs_path,
            entity_rows=None,  # the build keeps its own rows (the special entities, or the data's vocabulary)
            processor_for_model=processor_for_model,
            knowledge_files=knowledge_files,
            check_source=self.check_source,
            build_model=self.build_model,
        )

    def check_source(self, path: str, hub: dict[str, Any]) -> dict[str, Any]:
        """``check_entity_checkpoint`` for the task's variant and ``--max_seq_length``."""
        spec = self.task.variant_spec(self.model_args.variant)
        run = f"--task {self.task.name} --variant {self.model_args.variant}"
        return check_entity_checkpoint(self.model_args, spec, self.data_args.max_seq_length, run)

    def build_model(self, config: dict[str, Any], tokenizer: Any) -> tuple[PreTrainedModel, Any]:
        """``--entity_links`` and the NER pipeline checked, then ``load_model_and_tokenizer`` (a checkpoint that does
        not fit the task, variant, labels or entity table: one ``ScriptArgumentError`` naming it)."""
        model_args = self.model_args
        links_file = getattr(self.data_args, "entity_links", None)
        self.links = None if links_file is None else load_entity_links(links_file)
        if self.links is not None:
            check_links_match(links_file, self.links, self.examples)
        self.ner = load_ner(model_args)
        overrides = {} if model_args.ablation is None else {"ablation": model_args.ablation}
        overrides.update(self.task.config_overrides(self.data_args))
        try:
            model, tokenizer, self.labels = load_model_and_tokenizer(
                self.task.name, model_args.variant, model_args.model_name_or_path, self.examples,
                model_args.tokenizer_name, hub_kwargs(model_args), 0, **overrides,
            )  # fmt: skip
        except (OSError, ValueError) as error:
            raise ScriptArgumentError(f"--model_name_or_path {model_args.model_name_or_path}: {error}") from None
        return model, tokenizer


def check_entity_checkpoint(
    model_args: Any, spec: Any, max_seq_length: int | None = None, run: str | None = None
) -> dict[str, Any]:
    """``--model_name_or_path``'s config (returned) checked before any weight loads: its fields and values
    (``check_config_fields`` / ``check_config_values``), ``--max_seq_length`` against its absolute positions, a
    trained checkpoint's head (the task's, or the variant's pre-training one: ``check_checkpoint_head``, naming the
    task or variant that differs; ``run``: this run's flags) and its classes (``id2label``: ids 0 .. n-1, none
    missing). The loader then reads the tokenizer
    (``load_run_tokenizer``, naming ``--tokenizer_name`` when it is the one at fault)."""
    path = model_args.model_name_or_path
    config = checkpoint_config(path, "a LUKE or a run_entity_tasks.py", **hub_kwargs(model_args))
    check_config_fields(path, config)
    overrides = {} if model_args.ablation is None else {"ablation": model_args.ablation}
    check_max_seq_length(max_seq_length, position_limit(spec, config, overrides), path)
    if config.get("model_type") == "luke":
        return config
    architecture = (config.get("architectures") or [None])[0]
    pretraining = architecture if PRETRAIN.is_pretraining_head(spec.name, architecture) else None
    also = (pretraining,) if pretraining else ()  # its encoder starts a new task head
    check_checkpoint_head(path, config, spec, run or f"--variant {spec.name}", also=also)
    check_config_values(path, config, spec.config_class)
    if pretraining is None:
        check_id2label(path, config.get("id2label"))  # a pre-training checkpoint has no task classes yet
    return config


def check_id2label(path: str, id2label: Any) -> None:
    """A trained head's ``config.id2label`` must name every class id ``0 .. n-1`` (n >= 1)."""
    fix = "save the model again, or give a LUKE checkpoint with --do_train to train a new head"
    if not isinstance(id2label, dict) or not id2label:
        raise ScriptArgumentError(f"--model_name_or_path {path}: its config.json has no id2label (the head's classes); "
                                  f"{fix}")  # fmt: skip
    try:
        ids = sorted(int(key) for key in id2label)
    except (TypeError, ValueError):
        raise ScriptArgumentError(
            f"--model_name_or_path {path}: its config.json's id2label has keys that are not class ids "
            f"({sorted(map(str, id2label))[:4]}); {fix}"
        ) from None
    if ids != list(range(len(ids))):
        missing = sorted(set(range(max(ids) + 1)) - set(ids))[:4]
        raise ScriptArgumentError(
            f"--model_name_or_path {path}: its config.json's id2label skips class ids {missing} (it must number the "
            f"classes 0 .. n-1); {fix}"
        )


def checkpoint_labels(model: PreTrainedModel) -> list[str]:
    """A trained head's classes in id order (``config.id2label``)."""
    id2label = {int(key): value for key, value in model.config.id2label.items()}
    return [id2label[i] for i in range(len(id2label))]


def load_model_and_tokenizer(
    task_name: str,
    variant: str,
    name_or_path: str,
    examples: Mapping[str, Sequence[Any]],
    tokenizer_name: str | None = None,
    hub: dict[str, Any] | None = None,
    seed: int = 0,
    **overrides: Any,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, list[str] | None]:
    """What ``run_entity_tasks.py`` trains: ``(model, tokenizer, label names)`` (``None`` for pre-training).

    From a LUKE checkpoint: the variant's head converted with ``from_luke_pretrained`` (``overrides``: config values),
    labelled with the training examples' labels (``examples["train"]``), or the pre-training head with the data's
    entity table. From a checkpoint of the script: the head it holds, which must be the variant's for the task; its
    labels are its ``id2label``. A checkpoint that does not fit is one ``ValueError`` saying what to pass instead.
    """
    from transformers import PretrainedConfig

    hub = hub or {}
    tokenizer_path = tokenizer_name or name_or_path
    config = PretrainedConfig.get_config_dict(name_or_path, **hub)[0]
    if task_name == PRETRAIN.name:
        objectives = overrides.get("pretraining_objectives")
        head = PRETRAIN.head_for(variant, objectives=objectives)
        if VARIANTS[variant].is_pretraining_checkpoint(config):  # its own pre-training goes on: weights, tokenizer
            # (ERNIE: the pre-training entity vocabulary) and KB files (KAR: the loader attaches the ones it carries)
            architecture = (config.get("architectures") or [None])[0]
            if architecture != head.__name__:  # seed 002's objectives' head, or LUKE's, goes on only as itself
                with_objectives = "with --objectives" if objectives is None else "without --objectives"
                raise ValueError(
                    f"holds a {architecture} (--task pretrain --variant {variant} {with_objectives}), but this run "
                    f"trains a {head.__name__}; go on {with_objectives}, or give a LUKE checkpoint"
                )
            extra = {} if objectives is None else {"pretraining_objectives": objectives}  # this run's objectives
            return head.from_pretrained(name_or_path, **extra, **hub), load_tokenizer(tokenizer_path, **hub), None
        if config.get("model_type") != "luke":
            raise ValueError(
                f"--task pretrain starts from a LUKE checkpoint or goes on from a --task pretrain --variant {variant} "
                f"checkpoint ({head.__name__}); this is a {config.get('model_type')!r} "
                f"{(config.get('architectures') or ['model'])[0]}"
            )
        luke = load_tokenizer(tokenizer_path, **hub)
        check_luke_tokenizer(luke, tokenizer_path)
        if variant == "kar":  # KnowBERT: the KB is LUKE's entity table (or --kb_* files), the tokenizer LUKE's own
            spec = dataclasses.replace(VARIANTS[variant], model_class=PRETRAIN.head_for(variant))
            return spec.from_luke(name_or_path, hub=hub, **overrides), luke, None
        vocabulary = pretraining_vocabulary([example for split in examples.values() for example in split])
        model = build_pretraining_model(variant, name_or_path, vocabulary, luke, hub, seed, **overrides)
        return model, pretraining_tokenizer(tokenizer_path, vocabulary, **hub), None
    task = ENTITY_TASKS[task_name]
    if config.get("model_type") == "luke":
        if "train" not in examples:
            raise ValueError("a LUKE checkpoint has no head for this task yet: pass --do_train with --train_file, or "
                             "give a checkpoint run_entity_tasks.py trained")  # fmt: skip
        luke = load_tokenizer(tokenizer_path, **hub)
        check_luke_tokenizer(luke, tokenizer_path)
        labels = task.label_names(examples["train"])
        model = build_task_model(task, variant, name_or_path, labels, luke, hub, **overrides)
        return model, task_tokenizer(tokenizer_path, variant, **hub), labels
    head = task.head_for(variant)
    expected = VARIANTS[variant].config_class.model_type
    architecture = (config.get("architectures") or [head.__name__])[0]
    if (
        config.get("model_type") == expected
        and PRETRAIN.is_pretraining_head(variant, architecture)
        and architecture != head.__name__
    ):
        # the variant's pre-training checkpoint (KnowBERT's KAR, ERNIE's fusion): its encoder, a new task head
        if "train" not in examples:
            raise ValueError("a pre-training checkpoint has no head for this task yet: pass --do_train with "
                             "--train_file, or give a checkpoint run_entity_tasks.py fine-tuned")  # fmt: skip
        labels = task.label_names(examples["train"])
        id2label = dict(enumerate(labels))
        model = head.from_pretrained(name_or_path, id2label=id2label, label2id={v: k for k, v in id2label.items()},
                                     **hub)  # fmt: skip
        model.started_from_pretraining = name_or_path
        return model, load_tokenizer(tokenizer_path, **hub), labels
    if config.get("model_type") != expected or architecture != head.__name__:
        raise ValueError(
            f"it holds a {config.get('model_type')!r} model ({config.get('architectures')}), but --task {task.name} "
            f"--variant {variant} needs a {expected!r} {head.__name__}: pass the --variant it was trained with, or a "
            "LUKE checkpoint to convert"
        )
    model = build_task_model(task, variant, name_or_path, None, None, hub)
    return model, load_tokenizer(tokenizer_path, **hub), checkpoint_labels(model)


# ----------------------------------------------------------------------------------------------- pre-training


def mention_spans(example: Any) -> list[tuple[int, int]]:
    """The entity mentions of an entity-task example: NER's gold spans, the typed mention, a relation's two."""
    if hasattr(example, "spans"):
        return [(start, end) for start, end, _ in example.spans]
    if hasattr(example, "head"):
        return [tuple(example.head), tuple(example.tail)]
    return [(example.start, example.end)]


def mention_text(example: Any, span: tuple[int, int]) -> str:
    return " ".join(example.tokens[span[0] : span[1]])


def pretraining_vocabulary(examples: Sequence[Any]) -> dict[str, int]:
    """LUKE's special entities (0-3), then every distinct mention text of the data, sorted."""
    names = sorted({mention_text(example, span) for example in examples for span in mention_spans(example)})
    return {**{name: i for i, name in enumerate(SPECIAL_ENTITIES)}, **{n: 4 + i for i, n in enumerate(names)}}


def pretraining_entity_rows(vocabulary: Mapping[str, int], luke_tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """For each entity of ``vocabulary`` (in id order), LUKE's row of that title, else LUKE's ``[UNK]`` row."""
    luke = luke_tokenizer.entity_vocab
    return [luke.get(name, luke.get("[MASK]") if name == "[MASK2]" else luke["[UNK]"]) for name in vocabulary]


def pretraining_tokenizer(name_or_path: str, vocabulary: Mapping[str, int], **hub: Any) -> PreTrainedTokenizerBase:
    """LUKE's tokenizer with ``vocabulary`` as its entity vocabulary (saved with the pre-trained model)."""
    return load_tokenizer(name_or_path, entity_vocab=dict(vocabulary), **hub)


def encode_mentions(
    tokenizer: PreTrainedTokenizerBase,
    example: Any,
    max_length: int,
    gold: Sequence[int] | None = None,
) -> tuple[dict[str, Any], int]:
    """One sentence's word ids with an entity at every mention (``encode_word_prefix``): the mention's text in the
    pre-training entity vocabulary, or, with ``gold`` (KAR: one gold KB row per mention, ``GoldLinker``), ``[MASK]``
    (KnowBERT reads no entity input: the linker finds the entities) and the kept mentions' ``kar_gold_entities``."""
    spans = mention_spans(example)
    names = ["[MASK]"] * len(spans) if gold is not None else [mention_text(example, span) for span in spans]
    # LukeTokenizer cannot truncate with entities: the longest word prefix that fits, with its mentions
    encoded, kept = encode_word_prefix(tokenizer, example.tokens, spans, names, max_length)
    if gold is not None:
        encoded["kar_gold_entities"] = [g for g, (_, end) in zip(gold, spans, strict=True) if end <= kept]
    return encoded, kept


def encode_pretraining(
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Any],
    max_length: int,
    golds: Sequence[Sequence[int]] | None = None,
) -> list[dict]:
    """Word ids and, at every mention, its entity (by its text in the pre-training entity vocabulary; ``golds``, per
    example: KAR's ``[MASK]`` entities and gold links, ``encode_mentions``)."""
    features, cut = [], 0
    for index, example in enumerate(examples):
        encoded, kept = encode_mentions(tokenizer, example, max_length, None if golds is None else golds[index])
        cut += kept < len(example.tokens)
        features.append(encoded)
    if cut:
        logger.warning(
            f"{cut} of {len(examples)} pre-training sentences are longer than max_length={max_length} tokens: each "
            "keeps its longest word prefix that fits, with the mentions in it (raise --max_seq_length to keep more)"
        )
    return features


def sentence_pairs(examples: Sequence[Any], seed: int = 0) -> list[tuple[int, int, int]] | None:
    """BERT's next-sentence pairs over the documents of the data (CoNLL's ``-DOCSTART-`` documents: ``document``):
    ``(first, second, label)`` example indices, for every sentence the one after it in its document (label 0) or,
    half the time and for a document's last sentence, a random other sentence that does not follow it (label 1).
    ``None`` when no document has two sentences (single sentences: no NSP)."""
    documents: dict[str, list[int]] = {}
    for index, example in enumerate(examples):
        document = getattr(example, "document", None)
        if document is not None:
            documents.setdefault(document, []).append(index)
    if not any(len(indices) > 1 for indices in documents.values()) or len(examples) < 3:
        return None
    following = {a: b for indices in documents.values() for a, b in zip(indices, indices[1:], strict=False)}
    draw = random.Random(seed)
    pairs = []
    for first in range(len(examples)):
        if first in following and draw.random() < 0.5:
            pairs.append((first, following[first], 0))
            continue
        second = draw.choice([i for i in range(len(examples)) if i not in (first, following.get(first))])
        pairs.append((first, second, 1))
    return pairs


def encode_pretraining_pairs(
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Any],
    pairs: Sequence[tuple[int, int, int]],
    max_length: int,
    golds: Sequence[Sequence[int]] | None = None,
) -> list[dict]:
    """Each pair as RoBERTa's (LUKE's) pair input ``<s> A </s></s> B </s>`` with the mentions of both sentences
    (each sentence the longest word prefix that fits its half of ``max_length``) and its ``next_sentence_label``
    (``golds``: as ``encode_pretraining``'s, both sentences' in order)."""
    halves = (max(max_length // 2, 3), max(max_length - max_length // 2, 3))
    features = []
    for first, second, label in pairs:
        parts = []
        for index, half in zip((first, second), halves, strict=True):
            gold = None if golds is None else golds[index]
            parts.append(encode_mentions(tokenizer, examples[index], half, gold)[0])
        a, b = parts
        shift = len(a["input_ids"])
        pair = {
            "input_ids": a["input_ids"] + [tokenizer.sep_token_id] + b["input_ids"][1:],  # B's <s> becomes </s>
            "attention_mask": a["attention_mask"] + b["attention_mask"],
            "next_sentence_label": label,
        }
        if "entity_ids" in a or "entity_ids" in b:
            moved = [[p + shift if p >= 0 else p for p in row] for row in b.get("entity_position_ids", [])]
            pair["entity_ids"] = a.get("entity_ids", []) + b.get("entity_ids", [])
            pair["entity_position_ids"] = a.get("entity_position_ids", []) + moved
            pair["entity_attention_mask"] = a.get("entity_attention_mask", []) + b.get("entity_attention_mask", [])
        if golds is not None:
            pair["kar_gold_entities"] = a["kar_gold_entities"] + b["kar_gold_entities"]
        features.append(pair)
    return features


def build_pretraining_model(
    variant: str,
    name_or_path: str,
    vocabulary: Mapping[str, int],
    luke_tokenizer: PreTrainedTokenizerBase,
    hub: dict[str, Any] | None = None,
    seed: int = 0,
    **overrides: Any,
) -> PreTrainedModel:
    """The variant's pre-training head from a LUKE checkpoint, its entity table holding ``vocabulary``'s entities
    (ERNIE: its knowledge base, so every candidate the dEA collator draws is a row of it). Rows of entities LUKE's
    table lacks start random (normal, ``initializer_range``; ``seed``)."""
    spec = VARIANTS[variant]
    head = PRETRAIN.head_for(variant, objectives=overrides.get("pretraining_objectives"))
    rows = pretraining_entity_rows(vocabulary, luke_tokenizer)
    model = head.from_luke_pretrained(
        name_or_path, entity_rows=rows, **(hub or {}), **spec.config_overrides, **overrides
    )
    # entities LUKE does not know get distinct random rows (ERNIE's KB is frozen: equal rows could never be told apart)
    new = [index for name, index in vocabulary.items() if name not in luke_tokenizer.entity_vocab]
    if new:
        table = model.gesa.get_entity_embeddings().weight
        generator = torch.Generator().manual_seed(seed)
        fresh = torch.randn(len(new), table.size(1), generator=generator) * model.config.initializer_range
        with torch.no_grad():
            table[new] = fresh.to(table.dtype)
    return model


def _pad(tokenizer: PreTrainedTokenizerBase, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
    return dict(tokenizer.pad([dict(feature) for feature in features], return_tensors="pt"))


class MaskedEntityCollator:
    """LUKE's pre-training batch: masked words (``DataCollatorForLanguageModeling``: 15%, 80/10/10) and masked
    entities (each replaced by ``[MASK]`` with ``entity_mask_probability``); ``labels``/``entity_labels`` hold the
    originals at masked places, -100 elsewhere. Every example gets at least one masked word and, when it has an
    entity, one masked entity (a batch with none would make its loss 0/0)."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        mlm_probability: float = 0.15,
        entity_mask_probability: float = 0.15,
        seed: int = 0,
    ) -> None:
        self.tokenizer = tokenizer
        self.mlm = DataCollatorForLanguageModeling(tokenizer, mlm_probability=mlm_probability, return_tensors="pt")
        self.entity_mask_probability = entity_mask_probability
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        batch = self.mask_words(_pad(self.tokenizer, features))
        if "entity_ids" in batch:
            entities, real = batch["entity_ids"], batch["entity_attention_mask"].bool()
            draw = (torch.rand(entities.shape, generator=self.generator) < self.entity_mask_probability) & real
            first = real.long().argmax(1)
            rows = torch.arange(len(first))
            draw[rows, first] |= real[rows, first] & ~draw.any(1)
            batch["entity_labels"] = torch.where(draw, entities, torch.full_like(entities, -100))
            batch["entity_ids"] = entities.masked_fill(draw, self.tokenizer.entity_mask_token_id)
        return batch

    def mask_words(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The padded ``batch`` with its words masked (80/10/10) and ``labels``; one masked word per example at least."""
        words = batch["input_ids"]
        special = torch.isin(words, torch.tensor(self.tokenizer.all_special_ids))  # <s>, </s>, <pad>, ...
        original = words.clone()
        batch["input_ids"], batch["labels"] = self.mlm.torch_mask_tokens(words, special_tokens_mask=special)
        unmasked = (batch["labels"] == -100).all(1) & (~special).any(1)
        for row in unmasked.nonzero().flatten().tolist():  # one masked word per example at least
            column = int((~special[row]).nonzero()[0])
            batch["labels"][row, column] = original[row, column]
            batch["input_ids"][row, column] = self.tokenizer.mask_token_id
        return batch


class DeaCollator:
    """ERNIE's dEA batch: each mention's entity aligned to the mention's first word (``ernie_entity_ids``/
    ``ernie_entity_positions``, KB rows = the pre-training entity vocabulary), corrupted by
    ``modeling_ernie.corrupt_entity_alignments`` (5% replaced by another entity, 15% masked, 80% kept); every
    originally aligned word must predict its entity among the sequence's (``dea_labels``). LUKE's entity stream is
    left out (ERNIE reads the knowledge entities)."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        kb_size: int,
        replace_probability: float = 0.05,
        mask_probability: float = 0.15,
        seed: int = 0,
    ) -> None:
        self.tokenizer, self.kb_size = tokenizer, kb_size
        self.replace_probability, self.mask_probability = replace_probability, mask_probability
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        batch = _pad(self.tokenizer, features)
        real = batch.pop("entity_attention_mask").bool()
        ids = batch.pop("entity_ids").masked_fill(~real, -1)
        positions = batch.pop("entity_position_ids")[..., 0].masked_fill(~real, -1)
        batch.pop("entity_token_type_ids", None)
        batch.update(
            corrupt_entity_alignments(
                ids,
                positions,
                batch["input_ids"].size(1),
                self.kb_size,
                replace_prob=self.replace_probability,
                mask_prob=self.mask_probability,
                generator=self.generator,
            )
        )
        return batch


class ErniePretrainingCollator(DeaCollator):
    """ERNIE's pre-training batch (``ErnieForPreTraining``): every mention of the sentence aligned through the alias
    table (``processing_kb.KnowledgeInputBuilder``: the data's own mentions, then every other span whose text is an
    entity of the pre-training vocabulary), the alignments corrupted for dEA (``DeaCollator``) and the words masked
    for MLM (``MaskedEntityCollator.mask_words``: ``labels``)."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        kb_size: int,
        mlm_probability: float = 0.15,
        seed: int = 0,
        ner: Callable[[str], Sequence[tuple[int, int]]] | None = None,
    ) -> None:
        super().__init__(tokenizer, kb_size, seed=seed)
        self.words = MaskedEntityCollator(tokenizer, mlm_probability=mlm_probability, seed=seed)
        candidates = EntityCandidateGenerator(tokenizer.entity_vocab)
        self.aligner = KnowledgeInputBuilder(tokenizer, candidates, "ernie", ner=ner)

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        labels = [feature.get("next_sentence_label") for feature in features]
        features = [{k: v for k, v in feature.items() if k != "next_sentence_label"} for feature in features]
        batch = self.aligner(_pad(self.tokenizer, features))
        if any(label is not None for label in labels):  # sentence pairs: NSP
            batch["next_sentence_label"] = torch.tensor([-100 if x is None else x for x in labels], dtype=torch.long)
        for name in ("entity_ids", "entity_attention_mask", "entity_position_ids", "entity_token_type_ids"):
            batch.pop(name, None)
        batch.update(
            corrupt_entity_alignments(
                batch.pop("ernie_entity_ids"),
                batch.pop("ernie_entity_positions"),
                batch["input_ids"].size(1),
                self.kb_size,
                replace_prob=self.replace_probability,
                mask_prob=self.mask_probability,
                generator=self.generator,
            )
        )
        return self.words.mask_words(batch)


class KarPretrainingCollator:
    """KnowBERT's pre-training batch (``KarForPreTraining``): the KAR inputs from the unmasked words (``knowledge``:
    the registry's ``KnowledgeCollator``: the data's mentions at ``[MASK]`` entities and every other alias span, their
    candidates with priors and NULL, the gold links as ``kar_gold_candidates``), then the words masked for MLM
    (``words.mask_words``: ``labels``) and, for sentence pairs, ``next_sentence_label``."""

    def __init__(self, knowledge: Callable[[Sequence[Mapping[str, Any]]], dict], words: MaskedEntityCollator) -> None:
        self.knowledge, self.words = knowledge, words

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        labels = [feature.get("next_sentence_label") for feature in features]
        batch = self.knowledge([{k: v for k, v in f.items() if k != "next_sentence_label"} for f in features])
        if any(label is not None for label in labels):  # sentence pairs: NSP
            batch["next_sentence_label"] = torch.tensor([-100 if x is None else x for x in labels], dtype=torch.long)
        return self.words.mask_words(batch)


class LoggedLossesCallback(TrainerCallback):
    """Adds a model's separate losses (``pop_logged_losses``: ERNIE's ``mlm_loss`` and ``dea_loss``) to each training
    log line and to ``trainer_state.json``'s ``log_history``, next to the summed ``loss``; and its evaluation metrics
    (``pop_evaluation_metrics``: ERNIE's dEA accuracy and chance, KAR's linking accuracy and the prior's) to each
    evaluation's metrics (``eval_*``: the results files, the summary line) and its ``log_history`` entry."""

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: dict | None = None, model: Any = None, **kwargs: Any
    ) -> None:
        if metrics is None or not hasattr(model, "pop_evaluation_metrics"):
            return
        extra = {f"eval_{name}": round(value, 4) for name, value in model.pop_evaluation_metrics().items()}
        metrics.update(extra)
        if state.log_history and "eval_loss" in state.log_history[-1]:
            state.log_history[-1].update(extra)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict | None = None, model: Any = None, **kwargs: Any
    ) -> None:
        if not logs or "loss" not in logs or not hasattr(model, "pop_logged_losses"):
            return
        losses = {name: round(value, 4) for name, value in model.pop_logged_losses().items()}
        logs.update(losses)
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1].update(losses)


class PretrainingProcessor:
    """The pre-training features (``encode_pretraining``) and batches (``MaskedEntityCollator``, or ERNIE's
    ``DeaCollator`` over the model's entity table as its KB); saves the tokenizer with its pre-training entity
    vocabulary."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, variant: str, max_length: int, kb_size: int,
                 mlm_probability: float = 0.15, entity_mask_probability: float = 0.15, seed: int = 0,
                 ner: Callable[[str], Sequence[tuple[int, int]]] | None = None) -> None:  # fmt: skip
        self.tokenizer, self.variant, self.max_length, self.kb_size = tokenizer, variant, max_length, kb_size
        self.mlm_probability, self.entity_mask_probability, self.seed = mlm_probability, entity_mask_probability, seed
        self.ner = ner

    def encode_all(self, examples: Sequence[Any]) -> list[dict]:
        """The sentences' features; for ERNIE and KAR, next-sentence pairs where the data has documents
        (``sentence_pairs``: MLM + NSP + dEA / L_EL), single sentences otherwise; KAR's with the gold links of
        ``--entity_links`` (``GoldLinker``; -1: no gold) at ``[MASK]`` entities."""
        golds = None
        if self.variant == "kar":
            links = getattr(self, "entity_links", None) or {}
            linker = GoldLinker(examples, links, self)
            golds = [linker(example, mention_spans(example)) for example in examples]
            linker.log()
        name = {"ernie": "ERNIE", "kar": "KnowBERT"}.get(self.variant)
        if name is not None:
            objective = "dEA" if self.variant == "ernie" else "L_EL"
            pairs = sentence_pairs(examples, self.seed)
            if pairs is not None:
                logger.info(f"{name} pre-training: {len(pairs)} sentence pairs from the data's documents (NSP)")
                return encode_pretraining_pairs(self.tokenizer, examples, pairs, self.max_length, golds)
            logger.info(
                f"{name} pre-training: the data has no document of two sentences, so no NSP (MLM + {objective})"
            )
        return encode_pretraining(self.tokenizer, examples, self.max_length, golds)

    def get_data_collator(self) -> MaskedEntityCollator | DeaCollator | KarPretrainingCollator:
        head = PRETRAIN.head_for(self.variant)
        if head is KarForPreTraining:
            knowledge = VARIANTS["kar"].wrap_collator(
                functools.partial(_pad, self.tokenizer), self.tokenizer, candidates=knowledge_candidates(self)
            )
            return KarPretrainingCollator(knowledge, MaskedEntityCollator(self.tokenizer, self.mlm_probability,
                                                                          seed=self.seed))  # fmt: skip
        if head is ErnieForPreTraining:
            return ErniePretrainingCollator(
                self.tokenizer, self.kb_size, self.mlm_probability, seed=self.seed, ner=self.ner
            )
        if head is ErnieForDenoisingEntityAutoencoder:
            return DeaCollator(self.tokenizer, kb_size=self.kb_size, seed=self.seed)
        return MaskedEntityCollator(self.tokenizer, mlm_probability=self.mlm_probability,
                                    entity_mask_probability=self.entity_mask_probability, seed=self.seed)  # fmt: skip

    def save_pretrained(self, save_directory: str | Path, **kwargs: Any) -> None:
        self.tokenizer.save_pretrained(save_directory, **kwargs)


# the word tokens per pre-training window of a long variant unless --max_seq_length says otherwise (256 for the
# others): Longformer's pre-training length, a SciREX paper (about 6,000 words) in two windows
LONG_PRETRAIN_LENGTHS = {"long_luke": 4096}


@dataclass
class PretrainTask(Task):
    """``--task pretrain``: the objective per variant (module docstring); the data of any entity task's format
    (``--pretrain_format``) gives the sentences and their mentions. Evaluation reports the loss only."""

    name: str = "pretrain"
    title: str = "Pre-training"
    description: str = (
        "LUKE's MLM + masked-entity prediction (gesa, luke; with --objectives, ERICA's and KBIR's objectives too); "
        "ERNIE's MLM + NSP + dEA (ernie); KnowBERT's MLM + NSP + L_EL (kar); with --objectives, seed 002's "
        "objectives on whole documents (long_luke)"
    )
    file_format: str = "any entity task's files (--pretrain_format)"
    heads: dict = field(
        default_factory=lambda: {
            "gesa": GesaForMaskedLM,
            "luke": GesaForMaskedLM,
            "ernie": ErnieForPreTraining,
            "kar": KarForPreTraining,
            # the long variant pre-trains through seed 002's objectives only (--objectives; check_arguments)
            "long_luke": LongLukeForEntityPreTraining,
        }
    )
    # the head of --objectives other than LUKE's own (seed 002's ERICA and KBIR objectives; training.entity_objectives)
    objective_heads: dict = field(
        default_factory=lambda: {
            "gesa": GesaForEntityPreTraining,
            "luke": GesaForEntityPreTraining,
            "long_luke": LongLukeForEntityPreTraining,
        }
    )
    document_readers: dict = field(
        default_factory=lambda: {"docred": read_docred_file, "scirex": read_scirex_documents}
    )
    metric_for_best_model: str = "loss"
    metric_names: dict = field(
        default_factory=lambda: {
            "loss": "loss",
            "dea_accuracy": "dEA accuracy",
            "dea_chance": "dEA chance",
            "linking_accuracy": "linking accuracy",
            "linking_prior_accuracy": "prior's linking accuracy",
            "linking_null_precision": "NULL precision",
            "linking_null_recall": "NULL recall",
            **OBJECTIVE_METRIC_NAMES,
        }
    )
    unit: str = "sentences"
    item: str = "sentence"
    scores_predictions: bool = False
    remove_unused_columns: bool = False

    def formats(self) -> list[str]:
        """The ``--pretrain_format`` values: any entity task's, and the document formats (``document_readers``)."""
        return [*ENTITY_TASKS, *self.document_readers]

    def head_for(self, variant: str, objectives: Mapping[str, Any] | None = None) -> type[PreTrainedModel]:
        """``--variant``'s pre-training head; with ``objectives`` (``--objectives`` other than ``luke``), the head of
        seed 002's objectives (``objective_heads``)."""
        if objectives is None:
            return super().head_for(variant)
        if variant not in self.objective_heads:
            raise ValueError(f"--objectives train on {sorted(self.objective_heads)}; --variant {variant} has its own")
        return self.objective_heads[variant]

    def is_pretraining_head(self, variant: str, architecture: str | None) -> bool:
        """Whether a checkpoint's ``architecture`` is one of ``--variant``'s pre-training heads (its encoder then
        starts a task head)."""
        heads = [self.heads.get(variant), self.objective_heads.get(variant)]
        return architecture is not None and architecture in {head.__name__ for head in heads if head is not None}

    def card_notes(self, model: Any) -> list[str]:
        """The objectives the checkpoint was pre-trained with (``--objectives`` other than LUKE's own)."""
        return pretraining_card_line(model.config)

    def config_overrides(self, data_args: Any) -> dict[str, Any]:
        """The config of ``--objectives`` other than LUKE's own (``pretraining_objectives``; none otherwise)."""
        settings = objective_config(data_args)
        return {} if settings is None else {"pretraining_objectives": settings}

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        if data_args.pretrain_format not in self.formats():
            raise ScriptArgumentError(
                f"--pretrain_format {data_args.pretrain_format!r} is unknown; choose one of {sorted(self.formats())}"
            )
        settings = objective_config(data_args)  # --objectives and the weights checked
        if settings is None and model_args.variant in LONG_PRETRAIN_LENGTHS:
            raise ScriptArgumentError(
                f"--task pretrain --variant {model_args.variant} trains seed 002's objectives on whole documents: give "
                "--objectives (e.g. luke,erica or luke,erica,kbir) with --pretrain_format docred or scirex"
            )
        if data_args.pretrain_format in self.document_readers and settings is None:
            raise ScriptArgumentError(
                f"--pretrain_format {data_args.pretrain_format} holds documents for --objectives (erica, kbi, kbir, ...); "
                "LUKE's own objective reads the entity tasks' formats: give --objectives, or another --pretrain_format"
            )
        if getattr(data_args, "kg_triples", None) is not None and settings is None:
            raise ScriptArgumentError("--kg_triples aligns relations for --objectives erica / kbir: give --objectives")
        if args.do_predict:
            raise ScriptArgumentError(
                "--task pretrain has nothing to predict: drop --do_predict (--do_eval gives the loss)"
            )
        for name in ("mlm_probability", "entity_mask_probability"):
            if not 0.0 < getattr(data_args, name) <= 1.0:
                raise ScriptArgumentError(f"--{name} must lie in (0, 1], got {getattr(data_args, name)}")
        if data_args.max_seq_length < 1:
            raise ScriptArgumentError(f"--max_seq_length must be at least 1, got {data_args.max_seq_length}")
        check_links_and_label_names(model_args, data_args, args)

    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> list[Any]:
        reader = self.document_readers.get(data_args.pretrain_format)
        if reader is None:
            return ENTITY_TASKS[data_args.pretrain_format].read_file(path, where, split, data_args, model_args)
        try:
            return reader(path, where)
        except (InputError, FileNotFoundError) as error:
            raise ScriptArgumentError(file_error(where, path, error)) from None

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> list[Any]:
        if data_args.pretrain_format in self.document_readers:
            raise ScriptArgumentError(f"--pretrain_format {data_args.pretrain_format} reads files: give --train_file")
        return ENTITY_TASKS[data_args.pretrain_format].read_hub(data_args, model_args, split)

    def example_id(self, example: Any) -> str:
        return str(example.id)

    def reference(self, example: Any) -> Any:
        return mention_spans(example)  # what the objectives mask: the sentence's mentions

    def load(
        self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
    ) -> LoadedModel:
        if model_args.variant in LONG_PRETRAIN_LENGTHS and explicit is not None and "max_seq_length" not in explicit:
            data_args.max_seq_length = LONG_PRETRAIN_LENGTHS[model_args.variant]  # windows of whole sections
        loading = EntityLoading(self, model_args, data_args, examples)
        graph = read_graph_flag(data_args)  # before any weight loads

        def processor_for_model(model: PreTrainedModel, tokenizer: Any, config: dict[str, Any]) -> Any:
            if isinstance(model, tuple(self.objective_heads.values())):
                return EntityObjectivesProcessor(
                    tokenizer, objective_settings(model.config), data_args.max_seq_length, data_args.mlm_probability,
                    data_args.entity_mask_probability, graph, seed=0,
                )  # fmt: skip
            return PretrainingProcessor(
                tokenizer, model_args.variant, data_args.max_seq_length, model.config.entity_vocab_size,
                data_args.mlm_probability, data_args.entity_mask_probability, seed=0, ner=loading.ner,
            )  # fmt: skip

        kar = model_args.variant == "kar"  # KnowBERT's KB (--kb_* files, else LUKE's table) and gold links
        recipe = loading.recipe(
            "--model_name_or_path is needed: the LUKE checkpoint to pre-train further",
            processor_for_model,
            knowledge_files=kar,
        )
        model, processor, tokenizer = load_for_task(recipe, model_args, data_args, explicit)
        if kar:
            processor.entity_links = loading.links
        return LoadedModel(model, processor, tokenizer)

    def featurise(self, processor: PretrainingProcessor, examples: Any, split: str, data_args: Any) -> Dataset:
        return Dataset.from_list(processor.encode_all(examples))

    def summary_notes(self, processor: Any) -> list[str]:
        """LUKE's objective (``gesa``, ``luke``): the loss of a uniform guess, ``ln(words) + ln(entities)`` (the masked
        word's and the masked entity's cross-entropy), as the chance level of the evaluation loss; ERNIE and KAR
        report their own (``dEA chance``, the prior's linking accuracy), and so do seed 002's objectives
        (``--objectives``: each accuracy beside its chance, ``eval_ed_chance`` ...)."""
        if (
            isinstance(processor, EntityObjectivesProcessor)
            or PRETRAIN.head_for(processor.variant) is not GesaForMaskedLM
        ):
            return []
        uniform = math.log(len(processor.tokenizer)) + math.log(processor.kb_size)
        return [f"chance (a uniform guess of each masked word and entity) loss {uniform:.2f}"]

    def decode(self, examples: Any, features: Dataset, outputs: Any, processor: Any) -> dict[str, Any]:
        return {}

    def score(self, predictions: Mapping[str, Any], examples: Any) -> dict[str, float]:
        return {}

    def write_predictions(
        self, predictions: Mapping[str, Any], examples: Any, output_dir: str | Path, split: str, data_args: Any
    ) -> Path:
        raise ScriptArgumentError("--task pretrain writes no predictions (its evaluation is the loss)")


PRETRAIN = PretrainTask()


# ----------------------------------------------------------------------------------------------- the embedded samples

_FIRST = ["Ana", "Bram", "Cleo", "Dario", "Edda", "Femi", "Goran", "Hana", "Ivo", "Jana", "Kofi", "Lena"]
_LAST = ["Velmor", "Kastrel", "Dunabo", "Rinost", "Lambre", "Sartho", "Quilnes", "Morvel"]
_TOWNS = ["Ostrel", "Velkas", "Brenmor", "Tholam", "Quildun", "Nesabo", "Rinsar", "Kasvel"]
_FIRMS = ["Acmora", "Dunlake", "Velcom", "Ostware", "Brisktel", "Marlow"]
_TITLES = ["engineer", "director", "teacher", "pilot"]


def make_entity_sample(task: str, count: int, seed: int = 0) -> str:
    """``count`` invented examples of ``task`` as the text of its public file: Open Entity crowd JSON lines
    (``entity_typing``: a person, a town or a firm, with its coarse and fine types), a TACRED JSON list
    (``relation_classification``: ``per:title``, ``org:founded_by``, ``no_relation``) or a CoNLL-2003 column file
    (``ner``: PER / LOC / ORG spans; sentences of at most 7 words, whose candidate spans fit LUKE's 32 entities)."""
    rng = random.Random(seed)
    rows: list[Any] = []
    for index in range(count):
        person, town, firm = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", rng.choice(_TOWNS), rng.choice(_FIRMS)
        kind = index % 3
        if task in ("entity_typing", "figer"):
            left, mention, right, types = [
                (["Yesterday", ","], person, ["opened", "the", "bridge", "."], ["person"]),
                (["They", "flew", "to"], town, ["for", "the", "summit", "."], ["location", "city"]),
                ([], firm, ["reported", "record", "profits", "."], ["organization", "company"]),
            ][kind]
            if task == "figer":  # ERNIE's JSON: character offsets, FIGER's hierarchical types
                start = len(" ".join(left)) + bool(left)
                figer = {"person": ["/person"], "location": ["/location", "/location/city"],
                         "organization": ["/organization", "/organization/company"]}[types[0]]  # fmt: skip
                rows.append({"id": f"figer-{seed}-{index}", "sent": " ".join([*left, mention, *right]), "start": start,
                             "end": start + len(mention), "labels": figer, "ents": []})  # fmt: skip
                continue
            rows.append({"annot_id": f"oe-{seed}-{index}", "left_context_token": left, "mention_span": mention,
                         "right_context_token": right, "y_str": types})  # fmt: skip
        elif task == "relation_classification":
            name = person.split()
            tokens, subj, obj, relation, types = [
                ([*name, ",", "the", rng.choice(_TITLES), ",", "resigned", "."], (0, 1), (4, 4), "per:title",
                 ("PERSON", "TITLE")),
                ([firm, "was", "founded", "by", *name, "in", "1990", "."], (0, 0), (4, 5), "org:founded_by",
                 ("ORGANIZATION", "PERSON")),
                ([*name, "visited", town, "last", "week", "."], (0, 1), (3, 3), "no_relation", ("PERSON", "CITY")),
            ][kind]  # fmt: skip
            rows.append({"id": f"tacred-{seed}-{index}", "relation": relation, "token": tokens,
                         "subj_start": subj[0], "subj_end": subj[1], "obj_start": obj[0], "obj_end": obj[1],
                         "subj_type": types[0], "obj_type": types[1]})  # fmt: skip
        elif task == "ner":
            first, last = person.split()
            rows.append([
                [(first, "B-PER"), (last, "I-PER"), ("visits", "O"), (town, "B-LOC"), (".", "O")],
                [(first, "B-PER"), ("works", "O"), ("for", "O"), (firm, "B-ORG"), (".", "O")],
                [("Mayor", "O"), (first, "B-PER"), (last, "I-PER"), ("left", "O"), (town, "B-LOC"), (".", "O")],
            ][kind])  # fmt: skip
        else:
            raise ValueError(f"no embedded sample for task {task!r}; choose one of {sorted(ENTITY_TASKS)}")
    if task == "entity_typing":
        return "".join(json.dumps(row) + "\n" for row in rows)
    if task in ("relation_classification", "figer"):
        return json.dumps(rows, indent=1) + "\n"
    sentences = ["\n".join(f"{word} X X {tag}" for word, tag in sentence) for sentence in rows]
    return "-DOCSTART- -X- -X- O\n\n" + "\n\n".join(sentences) + "\n"


__all__ = [
    "ENTITY_TASKS",
    "NO_ENTITY",
    "PRETRAIN",
    "SPECIAL_ENTITIES",
    "DeaCollator",
    "EntityLoading",
    "EntityTask",
    "ErniePretrainingCollator",
    "KarPretrainingCollator",
    "LoggedLossesCallback",
    "MaskedEntityCollator",
    "PretrainTask",
    "PretrainingProcessor",
    "build_pretraining_model",
    "build_task_model",
    "check_entity_checkpoint",
    "check_links_and_label_names",
    "check_id2label",
    "check_luke_tokenizer",
    "checkpoint_labels",
    "decode_relations",
    "decode_spans",
    "decode_types",
    "encode_pretraining",
    "entity_task_processor",
    "make_entity_sample",
    "load_model_and_tokenizer",
    "mention_spans",
    "pretraining_entity_rows",
    "pretraining_tokenizer",
    "pretraining_vocabulary",
    "task_tokenizer",
]

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
"""SciREX's end-to-end document IE (seed 002, 4.2.2) as a task of the shared driver (``examples/run_document_ie.py``).

Reads the release jsonl (``records_scirex``), loads the head through the one loader (``ModelRecipe``: a LUKE
checkpoint converted, or a checkpoint of this task), makes one feature per document (``DocumentIEProcessor``:
512-token pieces for ``--variant luke``), decodes the head's own pipeline predictions (mentions, salient clusters,
relations with label 1 above the threshold), scores them with the official metric (``training/metrics/scirex``) and
writes the three files SciREX's evaluation script reads (``<split>_predictions/{ner,clusters,relations}.jsonl``),
printing the three metric groups.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset

from ..inputs_gesa import InputError
from ..modeling_document_ie import DocumentIESettings, GesaForDocumentIE
from ..modeling_long_luke_document_ie import LongLukeForDocumentIE
from ..processing_document_ie import DocumentIEProcessor
from ..records_scirex import ENTITY_TYPES, ScirexDocument, read_scirex_file
from .entity_metrics import span_chance
from .machinery import ScriptArgumentError, write_text_atomically
from .models import ModelRecipe, load_for_task
from .resources import metric_module
from .task import LoadedModel, Task, file_error

# the tokens per piece of --variant luke (LUKE's 512 positions; the cited baselines' BERT pieces)
PIECE_LENGTH = 512
# the tokens the long variant reads in one pass (its positions: LongLukeConfig's 16,386 rows, 16,384 words)
LONG_LENGTH = 16384
# the head's outputs decode reads, in DocumentIEOutput's order (ner_logits left out: one row per word)
OUTPUT_FIELDS = ("mentions", "mention_saliency", "mention_clusters", "cluster_salient", "cluster_types", "relations",
                 "relation_scores", "relation_predicted")  # fmt: skip


def prediction_rows(doc_id: str, prediction: Mapping[str, Any]) -> tuple[dict, dict, dict]:
    """One document's lines of the three official files (ner, clusters, relations)."""
    return (
        {"doc_id": doc_id, "ner": prediction["ner"]},
        {"doc_id": doc_id, "clusters": prediction["clusters"]},
        {"doc_id": doc_id, "predicted_relations": prediction["relations"]},
    )


def decode_document(outputs: Sequence[np.ndarray], row: int) -> dict[str, Any]:
    """The official files' content for feature ``row`` of the head's padded outputs: its mentions, its salient
    clusters (``"c<k>"``: their mentions) and every scored relation ``[[material, metric, task, method], score,
    label]``."""
    mentions, _, clusters, salient, _, relations, scores, predicted = (np.asarray(o[row]) for o in outputs)
    kept = mentions[:, 0] >= 0
    ner = [[int(s), int(e), ENTITY_TYPES[int(k)]] for s, e, k in mentions[kept]]
    members: dict[int, list[list[int]]] = {}
    for (start, end, _), cluster in zip(mentions[kept], clusters[kept], strict=True):
        members.setdefault(int(cluster), []).append([int(start), int(end)])
    named = {f"c{k}": spans for k, spans in sorted(members.items()) if k < len(salient) and salient[k] == 1}
    scored = [
        [[f"c{int(c)}" for c in candidate], round(float(score), 4), int(label)]
        for candidate, score, label in zip(relations, scores, predicted, strict=True)
        if candidate[0] >= 0
    ]
    return {"ner": ner, "clusters": named, "relations": scored}


@dataclass
class DocumentIETask(Task):
    """SciREX (module docstring)."""

    name: str = "scirex"
    title: str = "SciREX"
    description: str = "SciREX end to end: mentions (4 types), salient clusters, 4-ary relations (official metric)"
    file_format: str = "SciREX release jsonl"
    heads: Mapping[str, type] = field(
        default_factory=lambda: {"luke": GesaForDocumentIE, "long_luke": LongLukeForDocumentIE}
    )
    metric_for_best_model: str = "mention_f1"
    chance_metric: str | None = "mention_f1"  # the one group a guess has a closed form for (``chance``)
    metric_names: Mapping[str, str] = field(
        default_factory=lambda: {"mention_f1": "mention F1", "cluster_f1": "salient-cluster F1",
                                 "relation_n2_f1": "relation n=2 F1", "relation_n4_f1": "relation n=4 F1"}
    )  # fmt: skip
    unit: str = "documents"
    item: str = "document"
    reference_name: str = "annotations (ner, coref, n_ary_relations)"
    remove_unused_columns: bool = False  # the processor's collator reads its columns
    ignore_output_keys: tuple[str, ...] = ("ner_logits", "hidden_states", "attentions")
    ragged_outputs: bool = True  # mentions, clusters and candidates differ per document
    official_fraction: bool = True
    no_feature_hint: str = "no document"

    # ------------------------------------------------------------------ flags and data

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        for name in ("max_seq_length", "max_document_words"):
            value = getattr(data_args, name, None)
            if value is not None and value < 1:
                raise ScriptArgumentError(f"--{name} must be at least 1, got {value}")
        try:
            DocumentIESettings(mention_representation=model_args.mention_representation)
        except ValueError as error:
            raise ScriptArgumentError(f"--mention_representation: {error}") from None
        if data_args.max_seq_length is None:  # LUKE's pieces, or the long variant's whole document
            data_args.max_seq_length = LONG_LENGTH if model_args.variant == "long_luke" else PIECE_LENGTH
        if args.label_names is None:
            args.label_names = ["ner_labels"]  # Trainer's default would wait for every *label* column

    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> list[ScirexDocument]:
        try:
            return read_scirex_file(path, where, max_words=data_args.max_document_words)
        except InputError as error:
            raise ScriptArgumentError(file_error(where, path, error)) from None

    def example_id(self, example: ScirexDocument) -> str:
        return example.doc_id

    def reference(self, example: ScirexDocument) -> Any:
        return example if example.labelled else None

    def chance(self, examples: Sequence[ScirexDocument]) -> float | None:
        """Mention F1 (percent) of a model that guesses: every span of at most 16 words within a sentence labelled
        one of the four types or "no mention" with equal probability (CoNLL-2003's chance, ``span_chance``), on the
        labelled documents' sentences."""
        references, lengths = [], []
        for document in (example for example in examples if example.labelled):
            for start, end in document.sentences:
                references.append({(m.start, m.end, m.type) for m in document.mentions if start <= m.start < end})
                lengths.append(end - start)
        return 100.0 * span_chance(references, lengths) if references else None

    # ------------------------------------------------------------------ model

    def load(self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
             ) -> LoadedModel:  # fmt: skip
        overrides: dict[str, Any] = {"document_ie": {"mention_representation": model_args.mention_representation}}
        if model_args.ablation is not None:
            overrides["ablation"] = model_args.ablation
        recipe = ModelRecipe(
            self.variant_spec(model_args.variant),
            f"--task {self.name} --variant {model_args.variant}",
            DocumentIEProcessor,
            processor_settings={"max_seq_length": data_args.max_seq_length},
            overrides=overrides,
            positions="tokens per piece",
        )
        return LoadedModel(*load_for_task(recipe, model_args, data_args, explicit))

    def collator(self, processor: DocumentIEProcessor, variant: str) -> Any:
        return processor

    def featurise(self, processor: DocumentIEProcessor, examples: Any, split: str, data_args: Any) -> Dataset:
        return Dataset.from_list(processor.encode_all(examples))

    # ------------------------------------------------------------------ predictions

    def decode(self, examples: Any, features: Dataset, outputs: Any, processor: Any) -> dict[str, Any]:
        outputs = outputs if isinstance(outputs, tuple | list) else (outputs,)
        if len(outputs) != len(OUTPUT_FIELDS):
            raise ValueError(
                f"the head gave {len(outputs)} outputs, decode reads {len(OUTPUT_FIELDS)} ({OUTPUT_FIELDS})"
            )
        return {example.doc_id: decode_document(outputs, row) for row, example in enumerate(examples)}

    def score(self, predictions: Mapping[str, Any], examples: Sequence[ScirexDocument]) -> dict[str, float]:
        """The official SciREX metrics (fractions) over the labelled documents."""
        gold = [example.as_release_record() for example in examples if example.labelled]
        rows = [prediction_rows(example.doc_id, predictions[example.doc_id]) for example in examples
                if example.labelled]  # fmt: skip
        scores = metric_module("scirex").scirex_scores(gold, *(list(files) for files in zip(*rows, strict=True)))
        return {key: value for key, value in scores.items() if not key.endswith("_count")}

    def write_predictions(self, predictions: Mapping[str, Any], examples: Any, output_dir: str | Path, split: str,
                          data_args: Any) -> Path:  # fmt: skip
        """``<split>_predictions/{ner,clusters,relations}.jsonl`` (the files SciREX's evaluation script reads); for
        labelled documents the three metric groups are printed."""
        import json

        folder = Path(output_dir) / f"{split}_predictions"
        folder.mkdir(parents=True, exist_ok=True)
        rows = [prediction_rows(example.doc_id, predictions[example.doc_id]) for example in examples]
        for name, lines in zip(("ner", "clusters", "relations"), zip(*rows, strict=True), strict=True):
            write_text_atomically(folder / f"{name}.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
        labelled = [example for example in examples if example.labelled]
        if labelled:
            scirex = metric_module("scirex")
            scores = scirex.scirex_scores([e.as_release_record() for e in labelled],
                                          *(list(files) for files in zip(*[r for r, e in zip(rows, examples, strict=True)
                                                                          if e.labelled], strict=True)))  # fmt: skip
            print(f"SciREX official metrics ({split}, {len(labelled)} documents):\n{scirex.report(scores)}")
        return folder


SCIREX = DocumentIETask()

__all__ = ["OUTPUT_FIELDS", "SCIREX", "DocumentIETask", "decode_document", "prediction_rows"]

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
"""The re-ranker both retrieval tasks train as a run's component: HotpotQA FullWiki's BERT IR over articles
(``training.xh_fullwiki``) and FEVER's sentence selection (``training.fever_retrieval``).

``TextReranker`` is ``XhForSupportingFacts`` with no hop layer reading each text alone (``chunk`` texts a graph,
``batch_size`` graphs a step) and its processor: ``load`` gives the one saved in ``<model_name_or_path>/<folder>`` or
one converted from LUKE (``training.xh_paper.reranker_model``), ``train`` trains it on the training data's features as
the run's component unless it was loaded trained, ``logits`` scores features. A task's subclass only turns its rows
into features. ``RerankedTask`` is what such a task adds to the driver's steps: the re-ranker loaded beside the
task's model as the run's component, trained first, then put to use; the task says how to load it, which features
train it and where it is used.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from datasets import Dataset
from transformers import PreTrainedModel

from ..pipeline_xh_tasks import model_outputs
from ..processing_xh_tasks import XhTaskProcessor
from ..structure_gesa import LUKE_MASK_ENTITY_ID
from .task import LoadedModel
from .xh_paper import reranker_model


class TextReranker:
    """A relevance re-ranker (module docstring): ``model`` and ``processor``; ``trained`` when loaded trained."""

    def __init__(
        self, model: PreTrainedModel, processor: XhTaskProcessor, batch_size: int = 8, chunk: int = 8
    ) -> None:
        self.model, self.processor = model, processor
        self.batch_size, self.chunk = batch_size, chunk
        self.trained = False

    @classmethod
    def load(
        cls,
        model_args: Any,
        data_args: Any,
        tokenizer: Any,
        folder: str,
        trains: bool,
        untrained: str,
        texts: Any,
        processor_settings: dict[str, Any] | None = None,
    ) -> TextReranker:
        """The re-ranker saved in ``<model_name_or_path>/<folder>``, else converted from LUKE when the run ``trains``
        (``untrained``: the refusal when neither); its processor reads ``--max_seq_length`` words per text and
        ``--max_query_length`` query words (``processor_settings``: the task's own); ``texts``: what the subclass reads
        (``cls(model, processor, texts)``: the corpus, the pages)."""
        model, trained = reranker_model(model_args, tokenizer, folder, trains, untrained)
        processor = XhTaskProcessor(tokenizer, max_node_length=data_args.max_seq_length,
                                    max_query_length=data_args.max_query_length, entity_mask_id=LUKE_MASK_ENTITY_ID,
                                    **(processor_settings or {}))  # fmt: skip
        reranker = cls(model, processor, texts)
        reranker.trained = trained
        return reranker

    def train(self, folder: str, features: Callable[[], list[dict[str, Any]]] | None, args: Any, train: Any) -> None:
        """Trained as the run's ``folder`` component (the driver's ``train``) on ``features()`` (``None``: no
        training data) unless loaded trained; then on the run's device."""
        if features is not None and not self.trained:
            dataset = Dataset.from_list(features())
            self.model = train(folder, self.model, dataset, self.processor.get_data_collator())
        self.model.to(args.device)

    def logits(self, features: Sequence[dict[str, Any]]) -> list[float]:
        """The relevance logit of every node of ``features``, feature after feature."""
        outputs = model_outputs(self.model, features, self.processor.get_data_collator(), self.batch_size)
        return [float(logit) for feature, out in zip(features, outputs, strict=True)
                for logit in out["relevance_logits"][0, : len(feature["input_ids"])]]  # fmt: skip


class RerankedTask:
    """What a task whose inputs a re-ranker chooses adds to it (a base listed before the task): the re-ranker
    (``load_ranker``) loaded beside the task's model as the run's ``ranker_folder`` component, trained first on
    ``ranker_features`` of the training rows (unless loaded trained), then put to use (``use_ranker``)."""

    ranker_folder: str = "ranker"

    def has_components(self, data_args: Any) -> bool:
        return True

    def load(
        self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
    ) -> LoadedModel:
        loaded = super().load(model_args, data_args, examples, explicit)
        self.reranker = self.load_ranker(model_args, data_args, loaded.tokenizer, "train" in examples)
        loaded.components[self.ranker_folder] = self.reranker.model
        return loaded

    def train_components(self, loaded: LoadedModel, examples: Mapping[str, Any], data_args: Any, args: Any,
                         train: Any) -> None:  # fmt: skip
        """The re-ranker first (trained unless loaded trained), put to use; then the task's own components."""
        ranker = self.reranker
        ranker.batch_size = args.per_device_eval_batch_size
        rows = list(examples.get("train", []))
        features = (lambda: self.ranker_features(ranker, rows, data_args)) if "train" in examples else None
        ranker.train(self.ranker_folder, features, args, train)
        self.use_ranker(ranker)
        super().train_components(loaded, examples, data_args, args, train)

    def load_ranker(self, model_args: Any, data_args: Any, tokenizer: Any, trains: bool) -> TextReranker:
        """The task's re-ranker (``TextReranker.load``)."""
        raise NotImplementedError

    def ranker_features(self, ranker: Any, rows: Sequence[Any], data_args: Any) -> list[dict[str, Any]]:
        """The re-ranker's training features from the training rows."""
        raise NotImplementedError

    def use_ranker(self, ranker: Any) -> None:
        """Where the trained re-ranker scores the task's candidates."""
        raise NotImplementedError


__all__ = ["RerankedTask", "TextReranker"]

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
"""The ``"document-information-extraction"`` pipeline of a ``GesaForDocumentIE`` checkpoint (SciREX's task).

Input: a raw long text (its sentences found by spaCy: the rule-based sentencizer, or the pipeline the checkpoint's
processor names), ``{"text": ...}``, or a SciREX release record (``{"doc_id", "words", "sentences", "sections"}``).
Output, per document::

    {"mentions": [{"start", "end", "words", "type", "salience"}, ...],        # word spans, end exclusive
     "entities": [{"name", "type", "mentions": [mention indices], "salience"}, ...],   # the salient clusters
     "relations": [{"Material", "Metric", "Task", "Method", "score"}, ...]}  # entity names, best first

``relations`` lists the candidates above the checkpoint's relation threshold (``threshold=`` changes it, 0 lists
every scored candidate); the features are the checkpoint's processor's (its pieces), so the pipeline answers what
``run_document_ie.py`` evaluated.

Flat module: copied next to a saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from transformers import AutoModelForTokenClassification

from .modeling_document_ie import DOCUMENT_IE_TASK
from .pipeline_base_gesa import TokenizerPipeline, register_pipelines
from .processing_document_ie import DocumentIEProcessor
from .records_scirex import ENTITY_TYPES, ScirexDocument, scirex_document


class DocumentIEPipeline(TokenizerPipeline):
    """Typed mentions, salient entities and relations of a long document (module docstring)."""

    def __init__(self, *args: Any, processor: DocumentIEProcessor | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.processor = processor or DocumentIEProcessor.from_checkpoint(
            self.tokenizer, self.model.config._name_or_path
        )

    def _sanitize_parameters(self, threshold: float | None = None, **kwargs: Any) -> tuple[dict, dict, dict]:
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown argument(s) {sorted(kwargs)}")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)
                                      or not 0 <= threshold <= 1):  # fmt: skip
            raise ValueError(f"{DOCUMENT_IE_TASK}: threshold must be a probability in [0, 1], got {threshold!r}")
        return {}, {}, ({} if threshold is None else {"threshold": float(threshold)})

    def check_input(self, item: Any) -> None:
        self.document(item)

    def document(self, inputs: Any) -> ScirexDocument:
        """The input as a document: a text through spaCy, or a release record checked by ``records_scirex``."""
        if isinstance(inputs, str):
            return self.processor.document_from_text(inputs)
        if isinstance(inputs, Mapping) and "text" in inputs:
            return self.processor.document_from_text(inputs["text"], str(inputs.get("doc_id", "text")))
        if isinstance(inputs, Mapping) and "words" in inputs:
            row = {key: inputs[key] for key in ("doc_id", "words", "sentences", "sections") if key in inputs}
            return scirex_document({"doc_id": "input", **row}, "the input")
        raise ValueError(
            f"{DOCUMENT_IE_TASK}: give a text (a string or {{'text': ...}}) or a SciREX record with words, sentences "
            f"and sections, got {type(inputs).__name__}"
        )

    def preprocess(self, inputs: Any) -> dict[str, Any]:
        document = self.document(inputs)
        return {"document": document, "batch": self.processor([self.processor.encode(document)])}

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        batch = {key: value.to(self.model.device) for key, value in model_inputs["batch"].items()}
        with torch.no_grad():
            outputs = self.model(**batch, return_predictions=True)
        keep = ("mentions", "mention_saliency", "mention_clusters", "cluster_salient", "cluster_types", "relations",
                "relation_scores")  # fmt: skip
        return {"document": model_inputs["document"], **{key: outputs[key][0].cpu() for key in keep}}

    def postprocess(self, model_outputs: dict[str, Any], threshold: float | None = None) -> dict[str, Any]:
        document: ScirexDocument = model_outputs["document"]
        if threshold is None:
            threshold = self.model.settings.relation_threshold
        mentions, saliency = model_outputs["mentions"].tolist(), model_outputs["mention_saliency"].tolist()
        clusters = model_outputs["mention_clusters"].tolist()
        found = [
            {"start": s, "end": e, "words": document.text((s, e)), "type": ENTITY_TYPES[k], "salience": round(p, 4)}
            for (s, e, k), p in zip(mentions, saliency, strict=True)
            if s >= 0
        ]
        members: dict[int, list[int]] = {}
        for index, cluster in enumerate(clusters[: len(found)]):
            members.setdefault(cluster, []).append(index)
        salient, kinds = model_outputs["cluster_salient"].tolist(), model_outputs["cluster_types"].tolist()
        names = {}
        entities = []
        for cluster, indices in sorted(members.items()):
            if cluster < len(salient) and salient[cluster] == 1:
                names[cluster] = found[indices[0]]["words"]
                entities.append({"name": names[cluster], "type": ENTITY_TYPES[kinds[cluster]], "mentions": indices,
                                 "salience": max(found[i]["salience"] for i in indices)})  # fmt: skip
        relations = [
            {**{kind: names[c] for kind, c in zip(ENTITY_TYPES, candidate, strict=True)}, "score": round(score, 4)}
            for candidate, score in zip(
                model_outputs["relations"].tolist(), model_outputs["relation_scores"].tolist(), strict=True
            )  # fmt: skip
            if candidate[0] >= 0 and score > threshold
        ]
        relations.sort(key=lambda relation: -relation["score"])
        return {"mentions": found, "entities": entities, "relations": relations}


# `pipeline("document-information-extraction", model=...)` once imported
register_pipelines((DOCUMENT_IE_TASK, DocumentIEPipeline, AutoModelForTokenClassification))

__all__ = ["DocumentIEPipeline"]

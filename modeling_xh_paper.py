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
"""The two other models of Transformer-XH's HotpotQA system (paper appendix A.3), and its supporting-fact inference.

- `XhForQuestionType` (A.3.1): the question alone (`<s> question </s>`, a graph of one node) through the backbone, a
  linear classifier on `[CLS]` over `config.id2label` (bridge / comparison), trained on HotpotQA's `type` field.
- `XhForSupportingFacts` (A.3.2): one node per document (`<s> question </s> </s> title: paragraph </s>`, read
  independently: built with `xh_num_hop_layers=0`), document relevance `sigmoid(Linear(h_[CLS]))` and sentence
  classification `sigmoid(Linear([h_first ; h_last]))` (`modeling_xh_tasks.sentence_logits`), trained jointly
  (binary cross-entropy on both); one model per question type.
- `bridge_supporting_facts` / `comparison_supporting_facts` (A.3.2's inference): for a bridge question the answer
  document (from the bridge XH model) and the most relevant of its parents in the evidence graph (the documents its
  hop attention reads: those linking to it; all other documents when it has none, the paper's footnote 3); for a
  comparison question the top-2
  documents by relevance. In each chosen document the sentences with `p >= 0.5`, at least the best one.

The answers come from `modeling_xh_tasks.XhForHotpotQA` trained once per question type (`training.xh_paper`).
`XhPaperSystemForHotpotQA` is the five models as one checkpoint: a folder of their folders named by a top-level
`XhPaperSystemConfig`, which `AutoModelForQuestionAnswering` and `pipeline(model=dir, trust_remote_code=True)` open
(`pipeline_xh_paper.XhPaperSystemPipeline`).

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.dynamic_module_utils import custom_object_save

from .configuration_variants import HOTPOT_QUESTION_TYPES, XhConfig, XhPaperSystemConfig
from .loading_gesa import PipelineSpec, component_problem, refuse_damaged_weights, save_pretrained_with_pipeline
from .modeling_xh import XhEncodedGraphs, XhGraphHead, XhGraphOutput, class_loss, node_logits
from .modeling_xh_tasks import XhForHotpotQA, sentence_logits, supporting_loss, supporting_sentences

QUESTION_TYPES = HOTPOT_QUESTION_TYPES


@dataclass
class XhQuestionTypeOutput(XhGraphOutput):
    """
    Args:
        loss: cross-entropy of `labels`, when given.
        logits: `(G, Y)` class scores from the first node's `[CLS]`.
    """


class XhQuestionTypeInputs(TypedDict, total=False):
    """`XhForQuestionType`'s label: `labels` `(G,)` the question's type id (-100: none)."""

    labels: torch.LongTensor | None


class XhForQuestionType(XhGraphHead):
    """A.3.1's question classifier: `Linear(h_[CLS])` of the question's node (node 0) over `config.id2label`."""

    head_inputs = XhQuestionTypeInputs

    def __init__(self, config: XhConfig) -> None:
        super().__init__(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def score_graphs(self, encoded: XhEncodedGraphs, inputs: XhQuestionTypeInputs) -> XhQuestionTypeOutput:
        """The question's type from its `[CLS]`; `labels` `(G,)` class ids (-100: none) give the loss. Inputs:
        `XhModel`'s, the question as node 0 of each graph."""
        logits = self.classifier(self.dropout(encoded.outputs.hub_states[:, 0]))
        labels = inputs["labels"]
        loss = None if labels is None else class_loss(torch.log_softmax(logits.float(), dim=-1), labels)
        return XhQuestionTypeOutput(loss=loss, logits=logits)


@dataclass
class XhSupportingFactsOutput(XhGraphOutput):
    """
    Args:
        loss: `relevance_loss + supporting_loss` (the terms that have labels).
        relevance_logits: `(G, N)` document relevance (padded documents `finfo.min`).
        supporting_logits: `(G, N, S)` per sentence (absent sentences `finfo.min`).
        relevance_loss, supporting_loss: binary cross-entropies over the labelled documents / sentences.
    """


class XhSupportingFactsInputs(TypedDict, total=False):
    """`XhForSupportingFacts`' inputs: `sentence_starts` / `sentence_ends` `(G, N, S)` each sentence's first and last
    token (-1: no sentence; required); labels: `node_labels` `(G, N)` 1 on supporting documents (-100 ignored),
    `sentence_labels` `(G, N, S)` (1, 0, -100 ignored)."""

    sentence_starts: torch.LongTensor
    sentence_ends: torch.LongTensor
    node_labels: torch.LongTensor | None
    sentence_labels: torch.LongTensor | None


class XhForSupportingFacts(XhGraphHead):
    """A.3.2's supporting-fact model: document relevance on `[CLS]` and sentence classification on
    `[first ; last]` of each sentence, multi-task. Features: `processing_xh_tasks.XhTaskProcessor.encode_paper_graphs`."""

    head_inputs = XhSupportingFactsInputs
    required_inputs = ("sentence_starts", "sentence_ends")

    def __init__(self, config: XhConfig) -> None:
        super().__init__(config)
        self.relevance = nn.Linear(config.hidden_size, 1)
        self.supporting = nn.Linear(2 * config.hidden_size, 1)
        self.post_init()

    def score_graphs(self, encoded: XhEncodedGraphs, inputs: XhSupportingFactsInputs) -> XhSupportingFactsOutput:
        """Document relevance and sentence classification; `node_labels` and `sentence_labels`
        (`XhSupportingFactsInputs`) give the loss. Other inputs: `XhModel`'s."""
        sentence_starts, node_labels = inputs["sentence_starts"], inputs["node_labels"]
        outputs, real = encoded.outputs, encoded.outputs.node_mask
        words, hubs = self.dropout(outputs.last_hidden_state), self.dropout(outputs.hub_states)
        relevance_logits = node_logits(self.relevance, hubs, real)
        supporting_logits = sentence_logits(self.supporting, words, sentence_starts, inputs["sentence_ends"])
        losses = {}
        if node_labels is not None:
            if node_labels.shape != real.shape:
                raise ValueError(f"node_labels has shape {tuple(node_labels.shape)}; expected {tuple(real.shape)}.")
            keep = real & (node_labels != -100)
            if keep.any():
                losses["relevance"] = F.binary_cross_entropy_with_logits(
                    relevance_logits[keep].float(), node_labels[keep].float()
                )
        if inputs["sentence_labels"] is not None:
            loss = supporting_loss(supporting_logits, inputs["sentence_labels"], sentence_starts, real)
            if loss is not None:
                losses["supporting"] = loss
        return XhSupportingFactsOutput(
            loss=sum(losses.values()) if losses else None,
            relevance_logits=relevance_logits,
            supporting_logits=supporting_logits,
            relevance_loss=losses.get("relevance"),
            supporting_loss=losses.get("supporting"),
        )


def bridge_supporting_facts(
    answer_node: int,
    adjacency: torch.Tensor,
    relevance_logits: torch.Tensor,
    supporting_logits: torch.Tensor,
    threshold: float = 0.5,
) -> list[tuple[int, int]]:
    """A.3.2, bridge: `(node, sentence)` pairs in the answer document and in its most relevant parent.

    Args:
        answer_node: the answer document (the bridge XH model's most relevant node).
        adjacency: `(N, N)` the evidence graph as the XH model reads it, `adjacency[tau, eta] = 1` when tau attends to
            eta. The parents of the answer document are the documents its hop attention reads: with the default edges
            (`processing_xh`, `hotpot_edges="title_mention"`) those linking to it, the same edge as the hops.
        relevance_logits: `(N,)` the supporting-fact model's document relevance.
        supporting_logits: `(N, S)` its sentence logits (absent sentences `finfo.min`).
    """
    nodes = relevance_logits.size(0)
    parents = [n for n in range(nodes) if n != answer_node and bool(adjacency[answer_node, n])]
    others = parents or [n for n in range(nodes) if n != answer_node]  # no parent: from all documents (footnote 3)
    chosen = [answer_node]
    if others:
        chosen.append(max(others, key=lambda n: float(relevance_logits[n])))
    return _facts(chosen, supporting_logits, threshold)


def comparison_supporting_facts(
    relevance_logits: torch.Tensor, supporting_logits: torch.Tensor, threshold: float = 0.5
) -> list[tuple[int, int]]:
    """A.3.2, comparison: `(node, sentence)` pairs in the two most relevant documents (`(N,)`, `(N, S)` logits)."""
    chosen = [int(n) for n in relevance_logits.float().argsort(descending=True)[:2]]
    return _facts(chosen, supporting_logits, threshold)


def _facts(chosen: list[int], supporting_logits: torch.Tensor, threshold: float) -> list[tuple[int, int]]:
    return [(node, s) for node in chosen for s in supporting_sentences(supporting_logits[node], threshold)]


COMPONENT_CLASSES = {cls.__name__: cls for cls in (XhForQuestionType, XhForHotpotQA, XhForSupportingFacts)}


class XhPaperSystemForHotpotQA(PreTrainedModel):
    """The paper's HotpotQA system (A.3) as one checkpoint: its five models (`config.components`, sub-folder -> head
    class), each saved in its own sub-folder with its own config and weights; this folder's `config.json` names them.

    `from_pretrained(dir)` loads every component from `dir/<name>` (a damaged weights file is one `OSError` naming
    the component and the fix); `save_pretrained(dir)` saves each into `dir/<name>` (`save_components=False`: only
    this top-level config, the code and the pipeline, for components already saved there) with the pipeline that
    answers through the system (`pipeline_xh_paper.XhPaperSystemPipeline`: the classifier's type, that type's XH for
    the answer, that type's supporting-fact model for the facts). It has no `forward`: the system runs its models in
    turn (`pipeline_xh_paper.paper_system_predictions`).
    """

    config_class = XhPaperSystemConfig
    base_model_prefix = "components"
    pipeline = PipelineSpec("xh-hotpot-qa", "pipeline_xh_paper.XhPaperSystemPipeline")

    def __init__(self, config: XhPaperSystemConfig, components: dict[str, PreTrainedModel] | None = None) -> None:
        super().__init__(config)
        components = dict(components or {})
        if set(components) - set(config.components):
            raise ValueError(f"unknown components {sorted(set(components) - set(config.components))}; this system "
                             f"has {sorted(config.components)}")  # fmt: skip
        for name, model in components.items():
            if type(model).__name__ != config.components[name]:
                raise ValueError(f"component {name!r} must be a {config.components[name]}, got {type(model).__name__}")
        self.components = nn.ModuleDict(components)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        """Nothing of its own to initialise: every weight belongs to a component, saved and loaded with it."""

    @classmethod
    def from_pretrained(
        cls, pretrained_model_name_or_path: str | os.PathLike, *model_args: Any, config: Any = None, **kwargs: Any
    ) -> XhPaperSystemForHotpotQA:
        """Every component from its sub-folder of `pretrained_model_name_or_path` (a folder or a Hub repo)."""
        hub = {k: kwargs[k] for k in ("cache_dir", "revision", "token", "local_files_only", "force_download")
               if k in kwargs}  # fmt: skip
        if not isinstance(config, XhPaperSystemConfig):
            config = XhPaperSystemConfig.from_pretrained(pretrained_model_name_or_path, **hub)
        kwargs.pop("subfolder", None)
        components = {}
        local = Path(pretrained_model_name_or_path)
        for name, head in config.components.items():
            try:
                if local.is_dir() and (problem := component_problem(local, name)) is not None:
                    raise OSError(problem)  # a component without its config would load another's
                refuse_damaged_weights(pretrained_model_name_or_path, subfolder=name)
            except OSError as error:
                raise OSError(
                    f"the paper system's {name} model ({head}) cannot be loaded: {error} (or train the system again "
                    "into a new --output_dir)"
                ) from None
            components[name] = COMPONENT_CLASSES[head].from_pretrained(
                pretrained_model_name_or_path, *model_args, subfolder=name, **kwargs
            )
        model = cls(config, components)
        model.config._name_or_path = str(pretrained_model_name_or_path)
        return model.eval()

    def save_pretrained(
        self, save_directory: str | os.PathLike, *args: Any, save_components: bool = True, **kwargs: Any
    ) -> None:
        """Each component into `save_directory/<name>` (unless `save_components=False`), then this folder's
        `config.json` with `auto_map`, the model's code and its pipeline's."""
        directory = Path(save_directory)
        directory.mkdir(parents=True, exist_ok=True)
        if save_components:
            for name, model in self.components.items():
                model.save_pretrained(directory / name, *args, **kwargs)

        def save_top(folder: str | os.PathLike, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("is_main_process", True):
                custom_object_save(self, folder, config=self.config)
                self.config.save_pretrained(folder)

        save_pretrained_with_pipeline(self, save_top, directory, *args, **kwargs)


XhForQuestionType.register_for_auto_class("AutoModelForSequenceClassification")
XhForSupportingFacts.register_for_auto_class("AutoModel")
XhPaperSystemConfig.register_for_auto_class()
XhPaperSystemForHotpotQA.register_for_auto_class("AutoModelForQuestionAnswering")

__all__ = [
    "COMPONENT_CLASSES",
    "QUESTION_TYPES",
    "XhForQuestionType",
    "XhPaperSystemForHotpotQA",
    "XhForSupportingFacts",
    "XhQuestionTypeOutput",
    "XhSupportingFactsOutput",
    "bridge_supporting_facts",
    "comparison_supporting_facts",
]

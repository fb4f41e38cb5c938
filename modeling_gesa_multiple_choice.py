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
"""Multiple choice over candidate entities (WikiHop): one head for GESA, LUKE (``ablation="luke"``) and LUKE-Graph.

The score of every candidate entity ``c`` (``candidate_entity_mask``), by ``config.choice_head``:

- ``"hde"`` (default): the thesis's eq. 2.62 (Acton 2023, 3.4, HDE's output), ``MLP_c(y_c) + max_e MLP_e(y_e)`` over
  the entities mentioning ``c`` (same ``entity_string_ids``), two-layer MLPs of width hidden/2
  (``modeling_candidate_output``, the implementation the context-graph GNN uses too);
- ``"query_candidate"``: ``w . dropout([y_q ; y_c]) + b`` with ``y_q`` the query entity (``placeholder_entity_mask``),
  paper 3.5's score with the query entity in the placeholder's role.

Either is normalised by a softmax over the example's candidates (cross-entropy; padded and non-candidate entities
masked). ``labels`` ``(B,)`` is the answer's entity
index (``-100``: unlabelled, ignored).

Also ``extend_position_embeddings``: the Longformer recipe (copy the 512 learned positions over the longer table) for
models with absolute positions (``--variant luke``/``luke_graph``) on WikiHop's 4,096-word inputs.

LUKE-Graph's head is ``modeling_luke_graph_multiple_choice.LukeGraphForEntityMultipleChoice``.

A checkpoint whose ``config.json`` names one ``choice_head`` while its weights hold the other is refused on loading
(``ChoiceHeadMismatch``, naming the file, both heads and the fix): the named head would otherwise start fresh and
score as the checkpoint.

Flat module: copied next to every saved checkpoint (``AutoModelForMultipleChoice`` with ``trust_remote_code``), so it
imports only its siblings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, can_return_tuple

from .checks_gesa import IGNORE_INDEX, pop_inputs
from .configuration_gesa import GesaConfig
from .loading_gesa import PipelineSpec
from .modeling_candidate_output import Scorer, candidate_choice_loss, entity_choice_logits
from .modeling_gesa import (
    GesaEntitySpanQAOutput,
    GesaForEntitySpanQA,
    GesaInputs,
    GesaModel,
    refuse_span_positions,
    with_inputs_of,
)

# the pipeline task of every WikiHop checkpoint: `pipeline(model=dir, trust_remote_code=True)` builds WikihopPipeline
WIKIHOP_TASK = "wikihop-multiple-choice"


@dataclass
class EntityMultipleChoiceOutput(GesaEntitySpanQAOutput):
    """The ReCoRD head's fields, read as multiple choice.

    Args:
        loss: softmax cross-entropy over each example's candidates, mean over labelled examples.
        logits: `(B, E)` candidate scores; non-candidate and padded entities hold `finfo.min`.
        hidden_states, entity_hidden_states, attentions: the base model's, on request.
    """


def multiple_choice_logits(
    classifier: nn.Linear,
    dropout: nn.Module,
    entity_states: torch.Tensor,
    placeholder_entity_mask: torch.Tensor,
    candidate_entity_mask: torch.Tensor,
) -> torch.Tensor:
    """`(B, E, D)` entity states -> `(B, E)` logits `w . [y_q ; y_e] + b`, non-candidates at `finfo.min`."""
    batch_size = entity_states.size(0)
    query_index = placeholder_entity_mask.float().argmax(dim=1)
    query_states = entity_states[torch.arange(batch_size, device=entity_states.device), query_index]
    pair = torch.cat([query_states[:, None].expand_as(entity_states), entity_states], dim=-1)
    logits = classifier(dropout(pair)).squeeze(-1)
    return logits.masked_fill(~candidate_entity_mask.bool(), torch.finfo(logits.dtype).min)


def check_choice_inputs(
    labels: torch.Tensor | None, candidate_entity_mask: torch.Tensor | None, entity_ids: torch.Tensor | None
) -> None:
    """`candidate_entity_mask` `(B, E)` with a candidate in every row; `labels` `(B,)` naming a candidate or -100."""
    if entity_ids is None or candidate_entity_mask is None:
        raise ValueError(
            "the multiple-choice head needs entity_ids and candidate_entity_mask (1 on each candidate entity); build "
            "the inputs with WikihopProcessor"
        )
    if tuple(candidate_entity_mask.shape) != tuple(entity_ids.shape):
        raise ValueError(
            f"candidate_entity_mask has shape {tuple(candidate_entity_mask.shape)}; expected (batch, entities) = "
            f"{tuple(entity_ids.shape)}"
        )
    if torch.compiler.is_compiling():
        return
    empty = (candidate_entity_mask.sum(dim=1) == 0).nonzero()
    if len(empty):
        raise ValueError(f"candidate_entity_mask row {int(empty[0])} marks no candidate: nothing to choose from")
    if labels is None:
        return
    if tuple(labels.shape) != (entity_ids.size(0),) or labels.is_floating_point():
        raise ValueError(
            f"labels has shape {tuple(labels.shape)} and dtype {labels.dtype}; expected (batch,) = "
            f"({entity_ids.size(0)},) long: the entity index of each example's answer (-100: no answer)"
        )
    labelled = labels != IGNORE_INDEX
    in_range = (labels >= 0) & (labels < entity_ids.size(1))
    safe = labels.clamp(0, entity_ids.size(1) - 1)
    on_candidate = candidate_entity_mask.gather(1, safe[:, None]).squeeze(1).bool() & in_range
    bad = (labelled & ~on_candidate).nonzero()
    if len(bad):
        row = int(bad[0])
        raise ValueError(
            f"labels[{row}] = {int(labels[row])} is not the index of a candidate entity (candidate_entity_mask); "
            "give the answer's entity index, or -100 for an unlabelled example"
        )


# the weights of each head (their names' prefixes in the checkpoint)
CHOICE_HEAD_WEIGHTS = {"hde": ("candidate_scorer.", "entity_scorer."), "query_candidate": ("classifier.",)}


class ChoiceHeadMismatch(ValueError):
    """A checkpoint's ``config.json`` names one ``choice_head``, its weights hold the other."""


def choice_head_of_weights(names: Iterable[str]) -> str | None:
    """The ``choice_head`` whose weights ``names`` (a checkpoint's parameter names) hold; ``None``: neither, or both."""
    held = {head for head, prefixes in CHOICE_HEAD_WEIGHTS.items()
            if any(name.startswith(prefixes) for name in names)}  # fmt: skip
    return held.pop() if len(held) == 1 else None


def check_choice_head(named: str, names: Iterable[str], where: str) -> None:
    """``ChoiceHeadMismatch`` when the weights ``names`` of ``where`` (a checkpoint folder or id) hold the other
    head than the ``named`` one of its config."""
    held = choice_head_of_weights(names)
    if held is not None and held != named:
        raise ChoiceHeadMismatch(
            f"{where}: config.json names choice_head={named!r}, but its weights hold the {held!r} head "
            f"({', '.join(prefix + '*' for prefix in CHOICE_HEAD_WEIGHTS[held])}): loaded, it would score a freshly "
            f'initialised {named!r} head. Set "choice_head": "{held}" in its config.json (the head its weights were '
            "trained with)"
        )


class GesaChoiceInputs(GesaInputs, total=False):
    """The choice head's own inputs: the candidates' `candidate_entity_mask`, the answer index `labels`, and the span positions it refuses."""

    candidate_entity_mask: torch.Tensor | None
    labels: torch.LongTensor | None
    start_positions: torch.LongTensor | None
    end_positions: torch.LongTensor | None


class GesaForEntityMultipleChoice(GesaForEntitySpanQA):
    """Multiple choice over candidate entities (WikiHop), on GESA (or LUKE with `ablation="luke"`).

    A variant's head sets `base_model_class` (LUKE-Graph: `LukeGraphForEntityMultipleChoice`) and gets this forward.
    """

    output_class = EntityMultipleChoiceOutput
    pipeline = PipelineSpec(WIKIHOP_TASK, "pipeline_wikihop.WikihopPipeline")

    def __init__(self, config: GesaConfig) -> None:
        super().__init__(config)
        if config.choice_head == "hde":
            # the thesis's eq. 2.62 replaces the linear layer on [query; candidate]
            del self.classifier
            self.candidate_scorer = Scorer(config.hidden_size)
            self.entity_scorer = Scorer(config.hidden_size)
            self.post_init()

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Any, *args: Any, **kwargs: Any) -> Any:
        """`from_pretrained`, refusing a checkpoint whose weights hold the other `choice_head` than its config names
        (`ChoiceHeadMismatch`) instead of initialising the named head afresh."""
        wants_info = kwargs.pop("output_loading_info", False)
        model, info = super().from_pretrained(pretrained_model_name_or_path, *args, output_loading_info=True, **kwargs)
        named = model.config.choice_head
        missing = [name for name in info.get("missing_keys", ()) if name.startswith(CHOICE_HEAD_WEIGHTS[named])]
        if missing:  # the named head was not in the file: which head was?
            check_choice_head(named, info.get("unexpected_keys", ()), str(pretrained_model_name_or_path))
        return (model, info) if wants_info else model

    @can_return_tuple
    @with_inputs_of(GesaModel.forward, own=GesaChoiceInputs)
    def forward(self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaChoiceInputs]) -> ModelOutput:
        """Score the candidate entities: `logits` `(B, E)`; `labels` `(B,)` (answer entity index) gives the loss.

        Takes every input of the base model (`kwargs`, README "Model inputs") and `candidate_entity_mask` `(B, E)`.
        """
        candidate_entity_mask, labels, start_positions, end_positions = pop_inputs(kwargs, GesaChoiceInputs)
        refuse_span_positions(self, start_positions, end_positions)
        check_choice_inputs(labels, candidate_entity_mask, kwargs.get("entity_ids"))
        outputs = self.run_base_model(input_ids, None, kwargs)
        placeholder = kwargs.get("placeholder_entity_mask")
        if placeholder is None:
            placeholder = torch.zeros_like(candidate_entity_mask)
            placeholder[:, 0] = 1
        if self.config.choice_head == "hde":
            logits = entity_choice_logits(
                self.candidate_scorer,
                self.entity_scorer,
                outputs.entity_last_hidden_state,
                candidate_entity_mask,
                kwargs.get("entity_string_ids"),
                placeholder,
                kwargs.get("entity_attention_mask"),
            )
        else:
            logits = multiple_choice_logits(
                self.classifier, self.dropout, outputs.entity_last_hidden_state, placeholder, candidate_entity_mask
            )
        return self.head_output(candidate_choice_loss(logits, labels), logits, outputs)


def extend_position_embeddings(model: nn.Module, max_position_embeddings: int) -> bool:
    """Grow every absolute position table of `model` to `max_position_embeddings` rows by copying its learned rows
    (past the padding rows) over and over (Longformer's recipe for LUKE/RoBERTa beyond 512 words).

    Returns whether a table grew; `config.max_position_embeddings` follows.
    """
    config = model.config
    if max_position_embeddings <= config.max_position_embeddings:
        return False
    offset = (config.pad_token_id or 0) + 1
    grown = False
    for module in list(model.modules()):
        table = getattr(module, "position_embeddings", None)
        if not isinstance(table, nn.Embedding) or table.num_embeddings >= max_position_embeddings:
            continue
        old = table.weight.data
        new = old.new_empty(max_position_embeddings, old.size(1))
        new[:offset] = old[:offset]
        learned = old[offset:]
        for start in range(offset, max_position_embeddings, len(learned)):
            count = min(len(learned), max_position_embeddings - start)
            new[start : start + count] = learned[:count]
        replacement = nn.Embedding(max_position_embeddings, old.size(1), padding_idx=table.padding_idx)
        replacement.weight.data.copy_(new)
        replacement.to(old.device)
        for name, child in module.named_children():
            if child is table:
                setattr(module, name, replacement)
        grown = True
    config.max_position_embeddings = max_position_embeddings
    return grown


GesaForEntityMultipleChoice.register_for_auto_class("AutoModelForMultipleChoice")

__all__ = [
    "CHOICE_HEAD_WEIGHTS",
    "WIKIHOP_TASK",
    "ChoiceHeadMismatch",
    "EntityMultipleChoiceOutput",
    "GesaForEntityMultipleChoice",
    "check_choice_head",
    "choice_head_of_weights",
    "extend_position_embeddings",
    "multiple_choice_logits",
]

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
"""HDE's output layer (thesis eq. 2.62 and 2.63, Acton 2023, 3.4), the one implementation every WikiHop head uses.

A candidate's score is `MLP_c(h_c) + max over the entity nodes e of the candidate of MLP_e(h_e)`, each MLP two layers
of width f/2 with tanh between (`Scorer`, eq. 2.63). `candidate_scores` computes it on a flat node set (the
context-graph GNN's, `modeling_context_graph`); `entity_choice_logits` on GESA's, LUKE's and LUKE-Graph's entity
tokens `(B, E, D)` (`modeling_gesa_multiple_choice`), where an entity node belongs to the candidate whose string it
has (`entity_string_ids`: the thesis's exact match). `candidate_choice_loss`: the softmax cross-entropy over each
example's candidates that trains either.

Flat module: copied next to every saved checkpoint whose head uses it; it imports torch and `checks_gesa` only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .checks_gesa import IGNORE_INDEX, ignored_loss


class Scorer(nn.Module):
    """Eq. 2.63: `tanh(x W^1 + b^1) W^2 + b^2`, hidden width f/2."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(size, size // 2)
        self.out = nn.Linear(size // 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.hidden(x))).squeeze(-1)


def candidate_scores(
    candidate_term: torch.Tensor,
    entity_term: torch.Tensor,
    candidate_nodes: torch.Tensor,
    node_graph: torch.Tensor,
    entity_candidate: torch.Tensor,
) -> torch.Tensor:
    """Eq. 2.62: `(B, C)` logits `MLP_c(h_c) + max_{e in E_c} MLP_e(h_e)` from per-node `(N,)` terms.

    `candidate_nodes` `(B, C)`: the node of each candidate slot (-1: padding, logit `finfo.min`); `node_graph` `(N,)`:
    the example of each node; `entity_candidate` `(N,)`: the candidate slot an entity node mentions (-1: none). A
    candidate without entity node gets no entity term (0).
    """
    batch, width = candidate_nodes.shape
    scores = candidate_term[candidate_nodes.clamp(min=0)]
    entities = (entity_candidate >= 0).nonzero().squeeze(1)
    slots = node_graph[entities] * width + entity_candidate[entities]
    best = entity_term.new_full((batch * width,), float("-inf")).scatter_reduce(
        0, slots, entity_term[entities], reduce="amax", include_self=False
    )
    best = torch.where(torch.isfinite(best), best, torch.zeros_like(best)).view(batch, width)
    return (scores + best).masked_fill(candidate_nodes < 0, torch.finfo(scores.dtype).min)


def entity_choice_logits(
    candidate_scorer: nn.Module,
    entity_scorer: nn.Module,
    entity_states: torch.Tensor,
    candidate_entity_mask: torch.Tensor,
    entity_string_ids: torch.Tensor | None,
    placeholder_entity_mask: torch.Tensor | None = None,
    entity_attention_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Eq. 2.62 on entity tokens: `(B, E, D)` states -> `(B, E)` logits, non-candidates at `finfo.min`.

    The entity nodes of candidate `c` are the other real entities with `c`'s string id (`entity_string_ids` `(B, E)`,
    -1 none; the query entity, `placeholder_entity_mask`, is no entity node). Without string ids only `MLP_c` scores.
    """
    batch, E, _ = entity_states.shape
    device = entity_states.device
    flat = entity_states.reshape(batch * E, -1)
    is_candidate = candidate_entity_mask.bool()
    index = torch.arange(batch * E, device=device).view(batch, E)
    candidate_nodes = torch.where(is_candidate, index, -1)
    node_graph = torch.arange(batch, device=device).repeat_interleave(E)
    entity_candidate = torch.full((batch, E), -1, dtype=torch.long, device=device)
    if entity_string_ids is not None:
        node = ~is_candidate & (entity_string_ids >= 0)
        if placeholder_entity_mask is not None:
            node &= ~placeholder_entity_mask.bool()
        if entity_attention_mask is not None:
            node &= entity_attention_mask.bool()
        # (B, E_node, E_candidate): the candidate whose string the node has (candidates' strings are distinct)
        same = (entity_string_ids[:, :, None] == entity_string_ids[:, None, :]) & is_candidate[:, None, :]
        same &= node[:, :, None]
        found = same.any(dim=2)
        entity_candidate = torch.where(found, same.float().argmax(dim=2), entity_candidate)
    return candidate_scores(
        candidate_scorer(flat), entity_scorer(flat), candidate_nodes, node_graph, entity_candidate.view(-1)
    )


def candidate_choice_loss(logits: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor | None:
    """Softmax cross-entropy of `(B, C)` candidate logits (non-candidates at `finfo.min`) against `labels` `(B,)`, the
    answer's index (-100: unlabelled), mean over the labelled examples; 0 when none is (`checks_gesa.ignored_loss`:
    never NaN); None without labels."""
    if labels is None:
        return None
    if (labels != IGNORE_INDEX).any():
        return F.cross_entropy(logits.float(), labels, ignore_index=IGNORE_INDEX)
    return ignored_loss(logits)


__all__ = ["Scorer", "candidate_choice_loss", "candidate_scores", "entity_choice_logits"]

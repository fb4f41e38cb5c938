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
"""The label arithmetic of paper Eq. 1: the label terms `q_i . r_l` of a layer's label table `R` (given as a tensor),
for the few labels `l` each block of pairs can use (`label_terms` -> `LabelTerms`), and the per-batch label-id
tensors they read (`label_ids`, `entity_word_positions`, cached on the batch's `TokenStructure`).

Between the structure, which says which label each pair carries (`structure_gesa`), and the kernels, which spread
the terms into the scores `s_ij = q_i . k_j + q_i . r_label(i,j)`: `kernel_bias_gesa`, `kernel_windowed_gesa` and
`kernel_flex_gesa` read `LabelTerms`; `kernel_fused_gesa` computes its own inside each block of scores;
`attention_reference_gesa` gathers them from the dense `(B, P, P)` labels.

Flat module: copied next to every saved checkpoint; it imports torch and its sibling `structure_gesa` only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .structure_gesa import TokenStructure, cached_plan


@dataclass
class LabelTerms:
    """Scaled label terms `q_i . r_l`, per block over the labels that block can use.

    Args:
        distance: `(B, H, L, 2k + 1)` w2w clipped distances (one NULL column when distance labels are off).
        rank: `(B, H, L, 3)` the `RelativeLabels.rank_labels` (NULL, question, CLS), or None.
        w2e: `(B, H, L, E)`, e2w: `(B, H, E, L)`, e2e: `(B, H, E, E)`: the terms of each pair, or None.
        distance_table, rank_table: the label embeddings behind `distance` and `rank` (`(labels, d)`), for terms
            of a few more queries.
    """

    distance: torch.Tensor
    distance_table: torch.Tensor
    rank: torch.Tensor | None = None
    rank_table: torch.Tensor | None = None
    w2e: torch.Tensor | None = None
    e2w: torch.Tensor | None = None
    e2e: torch.Tensor | None = None


def label_ids(tokens: TokenStructure, labels: str) -> torch.Tensor:
    """The label ids `tokens.layout.<labels>` as a tensor on the batch's device, made once per batch (a host-to-device
    copy in every layer would wait for the device)."""
    ids = getattr(tokens.layout, labels)
    device = tokens.attention_mask.device
    return cached_plan(
        tokens, ("label_ids", labels), lambda: torch.tensor(ids, dtype=torch.long).to(device, non_blocking=True)
    )


def entity_word_positions(tokens: TokenStructure) -> torch.Tensor:
    """e2w label ids `(B, E, L)` -> their positions in `RelativeLabels.word_entity_labels`."""

    def positions() -> torch.Tensor:
        labels = label_ids(tokens, "word_entity_labels")
        position = torch.zeros(tokens.layout.size, dtype=torch.long, device=labels.device)
        position[labels] = torch.arange(len(labels), device=labels.device)
        return position[tokens.entity_word_labels]

    return cached_plan(tokens, ("entity_word_positions",), positions)


class _SpreadTerms(torch.autograd.Function):
    """`terms` `(B, H, R, K)` -> `(B, H, R, C)`, pair `(r, c)` reading label slot `positions[b, r, c]`: the `base`
    slot's term broadcast over the row, then the few pairs of other slots (`b, r, c` -> slot `k`) written in. The
    backward sums each row once instead of scatter-adding every pair (a gather's backward)."""

    @staticmethod
    def forward(ctx, terms, base, b, r, c, k, columns):
        B, H, R, _ = terms.shape
        out = terms[..., base : base + 1].expand(B, H, R, columns).contiguous()
        out[b, :, r, c] = terms[b, :, r, k]
        ctx.save_for_backward(b, r, k)
        ctx.base, ctx.shape = base, terms.shape
        ctx.c = c
        return out

    @staticmethod
    def backward(ctx, grad):
        b, r, k = ctx.saved_tensors
        # in float32 for half precision: the base slot's sum minus its other pairs cancels
        dtype = torch.float32 if grad.dtype in (torch.float16, torch.bfloat16) else grad.dtype
        grad_terms = grad.new_zeros(ctx.shape, dtype=dtype)
        grad_terms[..., ctx.base] = grad.sum(-1, dtype=dtype)
        picked = grad[b, :, r, ctx.c].to(dtype)  # (pairs, H)
        by_row = grad_terms.permute(0, 2, 3, 1)  # (B, R, K, H), a view
        by_row.index_put_((b, r, torch.full_like(k, ctx.base)), -picked, accumulate=True)
        by_row.index_put_((b, r, k), picked, accumulate=True)
        return grad_terms.to(grad.dtype), None, None, None, None, None, None


def spread_label_terms(
    terms: torch.Tensor, positions: torch.Tensor, tokens: TokenStructure, name: str, spread: bool = True
) -> torch.Tensor:
    """`terms` `(B, H, R, K)` gathered per pair by `positions` `(B, R, C)` (slots of `terms`) -> `(B, H, R, C)`.

    With `spread` on CPU, where most pairs share one label (the e2w / w2e non-mention label), the common label is
    broadcast and the others written in (`_SpreadTerms`, its plan made once per batch under `name`, read on the host:
    only the windowed kernel, whose own plan reads the host, asks for it); otherwise (and while tracing) a gather.
    """
    B, H, R, K = terms.shape
    C = positions.size(-1)
    if not spread or terms.device.type != "cpu" or torch.compiler.is_compiling() or not terms.requires_grad:
        return terms.gather(3, positions[:, None].expand(B, H, R, C))

    def plan() -> tuple[int, tuple[torch.Tensor, ...]] | None:
        base = int(torch.bincount(positions.flatten(), minlength=K).argmax())
        others = (positions != base).nonzero(as_tuple=True)
        if len(others[0]) * 4 > positions.numel():  # no label dominates: the gather is as cheap
            return None
        return base, (*others, positions[others])

    found = cached_plan(tokens, ("spread_label_terms", name), plan)
    if found is None:
        return terms.gather(3, positions[:, None].expand(B, H, R, C))
    base, (b, r, c, k) = found
    return _SpreadTerms.apply(terms, base, b, r, c, k, C)


def label_terms(
    table: torch.Tensor,
    q_to_word: torch.Tensor,
    q_to_entity: torch.Tensor,
    tokens: TokenStructure,
    word_length: int,
    spread: bool = False,
) -> LabelTerms:
    """`q_i . r_l` for the few labels l each block can use, from the label table `table` `(labels, d)`.

    Queries `(B, H, P, d)` come scaled, so the terms do too. The CPU kernel (`kernel_fused_gesa.FusedAttention`)
    computes its own from the table. `spread`: the w2e / e2w terms by `spread_label_terms`'s broadcast on CPU (the
    windowed kernel) rather than a gather.
    """
    layout = tokens.layout
    L, k = word_length, tokens.distance_k
    B, H, P, _ = q_to_word.shape
    word_queries = q_to_word[:, :, :L]
    # w2w: 2k + 1 clipped distances (or the NULL label alone), the global ranks
    distance_rows = table[layout.distance_offset : layout.distance_offset + 2 * k + 1] if k else table[:1]
    terms = LabelTerms(torch.matmul(word_queries, distance_rows.t()), distance_rows)
    if tokens.word_ranks is not None:
        terms.rank_table = table.index_select(0, label_ids(tokens, "rank_labels"))
        terms.rank = torch.matmul(word_queries, terms.rank_table.t())
    if tokens.entity_word_labels is None or P == L:
        return terms
    # w2e / e2w: the four labels of that label set; e2e: the whole table (E x E pairs only)
    local = entity_word_positions(tokens)
    rows = table.index_select(0, label_ids(tokens, "word_entity_labels")).t()
    E = P - L
    w2e = torch.matmul(q_to_entity[:, :, :L], rows)
    terms.w2e = spread_label_terms(w2e, local.transpose(1, 2), tokens, "w2e", spread)
    e2w = torch.matmul(q_to_word[:, :, L:], rows)
    terms.e2w = spread_label_terms(e2w, local, tokens, "e2w", spread)
    e2e = torch.matmul(q_to_entity[:, :, L:], table.t())
    terms.e2e = e2e.gather(3, tokens.entity_entity_labels[:, None].expand(B, H, E, E))
    return terms


__all__ = ["LabelTerms", "entity_word_positions", "label_ids", "label_terms", "spread_label_terms"]

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
"""Eq. 1 as one `scaled_dot_product_attention` call, for accelerators: `LabelBias` (`bias_attention`).

    softmax(q_to_word k^T + bias) v,   bias_ij = q_i . r_label(i,j) [+ (q_to_entity - q_to_word)_i . k_j, j an entity]

with the masked pairs (padded keys; with `attention_window`, local word pairs farther apart) at the dtype's minimum
in the bias; queries come scaled. The label terms (`labels_gesa.LabelTerms`: `q . r_l` over each block's few labels)
are spread into one `(B, H, P, P)` bias by a single gather (`LabelBias`, its indices in `BiasPlan`), and the
entity-key correction turns the entity columns into `q_to_entity . k_j`, so one product of head size d serves the
four query matrices. A fixed handful of batched kernels per layer and no host sync: one graph under
`torch.compile` / `torch.export`, where the fused and windowed kernels run this one instead. The backward sums the
bias gradient back per label without atomics. `tests/test_kernels.py` checks it against `attention_reference_gesa`.

Flat module: copied next to every saved checkpoint; it imports torch and its siblings `structure_gesa`,
`labels_gesa` and `kernel_common_gesa` only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .kernel_common_gesa import BandPlan, band_label_sums, band_sum_plan, entity_key_correction
from .labels_gesa import LabelTerms
from .structure_gesa import LayerPattern, TokenStructure, cached_plan, local_pairs_allowed

# Row stride (elements) of the bias path's attention bias: SDPA's memory-efficient kernel copies a bias whose rows
# are not aligned to it.
BIAS_ALIGNMENT = 16


@dataclass
class BiasPlan:
    """Index tensors of the bias path for one batch (shared by every layer); built without a host sync.

    Args:
        row_index: `(B, 1, L, W)` long: for each word-row pair, its column in that row's terms
            `[masked (1) ; distance (C) ; question, CLS (R) ; w2e (E)]` (`LabelBias`; the masked column first, so
            its index is the constant 0 under dynamic shapes); `W` is `P` rounded up to `BIAS_ALIGNMENT`, the extra
            columns masked.
        pair_kind: `(B, 1, L, L)` uint8: 0 a local word pair (distance label), 1 question-global, 2 CLS-global,
            3 a padded key or a pair outside `attention_window`.
        key_masked: `(B, 1, 1, P)` bool: padded keys (the entity rows' mask).
        band: the clipped-distance labels along the word block's rows (`band_sum_plan`; None when k = 0).
    """

    row_index: torch.Tensor
    pair_kind: torch.Tensor
    key_masked: torch.Tensor
    band: BandPlan | None


def bias_plan(tokens: TokenStructure, word_length: int, entity_terms: bool, dtype: torch.dtype) -> BiasPlan:
    """The bias path's plan; with `attention_window`, local word pairs farther apart are masked like padding."""
    masked = tokens.attention_mask == 0
    device = masked.device
    B, P = masked.shape
    L, k = word_length, tokens.distance_k
    C = 2 * k + 1
    positions = torch.arange(L, device=device)
    distance = (positions[None, :] - positions[:, None]).clamp(-k, k) + k
    ranks = tokens.word_ranks
    R = 0 if ranks is None else 2
    pair_kind = torch.zeros(B, L, L, dtype=torch.uint8, device=device)
    word_index = (distance + 1).expand(B, L, L)
    if ranks is not None:
        pair_rank = torch.maximum(ranks[:, :, None], ranks[:, None, :])
        pair_kind = pair_rank.to(torch.uint8)
        word_index = torch.where(pair_rank > 0, C + pair_rank, word_index)
    E = P - L if entity_terms else 0
    row_index = word_index
    if E:
        entity_columns = torch.arange(1 + C + R, 1 + C + R + E, device=device)
        row_index = torch.cat([word_index, entity_columns.expand(B, L, E)], dim=2)
    blocked = masked[:, None, : row_index.size(2)]
    far = _outside_window(tokens, L)
    if far is not None:
        blocked = blocked | torch.cat([far, far.new_zeros(B, L, row_index.size(2) - L)], dim=2)
        pair_kind = pair_kind.masked_fill(far, 3)
    row_index = row_index.masked_fill(blocked, 0)
    row_index = F.pad(row_index, (0, -P % BIAS_ALIGNMENT), value=0)
    pair_kind = pair_kind.masked_fill(masked[:, None, :L], 3)
    return BiasPlan(
        row_index=row_index[:, None].contiguous(),
        pair_kind=pair_kind[:, None].contiguous(),
        key_masked=masked[:, None, None, :],
        band=band_sum_plan(positions, L, k, dtype),
    )


def _outside_window(tokens: TokenStructure, word_length: int) -> torch.Tensor | None:
    """Bool `(B, L, L)`: local word pairs outside `attention_window` and the layer's dilation and random keys (None
    without a window)."""
    if tokens.attention_window is None:
        return None
    pattern = tokens.pattern or LayerPattern(tokens.attention_window)
    far = ~local_pairs_allowed(
        tokens.attention_mask,
        word_length,
        tokens.attention_window,
        pattern.dilation,
        pattern.random_blocks,
        pattern.random_block_size,
        pattern.seed,
    )
    if tokens.window_global is not None:
        far = far & ~tokens.window_global[:, :, None] & ~tokens.window_global[:, None, :]
    return far


class LabelBias(torch.autograd.Function):
    """The label terms and the padding mask as one additive bias `(B, H, P, P)` over words then entities.

    Word rows come from one gather over each row's few terms (`BiasPlan.row_index`): the clipped distances,
    the question/CLS global labels, the w2e pairs and a masked column; entity rows are `[e2w ; e2e]`. The rows are
    `BIAS_ALIGNMENT`-aligned slices of wider rows, which SDPA's memory-efficient kernel reads in place. The backward
    sums the bias gradient back per label without atomics: the global pairs by mask, the inner distances by a
    gather along the band, the clipped ends from row prefix sums in float32 (so half precision keeps its sums).
    """

    @staticmethod
    def forward(ctx, distance, rank, w2e, e2w, e2e, plan: BiasPlan):
        B, H, L, C = distance.shape
        P = plan.key_masked.size(-1)
        masked_value = torch.finfo(distance.dtype).min
        pieces = [distance.new_full((B, H, L, 1), masked_value), distance]
        if rank is not None:
            pieces.append(rank[..., 1:])
        if w2e is not None:
            pieces.append(w2e)
        row_terms = torch.cat(pieces, dim=-1)
        width = plan.row_index.size(-1)
        bias = row_terms.gather(3, plan.row_index.expand(B, H, L, width))
        if e2w is not None:
            entity_rows = torch.cat([e2w, e2e], dim=-1).masked_fill_(plan.key_masked, masked_value)
            bias = torch.cat([bias, F.pad(entity_rows, (0, width - P), value=masked_value)], dim=2)
        bias = bias[..., :P]
        ctx.plan, ctx.has_rank, ctx.has_entities, ctx.C = plan, rank is not None, e2w is not None, C
        return bias

    @staticmethod
    def backward(ctx, grad_bias):
        plan, C = ctx.plan, ctx.C
        B, H, P, _ = grad_bias.shape
        L = plan.pair_kind.size(-1)
        words = grad_bias[:, :, :L, :L]
        grad_rank = grad_w2e = grad_e2w = grad_e2e = None
        if ctx.has_rank:
            grad_rank = grad_bias.new_zeros(B, H, L, 3)
            for rank in (1, 2):
                grad_rank[..., rank] = words.masked_fill(plan.pair_kind != rank, 0).sum(-1)
        local = words.masked_fill(plan.pair_kind != 0, 0)
        if plan.band is None:
            grad_distance = local.sum(-1, keepdim=True)
        else:
            inner = local.gather(-1, plan.band.term_index.expand(B, H, L, C))
            # the clipped ends sum whole row ranges: prefix sums, in float32 at least so half precision adds up
            accumulate = torch.promote_types(local.dtype, torch.float32)
            grad_distance = band_label_sums(local.to(accumulate), plan.band, inner=inner)
        if ctx.has_entities:
            entity_masked = plan.key_masked[..., L:]
            grad_w2e = grad_bias[:, :, :L, L:].masked_fill(entity_masked, 0)
            grad_e2w = grad_bias[:, :, L:, :L].masked_fill(plan.key_masked[..., :L], 0)
            grad_e2e = grad_bias[:, :, L:, L:].masked_fill(entity_masked, 0)
        return grad_distance, grad_rank, grad_w2e, grad_e2w, grad_e2e, None


def bias_attention(
    q_to_word: torch.Tensor,
    q_to_entity: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: LabelTerms | None,
    tokens: TokenStructure,
    word_length: int,
    dropout_p: float,
) -> torch.Tensor:
    """Eq. 1 as one `scaled_dot_product_attention` call with an additive bias; queries come scaled.

    For accelerators, where the fused path's per-example loop is bound by kernel launches: a fixed number of
    batched kernels per layer and no host sync. The attention runs with `q_to_word` against every key; the entity
    columns get `(q_to_entity - q_to_word) . k` in the bias, which turns them into `q_to_entity . k` (four query
    matrices, one product of head size d). The bias is `(B, H, P, P)` in the queries' dtype (`LabelBias`), and
    SDPA's memory-efficient kernels take its gradient. Returns the context `(B, H, P, d)`.
    """
    L = word_length
    correction = entity_key_correction(q_to_word, q_to_entity, key, L)
    if terms is None:
        # padding (and the window) only: a bool mask, or the entity-key correction as the bias
        allowed = cached_plan(tokens, ("allowed", L), lambda: tokens.dense_allowed(L))
        if correction is None:
            mask = allowed
        else:
            mask = F.pad(correction, (L, 0)).masked_fill(~allowed, torch.finfo(correction.dtype).min)
    else:
        w2e, e2w, e2e = terms.w2e, terms.e2w, terms.e2e
        if correction is not None:
            w2e, e2e = w2e + correction[:, :, :L], e2e + correction[:, :, L:]
        plan = cached_plan(
            tokens,
            ("bias", L, w2e is not None, q_to_word.dtype),
            lambda: bias_plan(tokens, L, w2e is not None, q_to_word.dtype),
        )
        mask = LabelBias.apply(terms.distance, terms.rank, w2e, e2w, e2e, plan)
    return F.scaled_dot_product_attention(q_to_word, key, value, attn_mask=mask, dropout_p=dropout_p, scale=1.0)


__all__ = [
    "BiasPlan",
    "LabelBias",
    "bias_attention",
    "bias_plan",
]

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
"""GESA's attention kernels (paper Eq. 1) and their per-batch plans: tensors in, context out.

- `FusedAttention` (CPU, `fused_attention`): dense attention one block of scores at a time, in cache, with a
  hand-written backward; no `(B, H, P, P)` label or index tensor exists (`DensePlan`).
- `LabelBias` (`bias_attention`): the label terms and the padding as one `(B, H, P, P)` bias built by a single gather,
  then one `scaled_dot_product_attention` call (`BiasPlan`): no host sync, one graph under `torch.compile`.
- `WindowedAttention` (`windowed_attention`): `attention_window` at a cost linear in length (`WindowPlan`).
- `flex_label_attention`: FlexAttention with the label terms as a `score_mod` and padding / window as a `BlockMask`.

Every kernel receives tensors (queries, keys, values, the label table or the label terms, the batch's
`TokenStructure`), never the module that calls it; `attention_gesa` wraps them as transformers attention functions.

Flat module: copied next to every saved checkpoint; it imports torch and its sibling `structure_gesa` only.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .structure_gesa import LabelTerms, TokenStructure, cached_plan

# The fused path computes the scores of one example and a group of heads at a time, at most this many bytes, so that
# a group's scores stay in the CPU cache from the label fill through the product, softmax, dropout and back.
SCORE_BLOCK_BYTES = 8 * 1024 * 1024
# Rows per query block of the windowed path: each block reads `WINDOW_BLOCK + 2 * window` keys.
WINDOW_BLOCK = 64
# Row stride (elements) of the bias path's attention bias: SDPA's memory-efficient kernel copies a bias whose rows
# are not aligned to it.
BIAS_ALIGNMENT = 16


def is_tracing() -> bool:
    """Inside `torch.compile` or `torch.export` (the host-side plans of the fused and windowed kernels cannot be
    traced: they read tensor values on the host)."""
    return torch.compiler.is_compiling()


@dataclass
class DensePlan:
    """Index tensors of the fused dense path for one batch (shared by every layer).

    The label terms of a block are read from small per-row term tables, `q . R^T` over the few label rows each kind
    of pair can use: word rows `[distance (C = 2k + 1, or the NULL label) ; question, CLS]`, w2e and e2w the labels
    present in the batch's e2w labels, e2e those present in its e2e labels.

    Args:
        word_index: `(B or 1, L, L)` long: column of each word pair's label in its row's word terms (the global
            ranks' columns where a pair has one).
        word_ids: `(C [+ 2],)` long: the label-table rows of the word terms.
        term_inner: `(L, 2k + 1)`: 1 where the score column of that distance label exists and is not a clipped
            end (0 and 2k).
        end_index: `(L, 3)` long: prefix-sum columns `i - k`, `L - 1`, `i + k - 1` (clamped) of row i.
        left_valid: `(L,)`: 1 where row i has pairs clipped to `-k`.
        global_words: per example, the words whose w2w labels are global ones (rank > 0).
        row_is_cls, column_is_cls: per example, `(G, L)` and `(L, G)`: 1 where a global word's row / column pair
            has the CLS label (else the question label).
        entity_word_ids, w2e_index `(B, L, E)`, e2w_index `(B, E, L)`: the w2e / e2w label rows and each pair's
            position among them; entity_ids, e2e_index `(B, E, E)`: the same for e2e (None without entity terms).
        padded_keys: per example, the padded key positions.
        heads_per_block: heads whose scores are computed together.
    """

    word_length: int
    distance_k: int
    word_index: torch.Tensor
    word_ids: torch.Tensor
    term_inner: torch.Tensor | None
    end_index: torch.Tensor | None
    left_valid: torch.Tensor | None
    global_words: list[torch.Tensor]
    row_is_cls: list[torch.Tensor]
    column_is_cls: list[torch.Tensor]
    entity_word_ids: torch.Tensor | None
    w2e_index: torch.Tensor | None
    e2w_index: torch.Tensor | None
    entity_ids: torch.Tensor | None
    e2e_index: torch.Tensor | None
    padded_keys: list[torch.Tensor]
    heads_per_block: int


def dense_plan(tokens: TokenStructure, word_length: int, num_heads: int, dtype: torch.dtype) -> DensePlan:
    """The fused path's plan (eager mode only: it reads which words are global, which labels occur and which keys
    are padded on the host)."""
    mask = tokens.attention_mask
    device = mask.device
    L, P = word_length, mask.size(1)
    k = tokens.distance_k
    layout = tokens.layout
    C = 2 * k + 1
    positions = torch.arange(L, device=device)
    word_index = ((positions[None, :] - positions[:, None]).clamp(-k, k) + k)[None]
    word_ids = torch.arange(layout.distance_offset, layout.distance_offset + C, device=device) if k else None
    if word_ids is None:
        word_ids = torch.tensor([layout.NULL], device=device)
    _, term_inner, end_index, left_valid = _band_sum_plan(positions, L, k, dtype)
    global_words, row_is_cls, column_is_cls = [], [], []
    ranks = tokens.word_ranks
    if ranks is not None and bool((ranks > 0).any()):
        # pair rank = the higher rank of the two words: 1 question (term column C), 2 CLS (column C + 1)
        pair_rank = torch.maximum(ranks[:, :, None], ranks[:, None, :])
        word_index = torch.where(pair_rank > 0, C - 1 + pair_rank, word_index)
        rank_ids = [layout.rank_labels[1], layout.rank_labels[2]]
        word_ids = torch.cat([word_ids, torch.tensor(rank_ids, device=device)])
        for b, row in enumerate(ranks > 0):
            words = row.nonzero().squeeze(1)
            global_words.append(words)
            row_is_cls.append((pair_rank[b].index_select(0, words) == 2).to(dtype))
            column_is_cls.append((pair_rank[b].index_select(1, words) == 2).to(dtype))
    entity_word_ids = w2e_index = e2w_index = entity_ids = e2e_index = None
    if tokens.use_labels and tokens.entity_word_labels is not None and P > L:
        entity_word_ids, e2w_index = torch.unique(tokens.entity_word_labels, return_inverse=True)
        w2e_index = e2w_index.transpose(1, 2).contiguous()
        entity_ids, e2e_index = torch.unique(tokens.entity_entity_labels, return_inverse=True)
        e2e_index = e2e_index.expand(mask.size(0), P - L, P - L).contiguous()
    padded_keys = [row.nonzero().squeeze(1) for row in mask == 0]
    element = torch.finfo(dtype).bits // 8
    heads = num_heads if device.type != "cpu" else max(1, min(num_heads, SCORE_BLOCK_BYTES // (P * P * element)))
    return DensePlan(
        word_length=L,
        distance_k=k,
        word_index=word_index.contiguous(),
        word_ids=word_ids,
        term_inner=term_inner,
        end_index=end_index,
        left_valid=left_valid,
        global_words=global_words,
        row_is_cls=row_is_cls,
        column_is_cls=column_is_cls,
        entity_word_ids=entity_word_ids,
        w2e_index=w2e_index,
        e2w_index=e2w_index.contiguous() if e2w_index is not None else None,
        entity_ids=entity_ids,
        e2e_index=e2e_index,
        padded_keys=padded_keys,
        heads_per_block=heads,
    )


def _softmax_(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, in place on CPU (no second score buffer)."""
    if scores.device.type == "cpu":
        return torch.ops.aten._softmax.out(scores, -1, False, out=scores)
    return torch.softmax(scores, dim=-1)


def dropout_keep_mask(like: torch.Tensor, p: float) -> torch.Tensor:
    """Bool mask shaped like `like`, each element kept with probability `1 - p` (to within 2^-16).

    Two elements per 31-bit random word: one compares its low 16 bits, the other its high 15 bits, with the keep
    threshold. Half the random draws of `rand_like(...) < 1 - p`, at about 0.4x its CPU cost (0.3x `bernoulli_`'s).
    """
    count = like.numel()
    words = torch.empty((count + 1) // 2, dtype=torch.int32, device=like.device).random_()  # uniform in [0, 2^31)
    low = round((1.0 - p) * 65536) - 32768  # the low half, as int16, is uniform in [-2^15, 2^15)
    high = round((1.0 - p) * 32768)  # the high half is uniform in [0, 2^15)
    thresholds = [low, high] if sys.byteorder == "little" else [high, low]
    halves = words.view(torch.int16).view(-1, 2)
    kept = halves.lt(torch.tensor(thresholds, dtype=torch.int16, device=like.device))
    return kept.view(-1)[:count].view(like.shape)


class FusedAttention(torch.autograd.Function):
    """`softmax(q k^T + label terms, padding masked) v` with dropout, one `DensePlan` score block at a time.

    `q_word` meets the word keys, `q_entity` the entity keys (None: `q_word` meets all keys). `table` `(labels, d)`
    is the label table (None: no label terms at all). Each block's label terms are computed in the block, in cache:
    `q . R^T` over the few label rows a kind of pair can use (`DensePlan`), spread into the scores by one gather per
    kind of pair. The backward sums the score gradients back per label (band diagonals, the two clipped ends, the
    global rows and columns, a scatter over the few entity labels) and returns the label table's gradient itself,
    so no `(B, H, P, P)` index or bias tensor, and no autograd graph of label terms, ever exists. Only the
    probabilities (and the dropout mask, as bool) are kept for the backward.
    """

    @staticmethod
    def forward(ctx, q_word, q_entity, key, value, table, plan, dropout_p):
        B, H, P, _ = q_word.shape
        L = plan.word_length
        save = any(ctx.needs_input_grad)
        q_word, key, value = q_word.contiguous(), key.contiguous(), value.contiguous()
        word_keys, entity_keys = key, None
        if q_entity is not None:
            # q_word . k_words into the word columns, q_entity . k_entities into the entity columns
            q_entity = q_entity.contiguous()
            word_keys, entity_keys = key[:, :, :L], key[:, :, L:]
        K = word_keys.size(2)  # the columns q_word meets: the words, or every token
        # the queries of the label terms whose key is an entity (w2e, e2e)
        q_to_entity = q_word if q_entity is None else q_entity
        context = value.new_empty(B, H, P, value.size(-1))
        word_rows = entity_terms = None
        if table is not None:
            word_rows = table.index_select(0, plan.word_ids)
            if plan.entity_word_ids is not None:
                # the entity blocks' terms are small: all heads at once
                entity_word_rows = table.index_select(0, plan.entity_word_ids)
                entity_rows = table.index_select(0, plan.entity_ids)
                entity_terms = (
                    torch.matmul(q_to_entity[:, :, :L], entity_word_rows.t()),  # w2e (B, H, L, U)
                    torch.matmul(q_word[:, :, L:], entity_word_rows.t()),  # e2w (B, H, E, U)
                    torch.matmul(q_to_entity[:, :, L:], entity_rows.t()),  # e2e (B, H, E, V)
                )
        saved = []
        for b in range(B):
            word_index = plan.word_index[min(b, plan.word_index.size(0) - 1)]
            for h0 in range(0, H, plan.heads_per_block):
                heads = slice(h0, min(h0 + plan.heads_per_block, H))
                n = heads.stop - heads.start
                scores = q_word.new_empty(n, P, P)
                if table is None:
                    scores[:, :, :K].baddbmm_(q_word[b, heads], word_keys[b, heads].transpose(1, 2), beta=0)
                else:
                    # one product over every row of the block (a batched one over the word rows is slower)
                    terms = torch.mm(q_word[b, heads].flatten(0, 1), word_rows.t()).view(n, P, -1)[:, :L]
                    torch.gather(terms, 2, word_index.expand(n, L, L), out=scores[:, :L, :L])
                    if entity_terms is not None:
                        w2e, e2w, e2e = (t[b, heads] for t in entity_terms)
                        E = P - L
                        torch.gather(w2e, 2, plan.w2e_index[b].expand(n, L, E), out=scores[:, :L, L:])
                        torch.gather(e2w, 2, plan.e2w_index[b].expand(n, E, L), out=scores[:, L:, :L])
                        torch.gather(e2e, 2, plan.e2e_index[b].expand(n, E, E), out=scores[:, L:, L:])
                    elif P > L:
                        scores[:, :L, L:] = 0
                        scores[:, L:] = 0
                    scores[:, :, :K].baddbmm_(q_word[b, heads], word_keys[b, heads].transpose(1, 2))
                if entity_keys is not None:
                    beta = 0 if table is None else 1  # without label terms the entity columns are empty
                    scores[:, :, L:].baddbmm_(q_entity[b, heads], entity_keys[b, heads].transpose(1, 2), beta=beta)
                if len(plan.padded_keys[b]):
                    scores.index_fill_(2, plan.padded_keys[b], torch.finfo(scores.dtype).min)
                scores = _softmax_(scores)
                if dropout_p > 0:
                    kept = dropout_keep_mask(scores, dropout_p)
                    if save:
                        saved.append(kept)
                    torch.bmm(scores * kept, value[b, heads], out=context[b, heads])
                else:
                    torch.bmm(scores, value[b, heads], out=context[b, heads])
                if save:
                    saved.append(scores)
        if dropout_p > 0:
            context.mul_(1.0 / (1.0 - dropout_p))  # scale the small output rather than the P x P probabilities
        if save:
            ctx.save_for_backward(q_word, q_entity, word_keys, entity_keys, value, context, table, *saved)
            ctx.plan, ctx.dropout_p = plan, dropout_p
        return context

    @staticmethod
    def backward(ctx, grad_context):
        q_word, q_entity, word_keys, entity_keys, value, context, table, *saved = ctx.saved_tensors
        plan, dropout_p = ctx.plan, ctx.dropout_p
        B, H, P, _ = q_word.shape
        L, K = plan.word_length, word_keys.size(2)
        E = P - L
        grad_context = grad_context.contiguous()
        # rowsum(P * dP) of the softmax backward is dO . O (the flash-attention identity), dropout or not
        delta = (grad_context * context).sum(-1, keepdim=True)
        if dropout_p > 0:
            grad_context = grad_context * (1.0 / (1.0 - dropout_p))
        grad_q_word, grad_key, grad_value = (
            torch.empty_like(q_word),
            q_word.new_empty(B, H, P, q_word.size(-1)),
            torch.empty_like(value),
        )
        grad_q_entity = None if q_entity is None else torch.empty_like(q_entity)
        q_to_entity = q_word if q_entity is None else q_entity
        grad_q_to_entity = grad_q_word if q_entity is None else grad_q_entity
        grad_table = word_rows = grad_word_rows = entity_grads = None
        if table is not None:
            word_rows = table.index_select(0, plan.word_ids)
            C = 2 * plan.distance_k + 1
            grad_word_rows = table.new_zeros(word_rows.shape)
            if plan.entity_word_ids is not None:
                U, V = plan.entity_word_ids.numel(), plan.entity_ids.numel()
                # the gradients of the entity blocks' terms (w2e, e2w, e2e), summed per label by scatters
                entity_grads = (
                    q_word.new_zeros(B, H, L, U),
                    q_word.new_zeros(B, H, E, U),
                    q_word.new_zeros(B, H, E, V),
                )
        blocks = iter(saved)
        for b in range(B):
            for h0 in range(0, H, plan.heads_per_block):
                heads = slice(h0, min(h0 + plan.heads_per_block, H))
                n = heads.stop - heads.start
                kept = next(blocks) if dropout_p > 0 else None
                probs = next(blocks)
                g = grad_context[b, heads]
                # dS in a buffer with k zeros either side, so that `_band_view` can read its band as a strided view
                pad = plan.distance_k if table is not None else 0
                buffer = q_word.new_empty(n * P * P + 2 * pad)
                buffer[:pad].zero_()
                buffer[buffer.numel() - pad :].zero_()
                grad_scores = torch.bmm(
                    g, value[b, heads].transpose(1, 2), out=buffer[pad : pad + n * P * P].view(n, P, P)
                )
                used = probs if kept is None else torch.where(kept, probs, 0.0)  # the dropped-out probabilities
                torch.bmm(used.transpose(1, 2), g, out=grad_value[b, heads])
                grad_scores.mul_(used).addcmul_(probs, delta[b, heads], value=-1)  # dS = P' * dP' - P * delta
                del used
                to_words = grad_scores[:, :, :K]
                torch.bmm(to_words, word_keys[b, heads], out=grad_q_word[b, heads])
                grad_key[b, heads, :K].baddbmm_(to_words.transpose(1, 2), q_word[b, heads], beta=0)
                if q_entity is not None:
                    to_entities = grad_scores[:, :, L:]
                    torch.bmm(to_entities, entity_keys[b, heads], out=grad_q_entity[b, heads])
                    grad_key[b, heads, L:].baddbmm_(to_entities.transpose(1, 2), q_entity[b, heads], beta=0)
                if table is None:
                    continue
                if entity_grads is not None:
                    grad_w2e, grad_e2w, grad_e2e = (t[b, heads] for t in entity_grads)
                    grad_w2e.scatter_add_(2, plan.w2e_index[b].expand(n, L, E), grad_scores[:, :L, L:])
                    grad_e2w.scatter_add_(2, plan.e2w_index[b].expand(n, E, L), grad_scores[:, L:, :L])
                    grad_e2e.scatter_add_(2, plan.e2e_index[b].expand(n, E, E), grad_scores[:, L:, L:])
                words = grad_scores[:, :L, :L]
                # per word row, the summed score gradient of each word-term label: distances, then question / CLS
                sums = q_word.new_empty(n, L, word_rows.size(0))
                if C < word_rows.size(0):
                    rank_sums = sums[:, :, C:]
                    rank_sums.zero_()
                    if len(plan.global_words[b]):
                        # a global word's row and column carry its pairs' question / CLS terms (the row's query's)
                        global_words = plan.global_words[b]
                        # (index_select of the contiguous scores: of their strided word block it would copy it whole)
                        rows = grad_scores.index_select(1, global_words)[:, :, :L]
                        row_cls = (rows * plan.row_is_cls[b]).sum(-1)
                        words.index_fill_(1, global_words, 0)
                        columns = grad_scores.index_select(2, global_words)[:, :L]
                        column_cls = (columns * plan.column_is_cls[b]).sum(-1)
                        rank_sums[..., 0] = columns.sum(-1) - column_cls
                        rank_sums[..., 1] = column_cls
                        rank_sums.index_add_(1, global_words, torch.stack([rows.sum(-1) - row_cls, row_cls], dim=-1))
                        words.index_fill_(2, global_words, 0)
                _word_term_sums(words, plan, _band_view(buffer, n, P, L, plan.distance_k), sums[:, :, :C])
                # every head's rows at once: one product for the queries' gradient, one for the label rows'
                flat = sums.view(n * L, -1)
                grad_q_word[b, heads, :L] += torch.mm(flat, word_rows).view(n, L, -1)
                grad_word_rows.addmm_(flat.t(), q_word[b, heads, :L].reshape(n * L, -1))
        if table is not None:
            grad_table = torch.zeros_like(table).index_add_(0, plan.word_ids, grad_word_rows)
        if entity_grads is not None:
            grad_w2e, grad_e2w, grad_e2e = entity_grads
            entity_word_rows = table.index_select(0, plan.entity_word_ids)
            entity_rows = table.index_select(0, plan.entity_ids)
            grad_q_to_entity[:, :, :L] += torch.matmul(grad_w2e, entity_word_rows)
            grad_q_word[:, :, L:] += torch.matmul(grad_e2w, entity_word_rows)
            grad_q_to_entity[:, :, L:] += torch.matmul(grad_e2e, entity_rows)
            grad_entity_word_rows = _summed_outer(grad_w2e, q_to_entity[:, :, :L]) + _summed_outer(
                grad_e2w, q_word[:, :, L:]
            )
            grad_table.index_add_(0, plan.entity_word_ids, grad_entity_word_rows)
            grad_table.index_add_(0, plan.entity_ids, _summed_outer(grad_e2e, q_to_entity[:, :, L:]))
        return grad_q_word, grad_q_entity, grad_key, grad_value, grad_table, None, None


def _summed_outer(grad_terms: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """`sum_{b, h, i} grad_terms[b, h, i, :]^T queries[b, h, i, :]`: `(B, H, R, U)`, `(B, H, R, d)` -> `(U, d)`, the
    label rows' gradient (one batched product over the queries as they lie; `einsum` would copy a strided slice)."""
    return torch.bmm(grad_terms.flatten(0, 1).transpose(1, 2), queries.flatten(0, 1)).sum(0)


def _band_view(buffer: torch.Tensor, n: int, P: int, L: int, k: int) -> torch.Tensor | None:
    """`(n, L, 2k + 1)` view of the `(n, P, P)` scores lying in `buffer` after `k` elements: element `(h, i, c)` is
    score `(h, i, i + c - k)` where that column is in `[0, P)` (elsewhere a neighbouring row's score or a padding
    zero: finite, for the caller to mask). None for k = 0."""
    if k == 0:
        return None
    return buffer.as_strided((n, L, 2 * k + 1), (P * P, P + 1, 1), buffer.storage_offset())


def _word_term_sums(grad_words: torch.Tensor, plan: DensePlan, band: torch.Tensor | None, out: torch.Tensor) -> None:
    """Word-pair score gradients `(n, L, L)` and their `_band_view` -> per row, the sum per clipped distance, into
    `out` `(n, L, 2k + 1)`. Overwrites the gradients (their prefix sums find the clipped ends)."""
    k = plan.distance_k
    if k == 0:
        torch.sum(grad_words, -1, keepdim=True, out=out)
        return
    # the inner distance labels, read along the band: masked where the column is outside the word block
    torch.mul(band, plan.term_inner, out=out)
    _clipped_end_sums(grad_words, k, plan.end_index, plan.left_valid, out)


def _band_sum_plan(
    diagonal: torch.Tensor, width: int, k: int, dtype: torch.dtype
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """Where to find each clipped-distance label in score rows of `width` key columns whose column `diagonal[i]` is
    row i's own key (distance 0): the inner labels' columns `(R, 2k + 1)` (clamped), 1 where they exist and are not
    a clipped end, the prefix-sum columns `(R, 3)` of the two ends (`_clipped_end_sums`), 1 where label 0 has any."""
    if k == 0:
        return None, None, None, None
    labels = torch.arange(2 * k + 1, device=diagonal.device)
    columns = diagonal[:, None] + labels[None, :] - k
    inner = (columns >= 0) & (columns < width) & (labels > 0) & (labels < 2 * k)
    end_index = torch.stack(
        [
            (diagonal - k).clamp(0, width - 1),
            torch.full_like(diagonal, width - 1),
            (diagonal + k - 1).clamp(0, width - 1),
        ],
        dim=1,
    )
    return columns.clamp(0, width - 1), inner.to(dtype), end_index, (diagonal >= k).to(dtype)


def _clipped_end_sums(
    grad: torch.Tensor, k: int, end_index: torch.Tensor, left_valid: torch.Tensor, out: torch.Tensor
) -> None:
    """Labels 0 and 2k take every pair at distance <= -k and >= k: their gradient sums, from the row prefix sums of
    `grad` `(..., R, width)` (overwritten), into `out[..., 0]` (prefix at i - k) and `out[..., 2k]` (total - prefix
    at i + k - 1)."""
    prefix = grad.cumsum_(-1)
    ends = prefix.gather(-1, end_index.expand(*grad.shape[:-1], 3))
    out[..., 0] = ends[..., 0] * left_valid
    out[..., 2 * k] = ends[..., 1] - ends[..., 2]


# ---------------------------------------------------------------------------------------------
# Dense path for accelerators: one label bias per layer, one `scaled_dot_product_attention` call
# ---------------------------------------------------------------------------------------------


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
        term_index, term_inner, end_index, left_valid: `_band_sum_plan` of the word block (None when k = 0).
    """

    row_index: torch.Tensor
    pair_kind: torch.Tensor
    key_masked: torch.Tensor
    term_index: torch.Tensor | None
    term_inner: torch.Tensor | None
    end_index: torch.Tensor | None
    left_valid: torch.Tensor | None


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
    term_index, term_inner, end_index, left_valid = _band_sum_plan(positions, L, k, dtype)
    return BiasPlan(
        row_index=row_index[:, None].contiguous(),
        pair_kind=pair_kind[:, None].contiguous(),
        key_masked=masked[:, None, None, :],
        term_index=term_index,
        term_inner=term_inner,
        end_index=end_index,
        left_valid=left_valid,
    )


def _outside_window(tokens: TokenStructure, word_length: int) -> torch.Tensor | None:
    """Bool `(B, L, L)`: local word pairs farther apart than `attention_window` (None without a window)."""
    if tokens.attention_window is None:
        return None
    positions = torch.arange(word_length, device=tokens.attention_mask.device)
    far = ((positions[None, :] - positions[:, None]).abs() > tokens.attention_window)[None]
    if tokens.window_global is not None:
        far = far & ~tokens.window_global[:, :, None] & ~tokens.window_global[:, None, :]
    return far.expand(tokens.attention_mask.size(0), word_length, word_length)


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
        if C == 1:
            grad_distance = local.sum(-1, keepdim=True)
        else:
            k = C // 2
            grad_distance = local.gather(-1, plan.term_index.expand(B, H, L, C)) * plan.term_inner
            # the clipped ends sum whole row ranges: prefix sums, in float32 at least so half precision adds up
            accumulate = torch.promote_types(local.dtype, torch.float32)
            _clipped_end_sums(local.to(accumulate), k, plan.end_index, plan.left_valid, grad_distance)
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
    B, H, P, _ = q_to_word.shape
    L = word_length
    correction = None
    if q_to_entity is not q_to_word and P > L:
        correction = torch.matmul(q_to_entity - q_to_word, key[:, :, L:].transpose(-1, -2))
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


def _dropout(probs: torch.Tensor, p: float) -> torch.Tensor:
    """Dropout of attention probabilities, the mask drawn by `dropout_keep_mask` (kept as bool for the backward)."""
    if p == 0.0:
        return probs
    return torch.where(dropout_keep_mask(probs, p), probs * (1.0 / (1.0 - p)), 0.0)


@dataclass
class WindowPlan:
    """Index tensors of the windowed path for one batch (shared by every layer).

    Word rows come in `blocks` blocks of `block` rows (words padded to `blocks * block`); block n reads the
    `width = block + 2 * window` word keys from `n * block - window` on (keys padded by `window` on both sides).

    Args:
        band_allowed: bool `(B, blocks, block, width)`: in the window, key real and not global (global keys are
            read once, separately).
        band_labels: `(block, width)` long: clipped-distance label of each window pair (the same in every block).
        term_index, term_inner, end_index, left_valid: `_label_sums` of a block row's window: the window column
            of each inner distance label, 1 where it exists, the prefix-sum columns of the two clipped ends.
        global_words: `(B, G)` long: the global words (padded with 0; G the most of any example), or None.
        global_allowed: bool `(B, G)`: the slot holds a real, unpadded global word.
        global_slots: `(N, 2)` long: (example, slot) of every real global word.
        local_global_ranks, local_global_distance: `(B, blocks * block, G)` long: pair rank and clipped-distance
            label of every (padded) word row with each global word.
        global_word_ranks, global_word_distance: `(B, 1, G, L)` long: the same for each global word's row.
        entity_allowed: bool `(B, E)`; key_allowed: bool `(B, 1, 1, P)`: real keys.
    """

    block: int
    blocks: int
    width: int
    band_allowed: torch.Tensor
    band_labels: torch.Tensor
    term_index: torch.Tensor | None
    term_inner: torch.Tensor | None
    end_index: torch.Tensor | None
    left_valid: torch.Tensor | None
    global_words: torch.Tensor | None
    global_allowed: torch.Tensor | None
    global_slots: torch.Tensor | None
    local_global_ranks: torch.Tensor | None
    local_global_distance: torch.Tensor | None
    global_word_ranks: torch.Tensor | None
    global_word_distance: torch.Tensor | None
    entity_allowed: torch.Tensor
    key_allowed: torch.Tensor
    heads_per_chunk: int
    blocks_per_chunk: int


def window_plan(tokens: TokenStructure, word_length: int, num_heads: int, dtype: torch.dtype) -> WindowPlan:
    """The windowed path's plan (eager mode only: the number of global words is read on the host)."""
    mask = tokens.attention_mask.bool()
    device = mask.device
    batch_size = mask.size(0)
    L, w, k = word_length, tokens.attention_window, tokens.distance_k
    block = min(WINDOW_BLOCK, L)
    blocks = -(-L // block)
    width = block + 2 * w
    rows = torch.arange(blocks * block, device=device).view(blocks, block)
    keys = torch.arange(blocks, device=device)[:, None] * block - w + torch.arange(width, device=device)
    relative = keys[:, None, :] - rows[:, :, None]
    is_global = tokens.window_global
    if is_global is None:
        is_global = torch.zeros(batch_size, L, dtype=torch.bool, device=device)
    key_ok = (mask[:, :L] & ~is_global)[:, keys.clamp(0, L - 1)] & ((keys >= 0) & (keys < L))
    band_allowed = (relative.abs() <= w) & key_ok[:, :, None, :]
    band_labels = relative[0].clamp(-k, k) + k
    term_index, term_inner, end_index, left_valid = _band_sum_plan(
        torch.arange(block, device=device) + w, width, k, dtype
    )
    ranks = tokens.word_ranks
    if ranks is None:
        ranks = torch.zeros(batch_size, L, dtype=torch.long, device=device)
    counts = is_global.sum(1)
    G = int(counts.max()) if batch_size else 0
    global_words = global_allowed = global_slots = None
    local_global_ranks = local_global_distance = global_word_ranks = global_word_distance = None
    if G:
        # global words first, in order (a stable sort of "is local")
        order = torch.sort((~is_global).to(torch.uint8), dim=1, stable=True).indices[:, :G]
        valid = torch.arange(G, device=device) < counts[:, None]
        global_words = torch.where(valid, order, 0)
        global_allowed = valid & mask.gather(1, global_words)
        global_slots = valid.nonzero()
        positions = torch.arange(L, device=device)
        pair = torch.maximum(ranks[:, :, None], ranks.gather(1, global_words)[:, None, :])
        distance = (global_words[:, None, :] - positions[None, :, None]).clamp(-k, k) + k
        global_word_ranks, global_word_distance = pair.transpose(1, 2)[:, None], (2 * k - distance).mT[:, None]
        padding = blocks * block - L
        local_global_ranks, local_global_distance = (
            F.pad(pair, (0, 0, 0, padding)),
            F.pad(distance, (0, 0, 0, padding)),
        )
    element = torch.finfo(dtype).bits // 8
    per_head_block = block * (width + G + mask.size(1) - L) * element
    heads = min(num_heads, max(1, SCORE_BLOCK_BYTES // (per_head_block * blocks)))
    chunk_blocks = min(blocks, max(1, SCORE_BLOCK_BYTES // (per_head_block * heads)))
    return WindowPlan(
        block=block,
        blocks=blocks,
        width=width,
        band_allowed=band_allowed,
        band_labels=band_labels,
        term_index=term_index,
        term_inner=term_inner,
        end_index=end_index,
        left_valid=left_valid,
        global_words=global_words,
        global_allowed=global_allowed,
        global_slots=global_slots,
        local_global_ranks=local_global_ranks,
        local_global_distance=local_global_distance,
        global_word_ranks=global_word_ranks,
        global_word_distance=global_word_distance,
        entity_allowed=mask[:, L:],
        key_allowed=mask[:, None, None, :],
        heads_per_chunk=heads,
        blocks_per_chunk=chunk_blocks,
    )


def _label_sums(grad: torch.Tensor, k: int, term_index, term_inner, end_index, left_valid, out: torch.Tensor) -> None:
    """Score gradients `(..., R, width)` of pairs with clipped-distance labels -> their sums per row and label into
    `out` `(..., R, 2k + 1)` (see `_band_sum_plan`). Overwrites `grad`."""
    if k == 0:
        torch.sum(grad, -1, keepdim=True, out=out)
        return
    torch.gather(grad, -1, term_index.expand(*grad.shape[:-1], 2 * k + 1), out=out)
    out.mul_(term_inner)
    _clipped_end_sums(grad, k, end_index, left_valid, out)


class WindowedAttention(torch.autograd.Function):
    """The local word rows under `attention_window`, at a cost linear in length (queries come scaled).

    A block of rows attends to its window of word keys (`WindowPlan`), to the global words and to the entities:
    scores `(rows, width + G + E)`, computed one chunk of rows and heads at a time (at most `SCORE_BLOCK_BYTES`),
    with label terms spread in from `distance` `(B, H, L, 2k + 1)` (window pairs and, for rank 0, global words),
    `rank` `(B, H, L, 3)` (global words of rank > 0) and `w2e` `(B, H, L, E)`. Backward by hand as in `FusedAttention`; only the probabilities (and the bool dropout mask)
    are kept. Returns the context of every word row `(B, H, L, d)` (global words' rows are recomputed in full by
    the caller).
    """

    @staticmethod
    def forward(ctx, q_word, q_entity, key, value, distance, rank, w2e, plan, dropout_p):
        B, H, L, d = q_word.shape
        P = key.size(2)
        block, blocks, width = plan.block, plan.blocks, plan.width
        w = (width - block) // 2
        padding = blocks * block - L
        save = any(ctx.needs_input_grad)

        def rows_padded(x):
            if x is None:
                return None
            return F.pad(x, (0, 0, 0, padding)) if padding else x.contiguous()

        q_word, q_entity = rows_padded(q_word), rows_padded(q_entity)
        distance, rank, w2e = rows_padded(distance), rows_padded(rank), rows_padded(w2e)
        # keys and values padded by the window on both sides: block n's window starts at row n * block
        key_pad = F.pad(key[:, :, :L], (0, 0, w, w + padding)).contiguous()
        value_pad = F.pad(value[:, :, :L], (0, 0, w, w + padding)).contiguous()
        G = 0 if plan.global_words is None else plan.global_words.size(1)
        global_keys = global_values = None
        if G:
            index = plan.global_words[:, None, :, None].expand(B, H, G, d)
            global_keys, global_values = key[:, :, :L].gather(2, index), value[:, :, :L].gather(2, index)
        entity_keys, entity_values = key[:, :, L:].contiguous(), value[:, :, L:].contiguous()
        context = q_word.new_empty(B, H, blocks * block, value.size(-1))
        masked = torch.finfo(q_word.dtype).min
        saved = []
        for b, heads, chunk, rows in _window_chunks(plan, B, H):
            n, m = heads.stop - heads.start, chunk.stop - chunk.start
            queries = q_word[b, heads, rows].view(n, m, block, d)
            band = torch.matmul(queries, key_pad[b, heads].unfold(1, width, block)[:, chunk])
            if distance is not None:
                labels = plan.band_labels.expand(n, m, block, width)
                band.add_(distance[b, heads, rows].view(n, m, block, -1).gather(3, labels))
            parts = [band.masked_fill_(~plan.band_allowed[b, chunk], masked).view(n, m * block, width)]
            if G:
                to_global = torch.bmm(q_word[b, heads, rows], global_keys[b, heads].transpose(1, 2))
                if distance is not None:
                    to_global.add_(_global_key_terms(distance, rank, plan, b, heads, rows))
                parts.append(to_global.masked_fill_(~plan.global_allowed[b], masked))
            if P > L:
                to_entity = torch.bmm(q_entity[b, heads, rows], entity_keys[b, heads].transpose(1, 2))
                if w2e is not None:
                    to_entity.add_(w2e[b, heads, rows])
                parts.append(to_entity.masked_fill_(~plan.entity_allowed[b], masked))
            scores = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
            scores = _softmax_(scores)
            used = scores
            if dropout_p > 0:
                kept = dropout_keep_mask(scores, dropout_p)
                if save:
                    saved.append(kept)
                used = scores * kept
            value_windows = value_pad[b, heads].unfold(1, width, block)[:, chunk].transpose(-1, -2)
            out = torch.matmul(used[..., :width].view(n, m, block, width), value_windows).view(n, m * block, -1)
            if G:
                out.baddbmm_(used[..., width : width + G], global_values[b, heads])
            if P > L:
                out.baddbmm_(used[..., width + G :], entity_values[b, heads])
            context[b, heads, rows] = out
            if save:
                saved.append(scores)
        if dropout_p > 0:
            context.mul_(1.0 / (1.0 - dropout_p))
        if save:
            ctx.save_for_backward(
                q_word,
                q_entity,
                key_pad,
                value_pad,
                global_keys,
                global_values,
                entity_keys,
                entity_values,
                context,
                *saved,
            )
            ctx.plan, ctx.dropout_p, ctx.sizes = plan, dropout_p, (L, P)
            ctx.has_terms = (distance is not None, rank is not None, w2e is not None)
        return context[:, :, :L]

    @staticmethod
    def backward(ctx, grad_context):
        (
            q_word,
            q_entity,
            key_pad,
            value_pad,
            global_keys,
            global_values,
            entity_keys,
            entity_values,
            context,
            *saved,
        ) = ctx.saved_tensors
        saved = iter(saved)
        plan, dropout_p, (L, P) = ctx.plan, ctx.dropout_p, ctx.sizes
        B, H, Lp, d = q_word.shape
        block, width = plan.block, plan.width
        w = (width - block) // 2
        G = 0 if global_keys is None else global_keys.size(2)
        grad_context = F.pad(grad_context, (0, 0, 0, Lp - L))
        delta = (grad_context * context).sum(-1, keepdim=True)
        if dropout_p > 0:
            grad_context = grad_context * (1.0 / (1.0 - dropout_p))
        grad_q_word = torch.empty_like(q_word)
        grad_q_entity = None if q_entity is None else torch.empty_like(q_entity)
        grad_key_pad, grad_value_pad = torch.zeros_like(key_pad), torch.zeros_like(value_pad)
        grad_global_keys = None if G == 0 else torch.zeros_like(global_keys)
        grad_global_values = None if G == 0 else torch.zeros_like(global_values)
        grad_entity_keys, grad_entity_values = torch.zeros_like(entity_keys), torch.zeros_like(entity_values)
        has_distance, has_rank, has_w2e = ctx.has_terms
        k = 0 if plan.term_index is None else (plan.term_index.size(1) - 1) // 2
        grad_distance = q_word.new_empty(B, H, Lp, 2 * k + 1) if has_distance else None
        grad_rank = q_word.new_zeros(B, H, Lp, 3) if has_rank else None
        grad_w2e = q_word.new_empty(B, H, Lp, P - L) if has_w2e else None

        def span(m: int) -> int:
            return (m - 1) * block + width  # padded rows read by m consecutive windows

        for b, heads, chunk, rows in _window_chunks(plan, B, H):
            n, m = heads.stop - heads.start, chunk.stop - chunk.start
            kept = next(saved) if dropout_p > 0 else None
            probs = next(saved)
            g = grad_context[b, heads, rows]
            key_windows = key_pad[b, heads].unfold(1, width, block)[:, chunk]
            value_windows = value_pad[b, heads].unfold(1, width, block)[:, chunk]
            parts = [torch.matmul(g.view(n, m, block, d), value_windows).view(n, m * block, width)]
            if G:
                parts.append(torch.bmm(g, global_values[b, heads].transpose(1, 2)))
            if P > L:
                parts.append(torch.bmm(g, entity_values[b, heads].transpose(1, 2)))
            grad_scores = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
            used = probs if kept is None else torch.where(kept, probs, 0.0)
            windows = torch.matmul(
                used[..., :width].view(n, m, block, width).transpose(-1, -2), g.view(n, m, block, d)
            )
            first = chunk.start * block  # padded row of the chunk's first window
            grad_value_pad[b, heads, first : first + span(m)] += _fold_windows(windows, span(m), block)
            if G:
                grad_global_values[b, heads] += torch.bmm(used[..., width : width + G].transpose(1, 2), g)
            if P > L:
                grad_entity_values[b, heads] += torch.bmm(used[..., width + G :].transpose(1, 2), g)
            grad_scores.mul_(used).addcmul_(probs, delta[b, heads, rows], value=-1)
            del used
            band = grad_scores[..., :width].view(n, m, block, width)
            queries = q_word[b, heads, rows]
            grad_q = torch.matmul(band, key_windows.transpose(-1, -2)).view(n, m * block, d)
            windows = torch.matmul(band.transpose(-1, -2), queries.view(n, m, block, d))
            grad_key_pad[b, heads, first : first + span(m)] += _fold_windows(windows, span(m), block)
            if G:
                to_global = grad_scores[..., width : width + G]
                grad_q.baddbmm_(to_global, global_keys[b, heads])
                grad_global_keys[b, heads] += torch.bmm(to_global.transpose(1, 2), queries)
            grad_q_word[b, heads, rows] = grad_q
            if P > L:
                to_entity = grad_scores[..., width + G :]
                grad_q_entity[b, heads, rows] = torch.bmm(to_entity, entity_keys[b, heads])
                grad_entity_keys[b, heads] += torch.bmm(to_entity.transpose(1, 2), q_entity[b, heads, rows])
                if grad_w2e is not None:
                    grad_w2e[b, heads, rows] = to_entity
            if grad_distance is not None:
                out = grad_distance[b, heads, rows].view(n, m, block, -1)
                _label_sums(band, k, plan.term_index, plan.term_inner, plan.end_index, plan.left_valid, out)
                if G:
                    # global words' terms: rank > 0 reads `rank`, rank 0 the clipped distance
                    to_global = grad_scores[..., width : width + G]
                    ranks = plan.local_global_ranks[b, rows].expand_as(to_global)
                    by_rank = ranks > 0
                    grad_distance[b, heads, rows].scatter_add_(
                        2, plan.local_global_distance[b, rows].expand_as(to_global), to_global.masked_fill(by_rank, 0)
                    )
                    if grad_rank is not None:
                        grad_rank[b, heads, rows].scatter_add_(2, ranks, to_global.masked_fill(~by_rank, 0))
        grad_key = torch.cat([grad_key_pad[:, :, w : w + L], grad_entity_keys], dim=2)
        grad_value = torch.cat([grad_value_pad[:, :, w : w + L], grad_entity_values], dim=2)
        if G:
            index = plan.global_words[:, None, :, None].expand(B, H, G, d)
            grad_key[:, :, :L].scatter_add_(2, index, grad_global_keys)
            grad_value[:, :, :L].scatter_add_(2, index, grad_global_values)

        def rows_of(x):
            return None if x is None else x[:, :, :L]

        return (
            rows_of(grad_q_word),
            rows_of(grad_q_entity),
            grad_key,
            grad_value,
            rows_of(grad_distance),
            rows_of(grad_rank),
            rows_of(grad_w2e),
            None,
            None,
        )


def _global_key_terms(
    distance: torch.Tensor, rank: torch.Tensor | None, plan: WindowPlan, b: int, heads: slice, rows: slice
) -> torch.Tensor:
    """Label terms of a chunk's word rows with the global words `(n, rows, G)`: pair rank's, else the distance's."""
    terms = distance[b, heads, rows]
    index = plan.local_global_distance[b, rows].expand(terms.size(0), -1, -1)
    by_distance = terms.gather(2, index)
    if rank is None:
        return by_distance
    ranks = plan.local_global_ranks[b, rows]
    return torch.where(ranks > 0, rank[b, heads, rows].gather(2, ranks.expand_as(index)), by_distance)


def _window_chunks(plan: WindowPlan, batch_size: int, num_heads: int):
    """(example, heads, blocks, padded word rows) of every chunk of the windowed scores."""
    for b in range(batch_size):
        for h0 in range(0, num_heads, plan.heads_per_chunk):
            heads = slice(h0, min(h0 + plan.heads_per_chunk, num_heads))
            for n0 in range(0, plan.blocks, plan.blocks_per_chunk):
                chunk = slice(n0, min(n0 + plan.blocks_per_chunk, plan.blocks))
                yield b, heads, chunk, slice(chunk.start * plan.block, chunk.stop * plan.block)


def _fold_windows(windows: torch.Tensor, span: int, block: int) -> torch.Tensor:
    """Gradients of `m` overlapping key windows `(n, m, width, d)` (stride `block`) -> their `span` rows `(n, span, d)`."""
    n, m, width, d = windows.shape
    return torch.ops.aten.unfold_backward(windows.transpose(-1, -2), [n, span, d], 1, width, block)


def windowed_attention(
    q_to_word: torch.Tensor,
    q_to_entity: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: LabelTerms | None,
    tokens: TokenStructure,
    word_length: int,
    dropout_p: float,
) -> torch.Tensor:
    """The dense masked attention under `attention_window`, at a cost linear in length; queries come scaled.

    Local word rows: `WindowedAttention` (window, global words, entities). Global words and entities attend to
    every token: scores `(B, H, G + E, P)`, their label terms gathered per pair from the compact `terms` (never a
    `(P, P)` tensor). Returns the context `(B, H, P, d)`.
    """
    B, H, P, d = q_to_word.shape
    L, E = word_length, P - word_length
    plan = cached_plan(tokens, ("window", L, H, q_to_word.dtype), lambda: window_plan(tokens, L, H, q_to_word.dtype))
    G = 0 if plan.global_words is None else plan.global_words.size(1)
    distance = rank = w2e = None
    if terms is not None:
        distance, rank, w2e = terms.distance, terms.rank, terms.w2e
    words = WindowedAttention.apply(
        q_to_word[:, :, :L],
        q_to_entity[:, :, :L] if E else None,
        key,
        value,
        distance,
        rank,
        w2e,
        plan,
        dropout_p,
    )
    if not G and not E:
        return words

    # rows that attend to every token: the global words, then the entities
    row_to_word, row_to_entity, row_terms = [], [], []
    if G:
        index = plan.global_words[:, None, :, None]
        row_to_word.append(q_to_word[:, :, :L].gather(2, index.expand(B, H, G, d)))
        row_to_entity.append(q_to_entity[:, :, :L].gather(2, index.expand(B, H, G, d)))
        if terms is not None:
            # the global rows' own terms from their queries (a gather from `distance` would cost a full-size backward)
            rows = torch.matmul(row_to_word[0], terms.distance_table.t())
            row_word_terms = rows.gather(3, plan.global_word_distance.expand(B, H, G, L))
            if terms.rank is not None:
                rows = torch.matmul(row_to_word[0], terms.rank_table.t())
                by_rank = rows.gather(3, plan.global_word_ranks.expand(B, H, G, L))
                row_word_terms = torch.where(plan.global_word_ranks > 0, by_rank, row_word_terms)
            if E:
                row_word_terms = torch.cat([row_word_terms, w2e.gather(2, index.expand(B, H, G, E))], dim=-1)
            row_terms.append(row_word_terms)
    if E:
        row_to_word.append(q_to_word[:, :, L:])
        row_to_entity.append(q_to_entity[:, :, L:])
        if terms is not None:
            row_terms.append(torch.cat([terms.e2w, terms.e2e], dim=-1))
    row_to_word, row_to_entity = torch.cat(row_to_word, dim=2), torch.cat(row_to_entity, dim=2)
    scores = torch.matmul(row_to_word, key[:, :, :L].transpose(-1, -2))
    if E:
        scores = torch.cat([scores, torch.matmul(row_to_entity, key[:, :, L:].transpose(-1, -2))], dim=-1)
    if row_terms:
        scores = scores + torch.cat(row_terms, dim=2)
    scores = scores.masked_fill_(~plan.key_allowed, torch.finfo(scores.dtype).min)
    full_rows = torch.matmul(_dropout(torch.softmax(scores, dim=-1), dropout_p), value)
    if G:
        # the global words' rows replace their windowed rows
        example, slot = plan.global_slots.unbind(1)
        words = words.transpose(1, 2).index_put(
            (example, plan.global_words[example, slot]), full_rows[:, :, :G].transpose(1, 2)[example, slot]
        )
        words = words.transpose(1, 2)
    return torch.cat([words, full_rows[:, :, G:]], dim=2) if E else words


def fused_attention(
    q_to_word: torch.Tensor,
    q_to_entity: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    table: torch.Tensor | None,
    tokens: TokenStructure,
    word_length: int,
    dropout_p: float,
) -> torch.Tensor:
    """Dense Eq. 1 by `FusedAttention` (queries come scaled; `table` `(labels, d)` the label table, or None for no
    label terms: the kernel computes every label term itself). Returns the context `(B, H, P, d)`."""
    L = word_length
    if table is None and dropout_p == 0.0:
        # no label term: SDPA's fused CPU/GPU kernels need no help
        query, key_for_query = typed_query_key(q_to_word, q_to_entity, key, L)
        mask = tokens.attention_mask.bool()[:, None, None, :]
        return F.scaled_dot_product_attention(query, key_for_query, value, attn_mask=mask, scale=1.0)
    H = q_to_word.size(1)
    plan = cached_plan(tokens, ("dense", L, H, q_to_word.dtype), lambda: dense_plan(tokens, L, H, q_to_word.dtype))
    q_entity = None if q_to_entity is q_to_word or key.size(2) == L else q_to_entity
    return FusedAttention.apply(q_to_word, q_entity, key, value, table, plan, dropout_p)


def typed_query_key(
    q_to_word: torch.Tensor, q_to_entity: torch.Tensor, key: torch.Tensor, word_length: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`[q_to_word ; q_to_entity]` and type-masked keys (`[k ; 0]` words, `[0 ; k]` entities): one product, 4 blocks."""
    if q_to_entity is q_to_word:
        return q_to_word, key
    query = torch.cat([q_to_word, q_to_entity], dim=-1)
    is_entity_key = torch.zeros(1, 1, key.size(2), 1, dtype=key.dtype, device=key.device)
    is_entity_key[:, :, word_length:] = 1
    return query, torch.cat([key * (1 - is_entity_key), key * is_entity_key], dim=-1)


# ---------------------------------------------------------------------------------------------
# FlexAttention: the label terms as a `score_mod`, padding and window as a `BlockMask`
# ---------------------------------------------------------------------------------------------


@dataclass
class FlexPlan:
    """The flex path's per-batch inputs: `block_mask` (padded keys; with `attention_window`, local word pairs farther
    apart) and `word_ranks` `(B, L)` long (pair rank = the higher of the two words' ranks), or None."""

    block_mask: Any
    word_ranks: torch.Tensor | None


def flex_plan(tokens: TokenStructure, word_length: int) -> FlexPlan:
    from torch.nn.attention.flex_attention import create_block_mask

    key_allowed = tokens.attention_mask.bool()
    B, P = key_allowed.shape
    L, window = word_length, tokens.attention_window
    is_global = tokens.window_global
    if is_global is None:
        is_global = torch.zeros(B, L, dtype=torch.bool, device=key_allowed.device)

    def mask_mod(b, h, q_idx, kv_idx):
        allowed = key_allowed[b, kv_idx]
        if window is None:
            return allowed
        # both words, neither global, farther apart than the window: masked
        both_words = (q_idx < L) & (kv_idx < L)
        exempt = is_global[b, q_idx.clamp(max=L - 1)] | is_global[b, kv_idx.clamp(max=L - 1)]
        far = both_words & ~exempt & ((q_idx - kv_idx).abs() > window)
        return allowed & ~far

    # on GPUs compiled, so that the (B, P, P) mask is never materialised
    compile_mask = key_allowed.device.type != "cpu" and not is_tracing()
    block_mask = create_block_mask(mask_mod, B, None, P, P, device=key_allowed.device, _compile=compile_mask)
    return FlexPlan(block_mask=block_mask, word_ranks=tokens.word_ranks)


def _label_score_mod(terms: LabelTerms | None, correction: torch.Tensor | None, plan: FlexPlan, word_length: int):
    """`score_mod` adding each pair's label term (read from the compact per-block tables of `terms`) and, for entity
    keys, the entity-key correction `(q_to_entity - q_to_word) . k` `(B, H, P, E)`."""
    L = word_length
    k = 0 if terms is None else terms.distance.size(-1) // 2

    def score_mod(score, b, h, q_idx, kv_idx):
        word_q, word_kv = q_idx < L, kv_idx < L
        qw, kvw = q_idx.clamp(max=L - 1), kv_idx.clamp(max=L - 1)
        qe, kve = (q_idx - L).clamp(min=0), (kv_idx - L).clamp(min=0)
        if correction is not None:
            score = score + torch.where(word_kv, 0.0, correction[b, h, q_idx, kve])
        if terms is None:
            return score
        term = terms.distance[b, h, qw, (kvw - qw).clamp(-k, k) + k]
        if terms.rank is not None:
            pair_rank = torch.maximum(plan.word_ranks[b, qw], plan.word_ranks[b, kvw])
            term = torch.where(pair_rank > 0, terms.rank[b, h, qw, pair_rank], term)
        if terms.w2e is None:
            return score + torch.where(word_q & word_kv, term, 0.0)
        to_entity = torch.where(word_q, terms.w2e[b, h, qw, kve], terms.e2e[b, h, qe, kve])
        term = torch.where(word_q, term, terms.e2w[b, h, qe, kvw])
        return score + torch.where(word_kv, term, to_entity)

    return score_mod


_COMPILED_FLEX = []


def _compiled_flex_attention():
    from torch.nn.attention.flex_attention import flex_attention

    if not _COMPILED_FLEX:
        _COMPILED_FLEX.append(torch.compile(flex_attention, dynamic=False))
    return _COMPILED_FLEX[0]


def flex_label_attention(
    q_to_word: torch.Tensor,
    q_to_entity: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: LabelTerms | None,
    tokens: TokenStructure,
    word_length: int,
) -> torch.Tensor:
    """`flex_attention(q_to_word, k, v)` with the label terms and the entity-key correction in a `score_mod`
    (`_label_score_mod`, reading `(B, H, L, 2k + 1)`-sized tables) and the padding / window as a `BlockMask`: no
    `(B, H, P, P)` tensor. Queries `(B, H, P, d)` come scaled; returns the context `(B, H, P, d)`."""
    from torch.nn.attention.flex_attention import flex_attention

    L = word_length
    correction = None
    if q_to_entity is not q_to_word and key.size(2) > L:
        correction = torch.matmul(q_to_entity - q_to_word, key[:, :, L:].transpose(-1, -2))
    plan = cached_plan(tokens, ("flex", L), lambda: flex_plan(tokens, L))
    score_mod = _label_score_mod(terms, correction, plan, L)
    attend = flex_attention
    if q_to_word.device.type != "cpu" and not is_tracing():
        attend = _compiled_flex_attention()  # the fused kernel is generated by torch.compile
    return attend(q_to_word, key, value, score_mod=score_mod, block_mask=plan.block_mask, scale=1.0)


__all__ = [
    "BiasPlan",
    "DensePlan",
    "FlexPlan",
    "FusedAttention",
    "LabelBias",
    "WindowPlan",
    "WindowedAttention",
    "bias_attention",
    "is_tracing",
    "flex_label_attention",
    "fused_attention",
    "typed_query_key",
    "windowed_attention",
]

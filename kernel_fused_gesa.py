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
"""Eq. 1 fused, for CPUs: `FusedAttention` (`fused_attention`), dense attention one block of scores at a time.

    s_ij = q_i . k_j + q_i . r_label(i,j),   a_ij = softmax_j(s_ij) over real keys,   y_i = sum_j dropout(a)_ij v_j

(queries come scaled by `1 / sqrt(d)`; `q_i` is a token's `q_to_word` for word keys, its `q_to_entity` for entity
keys). One example and a cache-sized group of heads at a time (`SCORE_BLOCK_BYTES`): each block's label terms
`q_i . r_l` are computed in the block from the label table, over the few label rows each kind of pair can use
(`DensePlan`), and spread into the scores by one gather per kind of pair. The backward is written by hand: it sums
the score gradients back per label (band diagonals, the two clipped ends, the global rows and columns, the entity
labels) and returns the label table's gradient itself, so no `(B, H, P, P)` label, index or bias tensor and no
autograd graph of label terms ever exists; only the probabilities (and the bool dropout mask) are kept.

Its plan is read on the host, so it runs in eager mode only (`attention_gesa` runs `kernel_bias_gesa` under
`torch.compile` / `torch.export`). `tests/test_kernels.py` checks it against `attention_reference_gesa`.

Flat module: copied next to every saved checkpoint; it imports torch and its siblings `structure_gesa` and
`kernel_common_gesa` only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .kernel_common_gesa import (
    BandPlan,
    backward_dtype,
    band_label_sums,
    band_sum_plan,
    saved_probabilities,
    softmax_dropout_,
    softmax_grad_,
    softmax_output_grad,
    upcast,
    without_autocast,
)
from .structure_gesa import TokenStructure, cached_plan

# The fused path computes the scores of one example and a group of heads at a time, at most this many bytes, so that
# a group's scores stay in the CPU cache from the label fill through the product, softmax, dropout and back.
SCORE_BLOCK_BYTES = 8 * 1024 * 1024


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
        band: the distance labels along the word rows (`band_sum_plan`; its inner columns read as a strided view of
            the scores, `_band_view`), or None for k = 0.
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
    band: BandPlan | None
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
        band=band_sum_plan(positions, L, k, dtype),
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
                _, used = softmax_dropout_(scores, dropout_p, saved if save else None)
                torch.bmm(used, value[b, heads], out=context[b, heads])
                del used  # with dropout a block-sized product: freed for the next block's scores
        if dropout_p > 0:
            context.mul_(1.0 / (1.0 - dropout_p))  # scale the small output rather than the P x P probabilities
        if save:
            ctx.save_for_backward(q_word, q_entity, word_keys, entity_keys, value, table, *saved)
            ctx.plan, ctx.dropout_p = plan, dropout_p
        return context

    @staticmethod
    @without_autocast
    def backward(ctx, grad_context):
        q_word, q_entity, word_keys, entity_keys, value, table, *saved = ctx.saved_tensors
        plan, dropout_p = ctx.plan, ctx.dropout_p
        dtypes = [None if t is None else t.dtype for t in (q_word, q_entity, word_keys, value, table)]
        # half precision: the whole backward in float32 (one score block at a time converted), cast back at the end
        dtype = backward_dtype(q_word.dtype)
        q_word, q_entity, word_keys, entity_keys, value, table, grad_context = upcast(
            dtype, q_word, q_entity, word_keys, entity_keys, value, table, grad_context
        )
        B, H, P, _ = q_word.shape
        L, K = plan.word_length, word_keys.size(2)
        E = P - L
        grad_context = softmax_output_grad(grad_context.contiguous(), dropout_p)
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
                probs, used = saved_probabilities(blocks, dropout_p, dtype)  # used: the dropped-out probabilities
                g = grad_context[b, heads]
                # dS in a buffer with k zeros either side, so that `_band_view` can read its band as a strided view
                pad = plan.distance_k if table is not None else 0
                buffer = q_word.new_empty(n * P * P + 2 * pad)
                buffer[:pad].zero_()
                buffer[buffer.numel() - pad :].zero_()
                grad_scores = torch.bmm(
                    g, value[b, heads].transpose(1, 2), out=buffer[pad : pad + n * P * P].view(n, P, P)
                )
                torch.bmm(used.transpose(1, 2), g, out=grad_value[b, heads])
                softmax_grad_(grad_scores, probs, used)  # dS = P' * dP' - P * delta
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
                # per clipped distance: the inner labels read along the band (masked where the column is outside
                # the word block), the ends from prefix sums of the word block (overwritten)
                inner = _band_view(buffer, n, P, L, plan.distance_k)
                band_label_sums(words, plan.band, out=sums[:, :, :C], inner=inner)
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
        grads = (grad_q_word, grad_q_entity, grad_key, grad_value, grad_table)
        return (*(None if g is None else g.to(d) for g, d in zip(grads, dtypes, strict=True)), None, None)


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
        query, key_for_query = _typed_query_key(q_to_word, q_to_entity, key, L)
        mask = tokens.attention_mask.bool()[:, None, None, :]
        return F.scaled_dot_product_attention(query, key_for_query, value, attn_mask=mask, scale=1.0)
    H = q_to_word.size(1)
    plan = cached_plan(tokens, ("dense", L, H, q_to_word.dtype), lambda: dense_plan(tokens, L, H, q_to_word.dtype))
    q_entity = None if q_to_entity is q_to_word or key.size(2) == L else q_to_entity
    if table is not None:  # mixed precision leaves the table in float32: its gradient flows back through the cast
        table = table.to(q_to_word.dtype)
    return FusedAttention.apply(q_to_word, q_entity, key, value, table, plan, dropout_p)


def _typed_query_key(
    q_to_word: torch.Tensor, q_to_entity: torch.Tensor, key: torch.Tensor, word_length: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`[q_to_word ; q_to_entity]` and type-masked keys (`[k ; 0]` words, `[0 ; k]` entities): one product, 4 blocks."""
    if q_to_entity is q_to_word:
        return q_to_word, key
    query = torch.cat([q_to_word, q_to_entity], dim=-1)
    is_entity_key = torch.zeros(1, 1, key.size(2), 1, dtype=key.dtype, device=key.device)
    is_entity_key[:, :, word_length:] = 1
    return query, torch.cat([key * (1 - is_entity_key), key * is_entity_key], dim=-1)


__all__ = [
    "DensePlan",
    "FusedAttention",
    "dense_plan",
    "fused_attention",
]

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
"""Eq. 1 under `attention_window`, at a cost linear in length: `WindowedAttention` (`windowed_attention`).

    s_ij = q_i . k_j + q_i . r_label(i,j), masked where i and j are local words farther apart than the window,
    a_ij = softmax_j(s_ij) over real keys,   y_i = sum_j dropout(a)_ij v_j

(queries come scaled). A block of `WINDOW_BLOCK` local word rows reads only its window of word keys, the global
words and the entities (`WindowPlan`), one chunk of rows and heads at a time (`SCORE_CHUNK_BYTES`), with the label
terms spread in from the compact `labels_gesa.LabelTerms`; the backward is written by hand. Global words and
entities attend to every token: `windowed_attention` computes their `(G + E, P)` rows directly. Nothing quadratic in
length exists. Its plan is read on the host, so under `torch.compile` / `torch.export` `attention_gesa` runs
`kernel_bias_gesa` with the window as a mask. `tests/test_kernels.py` checks it against `attention_reference_gesa`.

Flat module: copied next to every saved checkpoint; it imports torch and its siblings `structure_gesa`,
`labels_gesa` and `kernel_common_gesa` only.
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
    dropout_keep_mask,
    saved_probabilities,
    softmax_dropout_,
    softmax_grad_,
    softmax_output_grad,
    upcast,
    without_autocast,
)
from .labels_gesa import LabelTerms
from .structure_gesa import TokenStructure, cached_plan

# Rows per query block of the windowed path: each block reads `WINDOW_BLOCK + 2 * window` keys.
WINDOW_BLOCK = 64

# The windowed path computes its scores one chunk of rows and heads at a time, at most this many bytes.
SCORE_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass
class WindowPlan:
    """Index tensors of the windowed path for one batch (shared by every layer).

    Word rows come in `blocks` blocks of `block` rows (words padded to `blocks * block`); block n reads the
    `width = block + 2 * window` word keys from `n * block - window` on (keys padded by `window` on both sides).

    Args:
        band_allowed: bool `(B, blocks, block, width)`: in the window, key real and not global (global keys are
            read once, separately).
        band_labels: `(block, width)` long: clipped-distance label of each window pair (the same in every block).
        band: the distance labels along a block row's window (`band_sum_plan`; None when k = 0).
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
    band: BandPlan | None
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
    heads = min(num_heads, max(1, SCORE_CHUNK_BYTES // (per_head_block * blocks)))
    chunk_blocks = min(blocks, max(1, SCORE_CHUNK_BYTES // (per_head_block * heads)))
    return WindowPlan(
        block=block,
        blocks=blocks,
        width=width,
        band_allowed=band_allowed,
        band_labels=band_labels,
        band=band_sum_plan(torch.arange(block, device=device) + w, width, k, dtype),
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


def _dropout_probs(probs: torch.Tensor, p: float) -> torch.Tensor:
    """Dropout of attention probabilities, the mask drawn by `dropout_keep_mask` (kept as bool for the backward)."""
    if p == 0.0:
        return probs
    return torch.where(dropout_keep_mask(probs, p), probs * (1.0 / (1.0 - p)), 0.0)


class WindowedAttention(torch.autograd.Function):
    """The local word rows under `attention_window`, at a cost linear in length (queries come scaled).

    A block of rows attends to its window of word keys (`WindowPlan`), to the global words and to the entities:
    scores `(rows, width + G + E)`, computed one chunk of rows and heads at a time (at most `SCORE_CHUNK_BYTES`),
    with label terms spread in from `distance` `(B, H, L, 2k + 1)` (window pairs and, for rank 0, global words),
    `rank` `(B, H, L, 3)` (global words of rank > 0) and `w2e` `(B, H, L, E)`. Backward by hand as in
    `kernel_fused_gesa.FusedAttention`; only the probabilities (and the bool dropout mask) are kept. Returns the
    context of every word row `(B, H, L, d)` (global words' rows are recomputed in full by the caller).
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
            _, used = softmax_dropout_(scores, dropout_p, saved if save else None)
            value_windows = value_pad[b, heads].unfold(1, width, block)[:, chunk].transpose(-1, -2)
            out = torch.matmul(used[..., :width].view(n, m, block, width), value_windows).view(n, m * block, -1)
            if G:
                out.baddbmm_(used[..., width : width + G], global_values[b, heads])
            if P > L:
                out.baddbmm_(used[..., width + G :], entity_values[b, heads])
            context[b, heads, rows] = out
        if dropout_p > 0:
            context.mul_(1.0 / (1.0 - dropout_p))
        if save:
            # the keys and values as each part of a row reads them: its window, the global words, the entities
            keys_values = (key_pad, value_pad, global_keys, global_values, entity_keys, entity_values)
            ctx.save_for_backward(q_word, q_entity, *keys_values, *saved)
            ctx.plan, ctx.dropout_p, ctx.sizes = plan, dropout_p, (L, P)
            ctx.has_terms = (distance is not None, rank is not None, w2e is not None)
            ctx.dtypes = [None if x is None else x.dtype for x in (q_word, q_entity, key, value, distance, rank, w2e)]
        return context[:, :, :L]

    @staticmethod
    @without_autocast
    def backward(ctx, grad_context):
        q_word, q_entity, *keys_values = ctx.saved_tensors
        saved = iter(keys_values[6:])
        plan, dropout_p, (L, P) = ctx.plan, ctx.dropout_p, ctx.sizes
        # half precision: the whole backward in float32 (one score chunk at a time converted), cast back at the end
        dtype = backward_dtype(q_word.dtype)
        q_word, q_entity, grad_context, *keys_values = upcast(dtype, q_word, q_entity, grad_context, *keys_values[:6])
        key_pad, value_pad, global_keys, global_values, entity_keys, entity_values = keys_values
        B, H, Lp, d = q_word.shape
        block, width = plan.block, plan.width
        w = (width - block) // 2
        G = 0 if global_keys is None else global_keys.size(2)
        grad_context = softmax_output_grad(F.pad(grad_context, (0, 0, 0, Lp - L)), dropout_p)
        grad_q_word = torch.empty_like(q_word)
        grad_q_entity = None if q_entity is None else torch.empty_like(q_entity)
        grad_key_pad, grad_value_pad = torch.zeros_like(key_pad), torch.zeros_like(value_pad)
        grad_global_keys = None if G == 0 else torch.zeros_like(global_keys)
        grad_global_values = None if G == 0 else torch.zeros_like(global_values)
        grad_entity_keys, grad_entity_values = torch.zeros_like(entity_keys), torch.zeros_like(entity_values)
        has_distance, has_rank, has_w2e = ctx.has_terms
        k = 0 if plan.band is None else plan.band.k
        grad_distance = q_word.new_empty(B, H, Lp, 2 * k + 1) if has_distance else None
        grad_rank = q_word.new_zeros(B, H, Lp, 3) if has_rank else None
        grad_w2e = q_word.new_empty(B, H, Lp, P - L) if has_w2e else None

        def span(m: int) -> int:
            return (m - 1) * block + width  # padded rows read by m consecutive windows

        for b, heads, chunk, rows in _window_chunks(plan, B, H):
            n, m = heads.stop - heads.start, chunk.stop - chunk.start
            probs, used = saved_probabilities(saved, dropout_p, dtype)
            g = grad_context[b, heads, rows]
            key_windows = key_pad[b, heads].unfold(1, width, block)[:, chunk]
            value_windows = value_pad[b, heads].unfold(1, width, block)[:, chunk]
            parts = [torch.matmul(g.view(n, m, block, d), value_windows).view(n, m * block, width)]
            if G:
                parts.append(torch.bmm(g, global_values[b, heads].transpose(1, 2)))
            if P > L:
                parts.append(torch.bmm(g, entity_values[b, heads].transpose(1, 2)))
            grad_scores = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
            windows = torch.matmul(
                used[..., :width].view(n, m, block, width).transpose(-1, -2), g.view(n, m, block, d)
            )
            first = chunk.start * block  # padded row of the chunk's first window
            grad_value_pad[b, heads, first : first + span(m)] += _fold_windows(windows, span(m), block)
            if G:
                grad_global_values[b, heads] += torch.bmm(used[..., width : width + G].transpose(1, 2), g)
            if P > L:
                grad_entity_values[b, heads] += torch.bmm(used[..., width + G :].transpose(1, 2), g)
            softmax_grad_(grad_scores, probs, used)
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
                band_label_sums(band, plan.band, out=out)
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

        grads = (grad_q_word, grad_q_entity, grad_key, grad_value, grad_distance, grad_rank, grad_w2e)
        # the word rows (the padding cut off) in each input's own dtype
        rows = [None if g is None else (g if g is grad_key or g is grad_value else g[:, :, :L]) for g in grads]
        return (*(None if g is None else g.to(d) for g, d in zip(rows, ctx.dtypes, strict=True)), None, None)


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
    full_rows = torch.matmul(_dropout_probs(torch.softmax(scores, dim=-1), dropout_p), value)
    if G:
        # the global words' rows replace their windowed rows
        example, slot = plan.global_slots.unbind(1)
        words = words.transpose(1, 2).index_put(
            (example, plan.global_words[example, slot]), full_rows[:, :, :G].transpose(1, 2)[example, slot]
        )
        words = words.transpose(1, 2)
    return torch.cat([words, full_rows[:, :, G:]], dim=2) if E else words


__all__ = [
    "WindowPlan",
    "WindowedAttention",
    "window_plan",
    "windowed_attention",
]

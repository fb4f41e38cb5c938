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
"""GESA's attention functions (paper Eq. 1) and their registration, dispatched on `config._attn_implementation`.

All compute `softmax(q k^T + q . r_label, masked) v` from the batch's `AttentionStructure` and the layer's two
type-directed queries (`modeling_gesa.GesaSelfAttention` computes those, and the label terms, and calls
`ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, eager_attention_forward)`):
- `"eager"` (`eager_attention_forward`): the reference; dense `(B, P, P)` labels, returns the probabilities.
- `"sdpa"` (`sdpa_attention_forward`): the fast path without probabilities, by kernel for the tensors at hand
  (`sdpa_kernel`): `"gesa_windowed"` with `attention_window`, `"gesa_fused"` on CPU, `"gesa_bias"` elsewhere.
- `"gesa_bias"`: the label terms and the padding as one `(B, H, P, P)` bias built by a single gather, then one
  `scaled_dot_product_attention` call: a fixed handful of batched kernels per layer, no host sync, one graph under
  `torch.compile` / `torch.export`.
- `"gesa_fused"` (CPU): one block of scores at a time, in cache, with a hand-written backward; no `(B, H, P, P)`
  label or index tensor exists. Its per-batch plan is read on the host, so under `torch.compile`/`torch.export`
  it runs `"gesa_bias"` instead (same numbers).
- `"gesa_windowed"` (`attention_window`): each block of rows reads its window only, at a cost linear in length;
  under `torch.compile`/`torch.export` it runs `"gesa_bias"` with the window as a mask.
- `"flex_attention"`: FlexAttention with the label terms as a `score_mod` over the compact per-label tables and
  padding / window as a `BlockMask` (no `(B, H, P, P)` tensor on GPUs); no attention dropout.

The kernels behind these functions (`FusedAttention`, `LabelBias`, `WindowedAttention`, FlexAttention's `score_mod`)
live in `kernels_gesa`; the label terms come from `structure_gesa.label_terms` on the module's label table.

Flat module: copied next to every saved checkpoint with `modeling_gesa`; it imports torch, transformers and its
siblings `structure_gesa` and `kernels_gesa` only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers.modeling_utils import AttentionInterface

from .kernels_gesa import (
    bias_attention,
    flex_label_attention,
    fused_attention,
    is_tracing,
    typed_query_key,
    windowed_attention,
)
from .structure_gesa import AttentionStructure, LabelTerms, gathered_label_scores, label_terms

# ---------------------------------------------------------------------------------------------
# The attention functions: `(module, query, key, value, attention_mask, scaling, dropout, **kwargs)` as in every
# transformers model. `query` is the word-directed query `q_to_word` `(B, H, P, d)`, `entity_query` the
# entity-directed one (the same tensor without entity-aware queries), `attention_mask` the batch's
# `AttentionStructure`, `module` the `GesaSelfAttention` (label tables, label terms). They return the context
# `(B, P, H, d)` and the probabilities `(B, H, P, P)` (eager) or None.
# ---------------------------------------------------------------------------------------------


def _scaled_queries(
    query: torch.Tensor, entity_query: torch.Tensor | None, scaling: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale the queries once: the label terms `q . r` then come out scaled too."""
    q_word = query * scaling
    shared = entity_query is None or entity_query is query
    return q_word, q_word if shared else entity_query * scaling


def _label_terms(
    table: torch.Tensor | None, q_word: torch.Tensor, q_entity: torch.Tensor, structure: AttentionStructure
) -> LabelTerms | None:
    """The label terms from the label table `(labels, d)`, or None without labels."""
    if not structure.tokens.use_labels or table is None:
        return None
    return label_terms(table, q_word, q_entity, structure.tokens, structure.word_length)


def _label_table(module: torch.nn.Module) -> torch.Tensor | None:
    """The attention module's K-type label table `(labels, d)`, or None (what every kernel receives, as a tensor)."""
    return None if module.label_embeddings is None else module.label_embeddings.weight


def eager_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: AttentionStructure,
    scaling: float,
    dropout: float = 0.0,
    entity_query: torch.Tensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 1 written plainly over the dense `(B, P, P)` labels: the reference every other path is tested against.

    `scores = [q_to_word ; q_to_entity] . [k ; 0 | 0 ; k] + q . r_label` (the label term read from `q . R^T` by the
    pair's label), scaled, masked, softmax, dropout, times `v` (plus `sum_j a_ij r^V_ij` with V-type labels).
    """
    structure = attention_mask
    L = structure.word_length
    entity_query = query if entity_query is None else entity_query
    typed_query, typed_key = typed_query_key(query, entity_query, key, L)
    scores = torch.matmul(typed_query, typed_key.transpose(2, 3))
    labels = structure.labels
    if module.label_embeddings is not None and labels is not None:
        scores = scores + gathered_label_scores(module.label_embeddings.weight, query, entity_query, labels, L)
    scores = (scores * scaling).masked_fill(~structure.allowed, torch.finfo(scores.dtype).min)
    weights = F.dropout(torch.softmax(scores, dim=-1), p=dropout, training=dropout > 0)
    context = torch.matmul(weights, value)
    if module.value_label_embeddings is not None:
        # V-type labels: sum_j a_ij r^V_label(i,j), by pooling probabilities per label first
        B, H, P, _ = weights.shape
        per_label = weights.new_zeros(B, H, P, module.value_label_embeddings.num_embeddings)
        per_label.scatter_add_(3, labels[:, None].expand(B, H, P, labels.size(-1)), weights)
        context = context + torch.matmul(per_label, module.value_label_embeddings.weight)
    return context.transpose(1, 2).contiguous(), weights


def sdpa_kernel(structure: AttentionStructure, device: torch.device) -> str:
    """The kernel behind GESA's `"sdpa"`, like SDPA's own choice by device: `"gesa_windowed"` with
    `attention_window`, `"gesa_fused"` on CPU, `"gesa_bias"` (one `scaled_dot_product_attention` call) elsewhere."""
    if structure.tokens.attention_window is not None:
        return "gesa_windowed"
    return "gesa_fused" if device.type == "cpu" else "gesa_bias"


def sdpa_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: AttentionStructure,
    scaling: float,
    dropout: float = 0.0,
    entity_query: torch.Tensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """GESA's `"sdpa"`: the fastest kernel without probabilities for these tensors (`sdpa_kernel`). A structure built
    by hand in dense form (`AttentionStructure(allowed, labels, L)`) takes one SDPA call over its dense bias."""
    structure = attention_mask
    if structure.tokens is None:
        L = structure.word_length
        entity_query = query if entity_query is None else entity_query
        typed_query, typed_key = typed_query_key(query, entity_query, key, L)
        bias = torch.zeros(structure.allowed.shape, dtype=query.dtype, device=query.device)
        if module.label_embeddings is not None and structure.labels is not None:
            bias = (
                gathered_label_scores(module.label_embeddings.weight, query, entity_query, structure.labels, L)
                * scaling
            )
        bias = bias.masked_fill(~structure.allowed, torch.finfo(query.dtype).min)
        context = F.scaled_dot_product_attention(
            typed_query, typed_key, value, attn_mask=bias, dropout_p=dropout, scale=scaling
        )
        return context.transpose(1, 2), None
    kernel = ALL_ATTENTION_FUNCTIONS[sdpa_kernel(structure, query.device)]
    return kernel(module, query, key, value, structure, scaling, dropout, entity_query=entity_query, **kwargs)


def bias_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: AttentionStructure,
    scaling: float,
    dropout: float = 0.0,
    entity_query: torch.Tensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """`"gesa_bias"`: label terms + padding (+ window) as one bias, one `scaled_dot_product_attention` call."""
    if attention_mask.tokens is None:  # a dense structure built by hand
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout, entity_query)
    q_word, q_entity = _scaled_queries(query, entity_query, scaling)
    terms = _label_terms(_label_table(module), q_word, q_entity, attention_mask)
    context = bias_attention(
        q_word, q_entity, key, value, terms, attention_mask.tokens, attention_mask.word_length, dropout
    )
    return context.transpose(1, 2), None


def fused_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: AttentionStructure,
    scaling: float,
    dropout: float = 0.0,
    entity_query: torch.Tensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """`"gesa_fused"`: the CPU kernel (`FusedAttention`). Its plan is read on the host, so under `torch.compile` /
    `torch.export` it runs `"gesa_bias"` (the same numbers, one traceable graph)."""
    if attention_mask.tokens is None:  # a dense structure built by hand
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout, entity_query)
    if is_tracing():
        return bias_attention_forward(module, query, key, value, attention_mask, scaling, dropout, entity_query)
    if attention_mask.tokens.attention_window is not None:
        raise ValueError(
            "attn_implementation='gesa_fused' computes dense attention but config.attention_window="
            f"{attention_mask.tokens.attention_window} is set; use 'gesa_windowed' (or 'sdpa', which picks it)."
        )
    q_word, q_entity = _scaled_queries(query, entity_query, scaling)
    tokens = attention_mask.tokens
    table = _label_table(module) if tokens.use_labels else None
    context = fused_attention(q_word, q_entity, key, value, table, tokens, attention_mask.word_length, dropout)
    return context.transpose(1, 2), None


def windowed_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: AttentionStructure,
    scaling: float,
    dropout: float = 0.0,
    entity_query: torch.Tensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """`"gesa_windowed"`: `attention_window` at a cost linear in length (`WindowedAttention`). Its plan is read on the
    host, so under `torch.compile` / `torch.export` it runs `"gesa_bias"` with the window as a mask."""
    if attention_mask.tokens is None:  # a dense structure built by hand
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout, entity_query)
    if attention_mask.tokens.attention_window is None:
        raise ValueError(
            "attn_implementation='gesa_windowed' needs config.attention_window; without one use 'sdpa' or 'gesa_fused'."
        )
    if is_tracing():
        return bias_attention_forward(module, query, key, value, attention_mask, scaling, dropout, entity_query)
    q_word, q_entity = _scaled_queries(query, entity_query, scaling)
    terms = _label_terms(_label_table(module), q_word, q_entity, attention_mask)
    context = windowed_attention(
        q_word, q_entity, key, value, terms, attention_mask.tokens, attention_mask.word_length, dropout
    )
    return context.transpose(1, 2), None


def flex_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: AttentionStructure,
    scaling: float,
    dropout: float = 0.0,
    entity_query: torch.Tensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """`"flex_attention"`: `flex_attention(q_to_word, k, v)` with the label terms and the entity-key correction in a
    `score_mod` (`_label_score_mod`, reading `(B, H, L, 2k + 1)`-sized tables) and the padding / window as a
    `BlockMask`: no `(B, H, P, P)` tensor. FlexAttention has no dropout of the probabilities."""
    if attention_mask.tokens is None:  # a dense structure built by hand
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout, entity_query)
    if dropout > 0:
        raise ValueError(
            "attn_implementation='flex_attention' has no attention dropout (FlexAttention applies none): set "
            "attention_probs_dropout_prob=0.0, call model.eval(), or use 'sdpa' / 'eager' for training with it."
        )
    structure = attention_mask
    L = structure.word_length
    q_word, q_entity = _scaled_queries(query, entity_query, scaling)
    terms = _label_terms(_label_table(module), q_word, q_entity, structure)
    context = flex_label_attention(q_word, q_entity, key, value, terms, structure.tokens, L)
    return context.transpose(1, 2), None


# GESA's own attention functions under their names (valid `attn_implementation` values for every model), and a local
# interface in which `"sdpa"` and `"flex_attention"` mean GESA's versions (transformers' generic ones know neither the
# two queries nor the label terms).
AttentionInterface.register("gesa_bias", bias_attention_forward)
AttentionInterface.register("gesa_fused", fused_attention_forward)
AttentionInterface.register("gesa_windowed", windowed_attention_forward)
ALL_ATTENTION_FUNCTIONS = AttentionInterface()
ALL_ATTENTION_FUNCTIONS["sdpa"] = sdpa_attention_forward
ALL_ATTENTION_FUNCTIONS["flex_attention"] = flex_attention_forward
# this module's own kernels behind "sdpa" even when another copy of it (a checkpoint's, an older checkout's) registered
# the global names since
ALL_ATTENTION_FUNCTIONS["gesa_bias"] = bias_attention_forward
ALL_ATTENTION_FUNCTIONS["gesa_fused"] = fused_attention_forward
ALL_ATTENTION_FUNCTIONS["gesa_windowed"] = windowed_attention_forward

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
"""Paper Eq. 1 written plainly, dense: the reference every GESA attention kernel is tested against, and the
computation behind the `"eager"` attention function (the only one that returns the probabilities).

    a_ij = softmax_j( (q_i . k_j + q_i . r_ij) / sqrt(d) )   over the pairs allowed to attend,
    y_i  = sum_j a_ij v_j   (+ sum_j a_ij r^V_ij with V-type labels)

- `q_i` is the query of the pair's token types (four query matrices w2w, w2e, e2w, e2e): token i's `q_to_word` (its
  w2w or e2w query) meets the word keys, its `q_to_entity` (w2e or e2e) the entity keys.
- `r_ij = R[label(i, j)]`: a row of the layer's label table `R`, shared by the heads, picked by the pair's label
  (`structure_gesa`: relative distance, global, mention, entity-graph edge); row 0 is the zero vector (no term).
- Masked pairs (padded keys; with `attention_window`, local word pairs farther apart) get the dtype's minimum.

Quadratic in length and simple on purpose; the fast paths are the kernels (`kernel_fused_gesa`, `kernel_bias_gesa`,
`kernel_windowed_gesa`, `kernel_flex_gesa`), which compute the same numbers without the dense tensors.

Flat module: copied next to every saved checkpoint; it imports torch only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def reference_attention(
    q_to_word: torch.Tensor,
    q_to_entity: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    allowed: torch.Tensor,
    labels: torch.Tensor | None,
    word_length: int,
    scaling: float,
    dropout_p: float = 0.0,
    table: torch.Tensor | None = None,
    value_table: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 1 over the dense labels: the context `(B, H, P, d)` and the probabilities `a` `(B, H, P, P)`.

    Args:
        q_to_word, q_to_entity: `(B, H, P, d)` queries of every token (words then entities), unscaled: the one
            against word keys, the one against entity keys (the same tensor without entity-aware queries).
        key, value: `(B, H, P, d)`.
        allowed: bool `(B, 1, P, P)` or `(B, 1, 1, P)`: may token i attend to token j.
        labels: `(B, P, P)` label ids, or None (no label terms).
        word_length: `L`; tokens `[0, L)` are words, `[L, P)` entities.
        scaling: `1 / sqrt(d)`.
        dropout_p: dropout of the probabilities (training).
        table: the label table `R` `(labels, d)`, or None (no label terms).
        value_table: the V-type label table `R^V` `(labels, d)`, or None.
    """
    L = word_length
    # q_i . k_j: q_to_word against the word keys, q_to_entity against the entity keys
    scores = torch.cat([q_to_word @ key[:, :, :L].mT, q_to_entity @ key[:, :, L:].mT], dim=-1)
    if table is not None and labels is not None:
        # q_i . r_ij = (q_i R^T)[label(i, j)], with the query the pair's key term uses
        index = labels[:, None].expand(scores.shape)
        to_words = torch.gather(q_to_word @ table.T, 3, index[..., :L])
        to_entities = torch.gather(q_to_entity @ table.T, 3, index[..., L:])
        scores = scores + torch.cat([to_words, to_entities], dim=-1)
    scores = (scores * scaling).masked_fill(~allowed, torch.finfo(scores.dtype).min)
    probs = F.dropout(torch.softmax(scores, dim=-1), p=dropout_p, training=dropout_p > 0)
    context = probs @ value
    if value_table is not None:
        # sum_j a_ij r^V_label(i,j): the probabilities summed per label, times the V-type table
        per_label = probs.new_zeros(*probs.shape[:3], value_table.size(0))
        per_label.scatter_add_(3, labels[:, None].expand(probs.shape), probs)
        context = context + per_label @ value_table
    return context, probs


__all__ = ["reference_attention"]

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
"""What GESA's attention kernels share (paper Eq. 1, `s_ij = q_i . k_j + q_i . r_label(i,j)`, `a_ij = softmax_j(s_ij)`,
`y_i = sum_j a_ij v_j`): the in-place softmax, the keep mask of the dropout of the probabilities `a`, and the
per-label sums of score gradients behind the label table's gradient (`dL/dr_l = sum_{(i,j) labelled l} dL/ds_ij q_i`):
the clipped-distance labels read along a band of each score row, their two clipped ends from row prefix sums.

`is_tracing` says whether the call is being traced (`torch.compile`, `torch.export`), where the kernels whose plans
are read on the host cannot run.

Flat module: copied next to every saved checkpoint with the kernels; it imports torch only.
"""

from __future__ import annotations

import sys

import torch


def is_tracing() -> bool:
    """Inside `torch.compile` or `torch.export` (the host-side plans of the fused and windowed kernels cannot be
    traced: they read tensor values on the host)."""
    return torch.compiler.is_compiling()


def softmax_(scores: torch.Tensor) -> torch.Tensor:
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


def band_sum_plan(
    diagonal: torch.Tensor, width: int, k: int, dtype: torch.dtype
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """Where to find each clipped-distance label in score rows of `width` key columns whose column `diagonal[i]` is
    row i's own key (distance 0): the inner labels' columns `(R, 2k + 1)` (clamped), 1 where they exist and are not
    a clipped end, the prefix-sum columns `(R, 3)` of the two ends (`clipped_end_sums`), 1 where label 0 has any."""
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


def clipped_end_sums(
    grad: torch.Tensor, k: int, end_index: torch.Tensor, left_valid: torch.Tensor, out: torch.Tensor
) -> None:
    """Labels 0 and 2k take every pair at distance <= -k and >= k: their gradient sums, from the row prefix sums of
    `grad` `(..., R, width)` (overwritten), into `out[..., 0]` (prefix at i - k) and `out[..., 2k]` (total - prefix
    at i + k - 1)."""
    prefix = grad.cumsum_(-1)
    ends = prefix.gather(-1, end_index.expand(*grad.shape[:-1], 3))
    out[..., 0] = ends[..., 0] * left_valid
    out[..., 2 * k] = ends[..., 1] - ends[..., 2]


__all__ = [
    "band_sum_plan",
    "clipped_end_sums",
    "dropout_keep_mask",
    "is_tracing",
    "softmax_",
]

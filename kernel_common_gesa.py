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
`y_i = sum_j a_ij v_j`), each written once:

- the entity-key correction `(q_to_entity - q_to_word) . k_j` that lets one product with `q_to_word` serve the four
  query matrices (`entity_key_correction`: the bias and flex kernels);
- a block's softmax in place with the dropout of the probabilities `a` (its keep mask drawn two elements per random
  word), and their backward: the saved probabilities, the scaled `dO` and `dS = P * (dP - rowsum(P * dP))` with the
  row sum taken from the block (`softmax_dropout_`, `saved_probabilities`, `softmax_output_grad`, `softmax_grad_`:
  the fused and windowed kernels' hand-written backwards), run in float32 for half-precision inputs
  (`backward_dtype`, `upcast`): the difference cancels, and in bfloat16 `dO . O` for the row sum and a bfloat16 `dP`
  tripled the queries' and keys' gradient error against float64 (`bench/bf16_numerics.py`);
- the per-label sums of score gradients behind the label table's gradient (`dL/dr_l = sum_{(i,j) labelled l}
  dL/ds_ij q_i`): the clipped-distance labels read along a band of each score row, their two clipped ends from row
  prefix sums (`BandPlan`, `band_sum_plan`, `band_label_sums`: all three backwards).

`is_tracing` says whether the call is being traced (`torch.compile`, `torch.export`), where the kernels whose plans
are read on the host cannot run.

Flat module: copied next to every saved checkpoint with the kernels; it imports torch only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch


def is_tracing() -> bool:
    """Inside `torch.compile` or `torch.export` (the host-side plans of the fused and windowed kernels cannot be
    traced: they read tensor values on the host)."""
    return torch.compiler.is_compiling()


def entity_key_correction(
    q_to_word: torch.Tensor, q_to_entity: torch.Tensor, key: torch.Tensor, word_length: int
) -> torch.Tensor | None:
    """`(q_to_entity - q_to_word) . k_j` for every query and entity key `j` `(B, H, P, E)`: added to `q_to_word . k_j`
    it gives the entity columns their own queries' scores. None where the queries are one tensor or there is no
    entity."""
    if q_to_entity is q_to_word or key.size(2) == word_length:
        return None
    return torch.matmul(q_to_entity - q_to_word, key[:, :, word_length:].transpose(-1, -2))


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


def softmax_dropout_(
    scores: torch.Tensor, p: float, saved: list[torch.Tensor] | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """A block's probabilities, in place of its `scores` (`softmax_`), and the dropped-out ones its product with the
    values uses (not yet scaled by `1 / (1 - p)`: the caller scales the smaller context). `saved`: where the backward's
    tensors go (`saved_probabilities` reads them back), the bool keep mask (with dropout) then the probabilities."""
    probs = softmax_(scores)
    used = probs
    if p > 0:
        kept = dropout_keep_mask(probs, p)
        if saved is not None:
            saved.append(kept)
        used = probs * kept
    if saved is not None:
        saved.append(probs)
    return probs, used


def backward_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a hand-written backward computes in: float32 for half precision (the softmax backward's difference
    `dP - rowsum(P * dP)` cancels, and half precision rounds `dP` before it), else `dtype`."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def without_autocast(backward: Callable) -> Callable:
    """A hand-written backward run with autocast off (a `.backward()` called inside `torch.autocast` would otherwise
    mix dtypes in its products): it picks its own dtype (`backward_dtype`)."""

    def run(ctx, grad: torch.Tensor):
        with torch.autocast(grad.device.type, enabled=False):
            return backward(ctx, grad)

    return run


def upcast(dtype: torch.dtype, *tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    """`tensors` (None kept) in `dtype` (`backward_dtype`'s): copies where they differ, the tensors themselves
    elsewhere."""
    return [t if t is None or t.dtype == dtype else t.to(dtype) for t in tensors]


def saved_probabilities(
    saved: Iterator[torch.Tensor], p: float, dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The next block's probabilities from `softmax_dropout_`'s saved tensors (in `dtype` where given: the backward's),
    and the dropped-out ones its product used."""
    kept = next(saved) if p > 0 else None
    probs = next(saved)
    if dtype is not None:
        probs = probs.to(dtype)
    return probs, probs if kept is None else torch.where(kept, probs, 0.0)


def softmax_output_grad(grad_context: torch.Tensor, p: float) -> torch.Tensor:
    """The gradient of the dropped-out probabilities' product: `dO` scaled by the dropout's `1 / (1 - p)`."""
    return grad_context * (1.0 / (1.0 - p)) if p > 0 else grad_context


def softmax_grad_(grad_scores: torch.Tensor, probs: torch.Tensor, used: torch.Tensor) -> torch.Tensor:
    """A block's score gradient in place of `dP'` (`grad_scores`: `dO' V^T` over whole score rows):
    `dS = P' * dP' - P * delta` with `delta = rowsum(P' * dP')` summed from the block itself. (The flash-attention
    identity `delta = dO . O` reads the rounded output instead: in half precision that difference cancels badly.)"""
    grad_scores.mul_(used)
    return grad_scores.addcmul_(probs, grad_scores.sum(-1, keepdim=True), value=-1)


@dataclass
class BandPlan:
    """Where each clipped-distance label lies in score rows whose key columns hold consecutive words (`band_sum_plan`).

    Args:
        k: the clip distance: labels `0 .. 2k`, 0 and 2k the clipped ends (every pair at distance <= -k, >= k).
        term_index: `(R, 2k + 1)` long: the column of each label at its distance (clamped into the row).
        term_inner: `(R, 2k + 1)`: 1 where that column exists and is not a clipped end.
        end_index: `(R, 3)` long: the prefix-sum columns of the two ends (`clipped_end_sums`).
        left_valid: `(R,)`: 1 where label 0 has any pair in row i.
    """

    k: int
    term_index: torch.Tensor
    term_inner: torch.Tensor
    end_index: torch.Tensor
    left_valid: torch.Tensor


def band_sum_plan(diagonal: torch.Tensor, width: int, k: int, dtype: torch.dtype) -> BandPlan | None:
    """The `BandPlan` of score rows of `width` key columns whose column `diagonal[i]` is row i's own key (distance 0),
    or None for k = 0 (one label for every local pair)."""
    if k == 0:
        return None
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
    return BandPlan(k, columns.clamp(0, width - 1), inner.to(dtype), end_index, (diagonal >= k).to(dtype))


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


def band_label_sums(
    grad: torch.Tensor,
    band: BandPlan | None,
    out: torch.Tensor | None = None,
    inner: torch.Tensor | None = None,
) -> torch.Tensor:
    """Score gradients `(..., R, width)` of pairs with clipped-distance labels -> their sums per row and label
    `(..., R, 2k + 1)` (into `out` where given; one column for k = 0, `band` None). `inner`: the gradients at
    `band.term_index` where the caller has them (a strided view, a copy of other precision), else gathered from
    `grad`. Overwrites `grad` (its prefix sums find the clipped ends)."""
    if band is None:
        return torch.sum(grad, -1, keepdim=True, out=out)
    if inner is None:
        inner = torch.gather(grad, -1, band.term_index.expand(*grad.shape[:-1], 2 * band.k + 1), out=out)
    out = torch.mul(inner, band.term_inner, out=out)
    clipped_end_sums(grad, band.k, band.end_index, band.left_valid, out)
    return out


__all__ = [
    "BandPlan",
    "band_label_sums",
    "band_sum_plan",
    "backward_dtype",
    "clipped_end_sums",
    "dropout_keep_mask",
    "entity_key_correction",
    "is_tracing",
    "saved_probabilities",
    "softmax_",
    "softmax_dropout_",
    "softmax_grad_",
    "softmax_output_grad",
    "upcast",
    "without_autocast",
]

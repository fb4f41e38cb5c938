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

Each is a transformers attention function, `(module, query, key, value, attention_mask, scaling, dropout, **kwargs)`,
called by `modeling_gesa.GesaSelfAttention` with
- `query` the word-directed queries `q_to_word` `(B, H, P, d)` and `entity_query=` the entity-directed ones
  `q_to_entity` (the same tensor without entity-aware queries), `key` and `value` `(B, H, P, d)`, unscaled;
- `attention_mask=None`: GESA's padding, window and labels come as `structure=`, the batch's `AttentionStructure`;
- `module` the `GesaSelfAttention`, read here for its label tables only: the kernels get tensors.
They return the context `(B, P, H, d)` and the probabilities `(B, H, P, P)` (`"eager"`) or None.

- `"eager"`: `attention_reference_gesa.reference_attention`, Eq. 1 written plainly over the dense `(B, P, P)` labels;
  the reference every kernel is tested against, and the only function with the probabilities.
- `"sdpa"`: the fastest kernel without probabilities for these tensors (`sdpa_kernel`): `"gesa_windowed"` with
  `attention_window`, `"gesa_fused"` on CPU, `"gesa_bias"` elsewhere.
- `"gesa_fused"` (`kernel_fused_gesa`, CPU): one block of scores at a time, hand-written backward.
- `"gesa_bias"` (`kernel_bias_gesa`): the label terms and the padding as one bias, one `scaled_dot_product_attention`
  call; what `"gesa_fused"` and `"gesa_windowed"` run under `torch.compile` / `torch.export` (their plans are read
  on the host).
- `"gesa_windowed"` (`kernel_windowed_gesa`): `attention_window` at a cost linear in length.
- `"flex_attention"` (`kernel_flex_gesa`): FlexAttention with the label terms in a `score_mod`; no attention dropout.

All six are one path (`attention_function`): the structure and the mask checked, the kernel picked, its refusals,
the queries scaled once, the module's label table read and handed over as tensors; what differs per kernel family is
a row of `KERNEL_FAMILIES`. The label terms `q . r_label` the bias, windowed and flex kernels read come from
`labels_gesa.label_terms` on the module's label table (the fused kernel computes its own from the table); a structure
built by hand in dense form (`AttentionStructure(allowed, labels, L)`, no per-token form for the kernels) is computed
by the reference whatever the implementation.

Flat module: copied next to every saved checkpoint with `modeling_gesa`; it imports torch, transformers and its
siblings `structure_gesa`, `labels_gesa`, `attention_reference_gesa` and the `kernel_*_gesa` modules only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from transformers.modeling_utils import AttentionInterface

from .attention_reference_gesa import reference_attention
from .kernel_bias_gesa import bias_attention
from .kernel_common_gesa import is_tracing
from .kernel_flex_gesa import flex_label_attention
from .kernel_fused_gesa import fused_attention
from .kernel_windowed_gesa import windowed_attention
from .labels_gesa import label_terms
from .structure_gesa import AttentionStructure, TokenStructure

AttentionFunction = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]


def _dense_only(tokens: TokenStructure, dropout: float) -> str | None:
    if tokens.attention_window is None:
        return None
    return (
        f"computes dense attention but config.attention_window={tokens.attention_window} is set; use "
        "'gesa_windowed' (or 'sdpa', which picks it)."
    )


def _window_needed(tokens: TokenStructure, dropout: float) -> str | None:
    if tokens.attention_window is not None:
        return None
    return "needs config.attention_window; without one use 'sdpa' or 'gesa_fused'."


def _no_dropout(tokens: TokenStructure, dropout: float) -> str | None:
    if tokens.pattern is not None and (tokens.pattern.dilation > 1 or tokens.pattern.random_blocks):
        return (
            "masks by the plain window only: this layer's dilation or random keys (the long variant's "
            "attention_dilation, num_random_blocks) take 'sdpa' (the windowed kernel), 'gesa_bias' or 'eager'."
        )
    if dropout == 0:
        return None
    return (
        "has no attention dropout (FlexAttention applies none): set attention_probs_dropout_prob=0.0, call "
        "model.eval(), or use 'sdpa' / 'eager' for training with it."
    )


def _accepted(tokens: TokenStructure, dropout: float) -> str | None:
    return None


def _the_table(table: torch.Tensor, *_) -> torch.Tensor:
    """The label table itself: the fused kernel computes each block's label terms in the block."""
    return table


@dataclass(frozen=True)
class KernelFamily:
    """What differs between GESA's kernel-backed attention functions; the rest is `attention_function`'s one path.

    Args:
        kernel: `(q_to_word, q_to_entity, key, value, labels, tokens, word_length, dropout_p)` -> the context
            `(B, H, P, d)`, queries scaled; `labels` what `labels` below made of the label table, or None (no label
            terms).
        labels: `(table, q_to_word, q_to_entity, tokens, word_length)` -> what the kernel reads of the module's
            label table `(labels, d)`: the terms `labels_gesa.label_terms` (the bias and flex kernels; the windowed
            one with the e2w / w2e terms spread by broadcast on CPU) or the table itself (the fused kernel).
        refusal: `(tokens, dropout)` -> what this kernel cannot compute, said after "attn_implementation='...'",
            or None.
        traced_as: the implementation run instead under `torch.compile` / `torch.export` (a kernel whose plan is
            read on the host), or None.
    """

    kernel: Callable[..., torch.Tensor]
    labels: Callable[..., object] = label_terms
    refusal: Callable[[TokenStructure, float], str | None] = _accepted
    traced_as: str | None = None


KERNEL_FAMILIES = {
    "gesa_bias": KernelFamily(bias_attention),
    "gesa_fused": KernelFamily(fused_attention, _the_table, _dense_only, traced_as="gesa_bias"),
    "gesa_windowed": KernelFamily(
        windowed_attention, partial(label_terms, spread=True), _window_needed, traced_as="gesa_bias"
    ),
    "flex_attention": KernelFamily(flex_label_attention, refusal=_no_dropout),
}


def sdpa_kernel(structure: AttentionStructure, device: torch.device) -> str:
    """The kernel behind GESA's `"sdpa"`, like SDPA's own choice by device: `"gesa_windowed"` with
    `attention_window`, `"gesa_fused"` on CPU, `"gesa_bias"` (one `scaled_dot_product_attention` call) elsewhere."""
    if structure.tokens.attention_window is not None:
        return "gesa_windowed"
    return "gesa_fused" if device.type == "cpu" else "gesa_bias"


def _checked_structure(
    attention_mask: torch.Tensor | None, structure: AttentionStructure | None, implementation: str
) -> AttentionStructure:
    """The batch's `AttentionStructure`, refusing the transformers-style mask GESA's attention has no use for."""
    if attention_mask is not None or not isinstance(structure, AttentionStructure):
        raise ValueError(
            f"attn_implementation='{implementation}' reads the batch's padding, window and labels from `structure=` "
            f"(an AttentionStructure, from GesaModel.build_attention_structure) and takes attention_mask=None; got "
            f"attention_mask={type(attention_mask).__name__}, structure={type(structure).__name__}."
        )
    return structure


def _weight(table: torch.nn.Module | None) -> torch.Tensor | None:
    """A label table's weight `(labels, d)`, or None: what the kernels receive."""
    return None if table is None else table.weight


def _scaled_queries(
    query: torch.Tensor, entity_query: torch.Tensor | None, scaling: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale the queries once: the label terms `q . r` then come out scaled too."""
    q_word = query * scaling
    shared = entity_query is None or entity_query is query
    return q_word, q_word if shared else entity_query * scaling


def attention_function(implementation: str, doc: str) -> AttentionFunction:
    """GESA's transformers attention function `implementation` (`"eager"`, `"sdpa"` or a `KERNEL_FAMILIES` key)."""

    def attention_forward(
        module: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float,
        dropout: float = 0.0,
        *,
        structure: AttentionStructure | None = None,
        entity_query: torch.Tensor | None = None,
        **kwargs,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        structure = _checked_structure(attention_mask, structure, implementation)
        # the calling layer's window, dilation and random keys where the layers' patterns differ (the long variant)
        structure = structure.layer(module.layer_idx)
        tokens, word_length = structure.tokens, structure.word_length
        if implementation == "eager" or tokens is None:
            # Eq. 1 over the dense labels; a structure built by hand in dense form has no per-token form
            context, probs = reference_attention(
                query,
                query if entity_query is None else entity_query,
                key,
                value,
                structure.allowed,
                structure.labels,
                word_length,
                scaling,
                dropout,
                table=_weight(module.label_embeddings),
                value_table=_weight(module.value_label_embeddings),
            )
            return context.transpose(1, 2).contiguous(), probs if implementation == "eager" else None
        chosen = sdpa_kernel(structure, query.device) if implementation == "sdpa" else implementation
        family = KERNEL_FAMILIES[chosen]
        refusal = family.refusal(tokens, dropout)
        if refusal is not None:
            raise ValueError(f"attn_implementation='{chosen}' {refusal}")
        if family.traced_as is not None and is_tracing():
            family = KERNEL_FAMILIES[family.traced_as]
        q_word, q_entity = _scaled_queries(query, entity_query, scaling)
        table = _weight(module.label_embeddings) if tokens.use_labels else None
        labels = None if table is None else family.labels(table, q_word, q_entity, tokens, word_length)
        context = family.kernel(q_word, q_entity, key, value, labels, tokens, word_length, dropout)
        return context.transpose(1, 2), None

    name = implementation.removeprefix("gesa_").removesuffix("_attention")
    attention_forward.__name__ = attention_forward.__qualname__ = f"{name}_attention_forward"
    attention_forward.__doc__ = doc
    return attention_forward


eager_attention_forward = attention_function(
    "eager",
    """`"eager"`: Eq. 1 by `reference_attention` over the dense labels, with the probabilities (after dropout).""",
)
sdpa_attention_forward = attention_function(
    "sdpa", """GESA's `"sdpa"`: the fastest kernel without probabilities for these tensors (`sdpa_kernel`)."""
)
bias_attention_forward = attention_function(
    "gesa_bias",
    """`"gesa_bias"`: label terms + padding (+ window) as one bias, one `scaled_dot_product_attention` call.""",
)
fused_attention_forward = attention_function(
    "gesa_fused",
    """`"gesa_fused"`: the CPU kernel (`FusedAttention`). Its plan is read on the host, so under `torch.compile` /
    `torch.export` it runs `"gesa_bias"` (the same numbers, one traceable graph).""",
)
windowed_attention_forward = attention_function(
    "gesa_windowed",
    """`"gesa_windowed"`: `attention_window` at a cost linear in length (`WindowedAttention`). Its plan is read on the
    host, so under `torch.compile` / `torch.export` it runs `"gesa_bias"` with the window as a mask.""",
)
flex_attention_forward = attention_function(
    "flex_attention",
    """`"flex_attention"`: `flex_attention(q_to_word, k, v)` with the label terms and the entity-key correction in a
    `score_mod` and the padding / window as a `BlockMask` (`kernel_flex_gesa`): no `(B, H, P, P)` tensor.
    FlexAttention has no dropout of the probabilities.""",
)


# GESA's own attention functions under their names (valid `attn_implementation` values for every model), and a local
# interface in which `"sdpa"` and `"flex_attention"` mean GESA's versions (transformers' generic ones know neither the
# two queries nor the label terms).
AttentionInterface.register("gesa_bias", bias_attention_forward)
AttentionInterface.register("gesa_fused", fused_attention_forward)
AttentionInterface.register("gesa_windowed", windowed_attention_forward)
ALL_ATTENTION_FUNCTIONS = AttentionInterface()
ALL_ATTENTION_FUNCTIONS["sdpa"] = sdpa_attention_forward
ALL_ATTENTION_FUNCTIONS["flex_attention"] = flex_attention_forward
# and this module's own functions under GESA's names even when another copy of it (a checkpoint's, an older
# checkout's) registered the global names since
ALL_ATTENTION_FUNCTIONS["gesa_bias"] = bias_attention_forward
ALL_ATTENTION_FUNCTIONS["gesa_fused"] = fused_attention_forward
ALL_ATTENTION_FUNCTIONS["gesa_windowed"] = windowed_attention_forward

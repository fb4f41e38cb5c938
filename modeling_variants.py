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
"""Pieces shared by the variants on GESA's backbone (`modeling_kar`, `modeling_xh`, `modeling_ernie`); the variants
run through `GesaModel.forward`, their blocks inside its layer loop (`modeling_gesa.LayerBlocks`).

- `plain_attention`: the variants' own multi-head attention (KAR's span attention, ERNIE's entity stream, XH's hop
  attention), dispatched through `ALL_ATTENTION_FUNCTIONS` on `config._attn_implementation`.
- `KnowledgeBase`: the user-supplied, frozen entity table of KAR and ERNIE (`kb_size` in their configs); without it
  the knowledge base is the backbone's own entity table (LUKE's Wikipedia entities), read detached by
  `knowledge_table`: the KB is frozen in both cases. `KnowledgePreTrainedModel`: KAR's and ERNIE's pre-trained base
  around it (the unset KB is 0, `set_knowledge_base`).

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import initialization as init
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.bert.modeling_bert import eager_attention_forward

from .configuration_gesa import GesaConfig
from .modeling_gesa import GesaModel, GesaPreTrainedModel

# transformers' attention functions that fit a plain (label-free) attention; any other implementation (GESA's own
# kernels, flash/flex) gives the variants' attention "sdpa"
PLAIN_ATTENTION_IMPLEMENTATIONS = ("eager", "sdpa")


def plain_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    allowed: torch.Tensor,
    dropout: float,
    output_attentions: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Scaled dot-product attention through `ALL_ATTENTION_FUNCTIONS[module.config._attn_implementation]`.

    Args:
        module: the calling module (`config`, `training`).
        query: `(B, H, Q, d)`; key, value: `(B, H, S, d)`.
        allowed: bool, broadcastable to `(B, H, Q, S)`: may query q attend to key s.
        dropout: attention dropout probability (used in training only).
        output_attentions: return the probabilities (takes transformers' eager function).

    Returns:
        the context `(B, Q, H * d)` and, with `output_attentions` or `"eager"`, the probabilities `(B, H, Q, S)`. A
        query with no allowed key gets a zero context and zero probabilities (not a uniform average over padding).
    """
    implementation = module.config._attn_implementation
    if output_attentions:
        implementation = "eager"
    elif implementation not in PLAIN_ATTENTION_IMPLEMENTATIONS:
        implementation = "sdpa"
    attention = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
    mask = torch.zeros(allowed.shape, dtype=query.dtype, device=query.device)
    mask = mask.masked_fill(~allowed, torch.finfo(query.dtype).min)
    context, probs = attention(
        module,
        query,
        key,
        value,
        mask,
        dropout=dropout if module.training else 0.0,
        scaling=query.size(-1) ** -0.5,
        is_causal=False,
    )
    # context is (B, Q, H, d); rows without an allowed key: zero
    has_key = allowed.any(dim=-1).transpose(1, 2)[..., None]
    context = context * has_key.to(context.dtype)
    if probs is not None:
        probs = probs * allowed.to(probs.dtype)
    return context.reshape(*context.shape[:2], -1), probs


class EntityAttention(nn.Module):
    """Multi-head attention of queries `(B, Q, E)` over keys/values `(B, S, E)` in the entity dimension, with BERT's
    output sublayer `LayerNorm(queries + dropout(W_o . attention))`: KAR's span attention, ERNIE's entity stream.

    A query with no valid key gets a zero attention context (`plain_attention`).
    """

    def __init__(self, config: GesaConfig, num_heads: int) -> None:
        super().__init__()
        self.config = config
        size = config.entity_emb_size
        self.num_heads = num_heads
        self.head_size = size // num_heads
        self.query = nn.Linear(size, size)
        self.key = nn.Linear(size, size)
        self.value = nn.Linear(size, size)
        self.dense = nn.Linear(size, size)
        self.LayerNorm = nn.LayerNorm(size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.attention_dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), x.size(1), self.num_heads, self.head_size).transpose(1, 2)

    def forward(
        self, queries: torch.Tensor, keys: torch.Tensor, key_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`(B, Q, E)`, `(B, S, E)`, bool `(B, S)` -> `(B, Q, E)` and, under `"eager"`, the probabilities
        `(B, H, Q, S)`."""
        q, k, v = self._heads(self.query(queries)), self._heads(self.key(keys)), self._heads(self.value(keys))
        context, probs = plain_attention(self, q, k, v, key_mask[:, None, None, :], self.attention_dropout.p)
        return self.LayerNorm(queries + self.dropout(self.dense(context))), probs


class KnowledgeBase(nn.Module):
    """A user-supplied entity embedding table `(kb_size, entity_emb_size)`, kept frozen (a persistent buffer).

    KnowBERT and ERNIE both keep their KB embeddings fixed while training; as a buffer the table is saved and loaded
    with the model but never touched by an optimizer.
    """

    def __init__(self, kb_size: int, embedding_size: int) -> None:
        super().__init__()
        self.register_buffer("embeddings", torch.zeros(kb_size, embedding_size), persistent=True)

    @property
    def size(self) -> int:
        return self.embeddings.size(0)


def knowledge_table(model: GesaModel) -> torch.Tensor:
    """The knowledge base `(kb_size, entity_emb_size)`: the model's `knowledge_base` if set, else its entity table.

    Frozen either way, as in KnowBERT and ERNIE (fixed KB embeddings): a user KB is a buffer, and the entity table is
    returned detached, so the KB lookups (KAR candidates, ERNIE's knowledge stream and dEA candidates) send no gradient
    into it. The entity table still trains through LUKE's own entity tokens (`entity_ids`), as in the backbone.
    """
    knowledge_base = getattr(model, "knowledge_base", None)
    if knowledge_base is not None:
        return knowledge_base.embeddings
    return model.get_entity_embeddings().weight.detach()


def set_knowledge_base(model: GesaModel, embeddings: torch.Tensor) -> None:
    """Install a user-supplied KB `(kb_size, entity_emb_size)` on `model` (a KAR or ERNIE base model)."""
    width = model.config.entity_emb_size
    if embeddings.dim() != 2 or embeddings.size(1) != width:
        raise ValueError(
            f"knowledge base embeddings have shape {tuple(embeddings.shape)}; expected (kb_size, entity_emb_size="
            f"{width})."
        )
    device = model.get_entity_embeddings().weight.device
    knowledge_base = KnowledgeBase(embeddings.size(0), width).to(device)
    knowledge_base.embeddings.copy_(embeddings.detach().to(device=device, dtype=knowledge_base.embeddings.dtype))
    knowledge_base._is_hf_initialized = True
    model.knowledge_base = knowledge_base
    model.config.kb_size = embeddings.size(0)


class KnowledgePreTrainedModel(GesaPreTrainedModel):
    """GESA's pre-trained base (LUKE conversion, added tokens, `save_pretrained` with `AutoModel`) with a frozen KB:
    KAR's and ERNIE's, each naming the knowledge inputs its forward reads (`processing_kb.KnowledgeInputBuilder`),
    for the knowledge pipelines."""

    knowledge_inputs: str = ""

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Linear/LayerNorm/Embedding as GESA; an unset KB is 0."""
        super()._init_weights(module)
        if isinstance(module, KnowledgeBase):
            init.zeros_(module.embeddings)

    def set_knowledge_base(self, embeddings: torch.Tensor) -> None:
        """Use `embeddings` `(kb_size, entity_emb_size)` as the (frozen) KB instead of the backbone's entity table."""
        set_knowledge_base(self.base_model, embeddings)


__all__ = [
    "EntityAttention",
    "KnowledgeBase",
    "KnowledgePreTrainedModel",
    "knowledge_table",
    "plain_attention",
    "set_knowledge_base",
]

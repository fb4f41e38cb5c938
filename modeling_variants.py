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
"""Pieces shared by the variants on GESA's backbone (`modeling_kar`, `modeling_xh`, `modeling_ernie`).

- `embed_backbone_inputs`: what `GesaModel.forward` does before its encoder (defaults, input checks, word and entity
  embeddings, attention structure), for variants that run the backbone layers one at a time.
- `LayerOutputs`: collects per-layer states and attention maps exactly as `GesaEncoder` does.
- `plain_attention`: the variants' own multi-head attention (KAR's span attention, ERNIE's entity stream, XH's hop
  attention), dispatched through `ALL_ATTENTION_FUNCTIONS` on `config._attn_implementation`.
- `KnowledgeBase`: the user-supplied, frozen entity table of KAR and ERNIE (`kb_size` in their configs); without it
  the knowledge base is the backbone's own entity table (LUKE's Wikipedia entities), read detached by
  `knowledge_table`: the KB is frozen in both cases.

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.bert.modeling_bert import eager_attention_forward
from transformers.utils import ModelOutput, TransformersKwargs

from .checks_gesa import check_unknown_inputs
from .configuration_gesa import GesaConfig
from .modeling_gesa import GesaInputs, GesaModel
from .structure_gesa import AttentionStructure

# transformers' attention functions that fit a plain (label-free) attention; any other implementation (GESA's own
# kernels, flash/flex) gives the variants' attention "sdpa"
PLAIN_ATTENTION_IMPLEMENTATIONS = ("eager", "sdpa")


# the backbone's inputs among `GesaInputs` (`position_ids` is one of transformers' keywords too)
BACKBONE_INPUTS = (
    "position_ids",
    *(name for name in GesaInputs.__annotations__ if name not in TransformersKwargs.__annotations__),
)


@dataclass
class BackboneInputs:
    """The backbone's first-layer inputs.

    Args:
        words: `(B, L, D)` word embeddings.
        entities: `(B, E, D)` entity embeddings, or None without `entity_ids`.
        structure: the attention structure shared by every layer.
        attention_mask: `(B, L)` word mask (1 = real token).
        entity_attention_mask: `(B, E)` entity mask, or None without entities.
        output_attentions, output_hidden_states: the call's choice, else the config's.
    """

    words: torch.Tensor
    entities: torch.Tensor | None
    structure: AttentionStructure
    attention_mask: torch.Tensor
    entity_attention_mask: torch.Tensor | None
    output_attentions: bool
    output_hidden_states: bool

    def layer_outputs(self) -> LayerOutputs:
        """An empty record of the per-layer outputs the call asked for."""
        return LayerOutputs(self.words, self.entities, self.output_hidden_states, self.output_attentions)


def embed_backbone_inputs(model: GesaModel, input_ids: torch.Tensor | None, kwargs: dict) -> BackboneInputs:
    """`GesaModel.forward` up to its encoder: same input checks, defaults, embeddings and structure.

    `kwargs`: `GesaInputs` (README "Model inputs"): words `(B, L)`, entities `(B, E)`, `entity_position_ids`
    `(B, E, M)`; any other keyword is refused, naming it.
    """
    check_unknown_inputs(model, kwargs, GesaInputs)
    inputs = {name: kwargs.get(name) for name in BACKBONE_INPUTS}
    model._check_inputs(input_ids=input_ids, **inputs)
    inputs_embeds = inputs["inputs_embeds"]
    reference = input_ids if input_ids is not None else inputs_embeds
    batch_size, word_length = reference.shape[:2]
    device = reference.device
    attention_mask, token_type_ids = inputs["attention_mask"], inputs["token_type_ids"]
    entity_ids, entity_position_ids = inputs["entity_ids"], inputs["entity_position_ids"]
    entity_attention_mask, entity_token_type_ids = inputs["entity_attention_mask"], inputs["entity_token_type_ids"]
    if attention_mask is None:
        attention_mask = torch.ones(batch_size, word_length, dtype=torch.long, device=device)
    if token_type_ids is None:
        token_type_ids = torch.zeros(batch_size, word_length, dtype=torch.long, device=device)
    position_ids = inputs["position_ids"]
    words = model.embeddings(input_ids, token_type_ids, inputs_embeds=inputs_embeds, position_ids=position_ids)
    entities = None
    full_mask = attention_mask
    if entity_ids is not None:
        if entity_attention_mask is None:
            entity_attention_mask = torch.ones_like(entity_ids)
        if entity_token_type_ids is None:
            entity_token_type_ids = torch.zeros_like(entity_ids)
        if entity_position_ids is None:
            entity_position_ids = torch.full((*entity_ids.shape, 1), -1, dtype=torch.long, device=device)
        entities = model.entity_embeddings(entity_ids, entity_token_type_ids, entity_position_ids)
        full_mask = torch.cat([attention_mask, entity_attention_mask], dim=1)
    structure = model.build_attention_structure(
        full_mask,
        word_length,
        inputs["global_attention_mask"],
        entity_position_ids if entities is not None else None,
        inputs["placeholder_entity_mask"],
        inputs["entity_string_ids"],
        inputs["entity_sentence_ids"],
    )
    config = model.config
    output_attentions = kwargs.get("output_attentions")
    output_hidden_states = kwargs.get("output_hidden_states")
    return BackboneInputs(
        words,
        entities,
        structure,
        attention_mask,
        entity_attention_mask,
        config.output_attentions if output_attentions is None else output_attentions,
        config.output_hidden_states if output_hidden_states is None else output_hidden_states,
    )


class LayerOutputs:
    """Per-layer word/entity states and attention maps, collected the way `GesaEncoder` does."""

    def __init__(
        self, words: torch.Tensor, entities: torch.Tensor | None, output_hidden_states: bool, output_attentions: bool
    ) -> None:
        self.words = (words,) if output_hidden_states else None
        self.entities = (entities,) if output_hidden_states and entities is not None else None
        self.attentions = () if output_attentions else None

    def add(self, words: torch.Tensor, entities: torch.Tensor | None, probs: torch.Tensor | None) -> None:
        if self.words is not None:
            self.words += (words,)
            if entities is not None:
                self.entities += (entities,)
        if self.attentions is not None:
            self.attentions += (probs,)

    def replace_last(self, words: torch.Tensor) -> None:
        """A block after the last layer changed the words (KAR, XH hubs): the recorded state is the changed one."""
        if self.words is not None:
            self.words = self.words[:-1] + (words,)

    def output(
        self, output_class: type, model: GesaModel, words: torch.Tensor, entities: torch.Tensor | None, **extra
    ) -> ModelOutput:
        """`output_class` of a variant's model: last states, pooler (if the model has one), the records, `extra`."""
        return output_class(
            last_hidden_state=words,
            entity_last_hidden_state=entities,
            pooler_output=model.pooler(words) if model.pooler is not None else None,
            hidden_states=self.words,
            entity_hidden_states=self.entities,
            attentions=self.attentions,
            **extra,
        )


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


__all__ = [
    "BACKBONE_INPUTS",
    "BackboneInputs",
    "EntityAttention",
    "GesaInputs",
    "KnowledgeBase",
    "LayerOutputs",
    "embed_backbone_inputs",
    "knowledge_table",
    "plain_attention",
    "set_knowledge_base",
]

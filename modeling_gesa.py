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
"""GESA: Graph-Enhanced Self-Attention on the LUKE backbone (Foolad & Kiani, 2023): the model itself.

Reads like the paper: embeddings (3.1), entity-aware self-attention with label embeddings (3.4, Eq. 1), layer,
encoder (a variant's blocks enter its layer loop through `LayerBlocks`), model, the ReCoRD score head (3.5). The
floors below it: `structure_gesa` (relative-position labels, 3.3), `labels_gesa` (the label terms), the
`kernel_*_gesa` modules and `attention_gesa` (the attention computation; Eq. 1 written plainly in
`attention_reference_gesa`), `checks_gesa` (input checks), `conversion_gesa` (LUKE conversion, 4.1).

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, fields
from functools import wraps

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, TransformersKwargs, can_return_tuple
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from .attention_gesa import ALL_ATTENTION_FUNCTIONS, eager_attention_forward
from .checks_gesa import (
    GesaInputs,
    check_model_inputs,
    check_unknown_inputs,
    inputs_already_checked,
    inputs_checked_by_head,
    pop_inputs,
    refuse_span_positions,
    with_inputs_of,
)
from .configuration_gesa import GesaConfig
from .conversion_gesa import convert_luke_checkpoint, init_added_word_embeddings
from .loading_gesa import (
    PipelineSpec,
    forget_remote_head_mapping,
    refuse_damaged_weights,
    save_pretrained_with_pipeline,
)
from .structure_gesa import (
    CONTEXT_EDGE_KINDS,
    CONTEXT_NO_EDGE_KINDS,
    LUKE_MASK_ENTITY_ID,
    AttentionStructure,
    LayerPattern,
    RelativeLabels,
    build_attention_structure,
)


def create_position_ids_from_input_ids(input_ids: torch.Tensor, padding_idx: int) -> torch.Tensor:
    """LUKE/RoBERTa positions: `padding_idx + 1 + index` for real tokens, `padding_idx` for padding."""
    mask = input_ids.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


# the queries of Eq. 1 whose keys or queries are entities (GESA's own; from LUKE, copies of its word query, paper 4.1)
ENTITY_AWARE_QUERIES = ("w2e_query", "e2w_query", "e2e_query")
# entity-aware queries whose gain is at least this share of `GesaPreTrainedModel.entity_query_gain` stay exact copies
ENTITY_QUERY_GAIN_KEPT = 0.9
# Initial std of the label logits `q_i . r_ij / sqrt(d)` of the entity families
# (`GesaPreTrainedModel.entity_label_logit_std`; docs/diagnostic.md measures 2, 3 and 4).
ENTITY_LABEL_LOGIT_STD = 3.0


class LabelTable(nn.Embedding):
    """A layer's key-side label table (`r_ij` of Eq. 1): an `nn.Embedding` that `_init_weights` recognises."""


class GesaEmbeddings(nn.Module):
    """Word token embedding + token-type embedding (+ LUKE's absolute positions when configured)."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.position_embeddings = (
            nn.Embedding(config.max_position_embeddings, config.hidden_size, padding_idx=config.pad_token_id)
            if config.use_absolute_position_embeddings
            else None
        )
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.padding_idx = config.pad_token_id

    def forward(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor,
        inputs_embeds: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """`(B, L)` ids -> `(B, L, D)`."""
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        embeddings = inputs_embeds + self.token_type_embeddings(token_type_ids)
        if self.position_embeddings is not None:
            if position_ids is None:
                if input_ids is not None:
                    position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
                else:
                    length = inputs_embeds.size(1)
                    position_ids = torch.arange(
                        self.padding_idx + 1, length + self.padding_idx + 1, device=inputs_embeds.device
                    ).expand(inputs_embeds.shape[:2])
            embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class GesaEntityEmbeddings(nn.Module):
    """Entity embedding (entity_emb_size) -> dense to hidden + token type (+ LUKE's averaged mention positions, with
    absolute positions or `use_entity_position_embeddings`)."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.entity_embeddings = nn.Embedding(config.entity_vocab_size, config.entity_emb_size, padding_idx=0)
        self.entity_embedding_dense = (
            nn.Linear(config.entity_emb_size, config.hidden_size, bias=False)
            if config.entity_emb_size != config.hidden_size
            else None
        )
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        # without mention labels, the mention positions are all that tells one [MASK] candidate from another
        self.position_embeddings = (
            nn.Embedding(config.max_position_embeddings, config.hidden_size)
            if config.use_absolute_position_embeddings or getattr(config, "use_entity_position_embeddings", False)
            else None
        )
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self, entity_ids: torch.Tensor, entity_token_type_ids: torch.Tensor, entity_position_ids: torch.Tensor | None
    ) -> torch.Tensor:
        """`(B, E)` ids -> `(B, E, D)`. Positions are used only with entity position embeddings."""
        embeddings = self.entity_embeddings(entity_ids)
        if self.entity_embedding_dense is not None:
            embeddings = self.entity_embedding_dense(embeddings)
        embeddings = embeddings + self.token_type_embeddings(entity_token_type_ids)
        if self.position_embeddings is not None and entity_position_ids is not None:
            # LUKE: the entity's position embedding is the mean over its mention's word positions
            # (LUKE's position ids are word indices shifted by nothing: it uses raw indices here)
            position_embeddings = self.position_embeddings(entity_position_ids.clamp(min=0))
            present = (entity_position_ids != -1).type_as(position_embeddings).unsqueeze(-1)
            position_embeddings = (position_embeddings * present).sum(dim=-2) / present.sum(dim=-2).clamp(min=1e-7)
            embeddings = embeddings + position_embeddings
        return self.dropout(self.LayerNorm(embeddings))


# ---------------------------------------------------------------------------------------------
# Entity-aware self-attention with relative-position labels (paper Eq. 1)
# ---------------------------------------------------------------------------------------------


class GesaSelfAttention(nn.Module):
    """Eq. 1: four query matrices by token-type pair, shared K/V, `q_i . r_label(i,j)` added to the scores.

    Each token carries two queries, `q_to_word` (its w2w or e2w query) and `q_to_entity` (w2e or e2e): the first
    meets the word keys, the second the entity keys, which yields all four blocks without computing any score twice.
    The attention itself is `ALL_ATTENTION_FUNCTIONS[config._attn_implementation]` (`attention_gesa`), given the
    batch's `AttentionStructure` as `structure=`; its kernels get the label table as a tensor. Probabilities
    (`output_attentions`) and V-type labels take `"eager"` (`attention_reference_gesa`: Eq. 1 written plainly, over
    the dense labels), the only one that has the probabilities.
    """

    def __init__(self, config: GesaConfig, layer_idx: int | None = None) -> None:
        super().__init__()
        # which layer this is: the long variant's layers each read their own window (`AttentionStructure.layer`)
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_heads * self.head_size
        self.scaling = self.head_size**-0.5
        self.entity_aware = config.use_entity_aware_attention
        self.w2w_query = nn.Linear(config.hidden_size, self.all_head_size)
        if self.entity_aware:
            self.w2e_query = nn.Linear(config.hidden_size, self.all_head_size)
            self.e2w_query = nn.Linear(config.hidden_size, self.all_head_size)
            self.e2e_query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout_prob = config.attention_probs_dropout_prob
        self.label_embeddings = (
            LabelTable(config.num_relative_labels, self.head_size, padding_idx=RelativeLabels.NULL)
            if config.use_relative_labels
            else None
        )
        self.value_label_embeddings = (
            nn.Embedding(config.num_relative_labels, self.head_size, padding_idx=RelativeLabels.NULL)
            if config.use_relative_labels and config.use_value_labels
            else None
        )
        self.config = config

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), x.size(1), self.num_heads, self.head_size).transpose(1, 2)

    def _queries(self, words: torch.Tensor, entities: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Per token, the query used against word keys and the one used against entity keys: 2 x `(B, H, P, d)`."""
        if entities is None:
            to_word = self._heads(self.w2w_query(words))
            return to_word, to_word
        if not self.entity_aware:
            both = self._heads(self.w2w_query(torch.cat([words, entities], dim=1)))
            return both, both
        to_word = torch.cat([self.w2w_query(words), self.e2w_query(entities)], dim=1)
        to_entity = torch.cat([self.w2e_query(words), self.e2e_query(entities)], dim=1)
        return self._heads(to_word), self._heads(to_entity)

    def forward(
        self,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`(B, L, D)`, `(B, E, D)` -> context `(B, P, D)` and the attention probabilities `(B, H, P, P)` (eager) or
        None. `structure`: which pairs attend and with which label (`AttentionStructure`)."""
        tokens = words if entities is None else torch.cat([words, entities], dim=1)
        key = self._heads(self.key(tokens))
        value = self._heads(self.value(tokens))
        q_to_word, q_to_entity = self._queries(words, entities)
        implementation = self.config._attn_implementation
        if output_attentions or self.value_label_embeddings is not None:
            implementation = "eager"
        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
        context, probs = attention_interface(
            self,
            q_to_word,
            key,
            value,
            attention_mask=None,  # no transformers-style mask: padding, window and labels come in `structure`
            scaling=self.scaling,
            dropout=self.dropout_prob if self.training else 0.0,
            structure=structure,
            entity_query=q_to_entity,
            **kwargs,
        )
        return context.reshape(tokens.size(0), tokens.size(1), self.all_head_size), probs


class GesaOutput(nn.Module):
    """A sublayer's output, `LayerNorm(dropout(W h + b) + residual)`: the attention's (`input_size` D) and the
    feed-forward's (`input_size` I)."""

    def __init__(self, config: GesaConfig, input_size: int) -> None:
        super().__init__()
        self.dense = nn.Linear(input_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + residual)


class GesaAttention(nn.Module):
    def __init__(self, config: GesaConfig, layer_idx: int | None = None) -> None:
        super().__init__()
        self.self = GesaSelfAttention(config, layer_idx)
        self.output = GesaOutput(config, config.hidden_size)

    def forward(
        self,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        context, probs = self.self(words, entities, structure, output_attentions, **kwargs)
        tokens = words if entities is None else torch.cat([words, entities], dim=1)
        return self.output(context, tokens), probs


# ---------------------------------------------------------------------------------------------
# Layer and encoder
# ---------------------------------------------------------------------------------------------


class GesaIntermediate(nn.Module):
    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.intermediate_act_fn(self.dense(hidden_states))


class GesaLayer(GradientCheckpointingLayer):
    """Attention + feed-forward over the concatenated word and entity sequence, split back afterwards."""

    def __init__(self, config: GesaConfig, layer_idx: int | None = None) -> None:
        super().__init__()
        self.attention = GesaAttention(config, layer_idx)
        self.intermediate = GesaIntermediate(config)
        self.output = GesaOutput(config, config.intermediate_size)

    def forward(
        self,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """`(B, L, D)`, `(B, E, D)` -> the same shapes, plus the attention probabilities (eager) or None."""
        attended, probs = self.attention(words, entities, structure, output_attentions, **kwargs)
        tokens = self.output(self.intermediate(attended), attended)
        word_length = words.size(1)
        new_entities = None if entities is None else tokens[:, word_length:]
        return tokens[:, :word_length], new_entities, probs


@dataclass
class GesaModelOutput(ModelOutput):
    """
    Args:
        last_hidden_state: `(B, L, D)` word representations of the last layer.
        entity_last_hidden_state: `(B, E, D)` entity representations of the last layer.
        pooler_output: `(B, D)` tanh(dense(`<s>`)).
        hidden_states: per layer (embeddings first) `(B, L, D)`, with `output_hidden_states`.
        entity_hidden_states: per layer `(B, E, D)`, with `output_hidden_states`.
        attentions: per layer `(B, H, P, P)` over words then entities, with `output_attentions`.
    """

    last_hidden_state: torch.FloatTensor | None = None
    entity_last_hidden_state: torch.FloatTensor | None = None
    pooler_output: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    entity_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class LayerBlocks:
    """A variant's blocks inside the encoder's layer loop, for one call (`GesaModel.layer_blocks` builds it).

    `GesaEncoder` runs `between(0)`, then for each layer `layer(index)` and `between(index + 1)`; GESA's own blocks
    run the layer and change nothing else. KAR inserts its block between two layers, ERNIE replaces the top layers by
    its fusion layers, XH adds hop attention after each of the last K. The per-layer states `capture_outputs`
    records are the states after `between`; `output` adds the variant's own outputs to the encoder's.
    """

    def between(self, done: int, words: torch.Tensor, entities: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        """After `done` layers (0: the embeddings): the (possibly changed) words and entities."""
        return words, entities

    def layer(
        self,
        index: int,
        layer: GesaLayer,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Backbone layer `index` on the words and entities; `kwargs` reach its attention."""
        words, entities, _ = layer(words, entities, structure, output_attentions, **kwargs)
        return words, entities

    def output(self, encoded: GesaModelOutput) -> ModelOutput:
        """The model's output from the encoder's (pooler set): GESA's as it is."""
        return encoded


class GesaLayerStates(nn.Module):
    """Identity at the end of each encoder step: `capture_outputs` records the per-layer states here, after the
    variant blocks of that step (its first input, the step's input, is the initial state)."""

    def forward(
        self, previous: torch.Tensor, words: torch.Tensor, entities: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return words, entities


class GesaEncoder(nn.Module):
    """The layers in turn, with a variant's blocks (`LayerBlocks`) in the loop; per-layer states and probabilities
    are recorded by `capture_outputs` (`GesaModel`)."""

    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([GesaLayer(config, index) for index in range(config.num_hidden_layers)])
        self.states = GesaLayerStates()
        self.gradient_checkpointing = False

    def forward(
        self,
        words: torch.Tensor,
        entities: torch.Tensor | None,
        structure: AttentionStructure,
        output_attentions: bool = False,
        blocks: LayerBlocks | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> GesaModelOutput:
        blocks = LayerBlocks() if blocks is None else blocks
        words, entities = blocks.between(0, words, entities)
        for index, layer in enumerate(self.layer):
            previous = words
            words, entities = blocks.layer(index, layer, words, entities, structure, output_attentions, **kwargs)
            words, entities = blocks.between(index + 1, words, entities)
            words, entities = self.states(previous, words, entities)
        return GesaModelOutput(last_hidden_state=words, entity_last_hidden_state=entities)


class GesaPooler(nn.Module):
    def __init__(self, config: GesaConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))


def _entity_states_follow_hidden_states(forward):
    """`capture_outputs` with LUKE's conventions: `output_hidden_states` also returns the entity states (None for a
    batch without entities, as in `entity_last_hidden_state`), and an output flag passed as None means the config's."""

    @wraps(forward)
    def wrapper(self, *args, **kwargs):
        return_dict = kwargs.pop("return_dict", None)
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        for flag in ("output_attentions", "output_hidden_states", "output_entity_hidden_states"):
            if kwargs.get(flag) is None:  # None (a head passing its own default on) means the config's value
                kwargs[flag] = getattr(self.config, flag, None) or False
        if not kwargs["output_entity_hidden_states"]:
            kwargs["output_entity_hidden_states"] = kwargs["output_hidden_states"]
        outputs = forward(self, *args, return_dict=True, **kwargs)
        entity_states = outputs.get("entity_hidden_states")
        if isinstance(entity_states, tuple) and len(entity_states) == 0:
            outputs = type(outputs)(**{k: v for k, v in outputs.items() if k != "entity_hidden_states"})
        return outputs if return_dict else outputs.to_tuple()

    return wrapper


# ---------------------------------------------------------------------------------------------
# Pre-trained model base: weights init, LUKE conversion, added word tokens
# ---------------------------------------------------------------------------------------------


# the pipeline task of every entity-span QA checkpoint (GESA's and each variant's own pipeline class)
ENTITY_CLOZE_TASK = "entity-cloze-qa"


class GesaPreTrainedModel(PreTrainedModel):
    config_class = GesaConfig
    base_model_prefix = "gesa"
    supports_gradient_checkpointing = True
    # attention through `ALL_ATTENTION_FUNCTIONS` (attention_gesa): eager, sdpa, flex_attention and GESA's own
    # gesa_bias / gesa_fused / gesa_windowed; one graph under torch.compile and torch.export
    _supports_sdpa = True
    _supports_flex_attn = True
    _can_compile_fullgraph = True
    # a generic attention backend (vLLM, TGI) knows neither the two queries per token nor the label terms
    _supports_attention_backend = False
    _can_record_outputs = {
        # after each encoder step, variant blocks included (`GesaLayerStates`)
        "hidden_states": OutputRecorder(GesaLayerStates, index=0),
        # the entity embeddings, then each layer's entity states (LUKE returns them with `output_hidden_states`)
        "entity_hidden_states": [
            OutputRecorder(GesaEntityEmbeddings, index=0),
            OutputRecorder(GesaLayerStates, index=1),
        ],
        "attentions": OutputRecorder(GesaSelfAttention, index=1),
    }
    _no_split_modules = ["GesaLayer", "GesaEntityEmbeddings"]
    # the loss is a mean over real candidates, not over label tokens: Trainer must not pass num_items_in_batch
    accepts_loss_kwargs = False
    # The label rows of the entity graph (w2e/e2w: PLC-question, mention, non-mention; e2e: self, edges) start so
    # that their label logits `q_i . r_ij / sqrt(d)` have this std. All [MASK] candidates start alike: at
    # `initializer_range` they attend alike and score alike for hundreds of steps (docs/diagnostic.md); with logits
    # of std 3 each entity sees its own mentions and edges from step 0, and the mention row is turned so that every
    # head pulls a [MASK] candidate towards its mentions (`align_entity_label_rows`). The word rows (w2w distances,
    # CLS, question) keep `initializer_range`, so a converted LUKE's words compute exactly what they did; so do
    # e2e_local's entity-index distances, which are an order, not structure (scaled, they slow that preset's start).
    # `None`: every row at `initializer_range`, no turn (the init before this).
    entity_label_logit_std: float | None = ENTITY_LABEL_LOGIT_STD
    # The graph's edge rows (PLC, SENT-BASED, MATCH, the shared edge label; the context graph's edge kinds) turned like
    # the mention row, so that every head of a candidate starts attending to its graph neighbours; without it (False:
    # mention rows only, the init before) the query reaches a candidate through few heads and most small runs wait on
    # the city level (docs/diagnostic.md).
    turn_edge_label_rows: bool = True
    # From a LUKE checkpoint, the entity-aware queries GESA copies from LUKE's word query (paper 4.1: w2e, e2w, e2e)
    # start at this gain at least: the RMS norm of the query matrix's rows, i.e. the std of a query entry for the unit-
    # variance LayerNorm outputs it reads. The label logits above are `q . r`: on a checkpoint with smaller queries (a
    # tiny LUKE drawn at LukeConfig's 0.02: gain 0.16 at width 64) they need rows 1/gain times larger, and the first
    # optimiser steps on those small queries then swing every label logit by tens, which undoes the turn and saturates
    # the candidates' attention (docs/diagnostic.md). Queries within `ENTITY_QUERY_GAIN_KEPT` of it stay exact copies
    # (a checkpoint drawn at 1/sqrt(width) converts as before), and the word query (w2w) stays LUKE's, so words compute
    # what they did. `None`: exact copies always (the conversion before).
    entity_query_gain: float | None = 1.0
    # the pipeline a saved checkpoint of this head answers through, named as data (`save_pretrained` writes it to
    # `custom_pipelines` and copies its code, `loading_gesa.checkpoint_pipeline`); None: the base models, pre-training
    pipeline: PipelineSpec | None = None

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, LabelTable):
            self._init_entity_label_rows(module.weight)

    def initialize_weights(self) -> None:
        """`PreTrainedModel.initialize_weights`, then the mention and edge rows drawn now are turned towards the
        `[MASK]` entity's queries, which are drawn by then (`align_entity_label_rows`)."""
        super().initialize_weights()
        self.align_entity_label_rows()

    def entity_label_std(self, query_norm: float | None = None) -> float:
        """Std of the entity label rows giving label logits of std `entity_label_logit_std` for inputs of unit
        variance (after LayerNorm): `logit_std * sqrt(d) / |W_h|_F`, with `query_norm` the mean Frobenius norm of one
        head's query matrix `W_h` (`d x D`); default: that of a fresh query, `initializer_range * sqrt(d * D)`."""
        head_size = self.config.hidden_size // self.config.num_attention_heads
        if query_norm is None:
            query_norm = (self.config.initializer_range or 0.02) * (head_size * self.config.hidden_size) ** 0.5
        return self.entity_label_logit_std * head_size**0.5 / max(query_norm, 1e-12)

    def entity_graph_label_rows(self) -> slice:
        """The label-table rows `entity_label_logit_std` applies to: PLC-question up to the shared edge label."""
        labels = RelativeLabels(self.config.max_relative_position)
        return slice(labels.plc_question, labels.entity_distance_offset)

    def entity_label_row_groups(self) -> list[slice]:
        """`entity_graph_label_rows`, and the context graph's edge-kind rows with `entity_graph="context"`."""
        rows = [self.entity_graph_label_rows()]
        if getattr(self.config, "entity_graph", "merged") == "context":
            labels = RelativeLabels(self.config.max_relative_position)
            rows.append(slice(labels.context_edge_offset, labels.size))
        return rows

    def _init_entity_label_rows(self, weight: torch.Tensor) -> None:
        """Rescale the entity families' rows of a freshly drawn label table to `entity_label_std()` (no RNG use:
        every other parameter is drawn exactly as before). A table loaded from a checkpoint is left alone."""
        if self.entity_label_logit_std is None or getattr(weight, "_is_hf_initialized", False):
            return
        rescaled = weight.detach().clone()
        for rows in self.entity_label_row_groups():
            rescaled[rows] *= self.entity_label_std() / (self.config.initializer_range or 0.02)
        init.copy_(weight, rescaled)

    @torch.no_grad()
    def scale_copied_entity_queries(self) -> dict[str, float]:
        """After LUKE's word query was copied into the entity-aware queries (`from_luke_pretrained`): scale each layer's
        w2e, e2w and e2e query (weight and bias) up to `entity_query_gain` where the copy's gain (RMS row norm) is below
        `ENTITY_QUERY_GAIN_KEPT` of it, before the entity label rows are fit to them (`fit_entity_label_rows_to_queries`). Returns the factor per
        scaled matrix (`{parameter prefix: factor}`); none without entity label rows or with `entity_query_gain=None`."""
        if self.entity_query_gain is None or self.entity_label_logit_std is None:
            return {}
        factors = {}
        for prefix, module in self.named_modules():
            if not isinstance(module, GesaSelfAttention) or not module.entity_aware or module.label_embeddings is None:
                continue
            for name in ENTITY_AWARE_QUERIES:
                linear = getattr(module, name)
                gain = float(linear.weight.float().pow(2).sum(dim=1).mean().sqrt())
                if gain >= ENTITY_QUERY_GAIN_KEPT * self.entity_query_gain:
                    continue
                factor = self.entity_query_gain / max(gain, 1e-12)
                linear.weight.mul_(factor)
                if linear.bias is not None:
                    linear.bias.mul_(factor)
                factors[f"{prefix}.{name}"] = factor
        return factors

    @torch.no_grad()
    def fit_entity_label_rows_to_queries(self, entity_rows: list[int] | None = None) -> None:
        """After LUKE's weights were loaded into a fresh model (`from_luke_pretrained`): rescale each layer's entity
        label rows from the fresh-query std to `entity_label_std` of that layer's entity-aware queries, and turn the
        mention and edge rows towards the loaded `[MASK]` entity's queries (`align_entity_label_rows`; `entity_rows`: the LUKE
        rows kept, in order, when the entity table was cut)."""
        if self.entity_label_logit_std is None:
            return
        groups = self.entity_label_row_groups()
        for module in self.modules():
            if not isinstance(module, GesaSelfAttention) or module.label_embeddings is None:
                continue
            names = ("w2e_query", "e2w_query", "e2e_query") if module.entity_aware else ("w2w_query",)
            norms = [
                getattr(module, name).weight.view(module.num_heads, module.head_size, -1).norm(dim=(1, 2)).mean()
                for name in names
            ]
            factor = self.entity_label_std(float(torch.stack(norms).mean())) / self.entity_label_std()
            for rows in groups:
                module.label_embeddings.weight[rows] *= factor
        mask_row = LUKE_MASK_ENTITY_ID
        if entity_rows is not None:
            mask_row = list(entity_rows).index(mask_row) if mask_row in entity_rows else -1
        self.align_entity_label_rows(mask_row, fresh_only=False)

    @torch.no_grad()
    def align_entity_label_rows(self, mask_entity_id: int = LUKE_MASK_ENTITY_ID, fresh_only: bool = True) -> None:
        """Turn each layer's mention row and (`turn_edge_label_rows`) its graph-edge rows (norms kept) so that a
        `[MASK]` candidate gives each of them the same positive logit in every head: `r = |r| u`, `u` the unit
        minimum-norm solution of `Q u = 1`, `Q` `(H, d)` the heads' queries `W LayerNorm([MASK] + type 0)` with the
        e2w query for the mention row and the e2e query for the edge rows (PLC, SENT-BASED, MATCH, the shared edge
        label; with `entity_graph="context"` the context graph's edge kinds but its no-edge kinds,
        `CONTEXT_NO_EDGE_KINDS`, as the merged graph's no-edge row); exact while `H <= d` and the queries are
        independent. A random row gives about half of the heads a
        negative logit `q_h . r / sqrt(d)`: in those heads each candidate looks away from its own mention words, or
        from its graph neighbours, so the candidates stay alike and the query hardly reaches them
        (docs/diagnostic.md). Leaves a checkpoint's own tables alone (`fresh_only`: only tables drawn at init); uses
        no RNG."""
        embeddings = getattr(self.base_model, "entity_embeddings", None)
        if self.entity_label_logit_std is None or embeddings is None:
            return
        if not 0 <= mask_entity_id < self.config.entity_vocab_size:
            return  # an entity table without LUKE's [MASK] row: nothing to turn towards
        attentions = [
            module
            for module in self.modules()
            if isinstance(module, GesaSelfAttention)
            and module.label_embeddings is not None
            and not module.label_embeddings.weight.is_meta  # no values yet: the loaded or drawn ones come later
            and not (fresh_only and getattr(module.label_embeddings.weight, "_is_hf_initialized", False))
            # turned once: a head's init runs after its base model's, and a second turn is not bit-exact
            and not (fresh_only and getattr(module.label_embeddings.weight, "_gesa_rows_turned", False))
        ]
        if not attentions:
            return
        ids = torch.full((1, 1), mask_entity_id, dtype=torch.long, device=embeddings.entity_embeddings.weight.device)
        training = embeddings.training
        embeddings.eval()  # the embedding without dropout
        try:
            entity = embeddings(ids, torch.zeros_like(ids), None)[0, 0]
        finally:
            embeddings.train(training)
        labels = RelativeLabels(self.config.max_relative_position)
        rows = {"e2w_query": [labels.mention]}
        if self.turn_edge_label_rows:
            rows["e2e_query"] = [labels.plc_edge, labels.sent_edge, labels.match_edge, labels.any_edge]
            if getattr(self.config, "entity_graph", "merged") == "context":  # the context graph's edge kinds too
                rows["e2e_query"] += [
                    labels.context_edge(kind)
                    for kind, name in enumerate(CONTEXT_EDGE_KINDS)
                    if name not in CONTEXT_NO_EDGE_KINDS
                ]
        for module in attentions:
            weight = module.label_embeddings.weight
            turned = weight.detach().clone()
            for name, turned_rows in rows.items():
                query = getattr(module, name) if module.entity_aware else module.w2w_query
                per_head = query(entity.to(query.weight.dtype)).view(module.num_heads, module.head_size).float()
                direction = torch.linalg.pinv(per_head) @ torch.ones(module.num_heads, device=per_head.device)
                direction = direction / direction.norm().clamp(min=1e-12)
                for row in turned_rows:
                    turned[row] = (weight[row].float().norm() * direction).to(weight.dtype)
            init.copy_(weight, turned)
            weight._gesa_rows_turned = True

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike, *args, **kwargs):
        """`PreTrainedModel.from_pretrained`; a truncated or damaged weights file of a local folder is named first."""
        if pretrained_model_name_or_path is not None:
            refuse_damaged_weights(pretrained_model_name_or_path, kwargs.get("subfolder") or "")
        if isinstance(kwargs.get("config"), PretrainedConfig):  # an Auto class's call: each checkpoint its own head
            forget_remote_head_mapping(cls, type(kwargs["config"]))
        return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)

    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs) -> None:
        """`PreTrainedModel.save_pretrained`, with `auto_map` also naming the base model for `AutoModel`, and the
        head's pipeline (`pipeline`) named in `custom_pipelines` with its code beside the weights."""
        auto_map = dict(getattr(self.config, "auto_map", None) or {})
        base_class = type(self.base_model)
        auto_map.setdefault("AutoModel", f"{base_class.__module__.split('.')[-1]}.{base_class.__name__}")
        self.config.auto_map = auto_map
        save_pretrained_with_pipeline(self, super().save_pretrained, save_directory, *args, **kwargs)

    def adapt_luke_weight(self, key: str, tensor: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """LUKE's weight `key` as this model takes it in a conversion (`from_luke_pretrained`), `target` the fresh
        weight it replaces: unchanged here (the long variant grows its position tables)."""
        return tensor

    # grow the word table for added tokens, each copied from its source token (`conversion_gesa`)
    init_added_word_embeddings = init_added_word_embeddings

    # Build this GESA class from a transformers LUKE checkpoint (`LukeModel` or any `LukeFor*`); see
    # `conversion_gesa.convert_luke_checkpoint` for the arguments
    from_luke_pretrained = classmethod(convert_luke_checkpoint)


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


class GesaModel(GesaPreTrainedModel):
    """LUKE-style encoder of words and entities whose attention carries GESA's relative-position labels."""

    def __init__(self, config: GesaConfig, add_pooling_layer: bool = True) -> None:
        super().__init__(config)
        self.embeddings = GesaEmbeddings(config)
        self.entity_embeddings = GesaEntityEmbeddings(config)
        self.encoder = GesaEncoder(config)
        self.pooler = GesaPooler(config) if add_pooling_layer else None
        self.build_variant_modules(config)
        self.post_init()

    def build_variant_modules(self, config: GesaConfig) -> None:
        """A variant's own modules (its blocks, its KB), added after the backbone and before the one `post_init`."""

    def layer_blocks(self, inputs: dict, words: torch.Tensor) -> LayerBlocks | None:
        """A variant's `LayerBlocks` for this call, from its own inputs (`variant_inputs` of `forward`) and the
        backbone's (`inputs`: GESA's inputs with the masks defaulted; `words` the embedded words); GESA: none."""
        return None

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def get_entity_embeddings(self) -> nn.Embedding:
        return self.entity_embeddings.entity_embeddings

    @_entity_states_follow_hidden_states
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        position_ids: torch.LongTensor | None = None,
        entity_ids: torch.LongTensor | None = None,
        entity_attention_mask: torch.Tensor | None = None,
        entity_token_type_ids: torch.LongTensor | None = None,
        entity_position_ids: torch.LongTensor | None = None,
        global_attention_mask: torch.LongTensor | None = None,
        placeholder_entity_mask: torch.Tensor | None = None,
        entity_string_ids: torch.LongTensor | None = None,
        entity_sentence_ids: torch.LongTensor | None = None,
        question_string_ids: torch.LongTensor | None = None,
        entity_graph_edges: torch.LongTensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> GesaModelOutput | tuple:
        """Encode words `(B, L)` and entities `(B, E)`; see the README table for every input's shape and meaning.

        Per-layer states and probabilities (`output_hidden_states`, `output_attentions`) are recorded by
        `capture_outputs` from `_can_record_outputs`; other `TransformersKwargs` go down to the attention function.
        """
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        kwargs.pop("output_entity_hidden_states", None)  # read by the decorators
        # a variant's own inputs (its forward names them), read by its `layer_blocks`
        variant_inputs = kwargs.pop("variant_inputs", None)
        check_unknown_inputs(self, kwargs)
        # before any shape is read: a 1-D or float input gets its own error (D14)
        self._check_inputs(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            global_attention_mask=global_attention_mask,
            entity_ids=entity_ids,
            entity_attention_mask=entity_attention_mask,
            entity_token_type_ids=entity_token_type_ids,
            entity_position_ids=entity_position_ids,
            placeholder_entity_mask=placeholder_entity_mask,
            entity_string_ids=entity_string_ids,
            entity_sentence_ids=entity_sentence_ids,
            question_string_ids=question_string_ids,
            entity_graph_edges=entity_graph_edges,
            inputs_embeds=inputs_embeds,
        )
        reference = input_ids if input_ids is not None else inputs_embeds
        batch_size, word_length = reference.shape[:2]
        device = reference.device

        if attention_mask is None:
            attention_mask = torch.ones(batch_size, word_length, dtype=torch.long, device=device)
        if token_type_ids is None:
            token_type_ids = torch.zeros(batch_size, word_length, dtype=torch.long, device=device)
        if entity_ids is not None:
            entity_length = entity_ids.size(1) if entity_ids.dim() == 2 else -1
            if entity_attention_mask is None:
                entity_attention_mask = torch.ones(batch_size, entity_length, dtype=torch.long, device=device)
            if entity_token_type_ids is None:
                entity_token_type_ids = torch.zeros(batch_size, entity_length, dtype=torch.long, device=device)

        words = self.embeddings(input_ids, token_type_ids, inputs_embeds=inputs_embeds, position_ids=position_ids)
        entities = None
        given_entity_position_ids = entity_position_ids
        if entity_ids is not None:
            if entity_position_ids is None:
                entity_position_ids = torch.full((*entity_ids.shape, 1), -1, dtype=torch.long, device=device)
            entities = self.entity_embeddings(entity_ids, entity_token_type_ids, entity_position_ids)
            attention_mask = torch.cat([attention_mask, entity_attention_mask], dim=1)

        structure = self.build_attention_structure(
            attention_mask,
            word_length,
            global_attention_mask,
            entity_position_ids if entities is not None else None,
            placeholder_entity_mask,
            entity_string_ids,
            entity_sentence_ids,
            question_string_ids,
            entity_graph_edges,
        )
        blocks = None
        if variant_inputs is not None:
            inputs = {
                "attention_mask": attention_mask[:, :word_length],
                "entity_attention_mask": entity_attention_mask,
                "entity_position_ids": given_entity_position_ids,
                "placeholder_entity_mask": placeholder_entity_mask,
                "output_attentions": output_attentions,
            }
            blocks = self.layer_blocks({**inputs, **variant_inputs}, words)
        encoded = self.encoder(words, entities, structure, output_attentions, blocks=blocks, **kwargs)
        encoded.pooler_output = self.pooler(encoded.last_hidden_state) if self.pooler is not None else None
        return encoded if blocks is None else blocks.output(encoded)

    def build_attention_structure(self, attention_mask: torch.Tensor, word_length: int, *args) -> AttentionStructure:
        """`structure_gesa.build_attention_structure` with this model's config: masks and labels shared by every
        layer from the compact inputs (`attention_mask` `(B, P)`, then global mask, mention positions, placeholder,
        string and sentence ids, the question's string ids, the context graph's edges); each layer's own window,
        dilation and random keys where the model has them (`layer_patterns`)."""
        return build_attention_structure(
            self.config, attention_mask, word_length, *args, layer_patterns=self.layer_patterns()
        )

    def layer_patterns(self) -> tuple[LayerPattern, ...] | None:
        """One attention pattern per layer (`structure_gesa.LayerPattern`), or None: every layer reads
        `config.attention_window` (GESA and its variants); the long variant's differ per layer."""
        return None

    def _check_inputs(
        self, batch_size: int | None = None, word_length: int | None = None, **inputs: torch.Tensor | None
    ) -> None:
        """`checks_gesa.check_model_inputs` for this model; skipped while compiling or exporting
        (`torch.compiler.is_compiling()`) and inside a head that has checked the same inputs in this call
        (`checks_gesa.inputs_checked_by_head`)."""
        if torch.compiler.is_compiling() or inputs_already_checked(self):
            return
        check_model_inputs(
            self.config,
            inputs,
            batch_size,
            word_length,
            mention_positions_embedded=self.entity_embeddings.position_embeddings is not None,
            embeds_dtype=self.embeddings.word_embeddings.weight.dtype,
        )


# ---------------------------------------------------------------------------------------------
# Heads: what every head shares, then the ReCoRD head (paper 3.5), shared by GESA and every variant
# ---------------------------------------------------------------------------------------------


class GesaHeadBase(GesaPreTrainedModel):
    """What every head shares: its encoder `gesa`, a `base_model_class` (GESA's, or a variant's in the variant's head),
    and the head's forward given to a variant's head that has none of its own, its signature then also naming the
    variant encoder's own inputs (which reach the forward through `**kwargs`)."""

    base_model_class: type[GesaModel] = GesaModel

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "forward" in cls.__dict__:
            return
        head = next((c for c in cls.__mro__[1:] if "forward" in c.__dict__ and issubclass(c, GesaHeadBase)), None)
        if head is None:
            return
        head_forward = head.__dict__["forward"]

        def forward(self: GesaHeadBase, *args: object, **kwargs: object) -> ModelOutput:
            return head_forward(self, *args, **kwargs)

        forward.__doc__ = head_forward.__doc__
        forward.__signature__ = inspect.signature(head_forward)
        cls.forward = with_inputs_of(cls.base_model_class.forward)(forward)

    def __init__(self, config: GesaConfig) -> None:
        super().__init__(config)
        self.gesa = self.base_model_class(config, add_pooling_layer=False)


@dataclass
class GesaEntitySpanQAOutput(ModelOutput):
    """
    Args:
        loss: scalar binary cross-entropy averaged over the real candidates, when `labels` are given.
        logits: `(B, E)` candidate scores; the placeholder and padded entities hold `finfo.min`.
        hidden_states, entity_hidden_states, attentions: the base model's, on request.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    entity_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class GesaCandidateInputs(GesaInputs, total=False):
    """A candidate-scoring head's own inputs: `labels` `(B, E)` in {0, 1}; `start_positions` / `end_positions`,
    what extractive-QA code sends, only to be refused."""

    labels: torch.Tensor | None
    start_positions: torch.LongTensor | None
    end_positions: torch.LongTensor | None


class GesaForEntitySpanQA(GesaHeadBase):
    """Cloze-style QA (ReCoRD): `logit_e = w . dropout([y_PLC ; y_e]) + b` for every candidate entity e.

    One head for GESA and every variant: a variant's head sets `base_model_class` (its encoder, which takes the
    variant's own inputs through `**kwargs`) and, where it adds outputs or a loss, `output_class` and
    `auxiliary_loss`; XH overrides `score_entities` (graphs of nodes).
    """

    output_class: type[ModelOutput] = GesaEntitySpanQAOutput
    pipeline = PipelineSpec(ENTITY_CLOZE_TASK, "pipeline_gesa.EntityClozeQAPipeline")
    # inputs the head cannot score without (XH adds its own)
    required_inputs: tuple[str, ...] = ("entity_ids",)

    def __init__(self, config: GesaConfig) -> None:
        super().__init__(config)
        # the base model's outputs the head passes on (read once: dataclass introspection does not trace)
        self._passed_output_fields = tuple(
            f.name for f in fields(self.output_class) if f.name not in ("loss", "logits")
        )
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(2 * config.hidden_size, 1)
        self.post_init()

    @can_return_tuple
    @with_inputs_of(GesaModel.forward, own=GesaCandidateInputs)
    def forward(self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaCandidateInputs]) -> ModelOutput:
        """Score candidates: `logits` `(B, E)`; `labels` `(B, E)` in {0, 1} gives the BCE `loss`.

        Takes every input of the base model (`kwargs`; README "Model inputs", a variant's own inputs too).
        `start_positions` / `end_positions` (what extractive-QA code sends) are refused with a pointer to what this
        head takes.
        """
        labels, start_positions, end_positions = pop_inputs(kwargs, GesaCandidateInputs)
        refuse_span_positions(self, start_positions, end_positions)
        missing = [name for name in self.required_inputs if kwargs.get(name) is None]
        if missing:
            raise ValueError(
                f"{type(self).__name__} needs {', '.join(missing)}: the placeholder entity and the candidates "
                "(build the inputs with the processor)."
            )
        entity_ids = kwargs["entity_ids"]
        # no entity (E = 0), or (B, E) with the placeholder alone (E = 1): no candidate to score
        found = None
        if entity_ids.dim() >= 2 and entity_ids.size(-1) == 0:
            found = "no entity"
        elif entity_ids.dim() == 2 and entity_ids.size(-1) == 1:
            found = "only the placeholder entity, no candidate"
        if found is not None:
            raise ValueError(
                f"entity_ids has shape {tuple(entity_ids.shape)}: {found}, so nothing to score. "
                f"{type(self).__name__} needs the placeholder entity and at least one candidate per example; encode "
                "entity-free text with the base model."
            )
        return self.score_entities(self.run_base_model(input_ids, labels, kwargs), labels, kwargs)

    def run_base_model(self, input_ids: torch.Tensor | None, labels: torch.Tensor | None, kwargs: dict) -> ModelOutput:
        """The base model on the inputs; its input checks and the head's (labels, one placeholder) in one host sync."""
        if torch.compiler.is_compiling() or not self.check_head_inputs:
            return self.gesa(input_ids, **kwargs, return_dict=True)
        self.gesa._check_inputs(input_ids=input_ids, **kwargs, labels=labels, scored=True)
        with inputs_checked_by_head(self.gesa):
            return self.gesa(input_ids, **kwargs, return_dict=True)

    # XH checks its graph-shaped inputs itself (the base model flattens nodes first)
    check_head_inputs = True

    def score_entities(self, outputs: ModelOutput, labels: torch.Tensor | None, kwargs: dict) -> ModelOutput:
        """Paper Eq. 2 on the base model's entity states; the output carries the base model's other outputs."""
        logits, loss = score_candidates(
            self.classifier,
            self.dropout,
            outputs.entity_last_hidden_state,
            kwargs.get("entity_attention_mask"),
            kwargs.get("placeholder_entity_mask"),
            labels,
        )
        return self.head_output(loss, logits, outputs)

    def head_output(self, loss: torch.Tensor | None, logits: torch.Tensor, outputs: ModelOutput) -> ModelOutput:
        """`output_class` of the task's `loss` plus the variant's (`auxiliary_loss`), the `logits` and the base model's
        outputs the head passes on."""
        extra = self.auxiliary_loss(outputs)
        if extra is not None:
            loss = extra if loss is None else loss + extra
        passed = self._passed_output_fields
        return self.output_class(loss=loss, logits=logits, **{name: outputs.get(name) for name in passed})

    def auxiliary_loss(self, outputs: ModelOutput) -> torch.Tensor | None:
        """A variant's loss added to the task loss (KAR: its weighted entity-linking loss)."""
        return None


def classifier_dropout(config: GesaConfig) -> nn.Dropout:
    """The heads' dropout: `classifier_dropout`, else `hidden_dropout_prob` (as LUKE's heads)."""
    return nn.Dropout(
        config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
    )


def score_candidates(
    classifier: nn.Linear,
    dropout: nn.Module,
    entity_states: torch.Tensor,
    entity_attention_mask: torch.Tensor | None,
    placeholder_entity_mask: torch.Tensor | None,
    labels: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Paper Eq. 2 on `(B, E, D)` entity states -> `(B, E)` logits (non-candidates masked) and the BCE loss.

    The placeholder is `placeholder_entity_mask`'s entity, else entity 0 (spec section 1). Inputs are checked by the
    head (`check_candidate_labels`, `check_one_placeholder`).
    """
    batch_size, entity_length, _ = entity_states.shape
    device = entity_states.device
    if placeholder_entity_mask is None:
        placeholder = torch.zeros(batch_size, entity_length, dtype=torch.bool, device=device)
        placeholder[:, 0] = True
    else:
        placeholder = placeholder_entity_mask.bool()
    if entity_attention_mask is None:
        entity_attention_mask = torch.ones(batch_size, entity_length, dtype=torch.bool, device=device)
    candidates = entity_attention_mask.bool() & ~placeholder
    placeholder_index = placeholder.float().argmax(dim=1)
    placeholder_states = entity_states[torch.arange(batch_size, device=device), placeholder_index]
    pair = torch.cat([placeholder_states[:, None].expand_as(entity_states), entity_states], dim=-1)
    logits = classifier(dropout(pair)).squeeze(-1)
    loss = None
    if labels is not None:
        per_candidate = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype), reduction="none")
        weights = candidates.to(logits.dtype)
        loss = (per_candidate * weights).sum() / weights.sum().clamp(min=1.0)
    logits = logits.masked_fill(~candidates, torch.finfo(logits.dtype).min)
    return logits, loss


GesaConfig.register_for_auto_class()
GesaModel.register_for_auto_class("AutoModel")
GesaForEntitySpanQA.register_for_auto_class("AutoModelForQuestionAnswering")

__all__ = [
    "GesaEntitySpanQAOutput",
    "GesaForEntitySpanQA",
    "GesaHeadBase",
    "GesaModel",
    "GesaModelOutput",
    "GesaPreTrainedModel",
    "GesaSelfAttention",
]

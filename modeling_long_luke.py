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
"""LUKE for whole documents (seed 002, 4.1.1, Figure 7): LUKE's entity-aware self-attention with the Longformer /
BigBird combined attention pattern, added at fine-tuning time to a converted LUKE checkpoint.

Only what differs from LUKE lives here; the model runs through `GesaModel`'s shared forward (LUKE is GESA's
`ablation="luke"` preset):

1. **Pattern per layer** (`LongLukeConfig.attention_patterns` -> `structure_gesa.LayerPattern`): a sliding window
   (Longformer's w, w / 2 words each side, growing with depth), Longformer's dilation, BigBird's random key blocks.
   Each layer's attention reads its own pattern (`AttentionStructure.layer`); `"sdpa"` runs the windowed kernel
   (`kernel_windowed_gesa`: linear in length, no `(P, P)` tensor), `"eager"` the same pattern as a dense mask.
2. **Global tokens**, symmetric: the words `global_attention_mask` marks (nonzero: `<s>`, `</s>`, question words;
   by default `<s>` and `</s>`, `special_tokens_global`), and LUKE's entity tokens, which attend to every word and
   which every word attends to.
3. **Positions beyond 512**: a LUKE conversion grows the word and entity position tables to
   `max_position_embeddings`, the new rows copied from LUKE's 512 (Longformer's recipe, `position_init="copy"`) or
   drawn fresh (`"random"`).

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

import torch
from transformers.processing_utils import Unpack
from transformers.utils import can_return_tuple

from .configuration_long_luke import LongLukeConfig
from .conversion_gesa import grow_position_table
from .modeling_gesa import (
    GesaForEntitySpanQA,
    GesaInputs,
    GesaModel,
    GesaModelOutput,
    GesaPreTrainedModel,
    with_inputs_of,
)
from .structure_gesa import CLS_GLOBAL, LayerPattern

# the position tables a LUKE conversion grows: (weight name, rows before the learned ones: padding and the unused
# row 0 of the word table; the entity table indexes word positions directly)
POSITION_TABLES = {
    "embeddings.position_embeddings.weight": "words",
    "entity_embeddings.position_embeddings.weight": "entities",
}


def special_tokens_global_mask(input_ids: torch.Tensor, config: LongLukeConfig) -> torch.Tensor:
    """`(B, L)` `global_attention_mask`: `CLS_GLOBAL` on `<s>` and `</s>` (`bos_token_id`, `eos_token_id`), 0 elsewhere."""
    special = [token for token in (config.bos_token_id, config.eos_token_id) if token is not None]
    is_global = torch.zeros_like(input_ids, dtype=torch.bool)
    for token in special:
        is_global |= input_ids == token
    return is_global.long() * CLS_GLOBAL


class LongLukePreTrainedModel(GesaPreTrainedModel):
    """GESA's pre-trained base (LUKE conversion, added tokens, `save_pretrained`) for the long variant."""

    config_class = LongLukeConfig

    @classmethod
    def from_luke_pretrained(
        cls,
        pretrained_model_name_or_path,
        keep_entity_aware_queries: bool = True,
        entity_rows: list[int] | None = None,
        **kwargs,
    ) -> LongLukePreTrainedModel:
        """`GesaPreTrainedModel.from_luke_pretrained` keeping LUKE's own queries (the backbone is LUKE), with
        `LongLukeConfig`'s `max_position_embeddings` unless given (not the checkpoint's 514): the position rows beyond
        LUKE's start as `position_init` says (`adapt_luke_weight`)."""
        kwargs.setdefault(
            "max_position_embeddings", LongLukeConfig.__dataclass_fields__["max_position_embeddings"].default
        )
        return super().from_luke_pretrained(
            pretrained_model_name_or_path, keep_entity_aware_queries, entity_rows, **kwargs
        )

    def adapt_luke_weight(self, key: str, tensor: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """A LUKE position table grown to this model's rows: LUKE's 512 learned rows copied over and over
        (`position_init="copy"`, Longformer's recipe) or this model's freshly drawn rows beyond LUKE's
        (`"random"`). The word table keeps its padding rows (`pad_token_id + 1` of them) in front; the entity table
        indexes word positions from 0, so its period starts at row 0."""
        table = POSITION_TABLES.get(key)
        if table is None or tensor.size(0) >= target.size(0):
            return tensor
        offset = (self.config.pad_token_id or 0) + 1
        period = tensor.size(0) - offset  # LUKE's 512 learned positions
        start = offset if table == "words" else 0
        return grow_position_table(tensor, target, start, period, copy=self.config.position_init == "copy")


class LongLukeModel(LongLukePreTrainedModel, GesaModel):
    """LUKE's encoder of words and entities with the long-document attention pattern (`LongLukeConfig`).

    Inputs: `LukeModel`'s (`input_ids`, `attention_mask`, `token_type_ids`, `position_ids`, `entity_ids`,
    `entity_attention_mask`, `entity_token_type_ids`, `entity_position_ids`, `inputs_embeds`) and
    `global_attention_mask` `(B, L)` (nonzero: a global word; None: `<s>` and `</s>` global with
    `special_tokens_global`). Outputs: `LukeModel`'s (`last_hidden_state` `(B, L, D)`, `entity_last_hidden_state`
    `(B, E, D)`, `pooler_output`, and per layer `hidden_states`, `entity_hidden_states`, `attentions` on request;
    `attentions` are the dense `(B, H, P, P)` probabilities, computed by the `"eager"` path: quadratic in length).
    """

    def layer_patterns(self) -> tuple[LayerPattern, ...]:
        return tuple(LayerPattern(**pattern) for pattern in self.config.attention_patterns())

    @can_return_tuple
    @with_inputs_of(GesaModel.forward)
    def forward(self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaInputs]) -> GesaModelOutput:
        """Encode words `(B, L)` and entities `(B, E)` (`GesaModel`'s inputs), each layer with its own pattern."""
        if kwargs.get("global_attention_mask") is None and input_ids is not None and self.config.special_tokens_global:
            kwargs["global_attention_mask"] = special_tokens_global_mask(input_ids, self.config)
        return super().forward(input_ids, **kwargs)


class LongLukeForEntitySpanQA(LongLukePreTrainedModel, GesaForEntitySpanQA):
    """Cloze-style QA (ReCoRD's head, paper 3.5 of GESA) on the long variant's entity states: `--variant long_luke`
    of `run_record.py`."""

    base_model_class = LongLukeModel


LongLukeConfig.register_for_auto_class()
LongLukeModel.register_for_auto_class("AutoModel")
LongLukeForEntitySpanQA.register_for_auto_class("AutoModelForQuestionAnswering")

__all__ = [
    "LongLukeForEntitySpanQA",
    "LongLukeModel",
    "LongLukePreTrainedModel",
    "special_tokens_global_mask",
]

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
"""Configurations of the variants on the LUKE backbone: KnowBERT-KAR, Transformer-XH and ERNIE fusion.

Each is a `GesaConfig` subclass: the backbone fields (LUKE's, plus GESA's label switches) keep their meaning, so a
variant with its extra effect switched off is exactly the backbone it was built on. Each defaults to LUKE's own
backbone (`backbone="luke"`, the `ablation="luke"` preset: the papers' BERT stand-in), GESA's a named option
(`backbone="gesa"`, or any GESA `ablation`).
Every field and default is documented in `model_cards/{kar,xh,ernie}.md`.

Flat module: copied next to every saved checkpoint, so it imports only its sibling `configuration_gesa`.
"""

from collections.abc import Callable
from typing import Any

from huggingface_hub.dataclasses import strict, validated_field
from transformers import PreTrainedConfig

from .configuration_gesa import (
    GesaConfig,
    check_heads_divide,
    check_layer_count,
    non_negative_finite,
    positive,
    probability,
)

KAR_OUTPUT_INITS = ("pinv", "zero")
ERNIE_FUSION_OUTPUTS = ("residual_layernorm", "gelu")
FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
# The in-sequence backbone of KAR, ERNIE and XH: "luke" is the `ablation="luke"` preset (LUKE's attention and absolute
# positions, the papers' BERT stand-in); "gesa" is GESA's relative-label attention
BACKBONES = ("luke", "gesa")
XH_BACKBONES = BACKBONES
# XH's hop attention: "paper" is Eq. 7 (scaled dot product over the neighbours' hubs); "released_gat" the authors'
# released code (microsoft/Transformer-XH, model.py): DGL's graph attention (additive, LeakyReLU, residual, ReLU)
XH_HOP_ATTENTIONS = ("paper", "released_gat")


def optional_positive(value: int | None) -> None:
    if value is not None:
        positive(value)


def one_of(choices: tuple[str, ...]) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value not in choices:
            raise ValueError(f"{value!r} is unknown; choose one of {list(choices)}.")

    return check


def optional_positive_or_zero(value: int | None) -> None:
    if value is not None and value < 0:
        raise ValueError(f"must be a non-negative integer, got {value!r}.")


def optional_backbone(value: str | None) -> None:
    if value is not None:
        one_of(BACKBONES)(value)


def zero_or_one(value: int) -> None:
    if value not in (0, 1) or isinstance(value, bool):
        raise ValueError(f"must be 0 (knowledge off) or 1 (one KAR block for the one KB), got {value!r}.")


def finite(value: float) -> None:
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"must be a finite number, got {value!r}.")


def resolve_backbone(
    backbone: str | None,
    ablation: str | None,
    use_relative_labels: bool | None = None,
    use_absolute_position_embeddings: bool | None = None,
    owner: str = "XhConfig",
) -> str:
    """The backbone a KAR / ERNIE / XH config (``owner``; or a LUKE conversion's overrides) asks for: `backbone` when
    given (checked against `ablation`), else `"gesa"` when a field only GESA's attention has is set that way (a
    GESA-backbone config saved before the field existed), else `"luke"`."""
    if backbone is None:
        gesa = (
            (ablation not in (None, "luke"))
            or use_relative_labels is True
            or use_absolute_position_embeddings is False
        )
        return "gesa" if gesa else "luke"
    if backbone == "gesa" and ablation == "luke":
        raise ValueError(
            f"{owner}.backbone='gesa' contradicts ablation='luke' (that preset is the LUKE backbone); set "
            "backbone='luke', or drop ablation."
        )
    if backbone == "luke" and ablation not in (None, "luke"):
        raise ValueError(
            f"{owner}.backbone='luke' contradicts ablation={ablation!r} (a GESA ablation); set backbone='gesa' to "
            "ablate GESA's labels under the variant, or drop ablation."
        )
    return backbone


def xh_backbone(
    backbone: str | None,
    ablation: str | None,
    use_relative_labels: bool | None = None,
    use_absolute_position_embeddings: bool | None = None,
) -> str:
    """`resolve_backbone` for an XH config."""
    return resolve_backbone(backbone, ablation, use_relative_labels, use_absolute_position_embeddings, "XhConfig")


@strict
class VariantBackboneConfig(GesaConfig):
    r"""A `GesaConfig` whose in-sequence backbone is a choice: KnowBERT-KAR's, ERNIE's and Transformer-XH's (BERT
    models in their papers).

    Args:
        backbone (`str`, *optional*):
            `"luke"`: LUKE's attention and absolute positions (the papers' BERT stand-in): the `ablation="luke"`
            preset, so with the variant's knowledge layer off the model is exactly `transformers.LukeModel`.
            `"gesa"`: GESA's relative-label attention (any other `ablation`, or none). Unset (`None`): `"gesa"` when
            `ablation` names another preset or `use_relative_labels=True` / `use_absolute_position_embeddings=False`
            is given (a GESA-backbone config saved before this field: it loads as it was trained), else `"luke"`.
            After construction it holds the resolved value.
    """

    backbone: str | None = validated_field(optional_backbone, default=None)

    def __post_init__(self, **kwargs: Any) -> None:
        self.backbone = resolve_backbone(self.backbone, self.ablation, self.use_relative_labels,
                                         self.use_absolute_position_embeddings, type(self).__name__)  # fmt: skip
        luke_fields = self.use_absolute_position_embeddings and not self.use_relative_labels
        if self.backbone == "luke" and not (self.ablation is None and luke_fields):
            self.ablation = "luke"  # the preset then sets (and checks) the fields that make the backbone LUKE
        super().__post_init__(**kwargs)

    @classmethod
    def luke_conversion_is_exact(cls, overrides: dict[str, Any]) -> bool:
        """A LUKE conversion with these overrides has the LUKE backbone (the default): LUKE's own weights, entity-aware
        queries and absolute positions kept."""
        return resolve_backbone(overrides.get("backbone"), overrides.get("ablation"),
                                overrides.get("use_relative_labels"),
                                overrides.get("use_absolute_position_embeddings"), cls.__name__) == "luke"  # fmt: skip

    def validate_backbone(self) -> None:
        """`backbone` must fit `ablation` (also after an assignment): `"luke"` is exactly the `ablation="luke"`
        preset (or its fields kept as a custom combination, `ablation=None`), `"gesa"` anything else."""
        # ablation=None after a preset keeps its fields as a custom combination: LUKE's, if they are LUKE's
        luke_fields = self.ablation == "luke" or (
            self.ablation is None and self.use_absolute_position_embeddings and not self.use_relative_labels
        )
        if (self.backbone == "luke" and not luke_fields) or (self.backbone == "gesa" and self.ablation == "luke"):
            raise ValueError(
                f"{type(self).__name__}.backbone={self.backbone!r} does not fit ablation={self.ablation!r}: the LUKE "
                "backbone is exactly the ablation='luke' preset. Set backbone='gesa' for a GESA ablation, or "
                "backbone='luke' with ablation='luke' (or unset)."
            )


@strict
class KarConfig(VariantBackboneConfig):
    r"""A LUKE (default) or GESA backbone + KnowBERT's Knowledge Attention and Recontextualization (KAR) block.

    Args:
        backbone (`str`, *optional*):
            `"luke"` (the default): LUKE's attention and absolute positions, the `ablation="luke"` preset (KnowBERT is
            a BERT model), so `kar_num_layers=0` is exactly `transformers.LukeModel`; `"gesa"`: GESA's relative-label
            attention. Unset: `"gesa"` for a config saved before the field with GESA's fields (it loads as trained);
            see `VariantBackboneConfig`.
        kar_num_layers (`int`, defaults to 1):
            `K`: KAR blocks in the model, 1 (KnowBERT-Wiki: one KB, one KAR) or 0 (knowledge off: no KAR block, so
            on the LUKE backbone the model is exactly `transformers.LukeModel`).
        kar_layer (`int`, *optional*):
            Number of backbone layers run before the KAR block (KAR sits between layer `kar_layer` and
            `kar_layer + 1`, 1-based). KnowBERT-Wiki used 10 of 12 (`soldered_layers: 9`, 0-based); the default
            mirrors that depth, `min(round(num_hidden_layers * 10 / 12), num_hidden_layers - 1)`: 20 of 24, 10 of 12.
        kar_entity_threshold (`float`, defaults to 0.0):
            `delta`: candidates with linker score `psi < delta` get weight 0; a mention none of whose candidates
            passes gets the NULL embedding (KnowBERT's `decode_threshold`, default 0.0).
        kar_num_attention_heads (`int`, defaults to 4):
            Heads of the mention-span self-attention and of the word-to-span recontextualisation (KnowBERT: 4).
        kar_intermediate_size (`int`, *optional*):
            Feed-forward size of those two blocks; defaults to `4 * entity_emb_size` (1024 for LUKE, as KnowBERT).
        kar_linker_hidden_size (`int`, defaults to 100):
            Hidden size of the linker MLP over `[s_m . e_mk / sqrt(E) ; prior_mk]` (KnowBERT: 100).
        kar_output_init (`str`, defaults to `"pinv"`):
            `"pinv"`: `W2` starts as the pseudo-inverse of `W1` (`b2 = -W2 b1`, so projecting back and forth is the
            identity on the entity space: KnowBERT). `"zero"`: `W2 = 0, b2 = 0`, so a freshly converted model
            equals its backbone exactly until training moves `W2`.
        kar_linking_loss_weight (`float`, defaults to 1.0):
            Weight of the supervised linking loss `L_EL` added to the task loss when gold links are given.
        kar_layer_norms (`bool`, defaults to `True`):
            KnowBERT's released code's LayerNorms in the entity dimension: on the KB vectors before the linker
            (`kg_layer_norm`), on the pooled mention spans (`projected_span_layer_norm`) and on the spans with their
            entities, `s'_m = LayerNorm(s_m + e~_m)` (`weighted_entity_layer_norm`). They put a KB of any scale
            (TransE's unit vectors, LUKE's table) on the scale of the word states, so the KB reaches the answer.
            `False`: the paper's equations without them (a config saved before the field loads so).
        kb_size (`int`, *optional*):
            `None`: the knowledge base is the backbone's own entity table (LUKE's Wikipedia entities; candidate ids are
            entity-vocabulary ids). An integer: a separate, frozen `knowledge_base` table of that many rows
            (`entity_emb_size` wide), filled with `set_knowledge_base`.
    """

    model_type = "gesa_kar"
    # Trainer's evaluation gathers the logits only: the linker's (B, C, K) outputs differ in C and K from batch to batch
    keys_to_ignore_at_inference = ["linking_scores", "linking_weights", "linking_loss"]

    kar_num_layers: int = validated_field(zero_or_one, default=1)
    kar_layer: int | None = validated_field(optional_positive_or_zero, default=None)
    kar_entity_threshold: float | int = validated_field(finite, default=0.0)
    kar_num_attention_heads: int = validated_field(positive, default=4)
    kar_intermediate_size: int | None = validated_field(optional_positive, default=None)
    kar_linker_hidden_size: int = validated_field(positive, default=100)
    kar_output_init: str = validated_field(one_of(KAR_OUTPUT_INITS), default="pinv")
    kar_linking_loss_weight: float | int = validated_field(non_negative_finite, default=1.0)
    kar_layer_norms: bool = True
    kb_size: int | None = validated_field(optional_positive, default=None)

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> "KarConfig":
        """`GesaConfig.from_dict`; a KAR config saved before `kar_layer_norms` existed has no such weights: it loads
        with `kar_layer_norms=False`, as it was trained (every config saved since writes the field)."""
        if config_dict.get("model_type") == cls.model_type and "kar_layer_norms" not in config_dict:
            config_dict = {**config_dict, "kar_layer_norms": kwargs.pop("kar_layer_norms", False)}
        return super().from_dict(config_dict, **kwargs)

    def to_diff_dict(self) -> dict[str, Any]:
        """`GesaConfig.to_diff_dict`, `kar_layer_norms` always written (`from_dict`)."""
        return {**super().to_diff_dict(), "kar_layer_norms": self.kar_layer_norms}

    def __post_init__(self, **kwargs: Any) -> None:
        if self.kar_layer is None:
            self.kar_layer = min(round(self.num_hidden_layers * 10 / 12), self.num_hidden_layers - 1)
        if self.kar_intermediate_size is None:
            self.kar_intermediate_size = 4 * self.entity_emb_size
        super().__post_init__(**kwargs)

    def validate_kar(self) -> None:
        """Combinations of fields the KAR block cannot run with."""
        check_layer_count(self, "KarConfig", "kar_layer", " (the number of backbone layers below the KAR block)")
        why = " (KAR attends in the entity dimension)"
        check_heads_divide(self, "KarConfig", "entity_emb_size", "kar_num_attention_heads", why)


@strict
class XhConfig(VariantBackboneConfig):
    r"""A LUKE or GESA backbone over a graph of text sequences with Transformer-XH's eXtra Hop attention.

    Args:
        backbone (`str`, *optional*):
            The in-sequence attention the hop layers sit on. `"luke"`: LUKE's attention and absolute positions (the
            paper's BERT-base stand-in): the `ablation="luke"` preset, so `xh_num_hop_layers=0` is exactly
            `transformers.LukeModel`. `"gesa"`: GESA's relative-label attention (any other `ablation`, or none).
            Unset (`None`): `"gesa"` when `ablation` names another preset or `use_relative_labels=True` /
            `use_absolute_position_embeddings=False` is given (a GESA-backbone config saved before this field),
            else `"luke"`. After construction it holds the resolved value.
        xh_num_hop_layers (`int`, defaults to 3):
            `K`: the last K backbone layers are followed by hop attention among the nodes' hub tokens (paper: three
            hop steps). Must not exceed `num_hidden_layers`.
        xh_num_hop_attention_heads (`int`, *optional*):
            Heads of the hop attention; defaults to `num_attention_heads`.
        xh_hop_attention (`str`, defaults to `"paper"`):
            How a hub attends to its neighbours' hubs. `"paper"`: Eq. 7, `softmax(q^_tau . k^_eta / sqrt(d))`
            over the neighbours with separate hop query/key/value projections per layer. `"released_gat"`: the
            authors' released code (microsoft/Transformer-XH, `model/model.py`'s `GraphAttention`, "the standard
            implementation of the DGL library"): each head's `d`-wide slice of the hub through one shared
            `Linear(d, d)` (`z`), additive scores `LeakyReLU_0.2(a_l . z_eta + a_r . z_tau)` softmaxed over the
            neighbours, plus a residual `Linear(d, d)` of the hub's own slice, then ReLU; xavier-normal init (gain
            1.414). Both feed Eq. 8's combine Linear.
        xh_hop_dropout (`float`, *optional*):
            Dropout on the hop attention weights; defaults to `attention_probs_dropout_prob` with `"paper"`, and to 0
            with `"released_gat"` (the released module builds `feat_drop`/`attn_drop` of 0.6 but its forward applies
            neither).
        num_labels (`int`, defaults to 3):
            Classes of the FEVER head; without `num_labels`/`id2label` the labels are `FEVER_LABELS`
            (`SUPPORTS`, `REFUTES`, `NOT ENOUGH INFO`).
    """

    model_type = "gesa_xh"

    xh_num_hop_layers: int = validated_field(optional_positive_or_zero, default=3)
    xh_num_hop_attention_heads: int | None = validated_field(optional_positive, default=None)
    xh_hop_attention: str = validated_field(one_of(XH_HOP_ATTENTIONS), default="paper")
    xh_hop_dropout: float | int | None = validated_field(probability, default=None)

    def __post_init__(self, **kwargs: Any) -> None:
        if self.id2label is None and "num_labels" not in kwargs:
            self.id2label = dict(enumerate(FEVER_LABELS))
            self.label2id = {label: index for index, label in self.id2label.items()}
        if self.xh_num_hop_attention_heads is None:
            self.xh_num_hop_attention_heads = self.num_attention_heads
        if self.xh_hop_dropout is None:
            released = self.xh_hop_attention == "released_gat"
            self.xh_hop_dropout = 0.0 if released else self.attention_probs_dropout_prob
        super().__post_init__(**kwargs)  # the backbone resolved (VariantBackboneConfig)

    def validate_xh(self) -> None:
        """Combinations of fields the hop attention cannot run with."""
        check_layer_count(self, "XhConfig", "xh_num_hop_layers")
        check_heads_divide(self, "XhConfig", "hidden_size", "xh_num_hop_attention_heads")


# HotpotQA's question types (its `type` field) and the paper system's models (appendix A.3), each in its own folder
HOTPOT_QUESTION_TYPES = ("bridge", "comparison")
PAPER_SYSTEM_COMPONENTS = {
    "question_type": "XhForQuestionType",
    "xh_bridge": "XhForHotpotQA",
    "xh_comparison": "XhForHotpotQA",
    "supporting_bridge": "XhForSupportingFacts",
    "supporting_comparison": "XhForSupportingFacts",
}
# the graph each question type's XH model reads (5.1): the evidence graph for bridge, fully connected for comparison
PAPER_TYPE_EDGES = {"bridge": "title_mention", "comparison": "full"}


def paper_components(value: dict[str, str]) -> None:
    if not isinstance(value, dict) or value != PAPER_SYSTEM_COMPONENTS:
        raise ValueError(f"must name the paper system's five models {PAPER_SYSTEM_COMPONENTS}, got {value!r}.")


def paper_type_edges(value: dict[str, str]) -> None:
    if not isinstance(value, dict) or set(value) != set(HOTPOT_QUESTION_TYPES):
        raise ValueError(
            f"must give the graph edges of each question type {list(HOTPOT_QUESTION_TYPES)}, got {value!r}."
        )
    for edges in value.values():
        one_of(("title_mention", "title_mention_eq7", "bidirectional", "full"))(edges)


@strict
class XhPaperSystemConfig(PreTrainedConfig):
    r"""The paper's HotpotQA system as one checkpoint (Transformer-XH appendix A.3): a folder whose `config.json` is
    this config and whose sub-folders hold the five models, each a checkpoint of its own.

    Args:
        components (`dict[str, str]`):
            Sub-folder -> head class: `question_type` (`XhForQuestionType`, A.3.1), `xh_bridge` / `xh_comparison`
            (`XhForHotpotQA` per question type, 5.1), `supporting_bridge` / `supporting_comparison`
            (`XhForSupportingFacts` per type, A.3.2).
        type_edges (`dict[str, str]`):
            The graph each question type's models read (`processing_xh`'s `hotpot_edges`): `bridge` the evidence
            graph (`"title_mention"`), `comparison` fully connected (`"full"`).
    """

    model_type = "gesa_xh_paper_system"

    components: dict = validated_field(paper_components, default_factory=lambda: dict(PAPER_SYSTEM_COMPONENTS))
    type_edges: dict = validated_field(paper_type_edges, default_factory=lambda: dict(PAPER_TYPE_EDGES))


@strict
class ErnieConfig(VariantBackboneConfig):
    r"""A LUKE (default) or GESA backbone whose top M layers carry ERNIE's knowledge-entity stream and information-fusion
    layer.

    Args:
        backbone (`str`, *optional*):
            `"luke"` (the default): LUKE's attention and absolute positions, the `ablation="luke"` preset (ERNIE is a
            BERT model), so `ernie_num_fusion_layers=0` is exactly `transformers.LukeModel`; `"gesa"`: GESA's
            relative-label attention. Unset: `"gesa"` for a config saved before the field with GESA's fields (it
            loads as trained); see `VariantBackboneConfig`.
        ernie_num_fusion_layers (`int`, *optional*):
            `M`: fusion in the top M layers. ERNIE used 6 of 12 (T-Encoder 6, K-Encoder 6); the default mirrors that
            share, `num_hidden_layers // 2` (12 of 24). 0 turns ERNIE off (the backbone alone).
        ernie_entity_num_attention_heads (`int`, defaults to 4):
            Heads of the entity stream's own self-attention (ERNIE: 4 heads over 100-d TransE vectors).
        ernie_fusion_output (`str`, defaults to `"residual_layernorm"`):
            How `w_j` and `e_k` leave the fusion layer. `"residual_layernorm"` (ERNIE's released code, and the
            backbone's own feed-forward sublayer): `w_j = LayerNorm(w~_j + W_t h_j + b_t)`,
            `e_k = LayerNorm_e(e~_k + W_e h_j + b_e)`; the backbone's pretrained FFN stays meaningful and a token with
            no aligned entity is computed exactly as in the backbone. `"gelu"`: the paper's equations literally,
            `w_j = gelu(W_t h_j + b_t)`, `e_k = gelu(W_e h_j + b_e)`.
        ernie_head_entity (`bool`, defaults to `True`):
            ERNIE's released fine-tuning code: the token the task head reads (its `[CLS]`; here the opening marker the
            typing / pair heads read) has an entity slot of its own (`ernie_entity_ids` = `ERNIE_HEAD_ENTITY`, zero
            input) that gathers the sequence's entities through the entity self-attention and is fused into that
            token, so the head reads the KB directly. `False`: such slots are ignored, the head sees the KB only
            through the attention to the mentions' words (a config saved before the field loads so).
        kb_size (`int`, *optional*):
            As in `KarConfig`: `None` uses the backbone's entity table as the knowledge base.
    """

    model_type = "gesa_ernie"

    ernie_num_fusion_layers: int | None = validated_field(optional_positive_or_zero, default=None)
    ernie_entity_num_attention_heads: int = validated_field(positive, default=4)
    ernie_fusion_output: str = validated_field(one_of(ERNIE_FUSION_OUTPUTS), default="residual_layernorm")
    ernie_head_entity: bool = True
    kb_size: int | None = validated_field(optional_positive, default=None)

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> "ErnieConfig":
        """`GesaConfig.from_dict`; an ERNIE config saved before `ernie_head_entity` existed loads with it `False`, as
        it was trained (every config saved since writes the field)."""
        if config_dict.get("model_type") == cls.model_type and "ernie_head_entity" not in config_dict:
            config_dict = {**config_dict, "ernie_head_entity": kwargs.pop("ernie_head_entity", False)}
        return super().from_dict(config_dict, **kwargs)

    def to_diff_dict(self) -> dict[str, Any]:
        """`GesaConfig.to_diff_dict`, `ernie_head_entity` always written (`from_dict`)."""
        return {**super().to_diff_dict(), "ernie_head_entity": self.ernie_head_entity}

    def __post_init__(self, **kwargs: Any) -> None:
        if self.ernie_num_fusion_layers is None:
            self.ernie_num_fusion_layers = self.num_hidden_layers // 2
        super().__post_init__(**kwargs)

    def validate_ernie(self) -> None:
        """Combinations of fields the fusion layers cannot run with."""
        check_layer_count(self, "ErnieConfig", "ernie_num_fusion_layers")
        check_heads_divide(self, "ErnieConfig", "entity_emb_size", "ernie_entity_num_attention_heads")


__all__ = [
    "BACKBONES",
    "ERNIE_FUSION_OUTPUTS",
    "HOTPOT_QUESTION_TYPES",
    "PAPER_SYSTEM_COMPONENTS",
    "PAPER_TYPE_EDGES",
    "FEVER_LABELS",
    "KAR_OUTPUT_INITS",
    "XH_BACKBONES",
    "XH_HOP_ATTENTIONS",
    "ErnieConfig",
    "KarConfig",
    "VariantBackboneConfig",
    "XhConfig",
    "resolve_backbone",
    "XhPaperSystemConfig",
    "xh_backbone",
]

"""Configurations of the variants on GESA's LUKE backbone: KnowBERT-KAR, Transformer-XH and ERNIE fusion.

Each is a `GesaConfig` subclass: the backbone fields (LUKE's, plus GESA's label switches) keep their meaning, so a
variant with its extra effect switched off is exactly the backbone it was built on (`ablation="luke"` for plain LUKE).
Every field and default is documented in `model_cards/{kar,xh,ernie}.md`.

Flat module: copied next to every saved checkpoint, so it imports only its sibling `configuration_gesa`.
"""

from __future__ import annotations

from typing import Any

from .configuration_gesa import GesaConfig

KAR_OUTPUT_INITS = ("pinv", "zero")
ERNIE_FUSION_OUTPUTS = ("residual_layernorm", "gelu")
FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")


def _positive_int(config_name: str, name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{config_name}.{name} must be a positive integer, got {value!r}.")


def _check_kb_size(config_name: str, kb_size: Any) -> None:
    if kb_size is not None:
        _positive_int(config_name, "kb_size", kb_size)


class KarConfig(GesaConfig):
    r"""GESA backbone + KnowBERT's Knowledge Attention and Recontextualization (KAR) block.

    Args:
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
        kb_size (`int`, *optional*):
            `None`: the knowledge base is the backbone's own entity table (LUKE's Wikipedia entities; candidate ids are
            entity-vocabulary ids). An integer: a separate, frozen `knowledge_base` table of that many rows
            (`entity_emb_size` wide), filled with `set_knowledge_base`.
    """

    model_type = "gesa_kar"

    def __init__(
        self,
        kar_layer: int | None = None,
        kar_entity_threshold: float = 0.0,
        kar_num_attention_heads: int = 4,
        kar_intermediate_size: int | None = None,
        kar_linker_hidden_size: int = 100,
        kar_output_init: str = "pinv",
        kar_linking_loss_weight: float = 1.0,
        kb_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if kar_layer is None:
            kar_layer = min(round(self.num_hidden_layers * 10 / 12), self.num_hidden_layers - 1)
        if kar_intermediate_size is None:
            kar_intermediate_size = 4 * self.entity_emb_size
        self.kar_layer = kar_layer
        self.kar_entity_threshold = kar_entity_threshold
        self.kar_num_attention_heads = kar_num_attention_heads
        self.kar_intermediate_size = kar_intermediate_size
        self.kar_linker_hidden_size = kar_linker_hidden_size
        self.kar_output_init = kar_output_init
        self.kar_linking_loss_weight = kar_linking_loss_weight
        self.kb_size = kb_size
        self.validate_kar()

    def validate_kar(self) -> None:
        """Raise a `ValueError` naming the field for any KAR value the model cannot run with."""
        if not isinstance(self.kar_layer, int) or isinstance(self.kar_layer, bool):
            raise ValueError(f"KarConfig.kar_layer must be an integer, got {self.kar_layer!r}.")
        if not 0 <= self.kar_layer <= self.num_hidden_layers:
            raise ValueError(
                f"KarConfig.kar_layer={self.kar_layer} must be in [0, num_hidden_layers={self.num_hidden_layers}] "
                "(the number of backbone layers below the KAR block)."
            )
        for name in ("kar_num_attention_heads", "kar_intermediate_size", "kar_linker_hidden_size"):
            _positive_int("KarConfig", name, getattr(self, name))
        if self.entity_emb_size % self.kar_num_attention_heads != 0:
            raise ValueError(
                f"KarConfig.entity_emb_size={self.entity_emb_size} must be a multiple of "
                f"kar_num_attention_heads={self.kar_num_attention_heads} (KAR attends in the entity dimension)."
            )
        if not isinstance(self.kar_entity_threshold, (int, float)) or isinstance(self.kar_entity_threshold, bool):
            raise ValueError(f"KarConfig.kar_entity_threshold must be a number, got {self.kar_entity_threshold!r}.")
        if self.kar_output_init not in KAR_OUTPUT_INITS:
            raise ValueError(
                f"KarConfig.kar_output_init={self.kar_output_init!r} is unknown; choose one of {list(KAR_OUTPUT_INITS)}."
            )
        if not isinstance(self.kar_linking_loss_weight, (int, float)) or self.kar_linking_loss_weight < 0:
            raise ValueError(
                f"KarConfig.kar_linking_loss_weight must be a non-negative number, got {self.kar_linking_loss_weight!r}."
            )
        _check_kb_size("KarConfig", self.kb_size)


class XhConfig(GesaConfig):
    r"""GESA backbone over a graph of text sequences with Transformer-XH's eXtra Hop attention.

    Args:
        xh_num_hop_layers (`int`, defaults to 3):
            `K`: the last K backbone layers are followed by hop attention among the nodes' hub tokens (paper: three
            hop steps). Must not exceed `num_hidden_layers`.
        xh_num_hop_attention_heads (`int`, *optional*):
            Heads of the hop attention; defaults to `num_attention_heads`.
        xh_hop_dropout (`float`, *optional*):
            Dropout on the hop attention weights; defaults to `attention_probs_dropout_prob`.
        num_labels (`int`, defaults to 3):
            Classes of the FEVER head; without `num_labels`/`id2label` the labels are `FEVER_LABELS`
            (`SUPPORTS`, `REFUTES`, `NOT ENOUGH INFO`).
    """

    model_type = "gesa_xh"

    def __init__(
        self,
        xh_num_hop_layers: int = 3,
        xh_num_hop_attention_heads: int | None = None,
        xh_hop_dropout: float | None = None,
        **kwargs: Any,
    ) -> None:
        if "id2label" not in kwargs and "num_labels" not in kwargs:
            kwargs["id2label"] = dict(enumerate(FEVER_LABELS))
        super().__init__(**kwargs)
        self.xh_num_hop_layers = xh_num_hop_layers
        self.xh_num_hop_attention_heads = (
            self.num_attention_heads if xh_num_hop_attention_heads is None else xh_num_hop_attention_heads
        )
        self.xh_hop_dropout = self.attention_probs_dropout_prob if xh_hop_dropout is None else xh_hop_dropout
        self.validate_xh()

    def validate_xh(self) -> None:
        """Raise a `ValueError` naming the field for any XH value the model cannot run with."""
        value = self.xh_num_hop_layers
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= self.num_hidden_layers:
            raise ValueError(
                f"XhConfig.xh_num_hop_layers must be an integer in [0, num_hidden_layers={self.num_hidden_layers}], "
                f"got {value!r}."
            )
        _positive_int("XhConfig", "xh_num_hop_attention_heads", self.xh_num_hop_attention_heads)
        if self.hidden_size % self.xh_num_hop_attention_heads != 0:
            raise ValueError(
                f"XhConfig.hidden_size={self.hidden_size} must be a multiple of "
                f"xh_num_hop_attention_heads={self.xh_num_hop_attention_heads}."
            )
        if not 0.0 <= self.xh_hop_dropout < 1.0:
            raise ValueError(f"XhConfig.xh_hop_dropout must be in [0, 1), got {self.xh_hop_dropout!r}.")


class ErnieConfig(GesaConfig):
    r"""GESA backbone whose top M layers carry ERNIE's knowledge-entity stream and information-fusion layer.

    Args:
        ernie_num_fusion_layers (`int`, *optional*):
            `M`: fusion in the top M layers. ERNIE used 6 of 12 (T-Encoder 6, K-Encoder 6); the default mirrors that
            share, `num_hidden_layers // 2` (12 of 24). 0 turns ERNIE off (the backbone).
        ernie_entity_num_attention_heads (`int`, defaults to 4):
            Heads of the entity stream's own self-attention (ERNIE: 4 heads over 100-d TransE vectors).
        ernie_fusion_output (`str`, defaults to `"residual_layernorm"`):
            How `w_j` and `e_k` leave the fusion layer. `"residual_layernorm"` (ERNIE's released code, and the
            backbone's own feed-forward sublayer): `w_j = LayerNorm(w~_j + W_t h_j + b_t)`,
            `e_k = LayerNorm_e(e~_k + W_e h_j + b_e)`; the backbone's pretrained FFN stays meaningful and a token with
            no aligned entity is computed exactly as in the backbone. `"gelu"`: the paper's equations literally,
            `w_j = gelu(W_t h_j + b_t)`, `e_k = gelu(W_e h_j + b_e)`.
        kb_size (`int`, *optional*):
            As in `KarConfig`: `None` uses the backbone's entity table as the knowledge base.
    """

    model_type = "gesa_ernie"

    def __init__(
        self,
        ernie_num_fusion_layers: int | None = None,
        ernie_entity_num_attention_heads: int = 4,
        ernie_fusion_output: str = "residual_layernorm",
        kb_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.ernie_num_fusion_layers = (
            self.num_hidden_layers // 2 if ernie_num_fusion_layers is None else ernie_num_fusion_layers
        )
        self.ernie_entity_num_attention_heads = ernie_entity_num_attention_heads
        self.ernie_fusion_output = ernie_fusion_output
        self.kb_size = kb_size
        self.validate_ernie()

    def validate_ernie(self) -> None:
        """Raise a `ValueError` naming the field for any ERNIE value the model cannot run with."""
        value = self.ernie_num_fusion_layers
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= self.num_hidden_layers:
            raise ValueError(
                "ErnieConfig.ernie_num_fusion_layers must be an integer in "
                f"[0, num_hidden_layers={self.num_hidden_layers}], got {value!r}."
            )
        _positive_int("ErnieConfig", "ernie_entity_num_attention_heads", self.ernie_entity_num_attention_heads)
        if self.entity_emb_size % self.ernie_entity_num_attention_heads != 0:
            raise ValueError(
                f"ErnieConfig.entity_emb_size={self.entity_emb_size} must be a multiple of "
                f"ernie_entity_num_attention_heads={self.ernie_entity_num_attention_heads}."
            )
        if self.ernie_fusion_output not in ERNIE_FUSION_OUTPUTS:
            raise ValueError(
                f"ErnieConfig.ernie_fusion_output={self.ernie_fusion_output!r} is unknown; choose one of "
                f"{list(ERNIE_FUSION_OUTPUTS)}."
            )
        _check_kb_size("ErnieConfig", self.kb_size)


__all__ = ["ERNIE_FUSION_OUTPUTS", "FEVER_LABELS", "KAR_OUTPUT_INITS", "ErnieConfig", "KarConfig", "XhConfig"]

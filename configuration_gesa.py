"""GESA configuration: LUKE's fields plus the relative-position label switches of the paper.

Flat module: copied next to every saved checkpoint, so it imports nothing from the rest of the repo.
"""

from __future__ import annotations

from typing import Any

from transformers import PretrainedConfig

# One switch per label family and edge type (spec section 4); every ablation row is a combination.
DEFAULT_LABEL_SWITCHES: dict[str, bool] = {
    "w2w_distance": True,  # clipped distance labels in w2w (off = plain Eq. 3 for local pairs)
    "cls_global": True,  # <s> attends to / is attended by every word with its own label
    "question_global": True,  # same for question tokens
    "w2e_e2w": True,  # label term in the w2e / e2w blocks at all
    "plc_question": True,  # placeholder entity <-> question tokens
    "mention": True,  # entity <-> its string-matched mention tokens
    "e2e": True,  # label term in the e2e block at all
    "e2e_graph": True,  # graph labels in e2e; off = entity-index distance labels (e2e_local)
    "plc_edges": True,
    "sent_edges": True,
    "match_edges": True,
    "single_edge_label": False,  # PLC, SENT-BASED and MATCH edges share one label
}

# Paper Tables 3 and 4 as presets of config overrides (spec section 5).
ABLATION_PRESETS: dict[str, dict[str, Any]] = {
    "full": {},
    "w2w_local": {"label_switches": {"cls_global": False, "question_global": False}},
    "e2e_local": {"label_switches": {"e2e_graph": False}},
    # without mention labels nothing but LUKE's entity position embeddings ties a [MASK] entity to its words
    "no_labels_w2e_e2w_e2e": {
        "label_switches": {"w2e_e2w": False, "e2e": False},
        "use_entity_position_embeddings": True,
    },
    "no_labels_w2w": {"label_switches": {"w2w_distance": False, "cls_global": False, "question_global": False}},
    "no_cls_global": {"label_switches": {"cls_global": False}},
    "no_question_global": {"label_switches": {"question_global": False}},
    "no_mention_label": {"label_switches": {"mention": False}, "use_entity_position_embeddings": True},
    "no_plc_question_label": {"label_switches": {"plc_question": False}},
    "no_sent_edges": {"label_switches": {"sent_edges": False}},
    "no_match_edges": {"label_switches": {"match_edges": False}},
    "no_plc_edges": {"label_switches": {"plc_edges": False}},
    "single_edge_label": {"label_switches": {"single_edge_label": True}},
    "luke": {"use_absolute_position_embeddings": True, "use_relative_labels": False},
}


class GesaConfig(PretrainedConfig):
    r"""Configuration of a GESA model. Defaults are `studio-ousia/luke-large`'s dimensions.

    LUKE's fields keep LUKE's names and meaning. GESA adds:

    Args:
        use_absolute_position_embeddings (`bool`, defaults to `False`):
            Add LUKE's absolute word and (averaged) entity position embeddings. GESA drops them (paper 3.1).
        use_relative_labels (`bool`, defaults to `True`):
            Master switch for every relative-position label embedding (`q_i . r_ij` in Eq. 1).
        max_relative_position (`int`, defaults to 150):
            `k`: word distances are clipped to `[-k, k]`, giving `2k + 1` distance labels.
        label_switches (`dict[str, bool]`, *optional*):
            Overrides of `DEFAULT_LABEL_SWITCHES`, one key per label family / edge type. Unknown keys are errors.
        use_value_labels (`bool`, defaults to `False`):
            Also add V-type label embeddings: `y_i = sum_j a_ij (v_j + r^V_ij)`.
        attention_window (`int`, *optional*):
            Hard local window for word pairs: non-global words attend only to words at distance <= window.
        use_entity_position_embeddings (`bool`, *optional*):
            Add LUKE's entity position embedding (the mean of the mention's word position embeddings) to each entity
            even without absolute word positions, so that entities know their mentions without mention labels.
            Default (`None`): on exactly when nothing else ties an entity to its words (no absolute positions and no
            mention label), as in the `no_labels_w2e_e2w_e2e` and `no_mention_label` presets.
        ablation (`str`, *optional*):
            Name of an `ABLATION_PRESETS` row applied on top of the other arguments (recorded for the model card).
    """

    model_type = "gesa"

    def __init__(
        self,
        vocab_size: int = 50267,
        entity_vocab_size: int = 500000,
        hidden_size: int = 1024,
        entity_emb_size: int = 256,
        num_hidden_layers: int = 24,
        num_attention_heads: int = 16,
        intermediate_size: int = 4096,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        max_position_embeddings: int = 514,
        type_vocab_size: int = 1,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-5,
        use_entity_aware_attention: bool = True,
        classifier_dropout: float | None = None,
        use_absolute_position_embeddings: bool = False,
        use_relative_labels: bool = True,
        max_relative_position: int = 150,
        label_switches: dict[str, bool] | None = None,
        use_value_labels: bool = False,
        attention_window: int | None = None,
        use_entity_position_embeddings: bool | None = None,
        ablation: str | None = None,
        pad_token_id: int = 1,
        bos_token_id: int = 0,
        eos_token_id: int = 2,
        **kwargs: Any,
    ) -> None:
        switches = dict(DEFAULT_LABEL_SWITCHES)
        switches.update(_checked_switches(label_switches or {}))
        if ablation is not None:
            if ablation not in ABLATION_PRESETS:
                raise ValueError(
                    f"GesaConfig.ablation={ablation!r} is unknown; choose one of {sorted(ABLATION_PRESETS)}."
                )
            preset = ABLATION_PRESETS[ablation]
            switches.update(preset.get("label_switches", {}))
            use_absolute_position_embeddings = preset.get(
                "use_absolute_position_embeddings", use_absolute_position_embeddings
            )
            use_relative_labels = preset.get("use_relative_labels", use_relative_labels)
            use_entity_position_embeddings = preset.get(
                "use_entity_position_embeddings", use_entity_position_embeddings
            )
        if use_entity_position_embeddings is None:
            # an entity is [MASK] + type: without positions or mention labels all candidates would be identical
            mention_labels = use_relative_labels and switches["w2e_e2w"] and switches["mention"]
            use_entity_position_embeddings = not use_absolute_position_embeddings and not mention_labels

        self.vocab_size = vocab_size
        self.entity_vocab_size = entity_vocab_size
        self.hidden_size = hidden_size
        self.entity_emb_size = entity_emb_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.use_entity_aware_attention = use_entity_aware_attention
        self.classifier_dropout = classifier_dropout
        self.use_absolute_position_embeddings = use_absolute_position_embeddings
        self.use_relative_labels = use_relative_labels
        self.max_relative_position = max_relative_position
        self.label_switches = switches
        self.use_value_labels = use_value_labels
        self.attention_window = attention_window
        self.use_entity_position_embeddings = use_entity_position_embeddings
        self.ablation = ablation
        super().__init__(pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id, **kwargs)
        self.validate_gesa()

    def validate_gesa(self) -> None:
        """Raise a `ValueError` naming the field for any value the model cannot run with."""
        positive = {
            "vocab_size": self.vocab_size,
            "entity_vocab_size": self.entity_vocab_size,
            "hidden_size": self.hidden_size,
            "entity_emb_size": self.entity_emb_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size,
            "type_vocab_size": self.type_vocab_size,
            "max_relative_position": self.max_relative_position,
        }
        for name, value in positive.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"GesaConfig.{name} must be a positive integer, got {value!r}.")
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"GesaConfig.hidden_size={self.hidden_size} must be a multiple of "
                f"num_attention_heads={self.num_attention_heads}."
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"GesaConfig.{name} must be in [0, 1), got {value!r}.")
        if self.attention_window is not None and (
            not isinstance(self.attention_window, int) or self.attention_window < 0
        ):
            raise ValueError(
                f"GesaConfig.attention_window must be None or a non-negative integer, got {self.attention_window!r}."
            )
        if not isinstance(self.use_entity_position_embeddings, bool):
            raise ValueError(
                "GesaConfig.use_entity_position_embeddings must be True, False or None (automatic), got "
                f"{self.use_entity_position_embeddings!r}."
            )
        if self.use_absolute_position_embeddings and self.max_position_embeddings <= self.pad_token_id + 1:
            raise ValueError(
                "GesaConfig.max_position_embeddings must exceed pad_token_id + 1 when "
                "use_absolute_position_embeddings=True."
            )
        _checked_switches(self.label_switches)

    @property
    def num_relative_labels(self) -> int:
        """Size of each layer's label table (see `modeling_gesa.RelativeLabels`)."""
        return 13 + 2 * (2 * self.max_relative_position + 1)

    @classmethod
    def from_ablation(cls, name: str, **kwargs: Any) -> GesaConfig:
        """A config for one row of the paper's ablation tables (`ABLATION_PRESETS`)."""
        return cls(ablation=name, **kwargs)


def _checked_switches(switches: dict[str, bool]) -> dict[str, bool]:
    if not isinstance(switches, dict):
        raise ValueError(f"GesaConfig.label_switches must be a dict of str -> bool, got {type(switches).__name__}.")
    for key, value in switches.items():
        if key not in DEFAULT_LABEL_SWITCHES:
            raise ValueError(
                f"GesaConfig.label_switches[{key!r}] is not a label switch; known switches: "
                f"{sorted(DEFAULT_LABEL_SWITCHES)}."
            )
        if not isinstance(value, bool):
            raise ValueError(f"GesaConfig.label_switches[{key!r}] must be True or False, got {value!r}.")
    return switches


__all__ = ["ABLATION_PRESETS", "DEFAULT_LABEL_SWITCHES", "GesaConfig"]

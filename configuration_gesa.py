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
"""GESA configuration: LUKE's fields plus the relative-position label switches of the paper.

A typed, validated (`huggingface_hub.dataclasses.strict`) config in the style of transformers' `LukeConfig`: every
field is type-checked and range-checked on construction and on assignment, with an error naming the field.

Flat module: copied next to every saved checkpoint, so it imports nothing from the rest of the repo.
"""

import math
import os
from typing import Any

from huggingface_hub.dataclasses import strict, validated_field
from transformers import PreTrainedConfig
from transformers.activations import ACT2FN

# One switch per label family and edge type (spec section 4); every ablation row is a combination.
DEFAULT_LABEL_SWITCHES: dict[str, bool] = {
    "w2w_distance": True,  # clipped distance labels in w2w (off = plain Eq. 3 for local pairs)
    "cls_global": True,  # <s> attends to / is attended by every word with its own label
    "question_global": True,  # same for question tokens
    "w2e_e2w": True,  # label term in the w2e / e2w blocks at all
    "plc_question": True,  # placeholder entity <-> question tokens
    "mention": True,  # entity <-> its string-matched mention tokens
    "question_mentions": True,  # ... the question's string-matched occurrences included (`question_string_ids`)
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
    # the passage mentions only: the question's occurrences of a candidate keep the non-mention label
    "no_question_mentions": {"label_switches": {"question_mentions": False}},
    "no_plc_question_label": {"label_switches": {"plc_question": False}},
    "no_sent_edges": {"label_switches": {"sent_edges": False}},
    "no_match_edges": {"label_switches": {"match_edges": False}},
    "no_plc_edges": {"label_switches": {"plc_edges": False}},
    "single_edge_label": {"label_switches": {"single_edge_label": True}},
    "luke": {"use_absolute_position_embeddings": True, "use_relative_labels": False},
    # WikiHop: the thesis's context graph mapped onto the three labels above (PLC, SENT, MATCH) with a learned
    # no-edge label, as before every context-graph edge kind had its own label (docs/wikihop.md)
    "merged_graph": {"entity_graph": "merged"},
}
# Where the e2e labels come from: "merged", GESA's entity graph (paper 3.2: PLC, SENT, MATCH, from the compact
# inputs); "context", the thesis's context graph (Acton 2023, 3.1: one label per edge kind, `entity_graph_edges`).
ENTITY_GRAPHS = ("merged", "context")
# The multiple-choice (WikiHop) head: "hde", the thesis's eq. 2.62 (HDE's output: MLP_c(candidate) + max over its
# entity nodes of MLP_e); "query_candidate", the linear layer on [query entity; candidate entity].
CHOICE_HEADS = ("hde", "query_candidate")
# The pre-training objectives of seed 002 (3.1, 3.2, 4.1.1) a `GesaForEntityPreTraining` head trains: each name the
# losses it adds (LUKE: eq. 23's masked entities + MLM; ERICA: eq. 26; KBIR: eqs. 29-30), and the settings of
# `pretraining_objectives` with their defaults (ERICA's and KBIR's released code: NT-Xent temperature 0.05,
# infilled spans of up to 10 tokens, 200-dimensional infilling positions; eq. 29-30 weights 1).
PRETRAINING_OBJECTIVES: dict[str, tuple[str, ...]] = {
    "luke": ("mlm", "mep"),
    "erica": ("mlm", "ed", "rd"),
    "kbi": ("mlm", "infill", "lp"),
    "kbir": ("mlm", "infill", "lp", "krc"),
    **{loss: (loss,) for loss in ("mlm", "mep", "ed", "rd", "infill", "lp", "krc")},
}
# what KRC puts in place of an entity: another of its type (seed 002, eq. 30), any other (KBIR's released code), or
# one of another type (a control: the sentence alone shows the replacement)
KRC_REPLACEMENTS = ("same_type", "any", "other_type")
# the words KRC's classifier reads: the span's outer boundary (KBIR's) or its own first and last words (ours)
KRC_READOUTS = ("boundary", "span")
PRETRAINING_SETTINGS: dict[str, Any] = {
    "objectives": ["luke"],
    "alpha": 1.0,  # eq. 29: L_MLM
    "gamma": 1.0,  # eq. 29: L_Infill
    "sigma": 1.0,  # eq. 29: L_LP
    "delta": 1.0,  # eq. 30: L_KRC
    "temperature": 0.05,
    "krc_probability": 0.1,  # KBIR's keyphrase-replace-percentage: the share of KRC's items replaced
    "krc_replaced_weight": 1.0,  # our option: L_KRC's weight of a replaced item (1: KBIR's plain cross-entropy)
    "krc_replacement": "same_type",  # seed 002's rule; "any": KBIR's released code (any other keyphrase)
    "krc_readout": "boundary",  # KBIR's [x_{s-1} ; x_{e+1}]; "span": our option, the span's own [x_s ; x_e]
    "kbi_max_span_length": 10,
    "kbi_position_size": 200,
}


# Edge kinds of the context graph (`structure_gesa.CONTEXT_EDGE_KINDS`, rules 1-12): label rows it adds.
NUM_CONTEXT_EDGE_KINDS = 12


# ---------------------------------------------------------------------------------------------
# Field validators: the type comes from the annotation (`strict`); these check the value. `strict` reports a failure
# as "Validation error for field '<name>'" followed by the message below.
# ---------------------------------------------------------------------------------------------


def positive(value: int) -> None:
    # the type check too: `strict` does not type-check a field a subclass redeclares (LukeGraphConfig's)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"must be a positive integer, got {value!r}.")


def non_negative(value: int | None) -> None:
    if value is not None and value < 0:
        raise ValueError(f"must be None or a non-negative integer, got {value!r}.")


def probability(value: float | None) -> None:
    if value is not None and not 0.0 <= value < 1.0:
        raise ValueError(f"must be a dropout probability in [0, 1), got {value!r}.")


def positive_finite(value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"must be a finite number > 0 (a LayerNorm epsilon of 0 or less gives NaN), got {value!r}.")


def non_negative_finite(value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"must be a finite number >= 0, got {value!r}.")


def activation(value: str) -> None:
    if value not in ACT2FN:
        raise ValueError(
            f"{value!r} is not an activation of transformers.activations.ACT2FN; use one of {sorted(ACT2FN)}."
        )


def ablation_name(value: str | None) -> None:
    if value is not None and value not in ABLATION_PRESETS:
        raise ValueError(f"ablation={value!r} is unknown; choose one of {sorted(ABLATION_PRESETS)}.")


def entity_graph_name(value: str) -> None:
    if value not in ENTITY_GRAPHS:
        raise ValueError(f"must be one of {ENTITY_GRAPHS}, got {value!r}.")


def choice_head_name(value: str) -> None:
    if value not in CHOICE_HEADS:
        raise ValueError(f"must be one of {CHOICE_HEADS}, got {value!r}.")


def label_switch_overrides(value: dict[str, bool] | None) -> None:
    for key, on in (value or {}).items():
        if key not in DEFAULT_LABEL_SWITCHES:
            raise ValueError(
                f"label_switches[{key!r}] is not a label switch; known switches: {sorted(DEFAULT_LABEL_SWITCHES)}."
            )
        if not isinstance(on, bool):
            raise ValueError(f"label_switches[{key!r}] must be True or False, got {on!r}.")


def pretraining_objectives_value(value: dict[str, Any] | None) -> None:
    if value is None:
        return
    for key, setting in value.items():
        if key not in PRETRAINING_SETTINGS:
            raise ValueError(
                f"pretraining_objectives[{key!r}] is unknown; known settings: {sorted(PRETRAINING_SETTINGS)}."
            )
        if key == "objectives":
            names = [setting] if isinstance(setting, str) else setting
            unknown = [name for name in names or [None] if name not in PRETRAINING_OBJECTIVES]
            if not isinstance(names, list) or unknown:
                raise ValueError(
                    f"pretraining_objectives['objectives'] must be a non-empty list of objective names from "
                    f"{sorted(PRETRAINING_OBJECTIVES)}, got {setting!r}."
                )
        elif key in ("kbi_max_span_length", "kbi_position_size"):
            positive(setting)
        elif key in ("krc_replacement", "krc_readout"):
            choices = KRC_REPLACEMENTS if key == "krc_replacement" else KRC_READOUTS
            if setting not in choices:
                raise ValueError(f"pretraining_objectives[{key!r}] must be one of {list(choices)}, got {setting!r}.")
        else:
            number = isinstance(setting, int | float) and not isinstance(setting, bool)
            bad_bound = (key == "temperature" and setting == 0) or (key == "krc_probability" and setting > 1)
            if not number or not math.isfinite(setting) or setting < 0 or bad_bound:
                bound = {"temperature": "> 0", "krc_probability": "in [0, 1]"}.get(key, ">= 0")
                raise ValueError(f"pretraining_objectives[{key!r}] must be a finite number {bound}, got {setting!r}.")


# Fields an ablation preset may set, and their value when neither the preset nor the caller sets them.
def apply_preset_value(config: PreTrainedConfig, preset: str, key: str, value: Any, rows: str) -> None:
    """Set field `key` to a preset's `value` (the preset named by field `preset`, a row of `rows`) unless the caller
    gave another: a field left at its default (None for the preset-controlled ones) holds no choice, one set to
    something else contradicts the preset and gets one error naming both."""
    given = getattr(config, key)
    if given != type(config).__dataclass_fields__[key].default and given != value:
        raise ValueError(
            f"{preset}={getattr(config, preset.rpartition('.')[2])!r} sets {key}={value!r}, but {key}={given!r} was "
            f"given; drop one of the two (the preset names {rows})."
        )
    setattr(config, key, value)


def check_layer_count(config: PreTrainedConfig, owner: str, name: str, why: str = "") -> None:
    """Field `name` counts or indexes backbone layers: it must lie in `[0, num_hidden_layers]`."""
    value, layers = getattr(config, name), config.num_hidden_layers
    if not 0 <= value <= layers:
        raise ValueError(f"{owner}.{name}={value} must be in [0, num_hidden_layers={layers}]{why}.")


def check_heads_divide(config: PreTrainedConfig, owner: str, size: str, heads: str, why: str = "") -> None:
    """Field `size` is split over field `heads` attention heads: it must be a multiple of it."""
    if getattr(config, size) % getattr(config, heads) != 0:
        raise ValueError(
            f"{owner}.{size}={getattr(config, size)} must be a multiple of {heads}={getattr(config, heads)}{why}."
        )


PRESET_FIELD_DEFAULTS: dict[str, Any] = {"use_absolute_position_embeddings": False, "use_relative_labels": True}


@strict
class GesaConfig(PreTrainedConfig):
    r"""Configuration of a GESA model. Defaults are `studio-ousia/luke-large`'s dimensions.

    LUKE's fields keep LUKE's names, types and meaning (`transformers.LukeConfig`). GESA adds:

    Args:
        use_absolute_position_embeddings (`bool`, *optional*):
            Add LUKE's absolute word and (averaged) entity position embeddings. GESA drops them (paper 3.1). Unset
            (`None`): the `ablation` preset's value, else `False`.
        use_relative_labels (`bool`, *optional*):
            Master switch for every relative-position label embedding (`q_i . r_ij` in Eq. 1). Unset (`None`): the
            `ablation` preset's value, else `True`.
        max_relative_position (`int`, defaults to 150):
            `k`: word distances are clipped to `[-k, k]`, giving `2k + 1` distance labels.
        label_switches (`dict[str, bool]`, *optional*):
            Overrides of `DEFAULT_LABEL_SWITCHES`, one key per label family / edge type. Unknown keys are errors.
            After construction it holds every switch.
        use_value_labels (`bool`, defaults to `False`):
            Also add V-type label embeddings: `y_i = sum_j a_ij (v_j + r^V_ij)`.
        attention_window (`int`, *optional*):
            Hard local window for word pairs: non-global words attend only to words at distance <= window.
        use_entity_position_embeddings (`bool`, *optional*):
            Add LUKE's entity position embedding (the mean of the mention's word position embeddings) to each entity
            even without absolute word positions, so that entities know their mentions without mention labels.
            Unset (`None`): the preset's value, else on exactly when nothing else ties an entity to its words (no
            absolute positions and no mention label), as in the `no_labels_w2e_e2w_e2e` and `no_mention_label` presets.
        entity_graph (`str`, defaults to `"merged"`):
            Where the e2e labels come from: `"merged"`, GESA's entity graph (PLC, SENT-BASED, MATCH and a learned
            no-edge label, built from `placeholder_entity_mask`, `entity_sentence_ids`, `entity_string_ids`);
            `"context"`, the thesis's context graph of WikiHop (Acton 2023, 3.1): one label per edge kind of
            `entity_graph_edges` (12 more label rows), NULL where no edge joins a pair (docs/wikihop.md).
        choice_head (`str`, defaults to `"hde"`):
            The multiple-choice head's score (WikiHop, `GesaForEntityMultipleChoice`): `"hde"`, the thesis's eq. 2.62
            (`MLP_c(y_c) + max_e MLP_e(y_e)` over the candidate's mention entities, MLPs of width hidden/2);
            `"query_candidate"`, `w . [y_query ; y_c] + b`. Other heads ignore it.
        pretraining_objectives (`dict`, *optional*):
            What a pre-training head (`GesaForEntityPreTraining`) trains and a checkpoint was pre-trained with:
            `objectives` (names of `PRETRAINING_OBJECTIVES`: `luke`, `erica`, `kbi`, `kbir` or single losses), the
            loss weights `alpha`, `gamma`, `sigma`, `delta` (seed 002 eqs. 29-30), ERICA's `temperature`, KBIR's
            `kbi_max_span_length` / `kbi_position_size` / `krc_probability` (the share of KRC's items replaced) /
            `krc_replacement` (`"same_type"`, seed 002's rule; `"any"`, KBIR's released code; `"other_type"`, a
            control whose replacement the sentence alone shows), and two options of ours: `krc_readout`
            (`"boundary"`, KBIR's `[x_{s-1} ; x_{e+1}]`, or `"span"`, the span's own first and last words) and
            `krc_replaced_weight` (L_KRC's weight of a replaced item; 1 is KBIR's plain cross-entropy).
            `PRETRAINING_SETTINGS` gives the defaults. Other heads ignore it.
        ablation (`str`, *optional*):
            Name of an `ABLATION_PRESETS` row (recorded for the model card). The preset sets its fields; a field given
            explicitly with another value than the preset's is an error (`ablation="luke"` means exactly LUKE).

    Every field is validated on construction and on assignment (`strict`): a wrong type or value raises
    `huggingface_hub.errors.StrictDataclassFieldValidationError` naming the field; a combination the model cannot
    run (e.g. `hidden_size` not a multiple of `num_attention_heads`) raises `StrictDataclassClassValidationError`;
    an ablation preset contradicted by an explicit field raises `ValueError`.
    """

    model_type = "gesa"

    vocab_size: int = validated_field(positive, default=50267)
    entity_vocab_size: int = validated_field(positive, default=500000)
    hidden_size: int = validated_field(positive, default=1024)
    entity_emb_size: int = validated_field(positive, default=256)
    num_hidden_layers: int = validated_field(positive, default=24)
    num_attention_heads: int = validated_field(positive, default=16)
    intermediate_size: int = validated_field(positive, default=4096)
    hidden_act: str = validated_field(activation, default="gelu")
    hidden_dropout_prob: float | int = validated_field(probability, default=0.1)
    attention_probs_dropout_prob: float | int = validated_field(probability, default=0.1)
    max_position_embeddings: int = validated_field(positive, default=514)
    type_vocab_size: int = validated_field(positive, default=1)
    initializer_range: float = validated_field(non_negative_finite, default=0.02)
    layer_norm_eps: float = validated_field(positive_finite, default=1e-5)
    use_entity_aware_attention: bool = True
    classifier_dropout: float | int | None = validated_field(probability, default=None)
    use_absolute_position_embeddings: bool | None = None
    use_relative_labels: bool | None = None
    max_relative_position: int = validated_field(positive, default=150)
    label_switches: dict[str, bool] | None = validated_field(label_switch_overrides, default=None)
    use_value_labels: bool = False
    attention_window: int | None = validated_field(non_negative, default=None)
    use_entity_position_embeddings: bool | None = None
    entity_graph: str = validated_field(entity_graph_name, default="merged")
    choice_head: str = validated_field(choice_head_name, default="hde")
    ablation: str | None = validated_field(ablation_name, default=None)
    pretraining_objectives: dict[str, Any] | None = validated_field(pretraining_objectives_value, default=None)
    pad_token_id: int | None = 1
    bos_token_id: int | None = 0
    eos_token_id: int | list[int] | None = 2

    def __post_init__(self, **kwargs: Any) -> None:
        self._apply_ablation()
        super().__post_init__(**kwargs)  # ends with `_post_init_done`: from then on assignments are validated

    def __setattr__(self, name: str, value: Any) -> None:
        """Assignment validated like construction: the field's own check (`strict`, before this runs), then every
        combination check (`validate_*`, as after `__init__`); a refused value is not kept, so a config that
        `save_pretrained` writes always loads again."""
        if not self.__dict__.get("_post_init_done") or name not in type(self).__dataclass_fields__:
            super().__setattr__(name, value)
            return
        unset = object()
        previous = self.__dict__.get(name, unset)
        super().__setattr__(name, value)
        try:
            self.validate()
        except Exception:
            if previous is unset:
                self.__dict__.pop(name, None)
            else:
                super().__setattr__(name, previous)
            raise

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> "GesaConfig":
        """`PreTrainedConfig.from_dict`; a multiple-choice checkpoint whose config has no `choice_head` was saved
        before the field existed, with the linear head: it loads as `"query_candidate"`, its trained head (every
        config saved since writes the field, `to_diff_dict`)."""
        architectures = config_dict.get("architectures") or []
        if (
            "choice_head" not in config_dict
            and "choice_head" not in kwargs
            and any(name.endswith("ForEntityMultipleChoice") for name in architectures)
        ):
            config_dict = {**config_dict, "choice_head": "query_candidate"}
        return super().from_dict(config_dict, **kwargs)

    def to_diff_dict(self) -> dict[str, Any]:
        """`PreTrainedConfig.to_diff_dict`, `choice_head` always written even at its default (`from_dict`)."""
        return {**super().to_diff_dict(), "choice_head": self.choice_head}

    def _apply_ablation(self) -> None:
        """Resolve the preset-controlled fields: the preset's value, or the caller's when it does not contradict."""
        explicit_switches = dict(self.label_switches or {})
        switches = {**DEFAULT_LABEL_SWITCHES, **explicit_switches}
        preset = ABLATION_PRESETS[self.ablation] if self.ablation is not None else {}
        for key, value in preset.items():
            if key == "label_switches":
                for name, on in value.items():
                    if explicit_switches.get(name, on) != on:
                        raise ValueError(
                            f"GesaConfig.ablation={self.ablation!r} sets label_switches[{name!r}]={on}, but "
                            f"label_switches[{name!r}]={explicit_switches[name]} was given; drop one of the two."
                        )
                    switches[name] = on
                continue
            apply_preset_value(self, "GesaConfig.ablation", key, value, "a row of the paper's tables")
        for key, default in PRESET_FIELD_DEFAULTS.items():
            if getattr(self, key) is None:
                setattr(self, key, default)
        self.label_switches = switches
        if self.use_entity_position_embeddings is None:
            # an entity is [MASK] + type: without positions or mention labels all candidates would be identical
            mention_labels = self.use_relative_labels and switches["w2e_e2w"] and switches["mention"]
            self.use_entity_position_embeddings = not self.use_absolute_position_embeddings and not mention_labels

    def validate_gesa(self) -> None:
        """Combinations of fields the model cannot run with (run by `strict` after construction and on save)."""
        check_heads_divide(self, "GesaConfig", "hidden_size", "num_attention_heads")
        if self.use_absolute_position_embeddings and self.max_position_embeddings <= (self.pad_token_id or 0) + 1:
            raise ValueError(
                "GesaConfig.max_position_embeddings must exceed pad_token_id + 1 when "
                "use_absolute_position_embeddings=True."
            )
        for key in (*PRESET_FIELD_DEFAULTS, "use_entity_position_embeddings"):
            if not isinstance(getattr(self, key), bool):
                raise ValueError(f"GesaConfig.{key} must be True or False, got {getattr(self, key)!r}.")
        if set(self.label_switches) != set(DEFAULT_LABEL_SWITCHES):
            raise ValueError(f"GesaConfig.label_switches must hold every switch of {sorted(DEFAULT_LABEL_SWITCHES)}.")
        preset = ABLATION_PRESETS[self.ablation] if self.ablation is not None else {}
        for key, value in preset.items():
            current = getattr(self, key)
            if key == "label_switches":
                changed = {name: current[name] for name, on in value.items() if current[name] != on}
            else:
                changed = {} if current == value else {key: current}
            if changed:
                raise ValueError(
                    f"GesaConfig.ablation={self.ablation!r} no longer holds: {changed} differ from the preset; set "
                    "ablation=None for a custom combination."
                )

    @property
    def num_relative_labels(self) -> int:
        """Size of each layer's label table (see `structure_gesa.RelativeLabels`)."""
        context_rows = NUM_CONTEXT_EDGE_KINDS if self.entity_graph == "context" else 0
        return 13 + 2 * (2 * self.max_relative_position + 1) + context_rows

    @property
    def num_context_edge_kinds(self) -> int:
        """Edge kinds of the thesis's context graph (`structure_gesa.CONTEXT_EDGE_KINDS`), read by the input checks."""
        return NUM_CONTEXT_EDGE_KINDS

    @classmethod
    def luke_conversion_is_exact(cls, overrides: dict[str, Any]) -> bool:
        """Whether a LUKE conversion (`from_luke_pretrained`) with these config overrides is LUKE itself
        (`ablation="luke"`): then LUKE's entity-aware queries are kept rather than replaced by its word query."""
        return overrides.get("ablation") == "luke"

    @classmethod
    def from_ablation(cls, name: str, **kwargs: Any) -> "GesaConfig":
        """A config for one row of the paper's ablation tables (`ABLATION_PRESETS`)."""
        return cls(ablation=name, **kwargs)

    @classmethod
    def get_config_dict(
        cls, pretrained_model_name_or_path: str | os.PathLike, **kwargs: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """`PreTrainedConfig.get_config_dict`, refusing a LUKE checkpoint (its weights need `from_luke_pretrained`)
        and another GESA variant's checkpoint (naming the class that loads it)."""
        config_dict, kwargs = super().get_config_dict(pretrained_model_name_or_path, **kwargs)
        if config_dict.get("model_type") == "luke":
            raise ValueError(
                f"{pretrained_model_name_or_path!s} is a LUKE checkpoint (model_type 'luke'), not a {cls.__name__} "
                "one: from_pretrained would start GESA's queries, label tables and head at random. Convert it with "
                "from_luke_pretrained of the model class, e.g. GesaForEntitySpanQA.from_luke_pretrained(path), which "
                "maps LUKE's weights and logs what starts fresh."
            )
        model_type = config_dict.get("model_type")
        if isinstance(model_type, str) and model_type.startswith("gesa") and model_type != cls.model_type:
            saved = config_dict.get("architectures") or []
            use = saved[0] if saved else (config_dict.get("auto_map") or {}).get("AutoModel", model_type)
            raise ValueError(
                f"{pretrained_model_name_or_path!s} is a {model_type!r} checkpoint ({use}), not a {cls.__name__} one "
                f"({cls.model_type!r}): its weights do not fit this class (keys would be missing or left unused and "
                f"start at random). Load it with {str(use).split('.')[-1]}.from_pretrained(path), or with "
                "AutoModelForQuestionAnswering.from_pretrained(path, trust_remote_code=True), which picks the class "
                "the checkpoint names."
            )
        return config_dict, kwargs


__all__ = [
    "ABLATION_PRESETS",
    "DEFAULT_LABEL_SWITCHES",
    "CHOICE_HEADS",
    "ENTITY_GRAPHS",
    "NUM_CONTEXT_EDGE_KINDS",
    "PRETRAINING_OBJECTIVES",
    "KRC_READOUTS",
    "KRC_REPLACEMENTS",
    "PRETRAINING_SETTINGS",
    "GesaConfig",
]

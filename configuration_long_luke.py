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
"""Configuration of LUKE for whole documents (seed 002, 4.1.1, Figure 7): LUKE with Longformer/BigBird attention.

LUKE's fields keep their meaning (`ablation="luke"`: absolute positions, entity-aware queries, no relative labels);
the attention pattern is configuration: a sliding window per layer (growing with depth), Longformer's dilation per
layer, BigBird's random key blocks, global tokens, and how positions beyond LUKE's 512 start. docs/long_documents.md.

Flat module: copied next to every saved checkpoint, so it imports only its sibling `configuration_gesa`.
"""

from __future__ import annotations

from typing import Any

from huggingface_hub.dataclasses import strict, validated_field

from .configuration_gesa import GesaConfig, positive

# How a converted LUKE's position rows beyond its 512 start: "copy", Longformer's recipe (LUKE's 512 learned rows
# copied over and over); "random", drawn fresh like any new weight.
POSITION_INITS = ("copy", "random")
# The default window schedule (Longformer's "small in lower layers, larger in higher ones"): linear in depth from
# the first layer's to the last layer's full width; the top is LUKE's own context, 512 words.
FIRST_LAYER_WINDOW, LAST_LAYER_WINDOW = 128, 512


def growing_windows(num_layers: int, first: int = FIRST_LAYER_WINDOW, last: int = LAST_LAYER_WINDOW) -> list[int]:
    """One even window per layer, growing linearly in depth from `first` (the lowest layer) to `last` (the top)."""
    if num_layers == 1:
        return [last]
    return [2 * round((first + (last - first) * i / (num_layers - 1)) / 2) for i in range(num_layers)]


def _per_layer(name: str, value: Any, check) -> None:
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not value:
        raise ValueError(f"{name} must be an int or a list with one value per layer, got an empty list.")
    for index, item in enumerate(items):
        where = f"[{index}]" if isinstance(value, list) else ""
        if isinstance(item, bool) or not isinstance(item, int):
            raise ValueError(f"{name}{where} must be an integer, got {item!r}.")
        problem = check(item)
        if problem:
            raise ValueError(f"{name}{where}={item} {problem}")


def window_value(value: int | list[int] | None) -> None:
    if value is None:
        return
    _per_layer(
        "attention_window",
        value,
        lambda w: (
            None
            if w > 0 and w % 2 == 0
            else "must be a positive even number: the full window w, each word seeing w / 2 words on each side "
            "(Longformer's attention_window)."
        ),
    )


def dilation_value(value: int | list[int]) -> None:
    _per_layer("attention_dilation", value, lambda d: None if d >= 1 else "must be at least 1 (1: no gaps).")


def random_blocks_value(value: int | list[int]) -> None:
    _per_layer("num_random_blocks", value, lambda r: None if r >= 0 else "must be 0 (none) or more.")


def position_init_name(value: str) -> None:
    if value not in POSITION_INITS:
        raise ValueError(f"must be one of {POSITION_INITS}, got {value!r}.")


def luke_backbone(value: str | None) -> None:
    if value != "luke":
        raise ValueError(
            f"LongLukeConfig.ablation={value!r}: the long variant is LUKE's backbone (absolute positions, no relative "
            "labels), so ablation must be 'luke'; GESA's own window is GesaConfig.attention_window."
        )


@strict
class LongLukeConfig(GesaConfig):
    r"""LUKE with the Longformer/BigBird attention pattern, converted from a LUKE checkpoint (seed 002, 4.1.1).

    Every `GesaConfig` field keeps its meaning except `attention_window`, which takes Longformer's. Among local words
    (every word that is not global), word i attends word j when `|i - j| <= (w / 2) * d` and `d` divides `i - j`
    (w: the layer's window, d: its dilation), or when j lies in one of the random key blocks drawn for i's block.
    Global words (`global_attention_mask` != 0) and LUKE's entity tokens attend to every token and every token to
    them (symmetric). The cost is linear in length; no `(P, P)` tensor exists on this path.

    Args:
        attention_window (`int` or `list[int]`, *optional*):
            Longformer's `attention_window`: the full window w, each word seeing w / 2 words on each side; one value
            for every layer or one per layer (positive, even). Unset (`None`): growing with depth, linear from 128
            in the lowest layer to 512 in the top one (`growing_windows`); after construction it holds one value per
            layer. (`GesaConfig.attention_window` is one-sided; here it is Longformer's full width.)
        attention_dilation (`int` or `list[int]`, defaults to 1):
            Longformer's dilation d per layer (one value or one per layer): the window's keys lie d words apart, so a
            layer reaches `(w / 2) * d` words on each side. 1: contiguous (Longformer keeps the lowest layers so).
        num_random_blocks (`int` or `list[int]`, defaults to 3):
            BigBird's random attention per layer: each block of `random_block_size` query words also attends this
            many key blocks drawn at random among its document's other blocks (`structure_gesa.random_key_blocks`).
            0: none. A layer may not have both random blocks and a dilation above 1.
        random_block_size (`int`, defaults to 64):
            BigBird's `block_size`: the words per query and per key block of the random draw.
        random_seed (`int`, defaults to 0):
            The draw's seed. Layer l of a document of n real words draws with the seed `(random_seed + l, n)`
            (hashed): reproducible, the same in training and evaluation, independent of the batch.
        special_tokens_global (`bool`, defaults to `True`):
            When `global_attention_mask` is not given, `<s>` and `</s>` (`bos_token_id`, `eos_token_id`) are global;
            a given mask is used as it is.
        position_init (`str`, defaults to `"copy"`):
            How a LUKE conversion starts the word and entity position rows beyond LUKE's 512: `"copy"` (Longformer's
            recipe: LUKE's 512 learned rows copied over and over), `"random"` (drawn fresh).
        max_position_embeddings (`int`, defaults to 16386):
            Position rows: `max_position_embeddings - 2` words per sequence (16,384). A longer input is refused.
        ablation (`str`, defaults to `"luke"`):
            The backbone is LUKE; other presets are refused.
    """

    model_type = "gesa_long_luke"

    attention_window: int | list[int] | None = validated_field(window_value, default=None)
    attention_dilation: int | list[int] = validated_field(dilation_value, default=1)
    num_random_blocks: int | list[int] = validated_field(random_blocks_value, default=3)
    random_block_size: int = validated_field(positive, default=64)
    random_seed: int = 0
    special_tokens_global: bool = True
    position_init: str = validated_field(position_init_name, default="copy")
    max_position_embeddings: int = validated_field(positive, default=16386)
    ablation: str | None = validated_field(luke_backbone, default="luke")

    def __post_init__(self, **kwargs: Any) -> None:
        if self.attention_window is None:
            self.attention_window = growing_windows(self.num_hidden_layers)
        super().__post_init__(**kwargs)

    def per_layer(self, name: str) -> list[int]:
        """Field `name` (an int or one value per layer) as one value per layer."""
        value = getattr(self, name)
        return list(value) if isinstance(value, list) else [value] * self.num_hidden_layers

    def validate_long_luke(self) -> None:
        """Combinations the pattern cannot run with (on construction, assignment and save)."""
        for name in ("attention_window", "attention_dilation", "num_random_blocks"):
            value = getattr(self, name)
            if isinstance(value, list) and len(value) != self.num_hidden_layers:
                raise ValueError(
                    f"LongLukeConfig.{name} has {len(value)} values but num_hidden_layers={self.num_hidden_layers}: "
                    "give one value per layer, or one int for every layer."
                )
        for layer, (dilation, random_blocks) in enumerate(
            zip(self.per_layer("attention_dilation"), self.per_layer("num_random_blocks"), strict=True)
        ):
            if dilation > 1 and random_blocks > 0:
                raise ValueError(
                    f"LongLukeConfig.num_random_blocks: layer {layer} has num_random_blocks={random_blocks} and "
                    f"attention_dilation={dilation}; a layer takes one of the two (set num_random_blocks to 0 where "
                    "the dilation is above 1, e.g. num_random_blocks=[3, 3, 0, 0] with attention_dilation=[1, 1, 2, 2])."
                )

    def attention_patterns(self) -> list[dict[str, int]]:
        """Each layer's pattern as `structure_gesa.LayerPattern` fields (`window` one-sided: w / 2)."""
        return [
            dict(
                window=window // 2,
                dilation=dilation,
                random_blocks=random_blocks,
                random_block_size=self.random_block_size,
                seed=self.random_seed + layer,
            )
            for layer, (window, dilation, random_blocks) in enumerate(
                zip(
                    self.per_layer("attention_window"),
                    self.per_layer("attention_dilation"),
                    self.per_layer("num_random_blocks"),
                    strict=True,
                )
            )
        ]

    @classmethod
    def luke_conversion_is_exact(cls, overrides: dict[str, Any]) -> bool:
        """A LUKE conversion keeps LUKE's own entity-aware queries: the backbone is LUKE itself."""
        return True


__all__ = ["POSITION_INITS", "LongLukeConfig", "growing_windows"]

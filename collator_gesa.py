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
"""Feature columns of GESA's ReCoRD features and ``GesaDataCollator`` (dynamic padding for ``Trainer``).

Flat module: copied next to every saved checkpoint (imported by ``processing_gesa``), so it imports third-party
packages and its sibling ``structure_gesa`` (the ``global_attention_mask`` values) only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers.utils import logging

from .structure_gesa import LOCAL

logger = logging.get_logger(__name__)

WORD_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids", "global_attention_mask", "question_string_ids")
ENTITY_INPUT_NAMES = (
    "entity_ids",
    "entity_attention_mask",
    "entity_token_type_ids",
    "entity_position_ids",
    "placeholder_entity_mask",
    "entity_string_ids",
    "entity_sentence_ids",
)
MODEL_INPUT_NAMES = WORD_INPUT_NAMES + ENTITY_INPUT_NAMES
EVAL_COLUMNS = ("example_id", "candidate_texts", "answers")
# Optional debugging/evaluation column: exclusive character span of each entity's mention, [-1, -1] for the placeholder.
CANDIDATE_SPANS_COLUMN = "candidate_spans"


@dataclass
class GesaDataCollator:
    """Dynamic padding of GESA features for ``DataLoader``/``Trainer``; returns torch tensors.

    Words are padded to the longest sequence (``pad_token_id``, masks 0, ``question_string_ids`` -1), entities to
    the most entities (``entity_pad_token_id``, masks 0, string/sentence ids ``-1``, ``labels`` 0), and
    ``entity_position_ids`` to ``(B, E, M)`` with ``-1``. The string evaluation columns are dropped unless ``keep_eval_columns`` (then returned
    as python lists, for custom evaluation loops; ``Trainer`` removes them itself when ``remove_unused_columns``).

    Returns:
        ``input_ids``, ``attention_mask``, ``token_type_ids``, ``global_attention_mask``, ``question_string_ids``:
        ``(B, L)`` long; ``entity_*`` and ``placeholder_entity_mask``: ``(B, E)`` long; ``entity_position_ids``: ``(B, E, M)`` long;
        ``labels``: ``(B, E)`` float, when present.
    """

    pad_token_id: int = 1
    entity_pad_token_id: int = 0
    pad_to_multiple_of: int | None = None
    keep_eval_columns: bool = False
    _warned_columns: set[str] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.pad_to_multiple_of is not None and (
            not isinstance(self.pad_to_multiple_of, int) or isinstance(self.pad_to_multiple_of, bool)
            or self.pad_to_multiple_of < 1
        ):  # fmt: skip
            raise ValueError(
                f"GesaDataCollator: pad_to_multiple_of must be a positive integer or None, got {self.pad_to_multiple_of!r}"
            )

    def _check_features(self, features: Sequence[Mapping[str, Any]]) -> set[str]:
        """The columns of the batch: every feature must have the same ones, each with consistent lengths."""
        if not features:
            raise ValueError("GesaDataCollator got an empty batch")

        def name(row: int) -> str:
            feature = features[row]
            example_id = feature.get("example_id") if isinstance(feature, Mapping) else None
            return f"feature {row}" + (f" (example {example_id!r})" if example_id is not None else "")

        for row, feature in enumerate(features):
            if not isinstance(feature, Mapping):
                raise ValueError(f"GesaDataCollator: {name(row)} is {type(feature).__name__}, not a dict of columns")
        present = set(features[0])
        for column in ("input_ids", "entity_ids", "entity_position_ids"):
            if column not in present:
                raise ValueError(f"GesaDataCollator: {name(0)} has no {column!r} (GesaProcessor features have it)")
        for row, feature in enumerate(features[1:], 1):
            if set(feature) != present:
                missing, extra = sorted(present - set(feature)), sorted(set(feature) - present)
                raise ValueError(
                    f"GesaDataCollator: {name(row)} has other columns than {name(0)} (missing {missing}, extra "
                    f"{extra}); a batch needs the same columns in every feature (e.g. 'labels' for all or none)"
                )
        for row, feature in enumerate(features):
            for group, reference in (
                (WORD_INPUT_NAMES, "input_ids"),
                (ENTITY_INPUT_NAMES + ("labels",), "entity_ids"),
            ):
                if reference == "entity_ids":
                    expected = len(feature["entity_ids"])
                else:
                    expected = len(feature["input_ids"])
                for column in group:
                    if column in feature and column != "entity_position_ids" and len(feature[column]) != expected:
                        raise ValueError(
                            f"GesaDataCollator: {name(row)} has {len(feature[column])} {column!r} for "
                            f"{expected} {reference!r}; each column must have one value per token/entity"
                        )
            if len(feature["entity_position_ids"]) != len(feature["entity_ids"]):
                raise ValueError(
                    f"GesaDataCollator: {name(row)} has {len(feature['entity_position_ids'])} rows of "
                    f"'entity_position_ids' for {len(feature['entity_ids'])} entities"
                )
        return present

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        present = self._check_features(features)
        word_length = max(len(feature["input_ids"]) for feature in features)
        if self.pad_to_multiple_of:
            word_length = -(-word_length // self.pad_to_multiple_of) * self.pad_to_multiple_of
        entity_length = max(len(feature["entity_ids"]) for feature in features)
        mention_length = max((len(row) for feature in features for row in feature["entity_position_ids"]), default=1)
        word_pads = {
            "input_ids": self.pad_token_id,
            "attention_mask": 0,
            "token_type_ids": 0,
            "global_attention_mask": LOCAL,
            "question_string_ids": -1,
        }
        entity_pads = {
            "entity_ids": self.entity_pad_token_id,
            "entity_attention_mask": 0,
            "entity_token_type_ids": 0,
            "placeholder_entity_mask": 0,
            "entity_string_ids": -1,
            "entity_sentence_ids": -1,
        }
        batch: dict[str, Any] = {}
        for name, pad in word_pads.items():
            if name in present:
                batch[name] = self._pad_rows(features, name, word_length, pad, np.int64)
        for name, pad in entity_pads.items():
            if name in present:
                batch[name] = self._pad_rows(features, name, entity_length, pad, np.int64)
        if "labels" in present:
            batch["labels"] = self._pad_rows(features, "labels", entity_length, 0.0, np.float32)
        positions = np.full((len(features), entity_length, mention_length), -1, dtype=np.int64)
        for row, feature in enumerate(features):
            for entity, mention in enumerate(feature["entity_position_ids"]):
                positions[row, entity, : len(mention)] = mention
        batch["entity_position_ids"] = torch.from_numpy(positions)
        handled = set(word_pads) | set(entity_pads) | {"labels", "entity_position_ids"}
        for name in sorted(present - handled):
            if self.keep_eval_columns and (name in EVAL_COLUMNS or name == CANDIDATE_SPANS_COLUMN):
                batch[name] = [feature[name] for feature in features]
            elif name not in EVAL_COLUMNS and name != CANDIDATE_SPANS_COLUMN and name not in self._warned_columns:
                self._warned_columns.add(name)
                logger.warning(f"GesaDataCollator: dropping unknown column {name!r}")
        return batch

    @staticmethod
    def _pad_rows(
        features: Sequence[Mapping[str, Any]], name: str, length: int, pad: float, dtype: type
    ) -> torch.Tensor:
        padded = np.full((len(features), length), pad, dtype=dtype)
        for row, feature in enumerate(features):
            values = feature[name]
            padded[row, : len(values)] = values
        return torch.from_numpy(padded)


__all__ = [
    "CANDIDATE_SPANS_COLUMN",
    "ENTITY_INPUT_NAMES",
    "EVAL_COLUMNS",
    "MODEL_INPUT_NAMES",
    "WORD_INPUT_NAMES",
    "GesaDataCollator",
]
